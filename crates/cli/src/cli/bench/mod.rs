//! `bench`: plugin call latency through every path a call takes (docs/PROTOCOL.md §9.5, bench):
//! in rounds with honest statistics, several targets compared in one run, the whole
//! distribution (HdrHistogram, exports, a plot), and open-loop load; plus today's cold-start,
//! concurrent-provider, idle and startup modes.
//!
//! - `targets`: what the flags name and how each target is opened into lanes;
//! - `closed`, `open`: the two loops; `record`: a target's calls and what is computed of them;
//! - `inference`: intervals and warnings; `report`: human and JSON output;
//! - `export`: `.hgrm`, CSV and baselines; `plot`: SVG charts;
//! - `legacy`, `host`, `stats`: the single-target modes and their harness.

mod closed;
mod export;
mod gateway_client;
mod host;
mod inference;
mod legacy;
mod load;
mod mcp_client;
mod open;
mod plot;
mod record;
mod report;
mod stats;
mod targets;

use std::path::PathBuf;

use clap::{ArgAction, ArgMatches, Args, FromArgMatches};
use serde_json::Value;

use self::targets::{Flag, TargetSpec};
use super::{EXIT_FAILURE, EXIT_USAGE};

/// Options of `bench`, as parsed; the targets are read from their order in [`BenchArgs`].
#[derive(Debug, Args)]
pub(super) struct BenchFlags {
    /// A runner.toml; each --plugin after it is a target.
    #[arg(long, value_name = "FILE", action = ArgAction::Append)]
    config: Vec<PathBuf>,
    /// A provider id: of the --config, or of the --server-url, before it (repeatable).
    #[arg(long, value_name = "ID", action = ArgAction::Append)]
    plugin: Vec<String>,
    /// An ad-hoc plugin program (no config file needed); each --command is a target.
    #[arg(long, value_name = "PROG", action = ArgAction::Append)]
    command: Vec<String>,
    /// An argument of the --command before it (repeatable).
    #[arg(long = "arg", allow_hyphen_values = true, action = ArgAction::Append)]
    args: Vec<String>,
    /// A `serve` endpoint: each --plugin after it is a target called over HTTP
    /// (/api/tools/call), or MCP (/mcp) with --mcp.
    #[arg(long, value_name = "URL", action = ArgAction::Append)]
    server_url: Vec<String>,
    /// The runner behind the --server-url before it (a front's remote runner; default local).
    #[arg(long, value_name = "ID", action = ArgAction::Append)]
    runner: Vec<String>,
    /// Call the --server-url before it on MCP /mcp instead of /api/tools/call.
    #[arg(long, action = ArgAction::Count)]
    mcp: u8,
    /// Call the --config before it through a `gateway` child process (stdio JSON lines).
    #[arg(long, action = ArgAction::Count)]
    gateway: u8,
    /// The bearer token of --server-url targets (visible in the process list: prefer
    /// --token-file or WEBCODEX_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// A file holding the bearer token of --server-url targets.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// A dotenv file whose WEBCODEX_TOKEN, else WEBCODEX_PAT, is the token.
    #[arg(long, value_name = "FILE")]
    env_file: Option<PathBuf>,
    /// The tool to call.
    #[arg(long, default_value = "echo")]
    tool: String,
    /// The call arguments (a JSON object).
    #[arg(long, default_value = r#"{"text":"hello"}"#)]
    arguments: String,
    /// Measured calls per round (cold: measured starts).
    #[arg(short = 'n', long = "n", value_parser = parse_count)]
    n: Option<usize>,
    /// Rounds of -n calls, targets taking turns within each (default 5).
    #[arg(long, value_parser = parse_count)]
    rounds: Option<usize>,
    /// Unmeasured warm-up calls per target.
    #[arg(long, default_value_t = 1000, value_parser = parse_count)]
    warmup: usize,
    /// The name of the target before it in the report (repeatable).
    #[arg(long, action = ArgAction::Append)]
    name: Vec<String>,
    /// Print one JSON line with every figure.
    #[arg(long)]
    json: bool,
    /// Exit 1 when any measured call failed or returned isError.
    #[arg(long)]
    fail_on_error: bool,
    /// Save this run's rounds as baseline NAME.
    #[arg(long, value_name = "NAME")]
    save_baseline: Option<String>,
    /// Compare with baseline NAME saved earlier on this machine.
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// Write each target's HdrHistogram percentile distribution (FILE-NAME.ext for several).
    #[arg(long, value_name = "FILE")]
    export_hgrm: Option<PathBuf>,
    /// Write every measured call as CSV: target,round,latency_ns,outcome.
    #[arg(long, value_name = "FILE")]
    export_csv: Option<PathBuf>,
    /// Draw the percentile distribution (or a sweep's latency against rate) as SVG.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Open loop: calls per second on a fixed schedule.
    #[arg(long, allow_negative_numbers = true, conflicts_with = "rates")]
    rate: Option<f64>,
    /// Open-loop sweep: a comma-separated list of rates (e.g. 1000,5000,20000; k suffix ok).
    #[arg(long, value_name = "A,B,C")]
    rates: Option<String>,
    /// Seconds each open-loop step runs (default 5).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    duration: Option<f64>,
    /// Open-loop callers, or a comma-separated list to sweep (default 1).
    #[arg(long, value_name = "C[,C…]")]
    concurrency: Option<String>,
    /// With a sweep: report the highest rate whose p99 stayed at or under MICROS.
    #[arg(long, value_name = "MICROS", allow_negative_numbers = true)]
    p99_under: Option<f64>,
    /// Measure cold starts (spawn + initialize + tools/list) instead of warm calls.
    #[arg(long, conflicts_with = "providers")]
    cold: bool,
    /// K providers of the same plugin called concurrently from K threads.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    providers: Option<u16>,
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

/// The options of `bench` with its target flags in command-line order.
#[derive(Debug)]
pub(super) struct BenchArgs {
    /// Boxed: the flags are many, and the command enum holds this by value.
    flags: Box<BenchFlags>,
    order: Vec<Flag>,
}

impl FromArgMatches for BenchArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(BenchArgs {
            flags: Box::new(BenchFlags::from_arg_matches(matches)?),
            order: targets::flags_in_order(matches),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.flags.update_from_arg_matches(matches)?;
        self.order = targets::flags_in_order(matches);
        Ok(())
    }
}

impl Args for BenchArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        BenchFlags::augment_args(cmd)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        BenchFlags::augment_args_for_update(cmd)
    }
}

/// Most calls one bench run may record (all targets, rounds and steps): bounds the sample
/// buffers (about 9 bytes a call).
const MAX_COUNT: usize = 10_000_000;

fn parse_count(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n <= MAX_COUNT => Ok(n),
        _ => Err(format!("expected a whole number from 0 to {MAX_COUNT}")),
    }
}

/// A comma-separated list of positive numbers, `k` meaning thousands (`1k,5k,20000`).
fn parse_list(flag: &str, text: &str) -> Result<Vec<f64>, String> {
    text.split(',')
        .map(|item| {
            let item = item.trim();
            let (digits, scale) = match item.strip_suffix(['k', 'K']) {
                Some(d) => (d, 1e3),
                None => (item, 1.0),
            };
            match digits.parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 => Ok(v * scale),
                Ok(_) => Err(format!(
                    "{flag}: every value must be greater than 0, not `{item}`"
                )),
                Err(_) => Err(format!("{flag}: `{item}` is not a number")),
            }
        })
        .collect()
}

/// What a run was asked to do, checked.
struct Plan {
    specs: Vec<TargetSpec>,
    arguments: Value,
    n: usize,
    rounds: usize,
    /// The open-loop sweep: rates and concurrencies (empty for the closed loop).
    rates: Vec<f64>,
    concurrencies: Vec<usize>,
    duration: f64,
    token: Option<String>,
}

/// Checks the options; a usage error's message otherwise.
fn plan(args: &BenchArgs) -> Result<Plan, String> {
    let f = &args.flags;
    let arguments: Value = match serde_json::from_str(&f.arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => return Err("--arguments must be a JSON object, e.g. '{\"text\":\"hi\"}'".into()),
    };
    if f.n == Some(0) {
        return Err("-n 0 measures nothing: give at least 1 call per round".into());
    }
    if f.rounds == Some(0) {
        return Err("--rounds 0 measures nothing: give at least 1 round".into());
    }
    let specs = targets::targets(&args.order)?;
    let legacy = legacy::wanted(f);
    if legacy && (specs.len() > 1 || !specs[0].in_process()) {
        return Err(
            "--cold, --providers, --idle, --startup and --switches bench one in-process target \
             (--command, or --config with one --plugin)"
                .into(),
        );
    }
    if legacy && f.rounds.is_some() {
        return Err(
            "--rounds is for warm calls; --cold, --providers, --idle, --startup and \
                    --switches make one run"
                .into(),
        );
    }
    let rates = match (f.rate, &f.rates) {
        (Some(r), _) if !(r.is_finite() && r > 0.0) => {
            return Err(format!("--rate {r}: give calls per second greater than 0"))
        }
        (Some(r), _) => vec![r],
        (None, Some(list)) => parse_list("--rates", list)?,
        (None, None) => Vec::new(),
    };
    let duration = f.duration.unwrap_or(5.0);
    if !(duration.is_finite() && duration > 0.0) {
        return Err(format!(
            "--duration {duration}: give seconds greater than 0"
        ));
    }
    let concurrencies: Vec<usize> = match &f.concurrency {
        None => vec![1],
        Some(list) => parse_list("--concurrency", list)?
            .into_iter()
            .map(|c| {
                if c.fract() == 0.0 && c <= 256.0 {
                    Ok(c as usize)
                } else {
                    Err(format!(
                        "--concurrency: {c} is not a whole number from 1 to 256"
                    ))
                }
            })
            .collect::<Result<_, _>>()?,
    };
    if let Some(bound) = f.p99_under {
        if !(bound.is_finite() && bound > 0.0) {
            return Err(format!(
                "--p99-under {bound}: give microseconds greater than 0"
            ));
        }
        if rates.is_empty() {
            return Err("--p99-under needs an open-loop run: --rate N or --rates A,B,C".into());
        }
    }
    if rates.is_empty() && (f.duration.is_some() || f.concurrency.is_some()) {
        return Err("--duration and --concurrency are for the open loop: add --rate N".into());
    }
    if !rates.is_empty() && legacy {
        return Err(
            "--rate is not for --cold, --providers, --idle, --startup or --switches".into(),
        );
    }
    for (flag, path) in [
        ("--export-hgrm", &f.export_hgrm),
        ("--export-csv", &f.export_csv),
        ("--plot", &f.plot),
    ] {
        let Some(path) = path else { continue };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        if !dir.is_dir() {
            return Err(format!(
                "{flag} {}: the directory {} does not exist",
                path.display(),
                dir.display()
            ));
        }
    }
    if f.save_baseline.is_some() || f.baseline.is_some() {
        if !rates.is_empty() || legacy {
            return Err(
                "--save-baseline and --baseline are for the closed loop (warm calls in \
                        rounds)"
                    .into(),
            );
        }
        for name in [&f.save_baseline, &f.baseline].into_iter().flatten() {
            export::baseline_path(name)?;
        }
    }
    let rounds = f.rounds.unwrap_or(5);
    let n = f.n.unwrap_or(20_000);
    let calls: f64 = if rates.is_empty() {
        (n as f64) * (rounds as f64) * specs.len() as f64
    } else {
        rates.iter().map(|r| r * duration).sum::<f64>()
            * concurrencies.len() as f64
            * specs.len() as f64
    };
    if calls > MAX_COUNT as f64 {
        return Err(format!(
            "this run would record {calls:.0} calls, more than {MAX_COUNT}: lower -n, --rounds, \
             the rates or --duration"
        ));
    }
    let token = if specs.iter().any(TargetSpec::needs_token) {
        let found = super::target::credential(
            super::target::CredentialFlags {
                token: f.token.as_deref(),
                token_file: f.token_file.as_deref(),
                env_file: f.env_file.as_deref(),
                needed_by: "--server-url",
            },
            &["WEBCODEX_TOKEN", "WEBCODEX_PAT"],
            &|name| std::env::var(name).ok(),
        )?;
        super::redact::register(&found.token);
        Some(found.token)
    } else {
        None
    };
    Ok(Plan {
        specs,
        arguments,
        n,
        rounds,
        rates,
        concurrencies,
        duration,
        token,
    })
}

pub(super) fn run(args: BenchArgs) -> i32 {
    let plan = match plan(&args) {
        Ok(plan) => plan,
        Err(message) => {
            eprintln!("error: {message}");
            return EXIT_USAGE;
        }
    };
    let f = &args.flags;
    if let Some(name) = &f.baseline {
        if let Err(message) = export::load_baseline(name) {
            eprintln!("error: --baseline {message}");
            return EXIT_USAGE;
        }
    }
    if legacy::wanted(f) {
        let spec = &plan.specs[0];
        return match targets::provider_of(&spec.source) {
            Ok(provider) => legacy::run(f, &spec.name, provider, &plan.arguments),
            Err(message) => {
                eprintln!("error: {message}");
                EXIT_USAGE
            }
        };
    }
    let result = if plan.rates.is_empty() {
        report::run(f, &plan)
    } else {
        load::run(f, &plan)
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            EXIT_FAILURE
        }
    }
}
