//! The transport request `{"id"?, "tool": "plugin_tool", "params": {…}}` and its response
//! `{"id"?, "success": bool, "output": {…}}`, shared by every front end that carries it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::id::{first_byte, parse_object, Present, RequestId};
use crate::gateway::ToolOutput;

/// The only tool name the transports serve.
pub const TOOL_NAME: &str = "plugin_tool";

/// How a request arrived; only the wording of a rejection depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Framing {
    /// One line of a JSON-lines stream.
    Line,
    /// The body of an HTTP request.
    Body,
}

/// A well-formed transport request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The caller's `id`, any JSON value, when present; echoed byte for byte in the response.
    pub id: Option<RequestId>,
    /// The `params` object handed to `plugin_tool` (not yet checked).
    pub params: Value,
}

/// Why bytes are not a request: answered with `invalid_request` (not started).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The request's `id`, when it could be read.
    pub id: Option<RequestId>,
    /// A safe message for the caller.
    pub message: &'static str,
}

/// The members of a request object this parser looks at (others are skipped unread).
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Present<RequestId>,
    #[serde(default)]
    tool: Present<Value>,
    #[serde(default)]
    params: Present<Value>,
}

/// Parses a request: one JSON object with `tool` = `plugin_tool` and `params`. Extra keys are
/// ignored; `params` is not looked at here (the gateway parses it strictly).
pub fn parse_request(bytes: &[u8], framing: Framing) -> Result<Request, Rejection> {
    let reject = |id: Option<RequestId>, message: &'static str| Rejection { id, message };
    let (not_json, not_object) = match framing {
        Framing::Line => (
            "the request line is not one JSON value",
            "the request must be a JSON object",
        ),
        Framing::Body => (
            "the request body is not one JSON value",
            "the request body must be a JSON object",
        ),
    };
    if first_byte(bytes) != Some(b'{') {
        let is_json = serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok();
        return Err(reject(None, if is_json { not_object } else { not_json }));
    }
    let envelope: Envelope = parse_object(bytes).map_err(|_| reject(None, not_json))?;
    let id = envelope.id.0;
    match envelope.tool.0 {
        None => return Err(reject(id, "the request has no `tool`")),
        Some(Value::String(tool)) if tool == TOOL_NAME => {}
        Some(_) => {
            return Err(reject(
                id,
                "unknown tool; this transport serves only `plugin_tool`",
            ))
        }
    }
    match envelope.params.0 {
        None => Err(reject(id, "the request has no `params`")),
        Some(params) => Ok(Request { id, params }),
    }
}

/// The response object `{"id"?, "success", "output"}`: the id, when present, exactly as the
/// request wrote it. Serialize it with serde_json (`to_string`, `to_vec`) to keep the id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponseBody {
    /// The request's id (omitted when the request had none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// Whether the action succeeded.
    pub success: bool,
    /// The success or failure object.
    pub output: Value,
}

impl ResponseBody {
    /// The response as a [`Value`] (for tests and checks: a numeric id may lose its spelling).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A [`ResponseBody`] whose output is still the typed [`ToolOutput`]: it serializes to the
/// same bytes without building the output's [`Value`] first (what the stdio gateway and
/// `POST /api/tools/call` send).
#[derive(Debug, Serialize)]
pub struct TypedResponseBody {
    /// The request's id (omitted when the request had none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// Whether the action succeeded.
    pub success: bool,
    /// The success or failure output.
    pub output: ToolOutput,
}

impl TypedResponseBody {
    /// The response to a request with `id` (omitted when `None`).
    pub fn new(id: Option<RequestId>, output: ToolOutput) -> TypedResponseBody {
        TypedResponseBody {
            id,
            success: output.is_success(),
            output,
        }
    }
}

/// The response to a request with `id` (omitted when `None`).
pub fn response_body(id: Option<RequestId>, output: ToolOutput) -> ResponseBody {
    ResponseBody {
        id,
        success: output.is_success(),
        output: output.into_json(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn value(id: Option<RequestId>) -> Option<Value> {
        id.map(|id| id.to_value())
    }

    fn line(bytes: &[u8]) -> Result<(Value, Value), (Value, &'static str)> {
        parse_request(bytes, Framing::Line)
            .map(|r| (value(r.id).unwrap_or(Value::Null), r.params))
            .map_err(|r| (value(r.id).unwrap_or(Value::Null), r.message))
    }

    #[allow(clippy::type_complexity)]
    fn body(bytes: &[u8]) -> Result<(Option<Value>, Value), (Option<Value>, &'static str)> {
        parse_request(bytes, Framing::Body)
            .map(|r| (value(r.id), r.params))
            .map_err(|r| (value(r.id), r.message))
    }

    // The stdio transport's cases.
    #[test]
    fn request_parsing() {
        let ok = line(br#"{"id":7,"tool":"plugin_tool","params":{"action":"list"}}"#);
        assert_eq!(ok.unwrap(), (json!(7), json!({"action":"list"})));
        assert_eq!(line(b"nope").unwrap_err().0, Value::Null);
        assert_eq!(line(b"[1]").unwrap_err().0, Value::Null);
        assert_eq!(
            line(br#"{"id":"a","params":{}}"#).unwrap_err().0,
            json!("a")
        );
        assert_eq!(
            line(br#"{"id":1,"tool":"other","params":{}}"#)
                .unwrap_err()
                .0,
            json!(1)
        );
        assert!(line(br#"{"id":1,"tool":"plugin_tool"}"#).is_err());
    }

    // The HTTP transport's cases.
    #[test]
    fn request_body_parsing() {
        let (id, params) =
            body(br#"{"id":7,"tool":"plugin_tool","params":{"action":"list"}}"#).unwrap();
        assert_eq!((id, params), (Some(json!(7)), json!({"action":"list"})));
        let (id, _) = body(br#"{"tool":"plugin_tool","params":{}}"#).unwrap();
        assert_eq!(id, None);
        assert_eq!(body(b"{nope").unwrap_err().0, None);
        assert_eq!(
            body(br#"{"id":"a","tool":"x","params":{}}"#).unwrap_err().0,
            Some(json!("a"))
        );
        assert!(body(br#"{"tool":"plugin_tool"}"#).is_err());
    }

    #[test]
    fn rejections_name_their_framing() {
        assert_eq!(
            parse_request(b"nope", Framing::Line).unwrap_err().message,
            "the request line is not one JSON value"
        );
        assert_eq!(
            parse_request(b"[1]", Framing::Body).unwrap_err().message,
            "the request body must be a JSON object"
        );
    }

    #[test]
    fn response_omits_a_missing_id() {
        let output = ToolOutput::received(true, json!({"a": 1}));
        assert_eq!(
            response_body(None, output.clone()).to_value(),
            json!({"success": true, "output": {"a": 1}})
        );
        assert_eq!(
            response_body(Some(RequestId::null()), output).to_value(),
            json!({"id": null, "success": true, "output": {"a": 1}})
        );
    }

    #[test]
    fn a_typed_response_serializes_to_the_bytes_of_its_value_form() {
        let outputs = [
            ToolOutput::received(true, json!({"b": [1, "x"], "a": {"z": null, "c": 1.5}})),
            ToolOutput::received(false, json!({"error": {"code": "x"}})),
            ToolOutput::failure(&crate::error::Error::not_started(
                crate::error::ErrorCode::ToolUnavailable,
                "no such tool",
            )),
        ];
        for output in outputs {
            for id in [None, Some(RequestId::null())] {
                let typed = TypedResponseBody::new(id.clone(), output.clone());
                let typed = serde_json::to_string(&typed).unwrap();
                let value = serde_json::to_string(&response_body(id, output.clone())).unwrap();
                assert_eq!(typed, value);
            }
        }
    }

    #[test]
    fn ids_are_echoed_byte_for_byte() {
        for id in [
            "18446744073709551616",
            "1e2",
            "-0",
            "1.50",
            "\"x\"",
            "[1, 2.0]",
        ] {
            let line = format!(r#"{{"id": {id}, "tool":"plugin_tool","params":{{}}}}"#);
            let request = parse_request(line.as_bytes(), Framing::Line).unwrap();
            let response = response_body(request.id, ToolOutput::received(true, json!({})));
            let text = serde_json::to_string(&response).unwrap();
            assert_eq!(
                text,
                format!(r#"{{"id":{id},"success":true,"output":{{}}}}"#)
            );
        }
    }
}
