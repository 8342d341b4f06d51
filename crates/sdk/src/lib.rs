//! Plugin-side helpers: define tools in Rust and serve them over `webcodex-plugin-v1`.
//!
//! A [`Plugin`] is a name plus a list of tools, each a [`ToolSpec`] (the definition sent in
//! `tools/list`) and a handler that turns the call arguments into a [`ToolReply`] or a
//! [`ToolError`]. [`Plugin::serve`] then answers newline-delimited JSON-RPC 2.0 requests until
//! its input ends; [`Plugin::serve_stdio`] does the same on the process's stdin and stdout.
//!
//! What the SDK guarantees to the host:
//! - stdout carries only protocol lines, one response per line, flushed after each;
//! - an input line that is not a JSON object is ignored, and one longer than
//!   [`MAX_LINE_BYTES`](webcodex_plugin_host::MAX_LINE_BYTES) is skipped up to its newline, so a bad
//!   line never ends the session;
//! - a [`ToolError`] or a panicking handler never kills the plugin: the first becomes a result
//!   with `isError: true`, the second a JSON-RPC internal error (the panic message goes to
//!   stderr through the standard panic hook).
//!
//! The SDK does not validate tool names, schemas or result sizes against the protocol bounds:
//! the host does that at admission and on every result, and reports the first violation with a
//! stable code. [`example_plugin`] is the built-in plugin behind the `demo` and `bench`
//! commands.

#![forbid(unsafe_code)]

mod example;
mod plugin;
mod response;
mod tool;

#[cfg(test)]
mod tests;

pub use example::example_plugin;
pub use plugin::Plugin;
pub use tool::{ToolError, ToolReply, ToolSpec};
