//! `bench --idle` and `bench --startup`: what providers cost while idle, and how startup and
//! reload scale with the number of providers; and the bench hosts every mode starts.

use std::time::{Duration, Instant};

use super::stats::{current_rss_kb, nearest_rank, peak_rss_kb};
use serde_json::json;
use webcodex_plugin_host::Error;
use webcodex_plugin_host::{ConfigSource, Host, HostOptions};
use webcodex_plugin_host::{ProviderConfig, RunnerConfig, DEFAULT_MAX_PROVIDERS};

use super::super::{EXIT_FAILURE, EXIT_OK};

const DEFAULT_PROVIDERS: usize = 8;

/// Context switches of every thread of this process except the calling one (Linux `/proc`;
/// zero elsewhere).
#[cfg(not(target_os = "linux"))]
fn context_switches_of_other_threads() -> (u64, u64) {
    (0, 0)
}

/// Context switches of every thread of this process except the calling one.
#[cfg(target_os = "linux")]
fn context_switches_of_other_threads() -> (u64, u64) {
    let me = rustix::thread::gettid().as_raw_nonzero().to_string();
    let mut totals = (0, 0);
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return totals;
    };
    for task in tasks.flatten() {
        if task.file_name().to_str() == Some(me.as_str()) {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        for line in status.lines() {
            let value = |l: &str| l.split_whitespace().nth(1)?.parse::<u64>().ok();
            if line.starts_with("voluntary_ctxt_switches:") {
                totals.0 += value(line).unwrap_or(0);
            } else if line.starts_with("nonvoluntary_ctxt_switches:") {
                totals.1 += value(line).unwrap_or(0);
            }
        }
    }
    totals
}

/// Starts K providers, waits `seconds` without calling them and prints the host's context
/// switches over that time (all threads but this one) and its memory.
pub(super) fn idle(
    name: &str,
    config: RunnerConfig,
    provider: &ProviderConfig,
    providers: Option<u16>,
    seconds: u64,
) -> i32 {
    let k = providers.map(usize::from).unwrap_or(DEFAULT_PROVIDERS);
    let host = match start_host(config, provider, k) {
        Ok(host) => host,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    let ready = host
        .providers()
        .entries()
        .iter()
        .filter(|e| e.error_code().is_none())
        .count();
    // Let the I/O threads reach their blocking calls before the first reading.
    std::thread::sleep(Duration::from_millis(200));
    let before = context_switches_of_other_threads();
    std::thread::sleep(Duration::from_secs(seconds));
    let after = context_switches_of_other_threads();
    let report = json!({
        "name": name,
        "mode": "idle",
        "providers": k,
        "ready": ready,
        "seconds": seconds,
        "voluntary_ctxt_switches": after.0.saturating_sub(before.0),
        "nonvoluntary_ctxt_switches": after.1.saturating_sub(before.1),
        "rss_kb": current_rss_kb(),
        "rss_hwm_kb": peak_rss_kb(),
    });
    host.shutdown();
    println!("{report}");
    EXIT_OK
}

/// Times `rounds` startups and reloads of one provider and of K providers.
pub(super) fn startup(
    name: &str,
    config: RunnerConfig,
    provider: &ProviderConfig,
    providers: Option<u16>,
    rounds: usize,
) -> i32 {
    let k = providers.map(usize::from).unwrap_or(DEFAULT_PROVIDERS);
    let measure = |count: usize| -> Result<(Duration, Duration), String> {
        let mut starts = Vec::with_capacity(rounds);
        let mut reloads = Vec::with_capacity(rounds);
        for _ in 0..rounds.max(1) {
            let t0 = Instant::now();
            let host = start_host(config.clone(), provider, count)?;
            starts.push(t0.elapsed());
            let t0 = Instant::now();
            let report = host
                .reload()
                .map_err(|e| format!("{}: {}", e.code(), e.message()))?;
            reloads.push(t0.elapsed());
            if !report.committed {
                return Err("a reload candidate failed".into());
            }
            host.shutdown();
        }
        starts.sort_unstable();
        reloads.sort_unstable();
        Ok((nearest_rank(&starts, 50.0), nearest_rank(&reloads, 50.0)))
    };
    let (one, many) = match measure(1).and_then(|one| Ok((one, measure(k)?))) {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    let ms = |d: Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
    let ratio =
        |a: Duration, b: Duration| (a.as_secs_f64() / b.as_secs_f64() * 100.0).round() / 100.0;
    let report = json!({
        "name": name,
        "mode": "startup",
        "providers": k,
        "rounds": rounds,
        "start_1_p50_ms": ms(one.0),
        "start_k_p50_ms": ms(many.0),
        "start_ratio": ratio(many.0, one.0),
        "reload_1_p50_ms": ms(one.1),
        "reload_k_p50_ms": ms(many.1),
        "reload_ratio": ratio(many.1, one.1),
    });
    println!("{report}");
    EXIT_OK
}

/// A runner with `k` copies of `provider` (ids `<id>-0`…), all started in parallel.
pub(super) fn start_host(
    config: RunnerConfig,
    provider: &ProviderConfig,
    k: usize,
) -> Result<Host, String> {
    let mut config = config;
    config.plugins.providers = (0..k)
        .map(|i| {
            let mut p = provider.clone();
            if k > 1 {
                p.id = format!("{}-{i}", provider.id);
            }
            p
        })
        .collect();
    let options = HostOptions {
        max_providers: k.max(DEFAULT_MAX_PROVIDERS),
        ..HostOptions::default()
    };
    Host::start(ConfigSource::Fixed(config), options).map_err(runtime_error)
}

/// A runtime error as one line: `code: message (dispatch)`.
pub(super) fn runtime_error(e: Error) -> String {
    format!("{}: {} ({})", e.code(), e.message(), e.dispatch())
}
