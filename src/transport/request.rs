//! The transport request `{"id"?, "tool": "plugin_tool", "params": {…}}` and its response
//! `{"id"?, "success": bool, "output": {…}}`, shared by every front end that carries it.

use serde_json::{Map, Value};

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
    /// The caller's `id`, any JSON value, when present; echoed in the response.
    pub id: Option<Value>,
    /// The `params` object handed to `plugin_tool` (not yet checked).
    pub params: Value,
}

/// Why bytes are not a request: answered with `invalid_request` (not started).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The request's `id`, when it could be read.
    pub id: Option<Value>,
    /// A safe message for the caller.
    pub message: &'static str,
}

/// Parses a request: one JSON object with `tool` = `plugin_tool` and `params`. Extra keys are
/// ignored; `params` is not looked at here (the gateway parses it strictly).
pub fn parse_request(bytes: &[u8], framing: Framing) -> Result<Request, Rejection> {
    let reject = |id: Option<Value>, message: &'static str| Rejection { id, message };
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
    let value: Value = serde_json::from_slice(bytes).map_err(|_| reject(None, not_json))?;
    let Value::Object(mut map) = value else {
        return Err(reject(None, not_object));
    };
    let id = map.remove("id");
    match map.get("tool") {
        None => return Err(reject(id, "the request has no `tool`")),
        Some(Value::String(tool)) if tool == TOOL_NAME => {}
        Some(_) => {
            return Err(reject(
                id,
                "unknown tool; this transport serves only `plugin_tool`",
            ))
        }
    }
    match map.remove("params") {
        None => Err(reject(id, "the request has no `params`")),
        Some(params) => Ok(Request { id, params }),
    }
}

/// The response object `{"id"?, "success", "output"}`; `id` is omitted when `None`.
pub fn response_body(id: Option<Value>, output: ToolOutput) -> Value {
    let mut response = Map::new();
    if let Some(id) = id {
        response.insert("id".into(), id);
    }
    response.insert("success".into(), output.success.into());
    response.insert("output".into(), output.output);
    Value::Object(response)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn line(bytes: &[u8]) -> Result<(Value, Value), (Value, &'static str)> {
        parse_request(bytes, Framing::Line)
            .map(|r| (r.id.unwrap_or(Value::Null), r.params))
            .map_err(|r| (r.id.unwrap_or(Value::Null), r.message))
    }

    #[allow(clippy::type_complexity)]
    fn body(bytes: &[u8]) -> Result<(Option<Value>, Value), (Option<Value>, &'static str)> {
        parse_request(bytes, Framing::Body)
            .map(|r| (r.id, r.params))
            .map_err(|r| (r.id, r.message))
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
        let output = ToolOutput::ok(json!({"a": 1}));
        assert_eq!(
            response_body(None, output.clone()),
            json!({"success": true, "output": {"a": 1}})
        );
        assert_eq!(
            response_body(Some(Value::Null), output),
            json!({"id": null, "success": true, "output": {"a": 1}})
        );
    }
}
