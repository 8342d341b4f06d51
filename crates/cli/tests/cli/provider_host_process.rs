//! The plugins of a host process (the `webcodex-plugin gateway` binary), seen from `/proc`: no
//! zombie child after a fault, a prompt exit when stdin closes during a reload, and no plugin
//! left running when the host is killed with SIGKILL. The gateway's children are exactly its
//! plugins, so every zombie child of it counts.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use serde_json::{json, Value};

use common::serve::ServeProcess;
use common::{assert_no_leftovers, recorded_plugin_pids, ChildScope, Fixture};

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest any wait may last (a hang, never a timing).
const LIMIT: Duration = Duration::from_secs(20);

/// A provider block running the fixture in `mode`.
fn provider_toml(id: &str, mode: &str, timeout_secs: u64) -> String {
    format!(
        "[[plugins.providers]]\nid = \"{id}\"\nname = \"Provider {id}\"\ncommand = {cmd:?}\n\
         args = [\"{mode}\"]\ntimeout_secs = {timeout_secs}\n",
        cmd = common::fixture_path().display().to_string()
    )
}

/// A `[shell]` table that makes every fixture record its pid and its stdin.
fn side_files_toml(pids: &Path, log: &Path) -> String {
    format!(
        "[shell]\nenv = {{ FIXTURE_PIDS = {:?}, FIXTURE_LOG = {:?} }}\n",
        pids.display().to_string(),
        log.display().to_string()
    )
}

/// A running gateway with its stdin and a channel of its response lines.
struct Gateway {
    child: Child,
    stdin: Option<ChildStdin>,
    responses: Receiver<Value>,
}

impl Gateway {
    fn start(config: &Path) -> Gateway {
        let mut child = common::cli_command(BIN)
            .args(["gateway", "--config"])
            .arg(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the gateway");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, responses) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(value) = serde_json::from_str::<Value>(&line) {
                    let _ = tx.send(value);
                }
            }
        });
        let stdin = child.stdin.take();
        Gateway {
            child,
            stdin,
            responses,
        }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn send(&mut self, id: u64, params: Value) {
        let line = json!({"id": id, "tool": "plugin_tool", "params": params}).to_string();
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write a request");
        stdin.flush().expect("flush");
    }

    fn response(&self, id: u64) -> Value {
        let deadline = Instant::now() + LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let response = self
                .responses
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no response {id}: {e}"));
            if response["id"] == id {
                return response;
            }
        }
    }

    fn request(&mut self, id: u64, params: Value) -> Value {
        self.send(id, params);
        self.response(id)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits (bounded) until `done` holds.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !done() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("runner.toml");
    std::fs::write(&path, text).expect("write runner.toml");
    path
}

/// `ps --ppid <gateway>` must show no `Z` after any retiring fault: each faulted plugin is
/// reaped within the termination bound, not at the next reload or at shutdown.
#[test]
fn every_retiring_fault_through_the_gateway_leaves_no_zombie_child() {
    let fx = Fixture::new("gw-faults");
    let pids = fx.pids_path().to_path_buf();
    let dir = pids.parent().unwrap().to_path_buf();
    let text = side_files_toml(&pids, &dir.join("log")) + &provider_toml("fx", "normal", 3);
    let mut gw = Gateway::start(&write_config(&dir, &text));
    let mut id = 0;
    for (tool, arguments, code) in [
        ("garbage", json!({}), "plugin_malformed_json"),
        ("crash", json!({}), "plugin_eof"),
        (
            "wrong_id",
            json!({"delta": 1}),
            "plugin_unknown_response_id",
        ),
        ("bad_error", json!({}), "plugin_protocol_error"),
        ("invalid_result", json!({}), "plugin_result_invalid"),
        ("exit_keep_stdout", json!({}), "plugin_eof"),
        ("hang", json!({}), "plugin_timeout"),
    ] {
        id += 1;
        let reload = gw.request(id, json!({"action": "reload", "runner": "local"}));
        assert_eq!(reload["success"], true, "{reload}");
        id += 1;
        let described = gw.request(
            id,
            json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": tool}),
        );
        let binding = described["output"]["binding"].clone();
        id += 1;
        let out = gw.request(
            id,
            json!({"action": "call", "binding": binding, "arguments": arguments}),
        );
        assert_eq!(out["output"]["error"]["code"], code, "{tool}: {out}");
        // Every instance so far is retired (the last by this fault, the others by reloads).
        assert_no_leftovers(
            gw.pid(),
            &recorded_plugin_pids(&pids),
            ChildScope::AllZombieChildren,
        );
    }
    drop(gw.stdin.take());
    common::wait_bounded(&mut gw.child, LIMIT);
}

/// Closing stdin while a reload waits for candidates whose initialize never answers: the
/// candidates are killed at once, the reload answers `plugin_manager_stopping` and the gateway
/// exits long before the candidates' 60 s timeout.
#[test]
fn stdin_eof_during_a_reload_kills_the_candidates_and_exits_promptly() {
    let fx = Fixture::new("gw-eof-reload");
    let dir = fx.pids_path().parent().unwrap().to_path_buf();
    let (pids, log) = (dir.join("pids"), dir.join("log"));
    let startup =
        side_files_toml(&dir.join("startup-pids"), &log) + &provider_toml("a", "normal", 5);
    let config = write_config(&dir, &startup);
    let mut gw = Gateway::start(&config);
    assert_eq!(
        gw.request(1, json!({"action": "list", "runner": "local"}))["success"],
        true
    );
    let candidates = [
        side_files_toml(&pids, &log),
        provider_toml("a", "stuck-init", 60),
        provider_toml("b", "silent-init", 60),
    ]
    .concat();
    write_config(&dir, &candidates);
    gw.send(2, json!({"action": "reload", "runner": "local"}));
    wait_until("both candidates started", || {
        recorded_plugin_pids(&pids).len() == 2
    });
    let started = Instant::now();
    drop(gw.stdin.take());
    let status = common::wait_bounded(&mut gw.child, LIMIT);
    assert_eq!(status.code(), Some(0));
    let reload = gw.response(2);
    assert_eq!(
        reload["output"]["error"]["code"], "plugin_manager_stopping",
        "{reload}"
    );
    // The contract's bound is 2 s; a generous one still tells a prompt exit from the 60 s wait.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "exit took {:?}",
        started.elapsed()
    );
    for pid in recorded_plugin_pids(&pids) {
        assert!(
            common::wait_gone(pid),
            "candidate {pid} outlived the gateway"
        );
    }
}

/// A `check` and a `call` whose lines were read just before stdin's EOF are both answered
/// normally (never `plugin_manager_stopping`); then the gateway exits 0 with no plugin left.
#[test]
fn requests_read_just_before_stdin_eof_are_served() {
    let fx = Fixture::new("gw-eof-served");
    let dir = fx.pids_path().parent().unwrap().to_path_buf();
    let (pids, log) = (dir.join("pids"), dir.join("log"));
    let config = write_config(
        &dir,
        &(side_files_toml(&pids, &log) + &provider_toml("a", "normal", 10)),
    );
    let mut gw = Gateway::start(&config);
    let described = gw.request(
        1,
        json!({"action": "describe", "runner": "local", "plugin": "a", "tool": "sleep"}),
    );
    let binding = described["output"]["binding"].clone();
    gw.send(
        2,
        json!({"action": "check", "runner": "local", "plugin": "a"}),
    );
    gw.send(
        3,
        json!({"action": "call", "binding": binding, "arguments": {"ms": 50}}),
    );
    // EOF right after the two lines.
    drop(gw.stdin.take());
    let status = common::wait_bounded(&mut gw.child, LIMIT);
    assert_eq!(status.code(), Some(0));
    // The two answers come in either order (the check's candidate may take longer to start
    // than the call takes, e.g. under Wine): take every line the gateway wrote before it exited.
    let answers: Vec<Value> = gw.responses.iter().collect();
    let answer = |id: u64| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no response {id} in {answers:?}"))
    };
    let check = answer(2);
    assert_eq!(check["success"], true, "{check}");
    assert_eq!(check["output"]["ready"], true, "{check}");
    let call = answer(3);
    assert_eq!(call["success"], true, "{call}");
    assert_eq!(call["output"]["isError"], false, "{call}");
    let plugins = recorded_plugin_pids(&pids);
    assert_eq!(plugins.len(), 2, "the provider and the check's candidate");
    for pid in plugins {
        assert!(common::wait_gone(pid), "plugin {pid} outlived the gateway");
    }
    common::assert_no_zombie_children_of_self();
}

/// The ids the probes sent: each must come back exactly as written, never re-spelled by a
/// number round trip (`1.8446744073709552e19`, `100.0`, `0.0`, `1.5`).
const RAW_IDS: [&str; 8] = [
    "18446744073709551616",
    "1e2",
    "-0",
    "1.50",
    "-7",
    "-1.5E-3",
    r#""caf\u00e9 \"id\"""#,
    "123456789012345678901234567890",
];

/// Writes `lines` to a `gateway`/`mcp` process, closes its stdin and returns its stdout lines
/// (it exits 0 once every request was answered).
fn run_raw(subcommand: &str, config: &Path, lines: &[String]) -> Vec<String> {
    let mut child = common::cli_command(BIN)
        .arg(subcommand)
        .arg("--config")
        .arg(config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the front");
    let stdout = common::read_all(child.stdout.take().expect("stdout"));
    let mut stdin = child.stdin.take().expect("stdin");
    for line in lines {
        writeln!(stdin, "{line}").expect("write a line");
    }
    drop(stdin);
    let status = common::wait_bounded(&mut child, LIMIT);
    assert_eq!(status.code(), Some(0));
    stdout
        .join()
        .expect("stdout")
        .lines()
        .map(str::to_string)
        .collect()
}

/// The stdio gateway echoes every id byte for byte: on a success, a failure and a rejected line.
#[test]
fn ids_come_back_byte_for_byte_on_the_stdio_gateway() {
    let fx = Fixture::new("gw-raw-ids");
    let dir = fx.pids_path().parent().unwrap().to_path_buf();
    let config = write_config(&dir, &provider_toml("a", "normal", 10));
    let mut lines = Vec::new();
    for id in RAW_IDS.iter().chain(&["[1, 2.0]", r#"{"k": 1.0}"#]) {
        lines.push(format!(
            r#"{{"id": {id}, "tool": "plugin_tool", "params": {{"action": "list"}}}}"#
        ));
        lines.push(format!(
            r#"{{"id": {id}, "tool": "plugin_tool", "params": {{"action": "nope"}}}}"#
        ));
        lines.push(format!(
            r#"{{"id": {id}, "tool": "other", "params": {{}}}}"#
        ));
    }
    let out = run_raw("gateway", &config, &lines);
    assert_eq!(out.len(), lines.len(), "{out:#?}");
    for id in RAW_IDS.iter().chain(&["[1, 2.0]", r#"{"k": 1.0}"#]) {
        let prefix = format!(r#"{{"id":{id},"#);
        let echoed: Vec<&String> = out.iter().filter(|l| l.starts_with(&prefix)).collect();
        assert_eq!(echoed.len(), 3, "id {id}: {out:#?}");
        assert!(
            echoed.iter().any(|l| l.contains(r#""success":true"#)),
            "{id}"
        );
    }
}

/// SIGKILL of the host: plugins that do not read stdin (one parked after its handshake, one
/// stuck in initialize) die with it, through the parent-death signal.
#[cfg(target_os = "linux")]
#[test]
fn plugins_do_not_outlive_a_host_killed_with_sigkill() {
    let fx = Fixture::new("gw-sigkill");
    let dir = fx.pids_path().parent().unwrap().to_path_buf();
    let (pids, log) = (dir.join("pids"), dir.join("log"));
    let text = [
        side_files_toml(&pids, &log),
        provider_toml("idle", "stop-reading", 60),
        provider_toml("stuck", "stuck-init", 60),
    ]
    .concat();
    let mut gw = Gateway::start(&write_config(&dir, &text));
    // The idle plugin answered tools/list (then never reads again); the stuck one read
    // initialize (then never reads again). The gateway is still starting up.
    wait_until("both plugins past their last read", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.matches("\"initialize\"").count() == 2 && text.contains("tools/list")
    });
    let plugins = recorded_plugin_pids(&pids);
    assert_eq!(plugins.len(), 2);
    gw.child.kill().expect("SIGKILL the gateway");
    gw.child.wait().expect("reap the gateway");
    let deadline = Instant::now() + common::GENEROUS;
    for pid in plugins {
        while !common::process_is_gone(pid) {
            assert!(
                Instant::now() < deadline,
                "plugin {pid} outlived its SIGKILLed host"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// One raw HTTP/1.1 POST of a plugin_tool request; the whole response as text.
fn http_post(addr: &str, token: &str, params: Value) -> String {
    use std::io::Read;
    let body = json!({"tool": "plugin_tool", "params": params}).to_string();
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(LIMIT)).expect("read timeout");
    write!(
        stream,
        "POST /api/tools/call HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// SIGTERM to `serve` while a reload waits for candidates whose initialize never answers: the
/// candidates are killed at once, the reload is answered `plugin_manager_stopping` and the
/// server exits 0 long before the candidates' 60 s timeout.
#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn sigterm_of_serve_during_a_reload_kills_the_candidates_and_exits_promptly() {
    const TOKEN: &str = "hygiene-token-0123456789abcdef";
    let fx = Fixture::new("serve-term-reload");
    let dir = fx.pids_path().parent().unwrap().to_path_buf();
    let (pids, log) = (dir.join("pids"), dir.join("log"));
    let tokens = dir.join("tokens.toml");
    std::fs::write(
        &tokens,
        format!(
            "[[tokens]]\nname = \"all\"\ntoken = \"{TOKEN}\"\n\
             scopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\"]\n"
        ),
    )
    .unwrap();
    let startup =
        side_files_toml(&dir.join("startup-pids"), &log) + &provider_toml("a", "normal", 5);
    let config = write_config(&dir, &startup);
    let mut cmd = common::cli_command(BIN);
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--tokens")
        .arg(&tokens);
    let serve = ServeProcess::start(cmd);
    let addr = serve.addr.to_string();
    let candidates = [
        side_files_toml(&pids, &log),
        provider_toml("a", "stuck-init", 60),
        provider_toml("b", "silent-init", 60),
    ]
    .concat();
    write_config(&dir, &candidates);
    let reloading = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            http_post(&addr, TOKEN, json!({"action": "reload", "runner": "local"}))
        })
    };
    wait_until("both candidates started", || {
        recorded_plugin_pids(&pids).len() == 2
    });
    let started = Instant::now();
    serve.stop_within(LIMIT);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "exit took {:?}",
        started.elapsed()
    );
    let response = reloading.join().expect("the reload request");
    assert!(
        response.contains("plugin_manager_stopping"),
        "reload answered: {response}"
    );
    for pid in recorded_plugin_pids(&pids) {
        assert!(
            common::wait_gone(pid),
            "candidate {pid} outlived the server"
        );
    }
}
