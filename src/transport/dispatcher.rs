//! Admission and execution of transport requests: the in-flight bound and the panic guard.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};
use serde_json::Value;

use super::observe::Finished;
use crate::error::{Dispatch, Error, ErrorCode};
use crate::gateway::{ActionKind, Caller, Gateway, ToolOutput};
use crate::trace::TraceContext;

/// Most requests a transport handles at once; beyond it a request gets `gateway_saturated`.
pub const MAX_IN_FLIGHT: usize = 64;
/// Stack size of one request worker thread.
pub const WORKER_STACK: usize = 512 * 1024;

/// What every front end shares: one gateway and one in-flight bound of [`MAX_IN_FLIGHT`].
///
/// A front end takes a [`Slot`] with [`Dispatcher::try_admit`] before it does any work for a
/// request (none free: answer [`saturated`] at once, nothing is queued), runs the request with
/// [`Dispatcher::execute`] and drops the slot once the response is written. Cloning is cheap;
/// clones share the bound.
#[derive(Clone)]
pub struct Dispatcher {
    gateway: Arc<Gateway>,
    slots: Arc<Slots>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("in_flight", &self.in_flight())
            .finish_non_exhaustive()
    }
}

/// The in-flight counter: one per running request; [`Dispatcher::wait_idle`] waits for zero.
#[derive(Default)]
struct Slots {
    count: Mutex<usize>,
    idle: Condvar,
}

/// One admitted request. Dropping it frees the slot (also when the request's thread unwinds).
#[must_use = "the request is admitted only while its slot is held"]
pub struct Slot(Arc<Slots>);

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Slot")
    }
}

impl Dispatcher {
    /// A dispatcher over `gateway` with no request in flight.
    pub fn new(gateway: Arc<Gateway>) -> Dispatcher {
        Dispatcher {
            gateway,
            slots: Arc::default(),
        }
    }

    /// The gateway requests run on.
    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    /// Takes an in-flight slot, or `None` when [`MAX_IN_FLIGHT`] requests are running.
    pub fn try_admit(&self) -> Option<Slot> {
        let mut count = self.slots.count.lock();
        if *count >= MAX_IN_FLIGHT {
            drop(count);
            if let Some(observer) = super::observe::observer() {
                observer.saturated();
            }
            return None;
        }
        *count += 1;
        Some(Slot(self.slots.clone()))
    }

    /// The number of slots held.
    pub fn in_flight(&self) -> usize {
        *self.slots.count.lock()
    }

    /// Blocks until no slot is held (each request is bounded by its own deadline).
    pub fn wait_idle(&self) {
        let mut count = self.slots.count.lock();
        while *count > 0 {
            self.slots.idle.wait(&mut count);
        }
    }

    /// Runs one `plugin_tool` request. Should it panic (a bug), the answer is
    /// `gateway_internal_error` with dispatch `outcome_unknown`: the request is still answered.
    /// It runs in the trace context of this thread's request (a fresh one when none is open,
    /// see [`current_trace`](crate::current_trace)).
    pub fn execute(&self, caller: &Caller, params: &Value) -> ToolOutput {
        self.execute_traced(caller, params, None)
    }

    /// [`Dispatcher::execute`] in the trace context `trace` (the caller's, e.g. MCP
    /// `_meta.traceparent`): it replaces the one open on this thread, or opens one for the
    /// request; `None` keeps the open one or opens a fresh one.
    pub fn execute_traced(
        &self,
        caller: &Caller,
        params: &Value,
        trace: Option<TraceContext>,
    ) -> ToolOutput {
        let _scope = crate::trace::begin(trace);
        let observer = super::observe::observer();
        let started = Instant::now();
        let output = catch_unwind(AssertUnwindSafe(|| {
            self.gateway.plugin_tool(caller, params)
        }))
        .unwrap_or_else(|_| {
            log::error!("a plugin_tool request panicked");
            internal_error()
        });
        let finished = Finished::of(params, &output, started.elapsed());
        let dispatch = match (finished.dispatch, finished.action) {
            (Some(dispatch), _) => Some(dispatch.as_str()),
            (None, Some(ActionKind::Call)) if output.is_success() => Some("completed"),
            (None, _) => None,
        };
        crate::trace::note_finished(
            finished.action.map(ActionKind::as_str),
            dispatch,
            finished.elapsed.as_millis() as u64,
        );
        log::debug!(
            "plugin_tool: {} -> {}",
            finished.action.map_or("unknown", ActionKind::as_str),
            finished.outcome.as_str()
        );
        if let Some(observer) = observer {
            observer.request_finished(&finished);
        }
        output
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut count = self.0.count.lock();
        *count -= 1;
        if *count == 0 {
            self.0.idle.notify_all();
        }
    }
}

/// The answer to a request that found no free slot: `gateway_saturated`, not started.
pub fn saturated() -> ToolOutput {
    ToolOutput::failure(&Error::not_started(
        ErrorCode::GatewaySaturated,
        "too many requests in flight; try again when one finishes",
    ))
}

/// The answer to bytes that are not a request: `invalid_request`, not started.
pub fn invalid_request(message: &str) -> ToolOutput {
    ToolOutput::failure(&Error::not_started(ErrorCode::InvalidRequest, message))
}

/// The answer to a request whose handling panicked: `gateway_internal_error`, outcome unknown.
pub fn internal_error() -> ToolOutput {
    ToolOutput::failure(&Error::new(
        ErrorCode::Internal,
        Dispatch::OutcomeUnknown,
        "the gateway failed while handling this request; its outcome is unknown",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dispatcher() -> Dispatcher {
        Dispatcher::new(Arc::new(Gateway::new([])))
    }

    #[test]
    fn in_flight_counter_is_bounded_and_released() {
        let in_flight = dispatcher();
        let slots: Vec<Slot> = (0..MAX_IN_FLIGHT)
            .map(|_| in_flight.try_admit().unwrap())
            .collect();
        assert!(in_flight.try_admit().is_none());
        drop(slots);
        assert_eq!(in_flight.in_flight(), 0);
        in_flight.wait_idle();
        assert!(in_flight.try_admit().is_some());
    }

    #[test]
    fn clones_share_the_bound() {
        let a = dispatcher();
        let b = a.clone();
        let held: Vec<Slot> = (0..MAX_IN_FLIGHT).map(|_| a.try_admit().unwrap()).collect();
        assert!(b.try_admit().is_none());
        drop(held);
        assert!(b.try_admit().is_some());
    }

    #[test]
    fn failures_carry_their_typed_codes() {
        assert_eq!(saturated().code(), Some(ErrorCode::GatewaySaturated));
        assert_eq!(invalid_request("m").code(), Some(ErrorCode::InvalidRequest));
        let internal = internal_error();
        assert_eq!(internal.code(), Some(ErrorCode::Internal));
        assert_eq!(internal.to_json()["dispatch"], "outcome_unknown");
    }

    #[test]
    fn execute_answers_a_request() {
        let output =
            dispatcher().execute(&Caller::trusted(), &serde_json::json!({"action": "list"}));
        assert!(output.is_success());
        assert_eq!(output.code(), None);
    }
}
