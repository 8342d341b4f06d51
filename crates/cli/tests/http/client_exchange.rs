//! The client's own HTTP/1.1 exchange (docs/DECISIONS.md D-CLIENT-2) against a scripted runner
//! (`exchange_support`): answers that are chunked, that close the connection (saying so, or by
//! their framing), that come after interim answers (`100`, `102`, `103`), and answers that are
//! not taken: garbage, a head over 64 KiB, a body over 1 MiB, a `101` nobody asked for. Through the `--server-url` client and through
//! a front (`serve --runners`), whose kept connection to the runner carries the next request
//! only when the answer allows it. In every case the runner reads each request once.

use crate::client_support;
use crate::common;
use crate::exchange_support;
use crate::tempdir;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::serve::{ServeProcess, TOKEN_ALL};
use exchange_support::{Mode, ScriptedRunner};
use serde_json::{json, Value};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The client's token on the runner.
const TOKEN: &str = "exchange-test-token-0123456789";
/// The longest any one answer may take to come (a hang, never a timing).
const LIMIT: Duration = Duration::from_secs(60);

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// `ACTION --json --server-url URL --token TOKEN` with the client's debug log.
fn run(action: &str, url: &str) -> client_support::Run {
    let r = client_support::run(
        &[action, "--json", "--server-url", url, "--token", TOKEN],
        &[],
    );
    assert!(
        !r.stdout.contains(TOKEN) && !r.stderr.contains(TOKEN),
        "the token was printed: {r:?}"
    );
    r
}

#[test]
fn chunked_closing_and_continued_answers_are_read() {
    for mode in [
        Mode::KeepAlive,
        Mode::Chunked,
        Mode::SaysClose,
        Mode::UntilClose,
        Mode::Continue,
        Mode::EarlyHints,
    ] {
        let runner = ScriptedRunner::start(mode);
        let r = run("list", &runner.url());
        assert_eq!(r.code, Some(0), "{mode:?}: {r:?}");
        let out: Value = serde_json::from_str(&r.stdout).expect("JSON output");
        assert_eq!(out["marker"], "canned", "{mode:?}: {r:?}");
        assert_eq!(runner.actions(), ["list"], "{mode:?}");
    }
}

#[test]
fn an_answer_not_taken_is_lost_and_never_retried() {
    for (mode, why) in [
        (Mode::Garbage, "not HTTP/1.x"),
        (Mode::HugeHead, "larger than 64 KiB"),
        (Mode::HugeBody, "larger than 1 MiB"),
        (Mode::HugeChunked, "larger than 1 MiB"),
        (Mode::Switching, "101"),
    ] {
        let runner = ScriptedRunner::start(mode);
        let r = run("reload", &runner.url());
        assert_eq!(r.code, Some(1), "{mode:?}: {r:?}");
        assert!(r.stdout.is_empty(), "{mode:?}: no output was taken: {r:?}");
        assert!(
            r.stderr.contains("may be unknown") && r.stderr.contains("NOT retried"),
            "{mode:?}: {r:?}"
        );
        assert!(r.stderr.contains(why), "{mode:?}: {r:?}");
        assert!(!r.stderr.contains("nothing was sent"), "{mode:?}: {r:?}");
        assert_eq!(runner.actions(), ["reload"], "{mode:?}: sent once");
    }
}

/// A front (`serve --runners`) whose one runner `edge` is at `url`.
fn front(dir: &TempDir, url: &str) -> ServeProcess {
    front_with(dir, url, "", &[])
}

/// [`front`] with `extra` lines in the runner's entry and `env` (proxy variables).
fn front_with(dir: &TempDir, url: &str, extra: &str, env: &[(&str, &str)]) -> ServeProcess {
    let token_file = dir.write("edge.token", TOKEN);
    let runners = dir.write(
        "runners.toml",
        &format!(
            "[[runners]]\nid = \"edge\"\nname = \"Edge\"\nurl = \"{url}\"\ntoken_file = {}\n{extra}",
            serde_json::to_string(s(&token_file)).unwrap()
        ),
    );
    let tokens = common::serve::write_tokens_file(dir);
    let mut cmd: Command = common::cli_command(BIN);
    cmd.args(["serve", "--runners", s(&runners), "--listen", "127.0.0.1:0"])
        .args(["--tokens", s(&tokens)]);
    for name in common::PROXY_VARIABLES {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied());
    ServeProcess::start(cmd)
}

/// Ends `front` and returns its stderr: stopped as an operator would (SIGTERM) on Unix; killed
/// on Windows, where Wine cannot deliver the console control event a stop needs
/// (docs/PLATFORMS.md). The front has no plugin of its own, so a kill leaves nothing behind.
fn finish(front: ServeProcess) -> String {
    if cfg!(windows) {
        front.terminate()
    } else {
        front.stop()
    }
}

/// One `plugin_tool` request to the front: the status and the body.
fn post(front: SocketAddr, params: &Value) -> (u16, Value) {
    let response = common::http::post_tool(front, TOKEN_ALL, params, LIMIT);
    (response.status, response.json())
}

/// The front's binding of the runner's `echo`.
fn describe(front: SocketAddr) -> String {
    let (status, body) = post(
        front,
        &json!({"action": "describe", "runner": "edge", "plugin": "fx", "tool": "echo"}),
    );
    assert_eq!(status, 200, "{body}");
    body["output"]["binding"].as_str().unwrap().to_string()
}

fn call(front: SocketAddr, binding: &str) -> (u16, Value) {
    post(
        front,
        &json!({"action": "call", "binding": binding, "arguments": {"text": "x"}}),
    )
}

/// `describe` and then `calls` calls.
fn actions(calls: usize) -> Vec<String> {
    let mut want = vec!["describe".to_string()];
    want.extend(vec!["call".to_string(); calls]);
    want
}

#[test]
fn a_front_keeps_its_connection_only_when_the_answer_allows_it() {
    let dir = TempDir::new("exchange", "front-keep");
    for (mode, kept) in [
        (Mode::KeepAlive, true),
        (Mode::Chunked, true),
        (Mode::Continue, true),
        (Mode::EarlyHints, true),
        (Mode::SaysClose, false),
        (Mode::UntilClose, false),
    ] {
        let runner = ScriptedRunner::start(mode);
        let front = front(&dir, &runner.url());
        let binding = describe(front.addr);
        for _ in 0..5 {
            let (status, body) = call(front.addr, &binding);
            assert_eq!(status, 200, "{mode:?}: {body}");
            assert_eq!(body["output"]["content"][0]["text"], "fine", "{body}");
        }
        assert_eq!(runner.actions(), actions(5), "{mode:?}: each read once");
        let connections = runner.connections();
        if kept {
            // Kept connections carry the next request (a fresh one only after 2 s idle,
            // which a loaded machine may cause now and then).
            assert!(connections < 6, "{mode:?}: {connections} connections");
        } else {
            assert_eq!(
                connections, 6,
                "{mode:?}: a closed connection is never written"
            );
        }
        let stderr = finish(front);
        assert!(
            !stderr.contains(TOKEN) && !stderr.contains("panicked"),
            "{stderr}"
        );
    }
}

#[test]
fn a_front_takes_an_answer_not_taken_as_outcome_unknown_and_sends_it_once() {
    let dir = TempDir::new("exchange", "front-lost");
    for mode in [
        Mode::Garbage,
        Mode::HugeHead,
        Mode::HugeBody,
        Mode::HugeChunked,
        Mode::Switching,
    ] {
        let runner = ScriptedRunner::start(mode);
        let front = front(&dir, &runner.url());
        let binding = describe(front.addr);
        for n in 1..=2 {
            let (status, body) = call(front.addr, &binding);
            assert_eq!(status, 504, "{mode:?}: {body}");
            assert_eq!(
                body["output"]["error"]["code"], "plugin_gateway_timeout",
                "{mode:?}: {body}"
            );
            assert_eq!(
                body["output"]["dispatch"], "outcome_unknown",
                "{mode:?}: {body}"
            );
            assert_eq!(runner.actions(), actions(n), "{mode:?}: never resent");
        }
        // Each lost answer took its connection with it: the next call went on a new one.
        let seen = runner.seen();
        assert_ne!(seen[1].conn, seen[2].conn, "{mode:?}: {seen:?}");
        let stderr = finish(front);
        assert!(
            !stderr.contains(TOKEN) && !stderr.contains("panicked"),
            "{stderr}"
        );
    }
}

#[test]
fn a_front_keeps_a_tls_connection_and_a_proxy_tunnel() {
    let dir = TempDir::new("exchange", "front-tls");
    let pki = client_support::TestPki::new();
    let ca = dir.write("ca.pem", &pki.ca_pem);
    for mode in [Mode::KeepAlive, Mode::Chunked] {
        let runner = ScriptedRunner::start_tls(mode, pki.server.clone());
        let extra = format!("ca_file = {}\n", serde_json::to_string(s(&ca)).unwrap());
        let front = front_with(&dir, &runner.url_with("https"), &extra, &[]);
        let binding = describe(front.addr);
        for _ in 0..3 {
            let (status, body) = call(front.addr, &binding);
            assert_eq!(status, 200, "{mode:?}: {body}");
        }
        assert_eq!(runner.actions(), actions(3), "{mode:?}");
        assert!(runner.connections() < 4, "{mode:?}: {:?}", runner.seen());
        finish(front);
    }
    // Through an HTTP proxy: one CONNECT tunnel carries the requests it can.
    let runner = ScriptedRunner::start(Mode::KeepAlive);
    let proxy = client_support::RecordingProxy::start();
    let front = front_with(&dir, &runner.url(), "", &[("HTTP_PROXY", &proxy.url())]);
    let binding = describe(front.addr);
    for _ in 0..3 {
        let (status, body) = call(front.addr, &binding);
        assert_eq!(status, 200, "{body}");
    }
    finish(front);
    assert_eq!(runner.actions(), actions(3));
    let tunnels = proxy.request_lines();
    assert_eq!(tunnels.len(), runner.connections(), "{tunnels:?}");
    assert!(tunnels.len() < 4, "{tunnels:?}");
    assert!(
        tunnels.iter().all(|t| t.starts_with("CONNECT ")),
        "{tunnels:?}"
    );
}
