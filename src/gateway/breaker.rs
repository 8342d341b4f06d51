//! The circuit breaker of one remote runner.
//!
//! Closed: every request goes through; [`FAILURE_THRESHOLD`] consecutive transport failures (no
//! connection, or an answer lost after sending) open it. Open: for [`OPEN_FOR`] every request
//! fails fast without being sent. Then the first request is let through as the probe while every
//! other request still fails fast: an answer (any answer, a failure object included) closes the
//! circuit, a transport failure opens it for another [`OPEN_FOR`]. An answer resets the count.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Consecutive transport failures that open the circuit.
pub const FAILURE_THRESHOLD: u32 = 3;
/// How long an open circuit fails requests fast before it lets one probe through.
pub const OPEN_FOR: Duration = Duration::from_secs(15);
/// The names of a breaker's states, as the metrics label them.
pub const BREAKER_STATES: [&str; 3] = ["closed", "open", "probing"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed {
        failures: u32,
    },
    Open {
        until: Instant,
    },
    /// The probe is in flight.
    Probing,
}

/// One runner's breaker. `Send + Sync`: shared by every request to that runner.
#[derive(Debug)]
pub(crate) struct Breaker {
    state: Mutex<State>,
}

/// Permission to send one request; report how it ended with [`Permit::answered`] or
/// [`Permit::failed`]. A permit dropped unreported counts as a transport failure, so a probe can
/// never leave the circuit waiting forever.
#[derive(Debug)]
pub(crate) struct Permit<'a> {
    breaker: &'a Breaker,
    reported: bool,
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker {
            state: Mutex::new(State::Closed { failures: 0 }),
        }
    }
}

impl Breaker {
    /// A permit to send a request now, or `None` when the circuit is open (or its probe is in
    /// flight): fail the request fast, nothing sent.
    pub(crate) fn admit(&self, now: Instant) -> Option<Permit<'_>> {
        let mut state = self.state.lock();
        match *state {
            State::Closed { .. } => {}
            State::Open { until } if now >= until => *state = State::Probing,
            State::Open { .. } | State::Probing => return None,
        }
        Some(Permit {
            breaker: self,
            reported: false,
        })
    }

    /// The state's name now, one of [`BREAKER_STATES`]: `closed`, `open` (also once its time
    /// is up, until the next request probes it) or `probing`.
    pub(crate) fn state_name(&self) -> &'static str {
        match *self.state.lock() {
            State::Closed { .. } => "closed",
            State::Open { .. } => "open",
            State::Probing => "probing",
        }
    }

    /// True when no transport failure is pending: nothing was sent yet, or the last request
    /// was answered (closed with no failure counted).
    pub(crate) fn last_answered(&self) -> bool {
        matches!(*self.state.lock(), State::Closed { failures: 0 })
    }

    /// True while requests fail fast.
    #[cfg(test)]
    fn is_open(&self, now: Instant) -> bool {
        match *self.state.lock() {
            State::Closed { .. } => false,
            State::Open { until } => now < until,
            State::Probing => true,
        }
    }

    fn answered(&self) {
        *self.state.lock() = State::Closed { failures: 0 };
    }

    fn failed(&self, now: Instant) {
        let mut state = self.state.lock();
        *state = match *state {
            State::Closed { failures } if failures + 1 < FAILURE_THRESHOLD => State::Closed {
                failures: failures + 1,
            },
            // The threshold reached, the probe failed, or a request admitted before the circuit
            // opened failed too: (re)open from now.
            _ => State::Open {
                until: now + OPEN_FOR,
            },
        };
    }
}

impl Permit<'_> {
    /// The runner answered (whatever the answer): the circuit closes.
    pub(crate) fn answered(mut self) {
        self.reported = true;
        self.breaker.answered();
    }

    /// A transport failure (no connection, or the answer lost).
    pub(crate) fn failed(mut self, now: Instant) {
        self.reported = true;
        self.breaker.failed(now);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.reported {
            self.breaker.failed(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_consecutive_failures_open_it() {
        let b = Breaker::default();
        let t = Instant::now();
        for _ in 0..2 {
            b.admit(t).unwrap().failed(t);
            assert!(!b.is_open(t));
        }
        b.admit(t).unwrap().failed(t);
        assert!(b.is_open(t));
        assert!(b.admit(t).is_none());
        assert!(b.admit(t + OPEN_FOR - Duration::from_millis(1)).is_none());
    }

    #[test]
    fn an_answer_resets_the_count() {
        let b = Breaker::default();
        let t = Instant::now();
        assert!(b.last_answered(), "nothing sent yet");
        b.admit(t).unwrap().failed(t);
        assert!(!b.last_answered());
        b.admit(t).unwrap().failed(t);
        b.admit(t).unwrap().answered();
        assert!(b.last_answered());
        b.admit(t).unwrap().failed(t);
        b.admit(t).unwrap().failed(t);
        assert!(!b.is_open(t));
        b.admit(t).unwrap().failed(t);
        assert!(b.is_open(t));
    }

    #[test]
    fn after_the_open_time_one_probe_goes_through() {
        let b = Breaker::default();
        let t = Instant::now();
        for _ in 0..3 {
            b.admit(t).unwrap().failed(t);
        }
        let later = t + OPEN_FOR;
        let probe = b.admit(later).expect("the probe");
        // Everyone else still fails fast while the probe is out.
        assert!(b.admit(later).is_none());
        assert!(b.admit(later + OPEN_FOR * 10).is_none());
        probe.answered();
        assert!(!b.is_open(later));
        assert!(b.admit(later).is_some());
    }

    #[test]
    fn a_failed_probe_opens_it_again_from_now() {
        let b = Breaker::default();
        let t = Instant::now();
        for _ in 0..3 {
            b.admit(t).unwrap().failed(t);
        }
        let later = t + OPEN_FOR + Duration::from_secs(1);
        b.admit(later).unwrap().failed(later);
        assert!(b
            .admit(later + OPEN_FOR - Duration::from_millis(1))
            .is_none());
        assert!(b.admit(later + OPEN_FOR).is_some());
    }

    #[test]
    fn a_dropped_permit_counts_as_a_failure() {
        let b = Breaker::default();
        let t = Instant::now();
        for _ in 0..3 {
            drop(b.admit(t).unwrap());
        }
        assert!(b.is_open(Instant::now()));
        // A dropped probe reopens the circuit instead of leaving it probing forever.
        let later = Instant::now() + OPEN_FOR;
        drop(b.admit(later).unwrap());
        assert!(b.admit(later).is_none());
        assert!(b.admit(Instant::now() + OPEN_FOR * 3).is_some());
    }

    #[test]
    fn concurrent_requests_admitted_before_opening_keep_it_open() {
        let b = Breaker::default();
        let t = Instant::now();
        let permits: Vec<_> = (0..5).map(|_| b.admit(t).unwrap()).collect();
        for p in permits {
            p.failed(t);
        }
        assert!(b.is_open(t));
    }
}
