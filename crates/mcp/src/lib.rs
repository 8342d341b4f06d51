//! `plugin_tool` over the Model Context Protocol (choices: docs/DECISIONS.md, MCP transport).
//!
//! An MCP client sees exactly one tool, `plugin_tool` ([`manifest::tool_spec`]), never the
//! provider tools behind it. The server speaks both eras of MCP:
//! - the handshake era (2024-11-05 … 2025-11-25): `initialize`, `notifications/initialized`,
//!   `ping`; on stdio a request before `initialize` (other than `ping`) is -32600;
//! - the stateless era (2026-07-28): every request carries its version and client capabilities
//!   in `_meta`; `server/discover`; every result has `resultType: "complete"`; `server/discover`
//!   and `tools/list` carry `ttlMs` and `cacheScope`; an unsupported version is -32022.
//!
//! The protocol logic ([`McpSession`], [`headers`], [`result`], [`PendingCalls`]) does no I/O:
//! a transport feeds it one message at a time and acts on the [`Step`] it returns. `tools/call`
//! runs the same `plugin_tool` executor as the JSON-lines gateway and the HTTP API. Two
//! transports sit on it: stdio ([`serve_stdio`]) and the `POST /mcp` binding ([`http`]), which the
//! HTTP crate's server mounts.
//!
//! Caveats: only tools are served (no resources, prompts or sampling), and the server never
//! sends a request of its own. Cancelling a call (`notifications/cancelled`) drops its response;
//! it never interrupts the call, whose outcome stays what the plugin made it.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod batch;
pub mod headers;
pub mod http;
pub mod jsonrpc;
pub mod manifest;
mod pending;
pub mod result;
mod session;
mod stdio;
pub mod version;

pub use pending::{PendingCalls, Ticket};
pub use session::{
    capabilities, server_info, McpSession, Reply, Step, ToolCall, Transport, CACHE_TTL_MS,
    INSTRUCTIONS, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_SERVER_INFO, SERVER_NAME,
};
pub use stdio::serve_stdio;
