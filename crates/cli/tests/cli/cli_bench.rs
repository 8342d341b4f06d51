//! `webcodex-plugin bench` (docs/PROTOCOL.md §9.5, bench) run as a process: the request count
//! reaching the plugin and the shape of the JSON result line. Latency values are checked only for
//! their internal order, never against a duration.

use crate::bench_support;
use crate::common;
use crate::tempdir;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use bench_support::{argv, bench_in, fixture, json_of, logged_calls, svg_series, svg_texts};
use common::serve::TOKEN_ALL;
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

/// Runs `bench` with the words of `template`, each `{}` replaced by the next value.
fn run(template: &str, values: &[&str]) -> Run {
    bench_in(&argv(template, values), &[])
}

fn counts(v: &Value) -> (Option<u64>, Option<u64>, Option<u64>) {
    let n = |k: &str| v[k].as_u64();
    (n("ok"), n("tool_errors"), n("failures"))
}

#[test]
fn bench_rounds_make_warmup_then_rounds_times_n_calls_and_report_each_round() {
    let dir = TempDir::new("cli-bench", "rounds");
    let log = dir.path("stdin.log");
    let args = argv(
        "--command {} -n 10 --rounds 3 --warmup 2 --json",
        &[&fixture()],
    );
    let v = result_line(&bench_in(&args, &[("FIXTURE_LOG", &log)]));
    assert_eq!(logged_calls(&log), 2 + 3 * 10);
    assert_eq!(
        (v["n"].as_u64(), v["rounds"].as_u64()),
        (Some(30), Some(3)),
        "{v}"
    );
    let rounds: Vec<f64> = v["round_p50_us"]
        .as_array()
        .expect("round_p50_us")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert_eq!(rounds.len(), 3, "{v}");
    let median = v["median_p50_us"].as_f64().expect("median");
    let (lo, hi) = (
        v["median_p50_ci_us"][0].as_f64(),
        v["median_p50_ci_us"][1].as_f64(),
    );
    assert!(lo <= Some(median) && Some(median) <= hi, "{v}");
    let lowest = rounds.iter().copied().fold(f64::MAX, f64::min);
    let highest = rounds.iter().copied().fold(0.0, f64::max);
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
    assert_eq!(counts(&v), (Some(30), Some(0), Some(0)), "{v}");
    assert!(
        v["percentiles"].as_array().is_some_and(|t| t.len() > 5),
        "{v}"
    );
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn bench_two_targets_take_turns_round_by_round_and_compare_to_the_first() {
    let dir = TempDir::new("cli-bench", "two");
    let script = dir.write("named.py", bench_support::NAMED_PLUGIN);
    let log = dir.path("order.log");
    let (script, log) = (script.to_str().unwrap(), log.to_str().unwrap());
    let targets = "--command python3 --arg {} --arg A --arg {} --name first \
                   --command python3 --arg {} --arg B --arg {} --name second";
    let paths = [script, log, script, log];
    let v = json_of(&run(
        &format!("{targets} -n 4 --rounds 3 --warmup 2 --json"),
        &paths,
    ));
    let order = std::fs::read_to_string(log)
        .expect("order log")
        .replace('\n', "");
    assert_eq!(order, format!("AABB{}", "AAAABBBB".repeat(3)));
    let targets_json = v["targets"].as_array().expect("targets");
    let names: Vec<&str> = targets_json
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["first", "second"]);
    let mut ranking: Vec<&str> = v["ranking"]
        .as_array()
        .expect("ranking")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    ranking.sort_unstable();
    assert_eq!(ranking, ["first", "second"]);
    assert!(targets_json[0].get("ratio_to_first").is_none(), "{v}");
    let ratio = &targets_json[1]["ratio_to_first"];
    assert_eq!(ratio["reference"], "first");
    let r = ratio["ratio"].as_f64().unwrap();
    let (lo, hi) = (
        ratio["ci"][0].as_f64().unwrap(),
        ratio["ci"][1].as_f64().unwrap(),
    );
    assert!(0.0 < lo && lo <= r && r <= hi, "{ratio}");
    assert!(targets_json.iter().all(|t| t["n"] == 12), "{v}");
    // Unnamed, they are named after their program; the report ranks them and gives the ratio.
    let unnamed = "--command python3 --arg {} --arg A --arg {} \
                   --command python3 --arg {} --arg B --arg {} -n 3 --rounds 2 --warmup 0";
    let human = run(unnamed, &paths);
    assert_eq!(human.code, Some(0), "{human:?}");
    let out = &human.stdout;
    assert!(out.contains("ranking by median p50: 1. "), "{out}");
    assert!(
        out.contains("  python3-2: ") && out.contains("× ["),
        "{out}"
    );
    assert!(
        out.contains(" than python3\n") || out.contains(" than python3 ("),
        "{out}"
    );
}

#[test]
fn bench_counts_is_error_and_failures_apart_and_fail_on_error_exits_1() {
    let fx = fixture();
    let base = "--command {} --arguments {} -n 5 --rounds 2 --warmup 0 --json --tool";
    let with = |extra: &str| run(&format!("{base} {extra}"), &[&fx, "{}"]);
    let tool_errors = json_of(&with("is_error"));
    assert_eq!(
        counts(&tool_errors),
        (Some(0), Some(10), Some(0)),
        "{tool_errors}"
    );
    let failures = json_of(&with("rpc_error"));
    assert_eq!(
        counts(&failures),
        (Some(0), Some(0), Some(10)),
        "{failures}"
    );
    let warnings = failures["warnings"].to_string();
    assert!(warnings.contains("10 of 10 calls failed"), "{warnings}");
    for tool in ["is_error", "rpc_error"] {
        let failed = with(&format!("{tool} --fail-on-error"));
        assert_eq!(failed.code, Some(1), "{tool}: {failed:?}");
    }
    let fine = run(
        "--command {} -n 3 --rounds 1 --warmup 0 --fail-on-error --json",
        &[&fx],
    );
    assert_eq!(fine.code, Some(0), "{fine:?}");
}

#[test]
fn bench_refuses_nonsense_counts_with_exit_2_and_a_message() {
    let cases = [
        ("-n 0", "-n 0"),
        ("--rounds 0", "--rounds 0"),
        ("--rate 0", "--rate 0"),
        ("--rate -5", "--rate -5"),
        ("--rate 10 --duration 0", "--duration 0"),
        ("--rate 10 --duration -1", "--duration -1"),
        ("--rates 100,0", "--rates"),
        ("--rate 10 --concurrency 0", "--concurrency"),
        ("--arg x", "--arg x must follow"),
        ("--save-baseline ../escape", "baseline name `../escape`"),
    ];
    for (args, needle) in cases {
        let refused = run(args, &[]);
        assert_eq!(refused.code, Some(2), "{args}: {refused:?}");
        assert_eq!(refused.stdout, "", "{args}");
        assert!(
            refused.stderr.contains(needle),
            "{args}: {}",
            refused.stderr
        );
    }
    let store = Path::new("/nonexistent-bench-dir");
    let missing = bench_in(
        &argv("--baseline none-such -n 1", &[]),
        &[("WEBCODEX_BENCH_DIR", store)],
    );
    assert_eq!(missing.code, Some(2), "{missing:?}");
    assert!(
        missing.stderr.contains("no baseline `none-such`"),
        "{}",
        missing.stderr
    );
}

#[test]
fn bench_open_loop_makes_the_scheduled_calls_from_several_callers() {
    let dir = TempDir::new("cli-bench", "open");
    let (log, csv) = (dir.path("stdin.log"), dir.path("calls.csv"));
    let args = argv(
        "--command {} --rate 200 --duration 0.5 --concurrency 2 --warmup 4 --json --export-csv {}",
        &[&fixture(), csv.to_str().unwrap()],
    );
    let v = json_of(&bench_in(&args, &[("FIXTURE_LOG", &log)]));
    assert_eq!(v["mode"], "open", "{v}");
    let step = &v["steps"][0];
    assert_eq!(
        (step["rate"].as_f64(), step["concurrency"].as_u64()),
        (Some(200.0), Some(2))
    );
    assert_eq!(step["n"], 100, "{v}");
    assert_eq!(counts(step), (Some(100), Some(0), Some(0)), "{v}");
    assert!(
        step["achieved_per_s"].as_f64().is_some_and(|r| r > 0.0),
        "{v}"
    );
    assert!(
        step["late"].as_u64().is_some() && step["max_lag_us"].as_f64().is_some(),
        "{v}"
    );
    // Two providers (one per caller), each warmed up with half the warm-up.
    assert_eq!(logged_calls(&log), 4 + 100);
    let rows = std::fs::read_to_string(&csv).expect("csv");
    assert_eq!(rows.lines().count(), 1 + 100);
    let mut calls = rows.lines().skip(1);
    assert!(calls.all(|l| l.starts_with("webcodex-plugin-host,1,") && l.ends_with(",ok")));
}

#[test]
fn bench_rate_sweep_finds_the_highest_rate_under_the_p99_bound_and_plots_it() {
    let dir = TempDir::new("cli-bench", "sweep");
    let svg = dir.path("sweep.svg");
    let sweep = "--command {} --rates 50,100,150 --duration 1 --p99-under 1000000 --warmup 10";
    let v = json_of(&run(
        &format!("{sweep} --json --plot {{}}"),
        &[&fixture(), svg.to_str().unwrap()],
    ));
    let steps = v["steps"].as_array().expect("steps");
    let rates: Vec<f64> = steps.iter().filter_map(|s| s["rate"].as_f64()).collect();
    assert_eq!(rates, [50.0, 100.0, 150.0]);
    let calls: Vec<u64> = steps.iter().filter_map(|s| s["n"].as_u64()).collect();
    assert_eq!(calls, [50, 100, 150]);
    // A p99 bound of one second holds at any of these rates; "held" also needs 95 % of the
    // rate achieved, which a slow machine may miss at the top rate.
    let held = v["held"][0]["rate"].as_f64().expect("a rate held");
    assert!(rates.contains(&held), "{v}");
    // p50 and p99 against the achieved rate: two lines.
    assert_eq!(svg_series(&svg), 2);
    let texts = svg_texts(&svg);
    for label in ["webcodex-plugin-host p50", "webcodex-plugin-host p99"] {
        assert!(texts.iter().any(|t| t == label), "{texts:?}");
    }
    let short = "--command {} --rates 50,100 --duration 0.2 --p99-under 1000000 --warmup 0";
    let human = run(short, &[&fixture()]);
    assert_eq!(human.code, Some(0), "{human:?}");
    let answer = "the highest rate whose p99 stayed at or under 1000000 µs";
    assert!(human.stdout.contains(answer), "{}", human.stdout);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn bench_measures_each_path_http_mcp_a_front_a_gateway_and_in_process_in_one_run() {
    let dir = TempDir::new("cli-bench", "paths");
    let runner_toml = bench_support::fixture_runner(&dir);
    let tokens = common::serve::write_tokens_file(&dir.path(""));
    let tokens = tokens.to_str().unwrap();
    let log = dir.path("runner.log");
    let config = runner_toml.to_str().unwrap();
    let runner = bench_support::serve(&["--config", config, "--tokens", tokens], &log);
    let token_file = dir.write("all.tok", &format!("{TOKEN_ALL}\n"));
    let token_file = token_file.to_str().unwrap();
    let runners = dir.write(
        "runners.toml",
        &format!(
            "[[runners]]\nid = \"edge\"\nname = \"Edge\"\nurl = \"{}\"\ntoken_file = {token_file:?}\n",
            runner.url()
        ),
    );
    let front_log = dir.path("front.log");
    let runners = runners.to_str().unwrap();
    let front = bench_support::serve(&["--runners", runners, "--tokens", tokens], &front_log);
    let (url, front_url) = (runner.url(), front.url());
    let targets = "--token-file {} --server-url {} --plugin fx --server-url {} --mcp --plugin fx \
                   --server-url {} --runner edge --plugin fx --config {} --plugin fx \
                   --config {} --gateway --plugin fx";
    let values = [token_file, &url, &url, &front_url, config, config];
    let v = json_of(&run(
        &format!("{targets} -n 5 --rounds 2 --warmup 1 --json"),
        &values,
    ));
    let targets = v["targets"].as_array().expect("targets");
    let names: Vec<&str> = targets.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        ["fx@http", "fx@mcp", "fx@http.edge", "fx", "fx@gateway"]
    );
    for t in targets {
        assert_eq!(counts(t), (Some(10), Some(0), Some(0)), "{t}");
    }
    // The three remote targets reached the runner's plugin: 3 × (1 warm-up + 10 measured).
    assert_eq!(logged_calls(&log), 3 * 11);
    // A call with isError over MCP is the tool's error, not a failure.
    let mcp = "--token-file {} --server-url {} --mcp --plugin fx --tool is_error --arguments {} \
               -n 3 --rounds 1 --warmup 0 --json";
    let is_error = json_of(&run(mcp, &[token_file, &url, "{}"]));
    assert_eq!(counts(&is_error), (Some(0), Some(3), Some(0)), "{is_error}");
    // A plugin the runner lacks: refused before any call, exit 1, the reason named.
    let missing = run(
        "--token-file {} --server-url {} --plugin nope -n 1",
        &[token_file, &url],
    );
    assert_eq!(missing.code, Some(1), "{missing:?}");
    assert!(missing.stderr.contains("describe"), "{}", missing.stderr);
    front.stop();
    runner.stop();
}

#[test]
fn bench_exports_hgrm_csv_and_an_svg_with_one_series_per_target() {
    let dir = TempDir::new("cli-bench", "exports");
    let (hgrm, csv, svg) = (
        dir.path("out.hgrm"),
        dir.path("calls.csv"),
        dir.path("p.svg"),
    );
    let fx = fixture();
    let template = "--command {} --name rust --command {} --name again -n 20 --rounds 2 \
                    --warmup 2 --export-hgrm {} --export-csv {} --plot {}";
    let files = [
        hgrm.to_str().unwrap(),
        csv.to_str().unwrap(),
        svg.to_str().unwrap(),
    ];
    let exported = run(template, &[&[fx.as_str(), &fx][..], &files].concat());
    assert_eq!(exported.code, Some(0), "{exported:?}");
    for name in ["rust", "again"] {
        let text = std::fs::read_to_string(dir.path(&format!("out-{name}.hgrm"))).expect("hgrm");
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
        assert_eq!(
            header,
            ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
        );
        let rows: Vec<Vec<f64>> = lines
            .skip(1)
            .take_while(|l| !l.starts_with('#'))
            .map(|l| {
                l.split_whitespace()
                    .map(|x| x.parse().expect("a number"))
                    .collect()
            })
            .collect();
        assert!(rows.len() > 5, "{text}");
        let rising = |w: &[Vec<f64>]| (0..3).all(|c| w[0][c] <= w[1][c]);
        assert!(rows.windows(2).all(rising), "{text}");
        let last = rows.last().unwrap();
        assert_eq!((last.len(), last[1], last[2]), (3, 1.0, 40.0), "{text}");
        assert!(text.contains("#[Mean    = "), "{text}");
        assert!(text.contains("Total count    =           40]"), "{text}");
        assert!(text.contains("#[Buckets = "), "{text}");
    }
    assert!(!hgrm.exists(), "several targets write FILE-NAME.ext only");
    let rows = std::fs::read_to_string(&csv).expect("csv");
    let mut lines = rows.lines();
    assert_eq!(lines.next(), Some("target,round,latency_ns,outcome"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2 * 2 * 20);
    for (target, round) in [("rust", "1"), ("rust", "2"), ("again", "1"), ("again", "2")] {
        let n = rows
            .iter()
            .filter(|r| r[0] == target && r[1] == round)
            .count();
        assert_eq!(n, 20, "{target} round {round}");
    }
    assert!(rows
        .iter()
        .all(|r| r[2].parse::<u64>().is_ok_and(|ns| ns > 0) && r[3] == "ok"));
    assert_eq!(svg_series(&svg), 2);
    let texts = svg_texts(&svg);
    for label in ["rust", "again", "99%"] {
        assert!(texts.iter().any(|t| t == label), "{label}: {texts:?}");
    }
}

#[test]
fn bench_saves_a_baseline_and_compares_a_later_run_with_it() {
    let dir = TempDir::new("cli-bench", "baseline");
    let store = dir.subdir("store");
    let env = [("WEBCODEX_BENCH_DIR", store.as_path())];
    let fx = fixture();
    let with = |extra: &str| {
        let args = format!("--command {{}} -n 50 --rounds 3 --warmup 10 {extra}");
        bench_in(&argv(&args, &[&fx]), &env)
    };
    let saved = with("--save-baseline before");
    assert_eq!(saved.code, Some(0), "{saved:?}");
    assert!(
        saved.stdout.contains("saved baseline `before`"),
        "{}",
        saved.stdout
    );
    let file = std::fs::read_to_string(store.join("before.json")).expect("saved");
    let file: Value = serde_json::from_str(&file).expect("JSON");
    assert_eq!(
        file["targets"][0]["rounds"].as_array().map(Vec::len),
        Some(3),
        "{file}"
    );
    let v = json_of(&with("--baseline before --json"));
    let b = &v["baseline"];
    assert_eq!(b["name"], "before", "{v}");
    let r = b["ratio"].as_f64().unwrap();
    let (lo, hi) = (b["ci"][0].as_f64().unwrap(), b["ci"][1].as_f64().unwrap());
    assert!(lo <= r && r <= hi, "{b}");
    let expected = match () {
        _ if lo <= 1.0 && 1.0 <= hi => "no change",
        _ if lo > 1.0 => "slower",
        _ => "faster",
    };
    assert_eq!(b["change"], expected, "{b}");
    let human = with("--baseline before");
    let heading = "against baseline `before` (this machine):";
    assert!(human.stdout.contains(heading), "{}", human.stdout);
}
