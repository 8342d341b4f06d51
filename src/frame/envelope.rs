//! Response-envelope validation (docs/PROTOCOL.md §2.6, the response envelope).
//!
//! [`decode_response`] (or [`ResponseLine::decode`]) then [`validate_raw`] parse a response
//! line straight into a [`RawEnvelope`] that holds only what the rules look at: no map, key or
//! `"2.0"` string is allocated for the envelope, and everything but the id comparison is
//! already decided when the line is decoded. The tests hold it to a check of the rules on the
//! line's parsed `Value` (`tests::validate_response`); a call's usual answer line is read
//! without it (`fast::usual_result`), held to it the same way.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::bounded::BoundedSeed;
use super::bounds::{BoundsVerdict, Tally};
use super::text::{line_text, ReadFault};
use crate::error::{Dispatch, Error, ErrorCode};

/// Longest JSON-RPC error message, in bytes.
const MAX_ERROR_MESSAGE_BYTES: usize = 512;

/// A well-formed response: a result, or a well-formed JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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

impl Envelope {
    /// The result value, or the plugin's JSON-RPC error as a completed `plugin_rpc_error`
    /// (its message with control characters replaced).
    pub(crate) fn into_result(self) -> Result<Value, Error> {
        match self {
            Envelope::Result(value) => Ok(value),
            Envelope::Error { code, message } => {
                let clean: String = message
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                let message = format!("the plugin answered with JSON-RPC error {code}: {clean}");
                Err(Error::new(
                    ErrorCode::RpcError,
                    Dispatch::Completed,
                    message,
                ))
            }
        }
    }
}

/// Why an envelope was rejected; `code()` is one of the envelope/id codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnvelopeFault {
    /// Not an object, wrong `jsonrpc`, has `method`, not exactly one of result/error, bad error
    /// shape.
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

/// A response line decoded for [`validate_raw`]: the verdict of every envelope rule except the
/// id comparison, and the result or error it carries.
///
/// Built by [`decode_response`] or [`ResponseLine::decode`] from any valid JSON line — a line that is JSON but no envelope (an array, a string, an
/// object without `jsonrpc` …) decodes fine and is rejected by [`validate_raw`], exactly as the
/// `Value`-based check of the tests rejects its `Value`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawEnvelope(Decoded);

#[derive(Debug, Clone, PartialEq)]
enum Decoded {
    /// A fault found before the id comparison ([`EnvelopeFault::Protocol`] or
    /// [`EnvelopeFault::IdInvalid`]).
    Fault(EnvelopeFault),
    /// A valid `id`, and the outcome of the result/error checks that follow its comparison.
    Response {
        id: u64,
        body: Result<Envelope, EnvelopeFault>,
        /// The result's JSON bounds, checked while it was parsed (`None`: not found then).
        result_bounds: Option<BoundsVerdict>,
    },
}

/// Decodes one response line (without its `\n`) into a [`RawEnvelope`].
///
/// The line faults are those of
/// [`LineReader::read_response_line`](super::LineReader::read_response_line): one trailing `\r` is stripped; longer than `MAX_LINE_BYTES` is [`ReadFault::TooLarge`]; empty, a
/// BOM, invalid UTF-8 or anything but exactly one JSON value is [`ReadFault::Malformed`]. The
/// JSON accepted is exactly what parses as a `serde_json::Value` (same syntax, number range,
/// string escapes and nesting limit), also inside members that are ignored. Members are read
/// like a `Value` object does: a duplicate key keeps its last value, and `"result": null` is
/// a present result.
pub fn decode_response(line: &[u8]) -> Result<RawEnvelope, ReadFault> {
    line_text(line).and_then(decode_response_text)
}

/// [`decode_response`] on text that already passed the line checks.
pub(super) fn decode_response_text(text: &str) -> Result<RawEnvelope, ReadFault> {
    serde_json::from_str(text).map_err(|_| ReadFault::Malformed)
}

/// The text of one response line that passed every line check (length, not empty, no BOM,
/// UTF-8), not yet parsed: [`ResponseLine::decode`] parses it. Made by
/// [`LineReader::read_response_line`](super::LineReader::read_response_line).
#[derive(Debug)]
pub struct ResponseLine(String);

impl ResponseLine {
    pub(super) fn new(text: String) -> ResponseLine {
        ResponseLine(text)
    }

    /// Parses the line into a [`RawEnvelope`], exactly as [`decode_response`] does: anything but
    /// exactly one JSON value is [`ReadFault::Malformed`].
    pub fn decode(&self) -> Result<RawEnvelope, ReadFault> {
        decode_response_text(&self.0)
    }

    /// The unchecked result text of a line in one of the two usual forms with id `id`
    /// (`{"jsonrpc":"2.0","id":N,"result":…}` or `{"id":N,"jsonrpc":"2.0","result":…}`, compact
    /// envelope): for a reader that checks the result's text as strictly as [`decode`] would
    /// (as one JSON value), and decodes the line when it cannot. `None` for any other line.
    ///
    /// [`decode`]: ResponseLine::decode
    pub(crate) fn usual_result(&self, id: u64) -> Option<&str> {
        super::fast::usual_result(&self.0, id)
    }

    /// The line's text.
    #[cfg(test)]
    pub fn text(&self) -> &str {
        &self.0
    }

    /// The text buffer, to read a later line into.
    pub fn into_buffer(self) -> String {
        self.0
    }
}

/// Finishes the envelope checks on a decoded line: the faults found while decoding, then the id
/// comparison with `expected_id` (below: [`EnvelopeFault::DuplicateId`], above:
/// [`EnvelopeFault::UnknownId`]), then the result/error checks — the same faults in the same
/// order as the `Value`-based check of the tests on the line's `Value`.
pub fn validate_raw(raw: RawEnvelope, expected_id: u64) -> Result<Envelope, EnvelopeFault> {
    validate_raw_bounded(raw, expected_id).map(|(envelope, _)| envelope)
}

/// [`validate_raw`], and the JSON bounds verdict of the result, found while it was parsed
/// (`None` when it could not be told then, or there is no result): what
/// `check_json_bounds_sized(result, usize::MAX)` would say, without walking it again.
pub(crate) fn validate_raw_bounded(
    raw: RawEnvelope,
    expected_id: u64,
) -> Result<(Envelope, Option<BoundsVerdict>), EnvelopeFault> {
    match raw.0 {
        Decoded::Fault(fault) => Err(fault),
        Decoded::Response { id, .. } if id < expected_id => Err(EnvelopeFault::DuplicateId),
        Decoded::Response { id, .. } if id > expected_id => Err(EnvelopeFault::UnknownId),
        Decoded::Response {
            body,
            result_bounds,
            ..
        } => body.map(|envelope| (envelope, result_bounds)),
    }
}

impl RawEnvelope {
    const NOT_AN_OBJECT: RawEnvelope = RawEnvelope(Decoded::Fault(EnvelopeFault::Protocol));

    /// Applies the envelope rules (but the id comparison) to the members of an object.
    fn from_members(members: Members) -> RawEnvelope {
        if !members.jsonrpc_v2 || members.method {
            return RawEnvelope(Decoded::Fault(EnvelopeFault::Protocol));
        }
        let Some(Probe::Id(id)) = members.id else {
            return RawEnvelope(Decoded::Fault(EnvelopeFault::IdInvalid));
        };
        let body = match (members.result, members.error) {
            (Some(result), None) => Ok(Envelope::Result(result)),
            (None, Some(Value::Object(error))) => rpc_error(error),
            _ => Err(EnvelopeFault::Protocol),
        };
        RawEnvelope(Decoded::Response {
            id,
            body,
            result_bounds: members.result_bounds,
        })
    }
}

/// The envelope members the rules look at; each assignment overwrites, so the last duplicate
/// wins, as in a `Value` object.
#[derive(Default)]
struct Members {
    /// The last `jsonrpc` is the string `"2.0"`.
    jsonrpc_v2: bool,
    /// Some `method` member is present.
    method: bool,
    /// The last `id`.
    id: Option<Probe>,
    /// The last `result` (`null` included).
    result: Option<Value>,
    /// Its JSON bounds, checked while it was parsed.
    result_bounds: Option<BoundsVerdict>,
    /// The last `error`.
    error: Option<Value>,
}

impl<'de> Deserialize<'de> for RawEnvelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnvelopeVisitor)
    }
}

/// Any JSON value: an object's members are read, anything else is not an envelope.
struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = RawEnvelope;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<RawEnvelope, E> {
        Ok(RawEnvelope::NOT_AN_OBJECT)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<RawEnvelope, E> {
        Ok(RawEnvelope::NOT_AN_OBJECT)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<RawEnvelope, E> {
        Ok(RawEnvelope::NOT_AN_OBJECT)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<RawEnvelope, E> {
        Ok(RawEnvelope::NOT_AN_OBJECT)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<RawEnvelope, E> {
        Ok(RawEnvelope::NOT_AN_OBJECT)
    }

    fn visit_unit<E: de::Error>(self) -> Result<RawEnvelope, E> {
        Ok(RawEnvelope::NOT_AN_OBJECT)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RawEnvelope, A::Error> {
        drain_seq(seq)?;
        Ok(RawEnvelope::NOT_AN_OBJECT)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEnvelope, A::Error> {
        let mut members = Members::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Jsonrpc => members.jsonrpc_v2 = map.next_value::<Probe>()? == Probe::V2,
                Key::Id => members.id = Some(map.next_value()?),
                Key::Method => {
                    map.next_value::<Probe>()?;
                    members.method = true;
                }
                // A `Value` (not an `Option<Value>`): `null` is present. Its bounds are checked
                // while it is parsed, so a tool result needs no second walk.
                Key::Result => {
                    let mut tally = Tally::default();
                    members.result = Some(map.next_value_seed(BoundedSeed::root(&mut tally))?);
                    members.result_bounds = tally.verdict();
                }
                Key::Error => members.error = Some(map.next_value()?),
                Key::Other => {
                    map.next_value::<Probe>()?;
                }
            }
        }
        Ok(RawEnvelope::from_members(members))
    }
}

/// An envelope key, decoded like a `Value` object key (escapes resolved).
enum Key {
    Jsonrpc,
    Id,
    Method,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "jsonrpc" => Key::Jsonrpc,
            "id" => Key::Id,
            "method" => Key::Method,
            "result" => Key::Result,
            "error" => Key::Error,
            _ => Key::Other,
        })
    }
}

/// What a member value is, as far as the envelope rules care; reading one allocates nothing.
///
/// Not `IgnoredAny`: serde_json skips an ignored value without checking its number range,
/// string escapes or nesting depth, so a line that is no `Value` could pass. A probe reads
/// every value through `deserialize_any`, like `Value` does, and accepts exactly the same JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    /// The string `"2.0"`.
    V2,
    /// A non-negative integer that fits a u64 (what `Value::as_u64` accepts).
    Id(u64),
    /// Anything else.
    Other,
}

impl<'de> Deserialize<'de> for Probe {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ProbeVisitor)
    }
}

struct ProbeVisitor;

impl<'de> Visitor<'de> for ProbeVisitor {
    type Value = Probe;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Probe, E> {
        Ok(Probe::Other)
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Probe, E> {
        Ok(u64::try_from(n).map_or(Probe::Other, Probe::Id))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Probe, E> {
        Ok(Probe::Id(n))
    }

    // Floats, even integral ones like `5.0`, are no id (`Value::as_u64` is None for them).
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Probe, E> {
        Ok(Probe::Other)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Probe, E> {
        Ok(if s == "2.0" { Probe::V2 } else { Probe::Other })
    }

    fn visit_unit<E: de::Error>(self) -> Result<Probe, E> {
        Ok(Probe::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Probe, A::Error> {
        drain_seq(seq)?;
        Ok(Probe::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Probe, A::Error> {
        while map.next_entry::<Probe, Probe>()?.is_some() {}
        Ok(Probe::Other)
    }
}

/// Reads (and checks) every element of an array.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<Probe>()?.is_some() {}
    Ok(())
}

#[cfg(test)]
mod tests;
