//! Synchronous host for `webcodex-plugin-v1` Native Tool Plugins.
//!
//! A plugin is a trusted local program that speaks newline-delimited JSON-RPC 2.0 on its
//! stdin/stdout. A [`host::Host`] starts every configured plugin once (in parallel), admits and
//! freezes its tool catalog, and serves calls; [`gateway::Gateway`] exposes all of it as the one
//! canonical tool `plugin_tool` (`list` → `describe` → `call`, `check`, `reload`). There is no
//! async runtime: each provider is a process with its own I/O threads, and the calling thread
//! enforces its own deadline.
//!
//! Every failure is an [`Error`] with a stable [`ErrorCode`] and a [`Dispatch`] that says whether
//! the request may have taken effect: `not_started` (provably nothing reached the plugin),
//! `outcome_unknown` (never retry) or `completed` (the plugin answered).
//!
//! [`transport`] carries `plugin_tool` requests to the gateway as JSON lines on any reader and
//! writer. This crate is the runtime alone: HTTP, MCP, operations and the `webcodex-plugin`
//! command line are crates of their own in the same workspace (`webcodex-plugin-http`,
//! `webcodex-plugin-mcp`, `webcodex-plugin-ops`, `webcodex-plugin-cli`).
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use webcodex_plugin_host::gateway::{Caller, Gateway};
//! use webcodex_plugin_host::host::{ConfigSource, Host, HostOptions};
//!
//! // A runner with the repository's Python example plugin (standard library only).
//! let config = webcodex_plugin_host::env::parse_runner_config(
//!     r#"
//!     [[plugins.providers]]
//!     id = "notes"
//!     name = "Notes"
//!     command = "python3"
//!     args = ["examples/python/notes_plugin.py"]
//!     "#,
//!     8,
//! )?;
//! let host = Host::start(ConfigSource::Fixed(config), HostOptions::default())?;
//! let gateway = Gateway::single(Arc::new(host));
//! let caller = Caller::trusted();
//!
//! // describe gives a fresh binding; call goes to exactly that provider instance and tool.
//! let described = gateway.plugin_tool(
//!     &caller,
//!     &json!({"action": "describe", "runner": "local", "plugin": "notes", "tool": "word_count"}),
//! );
//! let binding = described.binding().expect("described").to_string();
//! let called = gateway.plugin_tool(
//!     &caller,
//!     &json!({"action": "call", "binding": binding, "arguments": {"text": "one two three"}}),
//! );
//! assert!(called.is_success());
//! let result = called.call_result().expect("a tool result");
//! assert_eq!(result.structured_content().unwrap()["words"], 3);
//! // The canonical JSON object, as every JSON front sends it.
//! assert_eq!(called.to_json()["structuredContent"]["words"], 3);
//!
//! // Arguments that break the input schema never reach the plugin.
//! let rejected = gateway.plugin_tool(
//!     &caller,
//!     &json!({"action": "call", "binding": binding, "arguments": {"text": 3}}),
//! );
//! assert_eq!(rejected.dispatch(), Some(webcodex_plugin_host::Dispatch::NotStarted));
//! gateway.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]
// `unsafe` lives only in `sys` (every system call) and in the hand-tuned byte code of
// `frame::fast`, which allows it by name; every other module is refused it.
#![deny(unsafe_code)]

#[doc(hidden)]
pub mod __private;
pub mod catalog;
mod diagnostic;
pub mod env;
pub mod error;
pub(crate) mod frame;
pub mod gateway;
pub mod host;
pub(crate) mod provider;
mod random;
mod spawn;
#[allow(unsafe_code)]
mod sys;
pub mod trace;
pub mod transport;

pub use error::{Dispatch, Error, ErrorCode, Phase, Result};
/// The longest protocol line in either direction (1 MiB), without its newline.
pub use frame::MAX_LINE_BYTES;
/// The protocol's version string.
pub use frame::PROTOCOL_VERSION;
pub use gateway::{Caller, Gateway, ToolOutput};
pub use host::{ConfigSource, Host, HostOptions};
/// One plugin process without a host: what `webcodex-plugin bench --command` measures.
pub use provider::{retirement_counts, InstanceId, LaunchSpec, Provider, ProviderSpec, StderrLine};
/// The one source of random ids (the operating system's generator).
pub use random::random_bytes;

/// The README's embedding example (section "Library"), compiled as a doctest;
/// `tests/readme.rs` keeps it equal to the README's copy.
///
/// ```rust,no_run
/// use std::sync::Arc;
/// use serde_json::json;
/// use webcodex_plugin_host::gateway::Outcome;
/// use webcodex_plugin_host::{Caller, ConfigSource, Gateway, Host, HostOptions};
///
/// let host = Host::start(ConfigSource::File("runner.toml".into()), HostOptions::default())?;
/// let gateway = Gateway::single(Arc::new(host));
/// let out = gateway.plugin_tool(&Caller::trusted(), &json!({"action": "list", "runner": "local"}));
/// if let Outcome::Providers(list) = out.outcome() {
///     for plugin in &list.plugins {
///         println!("{} ({:?})", plugin.plugin, plugin.status);
///     }
/// }
/// println!("{}", out.to_json());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(doctest)]
pub struct ReadmeEmbeddingExample;
