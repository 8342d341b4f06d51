//! The HTTP server's routes: routing, authentication, admission, bodies and responses.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use parking_lot::RwLock;
use serde::Serialize;
use serde_json::{json, Value};

use super::bodies::{
    failure_body, json_bytes, saturated_body, transport_failure, transport_failure_body,
};
use super::cors::{check_allowed_origin, OriginVerdict};
use super::inspector::{self, InspectorRoute, WHOAMI_PATH};
use super::link::{self, front::LinkRegistry, RUNNERS_CONNECT_PATH};
use super::listener::{Exchange, Handler, Listener};
use super::tokens::{bearer, Tokens};
use super::wire::BodyError;
use super::{MAX_BODY_BYTES, RUNNER_INSTANCE_HEADER, TOOLS_CALL_PATH};
use webcodex_plugin_host::RequestId;
use webcodex_plugin_host::{invalid_request_output, Dispatcher};
use webcodex_plugin_host::{parse_request, Framing, TypedResponseBody};
use webcodex_plugin_host::{Caller, Gateway, Scopes, ToolOutput};
use webcodex_plugin_host::{Dispatch, ErrorCode};
use webcodex_plugin_host::{TraceContext, TRACEPARENT};
use webcodex_plugin_mcp::headers::RoutingHeaders;
use webcodex_plugin_mcp::http::{self as mcp_http, MCP_PATH};

/// The code of the failure object answered with 401.
pub const UNAUTHORIZED: &str = "unauthorized";
/// The code of the 401 that a runner token gets on a user route (it only connects a link).
pub const RUNNER_TOKEN_NOT_ACCEPTED: &str = "runner_token_not_accepted";

/// An HTTP server bound to an address, serving `plugin_tool` until stopped.
pub struct HttpServer {
    listener: Arc<Listener>,
    routes: Arc<Routes>,
}

/// What answers requests: the gateway behind its in-flight bound, the tokens, the origins.
struct Routes {
    dispatcher: Dispatcher,
    tokens: Arc<RwLock<Tokens>>,
    allowed_origins: Vec<String>,
    links: Arc<LinkRegistry>,
}

/// Replaces the tokens of a running [`HttpServer`] (e.g. on SIGHUP): requests authenticated
/// after [`TokensSwap::replace`] returns see only the new tokens; a request already
/// authenticated keeps running. A runner link whose token no longer authenticates as its
/// runner id is closed at once (1008), its runner leaves `list`.
#[derive(Clone)]
pub struct TokensSwap(Arc<RwLock<Tokens>>, Arc<LinkRegistry>);

impl TokensSwap {
    /// Puts `tokens` in place of the current ones and closes the runner links whose token
    /// they no longer hold for that runner; returns those runners' ids.
    pub fn replace(&self, tokens: Tokens) -> Vec<String> {
        *self.0.write() = tokens;
        self.1.revoke()
    }
}

impl std::fmt::Debug for TokensSwap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokensSwap")
    }
}

/// Stops an [`HttpServer`] from another thread (or a signal watcher).
#[derive(Clone)]
pub struct HttpStopper(Arc<Listener>, Arc<LinkRegistry>);

impl HttpStopper {
    /// Stops accepting connections and closes idle ones; the runner links are drained:
    /// nothing new is sent on them, and each is closed (1001) once the answers owed on it came
    /// or their deadlines passed. [`HttpServer::run`] returns once the requests being handled
    /// are answered and every link is closed.
    pub fn stop(&self) {
        self.0.stop();
        self.1.drain();
    }
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("local_addr", &self.listener.local_addr())
            .finish_non_exhaustive()
    }
}

/// The routes of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// `POST /api/tools/call`: the JSON envelope of the stdio gateway.
    ToolsCall,
    /// `POST /mcp`: MCP Streamable HTTP (stateless, JSON responses).
    Mcp,
}

impl HttpServer {
    /// Binds `addr` (e.g. `127.0.0.1:8787`; port 0 picks a free port) and serves `gateway` to
    /// holders of `tokens`. Nothing is served before [`HttpServer::run`].
    pub fn bind(
        addr: impl ToSocketAddrs,
        gateway: Arc<Gateway>,
        tokens: Tokens,
    ) -> io::Result<HttpServer> {
        HttpServer::bind_with_origins(addr, gateway, tokens, Vec::new())
    }

    /// [`HttpServer::bind`], allowing these browser origins (e.g. `http://localhost:3000`,
    /// compared exactly, ASCII case-insensitively) besides the server's own origin on a
    /// loopback host. A `/mcp` request whose `Origin` header is present and not allowed gets
    /// 403 (DNS-rebinding protection); a request without `Origin` (not from a browser) is not
    /// affected. A page on an allowed origin may call `/mcp` and `/api/tools/call` (CORS: the
    /// preflight and the answers carry the `Access-Control-*` headers). An origin that
    /// [`check_allowed_origin`] refuses (e.g. `*`) is an `InvalidInput` error.
    pub fn bind_with_origins(
        addr: impl ToSocketAddrs,
        gateway: Arc<Gateway>,
        tokens: Tokens,
        allowed_origins: Vec<String>,
    ) -> io::Result<HttpServer> {
        for origin in &allowed_origins {
            check_allowed_origin(origin)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        }
        Ok(HttpServer {
            listener: Arc::new(Listener::bind(addr)?),
            routes: Routes::new(gateway, tokens, allowed_origins),
        })
    }

    /// [`HttpServer::bind_with_origins`] on a listening socket a service manager passed
    /// (socket activation). Stopping leaves the socket open for the manager's next start.
    pub fn from_inherited(
        socket: std::net::TcpListener,
        gateway: Arc<Gateway>,
        tokens: Tokens,
        allowed_origins: Vec<String>,
    ) -> io::Result<HttpServer> {
        Ok(HttpServer {
            listener: Arc::new(Listener::inherited(socket)?),
            routes: Routes::new(gateway, tokens, allowed_origins),
        })
    }

    /// The bound address (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr()
    }

    /// A handle that replaces this server's tokens while it runs.
    pub fn tokens_swap(&self) -> TokensSwap {
        TokensSwap(self.routes.tokens.clone(), self.routes.links.clone())
    }

    /// A handle that stops this server.
    pub fn stopper(&self) -> HttpStopper {
        HttpStopper(self.listener.clone(), self.routes.links.clone())
    }

    /// Serves until [`HttpStopper::stop`], then waits for every connection to end (each
    /// bounded by its request's deadline). The gateway's hosts are left running: the caller
    /// shuts them down.
    pub fn run(self) -> io::Result<()> {
        self.listener.run(self.routes);
        Ok(())
    }
}

impl Routes {
    fn new(gateway: Arc<Gateway>, tokens: Tokens, allowed_origins: Vec<String>) -> Arc<Routes> {
        let tokens = Arc::new(RwLock::new(tokens));
        Arc::new(Routes {
            links: Arc::new(LinkRegistry::new(gateway.clone(), tokens.clone())),
            dispatcher: Dispatcher::new(gateway),
            tokens,
            allowed_origins,
        })
    }
}

impl Handler for Routes {
    fn handle(&self, exchange: &mut Exchange<'_>) {
        route(self, exchange);
    }
}

/// Routes and authenticates one request, then answers it.
fn route(shared: &Routes, request: &mut Exchange<'_>) {
    let head = request.head();
    let path = head.path().to_string();
    if let Some(page) = InspectorRoute::of(&path) {
        return serve_inspector(shared, request, page);
    }
    if path == RUNNERS_CONNECT_PATH {
        return serve_link(shared, request);
    }
    let route = match path.as_str() {
        TOOLS_CALL_PATH => Route::ToolsCall,
        MCP_PATH => Route::Mcp,
        _ => {
            let output = transport_failure(
                "no such path; the routes are POST /api/tools/call, POST /mcp and GET \
                 /api/runners/connect (runner links)",
            );
            return reject(request, 404, None, &output, &[], "-");
        }
    };
    // The request's trace context, for every log line of this exchange (its access line
    // included) and the front's hop: the caller's `traceparent`, else a fresh one.
    let _trace = webcodex_plugin_host::begin_trace(Some(TraceContext::from_value_or_fresh(
        head.unique(TRACEPARENT),
    )));
    let head = request.head();
    let origin = OriginVerdict::of(head, &shared.allowed_origins);
    if head.method() == "OPTIONS" {
        return answer_options(request, route, &origin);
    }
    if let Some(headers) = origin.answer_headers() {
        request.add_response_headers(headers);
    }
    if request.head().method() != "POST" {
        let allow = [("Allow", "POST")];
        return match route {
            Route::ToolsCall => {
                let output = transport_failure("only POST is allowed on /api/tools/call");
                reject(request, 405, None, &output, &allow, "-")
            }
            Route::Mcp => {
                let body = mcp_http::transport_error("only POST is allowed on /mcp");
                send(request, 405, &body, &allow, "-")
            }
        };
    }
    if route == Route::Mcp && origin == OriginVerdict::Refused {
        let body = mcp_http::transport_error(ORIGIN_REFUSED);
        return send(request, 403, &body, &[], "-");
    }
    let Some((name, scopes)) = authenticate(&shared.tokens, request) else {
        let runner_token = presents_runner_token(&shared.tokens, request);
        return match route {
            Route::ToolsCall if runner_token => {
                let id = small_request_id(request);
                reject_runner_token(request, id)
            }
            Route::ToolsCall => {
                let id = small_request_id(request);
                reject_unauthorized(request, id)
            }
            Route::Mcp if runner_token => {
                let body = mcp_http::transport_error(RUNNER_TOKEN_MESSAGE);
                send(request, 401, &body, &[("WWW-Authenticate", "Bearer")], "-")
            }
            Route::Mcp => {
                let message = "a valid `Authorization: Bearer TOKEN` header is required";
                let body = mcp_http::transport_error(message);
                send(request, 401, &body, &[("WWW-Authenticate", "Bearer")], "-")
            }
        };
    };
    let failure = |message: &str| match route {
        Route::ToolsCall => json_bytes(&transport_failure_body(message)),
        Route::Mcp => json_bytes(&mcp_http::transport_error(message)),
    };
    let Some(slot) = shared.dispatcher.try_admit() else {
        let retry = [("Retry-After", "1")];
        let body = match route {
            Route::ToolsCall => json_bytes(&saturated_body()),
            Route::Mcp => failure("too many requests in flight; try again when one finishes"),
        };
        return send_bytes(request, 503, &body, &retry, &name);
    };
    // The slot is held while the body is read (bounded by the request's deadline) and the
    // request runs, and freed before the response is written.
    let body = match request.read_body(MAX_BODY_BYTES) {
        Ok(body) => body,
        Err(error) => {
            drop(slot);
            let (status, message) = match error {
                BodyError::TooLarge => (413, "the request body is larger than 1 MiB"),
                BodyError::TimedOut => (408, "the request body did not arrive in time"),
                BodyError::Broken => (400, "the request body could not be read"),
            };
            return send_bytes(request, status, &failure(message), &[], &name);
        }
    };
    let caller = Caller::new(scopes);
    let (status, response) = match route {
        Route::Mcp => {
            // The slot is freed inside, before the response is written.
            let answer = answer_mcp(shared, request, &caller, &body, slot);
            match answer.body {
                Some(body) => (answer.status, body),
                None => return send_empty(request, answer.status, &name),
            }
        }
        Route::ToolsCall => {
            let (status, response) = answer_body(&shared.dispatcher, &caller, &body);
            drop(slot);
            // Names this process, so a front can tell a restarted runner from the one that
            // minted its bindings (docs/PROTOCOL.md, several runners).
            let instance = [(
                RUNNER_INSTANCE_HEADER,
                shared.dispatcher.gateway().instance_id(),
            )];
            return send(request, status, &response, &instance, &name);
        }
    };
    send(request, status, &response, &[], &name);
}

/// The name and scopes of the one `Authorization: Bearer` token of `request`, when valid
/// (against the tokens in place now; the connection's memo saves the digest of a token it was
/// accepted with before).
fn authenticate(tokens: &RwLock<Tokens>, request: &mut Exchange<'_>) -> Option<(String, Scopes)> {
    let (head, memo) = request.head_and_token_memo();
    let presented = head.unique("Authorization").and_then(bearer)?;
    tokens.read().authenticate_remembered(presented, memo)
}

/// True when `request` presents a runner token (good for the link route only).
fn presents_runner_token(tokens: &RwLock<Tokens>, request: &Exchange<'_>) -> bool {
    request
        .head()
        .unique("Authorization")
        .and_then(bearer)
        .is_some_and(|presented| tokens.read().authenticate_runner(presented).is_some())
}

/// What a runner token is told on a user route.
const RUNNER_TOKEN_MESSAGE: &str =
    "this is a runner token: it only connects a runner on GET /api/runners/connect; use a user \
     token of the tokens file's [[tokens]] here";

/// The 401 `runner_token_not_accepted` of `/api/tools/call` (and of the inspector's whoami).
fn reject_runner_token(request: &mut Exchange<'_>, id: Option<RequestId>) {
    let output = json!({
        "error": {"code": RUNNER_TOKEN_NOT_ACCEPTED, "message": RUNNER_TOKEN_MESSAGE},
        "dispatch": Dispatch::NotStarted.as_str(),
    });
    let challenge = [("WWW-Authenticate", "Bearer")];
    reject(request, 401, id, &output, &challenge, "-");
}

/// `GET /api/runners/connect`: a runner token's WebSocket upgrade to a runner link (see
/// [`super::link`]). Refused: another method (405), no runner token (401; a user token too),
/// a request that is not a WebSocket upgrade (400, or 426 for another WebSocket version).
fn serve_link(shared: &Routes, request: &mut Exchange<'_>) {
    let head = request.head();
    if head.method() != "GET" {
        let output = transport_failure("only GET (a WebSocket upgrade) is allowed here");
        return reject(request, 405, None, &output, &[("Allow", "GET")], "-");
    }
    let presented = head
        .unique("Authorization")
        .and_then(bearer)
        .map(str::to_string);
    let runner_entry = presented.as_deref().and_then(|p| {
        let tokens = shared.tokens.read();
        let (name, runner) = tokens.authenticate_runner(p)?;
        Some((name.to_string(), runner.to_string()))
    });
    let Some((name, runner)) = runner_entry else {
        let user = presented
            .as_deref()
            .is_some_and(|p| shared.tokens.read().authenticate(p).is_some());
        let message = if user {
            "a user token cannot connect a runner; give the runner a token of the tokens \
             file's [[runner_tokens]]"
        } else {
            "a valid `Authorization: Bearer TOKEN` header with a runner token is required"
        };
        let output = json!({
            "error": {"code": UNAUTHORIZED, "message": message},
            "dispatch": Dispatch::NotStarted.as_str(),
        });
        log::info!("http: GET {RUNNERS_CONNECT_PATH} -> 401");
        let challenge = [("WWW-Authenticate", "Bearer")];
        return reject(request, 401, None, &output, &challenge, "-");
    };
    let head = request.head();
    let has_token = |field: &str, token: &str| {
        head.values(field)
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if head.has_body() || !has_token("Upgrade", "websocket") || !has_token("Connection", "upgrade")
    {
        let output = transport_failure("this route takes a WebSocket upgrade only");
        return reject(request, 400, None, &output, &[], &name);
    }
    if head.unique("Sec-WebSocket-Version") != Some("13") {
        let output = transport_failure("only WebSocket version 13 is supported");
        let version = [("Sec-WebSocket-Version", "13")];
        return reject(request, 426, None, &output, &version, &name);
    }
    let Some(key) = head.unique("Sec-WebSocket-Key").map(str::to_string) else {
        let output = transport_failure("the upgrade has no Sec-WebSocket-Key");
        return reject(request, 400, None, &output, &[], &name);
    };
    let offers_protocol = has_token("Sec-WebSocket-Protocol", link::wire::PROTOCOL);
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut headers = vec![
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Accept", accept.as_str()),
    ];
    if offers_protocol {
        headers.push(("Sec-WebSocket-Protocol", link::wire::PROTOCOL));
    }
    log::info!("http: GET {RUNNERS_CONNECT_PATH} -> 101 (token name {name})");
    let Ok((stream, leftover)) = request.upgrade(&headers) else {
        return;
    };
    let token = presented.unwrap_or_default();
    shared.links.serve(&runner, &token, stream, leftover);
}

/// The 401 `unauthorized` of `/api/tools/call` (and of the inspector's whoami).
fn reject_unauthorized(request: &mut Exchange<'_>, id: Option<RequestId>) {
    let output = json!({
        "error": {
            "code": UNAUTHORIZED,
            "message": "a valid `Authorization: Bearer TOKEN` header is required",
        },
        "dispatch": Dispatch::NotStarted.as_str(),
    });
    let challenge = [("WWW-Authenticate", "Bearer")];
    reject(request, 401, id, &output, &challenge, "-");
}

/// The inspector's routes (see [`super::inspector`]): the page and its assets without
/// authentication (they carry no data), the scopes of a token with it. GET only, no body.
fn serve_inspector(shared: &Routes, request: &mut Exchange<'_>, page: InspectorRoute) {
    // `HEAD` is answered as `GET`, without the body (see `Exchange::respond`).
    let method = request.head().method();
    if !matches!(method, "GET" | "HEAD") || request.head().has_body() {
        let output = transport_failure("the inspector answers only GET without a body");
        return reject(request, 405, None, &output, &[("Allow", "GET")], "-");
    }
    match page {
        InspectorRoute::Asset { content_type, body } => {
            inspector::respond(request, 200, content_type, body.as_bytes(), &[]);
        }
        InspectorRoute::WhoAmI => {
            let Some((name, scopes)) = authenticate(&shared.tokens, request) else {
                if presents_runner_token(&shared.tokens, request) {
                    return reject_runner_token(request, None);
                }
                return reject_unauthorized(request, None);
            };
            log::info!("http: GET {WHOAMI_PATH} -> 200 (token name {name})");
            let body = inspector::whoami_body(scopes).to_string();
            inspector::respond(request, 200, "application/json", body.as_bytes(), &[]);
        }
    }
}

/// The status and body answering a read `POST /api/tools/call` body.
pub(crate) fn answer_body(
    dispatcher: &Dispatcher,
    caller: &Caller,
    body: &[u8],
) -> (u16, TypedResponseBody) {
    let request = match parse_request(body, Framing::Body) {
        Ok(request) => request,
        Err(rejection) => {
            let output = invalid_request_output(rejection.message);
            return (400, TypedResponseBody::new(rejection.id, output));
        }
    };
    let output = dispatcher.execute(caller, &request.params);
    (
        status_for(&output),
        TypedResponseBody::new(request.id, output),
    )
}

/// The HTTP status of a gateway output, from its typed code.
fn status_for(output: &ToolOutput) -> u16 {
    if output.is_success() {
        return 200;
    }
    match output.code() {
        Some(ErrorCode::InsufficientScope) => 403,
        Some(
            ErrorCode::GatewaySaturated | ErrorCode::RunnerSaturated | ErrorCode::RunnerUnavailable,
        ) => 503,
        Some(ErrorCode::GatewayTimeout) => 504,
        Some(ErrorCode::Internal) => 500,
        _ => 400,
    }
}

/// The largest declared body read to echo the `id` of an unauthenticated request.
const SMALL_BODY_BYTES: u64 = 1024;

/// The `id` of an unauthenticated `/api/tools/call` request whose declared body is at most
/// [`SMALL_BODY_BYTES`] (read without a slot, before the request's deadline); `None` for
/// larger or chunked bodies and for bodies that are not a JSON object with an `id`. Lets a
/// 401 echo the request's id like every other answer.
fn small_request_id(request: &mut Exchange<'_>) -> Option<RequestId> {
    let declared = request.head().declared_length()?;
    if declared == 0 || declared > SMALL_BODY_BYTES {
        return None;
    }
    let body = request.read_body(SMALL_BODY_BYTES as usize).ok()?;
    match parse_request(&body, Framing::Body) {
        Ok(parsed) => parsed.id,
        Err(rejection) => rejection.id,
    }
}

/// Answers with the failure body of `/api/tools/call` (the body, if any, is left unread).
fn reject(
    request: &mut Exchange<'_>,
    status: u16,
    id: Option<RequestId>,
    output: &Value,
    headers: &[(&str, &str)],
    name: &str,
) {
    send(
        request,
        status,
        &failure_body(id, output.clone()),
        headers,
        name,
    );
}

/// Answers one `POST /mcp` body (see [`webcodex_plugin_mcp::http`]); the caller holds the
/// slot meanwhile.
fn answer_mcp(
    shared: &Routes,
    request: &Exchange<'_>,
    caller: &Caller,
    body: &[u8],
    slot: webcodex_plugin_host::Slot,
) -> mcp_http::HttpAnswer {
    // Absent, or given twice (ambiguous): treated as absent, which fails the check.
    let header = |name: &str| request.head().unique(name).map(str::to_string);
    let routing = RoutingHeaders {
        protocol_version: header("MCP-Protocol-Version"),
        method: header("Mcp-Method"),
        name: header("Mcp-Name"),
    };
    mcp_http::answer(body, &routing, &shared.dispatcher, caller, slot)
}

/// The message of a 403 for an `Origin` that is not allowed.
const ORIGIN_REFUSED: &str =
    "this Origin is not allowed; start serve with --allow-origin ORIGIN for a page on ORIGIN";

/// Answers `OPTIONS` on an API route. A CORS preflight from an allowed origin gets 204 with
/// the CORS headers, one from a refused origin 403 without them; an `OPTIONS` without `Origin`
/// (not a preflight) gets 204 with `Allow`. No token is needed: a browser sends none here.
fn answer_options(request: &mut Exchange<'_>, route: Route, origin: &OriginVerdict) {
    match origin.preflight_headers() {
        Some(headers) => {
            request.add_response_headers(headers);
            send_empty(request, 204, "-");
        }
        None if *origin == OriginVerdict::Absent => {
            log_answer(request, 204, "-");
            request.respond(204, &[("Allow", "OPTIONS, POST")], b"");
        }
        None => match route {
            Route::ToolsCall => {
                let body = failure_body(None, transport_failure(ORIGIN_REFUSED));
                send(request, 403, &body, &[], "-");
            }
            Route::Mcp => {
                let body = mcp_http::transport_error(ORIGIN_REFUSED);
                send(request, 403, &body, &[], "-");
            }
        },
    }
}

/// Responds with a status and no body (202 for an MCP notification).
fn send_empty(request: &mut Exchange<'_>, status: u16, name: &str) {
    log_answer(request, status, name);
    request.respond(status, &[], b"");
}

/// Responds with a JSON body (serialized by serde_json, so ids stay as received).
fn send<T: Serialize + ?Sized>(
    request: &mut Exchange<'_>,
    status: u16,
    body: &T,
    headers: &[(&str, &str)],
    name: &str,
) {
    send_bytes(request, status, &json_bytes(body), headers, name);
}

/// Responds with a JSON body already serialized.
fn send_bytes(
    request: &mut Exchange<'_>,
    status: u16,
    body: &[u8],
    headers: &[(&str, &str)],
    name: &str,
) {
    log_answer(request, status, name);
    let mut all = Vec::with_capacity(headers.len() + 1);
    all.push(("Content-Type", "application/json"));
    all.extend_from_slice(headers);
    request.respond(status, &all, body);
}

fn log_answer(request: &Exchange<'_>, status: u16, name: &str) {
    let head = request.head();
    log::info!(
        "http: {} {} -> {status} (token name {name})",
        head.method(),
        head.path()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use webcodex_plugin_host::Error;

    #[test]
    fn status_mapping() {
        let failure = |code: ErrorCode| ToolOutput::failure(&Error::not_started(code, "m"));
        assert_eq!(status_for(&ToolOutput::received(true, json!({}))), 200);
        assert_eq!(status_for(&failure(ErrorCode::InsufficientScope)), 403);
        assert_eq!(status_for(&failure(ErrorCode::GatewaySaturated)), 503);
        assert_eq!(status_for(&failure(ErrorCode::DescribeRequired)), 400);
        assert_eq!(status_for(&failure(ErrorCode::Internal)), 500);
    }
}
