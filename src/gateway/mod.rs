//! `plugin_tool`: the one canonical gateway tool (docs/PROTOCOL.md §8, plugin_tool).
//!
//! A request flows: strict, action-aware parameter parsing (`invalid_arguments`) → scope check
//! ([`Caller`], `insufficient_scope`) → runner routing (`plugin_runner_not_found`) → the action on
//! a [`Host`](crate::host::Host) → a typed [`Outcome`] in a [`ToolOutput`], whose one JSON form
//! ([`ToolOutput::to_json`]) every JSON front sends. Failures share one
//! shape with a stable code, a dispatch state and, when the caller can do something, a
//! [`Recovery`].
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
//! A runner is a [`Host`](crate::host::Host) in this process or a [`RemoteRunner`]: another
//! machine's `serve`, listed in a runners file ([`load_runners`]) and reached through a
//! [`RunnerLink`] (the HTTP one is `transport::http::remote_runner`). For a remote runner the
//! gateway forwards the action, mints its own binding for a remote `describe` (the remote's
//! binding never reaches the caller), validates and rebuilds every answer as strictly as a
//! local provider's (`relay`), classifies failures across the hop (`plugin_runner_unavailable`,
//! `plugin_gateway_timeout`, `plugin_runner_saturated`) and keeps a circuit breaker and an
//! in-flight cap per runner (docs/PROTOCOL.md, several runners).
//!
//! The gateway knows nothing of transports: the front ends that carry `plugin_tool` requests
//! (stdio JSON lines, HTTP) live in [`crate::transport`].

mod binding;
mod breaker;
mod failure;
mod outcome;
mod output;
pub(crate) mod params;
mod project;
mod recording;
mod relay;
mod remote;
mod runners;
mod scope;
mod sealed;
mod service;

pub use binding::{Binding, BindingStore, BindingTarget, BINDING_CAPACITY, BINDING_PREFIX};
pub use breaker::{BREAKER_STATES, FAILURE_THRESHOLD, OPEN_FOR};
pub use failure::Recovery;
pub use outcome::{
    CatalogOutcome, CheckOutcome, Described, DescribedProject, Outcome, ProviderDetail,
    ProviderList, ProviderStatus, ProviderSummary, Received, ReloadFailure, ReloadOutcome,
    RunnerSummary, ToolFailure, ToolSummary,
};
pub use output::failure_output;
pub use output::{ToolOutput, MAX_DETAIL_BYTES};
pub use params::{Action, ActionKind, MAX_PROJECT_BYTES, MAX_RECORDING_SESSION_ID_BYTES};
pub use recording::{RecordingEvent, RecordingHook};
pub use relay::MAX_RELAYED_MESSAGE_BYTES;
pub use remote::{
    CallAnswer, LinkAnswer, LinkFailure, RemoteRunner, RemoteSlots, RunnerLink, REMOTE_RUNNER,
};
pub use runners::{
    load_runners, parse_runners, valid_id, RunnerEntry, RunnersError, TokenSource,
    DEFAULT_RUNNER_IN_FLIGHT, LOCAL_RUNNER, MAX_RUNNERS, MAX_RUNNER_ID_BYTES, MAX_RUNNER_IN_FLIGHT,
    MAX_RUNNER_NAME_BYTES, REMOTE_IN_FLIGHT,
};
pub use scope::{Caller, Scope, ScopeParseError, Scopes};
pub use sealed::{observation_bytes, observation_text, BindingSealer, SealedTarget};
pub use service::{Gateway, LocalOutput, SEALED_TOOL_CACHE};
