//! `serve --admin-listen`: health, readiness and the Prometheus exposition, against the real
//! binary with the fixture plugin (loopback only). The promtool and Prometheus tests need
//! Debian's `prometheus` package (`.ci/run` installs it and runs them with
//! `--include-ignored`).
#![cfg(unix)]

use crate::common;
use crate::ops_support;
use crate::tempdir;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use ops_support::{files, s, sample, AdminServe, LIMIT};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");

fn serve_with_admin(dir: &TempDir, dead: bool) -> (AdminServe, std::path::PathBuf) {
    let (config, tokens) = files(dir, dead);
    let pids = dir.path("pids");
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--config",
        s(&config),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(&tokens),
        "--admin-listen",
        "127.0.0.1:0",
    ])
    .env("FIXTURE_PIDS", &pids);
    (AdminServe::start(cmd), pids)
}

fn not_ready(body: &str) -> Vec<String> {
    let value: Value = serde_json::from_str(body).expect("readyz body is JSON");
    value["notReady"]
        .as_array()
        .unwrap_or_else(|| panic!("no notReady list: {body}"))
        .iter()
        .map(|id| id.as_str().expect("a plugin id").to_string())
        .collect()
}

/// A provider that failed at start is named at once; a plugin killed while idle is named at
/// the first question after its exit (the exit watch retires it before it reaps it, so once
/// the process is gone the state is already there: no periodic look is involved).
#[test]
fn readyz_names_a_provider_that_failed_at_start_and_one_that_crashed() {
    let dir = TempDir::new("ops", "readyz");
    let (serve, pids) = serve_with_admin(&dir, true);
    assert_eq!(
        serve.admin_get("/healthz"),
        (200, r#"{"status":"ok"}"#.into())
    );
    let (status, body) = serve.admin_get("/readyz");
    assert_eq!(status, 503, "{body}");
    assert_eq!(not_ready(&body), ["dead"]);

    // The fixture `fx` is the one plugin still running: kill it as a crash would.
    let plugin = common::recorded_plugin_pids(&pids)
        .into_iter()
        .find(|pid| !common::process_is_gone(*pid))
        .expect("the fixture plugin runs");
    let killed = Instant::now();
    // SAFETY: plain kill(2) on the plugin's pid, a live grandchild of this test.
    assert_eq!(unsafe { libc::kill(plugin, libc::SIGKILL) }, 0);
    assert!(
        common::wait_reaped(plugin),
        "the host did not reap its plugin"
    );
    let (status, body) = serve.admin_get("/readyz");
    assert_eq!(status, 503, "{body}");
    assert_eq!(not_ready(&body), ["fx", "dead"]);
    // A generous bound (a loaded CI machine), far below any poll interval: the host saw the
    // exit itself, no later check found it.
    assert!(
        killed.elapsed() < Duration::from_secs(10),
        "readyz turned red {:?} after the kill",
        killed.elapsed()
    );
    assert_eq!(serve.admin_get("/healthz").0, 200);

    let (_, metrics) = serve.admin_get("/metrics");
    let series = |labels: &str| {
        sample(
            &metrics,
            &format!("webcodex_plugin_provider_status{{{labels}}}"),
        )
    };
    assert_eq!(
        series(r#"runner="local",plugin="fx",status="retired""#),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        series(r#"runner="local",plugin="fx",status="ready""#),
        Some(0.0)
    );
    assert_eq!(
        series(r#"runner="local",plugin="dead",status="failed""#),
        Some(1.0)
    );
    let exited = sample(
        &metrics,
        r#"webcodex_plugin_provider_retirements_total{reason="exited"}"#,
    );
    assert!(exited >= Some(1.0), "{metrics}");

    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// Every configured provider ready: 200. Other paths and methods: 404 and 405.
#[test]
fn readyz_is_green_when_every_provider_is_ready() {
    let dir = TempDir::new("ops", "green");
    let (serve, _) = serve_with_admin(&dir, false);
    assert_eq!(
        serve.admin_get("/readyz"),
        (200, r#"{"status":"ready"}"#.into())
    );
    assert_eq!(serve.admin_get("/nope").0, 404);
    let raw = "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    assert_eq!(
        ops_support::exchange(serve.admin, raw.as_bytes()).status,
        405
    );
    // The admin routes are not on the serving port.
    assert_eq!(ops_support::get(serve.addr, "/healthz").0, 404);
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// Voluntary context switches of every thread of process `pid`, by thread id.
#[cfg(target_os = "linux")]
fn switches_of(pid: u32) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let switches = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        out.push((task.file_name().to_string_lossy().into_owned(), switches));
    }
    out.sort();
    out
}

/// No collector thread and no timer: after a scrape, an idle serve with an admin listener (and
/// its provider's threads) is not scheduled at all.
#[cfg(target_os = "linux")]
#[test]
fn an_idle_serve_with_an_admin_listener_never_wakes_up() {
    let dir = TempDir::new("ops", "idle");
    let (serve, _) = serve_with_admin(&dir, false);
    serve.call_echo(3);
    assert_eq!(serve.admin_get("/metrics").0, 200);
    // Let the connection threads end and the rest settle: two equal samples, bounded.
    let settle_until = Instant::now() + Duration::from_secs(10);
    let mut before = switches_of(serve.pid());
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = switches_of(serve.pid());
        if now == before || Instant::now() > settle_until {
            before = now;
            break;
        }
        before = now;
    }
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        before,
        switches_of(serve.pid()),
        "a thread of an idle serve woke up"
    );
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// A front whose only runner is remote and down is still ready (a remote runner never makes
/// it unready); its breaker and in-flight gauges name the runner.
#[test]
fn a_front_is_ready_while_its_remote_runner_is_down() {
    let dir = TempDir::new("ops", "front");
    // A port nobody listens on: bound, then closed.
    let down = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    dir.write("edge.tok", "edge-runner-token-0123456789\n");
    let runners = dir.write(
        "runners.toml",
        &format!("[[runners]]\nid = \"edge\"\nname = \"Edge\"\nurl = \"http://{down}\"\ntoken_file = \"edge.tok\"\n"),
    );
    let tokens = common::serve::write_tokens_file(&dir);
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--runners",
        s(&runners),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(&tokens),
        "--admin-listen",
        "127.0.0.1:0",
    ])
    .env("NO_PROXY", "*")
    .env_remove("HTTP_PROXY")
    .env_remove("http_proxy")
    .env_remove("ALL_PROXY");
    let serve = AdminServe::start(cmd);
    let (status, body) = serve.tool(serde_json::json!({"action": "list", "runner": "edge"}));
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        serve.admin_get("/readyz"),
        (200, r#"{"status":"ready"}"#.into())
    );
    let (_, metrics) = serve.admin_get("/metrics");
    let breaker = |state: &str| {
        sample(
            &metrics,
            &format!(r#"webcodex_plugin_runner_breaker_state{{runner="edge",state="{state}"}}"#),
        )
    };
    assert_eq!(breaker("closed"), Some(1.0), "{metrics}");
    assert_eq!(breaker("open"), Some(0.0));
    // Its one request found no connection: not up (read from its breaker, never probed).
    assert_eq!(
        sample(&metrics, r#"webcodex_plugin_runner_link_up{runner="edge"}"#),
        Some(0.0),
        "{metrics}"
    );
    assert_eq!(
        sample(
            &metrics,
            r#"webcodex_plugin_runner_in_flight{runner="edge"}"#
        ),
        Some(0.0)
    );
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// A front relaying a call to a runner: the runner's in-flight gauge is 1 while the call runs
/// there and 0 after it; its breaker stays closed.
#[test]
fn a_front_counts_the_requests_in_flight_to_each_runner() {
    let dir = TempDir::new("ops", "inflight");
    let log = dir.path("stdin.log");
    let runner = {
        let (config, tokens) = files(&dir, false);
        let mut cmd = common::cli_command(BIN);
        cmd.args([
            "serve",
            "--config",
            s(&config),
            "--listen",
            "127.0.0.1:0",
            "--tokens",
            s(&tokens),
            "--admin-listen",
            "127.0.0.1:0",
        ])
        .env("FIXTURE_LOG", &log);
        AdminServe::start(cmd)
    };
    dir.write("edge.tok", &format!("{}\n", ops_support::TOKEN));
    let runners = dir.write(
        "runners.toml",
        &format!("[[runners]]\nid = \"edge\"\nname = \"Edge\"\nurl = \"http://{}\"\ntoken_file = \"edge.tok\"\n", runner.addr),
    );
    let tokens = dir.path("tokens.toml");
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--runners",
        s(&runners),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(&tokens),
        "--admin-listen",
        "127.0.0.1:0",
    ])
    .env("NO_PROXY", "*")
    .env_remove("HTTP_PROXY")
    .env_remove("http_proxy")
    .env_remove("ALL_PROXY");
    let front = std::sync::Arc::new(AdminServe::start(cmd));
    let (status, described) = front.tool(
        serde_json::json!({"action": "describe", "runner": "edge", "plugin": "fx", "tool": "sleep"}),
    );
    assert_eq!(status, 200, "{described}");
    let binding = described["output"]["binding"].clone();
    let running = {
        let front = front.clone();
        std::thread::spawn(move || {
            front.tool(serde_json::json!({"action": "call", "binding": binding, "arguments": {"ms": 2000}}))
        })
    };
    ops_support::wait_for_logged(&log, "\"sleep\"", "the call never reached the plugin");
    let in_flight = |front: &AdminServe| {
        let (_, metrics) = front.admin_get("/metrics");
        sample(
            &metrics,
            r#"webcodex_plugin_runner_in_flight{runner="edge"}"#,
        )
    };
    assert_eq!(in_flight(&front), Some(1.0));
    assert_eq!(running.join().unwrap().0, 200);
    assert_eq!(in_flight(&front), Some(0.0));
    let (_, metrics) = front.admin_get("/metrics");
    let closed = r#"webcodex_plugin_runner_breaker_state{runner="edge",state="closed"}"#;
    assert_eq!(sample(&metrics, closed), Some(1.0), "{metrics}");
    let front = std::sync::Arc::try_unwrap(front)
        .ok()
        .expect("the caller thread is done");
    assert_eq!(front.stop().0.code(), Some(0));
    assert_eq!(runner.stop().0.code(), Some(0));
}

/// A second call on a busy provider, a plugin that does not answer in time: counted by code
/// and dispatch state, the timed-out instance retired under its fault's code and named by
/// /readyz.
#[test]
fn metrics_count_busy_rejections_timeouts_and_retirements_by_reason() {
    let dir = TempDir::new("ops", "faults");
    let fixture = serde_json::to_string(s(&common::fixture_path())).unwrap();
    let config = dir.write(
        "runner.toml",
        &format!(
            "[plugins]\nrequest_timeout_secs = 20\n\n[[plugins.providers]]\nid = \"fx\"\n\
             name = \"Fixture\"\ncommand = {fixture}\nargs = [\"normal\"]\n\n\
             [[plugins.providers]]\nid = \"slow\"\nname = \"Slow\"\ncommand = {fixture}\n\
             args = [\"normal\"]\ntimeout_secs = 1\n"
        ),
    );
    let tokens = common::serve::write_tokens_file(&dir);
    let log = dir.path("stdin.log");
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--config",
        s(&config),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(&tokens),
        "--admin-listen",
        "127.0.0.1:0",
    ])
    .env("FIXTURE_LOG", &log);
    let serve = std::sync::Arc::new(AdminServe::start(cmd));
    let describe = |plugin: &str, tool: &str| -> Value {
        let (status, out) = serve.tool(serde_json::json!({"action": "describe", "runner": "local", "plugin": plugin, "tool": tool}));
        assert_eq!(status, 200, "{out}");
        out["output"]["binding"].clone()
    };
    let sleep = describe("fx", "sleep");
    let running = {
        let serve = serve.clone();
        let sleep = sleep.clone();
        std::thread::spawn(move || {
            serve.tool(
                serde_json::json!({"action": "call", "binding": sleep, "arguments": {"ms": 3000}}),
            )
        })
    };
    ops_support::wait_for_logged(&log, "\"sleep\"", "the first call never reached the plugin");
    let (_, busy) =
        serve.tool(serde_json::json!({"action": "call", "binding": sleep, "arguments": {"ms": 1}}));
    assert_eq!(
        busy["output"]["error"]["code"], "plugin_provider_busy",
        "{busy}"
    );
    assert_eq!(running.join().unwrap().0, 200);

    let hang = describe("slow", "hang");
    let (_, timed_out) =
        serve.tool(serde_json::json!({"action": "call", "binding": hang, "arguments": {}}));
    assert_eq!(
        timed_out["output"]["error"]["code"], "plugin_timeout",
        "{timed_out}"
    );
    assert_eq!(timed_out["output"]["dispatch"], "outcome_unknown");

    let (_, metrics) = serve.admin_get("/metrics");
    let value = |series: &str| sample(&metrics, &format!("webcodex_plugin_{series}"));
    assert_eq!(
        value(r#"busy_rejections_total{code="plugin_provider_busy"}"#),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        value(r#"timeouts_total{code="plugin_timeout",dispatch="outcome_unknown"}"#),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        value(r#"provider_retirements_total{reason="plugin_timeout"}"#),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        value(r#"provider_status{runner="local",plugin="slow",status="retired"}"#),
        Some(1.0)
    );
    assert_eq!(
        value(r#"requests_total{action="call",outcome="failure"}"#),
        Some(2.0)
    );
    let (status, body) = serve.admin_get("/readyz");
    assert_eq!((status, not_ready(&body)), (503, vec!["slow".to_string()]));
    let serve = std::sync::Arc::try_unwrap(serve)
        .ok()
        .expect("the caller thread is done");
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// SIGTERM: while serve drains a call in flight, /readyz is red (every provider, stopping) and
/// /healthz still answers; the call completes and serve exits 0.
#[test]
fn readyz_turns_red_while_serve_drains_on_sigterm() {
    let dir = TempDir::new("ops", "drain");
    let (config, tokens) = files(&dir, false);
    let log = dir.path("stdin.log");
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--config",
        s(&config),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(&tokens),
        "--admin-listen",
        "127.0.0.1:0",
    ])
    .env("FIXTURE_LOG", &log);
    let serve = std::sync::Arc::new(AdminServe::start(cmd));
    let (status, described) = serve.tool(
        serde_json::json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "sleep"}),
    );
    assert_eq!(status, 200, "{described}");
    let binding = described["output"]["binding"].clone();
    let running = {
        let serve = serve.clone();
        std::thread::spawn(move || {
            serve.tool(serde_json::json!({"action": "call", "binding": binding, "arguments": {"ms": 3000}}))
        })
    };
    ops_support::wait_for_logged(&log, "\"sleep\"", "the call never reached the plugin");
    assert_eq!(serve.admin_get("/readyz").0, 200);
    assert!(common::request_stop(serve.pid()));
    let deadline = Instant::now() + LIMIT;
    let red = loop {
        let (status, body) = serve.admin_get("/readyz");
        if status == 503 {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "readyz stayed green after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let red: Value = serde_json::from_str(&red).unwrap();
    assert_eq!(
        red,
        serde_json::json!({"notReady": ["fx"], "stopping": true})
    );
    assert_eq!(serve.admin_get("/healthz").0, 200);
    let (status, called) = running.join().unwrap();
    assert_eq!(status, 200, "the call in flight completes: {called}");
    let serve = std::sync::Arc::try_unwrap(serve)
        .ok()
        .expect("the caller thread is done");
    let (status, stderr) = serve.stop_after_signal();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// The exposition counts the calls made, the HTTP answers and open connections, and passes
/// `promtool check metrics` (Prometheus's own linter).
#[test]
#[ignore = "needs promtool and prometheus"]
fn promtool_accepts_the_exposition() {
    let dir = TempDir::new("ops", "promtool");
    let (serve, _) = serve_with_admin(&dir, true);
    serve.call_echo(3);
    let unknown =
        serve.tool(serde_json::json!({"action": "call", "binding": "nope", "arguments": {}}));
    assert_eq!(unknown.0, 400);
    let (status, metrics) = serve.admin_get("/metrics");
    assert_eq!(status, 200);
    let calls = r#"webcodex_plugin_requests_total{action="call",outcome="success"}"#;
    assert_eq!(sample(&metrics, calls), Some(3.0), "{metrics}");
    let failed = r#"webcodex_plugin_requests_total{action="call",outcome="failure"}"#;
    assert_eq!(sample(&metrics, failed), Some(1.0), "{metrics}");
    let duration =
        r#"webcodex_plugin_request_duration_seconds_count{action="call",outcome="success"}"#;
    assert_eq!(sample(&metrics, duration), Some(3.0));
    let http = r#"webcodex_plugin_http_requests_total{route="/api/tools/call",status="200"}"#;
    assert_eq!(sample(&metrics, http), Some(4.0), "{metrics}");
    // The last connection is counted until its thread has closed it, which may be just after
    // the client read the answer: wait (bounded) for the gauge to come back to 0.
    let deadline = Instant::now() + LIMIT;
    let mut metrics = metrics;
    while sample(&metrics, "webcodex_plugin_http_open_connections") != Some(0.0) {
        assert!(
            Instant::now() < deadline,
            "a connection stays open:\n{metrics}"
        );
        std::thread::sleep(Duration::from_millis(10));
        metrics = serve.admin_get("/metrics").1;
    }
    for gauge in [
        "process_resident_memory_bytes",
        "process_threads",
        "process_open_fds",
    ] {
        let value = sample(&metrics, &format!("webcodex_plugin_{gauge}"));
        assert!(value > Some(0.0), "{gauge}: {metrics}");
    }
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool is installed (Debian package `prometheus`)");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(metrics.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool: {out:?}\n{metrics}"
    );
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// A real Prometheus server scrapes the admin port every second: its query API reports the
/// target up and the call counter equal to the calls made.
#[test]
#[ignore = "needs promtool and prometheus"]
fn prometheus_scrapes_the_admin_port() {
    let dir = TempDir::new("ops", "prometheus");
    let (serve, _) = serve_with_admin(&dir, false);
    let calls = 5;
    serve.call_echo(calls);
    let web = free_port();
    let config = dir.write(
        "prometheus.yml",
        &format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: webcodex\n    \
             static_configs:\n      - targets: ['{}']\n",
            serve.admin
        ),
    );
    let data = dir.subdir("tsdb");
    let mut prometheus = KillOnDrop(
        Command::new("prometheus")
            .arg(format!("--config.file={}", s(&config)))
            .arg(format!("--storage.tsdb.path={}", s(&data)))
            .arg(format!("--web.listen-address={web}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus is installed (Debian package `prometheus`)"),
    );
    // Prometheus needs a few scrapes; generous, bounded.
    let deadline = Instant::now() + Duration::from_secs(90);
    let query = |q: &str| query_value(web, q);
    let mut seen = (None, None);
    while Instant::now() < deadline {
        assert!(
            prometheus.0.try_wait().unwrap().is_none(),
            "prometheus exited"
        );
        seen = (
            query(r#"up{job="webcodex"}"#),
            query(r#"webcodex_plugin_requests_total{action="call",outcome="success"}"#),
        );
        if seen == (Some(1.0), Some(calls as f64)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(
        seen,
        (Some(1.0), Some(calls as f64)),
        "up and the call counter as Prometheus saw them"
    );
    drop(prometheus);
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback address with a port free a moment ago.
fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// The value of the first series of an instant query on Prometheus's HTTP API, if any.
fn query_value(web: SocketAddr, query: &str) -> Option<f64> {
    let encoded: String = query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let mut stream = TcpStream::connect(web).ok()?;
    stream.set_read_timeout(Some(LIMIT)).ok()?;
    let raw = format!(
        "GET /api/v1/query?query={encoded} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(raw.as_bytes()).ok()?;
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).ok()?;
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let body: Value = serde_json::from_slice(&bytes[end + 4..]).ok()?;
    let value = body["data"]["result"].get(0)?["value"]
        .get(1)?
        .as_str()?
        .to_string();
    value.parse().ok()
}

/// The threads of process `pid`.
#[cfg(target_os = "linux")]
fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| tasks.count())
        .unwrap_or(0)
}

/// The admin listener's own bounds, one at a time and without a flood: a fifth connection from
/// a peer that holds four is refused (503) unless it is a health probe, which is answered; an
/// answer closes the connection (no keep-alive); a connection that sends nothing is closed
/// quietly once its head time is over. Retried (at most three times) when the four idle
/// connections were closed before the fifth was answered (a machine stalled for a second).
#[cfg(target_os = "linux")]
#[test]
fn the_admin_listener_bounds_each_peer_and_keeps_no_connection_alive() {
    use std::net::Ipv4Addr;
    let dir = TempDir::new("ops", "bounds");
    let (serve, _) = serve_with_admin(&dir, false);
    let peer = Ipv4Addr::new(127, 0, 0, 9);
    let mut checked = false;
    for _ in 0..3 {
        let held: Vec<TcpStream> = (0..webcodex_plugin_ops::ADMIN_MAX_PER_PEER)
            .map(|_| ops_support::connect_from(peer, serve.admin).expect("connect"))
            .collect();
        let ask = |path: &str| {
            let mut stream = ops_support::connect_from(peer, serve.admin).expect("connect");
            stream.set_read_timeout(Some(LIMIT)).unwrap();
            let raw = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
            stream.write_all(raw.as_bytes()).unwrap();
            let mut bytes = Vec::new();
            // No keep-alive: the server closes after its answer, though the request did not ask.
            stream.read_to_end(&mut bytes).expect("the server closes");
            common::http::parse_response(&bytes)
        };
        let metrics = ask("/metrics");
        let health = ask("/healthz");
        let ready = ask("/readyz");
        if !held.iter().all(ops_support::idle_and_open) {
            continue;
        }
        assert_eq!(metrics.status, 503, "{}", metrics.text());
        assert_eq!(health.status, 200, "{}", health.text());
        assert_eq!(ready.status, 200, "{}", ready.text());
        assert!(health.header("connection").eq_ignore_ascii_case("close"));
        checked = true;
        // The four were kept by the per-peer bound, not closed: each ends quietly at its head
        // time (a generous bound here; the time itself is 1 s).
        for mut stream in held {
            stream.set_read_timeout(Some(LIMIT)).unwrap();
            let started = Instant::now();
            let mut bytes = Vec::new();
            let _ = stream.read_to_end(&mut bytes);
            assert!(bytes.is_empty(), "an idle connection got {bytes:?}");
            assert!(started.elapsed() < Duration::from_secs(10));
        }
        break;
    }
    assert!(checked, "the four idle connections never lasted a second");
    // Another peer is not bound by the first one's connections.
    assert_eq!(ops_support::get(serve.admin, "/metrics").0, 200);
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// Health is always answered: 64 peers hold 5 idle connections each (320, replaced as the
/// server closes them) and this test's own address holds 4 more, while 35 `/healthz` and 35
/// `/readyz` probes from this test are all answered 200. The listener serves at most 32
/// connections at once meanwhile (its threads stay bounded), the serving port is untouched, and
/// after the flood the process stops cleanly with no child left behind.
#[cfg(target_os = "linux")]
#[test]
fn health_and_readiness_are_answered_under_a_flood_of_idle_connections() {
    use std::net::Ipv4Addr;
    use std::sync::atomic::Ordering;
    let dir = TempDir::new("ops", "flood");
    let (serve, pids) = serve_with_admin(&dir, false);
    serve.call_echo(1);
    let threads_before = threads_of(serve.pid());
    let peers: Vec<Ipv4Addr> = (2..66).map(|n| Ipv4Addr::new(127, 0, 0, n)).collect();
    let flood = ops_support::Flood::start(serve.admin, peers, 5);
    let own = ops_support::Flood::start(serve.admin, vec![Ipv4Addr::LOCALHOST], 4);
    let deadline = Instant::now() + LIMIT;
    while flood.holding.load(Ordering::SeqCst) < 256 || own.holding.load(Ordering::SeqCst) < 4 {
        assert!(
            Instant::now() < deadline,
            "the flood never held 256 connections"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut most_threads = 0;
    for round in 0..35 {
        for path in ["/healthz", "/readyz"] {
            let (status, body) = serve.admin_get(path);
            assert_eq!(status, 200, "probe {round} of {path}: {body}");
        }
        most_threads = most_threads.max(threads_of(serve.pid()));
        // Pacing, not a synchronisation: the probes span about three seconds, so they meet the
        // flood's replacements of the connections the server closed after their head time.
        std::thread::sleep(Duration::from_millis(80));
    }
    let opened = flood.opened.load(Ordering::SeqCst);
    // Served connections are at most 32 threads, plus the waiting room's thread and the health
    // slot's.
    let bound = threads_before + webcodex_plugin_ops::ADMIN_MAX_CONNECTIONS + 2;
    assert!(
        most_threads <= bound,
        "{most_threads} threads under the flood (at most {bound})"
    );
    // The serving port works during the flood.
    serve.call_echo(1);
    flood.stop();
    own.stop();
    assert!(opened >= 320, "the flood opened {opened} connections");
    // Once the server has seen the flood's connections close, the bounds are free again and a
    // scrape (not a health request) is served.
    let deadline = Instant::now() + LIMIT;
    loop {
        let (status, metrics) = serve.admin_get("/metrics");
        if status == 200 {
            assert!(
                metrics.contains("webcodex_plugin_provider_status"),
                "{metrics}"
            );
            break;
        }
        assert_eq!(status, 503, "{metrics}");
        assert!(
            Instant::now() < deadline,
            "the bounds never freed after the flood"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let plugins = common::recorded_plugin_pids(&pids);
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
    common::assert_plugins_cleaned_up(&plugins);
}

/// The restart policy tests' plugin (Python): records its pid, crashes at start while a `crash`
/// file is beside its pid file, hangs while a `hang` file is.
fn restart_plugin() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/restart_plugin.py"
    )
    .to_string()
}

/// `restart = "on-failure"` under `serve`: the plugin killed with SIGKILL comes back as a new
/// instance. While it is down (its first restart crashes at start too, as long as a `crash`
/// file says so) `/readyz` is red and names it; once a restart is admitted it is green again.
/// A binding of the old instance fails with `plugin_replaced`, a new describe and call work,
/// `webcodex_plugin_restarts_total` counts every restart started (one per process started
/// again), each restart is logged, and every plugin process is reaped (no zombie, nothing
/// left once serve stops).
#[test]
fn a_killed_plugin_under_on_failure_comes_back_and_readyz_follows() {
    let dir = TempDir::new("ops", "restart");
    let pids = dir.path("pids");
    let config = dir.write(
        "runner.toml",
        &format!(
            "[shell]\nenv = {{ RESTART_PIDS = {pids:?} }}\n[plugins]\nrestart = \"on-failure\"\n\
             [[plugins.providers]]\nid = \"py\"\nname = \"Restarting\"\ncommand = \"python3\"\n\
             args = [{script:?}]\ntimeout_secs = 10\n",
            pids = s(&pids),
            script = restart_plugin()
        ),
    );
    let tokens = common::serve::write_tokens_file(&dir);
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--config",
        s(&config),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(&tokens),
        "--admin-listen",
        "127.0.0.1:0",
    ])
    .env("RUST_LOG", "info");
    let serve = AdminServe::start(cmd);
    assert_eq!(serve.admin_get("/readyz").0, 200);
    let describe = serde_json::json!({"action": "describe", "runner": "local", "plugin": "py", "tool": "echo"});
    let (status, described) = serve.tool(describe.clone());
    assert_eq!(status, 200, "{described}");
    let old_binding = described["output"]["binding"].clone();
    let call = |binding: &Value| {
        serve.tool(
            serde_json::json!({"action": "call", "binding": binding, "arguments": {"text": "hi"}}),
        )
    };
    assert_eq!(call(&old_binding).0, 200);

    let first = common::recorded_plugin_pids(&pids);
    assert_eq!(first.len(), 1);
    dir.write("crash", "");
    // SAFETY: kill(2) on the plugin's pid, a live grandchild of this test.
    assert_eq!(unsafe { libc::kill(first[0], libc::SIGKILL) }, 0);
    assert!(
        common::wait_gone(first[0]),
        "the host did not reap its plugin"
    );
    // A restart started, and crashed at start: the provider is still down, and readyz says so.
    let deadline = Instant::now() + LIMIT;
    while common::recorded_plugin_pids(&pids).len() < 2 {
        assert!(Instant::now() < deadline, "no restart within {LIMIT:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, body) = serve.admin_get("/readyz");
    assert_eq!(status, 503, "{body}");
    assert_eq!(not_ready(&body), ["py"]);
    let (status, refused) = call(&old_binding);
    assert_ne!(status, 200, "{refused}");

    std::fs::remove_file(dir.path("crash")).unwrap();
    let deadline = Instant::now() + LIMIT;
    while serve.admin_get("/readyz").0 != 200 {
        assert!(Instant::now() < deadline, "readyz never turned green again");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, replaced) = call(&old_binding);
    assert_ne!(status, 200, "{replaced}");
    assert_eq!(
        replaced["output"]["error"]["code"], "plugin_replaced",
        "{replaced}"
    );
    let (status, described) = serve.tool(describe);
    assert_eq!(status, 200, "{described}");
    let (status, called) = call(&described["output"]["binding"]);
    assert_eq!(status, 200, "{called}");

    let started = common::recorded_plugin_pids(&pids);
    assert!(started.len() >= 3, "{started:?}");
    let (_, metrics) = serve.admin_get("/metrics");
    assert_eq!(
        sample(&metrics, r#"webcodex_plugin_restarts_total{plugin="py"}"#),
        Some((started.len() - 1) as f64),
        "{metrics}"
    );
    assert_eq!(
        sample(
            &metrics,
            r#"webcodex_plugin_provider_status{runner="local",plugin="py",status="ready"}"#
        ),
        Some(1.0)
    );
    // Every process but the live one is gone and reaped.
    let live = *started.last().unwrap();
    common::assert_plugins_cleaned_up(&started[..started.len() - 1]);
    assert!(common::zombie_children_of(serve.pid() as i32).is_empty());
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
    common::assert_plugins_cleaned_up(&[live]);
    assert!(
        stderr.contains(r#"plugin provider "py" is down"#),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"restart 1 of at most 5 in a row"#),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"plugin provider "py" restarted: a new instance"#),
        "{stderr}"
    );
}
