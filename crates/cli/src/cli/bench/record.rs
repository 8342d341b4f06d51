//! The calls one target made, as recorded (latency and outcome of every call, in order, in
//! rounds or load steps), and what is computed from them after the run: exact nearest-rank
//! percentiles, the rounds' medians and intervals, the HdrHistogram, the counts and warnings.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::inference::{self, Interval, RoundStat};
use super::stats::peak_rss_kb;

/// The HdrHistogram's range and precision: 1 ns to 60 s, three significant digits.
const HIST_LOW_NS: u64 = 1;
const HIST_HIGH_NS: u64 = 60_000_000_000;
const HIST_SIGFIG: u8 = 3;

/// The percentiles reported, with their keys.
pub(super) const PERCENTILES: [(&str, f64); 6] = [
    ("p50", 50.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p99_9", 99.9),
    ("p99_99", 99.99),
    ("max", 100.0),
];

/// How one call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Outcome {
    /// The call completed and the tool reported success.
    Ok = 0,
    /// The call completed with `isError: true`.
    ToolError = 1,
    /// The call failed (a gateway failure, or no answer).
    Failed = 2,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Failed => "failed",
        }
    }
}

/// The calls of one target.
#[derive(Debug, Clone, Default)]
pub(super) struct Series {
    /// Latency of each call, nanoseconds, in call order.
    pub samples: Vec<u64>,
    /// Outcome of each call.
    pub outcomes: Vec<Outcome>,
    /// Where each round (or load step) ends in `samples`.
    pub ends: Vec<usize>,
    /// The wall time of the measured loops.
    pub busy: Duration,
    /// The first failure's reason.
    pub first_failure: Option<String>,
}

impl Series {
    /// An empty series for `capacity` calls.
    pub fn with_capacity(capacity: usize) -> Series {
        Series {
            samples: Vec::with_capacity(capacity),
            outcomes: Vec::with_capacity(capacity),
            ..Series::default()
        }
    }

    /// Records one call.
    pub fn push(&mut self, latency: Duration, outcome: Outcome, reason: Option<String>) {
        self.samples
            .push(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
        self.outcomes.push(outcome);
        if self.first_failure.is_none() && outcome == Outcome::Failed {
            self.first_failure = reason;
        }
    }

    /// Ends the current round (or step).
    pub fn end_round(&mut self) {
        self.ends.push(self.samples.len());
    }

    /// The calls of round `r`.
    pub fn round(&self, r: usize) -> std::ops::Range<usize> {
        let start = if r == 0 { 0 } else { self.ends[r - 1] };
        start..self.ends[r]
    }
}

/// What is reported of one target.
#[derive(Debug, Clone)]
pub(super) struct Analysis {
    pub calls: usize,
    /// Each round's median and its interval.
    pub rounds: Vec<RoundStat>,
    /// The median of the rounds' p50s and its bootstrap interval (ns).
    pub median: Interval,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub stddev_ns: f64,
    /// `PERCENTILES` over all calls, nanoseconds (nearest rank).
    pub percentiles: [u64; 6],
    pub calls_per_s: f64,
    pub ok: usize,
    pub tool_errors: usize,
    pub failures: usize,
    pub rss_kb: u64,
    pub histogram: Histogram<u64>,
    pub warnings: Vec<String>,
}

impl Analysis {
    /// The percentile with key `key` (`p50`…`max`), nanoseconds.
    pub fn at(&self, key: &str) -> u64 {
        PERCENTILES
            .iter()
            .position(|(k, _)| *k == key)
            .map_or(0, |i| self.percentiles[i])
    }
}

/// Analyses a series. `rounds_matter` is false for one round (or for load steps, whose
/// disagreement is the point): no round warning then.
pub(super) fn analyse(series: &Series, rounds_matter: bool) -> Analysis {
    let rounds: Vec<RoundStat> = (0..series.ends.len())
        .map(|r| {
            let mut round = series.samples[series.round(r)].to_vec();
            round.sort_unstable();
            inference::round_stat(&round)
        })
        .collect();
    let mut sorted = series.samples.clone();
    sorted.sort_unstable();
    let n = sorted.len();
    let rank = |p: f64| -> u64 {
        if n == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        sorted[rank.clamp(1, n) - 1]
    };
    let mut percentiles = [0; 6];
    for (slot, (_, p)) in percentiles.iter_mut().zip(PERCENTILES) {
        *slot = rank(p);
    }
    let mean = if n == 0 {
        0.0
    } else {
        sorted.iter().map(|&v| v as f64).sum::<f64>() / n as f64
    };
    let variance = if n < 2 {
        0.0
    } else {
        sorted
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / (n - 1) as f64
    };
    let mut histogram = Histogram::<u64>::new_with_bounds(HIST_LOW_NS, HIST_HIGH_NS, HIST_SIGFIG)
        .unwrap_or_else(|_| unreachable!("fixed, valid bounds"));
    for &v in &series.samples {
        histogram.saturating_record(v.clamp(HIST_LOW_NS, HIST_HIGH_NS));
    }
    let count = |o: Outcome| series.outcomes.iter().filter(|&&x| x == o).count();
    let (ok, tool_errors, failures) = (
        count(Outcome::Ok),
        count(Outcome::ToolError),
        count(Outcome::Failed),
    );
    let mut warnings = Vec::new();
    if rounds_matter {
        warnings.extend(inference::rounds_disagree(&rounds));
    }
    warnings.extend(inference::bimodal(&sorted));
    warnings.extend(inference::outliers_dominate(&sorted));
    if failures > 0 {
        warnings.push(format!(
            "{failures} of {n} calls failed (their latencies are in the figures); the first: {}",
            series.first_failure.as_deref().unwrap_or("no reason given")
        ));
    }
    Analysis {
        calls: n,
        median: inference::median_interval(&rounds),
        rounds,
        min_ns: sorted.first().copied().unwrap_or(0),
        mean_ns: mean,
        stddev_ns: variance.sqrt(),
        percentiles,
        calls_per_s: if series.busy.is_zero() {
            0.0
        } else {
            n as f64 / series.busy.as_secs_f64()
        },
        ok,
        tool_errors,
        failures,
        rss_kb: peak_rss_kb(),
        histogram,
        warnings,
    }
}

/// What one reading of the clock costs, nanoseconds: the median gap between back-to-back
/// `Instant::now()` calls (every sample holds two readings, so about this much of each sample
/// is the clock's).
pub(super) fn clock_cost_ns() -> f64 {
    const READINGS: usize = 10_001;
    let mut stamps = Vec::with_capacity(READINGS);
    for _ in 0..READINGS {
        stamps.push(std::time::Instant::now());
    }
    let mut gaps: Vec<f64> = stamps
        .windows(2)
        .map(|w| (w[1] - w[0]).as_nanos() as f64)
        .collect();
    inference::median(&mut gaps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analysis_counts_outcomes_apart_and_splits_rounds() {
        let mut s = Series::with_capacity(6);
        for (i, outcome) in [
            Outcome::Ok,
            Outcome::ToolError,
            Outcome::Ok,
            Outcome::Failed,
            Outcome::Ok,
            Outcome::Ok,
        ]
        .into_iter()
        .enumerate()
        {
            let reason = (outcome == Outcome::Failed).then(|| "plugin_timeout: late".to_string());
            s.push(Duration::from_micros(10 + i as u64), outcome, reason);
            if i % 3 == 2 {
                s.end_round();
            }
        }
        s.busy = Duration::from_millis(3);
        let a = analyse(&s, true);
        assert_eq!((a.ok, a.tool_errors, a.failures), (4, 1, 1));
        assert_eq!(a.rounds.len(), 2);
        assert_eq!(a.rounds[0].p50_ns, 11_000.0);
        assert_eq!(a.rounds[1].p50_ns, 14_000.0);
        assert_eq!(a.at("p50"), 12_000);
        assert_eq!(a.at("max"), 15_000);
        assert_eq!(a.min_ns, 10_000);
        assert_eq!(a.calls_per_s, 2000.0);
        assert_eq!(a.histogram.len(), 6);
        assert!(a.warnings.iter().any(|w| w.contains("plugin_timeout")));
    }

    #[test]
    fn the_clock_costs_something_and_not_much() {
        let ns = clock_cost_ns();
        assert!((0.0..100_000.0).contains(&ns), "{ns}");
    }
}
