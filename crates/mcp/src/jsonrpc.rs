//! JSON-RPC 2.0 messages as MCP uses them: typed incoming messages, error objects and
//! responses whose ids are the requests' own bytes.
//!
//! One message per line (stdio) or per body (HTTP). A batch (a JSON array) is recognised by
//! [`parse_body`]; whether it is served depends on the protocol version (2025-03-26 only), which
//! the transport decides. Ids are kept as raw JSON text ([`RequestId`]), so an id such as
//! `18446744073709551616` or `1e2` comes back exactly as sent.

use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

pub use webcodex_plugin_host::RequestId;
use webcodex_plugin_host::{first_json_byte, parse_json_object, Present};

/// The text is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// Not a valid request object (also: a batch where batches are not served, an empty batch, a
/// request before `initialize`, an over-long line).
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
    pub fn response(&self, id: &RequestId) -> Response {
        Response {
            id: id.clone(),
            outcome: Outcome::Error(self.clone()),
        }
    }
}

/// One JSON-RPC response: the request's id exactly as it was written, and a result or an error.
/// Serialize it with serde_json (`to_string`, `to_vec`) to keep the id's bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The request's id (`null` when it could not be read).
    pub id: RequestId,
    /// The result or the error.
    pub outcome: Outcome,
}

/// What a [`Response`] carries.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// `result`.
    Result(Value),
    /// `result`, already written as JSON text (sent as it is).
    RawResult(RawJson),
    /// `error`.
    Error(RpcError),
}

/// A JSON value kept as its text (written out as it is, compared as text).
#[derive(Debug, Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// The JSON text of `value`, serialized once.
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<RawJson, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(RawJson)
    }

    /// JSON text already checked (a [`RawValue`]).
    pub fn from_raw(raw: Box<RawValue>) -> RawJson {
        RawJson(raw)
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The JSON text as a [`RawValue`] (to write inside another value).
    pub fn as_raw(&self) -> &RawValue {
        &self.0
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &RawJson) -> bool {
        self.get() == other.get()
    }
}

impl Response {
    /// The response as a [`Value`] (for tests and checks: a numeric id may lose its spelling).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("jsonrpc", "2.0")?;
        map.serialize_entry("id", &self.id)?;
        match &self.outcome {
            Outcome::Result(result) => map.serialize_entry("result", result)?,
            Outcome::RawResult(raw) => map.serialize_entry("result", &raw.0)?,
            Outcome::Error(error) => map.serialize_entry("error", &error.to_json())?,
        }
        map.end()
    }
}

/// What one line or body answers: one response, or the responses to a batch as one array.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    /// One response.
    One(Response),
    /// The responses to the requests of a batch (never empty).
    Batch(Vec<Response>),
}

impl Outgoing {
    /// The message as a [`Value`] (for tests and checks: a numeric id may lose its spelling).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Serialize for Outgoing {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Outgoing::One(response) => response.serialize(serializer),
            Outgoing::Batch(responses) => responses.serialize(serializer),
        }
    }
}

/// A result response for request `id`.
pub fn result_response(id: &RequestId, result: Value) -> Response {
    response_of(id, Outcome::Result(result))
}

/// A response for request `id` with `outcome`.
pub fn response_of(id: &RequestId, outcome: Outcome) -> Response {
    Response {
        id: id.clone(),
        outcome,
    }
}

/// One well-formed incoming message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Incoming {
    /// A request: it gets exactly one response.
    Request {
        /// A string or a number, echoed byte for byte in the response.
        id: RequestId,
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
        /// `params.requestId` as written (for `notifications/cancelled`), when present.
        request_id: Option<RequestId>,
    },
    /// A response from the client (this server sends no requests, so it is ignored).
    Response,
}

/// A message that is not well formed: the error to answer, with the id when it could be read.
/// `answer` is false for a malformed notification, which gets no response.
#[derive(Debug, Clone, PartialEq)]
pub struct Malformed {
    /// The request id, or `null`.
    pub id: RequestId,
    /// The error to answer.
    pub error: RpcError,
    /// False when the message was a notification (no response is sent).
    pub answer: bool,
}

impl Malformed {
    fn new(id: RequestId, code: i64, message: &str) -> Malformed {
        Malformed {
            id,
            error: RpcError::new(code, message),
            answer: true,
        }
    }
}

/// A line or body: one message, or a batch (a JSON array) of raw members.
#[derive(Debug)]
#[non_exhaustive]
pub enum Body {
    /// One message (or why it is not one).
    Single(Result<Incoming, Malformed>),
    /// A JSON array: its members, each to be [`parse`]d (possibly none).
    Batch(Vec<Box<RawValue>>),
}

/// Parses a line or body that may be a batch.
pub fn parse_body(bytes: &[u8]) -> Body {
    if first_json_byte(bytes) == Some(b'[') {
        if let Ok(members) = serde_json::from_slice::<Vec<Box<RawValue>>>(bytes) {
            return Body::Batch(members);
        }
    }
    Body::Single(parse(bytes))
}

/// The members of a message object this parser reads (others are skipped unread).
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    jsonrpc: Present<Value>,
    #[serde(default)]
    id: Present<RequestId>,
    #[serde(default)]
    method: Present<Value>,
    #[serde(default)]
    params: Present<Params>,
    #[serde(default)]
    result: Present<IgnoredAny>,
    #[serde(default)]
    error: Present<IgnoredAny>,
}

/// `params`: an object (with its `requestId` kept as written), or anything else.
enum Params {
    Object {
        fields: Map<String, Value>,
        request_id: Option<RequestId>,
    },
    NotObject,
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Params, D::Error> {
        deserializer.deserialize_any(ParamsVisitor)
    }
}

struct ParamsVisitor;

impl<'de> Visitor<'de> for ParamsVisitor {
    type Value = Params;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
        let mut fields = Map::new();
        let mut request_id = None;
        while let Some(key) = map.next_key::<String>()? {
            let value = if key == "requestId" {
                let raw: RequestId = map.next_value()?;
                let value = raw.to_value();
                request_id = Some(raw);
                value
            } else {
                map.next_value::<Value>()?
            };
            fields.insert(key, value);
        }
        Ok(Params::Object { fields, request_id })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Params, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Params::NotObject)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Params, E> {
        Ok(Params::NotObject)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Params, E> {
        Ok(Params::NotObject)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Params, E> {
        Ok(Params::NotObject)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Params, E> {
        Ok(Params::NotObject)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Params, E> {
        Ok(Params::NotObject)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Params, E> {
        Ok(Params::NotObject)
    }
}

/// Parses one message (a JSON array is not one: -32600).
pub fn parse(bytes: &[u8]) -> Result<Incoming, Malformed> {
    let null = RequestId::null;
    match first_json_byte(bytes) {
        Some(b'{') => {}
        first => {
            if serde_json::from_slice::<IgnoredAny>(bytes).is_err() {
                return Err(Malformed::new(
                    null(),
                    PARSE_ERROR,
                    "the message is not valid JSON",
                ));
            }
            let message = if first == Some(b'[') {
                "batches are served only under protocol version 2025-03-26; send one \
                 JSON-RPC message per line or body"
            } else {
                "a JSON-RPC message must be an object"
            };
            return Err(Malformed::new(null(), INVALID_REQUEST, message));
        }
    }
    let envelope: Envelope = parse_json_object(bytes)
        .map_err(|_| Malformed::new(null(), PARSE_ERROR, "the message is not valid JSON"))?;
    let id = match envelope.id.0 {
        None => None,
        Some(id) if id.is_string_or_number() => Some(id),
        Some(_) => {
            return Err(Malformed::new(
                null(),
                INVALID_REQUEST,
                "the id must be a string or a number",
            ))
        }
    };
    let reply_id = id.clone().unwrap_or_else(null);
    if envelope.jsonrpc.0.as_ref().and_then(Value::as_str) != Some("2.0") {
        let mut malformed = Malformed::new(reply_id, INVALID_REQUEST, "`jsonrpc` must be \"2.0\"");
        malformed.answer = id.is_some() || envelope.method.0.is_none();
        return Err(malformed);
    }
    let method = match envelope.method.0 {
        Some(Value::String(method)) => method,
        Some(_) => {
            let mut malformed =
                Malformed::new(reply_id, INVALID_REQUEST, "`method` must be a string");
            malformed.answer = id.is_some();
            return Err(malformed);
        }
        None => {
            if id.is_some() && (envelope.result.0.is_some() || envelope.error.0.is_some()) {
                return Ok(Incoming::Response);
            }
            return Err(Malformed::new(
                reply_id,
                INVALID_REQUEST,
                "the message has no `method`",
            ));
        }
    };
    let params = match envelope.params.0 {
        None => Ok((Map::new(), None)),
        Some(Params::Object { fields, request_id }) => Ok((fields, request_id)),
        Some(Params::NotObject) => Err(()),
    };
    match (id, params) {
        (Some(id), Ok((params, _))) => Ok(Incoming::Request { id, method, params }),
        (Some(id), Err(())) => Err(Malformed::new(
            id,
            INVALID_PARAMS,
            "`params` must be an object",
        )),
        (None, params) => {
            let (params, request_id) = params.unwrap_or_default();
            Ok(Incoming::Notification {
                method,
                params,
                request_id,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(line: &str) -> Malformed {
        parse(line.as_bytes()).unwrap_err()
    }

    fn id(value: Value) -> RequestId {
        RequestId::from_value(&value)
    }

    #[test]
    fn requests_notifications_and_responses() {
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap(),
            Incoming::Request {
                id: RequestId::from_value(&json!(1)),
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
        assert_eq!((e.id, e.error.code), (RequestId::null(), PARSE_ERROR));
        let e = err(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
        assert_eq!((e.id, e.error.code), (RequestId::null(), INVALID_REQUEST));
        let e = err(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#);
        assert_eq!((e.id, e.error.code), (RequestId::null(), INVALID_REQUEST));
        let e = err(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#);
        assert_eq!((e.id, e.error.code), (id(json!(7)), INVALID_REQUEST));
        let e = err(r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":[1]}"#);
        assert_eq!((e.id, e.error.code), (id(json!(7)), INVALID_PARAMS));
        let e = err(r#"{"jsonrpc":"2.0","id":7}"#);
        assert_eq!((e.id, e.error.code), (id(json!(7)), INVALID_REQUEST));
        let e = err(r#"{"jsonrpc":"2.0","method":5}"#);
        assert!(!e.answer);
        let e = err(r#"["2.0", 1, "ping"]"#);
        assert_eq!(e.error.code, INVALID_REQUEST);
        let e = err(r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#);
        assert_eq!((e.id, e.error.code), (RequestId::null(), INVALID_REQUEST));
        let e = err(r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":null}"#);
        assert_eq!(e.error.code, INVALID_PARAMS);
    }

    #[test]
    fn ids_and_request_ids_keep_their_bytes() {
        for raw in ["18446744073709551616", "1e2", "-0", "1.50", r#""a\u0062""#] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"ping"}}"#);
            let Ok(Incoming::Request { id, .. }) = parse(line.as_bytes()) else {
                panic!("{line}")
            };
            let response = result_response(&id, json!({}));
            assert_eq!(
                serde_json::to_string(&response).unwrap(),
                format!(r#"{{"jsonrpc":"2.0","id":{raw},"result":{{}}}}"#)
            );
            let line = format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{raw},"reason":"x"}}}}"#
            );
            let Ok(Incoming::Notification {
                request_id, params, ..
            }) = parse(line.as_bytes())
            else {
                panic!("{line}")
            };
            assert_eq!(request_id.unwrap(), id);
            assert_eq!(params["reason"], "x");
        }
    }

    #[test]
    fn batches_are_recognised() {
        let Body::Batch(members) = parse_body(br#" [{"jsonrpc":"2.0","id":1,"method":"ping"}, 5]"#)
        else {
            panic!("a batch")
        };
        assert_eq!(members.len(), 2);
        assert!(matches!(parse_body(b"[]"), Body::Batch(m) if m.is_empty()));
        assert!(matches!(parse_body(b"[1,"), Body::Single(Err(e)) if e.error.code == PARSE_ERROR));
        assert!(matches!(
            parse_body(br#"{"jsonrpc":"2.0","method":"x"}"#),
            Body::Single(Ok(_))
        ));
    }

    #[test]
    fn error_response_shape() {
        let mut e = RpcError::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version");
        e.data = Some(json!({"supported": ["2026-07-28"], "requested": "x"}));
        assert_eq!(
            e.response(&id(json!(3))).to_value(),
            json!({"jsonrpc":"2.0","id":3,"error":{"code":-32022,
                "message":"Unsupported protocol version",
                "data":{"supported":["2026-07-28"],"requested":"x"}}})
        );
    }
}
