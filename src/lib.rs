//! Synchronous host for `webcodex-plugin-v1` Native Tool Plugins.
//!
//! A plugin is a trusted local program that speaks newline-delimited JSON-RPC 2.0 on its
//! stdin/stdout. A [`Host`] starts every configured plugin once (in parallel), admits and
//! freezes its tool catalog, and serves calls; [`Gateway`] exposes all of it as the one
//! canonical tool `plugin_tool` (`list` → `describe` → `call`, `check`, `reload`). There is no
//! async runtime: each provider is a process with its own I/O threads, and the calling thread
//! enforces its own deadline.
//!
//! Every failure is an [`Error`] with a stable [`ErrorCode`] and a [`Dispatch`] that says whether
//! the request may have taken effect: `not_started` (provably nothing reached the plugin),
//! `outcome_unknown` (never retry) or `completed` (the plugin answered).
//!
//! [`serve_lines`] carries `plugin_tool` requests to the gateway as JSON lines on any reader and
//! writer; [`Gateway::act_on`] takes a typed [`Action`] where a program builds its requests itself. This crate is the runtime alone: HTTP, MCP, operations and the `webcodex-plugin`
//! command line are crates of their own in the same workspace (`webcodex-plugin-http`,
//! `webcodex-plugin-mcp`, `webcodex-plugin-ops`, `webcodex-plugin-cli`).
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use webcodex_plugin_host::{Caller, ConfigSource, Gateway, Host, HostOptions};
//!
//! // A runner with the repository's Python example plugin (standard library only).
//! let config = webcodex_plugin_host::parse_runner_config(
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
mod catalog;
mod diagnostic;
mod env;
mod error;
mod frame;
mod gateway;
mod host;
mod provider;
mod random;
mod spawn;
#[allow(unsafe_code)]
mod sys;
mod trace;
mod transport;

// The whole public face of the crate: every module is private, and what an embedder and the
// workspace's other crates (HTTP, MCP, operations, the CLI) use is named here once, by area.

/// Tool definitions, Schema Profile v1, tool results and the frozen catalog.
pub use catalog::{
    admit_tools_list, validate_tool_result, Diagnostic, DiagnosticCode, FrozenCatalog, ResultFault,
    Schema, SchemaFault, SchemaMismatch, Tool, ToolHints, ToolResult, DIAGNOSTIC_FIELDS,
    MAX_ARGUMENTS_BYTES, MAX_TOOLS,
};
/// `runner.toml`, the environment a plugin starts with, and executable resolution.
pub use env::{
    is_sensitive_variable, load_runner_config, parse_runner_config, prepare_environment,
    resolve_executable, EnvSnapshot, PluginsConfig, ProfileConfig, ProviderConfig, Restart,
    RestartPolicy, RunnerConfig, SecretNames, ShellConfig, DEFAULT_MAX_PROVIDERS,
    DEFAULT_REQUEST_TIMEOUT, DEFAULT_RESTART_MAX, INIT_SCRIPT_LIMIT, MAX_SECRET_NAMES,
    RESTART_MAX_RANGE,
};
/// Failures: the error, its stable code, whether the request may have taken effect, the phase.
pub use error::{Dispatch, Error, ErrorCode, Phase, Result};
/// The protocol's line bound and version string.
pub use frame::{MAX_LINE_BYTES, PROTOCOL_VERSION};
/// `plugin_tool`: typed and JSON requests, scopes, bindings (stored or sealed), remote runners and the typed outcomes.
pub use gateway::{
    failure_output, load_runners, observation_bytes, observation_text, parse_runners,
    valid_id as valid_runner_id, Action, ActionKind, Binding, BindingSealer, BindingStore,
    BindingTarget, CallAnswer, Caller, CatalogOutcome, CheckOutcome, Described, DescribedProject,
    Gateway, LinkAnswer, LinkFailure, LocalOutput, Outcome, ProviderDetail, ProviderList,
    ProviderStatus, ProviderSummary, Received, RecordingEvent, RecordingHook, Recovery,
    ReloadFailure, ReloadOutcome, RemoteRunner, RemoteSlots, RunnerEntry, RunnerLink,
    RunnerSummary, RunnersError, Scope, ScopeParseError, Scopes, SealedTarget, TokenSource,
    ToolFailure, ToolOutput, ToolSummary, BINDING_CAPACITY, BINDING_PREFIX, BREAKER_STATES,
    DEFAULT_RUNNER_IN_FLIGHT, FAILURE_THRESHOLD, LOCAL_RUNNER, MAX_DETAIL_BYTES, MAX_PROJECT_BYTES,
    MAX_RECORDING_SESSION_ID_BYTES, MAX_RELAYED_MESSAGE_BYTES, MAX_RUNNERS, MAX_RUNNER_ID_BYTES,
    MAX_RUNNER_IN_FLIGHT, MAX_RUNNER_NAME_BYTES, OPEN_FOR, REMOTE_IN_FLIGHT, REMOTE_RUNNER,
    SEALED_TOOL_CACHE,
};
/// One runner: its committed provider set, calls, check, reload, restarts and project roots.
pub use host::{
    valid_project_target, CheckReport, ConfigSource, Host, HostOptions, InstanceCall,
    ProjectCatalog, ProjectTarget, ProjectTool, ProviderEntry, ProviderSet, ProviderState,
    ReloadReport, RunnerId, DEFAULT_PROJECT_CATALOG_BYTES, PROJECT_TARGET_PREFIX,
    RESTART_BACKOFF_BASE, RESTART_BACKOFF_CAP, RESTART_RESET_AFTER,
};
/// One plugin process without a host: what `webcodex-plugin bench --command` measures.
pub use provider::{retirement_counts, InstanceId, LaunchSpec, Provider, ProviderSpec, StderrLine};
/// The one source of random ids (the operating system's generator).
pub use random::random_bytes;
/// The W3C trace context of the request a thread runs.
pub use trace::{
    begin as begin_trace, current as current_trace, current_fields as current_trace_fields,
    RequestFields, TraceContext, TraceScope, TRACEPARENT,
};
/// What a front reports about each request it finished.
pub use transport::observe::{
    install_observer, observer as installed_observer, Finished, Observer, Outcome as RequestOutcome,
};
/// What every front shares: requests and responses, the in-flight bound, the stdio front.
pub use transport::{
    drive_lines, first_byte as first_json_byte, internal_error as internal_error_output,
    invalid_request as invalid_request_output, parse_object as parse_json_object, parse_request,
    response_body, saturated as saturated_output, serve_lines, Dispatcher, Framing, Input,
    LineWriter, Present, Rejection, Request, RequestId, ResponseBody, Slot, TypedResponseBody,
    MAX_IN_FLIGHT, TOOL_NAME, WORKER_STACK,
};

/// The README's embedding example (section "Library"), compiled as a doctest;
/// `tests/readme.rs` keeps it equal to the README's copy.
///
/// ```rust,no_run
/// use std::sync::Arc;
/// use serde_json::json;
/// use webcodex_plugin_host::Outcome;
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
