//! One error type for the whole runtime.
//!
//! # The problem
//! A caller that sent a request to a plugin must know whether the effect of that request may
//! have happened. A write that failed halfway, a response that never came, a plugin that died
//! after reading its input: in each case the tool may or may not have run.
//!
//! # The mechanism
//! Every [`Error`] carries a stable [`ErrorCode`], a [`Dispatch`] state that says how far the
//! request got, and whether the failure retired the provider instance ([`Error::is_fatal`]).
//! `Dispatch::NotStarted` is only used when it is provable that no byte of the request reached
//! the plugin; anything else is `OutcomeUnknown` (never retry) or `Completed` (the plugin answered).
//!
//! # What it never contains
//! The message is written for operators and callers alike, so it never contains the plugin's
//! command, argv, cwd, environment, PID, stderr, raw parser errors or raw protocol lines.

use std::fmt;

use crate::diagnostic::Diagnostic;

mod local;
pub(crate) use local::exit_detail;

/// How far a failed request got before it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dispatch {
    /// Provably no byte of the request reached the plugin: safe to retry.
    NotStarted,
    /// The request may have been delivered; its effect may have happened. Never retry.
    OutcomeUnknown,
    /// The plugin answered, but the answer was an error or broke the contract.
    Completed,
}

impl Dispatch {
    /// The wire name: `not_started`, `outcome_unknown` or `completed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Dispatch::NotStarted => "not_started",
            Dispatch::OutcomeUnknown => "outcome_unknown",
            Dispatch::Completed => "completed",
        }
    }
}

impl fmt::Display for Dispatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The phase of provider admission in which a failure happened (`ready` on success).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// Reading or validating runner.toml.
    Config,
    /// Preparing the environment snapshot (profiles, init_script).
    Environment,
    /// Resolving the plugin executable.
    Executable,
    /// Spawning the process.
    Spawn,
    /// Setting up the stdio pipes and I/O threads.
    Stdio,
    /// The initialize handshake.
    Initialize,
    /// The tools/list request.
    ToolsList,
    /// Validating the tool list.
    Validation,
    /// Admitted.
    Ready,
}

impl Phase {
    /// The wire name of the phase.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Config => "config",
            Phase::Environment => "environment",
            Phase::Executable => "executable",
            Phase::Spawn => "spawn",
            Phase::Stdio => "stdio",
            Phase::Initialize => "initialize",
            Phase::ToolsList => "tools_list",
            Phase::Validation => "validation",
            Phase::Ready => "ready",
        }
    }
}

macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal, )*) => {
        /// Every stable error code of the runtime and the gateway.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( $(#[$doc])* $variant, )*
        }

        impl ErrorCode {
            /// The stable wire name of the code.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( ErrorCode::$variant => $name, )*
                }
            }

            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant, )* ];

            /// The code whose wire name is `name`.
            pub fn parse(name: &str) -> Option<ErrorCode> {
                match name {
                    $( $name => Some(ErrorCode::$variant), )*
                    _ => None,
                }
            }
        }
    };
}

error_codes! {
    /// Another request is running on this provider; requests are never queued.
    ProviderBusy => "plugin_provider_busy",
    /// The tool is not in the provider's frozen catalog.
    ToolUnavailable => "plugin_tool_unavailable",
    /// The schema observation recorded by a binding differs from the frozen tool.
    SchemaChanged => "plugin_schema_changed",
    /// The call arguments do not match the tool's input schema.
    ArgumentsSchemaInvalid => "plugin_arguments_schema_invalid",
    /// The request's total time budget ran out.
    Timeout => "plugin_timeout",
    /// The encoded request is larger than one protocol line.
    RequestTooLarge => "plugin_request_too_large",
    /// The plugin wrote something before it was asked.
    UnexpectedMessage => "plugin_unexpected_message",
    /// Writing to the plugin's stdin failed.
    StdinFailed => "plugin_stdin_failed",
    /// The plugin closed its stdout or exited.
    Eof => "plugin_eof",
    /// The plugin wrote a line that is not one JSON value.
    MalformedJson => "plugin_malformed_json",
    /// The plugin wrote a line longer than 1 MiB.
    MessageTooLarge => "plugin_message_too_large",
    /// Reading the plugin's stdout failed.
    StdoutFailed => "plugin_stdout_failed",
    /// The response envelope broke JSON-RPC 2.0.
    ProtocolError => "plugin_protocol_error",
    /// The response id is not a non-negative integer.
    ResponseIdInvalid => "plugin_response_id_invalid",
    /// The response id is below the expected one.
    DuplicateResponseId => "plugin_duplicate_response_id",
    /// The response id is above the expected one.
    UnknownResponseId => "plugin_unknown_response_id",
    /// The host is shutting down. (The wire name keeps the contract's word; there is no
    /// separate manager: the `Host` is what stops.)
    HostStopping => "plugin_manager_stopping",
    /// The plugin answered with a well-formed JSON-RPC error.
    RpcError => "plugin_rpc_error",
    /// The tools/call result broke the result contract.
    ResultInvalid => "plugin_result_invalid",
    /// structuredContent is missing or does not match the declared outputSchema.
    OutputSchemaViolation => "plugin_output_schema_violation",
    /// The provider instance is no longer committed.
    StaleProvider => "stale_plugin_provider",
    /// The provider instance was retired after a fault.
    ProviderUnavailable => "plugin_provider_unavailable",
    /// runner.toml could not be read.
    ConfigReadFailed => "plugin_config_read_failed",
    /// runner.toml is not valid TOML.
    ConfigParseFailed => "plugin_config_parse_failed",
    /// runner.toml is valid TOML but breaks the model.
    ConfigInvalid => "plugin_config_invalid",
    /// No provider with that id is configured.
    NotConfigured => "plugin_not_configured",
    /// The environment snapshot could not be prepared.
    EnvironmentPrepareFailed => "plugin_environment_prepare_failed",
    /// The plugin executable was not found or is not executable.
    ExecutableUnavailable => "plugin_executable_unavailable",
    /// The plugin executable is of a kind that is not supported (Windows `.cmd`/`.bat`; not
    /// produced on Unix).
    ExecutableUnsupported => "plugin_executable_unsupported",
    /// The process could not be spawned.
    SpawnFailed => "plugin_spawn_failed",
    /// initialize answered with another protocol version.
    ProtocolVersionMismatch => "plugin_protocol_version_mismatch",
    /// initialize answered with something that is not a valid result.
    InitializeInvalid => "plugin_initialize_invalid",
    /// tools/list answered with an invalid tool list (carries a diagnostic).
    ToolsListInvalid => "plugin_tools_list_invalid",
    /// Another check or reload is running.
    CheckBusy => "plugin_check_busy",
    /// Another check or reload is running.
    ReloadBusy => "plugin_reload_busy",
    /// plugin_tool parameters are invalid for the action.
    InvalidArguments => "invalid_arguments",
    /// The caller lacks the scope the action needs.
    InsufficientScope => "insufficient_scope",
    /// The binding is unknown or was evicted: describe the tool again.
    DescribeRequired => "describe_required",
    /// The binding's runner or provider instance was replaced.
    Replaced => "plugin_replaced",
    /// No runner with that id.
    RunnerNotFound => "plugin_runner_not_found",
    /// A remote runner could not be reached (no connection, its circuit is open, or it refused
    /// the gateway's credential): nothing was sent to it.
    RunnerUnavailable => "plugin_runner_unavailable",
    /// A request was sent to a remote runner and its answer was lost or timed out.
    GatewayTimeout => "plugin_gateway_timeout",
    /// Too many gateway requests in flight.
    GatewaySaturated => "gateway_saturated",
    /// Too many requests in flight to one remote runner (its own cap): nothing was sent.
    RunnerSaturated => "plugin_runner_saturated",
    /// The root of a project-bound binding changed since the describe (moved, replaced,
    /// re-created): the call was not dispatched.
    ProjectChanged => "plugin_project_changed",
    /// The project does not exist or cannot be read (at describe), or its root is gone (at a
    /// call of a project-bound binding); also a runner that cannot bind tools to projects.
    ProjectUnavailable => "plugin_project_unavailable",
    /// The project and the runner differ: the plugin does not work in that project root.
    ProjectMismatch => "plugin_project_mismatch",
    /// A transport request line is not a valid request.
    InvalidRequest => "invalid_request",
    /// The gateway itself failed (no randomness for a binding, a panicked request handler).
    Internal => "gateway_internal_error",
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A runtime failure: a stable code, how far the request got, whether the provider was retired,
/// and a message that is safe to show to any caller.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    code: ErrorCode,
    dispatch: Dispatch,
    fatal: bool,
    message: String,
    phase: Option<Phase>,
    /// The admission diagnostic and the local detail. Boxed: rare, and an error travels by
    /// value through every layer of a call.
    extra: Option<Box<Extra>>,
}

/// The rare parts of an [`Error`].
#[derive(Debug, Clone, PartialEq, Default)]
struct Extra {
    diagnostic: Option<Diagnostic>,
    local_detail: Option<String>,
}

impl Error {
    /// A new error. `message` must not contain command, argv, cwd, env, PID or stderr.
    pub fn new(code: ErrorCode, dispatch: Dispatch, message: impl Into<String>) -> Error {
        Error {
            code,
            dispatch,
            fatal: false,
            message: message.into(),
            phase: None,
            extra: None,
        }
    }

    /// A not-started error that leaves the provider live.
    pub fn not_started(code: ErrorCode, message: impl Into<String>) -> Error {
        Error::new(code, Dispatch::NotStarted, message)
    }

    /// Marks the error as having retired the provider instance.
    pub(crate) fn retiring(mut self) -> Error {
        self.fatal = true;
        self
    }

    /// Sets the admission phase.
    pub(crate) fn in_phase(mut self, phase: Phase) -> Error {
        self.phase = Some(phase);
        self
    }

    /// Attaches an admission diagnostic (only for `plugin_tools_list_invalid`).
    pub(crate) fn with_diagnostic(mut self, diagnostic: Diagnostic) -> Error {
        self.extra.get_or_insert_with(Box::default).diagnostic = Some(diagnostic);
        self
    }

    /// Attaches what only a local operator may read (see [`Error::local_detail`]).
    pub(crate) fn with_local_detail(mut self, detail: impl Into<String>) -> Error {
        self.extra.get_or_insert_with(Box::default).local_detail = Some(detail.into());
        self
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// How far the request got.
    pub fn dispatch(&self) -> Dispatch {
        self.dispatch
    }

    /// True when this failure retired the provider instance.
    pub fn is_fatal(&self) -> bool {
        self.fatal
    }

    /// The safe, human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The admission phase, for admission failures.
    pub fn phase(&self) -> Option<Phase> {
        self.phase
    }

    /// The admission diagnostic, for `plugin_tools_list_invalid`.
    pub fn diagnostic(&self) -> Option<&Diagnostic> {
        self.extra.as_ref()?.diagnostic.as_ref()
    }

    /// What happened, in more words than the message, for the operator of this host only: the
    /// exit status or signal of a plugin that died, the value of a timeout and the key that
    /// sets it, the keyword and JSON Pointer of a schema the profile refused, where a result
    /// broke its output schema. The host's log and the in-process CLI show it; it never goes
    /// into a `plugin_tool` output (whose messages keep the bounded vocabulary).
    pub fn local_detail(&self) -> Option<&str> {
        self.extra.as_ref()?.local_detail.as_deref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.code, self.message, self.dispatch)
    }
}

impl std::error::Error for Error {}

/// The runtime's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_unique_wire_names() {
        let mut names: Vec<_> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    #[test]
    fn codes_parse_from_their_wire_names() {
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
        }
        assert_eq!(ErrorCode::parse("unauthorized"), None);
    }

    #[test]
    fn display_names_code_message_and_dispatch() {
        let e = Error::not_started(ErrorCode::ProviderBusy, "another request is running");
        assert_eq!(
            e.to_string(),
            "plugin_provider_busy: another request is running (not_started)"
        );
        assert!(!e.is_fatal());
    }
}
