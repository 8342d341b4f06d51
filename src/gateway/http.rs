//! The synchronous HTTP transport of `webcodex-plugin serve` and its client (DESIGN §10, §13.1,
//! §13.9). No async runtime: [`tiny_http`] parses HTTP on its own connection threads and this
//! module answers on plain threads.
//!
//! # Protocol
//! One route, `POST /api/tools/call` (a query string is ignored), with the body of the stdio
//! transport: `{"tool":"plugin_tool","params":{…}}` plus an optional `id`, which is echoed in the
//! response when present (any JSON value) and omitted otherwise. Other keys are ignored. The
//! response body is `{"id"?:…,"success":bool,"output":{…}}`, always `application/json`:
//!
//! | status | when | `output` |
//! |---|---|---|
//! | 200 | the action succeeded | the canonical output object |
//! | 400 | the action failed, or the body is not a request (`invalid_request`) | the failure object |
//! | 401 | no, a malformed, or an unknown `Authorization: Bearer` token | `unauthorized` |
//! | 403 | the token lacks the action's scope | `insufficient_scope` |
//! | 404 / 405 / 413 | another path / another method / a body over 1 MiB | `invalid_request` |
//! | 500 | the gateway failed while handling the request (a bug) | `gateway_internal_error` |
//! | 503 | [`MAX_IN_FLIGHT`] requests are already being handled | `gateway_saturated` |
//!
//! Routing is checked before authentication (there is one route; nothing is revealed), and
//! authentication before the body is read.
//!
//! # Concurrency
//! [`ACCEPT_THREADS`] threads (`wc-http-accept`) pull requests from tiny_http, route and
//! authenticate them, and hand each one, with an in-flight slot, to a fixed pool of
//! [`MAX_IN_FLIGHT`] handler threads (`wc-http-req`) that read the body, run `plugin_tool` and
//! respond. A request that finds no free slot is answered at once with 503 `gateway_saturated`
//! (not started), so a slow call never blocks list, describe or another provider, and nothing is
//! queued without bound. [`HttpStopper::stop`] makes the acceptors stop; [`HttpServer::run`]
//! then waits for every handler (each bounded by its request's deadline) and returns.
//!
//! # Tokens
//! See [`Tokens`]: only SHA-256 digests of tokens are kept, a presented token is compared
//! against every entry in constant time, and no token is ever logged or echoed in an error.
//!
//! # Limits (tiny_http 0.12)
//! tiny_http sets no socket timeouts, and it reads and discards the unread rest of a declared
//! body (over 1 KiB) when a request is dropped. So a request rejected before its body was read
//! (401, 404, 405, 413, 503) is answered and dropped on a short-lived thread of its own
//! (`wc-http-reject`): acceptors and handler slots never wait for a client. A client that
//! never finishes sending the body of an accepted request still holds its handler slot until
//! it disconnects, and an idle keep-alive connection holds one tiny_http thread. tiny_http's
//! connection pool may also leave a new connection waiting while all of its threads are busy,
//! until another connection ends. Keep the server on loopback or behind a proxy that enforces
//! timeouts.
//!
//! [`HttpClient`] is the client side used by the CLI's `--server-url` mode: one POST per
//! request on a fresh `TcpStream` (http only), with connect, write and read timeouts and a
//! bounded response read.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use tiny_http::{Header, Method, Request, Response};

use super::scope::{Caller, Scope, Scopes};
use super::service::{Gateway, ToolOutput};
use super::stdio::{MAX_IN_FLIGHT, TOOL_NAME, WORKER_STACK};
use crate::error::{Dispatch, Error, ErrorCode};

/// The one route of the HTTP transport.
pub const TOOLS_CALL_PATH: &str = "/api/tools/call";
/// The largest request body accepted, and the largest response body the client reads.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Threads pulling requests from the HTTP server (routing and authentication only).
pub const ACCEPT_THREADS: usize = 4;
/// The shortest token a tokens file may hold, in bytes.
pub const MIN_TOKEN_BYTES: usize = 16;
/// The code of the failure object answered with 401.
pub const UNAUTHORIZED: &str = "unauthorized";
/// How long an acceptor waits for a request before looking at the stop flag again.
const POLL: Duration = Duration::from_millis(200);

// ---------------------------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------------------------

/// The bearer tokens of an HTTP server, loaded from a TOML tokens file:
///
/// ```toml
/// [[tokens]]
/// name = "ci-runner"            # for logs only
/// token = "long-random-secret"  # at least 16 bytes of printable ASCII, no spaces
/// scopes = ["plugin:inspect", "plugin:invoke"]
/// ```
///
/// Validation is strict: an unknown key anywhere, a missing or empty `name`, a `token` that is
/// shorter than 16 bytes (`MIN_TOKEN_BYTES`) or holds spaces or non-printable bytes, an unknown or
/// missing scope, a duplicate name or token, or a file without any entry is an error naming the
/// entry (`tokens[INDEX]`, from 0) and the key. No error message contains a token value; a TOML
/// syntax error gives only its line and column.
#[derive(Clone)]
pub struct Tokens {
    entries: Vec<TokenEntry>,
}

#[derive(Clone)]
struct TokenEntry {
    name: String,
    digest: [u8; 32],
    scopes: Scopes,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.entries.iter().map(|e| e.name.as_str()).collect();
        f.debug_struct("Tokens").field("names", &names).finish()
    }
}

/// A tokens file that could not be read or is invalid. Its message never contains a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokensError(String);

impl std::fmt::Display for TokensError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TokensError {}

fn digest(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

/// Equality of two digests in time independent of where they differ.
fn digests_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

impl Tokens {
    /// Reads and validates a tokens file.
    pub fn load(path: &Path) -> Result<Tokens, TokensError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TokensError(format!("cannot read the tokens file: {e}")))?;
        Tokens::parse(&text)
    }

    /// Validates the text of a tokens file.
    pub fn parse(text: &str) -> Result<Tokens, TokensError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            // Only the position: the parser's message may quote the line, i.e. a token.
            match e.span() {
                Some(span) => {
                    let before = &text[..span.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                    TokensError(format!(
                        "the tokens file is not valid TOML (line {line}, column {column})"
                    ))
                }
                None => TokensError("the tokens file is not valid TOML".into()),
            }
        })?;
        let mut list = None;
        for (key, value) in &table {
            match (key.as_str(), value) {
                ("tokens", toml::Value::Array(items)) => list = Some(items),
                ("tokens", _) => {
                    return Err(TokensError(
                        "`tokens` must be an array of tables ([[tokens]])".into(),
                    ))
                }
                (other, _) => {
                    return Err(TokensError(format!(
                        "unknown top-level key `{other}` (only [[tokens]] entries are allowed)"
                    )))
                }
            }
        }
        let items = match list {
            Some(items) if !items.is_empty() => items,
            _ => {
                return Err(TokensError(
                    "the tokens file has no [[tokens]] entry".into(),
                ))
            }
        };
        let mut entries: Vec<TokenEntry> = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let entry = parse_entry(index, item)?;
            if let Some(j) = entries.iter().position(|e| e.name == entry.name) {
                return Err(TokensError(format!(
                    "tokens[{index}].name: duplicates the name of tokens[{j}]"
                )));
            }
            if let Some(j) = entries
                .iter()
                .position(|e| digests_equal(&e.digest, &entry.digest))
            {
                return Err(TokensError(format!(
                    "tokens[{index}].token: duplicates the token of tokens[{j}]"
                )));
            }
            entries.push(entry);
        }
        Ok(Tokens { entries })
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there is no entry (never for a loaded file).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The name and scopes of the entry whose token is `presented`. Every entry is compared,
    /// each in constant time, so the time taken does not depend on which one matched.
    pub fn authenticate(&self, presented: &str) -> Option<(&str, Scopes)> {
        let wanted = digest(presented.as_bytes());
        let mut found = None;
        for entry in &self.entries {
            if digests_equal(&entry.digest, &wanted) && found.is_none() {
                found = Some((entry.name.as_str(), entry.scopes));
            }
        }
        found
    }
}

fn parse_entry(index: usize, item: &toml::Value) -> Result<TokenEntry, TokensError> {
    let err = |key: &str, what: &str| TokensError(format!("tokens[{index}].{key}: {what}"));
    let toml::Value::Table(table) = item else {
        return Err(TokensError(format!("tokens[{index}]: must be a table")));
    };
    for key in table.keys() {
        if !matches!(key.as_str(), "name" | "token" | "scopes") {
            return Err(err(key, "unknown key (expected name, token, scopes)"));
        }
    }
    let name = match table.get("name") {
        None => return Err(err("name", "missing")),
        Some(toml::Value::String(s)) if s.trim().is_empty() => return Err(err("name", "empty")),
        Some(toml::Value::String(s)) => s.clone(),
        Some(_) => return Err(err("name", "must be a string")),
    };
    let token = match table.get("token") {
        None => return Err(err("token", "missing")),
        Some(toml::Value::String(s)) => s,
        Some(_) => return Err(err("token", "must be a string")),
    };
    if token.is_empty() {
        return Err(err("token", "empty"));
    }
    if token.len() < MIN_TOKEN_BYTES {
        return Err(err(
            "token",
            &format!("shorter than {MIN_TOKEN_BYTES} bytes"),
        ));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(err(
            "token",
            "must be printable ASCII without spaces (it is sent in an HTTP header)",
        ));
    }
    let scopes = match table.get("scopes") {
        None => return Err(err("scopes", "missing")),
        Some(toml::Value::Array(items)) => items,
        Some(_) => return Err(err("scopes", "must be an array of strings")),
    };
    if scopes.is_empty() {
        return Err(err("scopes", "empty (give at least one scope)"));
    }
    let mut set = Scopes::none();
    for (i, scope) in scopes.iter().enumerate() {
        let scope = match scope {
            toml::Value::String(s) => Scope::parse(s).ok_or_else(|| {
                let known: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
                err(
                    &format!("scopes[{i}]"),
                    &format!("unknown scope `{s}` (known: {})", known.join(", ")),
                )
            })?,
            _ => return Err(err(&format!("scopes[{i}]"), "must be a string")),
        };
        set = set.with(scope);
    }
    Ok(TokenEntry {
        name,
        digest: digest(token.as_bytes()),
        scopes: set,
    })
}

/// The token of an `Authorization: Bearer TOKEN` value (scheme case-insensitive).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = rest.trim_start();
    (!token.is_empty() && !token.contains(' ')).then_some(token)
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

/// An HTTP server bound to an address, serving `plugin_tool` until stopped.
pub struct HttpServer {
    shared: Arc<Shared>,
    local_addr: SocketAddr,
}

struct Shared {
    server: tiny_http::Server,
    gateway: Arc<Gateway>,
    tokens: Tokens,
    stop: AtomicBool,
    in_flight: AtomicUsize,
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

/// A request that passed routing and authentication, with its in-flight slot.
struct Job {
    request: Request,
    caller: Caller,
    name: String,
}

impl HttpServer {
    /// Binds `addr` (e.g. `127.0.0.1:8787`; port 0 picks a free port) and serves `gateway` to
    /// holders of `tokens`. Nothing is served before [`HttpServer::run`].
    pub fn bind(
        addr: impl ToSocketAddrs,
        gateway: Arc<Gateway>,
        tokens: Tokens,
    ) -> io::Result<HttpServer> {
        let server = tiny_http::Server::http(addr).map_err(io::Error::other)?;
        let local_addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| io::Error::other("the server is not bound to an IP address"))?;
        Ok(HttpServer {
            shared: Arc::new(Shared {
                server,
                gateway,
                tokens,
                stop: AtomicBool::new(false),
                in_flight: AtomicUsize::new(0),
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
fn route(shared: &Shared, jobs: &Sender<Job>, request: Request) {
    let path = request.url().split('?').next().unwrap_or_default();
    if path != TOOLS_CALL_PATH {
        let output = transport_failure("no such path; the only route is POST /api/tools/call");
        return reject(request, 404, None, &output, &[], "-");
    }
    if request.method() != &Method::Post {
        let output = transport_failure("only POST is allowed on /api/tools/call");
        return reject(request, 405, None, &output, &[("Allow", "POST")], "-");
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
        return reject(request, 401, None, &output, &challenge, "-");
    };
    let name = name.to_string();
    if !try_acquire(&shared.in_flight) {
        let output = ToolOutput::failure(&saturated()).output;
        return reject(request, 503, None, &output, &[("Retry-After", "1")], &name);
    }
    let job = Job {
        request,
        caller: Caller::new(scopes),
        name,
    };
    // The queue holds at most as many jobs as there are slots, so this never blocks long; it
    // fails only when every handler is gone (they never return while an acceptor runs).
    if let Err(e) = jobs.send(job) {
        release(&shared.in_flight);
        let job = e.into_inner();
        let output = ToolOutput::failure(&saturated()).output;
        reject(job.request, 503, None, &output, &[], &job.name);
    }
}

fn try_acquire(in_flight: &AtomicUsize) -> bool {
    in_flight
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < MAX_IN_FLIGHT).then_some(n + 1)
        })
        .is_ok()
}

fn release(in_flight: &AtomicUsize) {
    in_flight.fetch_sub(1, Ordering::SeqCst);
}

fn handle_jobs(shared: &Shared, queue: &Receiver<Job>) {
    for job in queue.iter() {
        let name = job.name.clone();
        if catch_unwind(AssertUnwindSafe(|| handle(shared, job))).is_err() {
            log::error!("http: a request handler panicked (token name {name})");
        }
        release(&shared.in_flight);
    }
}

/// Reads the body, runs `plugin_tool` and responds.
fn handle(shared: &Shared, mut job: Job) {
    let name = job.name.as_str();
    if job
        .request
        .body_length()
        .is_some_and(|n| n > MAX_BODY_BYTES)
    {
        let output = transport_failure("the request body is larger than 1 MiB");
        return reject(job.request, 413, None, &output, &[], name);
    }
    let mut body = Vec::new();
    let read = job
        .request
        .as_reader()
        .take(MAX_BODY_BYTES as u64 + 1)
        .read_to_end(&mut body);
    if let Err(e) = read {
        log::debug!("http: reading a request body failed: {e}");
        let output = transport_failure("the request body could not be read");
        return respond(job.request, 400, None, &output, &[], name);
    }
    if body.len() > MAX_BODY_BYTES {
        let output = transport_failure("the request body is larger than 1 MiB");
        return respond(job.request, 413, None, &output, &[], name);
    }
    let (status, response) = answer_body(&shared.gateway, &job.caller, &body);
    send(job.request, status, &response, &[], name);
}

/// The HTTP status and JSON body answering a request body of at most [`MAX_BODY_BYTES`]: a
/// malformed request is a 400 failure body; a request runs `plugin_tool` for `caller`.
fn answer_body(gateway: &Gateway, caller: &Caller, body: &[u8]) -> (u16, Value) {
    let (id, params) = match parse_request(body) {
        Ok(request) => request,
        Err((id, message)) => return (400, response_body(id, false, transport_failure(message))),
    };
    let output = catch_unwind(AssertUnwindSafe(|| gateway.plugin_tool(caller, &params)))
        .unwrap_or_else(|_| {
            log::error!("http: a plugin_tool request panicked");
            ToolOutput::failure(&Error::new(
                ErrorCode::Internal,
                Dispatch::OutcomeUnknown,
                "the gateway failed while handling this request; its outcome is unknown",
            ))
        });
    (
        status_for(&output),
        response_body(id, output.success, output.output),
    )
}

/// `{"id"?,"success","output"}`.
fn response_body(id: Option<Value>, success: bool, output: Value) -> Value {
    let mut body = Map::new();
    if let Some(id) = id {
        body.insert("id".into(), id);
    }
    body.insert("success".into(), success.into());
    body.insert("output".into(), output);
    Value::Object(body)
}

/// Fuzzing entry point: [`answer_body`] for a body the transport has read (not public API).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub fn fuzz_answer_body(gateway: &Gateway, caller: &Caller, body: &[u8]) -> (u16, Value) {
    answer_body(gateway, caller, body)
}

/// The HTTP status of a gateway output.
fn status_for(output: &ToolOutput) -> u16 {
    if output.success {
        return 200;
    }
    let code = output.output["error"]["code"].as_str().unwrap_or_default();
    if code == ErrorCode::InsufficientScope.as_str() {
        403
    } else if code == ErrorCode::GatewaySaturated.as_str() {
        503
    } else if code == ErrorCode::Internal.as_str() {
        500
    } else {
        400
    }
}

/// Splits a request body into its optional id and params, or says why it is not a request.
#[allow(clippy::type_complexity)]
fn parse_request(body: &[u8]) -> Result<(Option<Value>, Value), (Option<Value>, &'static str)> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| (None, "the request body is not one JSON value"))?;
    let Value::Object(mut map) = value else {
        return Err((None, "the request body must be a JSON object"));
    };
    let id = map.remove("id");
    match map.get("tool") {
        None => return Err((id, "the request has no `tool`")),
        Some(Value::String(tool)) if tool == TOOL_NAME => {}
        Some(_) => return Err((id, "unknown tool; this transport serves only `plugin_tool`")),
    }
    match map.remove("params") {
        None => Err((id, "the request has no `params`")),
        Some(params) => Ok((id, params)),
    }
}

fn transport_failure(message: &str) -> Value {
    ToolOutput::failure(&Error::not_started(ErrorCode::InvalidRequest, message)).output
}

fn saturated() -> Error {
    Error::not_started(
        ErrorCode::GatewaySaturated,
        "too many requests in flight; try again when one finishes",
    )
}

/// The largest declared body tiny_http reads before handing a request over.
const PRE_READ_BYTES: usize = 1024;
/// Stack size of a thread that answers a rejected request.
const REJECT_STACK: usize = 64 * 1024;

/// [`respond`] for a request whose body was not read. When a body over [`PRE_READ_BYTES`] was
/// declared, tiny_http reads and discards it when the request is dropped, which blocks until
/// the client sends it or disconnects: that happens on a thread of its own (one per such
/// connection, as tiny_http already spends one), so an acceptor or a handler slot never waits
/// for a client.
fn reject(
    request: Request,
    status: u16,
    id: Option<&Value>,
    output: &Value,
    headers: &[(&str, &str)],
    name: &str,
) {
    if !request.body_length().is_some_and(|n| n > PRE_READ_BYTES) {
        return respond(request, status, id, output, headers, name);
    }
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect();
    let rejected = Rejected {
        request,
        status,
        id: id.cloned(),
        output: output.clone(),
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
    id: Option<Value>,
    output: Value,
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
        respond(
            self.request,
            self.status,
            self.id.as_ref(),
            &self.output,
            &headers,
            &self.name,
        );
    }
}

/// Responds with a failure body `{"id"?,"success":false,"output":output}`.
fn respond(
    request: Request,
    status: u16,
    id: Option<&Value>,
    output: &Value,
    headers: &[(&str, &str)],
    name: &str,
) {
    let body = response_body(id.cloned(), false, output.clone());
    send(request, status, &body, headers, name);
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

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

/// How long the client waits for a TCP connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the client waits for a response: above the 120 s longest request timeout.
pub const READ_TIMEOUT: Duration = Duration::from_secs(130);
/// How long the client may take to write its request.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// The most bytes of status line and headers the client reads.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// A `serve` endpoint and the bearer token to present to it.
#[derive(Clone)]
pub struct HttpClient {
    authority: String,
    path: String,
    token: String,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("authority", &self.authority)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Why a client request produced no gateway output.
#[derive(Debug)]
pub enum ClientError {
    /// No connection could be made: nothing was sent.
    Connect(String),
    /// The request may have reached the server but no complete response came back (reset,
    /// timeout, early close): the outcome is unknown.
    Lost(String),
    /// The server answered with something that is not a `plugin_tool` response.
    BadResponse(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Connect(m) | ClientError::Lost(m) | ClientError::BadResponse(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for ClientError {}

impl HttpClient {
    /// A client of `url` (`http://HOST[:PORT][/PREFIX]`; the request goes to
    /// `PREFIX/api/tools/call`) presenting `token`.
    pub fn new(url: &str, token: &str) -> Result<HttpClient, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or("the server URL must start with http:// (https is not supported)")?;
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err("the server URL needs a host (and no user info)".into());
        }
        if prefix.contains(['?', '#']) || !prefix.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the server URL path must be a plain path".into());
        }
        let authority = if authority.ends_with(']') || !authority.contains(':') {
            format!("{authority}:80")
        } else {
            authority.to_string()
        };
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the token must be one line of printable ASCII without spaces".into());
        }
        Ok(HttpClient {
            authority,
            path: format!("{}{TOOLS_CALL_PATH}", prefix.trim_end_matches('/')),
            token: token.to_string(),
        })
    }

    /// Sends one `plugin_tool` request and returns the server's output, whatever the status.
    pub fn plugin_tool(&self, params: &Value) -> Result<ToolOutput, ClientError> {
        let (status, body) = self.post(&json!({"tool": TOOL_NAME, "params": params}))?;
        let value: Value = serde_json::from_slice(&body).map_err(|_| {
            ClientError::BadResponse(format!("the server answered {status} without a JSON body"))
        })?;
        match (value.get("success"), value.get("output")) {
            (Some(Value::Bool(success)), Some(output)) => Ok(ToolOutput {
                success: *success,
                output: output.clone(),
            }),
            _ => Err(ClientError::BadResponse(format!(
                "the server answered {status} without a plugin_tool response"
            ))),
        }
    }

    /// One POST of `body`; the status and the response body.
    fn post(&self, body: &Value) -> Result<(u16, Vec<u8>), ClientError> {
        let addrs: Vec<SocketAddr> = self
            .authority
            .to_socket_addrs()
            .map_err(|e| ClientError::Connect(format!("cannot resolve {}: {e}", self.authority)))?
            .collect();
        let mut last = None;
        let mut stream = None;
        for addr in &addrs {
            match TcpStream::connect_timeout(addr, CONNECT_TIMEOUT) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let Some(mut stream) = stream else {
            let why = last.map_or("no address".to_string(), |e| e.to_string());
            return Err(ClientError::Connect(format!(
                "cannot connect to {}: {why}",
                self.authority
            )));
        };
        let lost = |what: &str, e: io::Error| ClientError::Lost(format!("{what}: {e}"));
        stream
            .set_read_timeout(Some(READ_TIMEOUT))
            .and_then(|()| stream.set_write_timeout(Some(WRITE_TIMEOUT)))
            .map_err(|e| ClientError::Connect(format!("cannot configure the connection: {e}")))?;
        let body = body.to_string();
        let mut request = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nAccept: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.path,
            self.authority,
            self.token,
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body.as_bytes());
        stream
            .write_all(&request)
            .and_then(|()| stream.flush())
            .map_err(|e| lost("sending the request failed", e))?;
        read_response(BufReader::new(stream))
    }
}

/// Reads one HTTP/1.x response: status, headers, and a body by Content-Length, chunked
/// encoding or connection close, each bounded by [`MAX_BODY_BYTES`].
fn read_response(mut reader: impl BufRead) -> Result<(u16, Vec<u8>), ClientError> {
    let lost = |e: io::Error| ClientError::Lost(format!("reading the response failed: {e}"));
    let early =
        || ClientError::Lost("the connection closed before the response was complete".into());
    let bad = |m: &str| ClientError::BadResponse(m.to_string());
    let mut budget = MAX_HEAD_BYTES;
    let status = loop {
        let line = read_line(&mut reader, &mut budget)
            .map_err(lost)?
            .ok_or_else(early)?;
        let mut parts = line.split(' ');
        let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
            return Err(bad("the server's status line is malformed"));
        };
        if !version.starts_with("HTTP/1.") {
            return Err(bad("the server does not speak HTTP/1.x"));
        }
        let code: u16 = code
            .parse()
            .map_err(|_| bad("the server's status code is malformed"))?;
        // Skip interim responses (100 Continue) with their headers.
        if (100..200).contains(&code) {
            while !read_line(&mut reader, &mut budget)
                .map_err(lost)?
                .ok_or_else(early)?
                .is_empty()
            {}
            continue;
        }
        break code;
    };
    let (mut length, mut chunked) = (None, false);
    loop {
        let line = read_line(&mut reader, &mut budget)
            .map_err(lost)?
            .ok_or_else(early)?;
        if line.is_empty() {
            break;
        }
        let Some((field, value)) = line.split_once(':') else {
            return Err(bad("a response header is malformed"));
        };
        let value = value.trim();
        if field.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| bad("the response Content-Length is malformed"))?,
            );
        } else if field.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    let too_large = || bad("the response body is larger than 1 MiB");
    let mut body = Vec::new();
    if chunked {
        let mut budget = MAX_HEAD_BYTES;
        loop {
            let line = read_line(&mut reader, &mut budget)
                .map_err(lost)?
                .ok_or_else(early)?;
            let size = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| bad("a response chunk size is malformed"))?;
            if size == 0 {
                break;
            }
            if body.len() + size > MAX_BODY_BYTES {
                return Err(too_large());
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader
                .read_exact(&mut body[start..])
                .map_err(|e| match e.kind() {
                    io::ErrorKind::UnexpectedEof => early(),
                    _ => lost(e),
                })?;
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf).map_err(lost)?;
        }
    } else if let Some(length) = length {
        if length > MAX_BODY_BYTES {
            return Err(too_large());
        }
        body.resize(length, 0);
        reader.read_exact(&mut body).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => early(),
            _ => lost(e),
        })?;
    } else {
        reader
            .take(MAX_BODY_BYTES as u64 + 1)
            .read_to_end(&mut body)
            .map_err(lost)?;
        if body.len() > MAX_BODY_BYTES {
            return Err(too_large());
        }
    }
    Ok((status, body))
}

/// One CRLF- (or LF-) terminated line, charged to `budget`; `None` at EOF before any byte.
fn read_line(reader: &mut impl BufRead, budget: &mut usize) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let limit = *budget as u64 + 1;
    reader.by_ref().take(limit).read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Ok(None);
    }
    if line.len() > *budget {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the response headers are too large",
        ));
    }
    *budget -= line.len();
    if line.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the connection closed inside the response headers",
        ));
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(String::from_utf8_lossy(&line).into_owned()))
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    const SECRET: &str = "0123456789abcdef-secret";

    fn tokens(body: &str) -> Result<Tokens, TokensError> {
        Tokens::parse(body)
    }

    #[test]
    fn tokens_parse_and_authenticate() {
        let t = tokens(&format!(
            "[[tokens]]\nname = \"ci\"\ntoken = \"{SECRET}\"\nscopes = [\"plugin:inspect\", \"plugin:invoke\"]\n\
             [[tokens]]\nname = \"ops\"\ntoken = \"{SECRET}-ops\"\nscopes = [\"plugin:manage\"]\n"
        ))
        .unwrap();
        assert_eq!(t.len(), 2);
        let (name, scopes) = t.authenticate(SECRET).unwrap();
        assert_eq!(name, "ci");
        assert!(scopes.contains(Scope::Inspect) && scopes.contains(Scope::Invoke));
        assert!(!scopes.contains(Scope::Manage));
        let (name, scopes) = t.authenticate(&format!("{SECRET}-ops")).unwrap();
        assert_eq!(name, "ops");
        assert!(scopes.contains(Scope::Manage) && !scopes.contains(Scope::Invoke));
        assert!(t.authenticate("0123456789abcdef-secreT").is_none());
        assert!(t.authenticate("").is_none());
        assert!(!format!("{t:?}").contains(SECRET));
    }

    #[test]
    fn tokens_errors_name_entry_and_key_and_never_the_token() {
        let entry = |extra: &str| {
            format!(
                "[[tokens]]\nname = \"a\"\ntoken = \"{SECRET}\"\nscopes = [\"plugin:inspect\"]\n{extra}"
            )
        };
        let cases = [
            (entry("[[tokens]]\nname = \"b\"\ntoken = \"\"\nscopes = [\"plugin:inspect\"]\n"), "tokens[1].token: empty"),
            (entry("[[tokens]]\nname = \"b\"\ntoken = \"short-secret\"\nscopes = [\"plugin:inspect\"]\n"), "tokens[1].token: shorter than 16 bytes"),
            (entry("[[tokens]]\nname = \"b\"\ntoken = \"has a space in it!!\"\nscopes = [\"plugin:inspect\"]\n"), "tokens[1].token: must be printable"),
            (entry("colour = \"red\"\n"), "tokens[0].colour: unknown key"),
            (entry("[[tokens]]\nname = \"b\"\ntoken = \"{SECRET}x\"\nscopes = [\"plugin:admin\"]\n".replace("{SECRET}", SECRET).as_str()), "tokens[1].scopes[0]: unknown scope `plugin:admin`"),
            (entry("[[tokens]]\nname = \"b\"\ntoken = \"{SECRET}\"\nscopes = [\"plugin:invoke\"]\n".replace("{SECRET}", SECRET).as_str()), "tokens[1].token: duplicates the token of tokens[0]"),
            (entry("[[tokens]]\nname = \"a\"\ntoken = \"{SECRET}x\"\nscopes = [\"plugin:invoke\"]\n".replace("{SECRET}", SECRET).as_str()), "tokens[1].name: duplicates"),
            (entry("[[tokens]]\nname = \"b\"\ntoken = \"{SECRET}x\"\nscopes = []\n".replace("{SECRET}", SECRET).as_str()), "tokens[1].scopes: empty"),
            (entry("[[tokens]]\nname = \"b\"\nscopes = [\"plugin:invoke\"]\n"), "tokens[1].token: missing"),
            (entry("[[tokens]]\ntoken = 1234\nname = \"b\"\nscopes = [\"plugin:invoke\"]\n"), "tokens[1].token: must be a string"),
            (entry("other = 1\n").replace("[[tokens]]\n", "other = 1\n[[tokens]]\n").replace("other = 1\n\n", ""), "unknown top-level key `other`"),
            ("".to_string(), "no [[tokens]] entry"),
            (format!("[[tokens]]\nname = \"a\"\ntoken = \"{SECRET}\nscopes = []\n"), "not valid TOML (line 3"),
        ];
        for (text, want) in cases {
            let err = tokens(&text).unwrap_err().to_string();
            assert!(err.contains(want), "{err:?} should contain {want:?}");
            assert!(!err.contains(SECRET), "{err:?} leaks the token");
            assert!(!err.contains("short-secret"), "{err:?} leaks the token");
        }
    }

    #[test]
    fn bearer_header_parsing() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer   abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
        assert_eq!(bearer("Bearer a b"), None);
    }

    #[test]
    fn request_body_parsing() {
        let (id, params) =
            parse_request(br#"{"id":7,"tool":"plugin_tool","params":{"action":"list"}}"#).unwrap();
        assert_eq!((id, params), (Some(json!(7)), json!({"action":"list"})));
        let (id, _) = parse_request(br#"{"tool":"plugin_tool","params":{}}"#).unwrap();
        assert_eq!(id, None);
        assert_eq!(parse_request(b"{nope").unwrap_err().0, None);
        assert_eq!(
            parse_request(br#"{"id":"a","tool":"x","params":{}}"#)
                .unwrap_err()
                .0,
            Some(json!("a"))
        );
        assert!(parse_request(br#"{"tool":"plugin_tool"}"#).is_err());
    }

    #[test]
    fn status_mapping() {
        let failure = |code: ErrorCode| ToolOutput::failure(&Error::not_started(code, "m"));
        assert_eq!(
            status_for(&ToolOutput {
                success: true,
                output: json!({})
            }),
            200
        );
        assert_eq!(status_for(&failure(ErrorCode::InsufficientScope)), 403);
        assert_eq!(status_for(&failure(ErrorCode::GatewaySaturated)), 503);
        assert_eq!(status_for(&failure(ErrorCode::DescribeRequired)), 400);
        assert_eq!(status_for(&failure(ErrorCode::Internal)), 500);
    }

    #[test]
    fn in_flight_is_bounded() {
        let n = AtomicUsize::new(0);
        for _ in 0..MAX_IN_FLIGHT {
            assert!(try_acquire(&n));
        }
        assert!(!try_acquire(&n));
        release(&n);
        assert!(try_acquire(&n));
    }

    #[test]
    fn client_url_parsing() {
        let c = HttpClient::new("http://127.0.0.1:8787", SECRET).unwrap();
        assert_eq!(
            (c.authority.as_str(), c.path.as_str()),
            ("127.0.0.1:8787", "/api/tools/call")
        );
        let c = HttpClient::new("http://example.test/base/", SECRET).unwrap();
        assert_eq!(
            (c.authority.as_str(), c.path.as_str()),
            ("example.test:80", "/base/api/tools/call")
        );
        let c = HttpClient::new("http://[::1]", SECRET).unwrap();
        assert_eq!(c.authority, "[::1]:80");
        assert!(HttpClient::new("https://h:1", SECRET).is_err());
        assert!(HttpClient::new("http://", SECRET).is_err());
        assert!(HttpClient::new("http://h:1", "two words").is_err());
        assert!(HttpClient::new("http://h:1", "line\r\nX: y").is_err());
        assert!(!format!("{c:?}").contains(SECRET));
    }

    #[test]
    fn client_reads_length_chunked_and_close_delimited_bodies() {
        let read = |raw: &str| read_response(Cursor::new(raw.as_bytes().to_vec()));
        let (status, body) =
            read("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                .unwrap();
        assert_eq!((status, body.as_slice()), (200, &b"{}"[..]));
        let (status, body) = read(
            "HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((status, body.as_slice()), (400, &b"abcde"[..]));
        let (_, body) = read("HTTP/1.0 200 OK\r\n\r\nuntil close").unwrap();
        assert_eq!(body, b"until close");
        assert!(matches!(read(""), Err(ClientError::Lost(_))));
        assert!(matches!(
            read("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"),
            Err(ClientError::Lost(_))
        ));
        assert!(matches!(
            read("HTTP/1.1 200 OK\r\nContent-"),
            Err(ClientError::Lost(_))
        ));
        assert!(matches!(
            read("HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n"),
            Err(ClientError::BadResponse(_))
        ));
        assert!(matches!(
            read("SSH-2.0 x\r\n\r\n"),
            Err(ClientError::BadResponse(_))
        ));
    }
}
