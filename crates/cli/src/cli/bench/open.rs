//! The open loop: calls on a fixed schedule, whatever the answers do. Call `i` of a step has
//! the intended start `t0 + i/rate`; C callers take the next call in turn, wait for its intended
//! start (asleep until shortly before it, then spinning the last stretch, so the wake-up's own
//! lateness stays off the number), and its latency runs from the intended start to the reply:
//! a stall delays every call scheduled behind it and shows in their latencies, as wrk2 measures
//! (no coordinated omission). A call that starts more than [`LATE`] after its intended start is
//! counted late: the callers could not keep up.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::record::Series;
use super::targets::{Lane, Outcome};

/// A start this much after its intended start is late.
pub(super) const LATE: Duration = Duration::from_millis(1);
/// Sleep until this long before an intended start, then spin.
const SPIN: Duration = Duration::from_micros(100);

/// One load step: a rate over a duration with C callers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Step {
    pub rate: f64,
    pub duration: f64,
    pub concurrency: usize,
}

impl Step {
    /// The calls the step schedules (at least one).
    pub fn calls(&self) -> usize {
        ((self.rate * self.duration).round() as usize).max(1)
    }
}

/// What a step measured besides the series.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct StepResult {
    /// Calls made divided by the time from the first intended start to the last reply.
    pub achieved: f64,
    /// Calls that started late.
    pub late: usize,
    /// The latest start after its intended start, nanoseconds.
    pub max_lag_ns: u64,
}

/// One call of a step, as its caller recorded it.
struct Done {
    /// Its place in the schedule.
    index: usize,
    /// From the intended start to the reply.
    latency_ns: u64,
    outcome: Outcome,
    reason: Option<String>,
    /// From the intended start to the actual start.
    lag_ns: u64,
}

/// Runs `step` on `lanes[..concurrency]`, recording into `series` as one round.
pub(super) fn run(step: &Step, lanes: &[Lane], series: &mut Series) -> StepResult {
    let calls = step.calls();
    let period = 1.0 / step.rate;
    let next = AtomicUsize::new(0);
    let merged: Mutex<Vec<Done>> = Mutex::new(Vec::with_capacity(calls));
    let callers = step.concurrency.min(lanes.len()).max(1);
    let start = Instant::now() + Duration::from_millis(1);
    let last_end = Mutex::new(start);
    std::thread::scope(|scope| {
        for lane in &lanes[..callers] {
            let (next, merged, last_end) = (&next, &merged, &last_end);
            scope.spawn(move || {
                let mut mine = Vec::with_capacity(calls / callers + 1);
                let mut end = start;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= calls {
                        break;
                    }
                    let intended = start + Duration::from_secs_f64(i as f64 * period);
                    wait_until(intended);
                    let began = Instant::now();
                    let reply = lane.call();
                    end = Instant::now();
                    let (outcome, reason) = reply.outcome();
                    drop(reply);
                    let latency = end.saturating_duration_since(intended);
                    let lag = began.saturating_duration_since(intended);
                    mine.push(Done {
                        index: i,
                        latency_ns: nanos(latency),
                        outcome,
                        reason,
                        lag_ns: nanos(lag),
                    });
                }
                merged.lock().extend(mine);
                let mut last = last_end.lock();
                if end > *last {
                    *last = end;
                }
            });
        }
    });
    let mut merged = merged.into_inner();
    merged.sort_unstable_by_key(|d| d.index);
    let mut result = StepResult::default();
    for done in merged {
        series.push(
            Duration::from_nanos(done.latency_ns),
            done.outcome,
            done.reason,
        );
        if done.lag_ns > nanos(LATE) {
            result.late += 1;
        }
        result.max_lag_ns = result.max_lag_ns.max(done.lag_ns);
    }
    series.end_round();
    let wall = last_end.into_inner().saturating_duration_since(start);
    series.busy += wall;
    result.achieved = if wall.is_zero() {
        0.0
    } else {
        calls as f64 / wall.as_secs_f64()
    };
    result
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Waits until `deadline`: asleep until [`SPIN`] before it, then spinning.
fn wait_until(deadline: Instant) {
    let now = Instant::now();
    if deadline <= now {
        return;
    }
    let left = deadline - now;
    if left > SPIN {
        std::thread::sleep(left - SPIN);
    }
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// The rates and concurrencies of a sweep, each rate with each concurrency, in order.
pub(super) fn steps(rates: &[f64], concurrencies: &[usize], duration: f64) -> Vec<Step> {
    rates
        .iter()
        .flat_map(|&rate| {
            concurrencies.iter().map(move |&concurrency| Step {
                rate,
                duration,
                concurrency,
            })
        })
        .collect()
}

/// The highest rate whose step held: p99 at or under `bound_ns` and an achieved rate of at
/// least 95 % of the rate asked for. `results` are (step, p99 ns, achieved).
pub(super) fn highest_held(results: &[(Step, u64, f64)], bound_ns: u64) -> Option<Step> {
    results
        .iter()
        .filter(|(step, p99, achieved)| *p99 <= bound_ns && *achieved >= 0.95 * step.rate)
        .map(|(step, _, _)| *step)
        .max_by(|a, b| a.rate.total_cmp(&b.rate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_is_each_rate_with_each_concurrency() {
        let s = steps(&[100.0, 200.0], &[1, 2], 0.5);
        let got: Vec<(f64, usize)> = s.iter().map(|s| (s.rate, s.concurrency)).collect();
        assert_eq!(got, [(100.0, 1), (100.0, 2), (200.0, 1), (200.0, 2)]);
        assert_eq!(s[0].calls(), 50);
    }

    #[test]
    fn the_highest_rate_that_held_needs_its_p99_and_its_rate() {
        let step = |rate| Step {
            rate,
            duration: 1.0,
            concurrency: 1,
        };
        let results = [
            (step(1000.0), 80_000, 1000.0),
            (step(5000.0), 90_000, 4990.0),
            (step(20000.0), 95_000, 9000.0),
            (step(40000.0), 5_000_000, 9100.0),
        ];
        assert_eq!(highest_held(&results, 100_000), Some(step(5000.0)));
        assert_eq!(highest_held(&results, 1_000), None);
    }
}
