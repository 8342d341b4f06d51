//! JSON-RPC 2.0 messages as MCP uses them: typed incoming messages and error objects.
//!
//! One message per line (stdio) or per body (HTTP). A batch (a JSON array) is not a message
//! MCP defines: it is rejected with -32600 like any other malformed request.

use serde_json::{json, Map, Value};

/// The text is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// Not a valid request object (also: a batch, a request before `initialize`, an over-long line).
pub const INVALID_REQUEST: i64 = -32600;
/// The method is not served.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The params are wrong (also: an unknown tool, missing per-request `_meta` fields).
pub const INVALID_PARAMS: i64 = -32602;
/// The server failed (a bug); never used for a plugin's failure.
pub const INTERNAL_ERROR: i64 = -32603;
/// Streamable HTTP: a routing header does not match the body, or is missing.
pub const HEADER_MISMATCH: i64 = -32020;
/// The request's protocol version is not supported; `data` lists the supported ones.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The error code.
    pub code: i64,
    /// A short, safe message (never a parser's text or a plugin's output).
    pub message: String,
    /// Optional structured data.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The error object `{"code","message","data"?}`.
    pub fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }

    /// The error response for request `id` (`null` when the id could not be read).
    pub fn response(&self, id: &Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": self.to_json()})
    }
}

/// A result response for request `id`.
pub fn result_response(id: &Value, result: Value) -> Value {
    // Built by moves: `json!` would serialize `result` into a copy.
    let mut response = Map::with_capacity(3);
    response.insert("jsonrpc".into(), Value::String("2.0".into()));
    response.insert("id".into(), id.clone());
    response.insert("result".into(), result);
    Value::Object(response)
}

/// One well-formed incoming message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Incoming {
    /// A request: it gets exactly one response.
    Request {
        /// A string or a number, echoed in the response.
        id: Value,
        /// The method name.
        method: String,
        /// The params object (empty when absent).
        params: Map<String, Value>,
    },
    /// A notification: it never gets a response.
    Notification {
        /// The method name.
        method: String,
        /// The params object (empty when absent or not an object).
        params: Map<String, Value>,
    },
    /// A response from the client (this server sends no requests, so it is ignored).
    Response,
}

/// A message that is not well formed: the error to answer, with the id when it could be read.
/// `answer` is false for a malformed notification, which gets no response.
#[derive(Debug, Clone, PartialEq)]
pub struct Malformed {
    /// The request id, or `null`.
    pub id: Value,
    /// The error to answer.
    pub error: RpcError,
    /// False when the message was a notification (no response is sent).
    pub answer: bool,
}

impl Malformed {
    fn new(id: Value, code: i64, message: &str) -> Malformed {
        Malformed {
            id,
            error: RpcError::new(code, message),
            answer: true,
        }
    }
}

/// Parses one message.
pub fn parse(bytes: &[u8]) -> Result<Incoming, Malformed> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|_| Malformed::new(Value::Null, PARSE_ERROR, "the message is not valid JSON"))?;
    let mut map = match value {
        Value::Object(map) => map,
        Value::Array(_) => {
            return Err(Malformed::new(
                Value::Null,
                INVALID_REQUEST,
                "batches are not supported; send one JSON-RPC message per line or body",
            ))
        }
        _ => {
            return Err(Malformed::new(
                Value::Null,
                INVALID_REQUEST,
                "a JSON-RPC message must be an object",
            ))
        }
    };
    let id = match map.remove("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        Some(_) => {
            return Err(Malformed::new(
                Value::Null,
                INVALID_REQUEST,
                "the id must be a string or a number",
            ))
        }
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let mut malformed = Malformed::new(reply_id, INVALID_REQUEST, "`jsonrpc` must be \"2.0\"");
        malformed.answer = id.is_some() || !map.contains_key("method");
        return Err(malformed);
    }
    let method = match map.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => {
            let mut malformed =
                Malformed::new(reply_id, INVALID_REQUEST, "`method` must be a string");
            malformed.answer = id.is_some();
            return Err(malformed);
        }
        None => {
            if id.is_some() && (map.contains_key("result") || map.contains_key("error")) {
                return Ok(Incoming::Response);
            }
            return Err(Malformed::new(
                reply_id,
                INVALID_REQUEST,
                "the message has no `method`",
            ));
        }
    };
    let params = match map.remove("params") {
        None => Ok(Map::new()),
        Some(Value::Object(params)) => Ok(params),
        Some(_) => Err(()),
    };
    match (id, params) {
        (Some(id), Ok(params)) => Ok(Incoming::Request { id, method, params }),
        (Some(id), Err(())) => Err(Malformed::new(
            id,
            INVALID_PARAMS,
            "`params` must be an object",
        )),
        (None, params) => Ok(Incoming::Notification {
            method,
            params: params.unwrap_or_default(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(line: &str) -> Malformed {
        parse(line.as_bytes()).unwrap_err()
    }

    #[test]
    fn requests_notifications_and_responses() {
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap(),
            Incoming::Request {
                id: json!(1),
                method: "ping".into(),
                params: Map::new()
            }
        );
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap(),
            Incoming::Notification { .. }
        ));
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap(),
            Incoming::Response
        );
    }

    #[test]
    fn malformed_messages() {
        let e = err("not json");
        assert_eq!((e.id, e.error.code), (Value::Null, PARSE_ERROR));
        let e = err(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
        assert_eq!((e.id, e.error.code), (Value::Null, INVALID_REQUEST));
        let e = err(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#);
        assert_eq!((e.id, e.error.code), (Value::Null, INVALID_REQUEST));
        let e = err(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#);
        assert_eq!((e.id, e.error.code), (json!(7), INVALID_REQUEST));
        let e = err(r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":[1]}"#);
        assert_eq!((e.id, e.error.code), (json!(7), INVALID_PARAMS));
        let e = err(r#"{"jsonrpc":"2.0","id":7}"#);
        assert_eq!((e.id, e.error.code), (json!(7), INVALID_REQUEST));
        let e = err(r#"{"jsonrpc":"2.0","method":5}"#);
        assert!(!e.answer);
    }

    #[test]
    fn error_response_shape() {
        let mut e = RpcError::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version");
        e.data = Some(json!({"supported": ["2026-07-28"], "requested": "x"}));
        assert_eq!(
            e.response(&json!(3)),
            json!({"jsonrpc":"2.0","id":3,"error":{"code":-32022,
                "message":"Unsupported protocol version",
                "data":{"supported":["2026-07-28"],"requested":"x"}}})
        );
    }
}
