//! `bench`: RPC latency through the full call path (docs/PROTOCOL.md §9.5, bench), plus cold starts
//! and concurrent providers.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bench_stats::{measure, summarize, BenchSummary, ThreadSwitches};
use clap::Args;
use serde_json::{json, Value};
use webcodex_plugin_host::env::{
    load_runner_config, prepare_environment, resolve_executable, PluginsConfig, ProviderConfig,
    RunnerConfig, DEFAULT_MAX_PROVIDERS, DEFAULT_REQUEST_TIMEOUT,
};
use webcodex_plugin_host::gateway::{Caller, Gateway, ToolOutput};
use webcodex_plugin_host::{LaunchSpec, Provider, ProviderSpec};

use super::bench_host::{self, runtime_error, start_host};
use super::{demo, EXIT_FAILURE, EXIT_OK, EXIT_USAGE};

/// Options of `bench`.
#[derive(Debug, Args)]
pub(super) struct BenchArgs {
    /// A runner.toml whose provider `--plugin` is benched.
    #[arg(long, requires = "plugin", conflicts_with = "command")]
    config: Option<PathBuf>,
    /// The provider id in `--config`.
    #[arg(long, requires = "config")]
    plugin: Option<String>,
    /// An ad-hoc plugin program (no config file needed).
    #[arg(long)]
    command: Option<String>,
    /// An argument of the ad-hoc program (repeatable).
    #[arg(long = "arg", allow_hyphen_values = true)]
    args: Vec<String>,
    /// The tool to call.
    #[arg(long, default_value = "echo")]
    tool: String,
    /// The call arguments (a JSON object).
    #[arg(long, default_value = r#"{"text":"hello"}"#)]
    arguments: String,
    /// Measured calls (cold: measured starts).
    #[arg(short = 'n', long = "n", value_parser = parse_count)]
    n: Option<usize>,
    /// Unmeasured warm-up calls.
    #[arg(long, default_value_t = 1000, value_parser = parse_count)]
    warmup: usize,
    /// The name in the result line.
    #[arg(long, default_value = "webcodex-plugin-host")]
    name: String,
    /// Print one JSON result line.
    #[arg(long)]
    json: bool,
    /// Measure cold starts (spawn + initialize + tools/list) instead of warm calls.
    #[arg(long, conflicts_with = "providers")]
    cold: bool,
    /// K providers of the same plugin called concurrently from K threads.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub(super) providers: Option<u16>,
    /// Start the providers (default 8), stay idle this many seconds, and report the host's
    /// context switches and memory.
    #[arg(long, value_name = "SECONDS", conflicts_with_all = ["cold", "startup"])]
    idle: Option<u64>,
    /// Time startup and reload of K providers (default 8) against one provider.
    #[arg(long, conflicts_with = "cold")]
    startup: bool,
    /// Also report the context switches per measured call of each host thread
    /// (`switches_per_call`; Linux, sequential warm calls only).
    #[arg(long, conflicts_with_all = ["cold", "providers", "idle", "startup"])]
    switches: bool,
}

/// Most calls (or starts) one bench run may make: bounds the sample buffer.
const MAX_COUNT: usize = 10_000_000;

fn parse_count(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n <= MAX_COUNT => Ok(n),
        _ => Err(format!("expected a whole number from 0 to {MAX_COUNT}")),
    }
}

pub(super) fn run(args: BenchArgs) -> i32 {
    let arguments: Value = match serde_json::from_str(&args.arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            eprintln!("error: --arguments must be a JSON object");
            return EXIT_USAGE;
        }
    };
    let provider = match target_provider(&args) {
        Ok(p) => p,
        Err(message) => {
            eprintln!("error: {message}");
            return EXIT_USAGE;
        }
    };
    if let Some(seconds) = args.idle {
        return bench_host::idle(&args.name, provider.0, &provider.1, args.providers, seconds);
    }
    if args.startup {
        let rounds = args.n.unwrap_or(10);
        return bench_host::startup(&args.name, provider.0, &provider.1, args.providers, rounds);
    }
    let result = if args.cold {
        cold(&args, provider.0, provider.1)
    } else {
        warm(&args, provider.0, provider.1, &arguments)
    };
    match result {
        Ok(summary) => {
            if args.json {
                println!("{}", serde_json::to_string(&summary).unwrap_or_default());
            } else {
                print_human(&summary, &args);
            }
            EXIT_OK
        }
        Err(message) => {
            eprintln!("error: {message}");
            EXIT_FAILURE
        }
    }
}

/// The provider to bench and the runner config it lives in.
fn target_provider(args: &BenchArgs) -> Result<(RunnerConfig, ProviderConfig), String> {
    if let (Some(path), Some(plugin)) = (&args.config, &args.plugin) {
        let config = load_runner_config(path, DEFAULT_MAX_PROVIDERS)
            .map_err(|e| format!("{}: {}", e.code(), e.message()))?;
        let provider = config
            .provider(plugin)
            .cloned()
            .ok_or("no provider with that id in the config")?;
        return Ok((config, provider));
    }
    let mut config = match &args.command {
        Some(command) => RunnerConfig {
            plugins: PluginsConfig {
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
                providers: vec![ProviderConfig {
                    id: "bench".into(),
                    name: "bench".into(),
                    command: command.clone(),
                    args: args.args.clone(),
                    cwd: None,
                    profile: None,
                    timeout: DEFAULT_REQUEST_TIMEOUT,
                    restart: Default::default(),
                }],
            },
            ..RunnerConfig::default()
        },
        None => demo::example_runner()?,
    };
    let provider = config.plugins.providers.remove(0);
    Ok((config, provider))
}

fn warm(
    args: &BenchArgs,
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
        measure(&args.name, 0, args.warmup, || call_once(&calls[0])).and_then(|_| {
            let before = ThreadSwitches::now();
            let mut summary = measure(&args.name, n, 0, || call_once(&calls[0]))?;
            summary.switches_per_call = Some(before.per_call(&ThreadSwitches::now(), n));
            Ok(summary)
        })
    } else if k == 1 {
        measure(&args.name, n, args.warmup, || call_once(&calls[0]))
    } else {
        concurrent(args, n, &calls, &call_once)
    };
    gateway.shutdown();
    result
}

/// K threads, each with its own provider: warm-up, then N measured calls each.
fn concurrent(
    args: &BenchArgs,
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
    Ok(summarize(&args.name, &mut all, wall))
}

/// Repeated spawn + initialize + tools/list of one provider; each instance is killed (outside
/// the timed part) before the next start.
fn cold(
    args: &BenchArgs,
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
    Ok(summarize(&args.name, &mut samples, busy))
}

/// A failed plugin_tool output as one line: `code: message (dispatch)`.
fn output_error(output: &ToolOutput) -> String {
    match output.failure_info() {
        Some(f) => format!("{}: {} ({})", f.code, f.message, f.dispatch),
        None => "unknown: the action did not give the expected output ()".to_string(),
    }
}

fn print_human(s: &BenchSummary, args: &BenchArgs) {
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
