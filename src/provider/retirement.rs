//! Process-wide counts of plugin instance retirements, by reason, for operators (the admin
//! listener's metrics). Each instance counts once, under the reason that retired it first.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::ErrorCode;

/// Why an instance was retired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetireReason {
    /// The plugin exited by itself (a crash, or an exit nobody asked for).
    Exited,
    /// The host stopped it: shutdown, a replaced set, a finished check candidate.
    Stopped,
    /// A request failed in a way that retires the instance (timeout, protocol error, …).
    Fault(ErrorCode),
}

const CODES: usize = ErrorCode::ALL.len();

static EXITED: AtomicU64 = AtomicU64::new(0);
static STOPPED: AtomicU64 = AtomicU64::new(0);
static FAULTS: [AtomicU64; CODES] = [const { AtomicU64::new(0) }; CODES];

/// Counts one retirement.
pub(crate) fn count(reason: RetireReason) {
    let counter = match reason {
        RetireReason::Exited => &EXITED,
        RetireReason::Stopped => &STOPPED,
        RetireReason::Fault(code) => match FAULTS.get(code as usize) {
            Some(counter) => counter,
            None => return,
        },
    };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The retirements of plugin instances in this process so far, `(reason, count)`: `exited`
/// (the plugin exited by itself), `stopped` (shutdown, reload, a finished check candidate),
/// and the error code of each fault that retired an instance. `exited` and `stopped` are
/// always listed; a fault code only once it happened.
#[cfg(any(test, feature = "ops", feature = "internals"))]
pub fn retirement_counts() -> Vec<(&'static str, u64)> {
    let mut counts = vec![
        ("exited", EXITED.load(Ordering::Relaxed)),
        ("stopped", STOPPED.load(Ordering::Relaxed)),
    ];
    for (code, counter) in ErrorCode::ALL.iter().zip(FAULTS.iter()) {
        let n = counter.load(Ordering::Relaxed);
        if n > 0 {
            counts.push((code.as_str(), n));
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_codes_index_their_own_counter() {
        for (i, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(*code as usize, i, "{}", code.as_str());
        }
        let before = retirement_counts();
        count(RetireReason::Fault(ErrorCode::Timeout));
        let after = retirement_counts();
        let timeouts = |counts: &[(&str, u64)]| {
            counts
                .iter()
                .find(|(reason, _)| *reason == ErrorCode::Timeout.as_str())
                .map_or(0, |(_, n)| *n)
        };
        assert!(timeouts(&after) > timeouts(&before));
        assert_eq!(after[0].0, "exited");
        assert_eq!(after[1].0, "stopped");
    }
}
