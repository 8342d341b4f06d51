//! Today's single-target modes: `--cold` (spawn + handshake per start), `--providers K` (K
//! providers called from K threads), `--switches` (context switches per call), `--idle` and
//! `--startup` (in [`super::host`]). Each prints one summary in the result-line format.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use webcodex_plugin_host::{prepare_environment, resolve_executable, ProviderConfig, RunnerConfig};
use webcodex_plugin_host::{Caller, Gateway, ToolOutput};
use webcodex_plugin_host::{LaunchSpec, Provider, ProviderSpec};

use super::super::{EXIT_FAILURE, EXIT_OK};
use super::host::{self, runtime_error, start_host};
use super::stats::{measure, summarize, BenchSummary, ThreadSwitches};
use super::targets::output_error;
use super::BenchFlags;

/// True when `args` asks for one of these modes.
pub(super) fn wanted(args: &BenchFlags) -> bool {
    args.cold || args.providers.is_some() || args.idle.is_some() || args.startup || args.switches
}

/// Runs the mode `args` asks for on one in-process provider.
pub(super) fn run(
    args: &BenchFlags,
    name: &str,
    provider: (RunnerConfig, ProviderConfig),
    arguments: &Value,
) -> i32 {
    if let Some(seconds) = args.idle {
        return host::idle(name, provider.0, &provider.1, args.providers, seconds);
    }
    if args.startup {
        let rounds = args.n.unwrap_or(10);
        return host::startup(name, provider.0, &provider.1, args.providers, rounds);
    }
    let result = if args.cold {
        cold(args, name, provider.0, provider.1)
    } else {
        warm(args, name, provider.0, provider.1, arguments)
    };
    match result {
        Ok(summary) => {
            if args.json {
                println!("{}", serde_json::to_string(&summary).unwrap_or_default());
            } else {
                print_human(&summary, args);
            }
            EXIT_OK
        }
        Err(message) => {
            eprintln!("error: {message}");
            EXIT_FAILURE
        }
    }
}

fn warm(
    args: &BenchFlags,
    name: &str,
    config: RunnerConfig,
    provider: ProviderConfig,
    arguments: &Value,
) -> Result<BenchSummary, String> {
    let k = args.providers.map(usize::from).unwrap_or(1);
    let n = args.n.unwrap_or(20_000);
    let host = start_host(config, &provider, k)?;
    let ids: Vec<String> = host
        .providers()
        .entries()
        .iter()
        .map(|e| e.id.clone())
        .collect();
    let gateway = Arc::new(Gateway::single(Arc::new(host)));
    let caller = Caller::trusted();
    // One binding per provider; each call goes binding → arguments → frame → result.
    let mut calls = Vec::new();
    for id in &ids {
        let described = gateway.plugin_tool(
            &caller,
            &json!({"action": "describe", "runner": "local", "plugin": id, "tool": args.tool}),
        );
        let Some(binding) = described.binding() else {
            gateway.shutdown();
            return Err(output_error(&described));
        };
        calls.push(json!({"action": "call", "binding": binding, "arguments": arguments}));
    }
    // The reply is returned, so that it is dropped after the sample's clock stops.
    let call_once = |params: &Value| {
        let out = gateway.plugin_tool(&caller, params);
        if out.is_success() {
            Ok(out)
        } else {
            Err(output_error(&out))
        }
    };
    let result = if k == 1 && args.switches {
        measure(name, 0, args.warmup, || call_once(&calls[0])).and_then(|_| {
            let before = ThreadSwitches::now();
            let mut summary = measure(name, n, 0, || call_once(&calls[0]))?;
            summary.switches_per_call = Some(before.per_call(&ThreadSwitches::now(), n));
            Ok(summary)
        })
    } else if k == 1 {
        measure(name, n, args.warmup, || call_once(&calls[0]))
    } else {
        concurrent(args, name, n, &calls, &call_once)
    };
    gateway.shutdown();
    result
}

/// K threads, each with its own provider: warm-up, then N measured calls each.
fn concurrent(
    args: &BenchFlags,
    name: &str,
    n: usize,
    calls: &[Value],
    call_once: &(dyn Fn(&Value) -> Result<ToolOutput, String> + Sync),
) -> Result<BenchSummary, String> {
    let barrier = std::sync::Barrier::new(calls.len());
    // The clock starts when the first thread leaves the barrier: warm-up is not rated.
    let started = parking_lot::Mutex::new(None::<Instant>);
    let per_thread: Vec<Result<Vec<Duration>, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = calls
            .iter()
            .map(|params| {
                let (barrier, started) = (&barrier, &started);
                scope.spawn(move || {
                    for _ in 0..args.warmup {
                        call_once(params)?;
                    }
                    barrier.wait();
                    started.lock().get_or_insert_with(Instant::now);
                    let mut samples = Vec::with_capacity(n);
                    for _ in 0..n {
                        let t0 = Instant::now();
                        let reply = call_once(params)?;
                        samples.push(t0.elapsed());
                        drop(reply);
                    }
                    Ok(samples)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a bench thread panicked".to_string()))
            })
            .collect()
    });
    let wall = started
        .into_inner()
        .map(|t| t.elapsed())
        .unwrap_or_default();
    let mut all = Vec::with_capacity(n * calls.len());
    for samples in per_thread {
        all.extend(samples?);
    }
    Ok(summarize(name, &mut all, wall))
}

/// Repeated spawn + initialize + tools/list of one provider; each instance is killed (outside
/// the timed part) before the next start.
fn cold(
    args: &BenchFlags,
    name: &str,
    config: RunnerConfig,
    provider: ProviderConfig,
) -> Result<BenchSummary, String> {
    let n = args.n.unwrap_or(50);
    let env = prepare_environment(&config.shell, &provider, std::env::vars_os())
        .map_err(runtime_error)?;
    let program = resolve_executable(&provider.command, &env, provider.cwd.as_deref())
        .map_err(runtime_error)?;
    let spec = ProviderSpec {
        id: provider.id.clone(),
        name: provider.name.clone(),
        launch: LaunchSpec {
            program,
            args: provider.args.clone(),
            cwd: provider.cwd.clone(),
            env,
        },
        timeout: provider.timeout,
    };
    let mut samples = Vec::with_capacity(n);
    let mut busy = Duration::ZERO;
    for _ in 0..n {
        let t0 = Instant::now();
        let started = Provider::start(spec.clone()).map_err(runtime_error)?;
        let elapsed = t0.elapsed();
        samples.push(elapsed);
        busy += elapsed;
        drop(started);
    }
    Ok(summarize(name, &mut samples, busy))
}

fn print_human(s: &BenchSummary, args: &BenchFlags) {
    let what = if args.cold {
        "cold starts (spawn + initialize + tools/list)".to_string()
    } else if let Some(k) = args.providers {
        format!("calls of `{}` on {k} providers concurrently", args.tool)
    } else {
        format!("sequential calls of `{}`", args.tool)
    };
    println!("{}: {} {what}", s.name, s.n);
    println!(
        "  p50 {:.2} µs   p90 {:.2} µs   p99 {:.2} µs   max {:.2} µs",
        s.p50_us, s.p90_us, s.p99_us, s.max_us
    );
    println!(
        "  {:.0} per second   host peak RSS {} KiB",
        s.calls_per_s, s.rss_kb
    );
    for (thread, per_call) in s.switches_per_call.iter().flatten() {
        println!(
            "  {thread}: {:.2} voluntary + {:.2} involuntary context switches per call",
            per_call.voluntary, per_call.involuntary
        );
    }
}
