//! Write `webcodex-plugin-v1` Native Tool Plugins in Rust: define tools, serve them over stdio.
//!
//! A plugin is a program that a host (`webcodex-plugin-host`) starts as a child process and talks
//! to in newline-delimited JSON-RPC 2.0 on its stdin and stdout: `initialize`, `tools/list`
//! once, then any number of `tools/call`. Getting that loop right by hand (one response per line,
//! nothing else on stdout, a bad line that must not end the session, a bound on every line) is
//! the part this crate does for you.
//!
//! A [`Plugin`] is a name plus a list of tools, each a [`ToolSpec`] (the definition sent in
//! `tools/list`) and a handler that turns the call arguments into a [`ToolReply`] or a
//! [`ToolError`]. [`Plugin::serve`] then answers requests until its input ends;
//! [`Plugin::serve_stdio`] does the same on the process's stdin and stdout:
//!
//! ```no_run
//! use serde_json::{json, Value};
//! use webcodex_plugin_sdk::{Plugin, ToolError, ToolReply, ToolSpec};
//!
//! fn main() -> std::io::Result<()> {
//!     Plugin::new("greeter")
//!         .tool(
//!             ToolSpec::new(
//!                 "greet",
//!                 json!({
//!                     "type": "object",
//!                     "properties": {"name": {"type": "string"}},
//!                     "required": ["name"],
//!                     "additionalProperties": false
//!                 }),
//!             ),
//!             |args| match args.get("name").and_then(Value::as_str) {
//!                 Some(name) => Ok(ToolReply::text(format!("hello, {name}"))),
//!                 None => Err(ToolError::new("name must be a string")),
//!             },
//!         )
//!         .serve_stdio()
//! }
//! ```
//!
//! What the SDK guarantees to the host:
//! - stdout carries only protocol lines, one response per line, flushed after each;
//! - an input line that is not a JSON object is ignored, and one longer than
//!   [`MAX_LINE_BYTES`] is skipped up to its newline, so a bad line never ends the session;
//! - a [`ToolError`] or a panicking handler never kills the plugin: the first becomes a result
//!   with `isError: true`, the second a JSON-RPC internal error (the panic message goes to
//!   stderr through the standard panic hook).
//!
//! Caveats: the SDK does not validate tool names, schemas or result sizes against the protocol
//! bounds: the host does that at admission and on every result, and reports the first violation
//! with a stable code (`webcodex-plugin check` shows it). Requests are served one at a time, in
//! order, on the thread that calls `serve`.
//!
//! The protocol's line framing lives here too, for both ends: [`PROTOCOL_VERSION`],
//! [`MAX_LINE_BYTES`] and the bounded reader [`read_line`] are what the host reads its own
//! request lines with. [`example_plugin`] is the built-in plugin behind the `demo` and `bench`
//! commands. The crate depends on `serde`, `serde_json` and `memchr` only.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod example;
mod plugin;
mod response;
mod tool;
mod wire;

#[cfg(test)]
mod tests;

pub use example::example_plugin;
pub use plugin::Plugin;
pub use tool::{ToolError, ToolReply, ToolSpec};
pub use wire::{read_line, Line, MAX_LINE_BYTES, PROTOCOL_VERSION};

/// The line buffer's bound and growth, which the host's own line reader (`LineReader`, where
/// every fault ends the connection) shares with [`read_line`]. Not part of the plugin API.
#[doc(hidden)]
pub mod framing {
    pub use crate::wire::{push_capped, MAX_BUFFERED};
}

/// This crate's own sources: what `webcodex-plugin init --lang rust` writes beside a new plugin
/// as a local path crate, so that the plugin builds from crates.io alone. Not part of the plugin
/// API.
#[doc(hidden)]
pub mod source {
    /// This crate's version.
    pub const VERSION: &str = env!("CARGO_PKG_VERSION");

    /// Every source file of this crate as `(path, text)`, paths relative to its directory.
    pub const FILES: &[(&str, &str)] = &[
        ("src/lib.rs", include_str!("lib.rs")),
        ("src/example.rs", include_str!("example.rs")),
        ("src/plugin.rs", include_str!("plugin.rs")),
        ("src/response.rs", include_str!("response.rs")),
        ("src/tool.rs", include_str!("tool.rs")),
        ("src/wire.rs", include_str!("wire.rs")),
        ("src/tests.rs", include_str!("tests.rs")),
    ];
}
