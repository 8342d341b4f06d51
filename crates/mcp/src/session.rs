//! The MCP server's protocol logic, free of I/O: one incoming message in, at most one outgoing
//! message (or a `plugin_tool` call to run) out.
//!
//! A message selects its era by its shape. `initialize` selects the handshake era (scoped to the
//! stdio process); a request whose params carry `_meta["io.modelcontextprotocol/protocolVersion"]`
//! is served statelessly (2026-07-28); any other request belongs to the handshake era. Both eras
//! may be used on the same stream.
//!
//! A transport feeds each message to [`McpSession::handle`] and acts on the [`Step`]: send a
//! reply, run a [`ToolCall`] (concurrently) and send its response, forget the response of a
//! cancelled request, or do nothing.

use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use super::jsonrpc::{
    self, result_response, Incoming, RequestId, Response, RpcError, INVALID_PARAMS,
    INVALID_REQUEST, METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION,
};
use super::manifest;
use super::result::call_tool_outcome;
use super::version::{self, SUPPORTED_VERSIONS};
use webcodex_plugin_host::ToolOutput;
use webcodex_plugin_host::TOOL_NAME;
use webcodex_plugin_host::{TraceContext, TRACEPARENT};

/// The `_meta` key of a stateless request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of a stateless request's client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of the server's identity in a stateless result.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The server name in `serverInfo`.
pub const SERVER_NAME: &str = "webcodex-plugin";
/// How long a stateless client may cache `server/discover` and `tools/list` (one hour): the
/// manifest is static for the life of the binary.
pub const CACHE_TTL_MS: u64 = 3_600_000;
/// What `initialize` and `server/discover` tell the model about this server.
pub const INSTRUCTIONS: &str = "This server exposes one tool, plugin_tool, in front of locally \
installed plugins. Call it with action list to find a plugin and tool, describe to get the \
tool's input schema and a binding, then call with that binding and the arguments. Follow the \
recovery field of a failure; never repeat a call whose dispatch is outcome_unknown.";

/// Which transport a session serves; it decides whether the handshake is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// One stdio stream: handshake-era requests need `initialize` first.
    Stdio,
    /// One HTTP POST per message, no session: every message is handled on its own.
    Http,
}

/// A message to send, with the HTTP status it gets on Streamable HTTP.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The JSON-RPC response (its id exactly as the request's).
    pub message: Response,
    /// The HTTP status for `POST /mcp` (stdio ignores it).
    pub http_status: u16,
}

impl Reply {
    fn ok(id: &RequestId, result: Value) -> Reply {
        Reply {
            message: result_response(id, result),
            http_status: 200,
        }
    }

    pub(crate) fn error(id: &RequestId, error: RpcError, http_status: u16) -> Reply {
        Reply {
            message: error.response(id),
            http_status,
        }
    }
}

/// What a transport does with one incoming message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Step {
    /// Send this reply now.
    Reply(Reply),
    /// Run `plugin_tool` with the call's params, then send [`ToolCall::respond`].
    Call(ToolCall),
    /// The client cancelled this request: do not send its response (the call runs on).
    Cancel(RequestId),
    /// Send nothing (a notification, or a client's response).
    Nothing,
}

/// A `tools/call` of `plugin_tool`, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    id: RequestId,
    arguments: Value,
    stateless: bool,
    /// A valid `params._meta.traceparent`: the request's trace context (never passed on to
    /// the plugin; only `arguments` are).
    trace: Option<TraceContext>,
}

impl ToolCall {
    /// The request id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The same request without its arguments: enough to answer it with a failure (a
    /// failure result never depends on the arguments).
    pub fn without_arguments(&self) -> ToolCall {
        ToolCall {
            id: self.id.clone(),
            arguments: Value::Null,
            stateless: self.stateless,
            trace: self.trace,
        }
    }

    /// The caller's trace context (`params._meta.traceparent`), when given and valid.
    pub fn trace(&self) -> Option<TraceContext> {
        self.trace
    }

    /// The `plugin_tool` params (the call's `arguments`).
    pub fn params(&self) -> &Value {
        &self.arguments
    }

    /// The response carrying the `CallToolResult` of `output`.
    pub fn respond(&self, output: ToolOutput) -> Reply {
        let outcome = call_tool_outcome(&self.arguments, output, self.stateless);
        Reply {
            message: jsonrpc::response_of(&self.id, outcome),
            http_status: 200,
        }
    }
}

/// The protocol state of one MCP connection (stdio) or one HTTP message.
#[derive(Debug)]
pub struct McpSession {
    transport: Transport,
    initialized: bool,
    /// The version the last `initialize` answered.
    negotiated: Option<&'static str>,
}

impl McpSession {
    /// A fresh session on `transport`.
    pub fn new(transport: Transport) -> McpSession {
        McpSession {
            transport,
            initialized: false,
            negotiated: None,
        }
    }

    /// True once `initialize` was answered.
    pub fn initialized(&self) -> bool {
        self.initialized
    }

    /// The protocol version the last `initialize` answered, if any.
    pub fn negotiated(&self) -> Option<&'static str> {
        self.negotiated
    }

    /// True when a batch (a JSON array) is served on this stream: only once `initialize`
    /// negotiated 2025-03-26, the one revision that requires batches.
    pub fn serves_batches(&self) -> bool {
        self.negotiated.is_some_and(version::serves_batches)
    }

    /// The step for a raw message (one line or body; a batch is -32600 here).
    pub fn handle_bytes(&mut self, bytes: &[u8]) -> Step {
        self.handle_parsed(jsonrpc::parse(bytes))
    }

    /// The step for a message as [`jsonrpc::parse`] read it.
    pub fn handle_parsed(&mut self, parsed: Result<Incoming, jsonrpc::Malformed>) -> Step {
        match parsed {
            Ok(incoming) => self.handle(incoming),
            Err(malformed) if malformed.answer => {
                Step::Reply(Reply::error(&malformed.id, malformed.error, 400))
            }
            Err(_) => Step::Nothing,
        }
    }

    /// The reply to a line longer than the 1 MiB bound (it was skipped).
    pub fn oversized() -> Reply {
        Reply::error(
            &RequestId::null(),
            RpcError::new(
                INVALID_REQUEST,
                "the message is longer than 1 MiB; it was skipped",
            ),
            413,
        )
    }

    /// The step for one parsed message.
    pub fn handle(&mut self, incoming: Incoming) -> Step {
        match incoming {
            Incoming::Response => Step::Nothing,
            Incoming::Notification {
                method, request_id, ..
            } => notification(&method, request_id),
            Incoming::Request { id, method, params } => match self.request(&id, &method, params) {
                Ok(step) => step,
                Err((error, status)) => Step::Reply(Reply::error(&id, error, status)),
            },
        }
    }

    fn request(
        &mut self,
        id: &RequestId,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Step, (RpcError, u16)> {
        let meta = params.get("_meta").and_then(Value::as_object);
        let requested = meta.and_then(|m| m.get(META_PROTOCOL_VERSION));
        let stateless_era = requested
            .and_then(Value::as_str)
            .is_some_and(version::is_stateless);
        if stateless_era && version::removed_in_stateless(method) {
            return Err(method_not_found(404));
        }
        if method == "initialize" {
            return Ok(Step::Reply(self.initialize(id, &params)));
        }
        if let Some(requested) = requested {
            check_stateless_meta(requested, meta)?;
            return stateless(id, method, params);
        }
        if method == "server/discover" {
            return Err(missing_meta());
        }
        if self.transport == Transport::Stdio && !self.initialized && method != "ping" {
            return Err((
                RpcError::new(
                    INVALID_REQUEST,
                    "the session is not initialized: send initialize first \
                     (or use per-request _meta of protocol version 2026-07-28)",
                ),
                400,
            ));
        }
        match method {
            "ping" => Ok(Step::Reply(Reply::ok(id, json!({})))),
            "tools/list" => Ok(Step::Reply(Reply::ok(id, json!({"tools": [tool_spec()]})))),
            "tools/call" => tool_call(id, params, false),
            _ => Err(method_not_found(200)),
        }
    }

    fn initialize(&mut self, id: &RequestId, params: &Map<String, Value>) -> Reply {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let negotiated = version::negotiate_handshake(requested);
        self.initialized = true;
        self.negotiated = Some(negotiated);
        Reply::ok(
            id,
            json!({
                "protocolVersion": negotiated,
                "capabilities": capabilities(),
                "serverInfo": server_info(),
                "instructions": INSTRUCTIONS,
            }),
        )
    }
}

fn notification(method: &str, request_id: Option<RequestId>) -> Step {
    match request_id {
        Some(id) if method == "notifications/cancelled" && id.is_string_or_number() => {
            Step::Cancel(id)
        }
        _ => Step::Nothing,
    }
}

/// Validates the per-request `_meta` of a stateless request.
fn check_stateless_meta(
    requested: &Value,
    meta: Option<&Map<String, Value>>,
) -> Result<(), (RpcError, u16)> {
    let Some(requested) = requested.as_str() else {
        return Err(missing_meta());
    };
    if !version::is_stateless(requested) {
        let mut error = RpcError::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version");
        error.data = Some(json!({"supported": SUPPORTED_VERSIONS, "requested": requested}));
        return Err((error, 400));
    }
    if !meta.is_some_and(|m| {
        m.get(META_CLIENT_CAPABILITIES)
            .is_some_and(Value::is_object)
    }) {
        return Err(missing_meta());
    }
    Ok(())
}

fn missing_meta() -> (RpcError, u16) {
    (
        RpcError::new(
            INVALID_PARAMS,
            "a stateless request needs _meta with io.modelcontextprotocol/protocolVersion \
             and io.modelcontextprotocol/clientCapabilities",
        ),
        400,
    )
}

fn method_not_found(http_status: u16) -> (RpcError, u16) {
    (
        RpcError::new(METHOD_NOT_FOUND, "method not found"),
        http_status,
    )
}

/// A request of the stateless era (its `_meta` is valid).
fn stateless(
    id: &RequestId,
    method: &str,
    params: Map<String, Value>,
) -> Result<Step, (RpcError, u16)> {
    let cacheable = |mut result: Value| {
        result["resultType"] = "complete".into();
        result["ttlMs"] = CACHE_TTL_MS.into();
        result["cacheScope"] = "public".into();
        result["_meta"] = json!({ META_SERVER_INFO: server_info() });
        result
    };
    match method {
        "server/discover" => Ok(Step::Reply(Reply::ok(
            id,
            cacheable(json!({
                "supportedVersions": SUPPORTED_VERSIONS,
                "capabilities": capabilities(),
                "serverInfo": server_info(),
                "instructions": INSTRUCTIONS,
            })),
        ))),
        "tools/list" => Ok(Step::Reply(Reply::ok(
            id,
            cacheable(json!({"tools": [tool_spec()]})),
        ))),
        "tools/call" => tool_call(id, params, true),
        _ => Err(method_not_found(404)),
    }
}

fn tool_call(
    id: &RequestId,
    mut params: Map<String, Value>,
    stateless: bool,
) -> Result<Step, (RpcError, u16)> {
    match params.get("name") {
        Some(Value::String(name)) if name == TOOL_NAME => {}
        Some(Value::String(_)) => {
            return Err((
                RpcError::new(
                    INVALID_PARAMS,
                    "unknown tool; this server has only plugin_tool",
                ),
                200,
            ))
        }
        _ => {
            return Err((
                RpcError::new(INVALID_PARAMS, "tools/call needs a tool `name`"),
                200,
            ))
        }
    }
    let arguments = match params.remove("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(arguments @ Value::Object(_)) => arguments,
        Some(_) => {
            return Err((
                RpcError::new(INVALID_PARAMS, "tools/call `arguments` must be an object"),
                200,
            ))
        }
    };
    let trace = params
        .get("_meta")
        .and_then(|meta| meta.get(TRACEPARENT))
        .and_then(Value::as_str)
        .and_then(TraceContext::parse);
    Ok(Step::Call(ToolCall {
        id: id.clone(),
        arguments,
        stateless,
        trace,
    }))
}

/// The server capabilities of both eras.
pub fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

/// `{name, version}` of this server.
pub fn server_info() -> Value {
    json!({"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")})
}

/// The manifest's ToolSpec, built once.
fn tool_spec() -> Value {
    static SPEC: OnceLock<Value> = OnceLock::new();
    SPEC.get_or_init(manifest::tool_spec).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> Value {
        json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}})
    }

    /// A reply with its message as a Value (the tests' ids are plain).
    struct Seen {
        message: Value,
        http_status: u16,
    }

    fn seen(reply: Reply) -> Seen {
        Seen {
            message: reply.message.to_value(),
            http_status: reply.http_status,
        }
    }

    fn reply(session: &mut McpSession, message: Value) -> Seen {
        match session.handle_bytes(message.to_string().as_bytes()) {
            Step::Reply(reply) => seen(reply),
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    fn error_code(reply: &Seen) -> i64 {
        reply.message["error"]["code"].as_i64().unwrap()
    }

    #[test]
    fn stdio_handshake_is_required_except_for_ping() {
        let mut s = McpSession::new(Transport::Stdio);
        let r = reply(
            &mut s,
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        );
        assert_eq!(error_code(&r), INVALID_REQUEST);
        assert_eq!(r.message["id"], 1);
        let r = reply(&mut s, json!({"jsonrpc":"2.0","id":2,"method":"ping"}));
        assert_eq!(r.message["result"], json!({}));
        let r = reply(
            &mut s,
            json!({"jsonrpc":"2.0","id":3,"method":"initialize","params":{
                "protocolVersion":"2025-06-18","capabilities":{},
                "clientInfo":{"name":"t","version":"1"}}}),
        );
        assert_eq!(r.message["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(
            r.message["result"]["capabilities"],
            json!({"tools":{"listChanged":false}})
        );
        assert_eq!(r.message["result"]["serverInfo"]["name"], SERVER_NAME);
        assert!(r.message["result"]["instructions"].is_string());
        assert_eq!(
            s.handle_bytes(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Step::Nothing
        );
        let r = reply(
            &mut s,
            json!({"jsonrpc":"2.0","id":4,"method":"tools/list"}),
        );
        assert_eq!(
            r.message["result"],
            json!({"tools":[manifest::tool_spec()]})
        );
        let r = reply(
            &mut s,
            json!({"jsonrpc":"2.0","id":5,"method":"resources/list"}),
        );
        assert_eq!(error_code(&r), METHOD_NOT_FOUND);
    }

    #[test]
    fn http_needs_no_handshake() {
        let mut s = McpSession::new(Transport::Http);
        let r = reply(
            &mut s,
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        );
        assert_eq!(r.message["result"]["tools"][0]["name"], "plugin_tool");
    }

    #[test]
    fn stateless_discover_and_list_are_cacheable() {
        let mut s = McpSession::new(Transport::Stdio);
        let r = reply(
            &mut s,
            json!({"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta":meta()}}),
        );
        let result = &r.message["result"];
        assert_eq!(result["resultType"], "complete");
        assert_eq!(result["supportedVersions"][0], "2026-07-28");
        assert_eq!(result["ttlMs"], CACHE_TTL_MS);
        assert_eq!(result["cacheScope"], "public");
        assert_eq!(result["serverInfo"]["name"], SERVER_NAME);
        assert_eq!(result["_meta"][META_SERVER_INFO]["name"], SERVER_NAME);
        let r = reply(
            &mut s,
            json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":meta()}}),
        );
        assert_eq!(r.message["result"]["tools"], json!([manifest::tool_spec()]));
        assert_eq!(r.message["result"]["resultType"], "complete");
        assert!(r.message["result"]["ttlMs"].is_u64());
        assert!(!s.initialized());
    }

    #[test]
    fn stateless_version_and_meta_errors() {
        let mut s = McpSession::new(Transport::Stdio);
        let r = reply(
            &mut s,
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{
                META_PROTOCOL_VERSION: "2099-01-01", META_CLIENT_CAPABILITIES: {}}}}),
        );
        assert_eq!(error_code(&r), UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(r.message["error"]["data"]["requested"], "2099-01-01");
        assert_eq!(
            r.message["error"]["data"]["supported"],
            json!(SUPPORTED_VERSIONS)
        );
        let r = reply(
            &mut s,
            json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{
                META_PROTOCOL_VERSION: "2026-07-28"}}}),
        );
        assert_eq!(error_code(&r), INVALID_PARAMS);
        let r = reply(
            &mut s,
            json!({"jsonrpc":"2.0","id":3,"method":"server/discover"}),
        );
        assert_eq!(error_code(&r), INVALID_PARAMS);
        let r = reply(
            &mut s,
            json!({"jsonrpc":"2.0","id":4,"method":"nope","params":{"_meta":meta()}}),
        );
        assert_eq!(error_code(&r), METHOD_NOT_FOUND);
        assert_eq!(r.http_status, 404);
    }

    #[test]
    fn methods_the_stateless_revision_removed_are_unknown_in_its_era() {
        let mut s = McpSession::new(Transport::Stdio);
        for method in version::REMOVED_IN_STATELESS {
            let r = reply(
                &mut s,
                json!({"jsonrpc":"2.0","id":1,"method":method,"params":{"_meta":meta()}}),
            );
            assert_eq!(error_code(&r), METHOD_NOT_FOUND, "{method}");
            assert_eq!(r.http_status, 404, "{method}");
        }
        assert!(
            !s.initialized(),
            "a stateless initialize negotiates nothing"
        );
        // The handshake era keeps initialize and ping.
        let r = reply(&mut s, json!({"jsonrpc":"2.0","id":2,"method":"ping"}));
        assert_eq!(r.message["result"], json!({}));
    }

    #[test]
    fn tools_call_steps() {
        let mut s = McpSession::new(Transport::Http);
        let step = s.handle_bytes(
            json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{
                "name":"plugin_tool","arguments":{"action":"list"},"_meta":meta()}})
            .to_string()
            .as_bytes(),
        );
        let Step::Call(call) = step else {
            panic!("{step:?}")
        };
        assert_eq!(call.params(), &json!({"action":"list"}));
        let r = seen(call.respond(ToolOutput::received(true, json!({"runners":[]}))));
        assert_eq!(r.message["id"], 9);
        assert_eq!(r.message["result"]["resultType"], "complete");
        assert_eq!(r.message["result"]["isError"], false);
        let r = seen(call.respond(webcodex_plugin_host::saturated_output()));
        assert_eq!(
            r.message["result"]["structuredContent"]["error"]["code"],
            "gateway_saturated"
        );
        assert_eq!(r.message["result"]["isError"], true);

        let r = reply(
            &mut s,
            json!({"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"other"}}),
        );
        assert_eq!(error_code(&r), INVALID_PARAMS);
        let step = s.handle_bytes(
            br#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"plugin_tool"}}"#,
        );
        let Step::Call(call) = step else {
            panic!("{step:?}")
        };
        assert_eq!(call.params(), &json!({}));
        assert!(call
            .respond(ToolOutput::failure(
                &webcodex_plugin_host::Error::not_started(
                    webcodex_plugin_host::ErrorCode::InvalidArguments,
                    "x"
                )
            ))
            .message
            .to_value()["result"]
            .get("resultType")
            .is_none());
    }

    #[test]
    fn cancellation_and_other_notifications() {
        let mut s = McpSession::new(Transport::Stdio);
        assert_eq!(
            s.handle_bytes(
                br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1"}}"#
            ),
            Step::Cancel(RequestId::from_value(&json!("r1")))
        );
        assert_eq!(
            s.handle_bytes(br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#),
            Step::Nothing
        );
        assert_eq!(
            s.handle_bytes(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Step::Nothing
        );
    }

    #[test]
    fn batches_and_oversized_lines_are_invalid_requests() {
        let mut s = McpSession::new(Transport::Stdio);
        let r = reply(&mut s, json!([{"jsonrpc":"2.0","id":1,"method":"ping"}]));
        assert_eq!(error_code(&r), INVALID_REQUEST);
        assert_eq!(r.message["id"], Value::Null);
        let r = seen(McpSession::oversized());
        assert_eq!(error_code(&r), INVALID_REQUEST);
        assert_eq!(r.message["id"], Value::Null);
    }
}
