//! The `tools/call` requests in flight on one stream, by id (its raw JSON text, so `1e2` and
//! `100` are different ids, as they were written), for `notifications/cancelled`.
//!
//! Cancelling drops the response of a request; it never interrupts the call, whose outcome
//! would otherwise become unknown. An id that is already in flight cannot be used again until
//! its response was sent (or dropped). Entries exist only while a call runs, so the map holds at
//! most as many entries as calls in flight.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::jsonrpc::RequestId;

/// The calls in flight, by request id.
#[derive(Debug, Default)]
pub struct PendingCalls {
    calls: Mutex<HashMap<String, Arc<AtomicBool>>>,
}

/// One registered call; [`Ticket::finish`] says whether its response may be sent.
#[derive(Debug)]
pub struct Ticket {
    key: String,
    cancelled: Arc<AtomicBool>,
    owner: Arc<PendingCalls>,
}

impl PendingCalls {
    /// Registers a call; `None` when a call with the same id is still in flight.
    pub fn register(self: &Arc<Self>, id: &RequestId) -> Option<Ticket> {
        let key = id.as_json().to_string();
        let cancelled = Arc::new(AtomicBool::new(false));
        let mut calls = self.calls.lock();
        if calls.contains_key(&key) {
            return None;
        }
        calls.insert(key.clone(), cancelled.clone());
        Some(Ticket {
            key,
            cancelled,
            owner: self.clone(),
        })
    }

    /// Marks the call with this id cancelled; true when such a call was in flight.
    pub fn cancel(&self, id: &RequestId) -> bool {
        match self.calls.lock().get(id.as_json()) {
            Some(flag) => {
                flag.store(true, Ordering::SeqCst);
                true
            }
            None => false,
        }
    }

    /// The number of calls in flight.
    pub fn len(&self) -> usize {
        self.calls.lock().len()
    }

    /// True when no call is in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Ticket {
    /// Ends the call: true when its response should be sent (it was not cancelled).
    pub fn finish(self) -> bool {
        !self.cancelled.load(Ordering::SeqCst)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.owner.calls.lock().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn id(value: Value) -> RequestId {
        RequestId::from_value(&value)
    }

    #[test]
    fn cancel_drops_only_that_response() {
        let pending = Arc::new(PendingCalls::default());
        let a = pending.register(&id(json!(1))).unwrap();
        let b = pending.register(&id(json!("1"))).unwrap();
        assert!(
            pending.register(&id(json!(1))).is_none(),
            "duplicate id in flight"
        );
        assert!(pending.cancel(&id(json!(1))));
        assert!(!pending.cancel(&id(json!(2))));
        assert!(!a.finish());
        assert!(b.finish());
        assert!(pending.is_empty());
        assert!(
            !pending.cancel(&id(json!(1))),
            "finished calls cannot be cancelled"
        );
        assert!(pending.register(&id(json!(1))).is_some());
    }
}
