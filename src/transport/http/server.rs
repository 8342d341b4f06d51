//! The HTTP server: routing, authentication, the acceptor and handler threads, responses.

use std::io::{self, Read};
use std::net::{SocketAddr, ToSocketAddrs};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Map, Value};
use tiny_http::{Header, Method, Request, Response};

use super::inspector::{self, InspectorRoute, PageWriters, WHOAMI_PATH};
use super::tokens::{bearer, Tokens};
use super::{MAX_BODY_BYTES, RUNNER_INSTANCE_HEADER, TOOLS_CALL_PATH};
use crate::error::{Dispatch, ErrorCode};
use crate::gateway::{Caller, Gateway, Scopes, ToolOutput};
use crate::transport::dispatcher::{
    invalid_request, saturated, Dispatcher, Slot, MAX_IN_FLIGHT, WORKER_STACK,
};
use crate::transport::mcp::headers::RoutingHeaders;
use crate::transport::mcp::http::{self as mcp_http, MCP_PATH};
use crate::transport::request::{parse_request, response_body, Framing};

/// Threads pulling requests from the HTTP server (routing and authentication only).
pub const ACCEPT_THREADS: usize = 4;
/// The code of the failure object answered with 401.
pub const UNAUTHORIZED: &str = "unauthorized";
/// How long an acceptor waits for a request before looking at the stop flag again.
const POLL: Duration = Duration::from_millis(200);

/// An HTTP server bound to an address, serving `plugin_tool` until stopped.
pub struct HttpServer {
    shared: Arc<Shared>,
    local_addr: SocketAddr,
}

struct Shared {
    server: tiny_http::Server,
    dispatcher: Dispatcher,
    tokens: Tokens,
    allowed_origins: Vec<String>,
    stop: AtomicBool,
    page_writers: PageWriters,
}

/// Stops an [`HttpServer`] from another thread (or a signal watcher).
#[derive(Clone)]
pub struct HttpStopper(Arc<Shared>);

impl HttpStopper {
    /// Stops accepting requests; [`HttpServer::run`] returns once in-flight ones are answered.
    pub fn stop(&self) {
        self.0.stop.store(true, Ordering::SeqCst);
        for _ in 0..ACCEPT_THREADS {
            self.0.server.unblock();
        }
    }
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("local_addr", &self.local_addr)
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

/// A request that passed routing and authentication, with its in-flight slot.
struct Job {
    request: Request,
    route: Route,
    caller: Caller,
    name: String,
    slot: Slot,
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
    /// compared exactly, ASCII case-insensitively) on `/mcp`. A `/mcp` request whose `Origin`
    /// header is present and not one of them gets 403 (DNS-rebinding protection); a request
    /// without `Origin` (not from a browser) is not affected.
    pub fn bind_with_origins(
        addr: impl ToSocketAddrs,
        gateway: Arc<Gateway>,
        tokens: Tokens,
        allowed_origins: Vec<String>,
    ) -> io::Result<HttpServer> {
        let server = tiny_http::Server::http(addr).map_err(io::Error::other)?;
        let local_addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| io::Error::other("the server is not bound to an IP address"))?;
        Ok(HttpServer {
            shared: Arc::new(Shared {
                server,
                dispatcher: Dispatcher::new(gateway),
                tokens,
                allowed_origins,
                stop: AtomicBool::new(false),
                page_writers: PageWriters::default(),
            }),
            local_addr,
        })
    }

    /// The bound address (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A handle that stops this server.
    pub fn stopper(&self) -> HttpStopper {
        HttpStopper(self.shared.clone())
    }

    /// Serves until [`HttpStopper::stop`], then waits for every in-flight request to be
    /// answered. The gateway's hosts are left running: the caller shuts them down.
    pub fn run(self) -> io::Result<()> {
        let (jobs, queue) = crossbeam_channel::bounded::<Job>(MAX_IN_FLIGHT);
        let mut handlers = Vec::with_capacity(MAX_IN_FLIGHT);
        for _ in 0..MAX_IN_FLIGHT {
            let (shared, queue) = (self.shared.clone(), queue.clone());
            let spawned = std::thread::Builder::new()
                .name("wc-http-req".into())
                .stack_size(WORKER_STACK)
                .spawn(move || handle_jobs(&shared, &queue));
            match spawned {
                Ok(handle) => handlers.push(handle),
                Err(e) => {
                    self.stopper().stop();
                    drop(jobs);
                    join_all(handlers);
                    return Err(e);
                }
            }
        }
        drop(queue);
        let mut acceptors = Vec::with_capacity(ACCEPT_THREADS);
        let mut failure = None;
        for _ in 0..ACCEPT_THREADS {
            let (shared, jobs) = (self.shared.clone(), jobs.clone());
            match std::thread::Builder::new()
                .name("wc-http-accept".into())
                .spawn(move || accept(&shared, &jobs))
            {
                Ok(handle) => acceptors.push(handle),
                Err(e) => {
                    self.stopper().stop();
                    failure = Some(e);
                    break;
                }
            }
        }
        drop(jobs);
        join_all(acceptors);
        // Every sender is gone: the handlers finish the queued jobs and return.
        join_all(handlers);
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn join_all(handles: Vec<JoinHandle<()>>) {
    for handle in handles {
        let _ = handle.join();
    }
}

fn accept(shared: &Shared, jobs: &Sender<Job>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match shared.server.recv_timeout(POLL) {
            Ok(Some(request)) => route(shared, jobs, request),
            Ok(None) => {}
            Err(e) => {
                log::warn!("http: receiving a request failed: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Routes and authenticates one request, then hands it to a handler or answers it.
fn route(shared: &Shared, jobs: &Sender<Job>, mut request: Request) {
    let path = request.url().split('?').next().unwrap_or_default();
    if let Some(page) = InspectorRoute::of(path) {
        return serve_inspector(shared, request, page);
    }
    let route = match path {
        TOOLS_CALL_PATH => Route::ToolsCall,
        MCP_PATH => Route::Mcp,
        _ => {
            let output = transport_failure(
                "no such path; the routes are POST /api/tools/call and POST /mcp",
            );
            return reject(request, 404, None, &output, &[], "-");
        }
    };
    if request.method() != &Method::Post {
        let allow = [("Allow", "POST")];
        return match route {
            Route::ToolsCall => {
                let output = transport_failure("only POST is allowed on /api/tools/call");
                reject(request, 405, None, &output, &allow, "-")
            }
            Route::Mcp => {
                let body = mcp_http::transport_error("only POST is allowed on /mcp");
                reject_body(request, 405, body, &allow, "-")
            }
        };
    }
    if route == Route::Mcp && !origin_allowed(&request, &shared.allowed_origins) {
        let body = mcp_http::transport_error("this Origin is not allowed");
        return reject_body(request, 403, body, &[], "-");
    }
    let mut values = request
        .headers()
        .iter()
        .filter(|h| h.field.equiv("Authorization"));
    let presented = match (values.next(), values.next()) {
        (Some(header), None) => bearer(header.value.as_str()),
        _ => None,
    };
    let Some((name, scopes)) = presented.and_then(|t| shared.tokens.authenticate(t)) else {
        let output = json!({
            "error": {
                "code": UNAUTHORIZED,
                "message": "a valid `Authorization: Bearer TOKEN` header is required",
            },
            "dispatch": Dispatch::NotStarted.as_str(),
        });
        let challenge = [("WWW-Authenticate", "Bearer")];
        return match route {
            Route::ToolsCall => {
                let id = buffered_request_id(&mut request);
                reject(request, 401, id.as_ref(), &output, &challenge, "-")
            }
            Route::Mcp => {
                let message = "a valid `Authorization: Bearer TOKEN` header is required";
                let body = mcp_http::transport_error(message);
                reject_body(request, 401, body, &challenge, "-")
            }
        };
    };
    let name = name.to_string();
    let Some(slot) = shared.dispatcher.try_admit() else {
        let retry = [("Retry-After", "1")];
        return match route {
            Route::ToolsCall => reject(request, 503, None, &saturated().output, &retry, &name),
            Route::Mcp => {
                let body = mcp_http::transport_error(
                    "too many requests in flight; try again when one finishes",
                );
                reject_body(request, 503, body, &retry, &name)
            }
        };
    };
    let job = Job {
        request,
        route,
        caller: Caller::new(scopes),
        name,
        slot,
    };
    // The queue holds at most as many jobs as there are slots, so this never blocks long; it
    // fails only when every handler is gone (they never return while an acceptor runs).
    if let Err(e) = jobs.send(job) {
        let job = e.into_inner();
        drop(job.slot);
        let output = saturated().output;
        reject(job.request, 503, None, &output, &[], &job.name);
    }
}

/// The name and scopes of the one `Authorization: Bearer` token of `request`, when valid (the
/// same rule as [`route`] applies inline).
fn authenticate<'t>(tokens: &'t Tokens, request: &Request) -> Option<(&'t str, Scopes)> {
    let mut values = request
        .headers()
        .iter()
        .filter(|h| h.field.equiv("Authorization"));
    let presented = match (values.next(), values.next()) {
        (Some(header), None) => bearer(header.value.as_str()),
        _ => None,
    };
    presented.and_then(|t| tokens.authenticate(t))
}

/// The 401 of [`route`], for the inspector's whoami.
fn reject_unauthorized(request: Request) {
    let output = json!({
        "error": {
            "code": UNAUTHORIZED,
            "message": "a valid `Authorization: Bearer TOKEN` header is required",
        },
        "dispatch": Dispatch::NotStarted.as_str(),
    });
    let challenge = [("WWW-Authenticate", "Bearer")];
    reject(request, 401, None, &output, &challenge, "-");
}

/// The inspector's routes (see [`super::inspector`]): the page and its assets without
/// authentication (they carry no data), the scopes of a token with it. GET only, no body.
fn serve_inspector(shared: &Shared, request: Request, page: InspectorRoute) {
    if request.method() != &Method::Get || request.body_length().is_some_and(|n| n > 0) {
        let output = transport_failure("the inspector answers only GET without a body");
        return reject(request, 405, None, &output, &[("Allow", "GET")], "-");
    }
    match page {
        InspectorRoute::Asset { content_type, body } => {
            if let Some(request) = shared.page_writers.respond(request, content_type, body) {
                let output = crate::transport::saturated().output;
                reject(request, 503, None, &output, &[("Retry-After", "1")], "-");
            }
        }
        InspectorRoute::WhoAmI => {
            let Some((name, scopes)) = authenticate(&shared.tokens, &request) else {
                return reject_unauthorized(request);
            };
            log::info!("http: GET {WHOAMI_PATH} -> 200 (token name {name})");
            let body = inspector::whoami_body(scopes).to_string();
            inspector::respond(request, 200, "application/json", body.as_bytes(), &[]);
        }
    }
}

fn handle_jobs(shared: &Shared, queue: &Receiver<Job>) {
    for job in queue.iter() {
        let name = job.name.clone();
        // The job owns its slot: it is freed when the job is done, also when handling panics.
        if catch_unwind(AssertUnwindSafe(|| handle(shared, job))).is_err() {
            log::error!("http: a request handler panicked (token name {name})");
        }
    }
}

/// Reads the body, runs `plugin_tool` and responds.
fn handle(shared: &Shared, mut job: Job) {
    let name = job.name.as_str();
    let failure = |message: &str| match job.route {
        Route::ToolsCall => transport_failure_body(message),
        Route::Mcp => mcp_http::transport_error(message),
    };
    if job
        .request
        .body_length()
        .is_some_and(|n| n > MAX_BODY_BYTES)
    {
        let body = failure("the request body is larger than 1 MiB");
        return reject_body(job.request, 413, body, &[], name);
    }
    let mut body = Vec::new();
    let read = job
        .request
        .as_reader()
        .take(MAX_BODY_BYTES as u64 + 1)
        .read_to_end(&mut body);
    if let Err(e) = read {
        log::debug!("http: reading a request body failed: {e}");
        let body = failure("the request body could not be read");
        return send(job.request, 400, &body, &[], name);
    }
    if body.len() > MAX_BODY_BYTES {
        let body = failure("the request body is larger than 1 MiB");
        return send(job.request, 413, &body, &[], name);
    }
    if job.route == Route::Mcp {
        return handle_mcp(shared, job, &body);
    }
    let (status, response) = answer_body(&shared.dispatcher, &job.caller, &body);
    let instance = [(
        RUNNER_INSTANCE_HEADER,
        shared.dispatcher.gateway().instance_id(),
    )];
    send(job.request, status, &response, &instance, name);
}

/// The status and body answering a read `POST /api/tools/call` body.
fn answer_body(dispatcher: &Dispatcher, caller: &Caller, body: &[u8]) -> (u16, Value) {
    let request = match parse_request(body, Framing::Body) {
        Ok(request) => request,
        Err(rejection) => {
            let output = invalid_request(rejection.message);
            return (400, response_body(rejection.id, output));
        }
    };
    let output = dispatcher.execute(caller, &request.params);
    (status_for(&output), response_body(request.id, output))
}

/// [`answer_body`] for the fuzz targets in `fuzz/` (not public API).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub fn fuzz_answer_body(dispatcher: &Dispatcher, caller: &Caller, body: &[u8]) -> (u16, Value) {
    answer_body(dispatcher, caller, body)
}

/// The HTTP status of a gateway output, from its typed code.
fn status_for(output: &ToolOutput) -> u16 {
    if output.success {
        return 200;
    }
    match output.code() {
        Some(ErrorCode::InsufficientScope) => 403,
        Some(ErrorCode::GatewaySaturated) => 503,
        Some(ErrorCode::Internal) => 500,
        _ => 400,
    }
}

fn transport_failure(message: &str) -> Value {
    invalid_request(message).output
}

/// The largest declared body tiny_http reads before handing a request over.
const PRE_READ_BYTES: usize = 1024;
/// Stack size of a thread that answers a rejected request.
const REJECT_STACK: usize = 64 * 1024;

/// The `id` of a request whose body tiny_http has already buffered (declared, at most
/// [`PRE_READ_BYTES`]), so reading it never waits for the client; `None` for larger or
/// chunked bodies and for bodies that are not a JSON object with an `id`. Lets a 401 echo the
/// request's id like every other answer.
fn buffered_request_id(request: &mut Request) -> Option<Value> {
    if !request.body_length().is_some_and(|n| n <= PRE_READ_BYTES) {
        return None;
    }
    let mut body = Vec::with_capacity(PRE_READ_BYTES);
    request
        .as_reader()
        .take(PRE_READ_BYTES as u64)
        .read_to_end(&mut body)
        .ok()?;
    match serde_json::from_slice::<Value>(&body).ok()? {
        Value::Object(mut map) => map.remove("id"),
        _ => None,
    }
}

/// [`respond`] for a request whose body was not read. When a body over [`PRE_READ_BYTES`] was
/// declared, tiny_http reads and discards it when the request is dropped, which blocks until
/// the client sends it or disconnects: that happens on a thread of its own (one per such
/// connection, as tiny_http already spends one), so an acceptor or a handler slot never waits
/// for a client.
/// [`respond`] for a request whose body was not read (see [`reject_body`]).
fn reject(
    request: Request,
    status: u16,
    id: Option<&Value>,
    output: &Value,
    headers: &[(&str, &str)],
    name: &str,
) {
    reject_body(request, status, failure_body(id, output), headers, name);
}

/// [`send`] for a request whose body was not read. When a body over [`PRE_READ_BYTES`] was
/// declared, tiny_http reads and discards it when the request is dropped, which blocks until
/// the client sends it or disconnects: that happens on a thread of its own (one per such
/// connection, as tiny_http already spends one), so an acceptor or a handler slot never waits
/// for a client.
fn reject_body(request: Request, status: u16, body: Value, headers: &[(&str, &str)], name: &str) {
    if !request.body_length().is_some_and(|n| n > PRE_READ_BYTES) {
        return send(request, status, &body, headers, name);
    }
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect();
    let rejected = Rejected {
        request,
        status,
        body,
        headers,
        name: name.to_string(),
    };
    // The closure owns the request; when no thread can be spawned it comes back through here.
    let slot = Arc::new(parking_lot::Mutex::new(Some(rejected)));
    let moved = slot.clone();
    let spawned = std::thread::Builder::new()
        .name("wc-http-reject".into())
        .stack_size(REJECT_STACK)
        .spawn(move || {
            if let Some(rejected) = moved.lock().take() {
                rejected.respond();
            }
        });
    if spawned.is_err() {
        log::warn!("http: no thread for a rejected request; answering it in place");
        if let Some(rejected) = slot.lock().take() {
            rejected.respond();
        }
    }
}

/// A rejected request and its answer, moved to the thread that sends it.
struct Rejected {
    request: Request,
    status: u16,
    body: Value,
    headers: Vec<(String, String)>,
    name: String,
}

impl Rejected {
    fn respond(self) {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(f, v)| (f.as_str(), v.as_str()))
            .collect();
        send(self.request, self.status, &self.body, &headers, &self.name);
    }
}

/// The failure body `{"id"?,"success":false,"output":output}` of `/api/tools/call`.
fn failure_body(id: Option<&Value>, output: &Value) -> Value {
    let mut body = Map::new();
    if let Some(id) = id {
        body.insert("id".into(), id.clone());
    }
    body.insert("success".into(), false.into());
    body.insert("output".into(), output.clone());
    Value::Object(body)
}

/// The `invalid_request` failure body of `/api/tools/call`, without an id.
fn transport_failure_body(message: &str) -> Value {
    failure_body(None, &transport_failure(message))
}

/// Answers one `POST /mcp` body (see [`crate::transport::mcp::http`]); the job's slot is held meanwhile.
fn handle_mcp(shared: &Shared, job: Job, body: &[u8]) {
    let header = |name: &'static str| {
        let mut values = job.request.headers().iter().filter(|h| h.field.equiv(name));
        match (values.next(), values.next()) {
            (Some(h), None) => Some(h.value.as_str().to_string()),
            // Absent, or given twice (ambiguous): treated as absent, which fails the check.
            _ => None,
        }
    };
    let routing = RoutingHeaders {
        protocol_version: header("MCP-Protocol-Version"),
        method: header("Mcp-Method"),
        name: header("Mcp-Name"),
    };
    let caller = job.caller;
    let answer = mcp_http::answer(body, &routing, |params| {
        shared.dispatcher.execute(&caller, params)
    });
    match answer.body {
        Some(body) => send(job.request, answer.status, &body, &[], &job.name),
        None => send_empty(job.request, answer.status, &job.name),
    }
}

/// True when the request has no `Origin` header, or one that is allowed.
fn origin_allowed(request: &Request, allowed: &[String]) -> bool {
    request
        .headers()
        .iter()
        .filter(|h| h.field.equiv("Origin"))
        .all(|h| {
            let origin = h.value.as_str().trim();
            allowed.iter().any(|a| a.eq_ignore_ascii_case(origin))
        })
}

/// Responds with a status and no body (202 for an MCP notification).
fn send_empty(request: Request, status: u16, name: &str) {
    log::info!(
        "http: {} {} -> {status} (token name {name})",
        request.method(),
        request.url().split('?').next().unwrap_or_default()
    );
    if let Err(e) = request.respond(Response::empty(status)) {
        log::debug!("http: writing a response failed: {e}");
    }
}

fn send(request: Request, status: u16, body: &Value, headers: &[(&str, &str)], name: &str) {
    log::info!(
        "http: {} {} -> {status} (token name {name})",
        request.method(),
        request.url().split('?').next().unwrap_or_default()
    );
    let mut response = Response::from_data(body.to_string().into_bytes())
        .with_status_code(status)
        .with_chunked_threshold(usize::MAX);
    let content_type = ("Content-Type", "application/json");
    for (field, value) in std::iter::once(&content_type).chain(headers) {
        if let Ok(header) = Header::from_bytes(field.as_bytes(), value.as_bytes()) {
            response.add_header(header);
        }
    }
    if let Err(e) = request.respond(response) {
        log::debug!("http: writing a response failed: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn status_mapping() {
        let failure = |code: ErrorCode| ToolOutput::failure(&Error::not_started(code, "m"));
        assert_eq!(status_for(&ToolOutput::ok(json!({}))), 200);
        assert_eq!(status_for(&failure(ErrorCode::InsufficientScope)), 403);
        assert_eq!(status_for(&failure(ErrorCode::GatewaySaturated)), 503);
        assert_eq!(status_for(&failure(ErrorCode::DescribeRequired)), 400);
        assert_eq!(status_for(&failure(ErrorCode::Internal)), 500);
    }
}
