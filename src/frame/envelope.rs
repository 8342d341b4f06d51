//! Response-envelope validation (DESIGN §3).

use serde_json::{Map, Value};

use crate::error::ErrorCode;

/// Longest JSON-RPC error message, in bytes.
const MAX_ERROR_MESSAGE_BYTES: usize = 512;

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
///
/// Checks, in order: an object with `"jsonrpc":"2.0"` and no `method` (else
/// [`EnvelopeFault::Protocol`]); an `id` that is a non-negative integer (else
/// [`EnvelopeFault::IdInvalid`]) equal to `expected_id` (below: [`EnvelopeFault::DuplicateId`],
/// above: [`EnvelopeFault::UnknownId`]); exactly one of `result`/`error`, where `error` is an
/// object with an integer `code` and a `message` of 1..=512 bytes (else
/// [`EnvelopeFault::Protocol`]). Other envelope keys, and extra keys inside `error`, are ignored.
/// The result is moved out of `message`, not cloned.
pub fn validate_response(message: Value, expected_id: u64) -> Result<Envelope, EnvelopeFault> {
    let Value::Object(mut map) = message else {
        return Err(EnvelopeFault::Protocol);
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") || map.contains_key("method") {
        return Err(EnvelopeFault::Protocol);
    }
    // `as_u64` is None for negatives and for floats, even integral ones like `1.0`.
    let id = match map.get("id") {
        Some(Value::Number(n)) => n.as_u64().ok_or(EnvelopeFault::IdInvalid)?,
        _ => return Err(EnvelopeFault::IdInvalid),
    };
    if id < expected_id {
        return Err(EnvelopeFault::DuplicateId);
    }
    if id > expected_id {
        return Err(EnvelopeFault::UnknownId);
    }
    match (map.remove("result"), map.remove("error")) {
        (Some(result), None) => Ok(Envelope::Result(result)),
        (None, Some(Value::Object(error))) => rpc_error(error),
        _ => Err(EnvelopeFault::Protocol),
    }
}

/// Checks the shape of an `error` member and takes its message.
fn rpc_error(mut error: Map<String, Value>) -> Result<Envelope, EnvelopeFault> {
    let code = match error.get("code") {
        Some(Value::Number(n)) => n.as_i64().ok_or(EnvelopeFault::Protocol)?,
        _ => return Err(EnvelopeFault::Protocol),
    };
    match error.remove("message") {
        Some(Value::String(message)) if (1..=MAX_ERROR_MESSAGE_BYTES).contains(&message.len()) => {
            Ok(Envelope::Error { code, message })
        }
        _ => Err(EnvelopeFault::Protocol),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(v: Value) -> Result<Envelope, EnvelopeFault> {
        validate_response(v, 5)
    }

    fn error_with(error: Value) -> Result<Envelope, EnvelopeFault> {
        check(json!({"jsonrpc": "2.0", "id": 5, "error": error}))
    }

    fn id_fault(id: Value) -> Result<Envelope, EnvelopeFault> {
        check(json!({"jsonrpc": "2.0", "id": id, "result": {}}))
    }

    #[test]
    fn result_is_accepted() {
        let env = check(json!({"jsonrpc": "2.0", "id": 5, "result": {"x": [1]}}));
        assert_eq!(env, Ok(Envelope::Result(json!({"x": [1]}))));
    }

    #[test]
    fn null_result_is_a_result() {
        let env = check(json!({"jsonrpc": "2.0", "id": 5, "result": null}));
        assert_eq!(env, Ok(Envelope::Result(Value::Null)));
    }

    #[test]
    fn extra_envelope_keys_are_ignored() {
        let env = check(json!({"jsonrpc": "2.0", "id": 5, "result": 1, "extra": true}));
        assert_eq!(env, Ok(Envelope::Result(json!(1))));
    }

    #[test]
    fn non_object_is_protocol_error() {
        assert_eq!(check(json!([1, 2])), Err(EnvelopeFault::Protocol));
        assert_eq!(check(json!("x")), Err(EnvelopeFault::Protocol));
    }

    #[test]
    fn missing_jsonrpc_is_protocol_error() {
        assert_eq!(
            check(json!({"id": 5, "result": 1})),
            Err(EnvelopeFault::Protocol)
        );
    }

    #[test]
    fn wrong_jsonrpc_version_is_protocol_error() {
        let env = check(json!({"jsonrpc": "1.0", "id": 5, "result": 1}));
        assert_eq!(env, Err(EnvelopeFault::Protocol));
        let env = check(json!({"jsonrpc": 2.0, "id": 5, "result": 1}));
        assert_eq!(env, Err(EnvelopeFault::Protocol));
    }

    #[test]
    fn method_key_is_protocol_error() {
        let env = check(json!({"jsonrpc": "2.0", "id": 5, "method": "x", "result": 1}));
        assert_eq!(env, Err(EnvelopeFault::Protocol));
    }

    #[test]
    fn protocol_checks_come_before_id_checks() {
        let env = check(json!({"jsonrpc": "2.0", "id": "bad", "method": "x"}));
        assert_eq!(env, Err(EnvelopeFault::Protocol));
    }

    #[test]
    fn missing_id_is_invalid() {
        assert_eq!(
            check(json!({"jsonrpc": "2.0", "result": 1})),
            Err(EnvelopeFault::IdInvalid)
        );
    }

    #[test]
    fn null_id_is_invalid() {
        assert_eq!(id_fault(Value::Null), Err(EnvelopeFault::IdInvalid));
    }

    #[test]
    fn string_id_is_invalid() {
        assert_eq!(id_fault(json!("5")), Err(EnvelopeFault::IdInvalid));
    }

    #[test]
    fn negative_id_is_invalid() {
        assert_eq!(id_fault(json!(-1)), Err(EnvelopeFault::IdInvalid));
    }

    #[test]
    fn float_id_is_invalid() {
        let v: Value = serde_json::from_str(r#"{"jsonrpc":"2.0","id":5.0,"result":1}"#).unwrap();
        assert_eq!(check(v), Err(EnvelopeFault::IdInvalid));
    }

    #[test]
    fn id_below_expected_is_duplicate() {
        assert_eq!(id_fault(json!(4)), Err(EnvelopeFault::DuplicateId));
    }

    #[test]
    fn id_above_expected_is_unknown() {
        assert_eq!(id_fault(json!(6)), Err(EnvelopeFault::UnknownId));
    }

    #[test]
    fn id_checks_come_before_result_checks() {
        let env = check(json!({"jsonrpc": "2.0", "id": 6}));
        assert_eq!(env, Err(EnvelopeFault::UnknownId));
    }

    #[test]
    fn neither_result_nor_error_is_protocol_error() {
        assert_eq!(
            check(json!({"jsonrpc": "2.0", "id": 5})),
            Err(EnvelopeFault::Protocol)
        );
    }

    #[test]
    fn both_result_and_error_is_protocol_error() {
        let env = check(json!({
            "jsonrpc": "2.0", "id": 5, "result": 1, "error": {"code": 1, "message": "m"}
        }));
        assert_eq!(env, Err(EnvelopeFault::Protocol));
    }

    #[test]
    fn well_formed_error_is_rpc_error() {
        let env = error_with(json!({"code": -32000, "message": "boom"}));
        let expected = Envelope::Error {
            code: -32000,
            message: "boom".into(),
        };
        assert_eq!(env, Ok(expected));
    }

    #[test]
    fn error_data_and_extra_keys_are_ignored() {
        let env = error_with(json!({"code": 7, "message": "m", "data": [1], "other": {}}));
        let expected = Envelope::Error {
            code: 7,
            message: "m".into(),
        };
        assert_eq!(env, Ok(expected));
    }

    #[test]
    fn error_that_is_not_an_object_is_protocol_error() {
        assert_eq!(error_with(json!("boom")), Err(EnvelopeFault::Protocol));
        assert_eq!(error_with(Value::Null), Err(EnvelopeFault::Protocol));
    }

    #[test]
    fn error_without_code_is_protocol_error() {
        assert_eq!(
            error_with(json!({"message": "m"})),
            Err(EnvelopeFault::Protocol)
        );
    }

    #[test]
    fn non_integer_error_code_is_protocol_error() {
        assert_eq!(
            error_with(json!({"code": 1.5, "message": "m"})),
            Err(EnvelopeFault::Protocol)
        );
        assert_eq!(
            error_with(json!({"code": "1", "message": "m"})),
            Err(EnvelopeFault::Protocol)
        );
    }

    #[test]
    fn error_code_beyond_i64_is_protocol_error() {
        let env = error_with(json!({"code": u64::MAX, "message": "m"}));
        assert_eq!(env, Err(EnvelopeFault::Protocol));
    }

    #[test]
    fn error_without_message_is_protocol_error() {
        assert_eq!(error_with(json!({"code": 1})), Err(EnvelopeFault::Protocol));
    }

    #[test]
    fn non_string_error_message_is_protocol_error() {
        assert_eq!(
            error_with(json!({"code": 1, "message": 2})),
            Err(EnvelopeFault::Protocol)
        );
    }

    #[test]
    fn empty_error_message_is_protocol_error() {
        assert_eq!(
            error_with(json!({"code": 1, "message": ""})),
            Err(EnvelopeFault::Protocol)
        );
    }

    #[test]
    fn error_message_of_512_bytes_is_accepted() {
        let message = "é".repeat(256);
        let env = error_with(json!({"code": 1, "message": message}));
        assert_eq!(env, Ok(Envelope::Error { code: 1, message }));
    }

    #[test]
    fn error_message_of_513_bytes_is_protocol_error() {
        let env = error_with(json!({"code": 1, "message": "m".repeat(513)}));
        assert_eq!(env, Err(EnvelopeFault::Protocol));
    }

    #[test]
    fn faults_map_to_stable_codes() {
        assert_eq!(EnvelopeFault::Protocol.code(), ErrorCode::ProtocolError);
        assert_eq!(
            EnvelopeFault::IdInvalid.code(),
            ErrorCode::ResponseIdInvalid
        );
        assert_eq!(
            EnvelopeFault::DuplicateId.code(),
            ErrorCode::DuplicateResponseId
        );
        assert_eq!(
            EnvelopeFault::UnknownId.code(),
            ErrorCode::UnknownResponseId
        );
    }
}
