//! The synchronous HTTP transport of `webcodex-plugin serve` and its client (docs/PROTOCOL.md §9.3,
//! HTTP; §8.2, scopes). No async runtime: [`tiny_http`] parses HTTP on its own connection threads
//! and this module answers on plain threads.
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
//! [`crate::transport::mcp::http`]): the same tokens, scopes, body bound and in-flight slots, with
//! JSON-RPC bodies. Answers given before the body is read (401 with `WWW-Authenticate: Bearer`,
//! 403 for an `Origin` not allowed by `--allow-origin`, 405 for any other method, 413, 503) carry
//! a JSON-RPC error without an id.
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
//! [`HttpClient`] is the client side used by the CLI's `--server-url` mode (docs/PROTOCOL.md,
//! client mode): `ureq` with rustls, one POST per request on a fresh connection, http or
//! https, a proxy, connect and read timeouts, a bounded response read, never retried.
//!
//! [`MAX_IN_FLIGHT`]: crate::transport::MAX_IN_FLIGHT

#[cfg(feature = "http-client")]
mod client;
#[cfg(feature = "http-server")]
pub mod inspector;
#[cfg(feature = "http-client")]
mod remote;
#[cfg(feature = "http-server")]
mod server;
#[cfg(feature = "http-server")]
mod tokens;

#[cfg(feature = "http-client")]
pub use client::{
    ClientError, ClientOptions, HttpClient, ProxyChoice, Received, CONNECT_TIMEOUT, READ_TIMEOUT,
};
#[cfg(feature = "http-client")]
pub use remote::remote_runner;
#[cfg(feature = "http-server")]
#[cfg(all(feature = "http-server", feature = "fuzzing"))]
#[doc(hidden)]
pub use server::fuzz_answer_body;
#[cfg(feature = "http-server")]
pub use server::{HttpServer, HttpStopper, ACCEPT_THREADS, UNAUTHORIZED};
#[cfg(feature = "http-server")]
pub use tokens::{Tokens, TokensError, MIN_TOKEN_BYTES};

/// The one route of the HTTP transport.
pub const TOOLS_CALL_PATH: &str = "/api/tools/call";
/// The response header in which `serve` names its runner instance: a random id made when the
/// serving gateway starts, so a front gateway can tell that a runner restarted (docs/PROTOCOL.md,
/// remote runners). It says nothing else about the runner.
pub const RUNNER_INSTANCE_HEADER: &str = "Webcodex-Runner-Instance";
/// The largest request body accepted, and the largest response body the client reads.
pub const MAX_BODY_BYTES: usize = 1 << 20;
