//! `webcodex-plugin bench` (docs/PROTOCOL.md §9.5, bench) run as a process: the request count
//! reaching the plugin and the shape of the JSON result line. Latency values are checked only for
//! their internal order, never against a duration.

use crate::common;
use crate::tempdir;

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
    let mut keys: Vec<&str> = v
        .as_object()
        .expect("result is an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "calls_per_s",
            "max_us",
            "n",
            "name",
            "p50_us",
            "p90_us",
            "p99_us",
            "rss_kb"
        ],
        "{v}"
    );
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
    assert_eq!(v["n"], 20, "{v}");
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
    let run = bench(&["-n", "5", "--warmup", "1"], None);
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
