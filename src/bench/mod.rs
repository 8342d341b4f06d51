//! The RPC latency harness behind `webcodex-plugin bench` (docs/PROTOCOL.md §9.5, bench).
//!
//! [`measure`] runs W unmeasured then N measured sequential calls of any closure and summarizes
//! them with nearest-rank percentiles; the CLI passes a closure that goes through the full call
//! path (binding → argument validation → frame → response → result validation).

use std::time::{Duration, Instant};

use serde::Serialize;

/// A latency summary in the result-line format of the side-by-side harness.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchSummary {
    /// The client name printed in the result line.
    pub name: String,
    /// Measured calls.
    pub n: usize,
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// 90th percentile, microseconds.
    pub p90_us: f64,
    /// 99th percentile, microseconds.
    pub p99_us: f64,
    /// Slowest call, microseconds.
    pub max_us: f64,
    /// Measured calls divided by the wall time of the measured loop.
    pub calls_per_s: f64,
    /// The host's own peak RSS (`VmHWM`), KiB; 0 where unknown.
    pub rss_kb: u64,
}

/// Runs `warmup` unmeasured then `n` measured sequential calls; stops at the first failure.
pub fn measure<E>(
    name: &str,
    n: usize,
    warmup: usize,
    mut call: impl FnMut() -> Result<(), E>,
) -> Result<BenchSummary, E> {
    for _ in 0..warmup {
        call()?;
    }
    let mut samples = Vec::with_capacity(n);
    let started = Instant::now();
    for _ in 0..n {
        let t0 = Instant::now();
        call()?;
        samples.push(t0.elapsed());
    }
    let wall = started.elapsed();
    Ok(summarize(name, &mut samples, wall))
}

/// Summarizes latency samples (sorted in place) over a loop that took `wall`.
pub fn summarize(name: &str, samples: &mut [Duration], wall: Duration) -> BenchSummary {
    samples.sort_unstable();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let n = samples.len();
    BenchSummary {
        name: name.to_string(),
        n,
        p50_us: us(nearest_rank(samples, 50.0)),
        p90_us: us(nearest_rank(samples, 90.0)),
        p99_us: us(nearest_rank(samples, 99.0)),
        max_us: us(samples.last().copied().unwrap_or_default()),
        calls_per_s: if wall.is_zero() {
            0.0
        } else {
            n as f64 / wall.as_secs_f64()
        },
        rss_kb: peak_rss_kb(),
    }
}

/// The nearest-rank percentile `sorted[ceil(p/100·n) − 1]` of sorted samples (zero when empty).
pub fn nearest_rank(sorted: &[Duration], percentile: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((percentile / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// This process's peak resident set (`VmHWM` in `/proc/self/status`), KiB; 0 where unknown.
pub fn peak_rss_kb() -> u64 {
    status_field_kb("VmHWM:")
}

/// This process's current resident set (`VmRSS`), KiB; 0 where unknown.
pub fn current_rss_kb() -> u64 {
    status_field_kb("VmRSS:")
}

fn status_field_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&u| Duration::from_micros(u)).collect()
    }

    #[test]
    fn nearest_rank_follows_the_harness_formula() {
        let sorted = micros(&(1..=100).collect::<Vec<_>>());
        assert_eq!(nearest_rank(&sorted, 50.0), Duration::from_micros(50));
        assert_eq!(nearest_rank(&sorted, 90.0), Duration::from_micros(90));
        assert_eq!(nearest_rank(&sorted, 99.0), Duration::from_micros(99));
        let three = micros(&[10, 20, 30]);
        assert_eq!(nearest_rank(&three, 50.0), Duration::from_micros(20));
        assert_eq!(nearest_rank(&three, 99.0), Duration::from_micros(30));
        assert_eq!(nearest_rank(&[], 50.0), Duration::ZERO);
    }

    #[test]
    fn summary_sorts_samples_and_counts_calls_per_second() {
        let mut samples = micros(&[30, 10, 20, 40]);
        let s = summarize("x", &mut samples, Duration::from_secs(2));
        assert_eq!(s.n, 4);
        assert_eq!(s.p50_us, 20.0);
        assert_eq!(s.max_us, 40.0);
        assert_eq!(s.calls_per_s, 2.0);
    }

    #[test]
    fn measure_makes_exactly_warmup_plus_n_calls() {
        let mut calls = 0;
        let s = measure("x", 7, 3, || {
            calls += 1;
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(calls, 10);
        assert_eq!(s.n, 7);
    }

    #[test]
    fn peak_rss_is_read_from_proc() {
        assert!(peak_rss_kb() > 0);
    }
}
