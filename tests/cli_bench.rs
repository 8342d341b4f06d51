//! `webcodex-plugin bench` (docs/PROTOCOL.md §9.5, bench) run as a process: the request count
//! reaching the plugin and the shape of the JSON result line. Latency values are checked only for
//! their internal order, never against a duration.

mod common;
mod tempdir;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use common::Run;
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest one bench process may run before the test gives up (a hang, never a timing).
const PROCESS_LIMIT: Duration = Duration::from_secs(60);

/// Runs `webcodex-plugin bench ARGS` with `FIXTURE_LOG` set when given.
fn bench(args: &[&str], fixture_log: Option<&Path>) -> Run {
    let mut cmd = common::cli_command(BIN);
    cmd.arg("bench").args(args);
    if let Some(log) = fixture_log {
        cmd.env("FIXTURE_LOG", log);
    }
    common::run_to_end(cmd, PROCESS_LIMIT)
}

/// Asserts exit 0 and one JSON result line with the bench keys (docs/PROTOCOL.md §9.5) in a
/// consistent order; returns it.
fn result_line(run: &Run) -> Value {
    assert_eq!(run.code, Some(0), "bench failed: {run:?}");
    let line = run
        .stdout
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("no newline-terminated line: {run:?}"));
    assert!(!line.contains('\n'), "more than one line: {run:?}");
    let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    // Today's keys, which the side-by-side harness reads; the new figures are added keys.
    for key in [
        "calls_per_s",
        "max_us",
        "n",
        "name",
        "p50_us",
        "p90_us",
        "p99_us",
        "rss_kb",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["name"], "webcodex-plugin-host");
    let f = |key: &str| {
        v[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} is not a number: {v}"))
    };
    assert!(f("p50_us") > 0.0, "{v}");
    assert!(
        f("p50_us") <= f("p90_us") && f("p90_us") <= f("p99_us") && f("p99_us") <= f("max_us"),
        "percentiles out of order: {v}"
    );
    assert!(f("calls_per_s") > 0.0, "{v}");
    assert!(v["rss_kb"].as_u64().is_some_and(|kb| kb > 0), "{v}");
    v
}

#[test]
fn bench_command_makes_exactly_warmup_plus_n_calls_after_the_handshake() {
    let dir = TempDir::new("cli-bench", "count");
    let log = dir.path("stdin.log");
    let fixture = common::fixture_path();
    let run = bench(
        &[
            "--command",
            fixture.to_str().expect("fixture path is UTF-8"),
            "-n",
            "30",
            "--warmup",
            "7",
            "--rounds",
            "1",
            "--json",
        ],
        Some(&log),
    );
    let v = result_line(&run);
    assert_eq!(v["n"], 30, "{v}");

    let logged: Vec<Value> = std::fs::read_to_string(&log)
        .expect("the provider inherited FIXTURE_LOG")
        .lines()
        .map(|l| serde_json::from_str(l).expect("logged line is JSON"))
        .collect();
    let methods: Vec<&str> = logged
        .iter()
        .map(|l| l["method"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(methods.len(), 2 + 7 + 30, "{methods:?}");
    assert_eq!(methods[..2], ["initialize", "tools/list"]);
    for line in &logged[2..] {
        assert_eq!(line["method"], "tools/call", "{line}");
        assert_eq!(line["params"]["name"], "echo", "{line}");
        assert_eq!(
            line["params"]["arguments"],
            serde_json::json!({"text": "hello"})
        );
    }
    let ids: Vec<u64> = logged.iter().filter_map(|l| l["id"].as_u64()).collect();
    assert_eq!(ids, (1..=39).collect::<Vec<u64>>());
}

#[test]
fn bench_of_the_built_in_example_plugin_succeeds() {
    let v = result_line(&bench(&["-n", "20", "--json"], None));
    // Five rounds of 20 by default; `n` counts every measured call.
    assert_eq!(v["n"], 100, "{v}");
    assert_eq!(v["rounds"], 5, "{v}");
}

#[test]
fn bench_of_cold_starts_succeeds() {
    let v = result_line(&bench(&["--cold", "-n", "3", "--json"], None));
    assert_eq!(v["n"], 3, "{v}");
}

#[test]
fn bench_of_concurrent_providers_succeeds() {
    let v = result_line(&bench(&["--providers", "3", "-n", "50", "--json"], None));
    // Today every measured call of the three providers is a sample (n = 150); docs/PROTOCOL.md §9.5
    // does not say whether `n` is per provider, so either count is accepted.
    let n = v["n"].as_u64().expect("n");
    assert!(n == 50 || n == 150, "{v}");
}

#[test]
fn bench_human_output_names_the_calls_and_the_percentiles() {
    let run = bench(&["-n", "5", "--warmup", "1", "--rounds", "1"], None);
    assert_eq!(run.code, Some(0), "{run:?}");
    for needle in ["5 sequential calls of `echo`", "p50", "p99", "per second"] {
        assert!(
            run.stdout.contains(needle),
            "missing {needle}: {}",
            run.stdout
        );
    }
}

#[test]
fn bench_with_arguments_that_are_not_an_object_is_a_usage_error() {
    let run = bench(&["-n", "1", "--arguments", "[1]", "--json"], None);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("--arguments"), "{}", run.stderr);
}

/// `calls_per_s` is "measured calls divided by the wall time of the measured loop"
/// (`BenchSummary`). With `--providers` the wall clock starts before the threads run their
/// warm-up, so a long warm-up drags the rate far below what the measured samples allow.
/// Bound used: the measured loop of one thread cannot take longer than n × max_us, plus a
/// generous allowance for the threads leaving the barrier.
#[test]
fn bench_of_concurrent_providers_rates_only_the_measured_loop() {
    let v = result_line(&bench(
        &["--providers", "3", "-n", "50", "--warmup", "3000", "--json"],
        None,
    ));
    let max_s = v["max_us"].as_f64().expect("max_us") / 1e6;
    let longest_loop_s = 50.0 * max_s + 0.05;
    let lowest_rate = 150.0 / longest_loop_s;
    assert!(
        v["calls_per_s"].as_f64().expect("calls_per_s") >= lowest_rate,
        "calls_per_s below what the measured samples allow (≥ {lowest_rate:.0}/s): {v}"
    );
}

/// Runs `bench ARGS` with extra environment variables.
fn bench_env(args: &[&str], env: &[(&str, &Path)]) -> Run {
    let mut cmd = common::cli_command(BIN);
    for key in common::PROXY_VARIABLES {
        cmd.env_remove(key);
    }
    cmd.arg("bench").args(args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    common::run_to_end(cmd, PROCESS_LIMIT)
}

/// The one JSON line of a successful run.
fn json_of(run: &Run) -> Value {
    assert_eq!(run.code, Some(0), "bench failed: {run:?}");
    let line = run.stdout.trim_end();
    assert!(!line.contains('\n'), "more than one line: {run:?}");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

fn fixture() -> String {
    common::fixture_path()
        .to_str()
        .expect("fixture path is UTF-8")
        .to_string()
}

/// The `tools/call` requests a fixture logged.
fn logged_calls(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"tools/call\""))
        .count()
}

#[test]
fn bench_rounds_make_warmup_then_rounds_times_n_calls_and_report_each_round() {
    let dir = TempDir::new("cli-bench", "rounds");
    let log = dir.path("stdin.log");
    let fx = fixture();
    let run = bench(
        &[
            "--command",
            &fx,
            "-n",
            "10",
            "--rounds",
            "3",
            "--warmup",
            "2",
            "--json",
        ],
        Some(&log),
    );
    let v = result_line(&run);
    assert_eq!(logged_calls(&log), 2 + 3 * 10);
    assert_eq!(v["n"], 30, "{v}");
    assert_eq!(v["rounds"], 3, "{v}");
    let rounds = v["round_p50_us"].as_array().expect("round_p50_us");
    assert_eq!(rounds.len(), 3, "{v}");
    let median = v["median_p50_us"].as_f64().expect("median");
    let ci = v["median_p50_ci_us"].as_array().expect("interval");
    let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
    assert!(lo <= median && median <= hi, "{v}");
    let lowest = rounds
        .iter()
        .filter_map(Value::as_f64)
        .fold(f64::MAX, f64::min);
    let highest = rounds.iter().filter_map(Value::as_f64).fold(0.0, f64::max);
    assert!(lowest <= median && median <= highest, "{v}");
    for key in [
        "p99_9_us",
        "p99_99_us",
        "min_us",
        "mean_us",
        "stddev_us",
        "clock_ns",
    ] {
        assert!(v[key].as_f64().is_some(), "{key}: {v}");
    }
    assert_eq!(
        (
            v["ok"].as_u64(),
            v["tool_errors"].as_u64(),
            v["failures"].as_u64()
        ),
        (Some(30), Some(0), Some(0))
    );
    assert!(
        v["percentiles"].as_array().is_some_and(|t| t.len() > 5),
        "{v}"
    );
}

/// A plugin (Python, standard library) with one tool `echo` that appends its name (argv 1) to a
/// shared log (argv 2) on each call: the log shows the order in which targets were called.
const NAMED_PLUGIN: &str = r#"import json, sys
name, log = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    req = json.loads(line)
    if "id" not in req:
        continue
    method = req.get("method")
    if method == "initialize":
        res = {"protocolVersion": "webcodex-plugin-v1", "serverInfo": {"name": name}}
    elif method == "tools/list":
        res = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    else:
        with open(log, "a") as f:
            f.write(name + "\n")
        res = {"content": [{"type": "text", "text": name}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": res}) + "\n")
    sys.stdout.flush()
"#;

#[test]
fn bench_two_targets_take_turns_round_by_round_and_compare_to_the_first() {
    let dir = TempDir::new("cli-bench", "two");
    let script = dir.write("named.py", NAMED_PLUGIN);
    let log = dir.path("order.log");
    let (script, log_arg) = (script.to_str().unwrap(), log.to_str().unwrap());
    let run = bench(
        &[
            "--command",
            "python3",
            "--arg",
            script,
            "--arg",
            "A",
            "--arg",
            log_arg,
            "--name",
            "first",
            "--command",
            "python3",
            "--arg",
            script,
            "--arg",
            "B",
            "--arg",
            log_arg,
            "--name",
            "second",
            "-n",
            "4",
            "--rounds",
            "3",
            "--warmup",
            "2",
            "--json",
        ],
        None,
    );
    let v = json_of(&run);
    let order = std::fs::read_to_string(&log)
        .expect("order log")
        .replace('\n', "");
    assert_eq!(order, format!("AABB{}", "AAAABBBB".repeat(3)));
    let targets = v["targets"].as_array().expect("targets");
    let names: Vec<&str> = targets.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["first", "second"]);
    let mut ranking: Vec<&str> = v["ranking"]
        .as_array()
        .expect("ranking")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    ranking.sort_unstable();
    assert_eq!(ranking, ["first", "second"]);
    assert!(targets[0].get("ratio_to_first").is_none(), "{v}");
    let ratio = &targets[1]["ratio_to_first"];
    assert_eq!(ratio["reference"], "first");
    let (r, lo, hi) = (
        ratio["ratio"].as_f64().unwrap(),
        ratio["ci"][0].as_f64().unwrap(),
        ratio["ci"][1].as_f64().unwrap(),
    );
    assert!(0.0 < lo && lo <= r && r <= hi, "{ratio}");
    for t in targets {
        assert_eq!(t["n"], 12, "{t}");
    }
    // The human report ranks them and states the ratio.
    let human = bench(
        &[
            "--command",
            "python3",
            "--arg",
            script,
            "--arg",
            "A",
            "--arg",
            log_arg,
            "--command",
            "python3",
            "--arg",
            script,
            "--arg",
            "B",
            "--arg",
            log_arg,
            "-n",
            "3",
            "--rounds",
            "2",
            "--warmup",
            "0",
        ],
        None,
    );
    assert_eq!(human.code, Some(0), "{human:?}");
    assert!(
        human.stdout.contains("ranking by median p50: 1. "),
        "{}",
        human.stdout
    );
    assert!(human.stdout.contains("× ["), "{}", human.stdout);
    assert!(
        human.stdout.contains("than python3\n") || human.stdout.contains("than python3 ("),
        "{}",
        human.stdout
    );
}

#[test]
fn bench_counts_is_error_and_failures_apart_and_fail_on_error_exits_1() {
    let fx = fixture();
    let common_args = [
        "--command",
        fx.as_str(),
        "--arguments",
        "{}",
        "-n",
        "5",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--json",
    ];
    let tool_errors = json_of(&bench(
        &[&common_args[..], &["--tool", "is_error"]].concat(),
        None,
    ));
    assert_eq!(
        (
            tool_errors["ok"].as_u64(),
            tool_errors["tool_errors"].as_u64(),
            tool_errors["failures"].as_u64()
        ),
        (Some(0), Some(10), Some(0)),
        "{tool_errors}"
    );
    let failures = json_of(&bench(
        &[&common_args[..], &["--tool", "rpc_error"]].concat(),
        None,
    ));
    assert_eq!(
        (
            failures["ok"].as_u64(),
            failures["tool_errors"].as_u64(),
            failures["failures"].as_u64()
        ),
        (Some(0), Some(0), Some(10)),
        "{failures}"
    );
    let warnings = failures["warnings"].to_string();
    assert!(warnings.contains("10 of 10 calls failed"), "{warnings}");
    for tool in ["is_error", "rpc_error"] {
        let run = bench(
            &[&common_args[..], &["--tool", tool, "--fail-on-error"]].concat(),
            None,
        );
        assert_eq!(run.code, Some(1), "{tool}: {run:?}");
    }
    let fine = bench(
        &[
            "--command",
            fx.as_str(),
            "-n",
            "3",
            "--rounds",
            "1",
            "--warmup",
            "0",
            "--fail-on-error",
            "--json",
        ],
        None,
    );
    assert_eq!(fine.code, Some(0), "{fine:?}");
}

#[test]
fn bench_refuses_nonsense_counts_with_exit_2_and_a_message() {
    let cases: [(&[&str], &str); 8] = [
        (&["-n", "0"], "-n 0"),
        (&["--rounds", "0"], "--rounds 0"),
        (&["--rate", "0"], "--rate 0"),
        (&["--rate", "-5"], "--rate -5"),
        (&["--rate", "10", "--duration", "0"], "--duration 0"),
        (&["--rate", "10", "--duration", "-1"], "--duration -1"),
        (&["--rates", "100,0"], "--rates"),
        (&["--rate", "10", "--concurrency", "0"], "--concurrency"),
    ];
    for (args, needle) in cases {
        let run = bench(args, None);
        assert_eq!(run.code, Some(2), "{args:?}: {run:?}");
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
    let misplaced = bench(&["--arg", "x"], None);
    assert_eq!(misplaced.code, Some(2), "{misplaced:?}");
    let no_baseline = bench_env(
        &["--baseline", "none-such", "-n", "1"],
        &[("WEBCODEX_BENCH_DIR", Path::new("/nonexistent-bench-dir"))],
    );
    assert_eq!(no_baseline.code, Some(2), "{no_baseline:?}");
    assert!(
        no_baseline.stderr.contains("no baseline `none-such`"),
        "{}",
        no_baseline.stderr
    );
}
