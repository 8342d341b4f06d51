//! The per-runner link metrics of a front (`serve --admin-listen`) with real `connect` runners
//! on loopback: `runner_link_up` follows the link (1 connected, 0 after a SIGKILL), and
//! `runner_reconnects_total` counts the runner's comeback; `connect --log-format json` writes
//! one JSON object per line; a SIGHUP that revokes or rotates a runner token closes its link at
//! once and drops its `runner_link_up` to 0; and every family that docs/OPERATIONS.md lists is
//! in a real exposition, so that table cannot go stale.
#![cfg(unix)]

use crate::common;
use crate::ops_support;
use crate::tempdir;

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::serve::runner_token;
use ops_support::{s, sample, AdminServe, LIMIT};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// A user token of the front with every scope.
const USER: &str = ops_support::TOKEN;

/// The front's tokens file: the user token, and a runner token for each of `runners`.
fn front_tokens(dir: &TempDir, runners: &[&str]) -> PathBuf {
    common::serve::write_front_tokens(dir, USER, runners)
}

/// A front (`serve` with an admin listener) with `args` before its listeners, its plugins
/// logging what they read to `log`.
fn start_front(args: &[&str], tokens: &Path, log: &Path) -> AdminServe {
    let mut cmd = common::cli_command(BIN);
    cmd.env("FIXTURE_LOG", log);
    cmd.arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0", "--tokens", s(tokens)])
        .args(["--admin-listen", "127.0.0.1:0"])
        .env("RUST_LOG", "info");
    for var in common::PROXY_VARIABLES {
        cmd.env_remove(var);
    }
    AdminServe::start(cmd)
}

/// One `connect` runner with the fixture plugin, logging JSON; killed and reaped on drop.
struct Runner {
    id: &'static str,
    config: PathBuf,
    pids: PathBuf,
    /// What its plugins read.
    log: PathBuf,
    /// Its runner token.
    token: String,
    child: Option<Child>,
    stderr: Vec<JoinHandle<String>>,
}

impl Runner {
    fn new(dir: &TempDir, id: &'static str) -> Runner {
        let fixture = serde_json::to_string(s(&common::fixture_path())).unwrap();
        let config = dir.write(
            &format!("{id}.toml"),
            &format!(
                "[plugins]\nrequest_timeout_secs = 30\n\n[[plugins.providers]]\nid = \"fx\"\n\
                 name = \"Fixture\"\ncommand = {fixture}\nargs = [\"normal\"]\n"
            ),
        );
        Runner {
            id,
            config,
            pids: dir.path(&format!("{id}.pids")),
            log: dir.path(&format!("{id}.log")),
            token: runner_token(id),
            child: None,
            stderr: Vec::new(),
        }
    }

    /// Starts `connect --log-format json` to `front` (the credential in the environment).
    fn start(&mut self, front: SocketAddr) {
        let mut cmd = common::connect_command(BIN, &self.token);
        cmd.args(["--front-url", &format!("http://{front}")])
            .args(["--config", s(&self.config), "--log-format", "json"])
            .env("FIXTURE_PIDS", &self.pids)
            .env("FIXTURE_LOG", &self.log)
            .env("RUST_LOG", "info");
        let mut child = cmd.spawn().expect("spawn connect");
        self.stderr
            .push(common::read_all(child.stderr.take().expect("stderr")));
        self.child = Some(child);
    }

    /// SIGKILL, reaped; its plugins die with it (parent-death signal), no zombie left.
    fn kill(&mut self) {
        let mut child = self.child.take().expect("started");
        let _ = child.kill();
        let _ = child.wait();
        self.assert_plugins_gone();
    }

    /// SIGTERM and a bounded wait: exit 0, plugins gone.
    fn stop(&mut self) {
        let mut child = self.child.take().expect("started");
        assert!(common::request_stop(child.id()), "SIGTERM to connect");
        let status = common::wait_bounded(&mut child, LIMIT);
        assert_eq!(status.code(), Some(0), "connect exit {status:?}");
        self.assert_plugins_gone();
    }

    /// Waits (bounded) for it to exit on its own: its exit code, plugins gone.
    fn wait_exit(&mut self) -> Option<i32> {
        let mut child = self.child.take().expect("started");
        let status = common::wait_bounded(&mut child, LIMIT);
        self.assert_plugins_gone();
        status.code()
    }

    fn assert_plugins_gone(&self) {
        let plugins = common::recorded_plugin_pids(&self.pids);
        assert!(!plugins.is_empty(), "{} started no plugin", self.id);
        for pid in &plugins {
            assert!(common::wait_gone(*pid), "plugin {pid} outlived {}", self.id);
        }
        common::assert_plugins_cleaned_up(&plugins);
        common::assert_no_zombie_children_of_self();
    }

    /// Everything every run of it wrote on stderr (once each run has ended).
    fn stderr(&mut self) -> String {
        self.stderr
            .drain(..)
            .map(|r| r.join().expect("stderr reader"))
            .collect()
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits (bounded) until the front's exposition satisfies `done`; returns that exposition.
fn wait_for_metrics(front: &AdminServe, what: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + LIMIT;
    loop {
        let (status, metrics) = front.admin_get("/metrics");
        assert_eq!(status, 200);
        if done(&metrics) {
            return metrics;
        }
        assert!(Instant::now() < deadline, "never {what}:\n{metrics}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn link_up(metrics: &str, id: &str) -> Option<f64> {
    sample(
        metrics,
        &format!("webcodex_plugin_runner_link_up{{runner=\"{id}\"}}"),
    )
}

fn reconnects(metrics: &str, id: &str) -> Option<f64> {
    sample(
        metrics,
        &format!("webcodex_plugin_runner_reconnects_total{{runner=\"{id}\"}}"),
    )
}

/// Every stderr line is one JSON object with `ts`, `level`, `target` and `msg` (and no other
/// key but a request's fields), and none holds `secret`.
fn assert_json_lines(stderr: &str, secret: &str) {
    let mut count = 0;
    for line in stderr.lines() {
        assert!(!line.contains(secret), "a log line holds the token: {line}");
        let value: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        let object = value.as_object().unwrap_or_else(|| panic!("{line}"));
        for key in ["ts", "level", "target", "msg"] {
            assert!(object[key].is_string(), "no {key}: {line}");
        }
        count += 1;
    }
    assert!(count > 0, "connect logged nothing");
}

/// A runner that dials out: 0 before it first connects, 1 once linked (with its in-flight and
/// breaker gauges), 0 after a SIGKILL (its in-flight and breaker series leave with its link),
/// 1 again after a restart with one reconnect counted.
#[test]
fn link_up_follows_a_dial_out_runner_and_reconnects_count_its_comeback() {
    let dir = TempDir::new("ops", "links");
    let tokens = front_tokens(&dir, &["edge"]);
    let front = start_front(&[], &tokens, &dir.path("stdin.log"));
    let (_, before) = front.admin_get("/metrics");
    assert_eq!(link_up(&before, "edge"), Some(0.0), "{before}");
    assert_eq!(reconnects(&before, "edge"), Some(0.0), "{before}");

    let mut runner = Runner::new(&dir, "edge");
    runner.start(front.addr);
    let linked = wait_for_metrics(&front, "linked", |m| link_up(m, "edge") == Some(1.0));
    assert_eq!(reconnects(&linked, "edge"), Some(0.0), "{linked}");
    let in_flight = r#"webcodex_plugin_runner_in_flight{runner="edge"}"#;
    assert_eq!(sample(&linked, in_flight), Some(0.0), "{linked}");
    let closed = r#"webcodex_plugin_runner_breaker_state{runner="edge",state="closed"}"#;
    assert_eq!(sample(&linked, closed), Some(1.0), "{linked}");
    let (status, listed) = front.tool(json!({"action": "list", "runner": "edge"}));
    assert_eq!(status, 200, "{listed}");

    runner.kill();
    let down = wait_for_metrics(&front, "down", |m| link_up(m, "edge") == Some(0.0));
    assert_eq!(sample(&down, in_flight), None, "{down}");
    assert_eq!(sample(&down, closed), None, "{down}");
    assert!(common::zombie_children_of(front.pid() as i32).is_empty());

    runner.start(front.addr);
    let back = wait_for_metrics(&front, "back", |m| link_up(m, "edge") == Some(1.0));
    assert_eq!(reconnects(&back, "edge"), Some(1.0), "{back}");
    assert_eq!(sample(&back, closed), Some(1.0), "{back}");

    runner.stop();
    let (status, stderr) = front.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains(&runner_token("edge")), "{stderr}");
    assert_json_lines(&runner.stderr(), &runner_token("edge"));
    common::assert_no_zombie_children_of_self();
}

/// The rows of the "Metric families" table of docs/OPERATIONS.md: (name, type, labels,
/// sample line).
fn documented_families() -> Vec<(String, String, Vec<String>, String)> {
    let path = Path::new(common::REPO_ROOT).join("docs/OPERATIONS.md");
    let text = std::fs::read_to_string(&path).expect("docs/OPERATIONS.md");
    let table = text
        .split("## Metric families")
        .nth(1)
        .expect("a `## Metric families` section");
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let mut rows = Vec::new();
    for line in table.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        if cells.len() != 4 || cells[0] == "name" || cells[0].starts_with("---") {
            continue;
        }
        let name = ticked(cells[0]).concat();
        let sample = ticked(cells[3]).concat();
        rows.push((name, cells[1].to_string(), ticked(cells[2]), sample));
    }
    assert!(rows.len() >= 15, "the table has {} rows", rows.len());
    rows
}

/// The name and the label names of an exposition line `name{a="x",b="y"} value`.
fn name_and_labels(line: &str) -> (String, BTreeSet<String>) {
    let end = line.find(['{', ' ']).unwrap_or(line.len());
    let name = line[..end].to_string();
    let mut labels = BTreeSet::new();
    if line[end..].starts_with('{') {
        let inner = &line[end + 1..line.rfind('}').expect("closing brace")];
        for pair in inner.split("\",") {
            if let Some((key, _)) = pair.split_once('=') {
                labels.insert(key.to_string());
            }
        }
    }
    (name, labels)
}

/// The exposition of a front with every kind of runner (its own `--config` with a slow
/// provider under `restart = "on-failure"`, a `--runners` runner that is down, a runner that
/// dials out) after a success, a busy rejection and a timeout; the processes are stopped (exit
/// 0) before it returns.
fn exposition_of_every_kind() -> String {
    let dir = TempDir::new("ops", "families");
    let fixture = serde_json::to_string(s(&common::fixture_path())).unwrap();
    let config = dir.write(
        "runner.toml",
        &format!(
            "[plugins]\nrequest_timeout_secs = 20\n\n[[plugins.providers]]\nid = \"fx\"\n\
             name = \"Fixture\"\ncommand = {fixture}\nargs = [\"normal\"]\n\n\
             [[plugins.providers]]\nid = \"slow\"\nname = \"Slow\"\ncommand = {fixture}\n\
             args = [\"normal\"]\ntimeout_secs = 1\nrestart = \"on-failure\"\n"
        ),
    );
    let down = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    dir.write("static.tok", "static-runner-token-0123456789\n");
    let runners = dir.write(
        "runners.toml",
        &format!("[[runners]]\nid = \"static\"\nname = \"Static\"\nurl = \"http://{down}\"\ntoken_file = \"static.tok\"\n"),
    );
    let tokens = front_tokens(&dir, &["edge"]);
    let log = dir.path("stdin.log");
    let front = start_front(
        &["--config", s(&config), "--runners", s(&runners)],
        &tokens,
        &log,
    );
    let mut runner = Runner::new(&dir, "edge");
    runner.start(front.addr);
    wait_for_metrics(&front, "linked", |m| link_up(m, "edge") == Some(1.0));

    let (status, out) = front.tool(json!({"action": "list", "runner": "static"}));
    assert_eq!(status, 503, "the static runner is down: {out}");
    let front = std::sync::Arc::new(front);
    let describe = |plugin: &str, tool: &str| -> Value {
        let (status, out) = front
            .tool(json!({"action": "describe", "runner": "local", "plugin": plugin, "tool": tool}));
        assert_eq!(status, 200, "{out}");
        out["output"]["binding"].clone()
    };
    // Busy: a second call while a slow one holds `fx` (once the plugin has read the first).
    let sleep = describe("fx", "sleep");
    let held = {
        let front = front.clone();
        let sleep = sleep.clone();
        std::thread::spawn(move || {
            front.tool(json!({"action": "call", "binding": sleep, "arguments": {"ms": 3000}}))
        })
    };
    ops_support::wait_for_logged(&log, "\"sleep\"", "the call never reached the plugin");
    let (_, busy) = front.tool(json!({"action": "call", "binding": sleep, "arguments": {"ms": 1}}));
    assert_eq!(
        busy["output"]["error"]["code"], "plugin_provider_busy",
        "{busy}"
    );
    assert_eq!(held.join().unwrap().0, 200, "the held call succeeds");
    // A timeout: `slow` answers no call within its second (and is retired).
    let hang = describe("slow", "hang");
    let (_, timed_out) = front.tool(json!({"action": "call", "binding": hang, "arguments": {}}));
    assert_eq!(
        timed_out["output"]["error"]["code"], "plugin_timeout",
        "{timed_out}"
    );

    // A project refusal: `fx` works in no project root.
    let (status, refused) = front.tool(json!({"action": "describe", "runner": "local",
        "plugin": "fx", "tool": "echo", "project": s(&dir)}));
    assert_eq!(
        (status, &refused["output"]["error"]["code"]),
        (400, &json!("plugin_project_mismatch")),
        "{refused}"
    );

    let (_, metrics) = front.admin_get("/metrics");
    if std::env::var_os("OPS_PRINT_EXPOSITION").is_some() {
        println!("{metrics}");
    }
    runner.stop();
    let front = std::sync::Arc::try_unwrap(front)
        .ok()
        .expect("the caller thread is done");
    let (status, stderr) = front.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
    common::assert_no_zombie_children_of_self();
    metrics
}

/// Every family of the documentation's table is exposed with its type and its label names,
/// and each documented sample line has the name and labels of a real line; every family
/// exposed is in the table.
#[test]
fn every_documented_metric_family_is_exposed() {
    let metrics = exposition_of_every_kind();
    let types: Vec<(String, String)> = metrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    let samples: Vec<(String, BTreeSet<String>)> = metrics
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(name_and_labels)
        .collect();
    let documented = documented_families();
    for (name, kind, labels, sample_line) in &documented {
        let family = types
            .iter()
            .find(|(n, _)| n == name || format!("{n}_total") == *name)
            .unwrap_or_else(|| panic!("`{name}` is not exposed:\n{metrics}"));
        assert_eq!(&family.1, kind, "the type of `{name}`");
        let mut label_set: BTreeSet<String> = labels.iter().cloned().collect();
        if kind == "histogram" {
            label_set.insert("le".into());
        }
        let (doc_name, doc_labels) = name_and_labels(sample_line);
        assert!(
            doc_name.starts_with(name.as_str()),
            "the sample of `{name}` is of `{doc_name}`"
        );
        assert!(
            samples.contains(&(doc_name.clone(), doc_labels.clone())),
            "no line like the sample of `{name}` ({sample_line}):\n{metrics}"
        );
        assert!(
            samples
                .iter()
                .any(|(n, l)| n.starts_with(name.as_str()) && *l == label_set),
            "no `{name}` line with the labels {label_set:?}:\n{metrics}"
        );
    }
    // And the other way round: every family exposed is documented.
    for (name, _) in &types {
        assert!(
            documented
                .iter()
                .any(|(n, ..)| n == name || *n == format!("{name}_total")),
            "`{name}` is exposed but not in docs/OPERATIONS.md"
        );
    }
}

/// `promtool check metrics` (Prometheus's own linter) accepts that exposition, the link
/// families included.
#[test]
#[ignore = "needs promtool and prometheus"]
fn promtool_accepts_the_exposition_of_every_kind_of_runner() {
    let metrics = exposition_of_every_kind();
    let mut promtool = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool is installed (Debian package `prometheus`)");
    std::io::Write::write_all(&mut promtool.stdin.take().unwrap(), metrics.as_bytes()).unwrap();
    let out = promtool.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool: {out:?}\n{metrics}"
    );
}

/// Writes the front's tokens file again: the user token and, for each `(id, token)`, a runner
/// token entry.
fn rewrite_tokens(path: &Path, runners: &[(&str, &str)]) {
    let mut text = format!(
        "[[tokens]]\nname = \"user\"\ntoken = \"{USER}\"\n\
         scopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\"]\n\n"
    );
    for (id, token) in runners {
        text.push_str(&format!(
            "[[runner_tokens]]\nname = \"{id}-token\"\ntoken = \"{token}\"\nrunner = \"{id}\"\n\n"
        ));
    }
    std::fs::write(path, text).unwrap();
}

/// The runner ids the front lists.
fn listed(front: &AdminServe) -> Vec<String> {
    let (status, body) = front.tool(json!({"action": "list"}));
    assert_eq!(status, 200, "{body}");
    body["output"]["runners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["runner"].as_str().unwrap().to_string())
        .collect()
}

/// A SIGHUP whose tokens file no longer holds a connected runner's token, while a call runs on
/// it: the link is closed at once, the call ends as on a lost link (outcome unknown, long
/// before the plugin would have answered), the runner leaves `list` and the gateway
/// (`plugin_runner_not_found`), its `runner_link_up` is 0, and its `connect` is refused when it
/// dials again (exit 2). Another runner goes on answering.
#[test]
fn a_sighup_that_removes_a_runner_token_evicts_its_runner_mid_call() {
    let dir = TempDir::new("ops", "revoke");
    let tokens = front_tokens(&dir, &["edge", "keep"]);
    let front = start_front(&[], &tokens, &dir.path("stdin.log"));
    let (mut edge, mut keep) = (Runner::new(&dir, "edge"), Runner::new(&dir, "keep"));
    edge.start(front.addr);
    keep.start(front.addr);
    wait_for_metrics(&front, "linked", |m| {
        link_up(m, "edge") == Some(1.0) && link_up(m, "keep") == Some(1.0)
    });
    let (status, described) = front
        .tool(json!({"action": "describe", "runner": "edge", "plugin": "fx", "tool": "sleep"}));
    assert_eq!(status, 200, "{described}");
    let binding = described["output"]["binding"].clone();
    let front_addr = front.addr;
    let slow = std::thread::spawn(move || {
        let front = ops_support::exchange(
            front_addr,
            ops_support::tool_request(
                &json!({"action": "call", "binding": binding, "arguments": {"ms": 25000}}),
            )
            .as_bytes(),
        );
        (front.status, front.json())
    });
    ops_support::wait_for_logged(&edge.log, "\"sleep\"", "the call never reached edge");

    rewrite_tokens(&tokens, &[("keep", &runner_token("keep"))]);
    let revoked_at = Instant::now();
    assert!(ops_support::hang_up(front.pid()), "SIGHUP");
    let (status, body) = slow.join().unwrap();
    assert!(
        revoked_at.elapsed() < Duration::from_secs(15),
        "the call waited for its plugin"
    );
    assert_eq!(status, 504, "{body}");
    assert_eq!(
        body["output"]["error"]["code"],
        json!("plugin_gateway_timeout")
    );
    assert_eq!(
        body["output"]["dispatch"],
        json!("outcome_unknown"),
        "{body}"
    );
    // Gone from list, the gateway and the link gauge at once.
    assert_eq!(listed(&front), ["keep"]);
    let (_, body) = front.tool(json!({"action": "list", "runner": "edge"}));
    assert_eq!(
        body["output"]["error"]["code"],
        json!("plugin_runner_not_found"),
        "{body}"
    );
    let (_, metrics) = front.admin_get("/metrics");
    assert_eq!(link_up(&metrics, "edge"), Some(0.0), "{metrics}");
    assert_eq!(link_up(&metrics, "keep"), Some(1.0), "{metrics}");
    // The evicted runner dials again and is refused: exit 2, its plugins gone.
    assert_eq!(edge.wait_exit(), Some(2));
    let (status, body) = front.tool(json!({"action": "list", "runner": "keep"}));
    assert_eq!(status, 200, "{body}");
    assert!(common::zombie_children_of(front.pid() as i32).is_empty());

    keep.stop();
    let (status, stderr) = front.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("runner link `edge`: closed: the runner token was revoked"),
        "{stderr}"
    );
    assert!(!stderr.contains(&runner_token("edge")), "{stderr}");
    common::assert_no_zombie_children_of_self();
}

/// A runner link of the test's own, authenticated with `token` as `id`: the upgrade's status,
/// and the link when it was welcomed.
fn test_link(
    front: SocketAddr,
    token: &str,
) -> Result<tungstenite::WebSocket<std::net::TcpStream>, u16> {
    use tungstenite::client::ClientRequestBuilder;
    let stream = std::net::TcpStream::connect(front).expect("connect");
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    let uri: tungstenite::http::Uri = format!("ws://{front}/api/runners/connect").parse().unwrap();
    let request = ClientRequestBuilder::new(uri)
        .with_header("Authorization", format!("Bearer {token}"))
        .with_sub_protocol("webcodex-runner-link-v1");
    let mut ws = match tungstenite::client::client(request, stream) {
        Ok((ws, _)) => ws,
        Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(response))) => {
            return Err(response.status().as_u16())
        }
        Err(e) => panic!("the upgrade failed: {e}"),
    };
    let hello =
        r#"{"hello":{"protocol":"webcodex-runner-link-v1","instance":"AAAAAAAAAAAAAAAAAAAAAA"}}"#;
    ws.send(tungstenite::Message::Text(hello.into())).unwrap();
    ws.read().expect("a welcome");
    Ok(ws)
}

/// A SIGHUP that rotates a runner's token (same runner id, another token): the link made with
/// the old token is closed at once (1008, "the runner token was revoked"), its gauge drops to
/// 0; the old token is refused from then on (401) and the new one links the runner again.
#[test]
fn a_sighup_that_rotates_a_runner_token_closes_the_old_link_and_the_new_token_links() {
    let dir = TempDir::new("ops", "rotate");
    let tokens = front_tokens(&dir, &["edge"]);
    let front = start_front(&[], &tokens, &dir.path("stdin.log"));
    let old = runner_token("edge");
    let mut ws = test_link(front.addr, &old).expect("linked with the old token");
    wait_for_metrics(&front, "linked", |m| link_up(m, "edge") == Some(1.0));
    assert_eq!(listed(&front), ["edge"]);

    let new = format!("rotated-{old}");
    rewrite_tokens(&tokens, &[("edge", &new)]);
    assert!(ops_support::hang_up(front.pid()), "SIGHUP");
    let mut close = None;
    let deadline = Instant::now() + LIMIT;
    loop {
        // The front's pings would keep a link that is never closed readable.
        assert!(Instant::now() < deadline, "the old link was not closed");
        match ws.read() {
            Ok(tungstenite::Message::Close(frame)) => {
                close = frame.map(|f| (u16::from(f.code), f.reason.to_string()));
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    assert_eq!(
        close,
        Some((1008, "the runner token was revoked".to_string()))
    );
    assert_eq!(listed(&front), Vec::<String>::new());
    let (_, metrics) = front.admin_get("/metrics");
    assert_eq!(link_up(&metrics, "edge"), Some(0.0), "{metrics}");

    assert_eq!(test_link(front.addr, &old).err(), Some(401));
    let mut runner = Runner::new(&dir, "edge");
    runner.token = new.clone();
    runner.start(front.addr);
    wait_for_metrics(&front, "linked again", |m| link_up(m, "edge") == Some(1.0));
    assert_eq!(listed(&front), ["edge"]);
    let (status, body) = front.tool(json!({"action": "list", "runner": "edge"}));
    assert_eq!(status, 200, "{body}");
    runner.stop();
    let (status, stderr) = front.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains(&old) && !stderr.contains(&new), "{stderr}");
    common::assert_no_zombie_children_of_self();
}
