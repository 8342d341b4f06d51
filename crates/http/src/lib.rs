//! The synchronous HTTP transport of `webcodex-plugin serve` and its client (docs/PROTOCOL.md §9.3,
//! HTTP; §8.2, scopes). No async runtime: a small HTTP/1.1 server on `std::net` (request heads
//! parsed by `httparse`) serves each connection on a plain thread, every phase under a deadline.
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
//! Routing is checked before authentication (nothing is revealed), and authentication before
//! the body is read.
//!
//! `POST /mcp` is the MCP endpoint (stateless Streamable HTTP, JSON responses; see
//! [`webcodex_plugin_mcp::http`]): the same tokens, scopes, body bound and in-flight slots, with
//! JSON-RPC bodies. Answers given before the body is read (401 with `WWW-Authenticate: Bearer`,
//! 403 for an `Origin` not allowed by `--allow-origin`, 405 for any other method, 413, 503) carry
//! a JSON-RPC error without an id.
//!
//! A browser page on an allowed origin (see [`cors`]) may call both routes: `OPTIONS` (the
//! CORS preflight) answers 204 with the `Access-Control-*` headers, and every answer to that
//! origin carries `Access-Control-Allow-Origin`; a preflight from any other origin gets 403.
//!
//! # Concurrency
//! One acceptor (the thread of [`HttpServer::run`]) hands each connection to a thread of its
//! own (`wc-http-conn`), at most [`MAX_CONNECTIONS`] at once (beyond: 503 `gateway_saturated`
//! and close). That thread reads a request head, routes and authenticates it, takes one of the
//! [`MAX_IN_FLIGHT`] in-flight slots (none free: 503 `gateway_saturated`, not started, nothing
//! queued), reads the body, runs `plugin_tool`, frees the slot and writes the response; then
//! it waits for the next request on the same connection (keep-alive). So a slow call never
//! blocks list, describe or another provider. [`HttpStopper::stop`] wakes the acceptor (on
//! Linux by shutting the listening socket down, no polling) and closes every connection that
//! is not handling a request; [`HttpServer::run`] returns once the others have answered.
//!
//! # Tokens
//! See [`Tokens`]: only SHA-256 digests of tokens are kept, a presented token is compared
//! against every entry in constant time, and no token is ever logged or echoed in an error.
//!
//! # Limits
//! A client that stalls holds its connection thread, and a slot if it has one, for at most
//! these bounds (docs/DECISIONS.md, HTTP transport):
//! - [`REQUEST_DEADLINE`] (10 s): from the moment a connection is ready for a request
//!   (accepted, or its previous response written) until the head and the body have arrived.
//!   A head that does not arrive in time is answered 408 and the connection closed; so is a
//!   body (`invalid_request`), and its slot is freed. Every socket read waits only for the time
//!   left, so trickling bytes does not extend it.
//! - [`KEEP_ALIVE_IDLE`] (5 s): for the first byte of a request; an idle connection is closed.
//! - [`WRITE_DEADLINE`] (10 s): for writing one response to a client that does not read (the
//!   slot is already free by then).
//! - [`MAX_HEAD_BYTES`] (16 KiB) and [`MAX_HEADERS`] (64): a larger head is answered 431.
//! - [`MAX_BODY_BYTES`] (1 MiB): a larger body is answered 413 (`Content-Length` or chunked).
//! - [`MAX_CONNECTIONS`] (256) connection threads.
//!
//! A request answered without reading its body (401, 404, 405, 413, …) keeps its connection
//! when the body can be read and dropped (declared, at most 4 MiB) within the same deadline;
//! otherwise the connection is closed after the response.
//!
//! [`HttpClient`] is the client side used by the CLI's `--server-url` mode and by a front's
//! remote runners (docs/PROTOCOL.md, client mode): one POST per request, never retried, http or
//! https, a proxy, connect and read timeouts. `ureq`'s connector chain sets each connection up
//! (resolution, SOCKS or `CONNECT` proxy, TCP, rustls); the request and its answer are HTTP/1.1
//! written and read by the client itself (answer heads parsed by `httparse`, bounded at 64 KiB,
//! bodies at 1 MiB), on a connection kept for the next request only while that is provably safe
//! (docs/DECISIONS.md D-CLIENT-1, D-CLIENT-2).
//!
//! [`MAX_IN_FLIGHT`]: webcodex_plugin_host::MAX_IN_FLIGHT
//! [`MAX_CONNECTIONS`]: listener::MAX_CONNECTIONS

#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[doc(hidden)]
pub mod __private;
mod answer_head;
mod bodies;
mod client;
pub mod cluster;
pub mod cors;
pub mod inspector;
pub mod link;
mod listener;
mod remote;
mod server;
mod tokens;
mod wire;

pub use client::{
    ClientError, ClientOptions, HttpClient, ProxyChoice, Received, SetupError, SetupPart,
    CONNECT_TIMEOUT, FAILURE_STATUSES, READ_TIMEOUT,
};
pub use listener::MAX_CONNECTIONS;
/// The server's connection handling, for the admin listener of `webcodex-plugin-ops`.
#[doc(hidden)]
pub use listener::{Bounds, Exchange, Handler, Listener};
pub use remote::remote_runner;
pub use server::{HttpServer, HttpStopper, TokensSwap, RUNNER_TOKEN_NOT_ACCEPTED, UNAUTHORIZED};
pub use tokens::{
    readable_by_everyone, Tokens, TokensError, MAX_TOKEN_NAME_BYTES, MIN_TOKEN_BYTES,
};
pub use wire::{KEEP_ALIVE_IDLE, MAX_HEADERS, MAX_HEAD_BYTES, REQUEST_DEADLINE, WRITE_DEADLINE};

/// The one route of the HTTP transport.
pub const TOOLS_CALL_PATH: &str = "/api/tools/call";
/// The response header in which `serve` names its runner instance: a random id made when the
/// serving gateway starts, so a front gateway can tell that a runner restarted (docs/PROTOCOL.md,
/// remote runners). It says nothing else about the runner.
pub const RUNNER_INSTANCE_HEADER: &str = "Webcodex-Runner-Instance";
/// The largest request body accepted, and the largest response body the client reads.
pub const MAX_BODY_BYTES: usize = 1 << 20;
