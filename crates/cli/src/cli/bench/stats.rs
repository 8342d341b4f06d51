//! The RPC latency harness behind `webcodex-plugin bench` (docs/PROTOCOL.md §9.5, bench).
//!
//! [`measure`] runs W unmeasured then N measured sequential calls of any closure and summarizes
//! them with nearest-rank percentiles; the CLI passes a closure that goes through the full call
//! path (binding → argument validation → frame → response → result validation).

use std::collections::BTreeMap;
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
    /// Context switches per measured call of each kind of host thread (`bench --switches`;
    /// Linux only), keyed by thread name without the provider id (`caller` for the calling
    /// thread).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switches_per_call: Option<BTreeMap<String, SwitchesPerCall>>,
}

/// Voluntary (the thread blocked) and involuntary (it was preempted) context switches per call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SwitchesPerCall {
    /// Voluntary switches per call.
    pub voluntary: f64,
    /// Involuntary switches per call.
    pub involuntary: f64,
}

/// The context-switch counters of this process's threads, by thread id (from
/// `/proc/self/task`; empty where there is no `/proc`).
#[derive(Debug, Clone, Default)]
pub struct ThreadSwitches(BTreeMap<u64, (String, u64, u64)>);

impl ThreadSwitches {
    /// Reads the counters now.
    pub fn now() -> ThreadSwitches {
        let mut threads = BTreeMap::new();
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return ThreadSwitches(threads);
        };
        let me = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            let field = |name: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0)
            };
            let kind = if comm == me {
                "caller".to_string()
            } else {
                thread_kind(comm.trim_end())
            };
            threads.insert(
                tid,
                (
                    kind,
                    field("voluntary_ctxt_switches:"),
                    field("nonvoluntary_ctxt_switches:"),
                ),
            );
        }
        ThreadSwitches(threads)
    }

    /// Switches per call from `self` (taken before `calls` calls) to `after`, summed by thread
    /// kind; threads that ended in between are left out.
    pub fn per_call(
        &self,
        after: &ThreadSwitches,
        calls: usize,
    ) -> BTreeMap<String, SwitchesPerCall> {
        let mut sums: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for (tid, (kind, voluntary, involuntary)) in &after.0 {
            let (v0, i0) = self.0.get(tid).map_or((0, 0), |(_, v, i)| (*v, *i));
            let sum = sums.entry(kind.clone()).or_default();
            sum.0 += voluntary.saturating_sub(v0);
            sum.1 += involuntary.saturating_sub(i0);
        }
        let calls = calls.max(1) as f64;
        sums.into_iter()
            .map(|(kind, (v, i))| {
                (
                    kind,
                    SwitchesPerCall {
                        voluntary: hundredths(v as f64 / calls),
                        involuntary: hundredths(i as f64 / calls),
                    },
                )
            })
            .collect()
    }
}

/// `wc-read-ID` → `wc-read`: a provider thread's name without its provider id.
fn thread_kind(comm: &str) -> String {
    let mut parts = comm.splitn(3, '-');
    match (parts.next(), parts.next()) {
        (Some("wc"), Some(kind)) => format!("wc-{kind}"),
        _ => comm.to_string(),
    }
}

/// Runs `warmup` unmeasured then `n` measured sequential calls; stops at the first failure.
///
/// A sample runs from just before the call to holding its decoded reply (what `call` returns);
/// the reply is dropped after the clock stops, as the side-by-side harness's clients do.
pub fn measure<T, E>(
    name: &str,
    n: usize,
    warmup: usize,
    mut call: impl FnMut() -> Result<T, E>,
) -> Result<BenchSummary, E> {
    for _ in 0..warmup {
        call()?;
    }
    let mut samples = Vec::with_capacity(n);
    let started = Instant::now();
    for _ in 0..n {
        let t0 = Instant::now();
        let reply = call()?;
        samples.push(t0.elapsed());
        drop(reply);
    }
    let wall = started.elapsed();
    Ok(summarize(name, &mut samples, wall))
}

/// Summarizes latency samples (sorted in place) over a loop that took `wall`.
pub fn summarize(name: &str, samples: &mut [Duration], wall: Duration) -> BenchSummary {
    samples.sort_unstable();
    // Latencies rounded to 0.01 µs, as the side-by-side harness's other clients print them
    // (a call of 3.5 µs rounded to tenths moves a ratio by up to 1.5%); `--json` lines stay
    // short (`812.42`, not `812.4159999999999`).
    let us = |d: Duration| hundredths(d.as_secs_f64() * 1e6);
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
            tenths(n as f64 / wall.as_secs_f64())
        },
        rss_kb: peak_rss_kb(),
        switches_per_call: None,
    }
}

/// `value` rounded to one decimal place.
fn tenths(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

/// `value` rounded to two decimal places.
fn hundredths(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
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
    fn summary_rounds_latencies_to_a_hundredth_of_a_microsecond() {
        let mut samples = vec![Duration::from_nanos(812_416), Duration::from_nanos(1_049)];
        let summary = summarize("x", &mut samples, Duration::from_nanos(3_000_001));
        assert_eq!(summary.p50_us, 1.05);
        assert_eq!(summary.max_us, 812.42);
        assert_eq!(summary.calls_per_s, 666.7);
        let line = serde_json::to_string(&summary).unwrap();
        assert!(line.contains("\"max_us\":812.42,"), "{line}");
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
