//! The front hop on kept-alive connections (docs/DECISIONS.md, the pooled hop): a front
//! (`serve --runners`) reuses a connection to its runner only while that is provably safe, and
//! never writes a request twice. Every process is real: a runner `serve` with the fixture plugin
//! (which logs each call it reads), a front, and between them, for the faults, a small relay in
//! this test process that passes each request on to the runner and then misbehaves toward the
//! front: it closes every connection right after its answer, or resets the connection in the
//! middle of the answer. The third fault restarts the runner on the same port between calls.
//!
//! In each, the plugin's log shows every call read at most once, and a failure is classified as
//! the contract says: `not_started` only when nothing reached the runner, `outcome_unknown` for
//! a call that may have.

use crate::common;
use crate::tempdir;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::serve::ServeProcess;
use serde_json::{json, Value};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest any one process may take to start or stop, or any one answer to come (a hang,
/// never a timing).
const LIMIT: Duration = Duration::from_secs(30);
/// The token the caller presents to the front.
const CALLER: &str = "hop-caller-inspect-invoke-01234";
/// The front's token on the runner.
const LINK: &str = "hop-front-to-runner-secret-0123";

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// A tokens file with one token of the inspect and invoke scopes.
fn tokens(dir: &TempDir, name: &str, token: &str) -> PathBuf {
    dir.write(
        name,
        &format!(
            "[[tokens]]\nname = \"t\"\ntoken = \"{token}\"\n\
             scopes = [\"plugin:inspect\", \"plugin:invoke\"]\n"
        ),
    )
}

/// A runner `serve` on `listen` with one fixture provider `fx` logging to `fx.log`.
fn start_runner(dir: &TempDir, listen: &str) -> ServeProcess {
    let config = dir.write(
        "runner.toml",
        &format!(
            "[plugins]\nrequest_timeout_secs = 30\n\n[[plugins.providers]]\nid = \"fx\"\n\
             name = \"Fixture\"\ncommand = {}\nargs = [\"normal\"]\n",
            serde_json::to_string(s(&common::fixture_path())).unwrap(),
        ),
    );
    let tokens = tokens(dir, "runner-tokens.toml", LINK);
    let mut cmd = common::cli_command(BIN);
    cmd.args(["serve", "--config", s(&config), "--listen", listen])
        .args(["--tokens", s(&tokens)])
        .env("FIXTURE_LOG", dir.path("fx.log"))
        .env("FIXTURE_PIDS", dir.path("runner.pids"));
    ServeProcess::start(cmd)
}

/// A front `serve --runners` whose one runner `edge` is at `runner`.
fn start_front(dir: &TempDir, runner: SocketAddr) -> ServeProcess {
    dir.write("edge.tok", &format!("{LINK}\n"));
    let runners = dir.write(
        "runners.toml",
        &format!(
            "[[runners]]\nid = \"edge\"\nname = \"Edge\"\nurl = \"http://{runner}\"\n\
             token_file = \"edge.tok\"\n"
        ),
    );
    let tokens = tokens(dir, "front-tokens.toml", CALLER);
    let mut cmd = common::cli_command(BIN);
    cmd.args(["serve", "--runners", s(&runners), "--listen", "127.0.0.1:0"])
        .args(["--tokens", s(&tokens)]);
    for var in common::PROXY_VARIABLES {
        cmd.env_remove(var);
    }
    ServeProcess::start(cmd)
}

/// One raw HTTP/1.1 POST of a plugin_tool request to the front (Connection: close): its JSON
/// body.
fn post(addr: SocketAddr, params: &Value) -> Value {
    common::http::post_tool(addr, CALLER, params, LIMIT * 2).json()
}

/// The front's binding of the fixture's `echo`.
fn describe(front: SocketAddr) -> String {
    let body = post(
        front,
        &json!({"action": "describe", "runner": "edge", "plugin": "fx", "tool": "echo"}),
    );
    body["output"]["binding"]
        .as_str()
        .unwrap_or_else(|| panic!("describe: {body}"))
        .to_string()
}

/// A call of `echo` with `text` through the front: its body.
fn call(front: SocketAddr, binding: &str, text: &str) -> Value {
    post(
        front,
        &json!({"action": "call", "binding": binding, "arguments": {"text": text}}),
    )
}

/// The texts of the `echo` calls the plugin read, in order (across runner restarts).
fn echoed(dir: &TempDir) -> Vec<String> {
    std::fs::read_to_string(dir.path("fx.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["method"] == "tools/call" && v["params"]["name"] == "echo")
        .map(|v| {
            v["params"]["arguments"]["text"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

fn assert_echoed(body: &Value, text: &str) {
    assert_eq!(body["success"], json!(true), "{body}");
    assert_eq!(body["output"]["structuredContent"], json!({"text": text}));
}

/// Stops the front and the runner; no plugin outlives them, no zombie is left.
fn stop_all(front: ServeProcess, runner: ServeProcess, dir: &TempDir) {
    front.stop_within(LIMIT);
    runner.stop_within(LIMIT);
    for pid in common::recorded_plugin_pids(&dir.path("runner.pids")) {
        assert!(common::wait_gone(pid), "plugin {pid} outlived its runner");
    }
    common::assert_no_zombie_children_of_self();
}

/// What the [`Relay`] does toward the front once it has the runner's answer.
#[derive(Clone, Copy, PartialEq)]
enum Misbehave {
    /// Sends the whole answer (which says nothing of closing), then closes the connection.
    CloseAfterAnswer,
    /// For a call: sends the status line, the headers and half the body, then resets the
    /// connection. Anything else: as [`Misbehave::CloseAfterAnswer`].
    ResetCallsMidAnswer,
}

/// A loopback relay between the front and the runner: each request from the front goes to the
/// runner on a connection of its own, and the runner's answer comes back as `mode` says.
struct Relay {
    addr: SocketAddr,
    /// Requests read from the front.
    requests: Arc<AtomicUsize>,
    /// Connections to the front it has closed or reset.
    ended: Arc<AtomicUsize>,
}

impl Relay {
    fn start(runner: SocketAddr, mode: Misbehave) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicUsize::new(0));
        let ended = Arc::new(AtomicUsize::new(0));
        let (count, done) = (requests.clone(), ended.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (count, done) = (count.clone(), done.clone());
                std::thread::spawn(move || relay_one(stream, runner, mode, &count, &done));
            }
        });
        Relay {
            addr,
            requests,
            ended,
        }
    }

    /// Waits (bounded) until the relay has ended `n` connections to the front.
    fn wait_ended(&self, n: usize) {
        let deadline = Instant::now() + LIMIT;
        while self.ended.load(Ordering::SeqCst) < n {
            assert!(
                Instant::now() < deadline,
                "the relay did not end connection {n}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Relays the requests of one connection from the front (until it misbehaves).
fn relay_one(
    mut front: TcpStream,
    runner: SocketAddr,
    mode: Misbehave,
    count: &AtomicUsize,
    ended: &AtomicUsize,
) {
    front.set_read_timeout(Some(LIMIT)).unwrap();
    let request = common::http::read_request(&mut front);
    if !common::http::request_complete(request.as_bytes()) {
        return;
    }
    count.fetch_add(1, Ordering::SeqCst);
    let answer = ask_runner(runner, &request);
    let head_end = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let body = request.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let is_call = serde_json::from_str::<Value>(body).unwrap_or_default()["params"]["action"]
        == json!("call");
    match mode {
        Misbehave::ResetCallsMidAnswer if is_call => {
            let half = head_end + (answer.len() - head_end) / 2;
            front.write_all(&answer[..half]).unwrap();
            reset(front);
        }
        _ => {
            front.write_all(&answer).unwrap();
            let _ = front.shutdown(Shutdown::Both);
        }
    }
    ended.fetch_add(1, Ordering::SeqCst);
}

/// One request to the runner on a connection of its own: the whole answer (head and
/// `Content-Length` body).
fn ask_runner(runner: SocketAddr, request: &str) -> Vec<u8> {
    let mut up = TcpStream::connect(runner).unwrap();
    up.set_read_timeout(Some(LIMIT)).unwrap();
    up.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = up.read(&mut chunk).unwrap();
        assert!(n > 0, "the runner closed before its whole answer");
        answer.extend_from_slice(&chunk[..n]);
        let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map(|v| v.trim().parse().unwrap())
            .unwrap_or(0);
        if answer.len() >= end + 4 + length {
            return answer;
        }
    }
}

/// Closes `stream` with a reset (SO_LINGER 0) instead of an orderly close.
#[cfg(unix)]
fn reset(stream: TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on a socket this function owns, with a correctly sized option.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_LINGER");
    drop(stream);
}

#[cfg(not(unix))]
fn reset(stream: TcpStream) {
    drop(stream);
}

/// A runner whose connections close right after each answer (an answer that does not say so):
/// the front finds its kept connection closed before it writes, dials afresh, and every call
/// succeeds, read once each by the plugin.
#[test]
#[cfg_attr(
    windows,
    ignore = "the fixture plugin and the /proc checks are POSIX-only here"
)]
fn a_connection_closed_after_each_answer_is_never_written_again() {
    let dir = TempDir::new("hop", "close");
    let runner = start_runner(&dir, "127.0.0.1:0");
    let relay = Relay::start(runner.addr, Misbehave::CloseAfterAnswer);
    let front = start_front(&dir, relay.addr);
    let binding = describe(front.addr);
    for i in 0..5 {
        // The relay has closed every connection the front holds before the next call.
        relay.wait_ended(i + 1);
        let text = format!("close-{i}");
        assert_echoed(&call(front.addr, &binding, &text), &text);
    }
    relay.wait_ended(6);
    let want: Vec<String> = (0..5).map(|i| format!("close-{i}")).collect();
    assert_eq!(echoed(&dir), want, "each call read once, in order");
    assert_eq!(
        relay.requests.load(Ordering::SeqCst),
        6,
        "describe and five calls"
    );
    stop_all(front, runner, &dir);
}

/// A runner connection reset in the middle of the answer: the call reached the plugin, so it is
/// `outcome_unknown` (never `not_started`) and is not sent again; the next call goes on a
/// fresh connection.
#[test]
#[cfg_attr(
    windows,
    ignore = "the fixture plugin and the /proc checks are POSIX-only here"
)]
fn a_reset_in_the_middle_of_the_answer_is_outcome_unknown_and_never_resent() {
    let dir = TempDir::new("hop", "reset");
    let runner = start_runner(&dir, "127.0.0.1:0");
    let relay = Relay::start(runner.addr, Misbehave::ResetCallsMidAnswer);
    let front = start_front(&dir, relay.addr);
    let binding = describe(front.addr);
    relay.wait_ended(1);
    let body = call(front.addr, &binding, "reset-1");
    assert_eq!(body["success"], json!(false), "{body}");
    assert_eq!(
        body["output"]["dispatch"],
        json!("outcome_unknown"),
        "{body}"
    );
    relay.wait_ended(2);
    assert_eq!(echoed(&dir), ["reset-1"], "the call was read once");
    assert_eq!(
        relay.requests.load(Ordering::SeqCst),
        2,
        "the call was sent once"
    );
    // The next call is sent once too (and lost the same way).
    let body = call(front.addr, &binding, "reset-2");
    assert_eq!(
        body["output"]["dispatch"],
        json!("outcome_unknown"),
        "{body}"
    );
    assert_eq!(echoed(&dir), ["reset-1", "reset-2"]);
    assert_eq!(relay.requests.load(Ordering::SeqCst), 3);
    stop_all(front, runner, &dir);
}

/// A runner restarted on the same port between two calls: the front's kept connection to the
/// old process is closed, so it is never written; the old binding is refused before anything
/// is sent (`plugin_replaced`, `not_started`), and a fresh one reaches the new process once.
#[test]
#[cfg_attr(
    windows,
    ignore = "the fixture plugin and the /proc checks are POSIX-only here"
)]
fn a_runner_restarted_between_two_calls() {
    let dir = TempDir::new("hop", "restart");
    let mut runner = start_runner(&dir, "127.0.0.1:0");
    let addr = runner.addr;
    let front = start_front(&dir, addr);
    let binding = describe(front.addr);
    assert_echoed(&call(front.addr, &binding, "before"), "before");
    // SIGKILL: the kernel closes its connections (the front's kept one among them).
    runner.kill();
    for pid in common::recorded_plugin_pids(&dir.path("runner.pids")) {
        assert!(common::wait_gone(pid), "plugin {pid} outlived its runner");
    }
    let runner = start_runner(&dir, &addr.to_string());
    let body = call(front.addr, &binding, "stale");
    assert_eq!(
        body["output"]["error"]["code"],
        json!("plugin_replaced"),
        "{body}"
    );
    assert_eq!(body["output"]["dispatch"], json!("not_started"), "{body}");
    let fresh = describe(front.addr);
    assert_echoed(&call(front.addr, &fresh, "after"), "after");
    assert_echoed(&call(front.addr, &fresh, "again"), "again");
    assert_eq!(echoed(&dir), ["before", "after", "again"]);
    stop_all(front, runner, &dir);
}
