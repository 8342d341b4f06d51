//! `plugin_tool`: the one canonical gateway tool (DESIGN §9, §10, §13).
//!
//! A request flows: strict, action-aware parameter parsing (the rules of [`Action::parse`],
//! `invalid_arguments`) → scope check ([`Caller`], `insufficient_scope`) → runner routing
//! (`plugin_runner_not_found`) → the action on a [`Host`](crate::host::Host) → a canonical output
//! object ([`ToolOutput`]). Failures share one shape with a stable code, a dispatch state and,
//! when the caller can do something, a [`Recovery`].
//!
//! `describe` creates a fresh opaque [`Binding`] that records the exact runner instance,
//! provider instance, tool and schema observation; `call` goes to exactly that instance and
//! never to a same-named tool elsewhere (`describe_required`, `plugin_replaced`,
//! `plugin_provider_unavailable` otherwise).
//!
//! Nothing in any output reveals a plugin's command, argv, cwd, environment, PID, stderr,
//! instance ids or raw parser text: outputs are built from ids, display names, admitted tool
//! definitions, stable codes and the runtime's safe messages.
//!
//! [`serve_lines`] is the stdio JSON-lines transport; it knows nothing of pipes to plugins.
//! [`HttpServer`] is the HTTP transport (bearer tokens from a [`Tokens`] file) and
//! [`HttpClient`] its client.

mod binding;
mod failure;
mod http;
mod output;
mod params;
mod recording;
mod scope;
mod service;
mod stdio;

pub use binding::{Binding, BindingStore, BindingTarget, BINDING_CAPACITY, BINDING_PREFIX};
pub use failure::{failure_output, Recovery};
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use http::fuzz_answer_body;
pub use http::{
    ClientError, HttpClient, HttpServer, HttpStopper, Tokens, TokensError, MAX_BODY_BYTES,
    TOOLS_CALL_PATH,
};
pub use output::MAX_DETAIL_BYTES;
pub use params::{Action, ActionKind, MAX_RECORDING_SESSION_ID_BYTES};
pub use recording::{RecordingEvent, RecordingHook};
pub use scope::{Caller, Scope, ScopeParseError, Scopes};
pub use service::{Gateway, ToolOutput, LOCAL_RUNNER};
pub use stdio::{serve_lines, MAX_IN_FLIGHT, TOOL_NAME, WORKER_STACK};
