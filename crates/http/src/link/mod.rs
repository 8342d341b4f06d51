//! Runner links, `webcodex-runner-link-v1` (docs/PROTOCOL.md, runner links): a runner behind
//! NAT dials out to a front's `GET /api/runners/connect` and keeps one WebSocket (RFC 6455,
//! `tungstenite`, synchronous) over which the front sends `plugin_tool` requests and the
//! runner answers them.
//!
//! - `wire`: the frames (hello, welcome, requests, replies); pure, fuzzed (`fuzz/`,
//!   `link_frames`).
//! - `socket`: one WebSocket shared by its reader and its writers (no polling: the reader
//!   waits in one `poll(2)`, a `peek` off Unix; writers take a lock per message; a writer may
//!   claim the reading, the front's caller that reads its own answer).
//! - `front`: the links `serve` accepted, each a `RunnerLink` of a `RemoteRunner`, so every
//!   relayed answer is validated and rebuilt and each runner has its own in-flight cap.
//! - `runner`: `connect`'s side: dial (directly or through an HTTP proxy's `CONNECT`, ureq's
//!   own; `ws://` or `wss://`), hello, reconnect with backoff.
//! - `crew`: the runner's request threads, which serve the front's requests with the local
//!   gateway (leader/follower on every platform: the thread that reads a request runs it).

mod crew;
pub(crate) mod front;
mod runner;
mod socket;
pub mod wire;

pub use runner::{Backoff, ConnectOptions, Dialer, DialerStop, LinkEnd};

/// The log target of a `connect` runner's link lines (linked, relinked, ended and why), which
/// the command-line tool shows at the default log level.
pub const LINK_LOG_TARGET: &str = "webcodex_plugin::link";

/// The path of the front's link route.
pub const RUNNERS_CONNECT_PATH: &str = "/api/runners/connect";
