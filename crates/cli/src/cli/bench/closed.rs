//! The closed loop: W unmeasured calls per target, then R rounds in which each target in turn
//! makes N sequential calls (so a change of the machine's state between rounds hits every
//! target alike). A sample runs from just before the call to holding its reply; the reply is
//! read for its outcome and dropped after the clock stops.

use std::time::Instant;

use super::record::Series;
use super::targets::{Lane, Outcome};

/// The loop's shape.
pub(super) struct Plan {
    pub n: usize,
    pub rounds: usize,
    pub warmup: usize,
}

/// Runs `plan` on the first lane of each target; one series per target. A failing warm-up call
/// stops the bench (the target does not work); measured failures are counted.
pub(super) fn run(lanes: &[&Lane], plan: &Plan) -> Result<Vec<Series>, String> {
    for lane in lanes {
        for _ in 0..plan.warmup {
            let reply = lane.call();
            if let (Outcome::Failed, reason) = reply.outcome() {
                return Err(format!(
                    "a warm-up call failed: {}",
                    reason.unwrap_or_else(|| "no reason given".into())
                ));
            }
        }
    }
    let mut series: Vec<Series> = lanes
        .iter()
        .map(|_| Series::with_capacity(plan.n * plan.rounds))
        .collect();
    for _ in 0..plan.rounds {
        for (lane, s) in lanes.iter().zip(series.iter_mut()) {
            let started = Instant::now();
            for _ in 0..plan.n {
                let t0 = Instant::now();
                let reply = lane.call();
                let elapsed = t0.elapsed();
                let (outcome, reason) = reply.outcome();
                s.push(elapsed, outcome, reason);
                drop(reply);
            }
            s.busy += started.elapsed();
            s.end_round();
        }
    }
    Ok(series)
}
