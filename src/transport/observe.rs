//! The operator's view of the front ends: one process-wide [`Observer`] (the admin listener's
//! metrics, installed by `serve --admin-listen`) hears of every `plugin_tool` request the
//! [`Dispatcher`](super::Dispatcher) runs or refuses, of every HTTP answer and of every runner
//! link the front accepts. With none
//! installed (the default) a hook costs one atomic load.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::error::{Dispatch, ErrorCode};
use crate::gateway::{ActionKind, ToolOutput};

/// How a finished request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The action succeeded (a tool result with `isError: false`, or any other action).
    Success,
    /// A call completed and the tool reported `isError: true`.
    ToolError,
    /// The action failed (a failure object with a code).
    Failure,
}

impl Outcome {
    /// The label value: `success`, `tool_error` or `failure`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::ToolError => "tool_error",
            Outcome::Failure => "failure",
        }
    }
}

/// One finished `plugin_tool` request, as an observer sees it: names from closed sets only,
/// never a caller's string.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Finished {
    /// The action, when `params.action` names one.
    pub action: Option<ActionKind>,
    /// How it ended.
    pub outcome: Outcome,
    /// The failure's code, on failure.
    pub code: Option<ErrorCode>,
    /// The failure's dispatch state, on failure.
    pub dispatch: Option<Dispatch>,
    /// How long the gateway took.
    pub elapsed: Duration,
}

impl Finished {
    /// What `output` says about a request with `params` that took `elapsed`.
    pub fn of(params: &Value, output: &ToolOutput, elapsed: Duration) -> Finished {
        let action = params
            .get("action")
            .and_then(Value::as_str)
            .and_then(|name| ActionKind::ALL.into_iter().find(|a| a.as_str() == name));
        let outcome = match (output.is_success(), output.is_tool_error()) {
            (true, true) => Outcome::ToolError,
            (true, false) => Outcome::Success,
            (false, _) => Outcome::Failure,
        };
        let dispatch = output.dispatch();
        Finished {
            action,
            outcome,
            code: output.code(),
            dispatch,
            elapsed,
        }
    }
}

/// What an operator's instrumentation hears from the front ends. Called on the request's own
/// thread: keep it quick and never block.
pub trait Observer: Send + Sync + 'static {
    /// A `plugin_tool` request finished (any front end).
    fn request_finished(&self, finished: &Finished);
    /// A request found no free in-flight slot (`gateway_saturated`, not started).
    fn saturated(&self);
    /// The HTTP server answered a request on `path` with `status`.
    fn http_answered(&self, path: &str, status: u16);
    /// The HTTP server began serving a connection.
    fn connection_opened(&self);
    /// A served connection ended.
    fn connection_closed(&self);
    /// The front accepted a runner link for `runner` (a runner token's id, from the
    /// configuration): its first, or a later one (the runner came back or replaced its link).
    fn link_accepted(&self, runner: &str) {
        let _ = runner;
    }
}

static OBSERVER: OnceLock<Arc<dyn Observer>> = OnceLock::new();

/// Installs the process's observer; false when one is already installed (it stays).
pub fn install_observer(observer: Arc<dyn Observer>) -> bool {
    OBSERVER.set(observer).is_ok()
}

/// The installed observer, if any.
pub fn observer() -> Option<&'static dyn Observer> {
    OBSERVER.get().map(|o| &**o)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::Error;

    #[test]
    fn finished_reads_closed_sets_only() {
        let ok = Finished::of(
            &json!({"action": "call"}),
            &ToolOutput::received(true, json!({"content": [], "isError": true})),
            Duration::ZERO,
        );
        assert_eq!(ok.action, Some(ActionKind::Call));
        assert_eq!(ok.outcome, Outcome::ToolError);
        let failed = Finished::of(
            &json!({"action": "no such action"}),
            &ToolOutput::failure(&Error::new(
                ErrorCode::Timeout,
                Dispatch::OutcomeUnknown,
                "m",
            )),
            Duration::ZERO,
        );
        assert_eq!(failed.action, None);
        assert_eq!(failed.outcome, Outcome::Failure);
        assert_eq!(failed.code, Some(ErrorCode::Timeout));
        assert_eq!(failed.dispatch, Some(Dispatch::OutcomeUnknown));
    }
}
