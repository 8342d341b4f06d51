//! The recording hook: lets an embedder record managed actions under an explicit session.
//!
//! The hook runs only for `call`, `check` and `reload` requests that carry an explicit
//! `recording_session_id`; the gateway never infers a session. It runs on the request's own
//! thread after the action finished, so it must be quick; a panic in it is caught and logged.

use crate::error::{Dispatch, ErrorCode};

use super::params::ActionKind;

/// One recorded action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingEvent {
    /// `call`, `check` or `reload`.
    pub action: ActionKind,
    /// The caller's explicit `recording_session_id`.
    pub session_id: String,
    /// The runner, when known (a call through an unknown binding has none).
    pub runner: Option<String>,
    /// The provider id, when the action names one.
    pub plugin: Option<String>,
    /// The tool name (calls through a known binding only).
    pub tool: Option<String>,
    /// Whether the action succeeded (a check with `ready: false` and a reload with failures
    /// are successes).
    pub success: bool,
    /// `completed` on success, else the failure's dispatch state.
    pub dispatch: Dispatch,
    /// The failure's code, on failure.
    pub error_code: Option<ErrorCode>,
}

/// The embedder's recording callback.
pub type RecordingHook = Box<dyn Fn(&RecordingEvent) + Send + Sync>;
