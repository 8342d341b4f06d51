//! tools/call result validation (docs/PROTOCOL.md §2.5, the tools/call result; §3, bounds).
//!
//! Order of checks: the whole result against the JSON bounds and 512 KiB serialized
//! ([`ResultFault::Invalid`]); then its shape — an object with only `content`,
//! `structuredContent`, `isError`; `content` an array of at most 32 items, each exactly
//! `{"type":"text","text":…}` with text ≤ 512 KiB; `structuredContent` an object; `isError` a
//! boolean ([`ResultFault::Invalid`]); then the output schema
//! ([`ResultFault::OutputSchemaViolation`]). A result that breaks the contract is therefore
//! always `Invalid`, even when it would also violate the output schema.
//!
//! The 512 KiB limit on `structuredContent` is implied by the whole-result limit, of which it
//! is a strict part.

use std::sync::OnceLock;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{Schema, SchemaMismatch};
use crate::error::{Dispatch, Error, ErrorCode};
use crate::frame::{
    check_json_bounds_sized, scan_result, BoundsVerdict, CanonicalResult, Envelope, ResponseLine,
    ScannedResult, MAX_CONTENT_ITEMS, MAX_RESULT_BYTES, MAX_TEXT_BYTES,
};

/// A validated tools/call result, held in its canonical JSON form: `content`,
/// `structuredContent` when the plugin sent it, and `isError` always (false when omitted),
/// keys sorted and no whitespace — the text a front writes as it is. The accessors that look
/// inside it parse it once, on first use.
#[derive(Debug, Clone)]
pub struct ToolResult {
    /// The canonical JSON text.
    json: CanonicalResult,
    /// The `isError` member.
    is_error: bool,
    /// The parsed object, made on first use (boxed: most results are never parsed).
    parsed: OnceLock<Box<Map<String, Value>>>,
}

impl ToolResult {
    /// A result whose canonical text is `json`.
    fn new(json: CanonicalResult, is_error: bool) -> ToolResult {
        ToolResult {
            json,
            is_error,
            parsed: OnceLock::new(),
        }
    }

    /// A result whose canonical object is `map` (already validated).
    fn from_map(map: Map<String, Value>) -> ToolResult {
        let is_error = map.get("isError") == Some(&Value::Bool(true));
        let content = map.get("content").unwrap_or(&Value::Null);
        let json = CanonicalResult::write(content, is_error, map.get("structuredContent"));
        let result = ToolResult::new(json, is_error);
        // The map is what parsing the text gives back.
        let _ = result.parsed.set(Box::new(map));
        result
    }

    fn map(&self) -> &Map<String, Value> {
        self.parsed
            .get_or_init(|| serde_json::from_str(self.json.as_raw().get()).unwrap_or_default())
    }

    /// The text of each content item, in order.
    pub fn texts(&self) -> Vec<&str> {
        match self.map().get("content") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|item| item.get("text").and_then(Value::as_str))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Structured content, when the plugin sent it.
    pub fn structured_content(&self) -> Option<&Map<String, Value>> {
        self.map()
            .get("structuredContent")
            .and_then(Value::as_object)
    }

    /// Whether the tool reported an error.
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The canonical output object.
    pub fn as_json(&self) -> &Map<String, Value> {
        self.map()
    }

    /// The canonical output object, by value.
    pub fn into_json(self) -> Value {
        self.map();
        Value::Object(self.parsed.into_inner().map_or_else(Map::new, |map| *map))
    }

    /// A copy of the canonical output object.
    pub fn to_json(&self) -> Value {
        Value::Object(self.map().clone())
    }

    /// The canonical JSON text (written out as it is).
    pub fn as_raw(&self) -> &RawValue {
        self.json.as_raw()
    }

    /// The canonical JSON text, by value.
    pub fn into_raw(self) -> Box<RawValue> {
        self.json.into_raw()
    }

    /// The canonical JSON text with `"key":"value"` added where it sorts: `key` must sort
    /// after `isError` and before `structuredContent`, and neither may need an escape.
    pub fn into_raw_with(self, key: &str, value: &str) -> Box<RawValue> {
        self.json.into_raw_with(key, value)
    }
}

/// Two results are equal when their canonical texts are.
impl PartialEq for ToolResult {
    fn eq(&self, other: &ToolResult) -> bool {
        self.as_raw().get() == other.as_raw().get()
    }
}

/// Why a result was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultFault {
    /// Breaks the result contract or its bounds.
    Invalid,
    /// structuredContent missing or not matching the declared outputSchema.
    OutputSchemaViolation,
}

impl ResultFault {
    /// The stable error code.
    pub fn code(self) -> ErrorCode {
        match self {
            ResultFault::Invalid => ErrorCode::ResultInvalid,
            ResultFault::OutputSchemaViolation => ErrorCode::OutputSchemaViolation,
        }
    }

    /// The caller's error for a result the plugin completed with this fault.
    pub(crate) fn into_error(self) -> Error {
        let message = match self {
            ResultFault::OutputSchemaViolation => {
                "structuredContent is missing or does not match the tool's outputSchema"
            }
            ResultFault::Invalid => "the tool result breaks the result contract",
        };
        Error::new(self.code(), Dispatch::Completed, message)
    }
}

/// A refused result inside this crate: the fault, and where `structuredContent` broke the
/// output schema when it did (for the operator: [`ResultRefusal::into_error`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResultRefusal {
    pub(crate) fault: ResultFault,
    /// The mismatch; `None` for every other refusal (and a missing `structuredContent`).
    mismatch: Option<Box<SchemaMismatch>>,
}

impl From<ResultFault> for ResultRefusal {
    fn from(fault: ResultFault) -> ResultRefusal {
        ResultRefusal {
            fault,
            mismatch: None,
        }
    }
}

impl ResultRefusal {
    /// `structuredContent` that does not match the output schema, at `mismatch`.
    fn mismatch(mismatch: SchemaMismatch) -> ResultRefusal {
        ResultRefusal {
            fault: ResultFault::OutputSchemaViolation,
            mismatch: Some(Box::new(mismatch)),
        }
    }

    /// The caller's error ([`ResultFault::into_error`]); for an output-schema violation its
    /// local detail names the JSON Pointer in `structuredContent` and the schema keyword it
    /// broke.
    pub(crate) fn into_error(self) -> Error {
        let error = self.fault.into_error();
        match (self.fault, self.mismatch) {
            (ResultFault::OutputSchemaViolation, Some(m)) => {
                error.with_local_detail(super::schema::mismatch_detail(&m))
            }
            (ResultFault::OutputSchemaViolation, None) => error.with_local_detail(
                "structuredContent is missing or not an object, and the tool declares an \
                 outputSchema: a result that is not an error (isError false) must carry \
                 structuredContent matching it",
            ),
            _ => error,
        }
    }
}

/// Validates a tools/call `result` against the contract and the tool's output schema.
///
/// With an output schema, `structuredContent` must be present and match it unless `isError`
/// is true; when `isError` is true it may be absent, but if present it must still match.
/// Without an output schema, `structuredContent` is accepted as is.
pub fn validate_tool_result(
    result: Value,
    output_schema: Option<&Schema>,
) -> Result<ToolResult, ResultFault> {
    validate_tool_result_bounded(result, None, output_schema).map_err(|r| r.fault)
}

/// [`validate_tool_result`] with the result's JSON bounds verdict when it is already known
/// (checked while the response was parsed); `None` walks the result.
pub(crate) fn validate_tool_result_bounded(
    result: Value,
    bounds: Option<BoundsVerdict>,
    output_schema: Option<&Schema>,
) -> Result<ToolResult, ResultRefusal> {
    // JSON bounds and the 512 KiB size bound.
    let bounds = bounds.unwrap_or_else(|| check_json_bounds_sized(&result, MAX_RESULT_BYTES));
    if !matches!(bounds, Ok(bytes) if bytes <= MAX_RESULT_BYTES) {
        return Err(ResultFault::Invalid.into());
    }
    let Value::Object(mut map) = result else {
        return Err(ResultFault::Invalid.into());
    };
    // One pass over the members: only the three known keys, each of its type.
    let (mut content_ok, mut is_error, mut structured) = (false, None, None);
    for (key, value) in &map {
        match (key.as_str(), value) {
            ("content", Value::Array(items)) => {
                content_ok = items.len() <= MAX_CONTENT_ITEMS && items.iter().all(is_text_item);
            }
            ("isError", Value::Bool(flag)) => is_error = Some(*flag),
            ("structuredContent", Value::Object(_)) => structured = Some(value),
            _ => return Err(ResultFault::Invalid.into()),
        }
    }
    if !content_ok {
        return Err(ResultFault::Invalid.into());
    }
    if let Some(schema) = output_schema {
        match structured {
            None if is_error != Some(true) => return Err(ResultFault::OutputSchemaViolation.into()),
            None => {}
            Some(value) => schema.check(value).map_err(ResultRefusal::mismatch)?,
        }
    }
    if is_error.is_none() {
        map.insert("isError".to_string(), Value::Bool(false));
    }
    Ok(ToolResult::from_map(map))
}

/// [`validate_tool_result`] of a result received as JSON text (a remote runner's answer): one
/// scan when it is sure, else the text decoded and validated as a `Value`. Text that is not
/// one JSON value is [`ResultFault::Invalid`].
pub fn validate_tool_result_text(
    text: &str,
    output_schema: Option<&Schema>,
) -> Result<ToolResult, ResultFault> {
    match scan_result(text) {
        Some(scanned) => check_scanned(scanned, output_schema).map_err(|r| r.fault),
        None => {
            let value = serde_json::from_str(text).map_err(|_| ResultFault::Invalid)?;
            validate_tool_result(value, output_schema)
        }
    }
}

/// A call's answer as read from its line: the result scanned from the text, or the line's
/// envelope and its result's bounds verdict, as decoding the line gave them.
pub(crate) enum CallReply {
    /// The result, scanned from the line (only the output schema is left to check).
    Scanned(ScannedResult),
    /// The decoded line's envelope, and its result's bounds verdict (`None`: only a walk can
    /// tell).
    Line(Envelope, Option<BoundsVerdict>),
}

impl CallReply {
    /// The answer to the tools/call `id` in `line`: read in one scan when the line has one of
    /// the usual forms and the scan is sure of its result (see [`scan_result`]), else
    /// what `decode` makes of the line (its envelope and result bounds, or its fault). A
    /// scanned result is one valid JSON value within the bounds, so the line is valid JSON
    /// with a valid envelope, as decoding it would have found.
    pub(crate) fn read<E>(
        line: &ResponseLine,
        id: u64,
        decode: impl FnOnce() -> Result<(Envelope, Option<BoundsVerdict>), E>,
    ) -> Result<CallReply, E> {
        let scanned = line.usual_result(id).and_then(scan_result);
        match scanned {
            Some(scanned) => Ok(CallReply::Scanned(scanned)),
            None => decode().map(|(envelope, bounds)| CallReply::Line(envelope, bounds)),
        }
    }

    /// The result, validated against the contract and the tool's output schema; the plugin's
    /// JSON-RPC error as a completed `plugin_rpc_error`.
    #[inline]
    pub(crate) fn check(
        self,
        output_schema: Option<&Schema>,
    ) -> Result<Result<ToolResult, ResultRefusal>, Error> {
        Ok(match self {
            CallReply::Scanned(scanned) => check_scanned(scanned, output_schema),
            CallReply::Line(other, bounds) => {
                validate_tool_result_bounded(other.into_result()?, bounds, output_schema)
            }
        })
    }
}

/// A scanned result, once `structuredContent` is checked against the tool's output schema
/// (as [`validate_tool_result`] does).
#[inline]
fn check_scanned(
    scanned: ScannedResult,
    output_schema: Option<&Schema>,
) -> Result<ToolResult, ResultRefusal> {
    if let Some(schema) = output_schema {
        match scanned.structured() {
            None if !scanned.is_error() => return Err(ResultFault::OutputSchemaViolation.into()),
            None => {}
            Some(text) => {
                let value: Value =
                    serde_json::from_str(text).map_err(|_| ResultFault::OutputSchemaViolation)?;
                schema.check(&value).map_err(ResultRefusal::mismatch)?;
            }
        }
    }
    let is_error = scanned.is_error();
    Ok(ToolResult::new(scanned.into_canonical(), is_error))
}

/// Exactly `{"type":"text","text":…}` with text ≤ 512 KiB.
fn is_text_item(item: &Value) -> bool {
    let Value::Object(map) = item else {
        return false;
    };
    map.len() == 2
        && map.get("type").and_then(Value::as_str) == Some("text")
        && matches!(map.get("text"), Some(Value::String(text)) if text.len() <= MAX_TEXT_BYTES)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod scanned_tests;
