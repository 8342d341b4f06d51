//! Response-envelope validation (DESIGN §3).

use serde_json::Value;

use crate::error::ErrorCode;

/// A well-formed response: a result, or a well-formed JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
pub enum Envelope {
    /// The `result` member.
    Result(Value),
    /// A well-formed `error` member (`data` is dropped).
    Error {
        /// The integer error code.
        code: i64,
        /// The message, 1..=512 bytes.
        message: String,
    },
}

/// Why an envelope was rejected; `code()` is one of the envelope/id codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvelopeFault {
    /// Not an object, wrong `jsonrpc`, has `method`, not exactly one of result/error, bad error shape.
    Protocol,
    /// `id` missing or not a non-negative integer.
    IdInvalid,
    /// `id` below the expected one.
    DuplicateId,
    /// `id` above the expected one.
    UnknownId,
}

impl EnvelopeFault {
    /// The stable error code for this fault.
    pub fn code(self) -> ErrorCode {
        match self {
            EnvelopeFault::Protocol => ErrorCode::ProtocolError,
            EnvelopeFault::IdInvalid => ErrorCode::ResponseIdInvalid,
            EnvelopeFault::DuplicateId => ErrorCode::DuplicateResponseId,
            EnvelopeFault::UnknownId => ErrorCode::UnknownResponseId,
        }
    }
}

/// Validates the envelope of a response to the request with id `expected_id`.
pub fn validate_response(message: Value, expected_id: u64) -> Result<Envelope, EnvelopeFault> {
    let _ = (message, expected_id);
    todo!()
}
