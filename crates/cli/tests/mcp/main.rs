//! `plugin_tool` over MCP: the protocol, stdio and `POST /mcp`, and the official Rust SDK as a client.
//!
//! One test binary; each module below was a test binary of its own and keeps its tests.

use webcodex_plugin_testkit::gateway as gateway_support;
#[path = "../support/mcp.rs"]
mod mcp_support;

mod mcp_http;
mod mcp_project;
mod mcp_protocol;
mod mcp_rmcp;
mod mcp_stdio;
