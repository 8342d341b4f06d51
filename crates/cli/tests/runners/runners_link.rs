//! Runners that dial out (docs/PROTOCOL.md, runner links): a front (`serve --listen --tokens`
//! with runner tokens and no runner of its own) and real `webcodex-plugin connect` runners with
//! the fixture plugin, on loopback. Faults are real: a runner SIGKILLed during a slow call, a
//! runner restarted, hostile links (garbage, an oversized frame, a wrong hello, answers for ids
//! never sent) written with a WebSocket client of the test's own.

use crate::common;
use crate::tempdir;

use common::serve::{runner_token, ServeProcess};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tempdir::TempDir;

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest any process may take to start or stop, or any answer to come (a hang, never a
/// timing).
const LIMIT: Duration = Duration::from_secs(30);

/// A user token of the front with every scope.
const USER: &str = "front-user-all-scopes-0123456789";

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// The front's tokens file: one user token, and a runner token for each of `runners`.
fn front_tokens(dir: &TempDir, runners: &[&str]) -> PathBuf {
    common::serve::write_front_tokens(dir, USER, runners)
}

/// A front with only dial-out runners.
fn start_front(tokens: &Path) -> ServeProcess {
    let mut cmd = common::cli_command(BIN);
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--tokens", s(tokens)])
        .env("RUST_LOG", "info");
    ServeProcess::start(cmd)
}

/// One `connect` runner: its files and its process (killed and reaped on drop).
struct Runner {
    id: &'static str,
    config: PathBuf,
    log: PathBuf,
    pids: PathBuf,
    child: Option<Child>,
    stderr: Option<JoinHandle<String>>,
    /// Arguments `connect` gets besides the usual ones.
    extra: Vec<&'static str>,
}

impl Runner {
    fn new(dir: &TempDir, id: &'static str) -> Runner {
        let fixture = common::fixture_path();
        let config = dir.write(
            &format!("{id}.toml"),
            &format!(
                "[plugins]\nrequest_timeout_secs = 30\n\n[[plugins.providers]]\nid = \"fx\"\n\
                 name = \"Fixture\"\ncommand = {}\nargs = [\"normal\"]\n",
                serde_json::to_string(s(&fixture)).unwrap()
            ),
        );
        Runner {
            id,
            config,
            log: dir.path(&format!("{id}.log")),
            pids: dir.path(&format!("{id}.pids")),
            child: None,
            stderr: None,
            extra: Vec::new(),
        }
    }

    /// Starts `connect` to `front` (the credential in WEBCODEX_RUNNER_TOKEN).
    fn start(&mut self, front: SocketAddr) {
        let mut cmd = common::connect_command(BIN, &runner_token(self.id));
        cmd.args([
            "--front-url",
            &format!("http://{front}"),
            "--config",
            s(&self.config),
            "--name",
            &format!("Runner {}", self.id),
        ])
        .args(&self.extra)
        .env("FIXTURE_LOG", &self.log)
        .env("FIXTURE_PIDS", &self.pids)
        .env("RUST_LOG", "info");
        let mut child = cmd.spawn().expect("spawn connect");
        self.stderr = Some(common::read_all(child.stderr.take().expect("stderr")));
        self.child = Some(child);
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().expect("started").id() as i32
    }

    /// SIGKILL, reaped; its plugins die with it (parent-death signal).
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        for pid in common::recorded_plugin_pids(&self.pids) {
            assert!(
                common::wait_gone(pid),
                "plugin {pid} of {} outlived it",
                self.id
            );
        }
    }

    /// SIGTERM and a bounded wait: exit 0, plugins gone. Returns its stderr.
    fn stop(&mut self) -> String {
        let mut child = self.child.take().expect("started");
        assert!(
            common::request_stop(child.id()),
            "SIGTERM to connect failed"
        );
        let status = common::wait_bounded(&mut child, LIMIT);
        let stderr = self.stderr.take().unwrap().join().unwrap();
        assert_eq!(status.code(), Some(0), "connect exit {status:?}: {stderr}");
        for pid in common::recorded_plugin_pids(&self.pids) {
            assert!(
                common::wait_gone(pid),
                "plugin {pid} of {} outlived it",
                self.id
            );
        }
        stderr
    }

    /// The tools/call requests its plugins read for `tool` (across restarts).
    fn calls(&self, tool: &str) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["method"] == "tools/call" && v["params"]["name"] == tool)
            .count()
    }

    fn wait_for_call(&self, tool: &str) {
        let deadline = Instant::now() + LIMIT;
        while self.calls(tool) == 0 {
            assert!(Instant::now() < deadline, "{} never read the call", self.id);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            if let Some(Ok(stderr)) = self.stderr.take().map(JoinHandle::join) {
                eprintln!("{} stderr:\n{stderr}", self.id);
            }
        }
    }
}

/// One raw HTTP/1.1 request (Connection: close): status and body.
fn raw_request(addr: SocketAddr, head: &str, body: &str) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(LIMIT * 2)).unwrap();
    let raw = format!(
        "{head}Host: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(raw.as_bytes()).expect("write request");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read response");
    let _ = stream.shutdown(Shutdown::Both);
    let response = common::http::parse_response(&response);
    let body = if response.body.is_empty() {
        Value::Null
    } else {
        response.json()
    };
    (response.status, body)
}

/// One plugin_tool request to the front.
fn tool(front: SocketAddr, token: &str, params: Value) -> (u16, Value) {
    let body = json!({"tool": "plugin_tool", "params": params}).to_string();
    raw_request(
        front,
        &format!(
            "POST /api/tools/call HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\n"
        ),
        &body,
    )
}

fn code(body: &Value) -> &str {
    body["output"]["error"]["code"].as_str().unwrap_or("")
}

/// The runner ids `list` shows.
fn listed(front: SocketAddr) -> Vec<String> {
    let (status, body) = tool(front, USER, json!({"action": "list"}));
    assert_eq!(status, 200, "{body}");
    body["output"]["runners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["runner"].as_str().unwrap().to_string())
        .collect()
}

/// Waits (bounded) until `list` shows exactly `want`.
fn wait_listed(front: SocketAddr, want: &[&str]) {
    let deadline = Instant::now() + LIMIT;
    loop {
        let now = listed(front);
        if now == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "list shows {now:?}, not {want:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// describe + call `echo` on runner `id`: the echoed text.
fn echo_through(front: SocketAddr, id: &str, text: &str) -> String {
    let binding = describe(front, id, "echo");
    let (status, body) = tool(
        front,
        USER,
        json!({"action": "call", "binding": binding, "arguments": {"text": text}}),
    );
    assert_eq!(status, 200, "{body}");
    body["output"]["structuredContent"]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

/// describe `tool` on runner `id`: the front's binding.
fn describe(front: SocketAddr, id: &str, tool_name: &str) -> String {
    let (status, body) = tool(
        front,
        USER,
        json!({"action": "describe", "runner": id, "plugin": "fx", "tool": tool_name}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"]["runner"], json!(id), "{body}");
    body["output"]["binding"].as_str().unwrap().to_string()
}

/// No zombie child of the front and none of this test.
fn assert_no_zombies(front: i32) {
    assert!(
        common::zombie_children_of(front).is_empty(),
        "zombie children of the front"
    );
    common::assert_no_zombie_children_of_self();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs connect processes stopped with SIGTERM behind a front (docs/PLATFORMS.md)"
)]
fn three_runners_dial_out_and_serve_list_describe_call() {
    let dir = TempDir::new("link", "three");
    let ids = ["edge-1", "edge-2", "edge-3"];
    let front = start_front(&front_tokens(&dir, &ids));
    let addr = front.addr;
    let mut runners: Vec<Runner> = ids.iter().map(|id| Runner::new(&dir, id)).collect();
    for runner in &mut runners {
        runner.start(addr);
    }
    wait_listed(addr, &ids);
    let (_, body) = tool(addr, USER, json!({"action": "list"}));
    assert_eq!(
        body["output"]["runners"][1],
        json!({"runner": "edge-2", "name": "Runner edge-2"})
    );
    for id in ids {
        let (status, body) = tool(addr, USER, json!({"action": "list", "runner": id}));
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["output"]["runner"], json!(id));
        assert_eq!(
            body["output"]["plugins"][0]["status"],
            json!("ready"),
            "{body}"
        );
        assert_eq!(
            echo_through(addr, id, &format!("hello {id}")),
            format!("hello {id}")
        );
    }
    // A request and an answer many times a link's read size (4 KiB) cross whole, each frame
    // read in many parts.
    let long: String = (0..60_000u32)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    assert_eq!(echo_through(addr, "edge-1", &long), long);

    // A runner token is refused on every user route; a user token on the link route.
    let (status, body) = tool(addr, &runner_token("edge-1"), json!({"action": "list"}));
    assert_eq!(
        (status, code(&body)),
        (401, "runner_token_not_accepted"),
        "{body}"
    );
    let (status, _) = raw_request(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n",
            runner_token("edge-1")
        ),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(status, 401);
    let upgrade = |token: &str| {
        raw_request(
            addr,
            &format!(
                "GET /api/runners/connect HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
                 Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            ),
            "",
        )
    };
    let (status, body) = upgrade(USER);
    assert_eq!((status, code(&body)), (401, "unauthorized"), "{body}");
    let (status, _) = upgrade("not-a-token-of-this-front-at-all");
    assert_eq!(status, 401);

    // A runner that stops leaves `list`; routing to it: plugin_runner_not_found.
    let stderr = runners[2].stop();
    assert!(!stderr.contains(&runner_token("edge-3")), "{stderr}");
    wait_listed(addr, &ids[..2]);
    let (_, body) = tool(addr, USER, json!({"action": "list", "runner": "edge-3"}));
    assert_eq!(code(&body), "plugin_runner_not_found", "{body}");
    for runner in &mut runners[..2] {
        runner.stop();
    }
    wait_listed(addr, &[]);
    let front_pid = front.pid();
    assert_no_zombies(front_pid);
    let stderr = front.stop();
    for id in ids {
        assert!(
            !stderr.contains(&runner_token(id)),
            "a token in the log: {stderr}"
        );
        // Each runner said goodbye with a close frame, whose code and reason the log keeps.
        assert!(
            stderr.contains(&format!(
                "runner link `{id}`: ended (the peer closed the link (close code 1001: the \
                 runner is stopping))"
            )),
            "{stderr}"
        );
    }
    common::assert_no_zombie_children_of_self();
}

#[test]
fn a_runner_killed_during_a_slow_call_is_outcome_unknown_and_its_restart_replaces_it() {
    let dir = TempDir::new("link", "kill");
    let front = start_front(&front_tokens(&dir, &["edge-1", "edge-2"]));
    let addr = front.addr;
    let mut one = Runner::new(&dir, "edge-1");
    let mut two = Runner::new(&dir, "edge-2");
    one.start(addr);
    two.start(addr);
    wait_listed(addr, &["edge-1", "edge-2"]);
    let old_echo = describe(addr, "edge-1", "echo");
    let sleep = describe(addr, "edge-1", "sleep");
    let slow = std::thread::spawn(move || {
        tool(
            addr,
            USER,
            json!({"action": "call", "binding": sleep, "arguments": {"ms": 20000}}),
        )
    });
    one.wait_for_call("sleep");
    let killed = one.pid();
    one.kill();
    let (status, body) = slow.join().unwrap();
    assert_eq!(
        (status, code(&body)),
        (504, "plugin_gateway_timeout"),
        "{body}"
    );
    assert_eq!(
        body["output"]["dispatch"],
        json!("outcome_unknown"),
        "{body}"
    );
    assert_eq!(body["output"]["recovery"], json!("do_not_retry"), "{body}");
    assert!(!common::process_is_gone(front.pid()), "the front died");
    assert!(common::process_is_gone(killed));
    wait_listed(addr, &["edge-2"]);
    // The other runner did not notice.
    assert_eq!(echo_through(addr, "edge-2", "still here"), "still here");

    // Restarted: a new runner instance. The old binding fails closed; a new describe works.
    one.start(addr);
    wait_listed(addr, &["edge-1", "edge-2"]);
    let (status, body) = tool(
        addr,
        USER,
        json!({"action": "call", "binding": old_echo, "arguments": {"text": "x"}}),
    );
    assert_eq!((status, code(&body)), (400, "plugin_replaced"), "{body}");
    assert_eq!(echo_through(addr, "edge-1", "again"), "again");
    // The lost call was read exactly once: never retried, not by the front, not by the runner.
    assert_eq!(one.calls("sleep"), 1, "the lost call was retried");
    one.kill();
    two.kill();
    wait_listed(addr, &[]);
    assert_no_zombies(front.pid());
    drop(front);
    common::assert_no_zombie_children_of_self();
}

/// While one request runs on a `connect` runner, the link is still read: the thread that read
/// the slow call runs it and has passed the reading on, so the runner's other requests are
/// answered meanwhile, and the slow call is then answered once, by the thread that ran it.
#[test]
#[cfg_attr(
    windows,
    ignore = "runs connect processes stopped with SIGTERM behind a front (docs/PLATFORMS.md)"
)]
fn a_runner_answers_other_requests_while_one_of_its_requests_runs() {
    let dir = TempDir::new("link", "overlap");
    let front = start_front(&front_tokens(&dir, &["edge-1"]));
    let addr = front.addr;
    let mut one = Runner::new(&dir, "edge-1");
    one.start(addr);
    wait_listed(addr, &["edge-1"]);
    let sleep = describe(addr, "edge-1", "sleep");
    let slow = std::thread::spawn(move || {
        tool(
            addr,
            USER,
            json!({"action": "call", "binding": sleep, "arguments": {"ms": 10000}}),
        )
    });
    one.wait_for_call("sleep");
    for _ in 0..3 {
        let (status, body) = tool(addr, USER, json!({"action": "list", "runner": "edge-1"}));
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["output"]["runner"], json!("edge-1"), "{body}");
        assert_eq!(
            body["output"]["plugins"][0]["plugin"],
            json!("fx"),
            "{body}"
        );
        assert!(!describe(addr, "edge-1", "echo").is_empty());
    }
    assert!(
        !slow.is_finished(),
        "the runner's other requests waited behind its running call"
    );
    let (status, body) = slow.join().unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], json!(true), "{body}");
    assert_eq!(one.calls("sleep"), 1);
    // The link still serves after the overlap.
    assert_eq!(echo_through(addr, "edge-1", "after"), "after");
    one.stop();
    assert_no_zombies(front.pid());
    drop(front);
    common::assert_no_zombie_children_of_self();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs connect processes stopped with SIGTERM behind a front (docs/PLATFORMS.md)"
)]
fn a_call_through_the_link_keeps_its_trace_id_on_the_runner_and_never_reaches_the_plugin() {
    let dir = TempDir::new("link", "trace");
    let front = start_front(&front_tokens(&dir, &["edge-1"]));
    let addr = front.addr;
    let mut runner = Runner::new(&dir, "edge-1");
    runner.extra = vec!["--log-format", "json"];
    runner.start(addr);
    wait_listed(addr, &["edge-1"]);
    let binding = describe(addr, "edge-1", "echo");
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let traceparent = format!("00-{trace_id}-00f067aa0ba902b7-01");
    let body = json!({"tool": "plugin_tool", "params":
        {"action": "call", "binding": binding, "arguments": {"text": "traced"}}})
    .to_string();
    let (status, answer) = raw_request(
        addr,
        &format!(
            "POST /api/tools/call HTTP/1.1\r\nAuthorization: Bearer {USER}\r\n\
             Content-Type: application/json\r\ntraceparent: {traceparent}\r\n"
        ),
        &body,
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["output"]["structuredContent"]["text"],
        json!("traced")
    );

    let stderr = runner.stop();
    let lines: Vec<Value> = stderr
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|_| panic!("not a JSON line: {line}"))
        })
        .collect();
    // The runner's line of that request carries the caller's trace id, and what it ran.
    let call = lines
        .iter()
        .find(|l| {
            l["msg"]
                .as_str()
                .unwrap_or("")
                .starts_with("connect: tools_call")
        })
        .unwrap_or_else(|| panic!("no line of the call: {stderr}"));
    assert_eq!(call["trace_id"], json!(trace_id), "{call}");
    assert_eq!(call["action"], json!("call"), "{call}");
    assert_eq!(call["dispatch"], json!("completed"), "{call}");
    assert_eq!(call["plugin"], json!("fx"), "{call}");
    // The describe before it had no traceparent: a trace of its own (from the front).
    let described = lines
        .iter()
        .find(|l| {
            l["msg"]
                .as_str()
                .unwrap_or("")
                .starts_with("connect: tools_list")
        })
        .unwrap_or_else(|| panic!("no line of the describe: {stderr}"));
    assert!(described["trace_id"]
        .as_str()
        .is_some_and(|t| t.len() == 32 && t != trace_id));
    // Nothing of the trace context reached the plugin.
    let plugin_read = std::fs::read_to_string(&runner.log).unwrap();
    assert!(plugin_read.contains("traced"), "{plugin_read}");
    assert!(!plugin_read.contains(trace_id), "{plugin_read}");
    assert!(!plugin_read.contains("traceparent"), "{plugin_read}");
    assert_no_zombies(front.pid());
    let front_log = front.stop();
    assert!(
        front_log.lines().any(|l| l.contains(trace_id)),
        "the front's log has no line of the trace: {front_log}"
    );
    common::assert_no_zombie_children_of_self();
}

/// A WebSocket client of the test's own on the link route, authenticated as runner `id`.
fn hostile_link(front: SocketAddr, id: &str) -> tungstenite::WebSocket<TcpStream> {
    use tungstenite::client::ClientRequestBuilder;
    let stream = TcpStream::connect(front).expect("connect");
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    let uri: tungstenite::http::Uri = format!("ws://{front}/api/runners/connect").parse().unwrap();
    let request = ClientRequestBuilder::new(uri)
        .with_header("Authorization", format!("Bearer {}", runner_token(id)))
        .with_sub_protocol("webcodex-runner-link-v1");
    let (ws, response) = tungstenite::client::client(request, stream).expect("upgrade");
    assert_eq!(response.status().as_u16(), 101);
    ws
}

const HELLO: &str =
    r#"{"hello":{"protocol":"webcodex-runner-link-v1","instance":"AAAAAAAAAAAAAAAAAAAAAA"}}"#;

/// Reads until the front closes the link; the close code it sent, if it sent one.
fn closed_by_front(ws: &mut tungstenite::WebSocket<TcpStream>) -> Option<u16> {
    let mut code = None;
    loop {
        match ws.read() {
            Ok(tungstenite::Message::Close(frame)) => {
                code = frame.map(|f| u16::from(f.code));
            }
            Ok(_) => {}
            Err(_) => return code,
        }
    }
}

#[test]
fn hostile_links_are_closed_without_harm_to_other_runners() {
    let dir = TempDir::new("link", "hostile");
    let front = start_front(&front_tokens(&dir, &["edge-1", "bad"]));
    let addr = front.addr;
    let mut good = Runner::new(&dir, "edge-1");
    good.start(addr);
    wait_listed(addr, &["edge-1"]);

    // A wrong hello: closed with 1008 (policy) and a reason; never listed.
    let mut ws = hostile_link(addr, "bad");
    ws.send(tungstenite::Message::Text(
        r#"{"hello":{"protocol":"webcodex-runner-link-v0","instance":"AAAAAAAAAAAAAAAAAAAAAA"}}"#
            .into(),
    ))
    .unwrap();
    assert_eq!(closed_by_front(&mut ws), Some(1008));
    assert_eq!(listed(addr), ["edge-1"]);

    // Garbage after a good hello: welcomed, then closed (1008).
    let mut ws = hostile_link(addr, "bad");
    ws.send(tungstenite::Message::Text(HELLO.into())).unwrap();
    let welcome = ws.read().unwrap();
    assert_eq!(
        welcome.to_text().unwrap(),
        r#"{"welcome":{"runner":"bad"}}"#
    );
    wait_listed(addr, &["bad", "edge-1"]);
    ws.send(tungstenite::Message::Text("this is not JSON".into()))
        .unwrap();
    assert_eq!(closed_by_front(&mut ws), Some(1008));
    wait_listed(addr, &["edge-1"]);

    // An answer for an id the front never sent: closed (1008).
    let mut ws = hostile_link(addr, "bad");
    ws.send(tungstenite::Message::Text(HELLO.into())).unwrap();
    ws.read().unwrap();
    ws.send(tungstenite::Message::Text(
        r#"{"id":999,"dispatch_state":"completed","payload":{"kind":"list","output":{}}}"#.into(),
    ))
    .unwrap();
    assert_eq!(closed_by_front(&mut ws), Some(1008));

    // A frame over 1 MiB: closed (1009, too big).
    let mut ws = hostile_link(addr, "bad");
    ws.send(tungstenite::Message::Text(HELLO.into())).unwrap();
    ws.read().unwrap();
    let big = format!("\"{}\"", "x".repeat(1 << 20));
    // The front may close while the frame is still being written.
    let _ = ws.send(tungstenite::Message::Text(big.into()));
    assert_eq!(closed_by_front(&mut ws), Some(1009));

    // A link that answers a request with a payload of another kind: the caller gets a lost
    // answer (not started for the read-only list), nothing of it is shown.
    let mut ws = hostile_link(addr, "bad");
    ws.send(tungstenite::Message::Text(HELLO.into())).unwrap();
    ws.read().unwrap();
    wait_listed(addr, &["bad", "edge-1"]);
    let asker =
        std::thread::spawn(move || tool(addr, USER, json!({"action": "list", "runner": "bad"})));
    let request: Value = serde_json::from_str(ws.read().unwrap().to_text().unwrap()).unwrap();
    assert_eq!(request["operation"], json!("providers_list"), "{request}");
    assert_eq!(request["params"]["runner"], json!("local"), "{request}");
    let reply = json!({"id": request["id"], "dispatch_state": "completed",
        "payload": {"kind": "reload", "output": {"secret": "shown?"}}});
    ws.send(tungstenite::Message::Text(reply.to_string().into()))
        .unwrap();
    let (status, body) = asker.join().unwrap();
    assert_eq!(
        (status, code(&body)),
        (504, "plugin_gateway_timeout"),
        "{body}"
    );
    assert!(!body.to_string().contains("shown?"), "{body}");
    // An answer that echoes the link's own token: refused whole, the token never shown.
    let asker =
        std::thread::spawn(move || tool(addr, USER, json!({"action": "list", "runner": "bad"})));
    let request: Value = serde_json::from_str(ws.read().unwrap().to_text().unwrap()).unwrap();
    let reply = json!({"id": request["id"], "dispatch_state": "completed",
        "payload": {"kind": "list", "output": {"runner": "local", "plugins": [
            {"plugin": "fx", "name": runner_token("bad"), "status": "ready"}]}}});
    ws.send(tungstenite::Message::Text(reply.to_string().into()))
        .unwrap();
    let (status, body) = asker.join().unwrap();
    assert_eq!(code(&body), "plugin_rpc_error", "{status} {body}");
    assert_eq!(body["output"]["dispatch"], json!("completed"), "{body}");
    assert!(!body.to_string().contains(&runner_token("bad")), "{body}");
    drop(ws);
    wait_listed(addr, &["edge-1"]);

    // A second link for a connected id replaces the first, which is closed at once.
    let mut first = hostile_link(addr, "bad");
    first
        .send(tungstenite::Message::Text(HELLO.into()))
        .unwrap();
    first.read().unwrap();
    let mut second = hostile_link(addr, "bad");
    second
        .send(tungstenite::Message::Text(HELLO.into()))
        .unwrap();
    second.read().unwrap();
    // Closed at once with 1008 (the reason tells the replaced runner why); a link left open
    // would end only at the read timeout.
    let waited = Instant::now();
    assert_eq!(closed_by_front(&mut first), Some(1008));
    assert!(
        waited.elapsed() < LIMIT / 2,
        "the replaced link was not ended"
    );
    assert_eq!(listed(addr), ["bad", "edge-1"]);
    drop(second);
    wait_listed(addr, &["edge-1"]);

    // The good runner never noticed any of it.
    assert_eq!(echo_through(addr, "edge-1", "unharmed"), "unharmed");
    assert_no_zombies(front.pid());
    good.kill();
    drop(front);
    common::assert_no_zombie_children_of_self();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs connect processes stopped with SIGTERM behind a front (docs/PLATFORMS.md)"
)]
fn runners_come_back_after_the_front_restarts() {
    let dir = TempDir::new("link", "restart");
    let tokens = front_tokens(&dir, &["edge-1", "edge-2"]);
    let mut front = start_front(&tokens);
    let addr = front.addr;
    let mut runners = [Runner::new(&dir, "edge-1"), Runner::new(&dir, "edge-2")];
    for runner in &mut runners {
        runner.start(addr);
    }
    wait_listed(addr, &["edge-1", "edge-2"]);
    front.kill();
    // The same address again: every runner is back within the backoff's cap (30 s; the
    // bounded wait is that long).
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--listen",
        &addr.to_string(),
        "--tokens",
        s(&tokens),
    ])
    .env("RUST_LOG", "info");
    let front = ServeProcess::start(cmd);
    wait_listed(addr, &["edge-1", "edge-2"]);
    assert_eq!(echo_through(addr, "edge-2", "back"), "back");
    // A front stopped with links up: each gets a close frame, and the front exits 0 at once.
    assert_no_zombies(front.pid());
    let stopped = Instant::now();
    let stderr = front.stop();
    assert!(stopped.elapsed() < LIMIT, "{stderr}");
    assert!(stderr.contains("runner link `edge-1`: ended"), "{stderr}");
    for runner in &mut runners {
        let stderr = runner.stop();
        // The first failure of a series at warn; the link came back once, then ended again.
        assert!(
            stderr.contains("WARN") && stderr.contains("the link to the front ended"),
            "{stderr}"
        );
        assert_eq!(stderr.matches("linked to the front").count(), 2, "{stderr}");
    }
}

/// A small HTTP CONNECT proxy on loopback: each tunnel on threads of its own; the request lines
/// it was asked, in order.
struct ConnectProxy {
    addr: SocketAddr,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ConnectProxy {
    fn start() -> ConnectProxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut client) = stream else { continue };
                let record = record.clone();
                std::thread::spawn(move || {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
                        match client.read(&mut byte) {
                            Ok(1) => head.push(byte[0]),
                            _ => return,
                        }
                    }
                    let text = String::from_utf8_lossy(&head).into_owned();
                    let first = text.lines().next().unwrap_or_default().to_string();
                    record.lock().unwrap().push(first.clone());
                    let target = first
                        .strip_prefix("CONNECT ")
                        .and_then(|r| r.split(' ').next())
                        .unwrap_or_default()
                        .to_string();
                    let Ok(upstream) = TcpStream::connect(&target) else {
                        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
                        return;
                    };
                    let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                    let (mut c_read, mut u_write) =
                        (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                    let up = std::thread::spawn(move || {
                        let _ = std::io::copy(&mut c_read, &mut u_write);
                        let _ = u_write.shutdown(Shutdown::Both);
                    });
                    let (mut u_read, mut c_write) = (upstream, client);
                    let _ = std::io::copy(&mut u_read, &mut c_write);
                    let _ = c_write.shutdown(Shutdown::Both);
                    let _ = up.join();
                });
            }
        });
        ConnectProxy { addr, seen }
    }

    fn lines(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

#[test]
fn a_runner_behind_an_http_proxy_links_through_connect() {
    let dir = TempDir::new("link", "proxy");
    let front = start_front(&front_tokens(&dir, &["edge-1"]));
    let addr = front.addr;
    let proxy = ConnectProxy::start();
    let mut runner = Runner::new(&dir, "edge-1");
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "connect",
        "--front-url",
        &format!("http://{addr}"),
        "--config",
        s(&runner.config),
        "--proxy",
        &format!("http://{}", proxy.addr),
    ])
    .env("WEBCODEX_RUNNER_TOKEN", runner_token("edge-1"))
    .env("FIXTURE_LOG", &runner.log)
    .env("FIXTURE_PIDS", &runner.pids)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn connect");
    runner.stderr = Some(common::read_all(child.stderr.take().unwrap()));
    runner.child = Some(child);
    wait_listed(addr, &["edge-1"]);
    assert_eq!(echo_through(addr, "edge-1", "via proxy"), "via proxy");
    assert_eq!(proxy.lines(), [format!("CONNECT {addr} HTTP/1.1")]);
    runner.kill();
    wait_listed(addr, &[]);
    assert_no_zombies(front.pid());
}

#[test]
fn a_refused_runner_token_ends_connect_with_exit_2() {
    let dir = TempDir::new("link", "refused");
    let front = start_front(&front_tokens(&dir, &["edge-1"]));
    let runner = Runner::new(&dir, "edge-1");
    for token in [
        USER.to_string(),
        "not-a-token-of-this-front-at-all".to_string(),
    ] {
        let mut cmd = common::cli_command(BIN);
        cmd.args([
            "connect",
            "--front-url",
            &format!("http://{}", front.addr),
            "--config",
            s(&runner.config),
        ])
        .env("WEBCODEX_RUNNER_TOKEN", &token)
        .env("FIXTURE_PIDS", &runner.pids);
        for var in common::PROXY_VARIABLES {
            cmd.env_remove(var);
        }
        let run = common::run_to_end(cmd, LIMIT);
        assert_eq!(run.code, Some(2), "{run:?}");
        assert!(
            run.stderr
                .contains("refused this runner's credential (401)")
                && run.stderr.contains("WEBCODEX_RUNNER_TOKEN"),
            "{run:?}"
        );
        assert!(
            !run.stderr.contains(&token),
            "the token in the message: {run:?}"
        );
    }
    // Its plugins were shut down with it.
    for pid in common::recorded_plugin_pids(&runner.pids) {
        assert!(common::wait_gone(pid), "plugin {pid} outlived connect");
    }
    assert_no_zombies(front.pid());
}

use crate::client_support;

#[test]
// tungstenite's handshake callback returns its own (large) error type.
#[allow(clippy::result_large_err)]
fn a_runner_links_over_wss_with_its_ca_cert() {
    use std::sync::Arc;
    let dir = TempDir::new("link", "wss");
    let pki = client_support::TestPki::new();
    let ca = dir.write("ca.pem", &pki.ca_pem);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // A front of the test's own behind TLS: upgrade, hello, welcome, one request, its answer.
    let server = pki.server.clone();
    let fake_front = std::thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        tcp.set_read_timeout(Some(LIMIT)).unwrap();
        let tls = rustls::StreamOwned::new(
            rustls::ServerConnection::new(Arc::clone(&server)).unwrap(),
            tcp,
        );
        let mut authorization = String::new();
        let mut ws = tungstenite::accept_hdr(
            tls,
            |request: &tungstenite::handshake::server::Request,
             mut response: tungstenite::handshake::server::Response| {
                authorization = request.headers()["authorization"]
                    .to_str()
                    .unwrap()
                    .to_string();
                assert_eq!(request.uri().path(), "/api/runners/connect");
                response.headers_mut().insert(
                    "sec-websocket-protocol",
                    "webcodex-runner-link-v1".parse().unwrap(),
                );
                Ok(response)
            },
        )
        .expect("the runner's upgrade");
        let hello: Value = serde_json::from_str(ws.read().unwrap().to_text().unwrap()).unwrap();
        ws.send(tungstenite::Message::Text(
            r#"{"welcome":{"runner":"edge-1"}}"#.into(),
        ))
        .unwrap();
        let request = json!({"id": 1, "operation": "providers_list",
            "params": {"action": "list", "runner": "local"}});
        ws.send(tungstenite::Message::Text(request.to_string().into()))
            .unwrap();
        let reply = loop {
            match ws.read().unwrap() {
                tungstenite::Message::Text(text) => {
                    break serde_json::from_str::<Value>(&text).unwrap()
                }
                _ => continue,
            }
        };
        let _ = ws.close(None);
        (authorization, hello, reply)
    });
    let mut runner = Runner::new(&dir, "edge-1");
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "connect",
        "--front-url",
        &format!("wss://localhost:{port}"),
        "--config",
        s(&runner.config),
        "--ca-cert",
        s(&ca),
        "--no-system-proxy",
    ])
    .env("WEBCODEX_RUNNER_TOKEN", runner_token("edge-1"))
    .env("FIXTURE_PIDS", &runner.pids)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn connect");
    runner.stderr = Some(common::read_all(child.stderr.take().unwrap()));
    runner.child = Some(child);
    let (authorization, hello, reply) = fake_front.join().unwrap();
    assert_eq!(authorization, format!("Bearer {}", runner_token("edge-1")));
    assert_eq!(
        hello["hello"]["protocol"],
        json!("webcodex-runner-link-v1"),
        "{hello}"
    );
    assert_eq!(
        hello["hello"]["instance"].as_str().unwrap().len(),
        22,
        "{hello}"
    );
    assert_eq!(reply["id"], json!(1), "{reply}");
    assert_eq!(reply["dispatch_state"], json!("completed"), "{reply}");
    assert_eq!(reply["payload"]["kind"], json!("list"), "{reply}");
    assert_eq!(
        reply["payload"]["output"]["plugins"][0]["plugin"],
        json!("fx"),
        "{reply}"
    );
    runner.kill();
    common::assert_no_zombie_children_of_self();
}

#[test]
fn a_front_needs_a_runner_and_runner_tokens_ids_of_their_own() {
    let dir = TempDir::new("link", "ids");
    let serve = |args: &[&str]| {
        let mut cmd = common::cli_command(BIN);
        cmd.args(["serve", "--listen", "127.0.0.1:0"]).args(args);
        common::run_to_end(cmd, LIMIT)
    };
    // Only user tokens, and neither --config nor --runners: nothing to serve.
    let users = front_tokens(&dir, &[]);
    let run = serve(&["--tokens", s(&users)]);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("needs [[runner_tokens]]"), "{run:?}");
    // A runner token's id that is also a --runners id.
    dir.write("edge.tok", "static-runner-token-0123456789\n");
    let runners = dir.write(
        "runners.toml",
        "[[runners]]\nid = \"edge-1\"\nname = \"Edge\"\nurl = \"http://127.0.0.1:9\"\n\
         token_file = \"edge.tok\"\n",
    );
    let both = front_tokens(&dir, &["edge-1"]);
    let run = serve(&["--tokens", s(&both), "--runners", s(&runners)]);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr
            .contains("runner_tokens[0].runner: is also a runner of --runners"),
        "{run:?}"
    );
    assert!(!run.stderr.contains(&runner_token("edge-1")), "{run:?}");
}

/// The voluntary context switches of each thread of process `pid`, by thread id (Linux).
#[cfg(target_os = "linux")]
fn wakeups(pid: i32) -> std::collections::HashMap<String, u64> {
    let mut by_thread = std::collections::HashMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let task = task.unwrap();
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let count = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        by_thread.insert(task.file_name().to_string_lossy().into_owned(), count);
    }
    by_thread
}

/// The wake-ups between two [`wakeups`] readings (a thread that is new counts whole).
#[cfg(target_os = "linux")]
fn woken(
    before: &std::collections::HashMap<String, u64>,
    after: &std::collections::HashMap<String, u64>,
) -> u64 {
    after
        .iter()
        .map(|(tid, n)| n.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum()
}

/// The real bounds (15 s pings, 45 s of silence) on a real `serve`: this test takes 46 s. The
/// unit tests of `link::front` check the same with a short heartbeat, and that a peer
/// dribbling a frame it never completes cannot postpone either.
#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "Linux-only observation (/proc/PID/task context switches)"
)]
fn an_idle_link_does_not_wake_the_front_and_a_silent_one_is_dead_after_45_s() {
    #[cfg(target_os = "linux")]
    {
        let dir = TempDir::new("link", "silent");
        let front = start_front(&front_tokens(&dir, &["quiet"]));
        let addr = front.addr;
        let mut ws = hostile_link(addr, "quiet");
        ws.send(tungstenite::Message::Text(HELLO.into())).unwrap();
        ws.read().unwrap();
        let welcomed = Instant::now();
        wait_listed(addr, &["quiet"]);
        // Idle: the front's threads block (the link's in peek until its next ping). A window of
        // 10 s holds at most one ping: a polling loop would show hundreds of wake-ups.
        let before = wakeups(front.pid());
        std::thread::sleep(Duration::from_secs(10));
        let woke = woken(&before, &wakeups(front.pid()));
        assert!(woke <= 6, "the idle front woke {woke} times in 10 s");
        // This client never reads, so it never answers a ping: 45 s after its last frame the
        // front ends the link, and not before.
        let deadline = welcomed + Duration::from_secs(45) + LIMIT;
        while listed(addr) == ["quiet"] {
            assert!(Instant::now() < deadline, "the silent link was never ended");
            std::thread::sleep(Duration::from_millis(100));
        }
        let after = welcomed.elapsed();
        assert!(
            after >= Duration::from_secs(44),
            "ended after only {after:?}"
        );
        assert_no_zombies(front.pid());
    }
}

/// Reads the front's next request on `ws` (heartbeats skipped).
fn next_request(ws: &mut tungstenite::WebSocket<TcpStream>) -> Value {
    loop {
        if let tungstenite::Message::Text(text) = ws.read().unwrap() {
            return serde_json::from_str(&text).unwrap();
        }
    }
}

/// Describes `edge-1`'s fx/echo through the front at `addr`, answering the request on `ws`
/// with `runner_binding`: the front's binding.
fn describe_echo_on(
    ws: &mut tungstenite::WebSocket<TcpStream>,
    addr: SocketAddr,
    runner_binding: &str,
) -> String {
    let asker = std::thread::spawn(move || {
        tool(
            addr,
            USER,
            json!({"action": "describe", "runner": "edge-1", "plugin": "fx", "tool": "echo"}),
        )
    });
    let request = next_request(ws);
    assert_eq!(request["operation"], json!("tools_list"), "{request}");
    let described = json!({"runner": "local", "plugin": "fx", "pluginName": "Fixture",
        "binding": runner_binding,
        "tool": {"name": "echo", "inputSchema": {"type": "object"}}});
    let reply = json!({"id": request["id"], "dispatch_state": "completed",
        "payload": {"kind": "describe", "output": described}});
    ws.send(tungstenite::Message::Text(reply.to_string().into()))
        .unwrap();
    let (status, body) = asker.join().unwrap();
    assert_eq!(status, 200, "{body}");
    body["output"]["binding"].as_str().unwrap().to_string()
}

/// A link for runner `id` whose hello names `instance`, welcomed.
fn linked(front: SocketAddr, id: &str, instance: &str) -> tungstenite::WebSocket<TcpStream> {
    let mut ws = hostile_link(front, id);
    let hello = json!({"hello": {"protocol": "webcodex-runner-link-v1", "instance": instance}});
    ws.send(tungstenite::Message::Text(hello.to_string().into()))
        .unwrap();
    ws.read().unwrap();
    ws
}

#[test]
fn a_runner_that_reconnects_keeps_its_bindings_and_a_new_instance_does_not() {
    let dir = TempDir::new("link", "instance");
    let front = start_front(&front_tokens(&dir, &["edge-1"]));
    let addr = front.addr;
    let (x, y) = ("XXXXXXXXXXXXXXXXXXXXXX", "YYYYYYYYYYYYYYYYYYYYYY");
    let mut ws = linked(addr, "edge-1", x);
    wait_listed(addr, &["edge-1"]);
    let runner_binding = "wc_pbind_RRRRRRRRRRRRRRRRRRRRRR";
    let binding = describe_echo_on(&mut ws, addr, runner_binding);
    assert_ne!(
        binding, runner_binding,
        "the runner's binding reached the caller"
    );

    // The link drops; the same runner instance connects again: the binding still works.
    drop(ws);
    wait_listed(addr, &[]);
    let mut ws = linked(addr, "edge-1", x);
    wait_listed(addr, &["edge-1"]);
    let call = json!({"action": "call", "binding": binding, "arguments": {"text": "hi"}});
    let asker = std::thread::spawn({
        let call = call.clone();
        move || tool(addr, USER, call)
    });
    let request = next_request(&mut ws);
    assert_eq!(request["operation"], json!("tools_call"), "{request}");
    assert_eq!(
        request["params"]["binding"],
        json!(runner_binding),
        "{request}"
    );
    let result = json!({"content": [{"type": "text", "text": "hi"}], "isError": false});
    let reply = json!({"id": request["id"], "dispatch_state": "completed",
        "payload": {"kind": "call", "output": result}});
    ws.send(tungstenite::Message::Text(reply.to_string().into()))
        .unwrap();
    let (status, body) = asker.join().unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"]["content"][0]["text"], json!("hi"), "{body}");

    // Another instance under the same id is another runner: the binding fails closed, and
    // nothing is sent to it.
    drop(ws);
    wait_listed(addr, &[]);
    let mut ws = linked(addr, "edge-1", y);
    wait_listed(addr, &["edge-1"]);
    let (status, body) = tool(addr, USER, call);
    assert_eq!((status, code(&body)), (400, "plugin_replaced"), "{body}");
    ws.get_ref()
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(ws.read().is_err(), "a request reached the new instance");
    assert_no_zombies(front.pid());
}

/// Acts as a front on `listener`: accepts one runner's upgrade, reads its hello and welcomes
/// it as `edge-1`. The link and the hello's instance.
// tungstenite's handshake callback returns its own (large) error type.
#[allow(clippy::result_large_err)]
fn welcome_runner(listener: &std::net::TcpListener) -> (tungstenite::WebSocket<TcpStream>, String) {
    let (tcp, _) = listener.accept().unwrap();
    tcp.set_read_timeout(Some(LIMIT)).unwrap();
    let mut ws = tungstenite::accept_hdr(
        tcp,
        |_: &tungstenite::handshake::server::Request,
         mut response: tungstenite::handshake::server::Response| {
            response.headers_mut().insert(
                "sec-websocket-protocol",
                "webcodex-runner-link-v1".parse().unwrap(),
            );
            Ok(response)
        },
    )
    .expect("the runner's upgrade");
    let hello: Value = serde_json::from_str(ws.read().unwrap().to_text().unwrap()).unwrap();
    let instance = hello["hello"]["instance"].as_str().unwrap().to_string();
    ws.send(tungstenite::Message::Text(
        r#"{"welcome":{"runner":"edge-1"}}"#.into(),
    ))
    .unwrap();
    (ws, instance)
}

/// The link's answers on `ws` until `ids` each have one, by id (heartbeats skipped); fails on
/// an id answered twice or never asked.
fn answers(ws: &mut tungstenite::WebSocket<TcpStream>, ids: &[u64]) -> Vec<(u64, Value)> {
    let mut got: Vec<(u64, Value)> = Vec::new();
    while got.len() < ids.len() {
        let reply = next_request(ws);
        let id = reply["id"].as_u64().expect("an answer's id");
        assert!(
            ids.contains(&id),
            "an answer for id {id}, never asked: {reply}"
        );
        assert!(
            got.iter().all(|(seen, _)| *seen != id),
            "id {id} answered twice: {reply}"
        );
        got.push((id, reply));
    }
    got
}

/// A `connect` runner `edge-1` with a fixture provider for each of `ids`, dialled into a
/// front of the test's own (the listener, kept to welcome it again) and welcomed there.
fn runner_on_test_front<I: AsRef<str>>(
    dir: &TempDir,
    ids: &[I],
) -> (
    Runner,
    std::net::TcpListener,
    tungstenite::WebSocket<TcpStream>,
) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut runner = Runner::new(dir, "edge-1");
    write_fixture_providers(&runner.config, ids);
    runner.start(listener.local_addr().unwrap());
    let (ws, _) = welcome_runner(&listener);
    (runner, listener, ws)
}

/// Writes a runner.toml with one provider of the fixture (`normal`) for each of `ids`.
fn write_fixture_providers<I: AsRef<str>>(config: &Path, ids: &[I]) {
    let fixture = serde_json::to_string(s(&common::fixture_path())).unwrap();
    let mut text = String::from("[plugins]\nrequest_timeout_secs = 30\n");
    for id in ids {
        let id = id.as_ref();
        text.push_str(&format!(
            "\n[[plugins.providers]]\nid = \"{id}\"\nname = \"Fixture\"\n\
             command = {fixture}\nargs = [\"normal\"]\n"
        ));
    }
    std::fs::write(config, text).unwrap();
}

/// One request of the front on a link, as a text frame.
fn link_request(id: u64, operation: &str, params: Value) -> tungstenite::Message {
    tungstenite::Message::Text(
        json!({"id": id, "operation": operation, "params": params})
            .to_string()
            .into(),
    )
}

/// The runner's request threads (`wc-link-req`) now.
#[cfg(target_os = "linux")]
fn request_threads(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.trim() == "wc-link-req")
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs connect processes stopped with SIGTERM behind a front (docs/PLATFORMS.md)"
)]
fn requests_that_arrive_together_all_run_at_once_and_each_is_answered_once() {
    let dir = TempDir::new("link", "together");
    // Two providers of the fixture: a call to each can run at once.
    let (mut runner, listener, mut ws) = runner_on_test_front(&dir, &["fx", "fy"]);
    // Only Linux welcomes the runner again below (to count its threads).
    #[cfg(not(target_os = "linux"))]
    drop(listener);
    let request = link_request;
    let mut binding = |id: u64, plugin: &str, tool_name: &str| {
        let params = json!({"action": "describe", "runner": "local", "plugin": plugin,
            "tool": tool_name});
        ws.send(request(id, "tools_list", params)).unwrap();
        let reply = answers(&mut ws, &[id]).remove(0).1;
        reply["payload"]["output"]["binding"]
            .as_str()
            .unwrap_or_else(|| panic!("no binding: {reply}"))
            .to_string()
    };
    let sleep = binding(1, "fx", "sleep");
    let echo = binding(2, "fy", "echo");
    // One write: a slow call, then a ping and four quick requests behind it.
    ws.write(request(
        10,
        "tools_call",
        json!({"action": "call", "binding": sleep,
        "arguments": {"ms": 4000}}),
    ))
    .unwrap();
    ws.write(tungstenite::Message::Ping(b"beat".to_vec().into()))
        .unwrap();
    ws.write(request(
        11,
        "tools_call",
        json!({"action": "call", "binding": echo,
        "arguments": {"text": "together"}}),
    ))
    .unwrap();
    ws.write(request(
        12,
        "providers_list",
        json!({"action": "list", "runner": "local"}),
    ))
    .unwrap();
    ws.write(request(
        13,
        "tools_list",
        json!({"action": "list", "runner": "local",
        "plugin": "fy"}),
    ))
    .unwrap();
    ws.write(request(
        14,
        "tools_call",
        json!({"action": "call", "binding": "nope",
        "arguments": {}}),
    ))
    .unwrap();
    ws.flush().unwrap();
    let quick = answers(&mut ws, &[11, 12, 13, 14]);
    let by_id = |id: u64| &quick.iter().find(|(seen, _)| *seen == id).unwrap().1;
    assert_eq!(
        by_id(11)["payload"]["output"]["content"][0]["text"],
        json!("together"),
        "{}",
        by_id(11)
    );
    assert_eq!(
        by_id(12)["dispatch_state"],
        json!("completed"),
        "{}",
        by_id(12)
    );
    assert_eq!(
        by_id(13)["dispatch_state"],
        json!("completed"),
        "{}",
        by_id(13)
    );
    assert_eq!(
        by_id(14)["error"]["code"],
        json!("describe_required"),
        "{}",
        by_id(14)
    );
    // The slow call's answer comes after the others: they did not wait behind it.
    let slow = answers(&mut ws, &[10]).remove(0).1;
    assert_eq!(slow["dispatch_state"], json!("completed"), "{slow}");
    assert_eq!(runner.calls("sleep"), 1);
    assert_eq!(runner.calls("echo"), 1);
    #[cfg(target_os = "linux")]
    {
        // The threads that ran them go once the link ends: the runner dials again, and its
        // old link's threads leave (the new link keeps one).
        drop(ws);
        let (_ws, _) = welcome_runner(&listener);
        let deadline = Instant::now() + LIMIT;
        while request_threads(runner.pid()) > 1 {
            assert!(
                Instant::now() < deadline,
                "{} request threads stay after their link ended",
                request_threads(runner.pid())
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    runner.stop();
    common::assert_no_zombie_children_of_self();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs connect processes stopped with SIGTERM behind a front (docs/PLATFORMS.md)"
)]
fn bursts_of_requests_past_the_in_flight_cap_are_each_answered_once_and_never_run_twice() {
    let dir = TempDir::new("link", "burst");
    const PROVIDERS: usize = 8;
    const BURST: u64 = 256;
    let ids: Vec<String> = (0..PROVIDERS).map(|n| format!("f{n}")).collect();
    let (mut runner, _listener, mut ws) = runner_on_test_front(&dir, &ids);
    let request = link_request;
    let bindings: Vec<String> = (0..PROVIDERS)
        .map(|n| {
            let id = n as u64 + 1;
            let params = json!({"action": "describe", "runner": "local",
                "plugin": format!("f{n}"), "tool": "echo"});
            ws.send(request(id, "tools_list", params)).unwrap();
            let reply = answers(&mut ws, &[id]).remove(0).1;
            reply["payload"]["output"]["binding"]
                .as_str()
                .unwrap_or_else(|| panic!("no binding: {reply}"))
                .to_string()
        })
        .collect();
    let mut completed = 0;
    for round in 1..=3u64 {
        // Four times the in-flight cap, in one write: the runner reads them together.
        let ids: Vec<u64> = (0..BURST).map(|i| round * 1000 + i).collect();
        for &id in &ids {
            let binding = &bindings[id as usize % PROVIDERS];
            ws.write(request(
                id,
                "tools_call",
                json!({"action": "call", "binding": binding,
                    "arguments": {"text": format!("burst-{id}")}}),
            ))
            .unwrap();
        }
        ws.flush().unwrap();
        let mut ran = 0;
        for (id, reply) in answers(&mut ws, &ids) {
            match reply["dispatch_state"].as_str() {
                Some("completed") => {
                    assert_eq!(
                        reply["payload"]["output"]["content"][0]["text"],
                        json!(format!("burst-{id}")),
                        "the answer to {id} is another request's: {reply}"
                    );
                    ran += 1;
                }
                // Refused before it reached a plugin (over the cap, a provider's queue full).
                Some("not_started") => assert!(reply["error"]["code"].is_string(), "{reply}"),
                _ => panic!("request {id}: neither completed nor refused: {reply}"),
            }
        }
        assert!(ran > 0, "round {round}: every request refused");
        completed += ran;
        // Each completed call reached its plugin once; no refused one reached any.
        assert_eq!(runner.calls("echo"), completed, "round {round}");
        #[cfg(target_os = "linux")]
        {
            let threads = request_threads(runner.pid());
            assert!(
                threads <= in_flight_cap() + 1,
                "round {round}: {threads} request threads"
            );
        }
    }
    runner.stop();
    common::assert_no_zombie_children_of_self();
}

/// The runner's in-flight cap (`MAX_IN_FLIGHT`), which bounds its request threads.
#[cfg(target_os = "linux")]
fn in_flight_cap() -> usize {
    webcodex_plugin_host::MAX_IN_FLIGHT
}

#[test]
// tungstenite's handshake callback returns its own (large) error type.
#[allow(clippy::result_large_err)]
fn a_runner_closes_a_link_that_breaks_the_protocol_and_dials_again_as_the_same_instance() {
    let dir = TempDir::new("link", "badfront");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let front = listener.local_addr().unwrap();
    // A front of the test's own: a request the runner cannot read gets invalid_request, an
    // oversized frame ends the link (1009); the runner then dials again.
    let fake_front = std::thread::spawn(move || {
        let mut hellos = Vec::new();
        let mut codes = Vec::new();
        let mut unreadable = Value::Null;
        for round in 0..2 {
            let (mut ws, instance) = welcome_runner(&listener);
            hellos.push(instance);
            if round == 1 {
                break;
            }
            let bad = json!({"id": 5, "operation": "reload", "params": {"action": "call"}});
            ws.send(tungstenite::Message::Text(bad.to_string().into()))
                .unwrap();
            unreadable = next_request(&mut ws);
            let big = "x".repeat((1 << 20) + 1);
            let _ = ws.send(tungstenite::Message::Text(big.into()));
            codes.push(closed_by_front(&mut ws));
        }
        (hellos, codes, unreadable)
    });
    let mut runner = Runner::new(&dir, "edge-1");
    runner.start(front);
    let (hellos, codes, unreadable) = fake_front.join().unwrap();
    assert_eq!(unreadable["id"], json!(5), "{unreadable}");
    assert_eq!(
        unreadable["dispatch_state"],
        json!("not_started"),
        "{unreadable}"
    );
    assert_eq!(
        unreadable["error"]["code"],
        json!("invalid_request"),
        "{unreadable}"
    );
    assert_eq!(codes, [Some(1009)]);
    assert_eq!(hellos.len(), 2);
    assert_eq!(
        hellos[0], hellos[1],
        "a reconnect is the same runner instance"
    );
    runner.kill();
    common::assert_no_zombie_children_of_self();
}

#[test]
fn a_linked_call_result_holding_the_token_or_breaking_the_contract_is_refused() {
    let dir = TempDir::new("link", "call-result");
    let front = start_front(&front_tokens(&dir, &["edge-1"]));
    let addr = front.addr;
    let mut ws = linked(addr, "edge-1", "XXXXXXXXXXXXXXXXXXXXXX");
    wait_listed(addr, &["edge-1"]);
    let binding = describe_echo_on(&mut ws, addr, "wc_pbind_RRRRRRRRRRRRRRRRRRRRRR");
    let call = json!({"action": "call", "binding": binding, "arguments": {"text": "hi"}});
    let token = runner_token("edge-1");
    let spelled: String = token
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    for (result, want) in [
        (
            json!({"content": [{"type": "text", "text": token}]}).to_string(),
            Some("plugin_rpc_error"),
        ),
        (
            format!(r#"{{"content":[{{"type":"text","text":"{spelled}"}}]}}"#),
            Some("plugin_rpc_error"),
        ),
        (
            r#"{"content":[{"type":"text","text":"x"}],"extra":1}"#.to_string(),
            Some("plugin_result_invalid"),
        ),
        (
            r#"{"isError":false,"content":[{"text":"fine","type":"text"}]}"#.to_string(),
            None,
        ),
    ] {
        let asker = std::thread::spawn({
            let call = call.clone();
            move || tool(addr, USER, call)
        });
        let request = next_request(&mut ws);
        assert_eq!(request["operation"], json!("tools_call"), "{request}");
        let reply = format!(
            r#"{{"id":{},"dispatch_state":"completed","payload":{{"kind":"call","output":{result}}}}}"#,
            request["id"]
        );
        ws.send(tungstenite::Message::Text(reply.into())).unwrap();
        let (status, body) = asker.join().unwrap();
        assert!(
            !body.to_string().contains(&token),
            "the token was shown: {body}"
        );
        match want {
            Some(want) => {
                assert_eq!(code(&body), want, "{result}: {status} {body}");
                assert_eq!(body["output"]["dispatch"], json!("completed"), "{body}");
            }
            None => {
                assert_eq!(status, 200, "{body}");
                assert_eq!(
                    body["output"]["content"][0]["text"],
                    json!("fine"),
                    "{body}"
                );
            }
        }
    }
    drop(ws);
    wait_listed(addr, &[]);
    assert_no_zombies(front.pid());
}

/// A front with a local runner (`--config`: the fixture as `fx`) beside its dial-out runners;
/// its plugins record their pids in `front.pids` and what they read in `front.log`.
fn start_front_with_local(dir: &TempDir, tokens: &Path) -> ServeProcess {
    let fixture = serde_json::to_string(s(&common::fixture_path())).unwrap();
    let config = dir.write(
        "front-local.toml",
        &format!(
            "[plugins]\nrequest_timeout_secs = 30\n\n[[plugins.providers]]\nid = \"fx\"\n\
             name = \"Fixture\"\ncommand = {fixture}\nargs = [\"normal\"]\n"
        ),
    );
    let mut cmd = common::cli_command(BIN);
    cmd.args(["serve", "--config", s(&config), "--listen", "127.0.0.1:0"])
        .args(["--tokens", s(tokens)])
        .env("FIXTURE_PIDS", dir.path("front.pids"))
        .env("FIXTURE_LOG", dir.path("front.log"))
        .env("RUST_LOG", "info");
    ServeProcess::start(cmd)
}

/// No plugin of the front outlives it.
fn assert_front_plugins_gone(dir: &TempDir) {
    for pid in common::recorded_plugin_pids(&dir.path("front.pids")) {
        assert!(common::wait_gone(pid), "plugin {pid} outlived the front");
    }
}

/// The hello's display name is checked like an answer: a name holding the link's own token is
/// refused with 1008 (the reason does not repeat it), the runner is never listed, and the
/// front's log never shows the token; a name without it is welcomed.
#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn a_hello_whose_name_holds_the_link_token_is_refused_and_never_listed() {
    let dir = TempDir::new("link", "hello-name");
    let front = start_front(&front_tokens(&dir, &["edge-1"]));
    let addr = front.addr;
    let token = runner_token("edge-1");
    for name in [token.clone(), format!("Edge ({token})")] {
        let mut ws = hostile_link(addr, "edge-1");
        let hello = json!({"hello": {"protocol": "webcodex-runner-link-v1",
            "instance": "AAAAAAAAAAAAAAAAAAAAAA", "name": name}});
        ws.send(tungstenite::Message::Text(hello.to_string().into()))
            .unwrap();
        let mut refusal = None;
        loop {
            match ws.read() {
                Ok(tungstenite::Message::Close(Some(frame))) => {
                    refusal = Some((u16::from(frame.code), frame.reason.to_string()));
                }
                Ok(tungstenite::Message::Text(text)) => panic!("welcomed: {text}"),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let (code, reason) = refusal.expect("a close frame");
        assert_eq!(code, 1008, "{reason}");
        assert!(!reason.contains(&token), "{reason}");
        assert_eq!(listed(addr), Vec::<String>::new());
    }
    // The control: another name is welcomed and listed.
    let mut ws = hostile_link(addr, "edge-1");
    let hello = json!({"hello": {"protocol": "webcodex-runner-link-v1",
        "instance": "AAAAAAAAAAAAAAAAAAAAAA", "name": "Edge one"}});
    ws.send(tungstenite::Message::Text(hello.to_string().into()))
        .unwrap();
    ws.read().unwrap();
    let (_, body) = tool(addr, USER, json!({"action": "list"}));
    assert_eq!(
        body["output"]["runners"],
        json!([{"runner": "edge-1", "name": "Edge one"}])
    );
    drop(ws);
    wait_listed(addr, &[]);
    assert_no_zombies(front.pid());
    let stderr = front.stop();
    assert!(!stderr.contains(&token), "the front logged the token");
    assert!(
        stderr.contains("the hello's name holds the runner's token"),
        "{stderr}"
    );
    common::assert_no_zombie_children_of_self();
}

/// A runner link of the test's own that reads every request and answers none (a runner whose
/// plugin never answers): counts the requests; shutting it down ends the link.
struct StuckLink {
    read: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    tcp: TcpStream,
    reader: Option<JoinHandle<()>>,
}

impl StuckLink {
    fn start(front: SocketAddr, id: &str) -> StuckLink {
        let mut ws = hostile_link(front, id);
        ws.send(tungstenite::Message::Text(HELLO.into())).unwrap();
        ws.read().unwrap();
        let tcp = ws.get_ref().try_clone().unwrap();
        let read = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = read.clone();
        let reader = std::thread::spawn(move || loop {
            match ws.read() {
                Ok(tungstenite::Message::Text(_)) => {
                    count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                Ok(_) => {}
                Err(_) => return,
            }
        });
        StuckLink {
            read,
            tcp,
            reader: Some(reader),
        }
    }

    fn read(&self) -> usize {
        self.read.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits (bounded by `LIMIT`) until the link has read `n` requests; the count then.
    fn wait_read(&self, n: usize) -> usize {
        let deadline = Instant::now() + LIMIT;
        while self.read() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.read()
    }
}

impl Drop for StuckLink {
    fn drop(&mut self) {
        let _ = self.tcp.shutdown(Shutdown::Both);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// Four dial-out runners that never answer cannot starve the others: together they hold fewer
/// than the 48 slots remote runners share (each at most its cap of 16, and at most half of the
/// shared slots still free), every request beyond is `plugin_runner_saturated` (not started,
/// retry), and meanwhile the local runner and a healthy dial-out runner answer, never
/// `gateway_saturated`.
#[test]
#[cfg_attr(
    windows,
    ignore = "runs connect processes stopped with SIGTERM behind a front (docs/PLATFORMS.md)"
)]
fn four_stuck_runners_leave_the_local_runner_and_a_healthy_runner_their_slots() {
    let dir = TempDir::new("link", "stuck");
    let stuck_ids = ["stuck-1", "stuck-2", "stuck-3", "stuck-4"];
    let mut all_ids = stuck_ids.to_vec();
    all_ids.push("healthy");
    let front = start_front_with_local(&dir, &front_tokens(&dir, &all_ids));
    let addr = front.addr;
    let stuck: Vec<StuckLink> = stuck_ids
        .iter()
        .map(|id| StuckLink::start(addr, id))
        .collect();
    let mut healthy = Runner::new(&dir, "healthy");
    healthy.start(addr);
    wait_listed(
        addr,
        &[
            "healthy", "local", "stuck-1", "stuck-2", "stuck-3", "stuck-4",
        ],
    );

    // 16 requests to each stuck runner at once: 64, the front's whole in-flight bound.
    let (tx, rx) = std::sync::mpsc::channel();
    let askers: Vec<_> = (0..64)
        .map(|i| {
            let (tx, id) = (tx.clone(), stuck_ids[i % 4]);
            std::thread::spawn(move || {
                let _ = tx.send(tool(addr, USER, json!({"action": "list", "runner": id})));
            })
        })
        .collect();
    let mut refused = Vec::new();
    let deadline = Instant::now() + LIMIT;
    loop {
        let held: usize = stuck.iter().map(StuckLink::read).sum();
        if held + refused.len() == 64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{held} held and {} refused of 64",
            refused.len()
        );
        if let Ok(answer) = rx.recv_timeout(Duration::from_millis(20)) {
            refused.push(answer);
        }
    }
    let held: Vec<usize> = stuck.iter().map(StuckLink::read).collect();
    let total: usize = held.iter().sum();
    assert!(total < 48, "the stuck runners hold {held:?}");
    assert!(held.iter().all(|&n| (1..=16).contains(&n)), "{held:?}");
    for (status, body) in &refused {
        assert_eq!(
            (*status, code(body)),
            (503, "plugin_runner_saturated"),
            "{body}"
        );
        assert_eq!(body["output"]["dispatch"], json!("not_started"), "{body}");
        assert_eq!(body["output"]["recovery"], json!("retry"), "{body}");
    }

    // While they hang: the local runner and the healthy runner answer, a few times over.
    for round in 0..3 {
        let (status, body) = tool(addr, USER, json!({"action": "list", "runner": "local"}));
        assert_eq!(status, 200, "{body}");
        let (status, body) = tool(
            addr,
            USER,
            json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "echo"}),
        );
        assert_eq!(status, 200, "{body}");
        let binding = body["output"]["binding"].clone();
        let (status, body) = tool(
            addr,
            USER,
            json!({"action": "call", "binding": binding, "arguments": {"text": "local"}}),
        );
        assert_eq!(status, 200, "{body}");
        let text = format!("healthy {round}");
        assert_eq!(echo_through(addr, "healthy", &text), text);
    }
    assert_eq!(stuck.iter().map(StuckLink::read).sum::<usize>(), total);

    // Released: each held request ends as a lost answer (list changes nothing: not started).
    drop(stuck);
    for _ in 0..total {
        let (status, body) = rx.recv_timeout(LIMIT).expect("a held request was answered");
        assert_eq!(
            (status, code(&body)),
            (504, "plugin_gateway_timeout"),
            "{body}"
        );
        assert_eq!(body["output"]["dispatch"], json!("not_started"), "{body}");
    }
    for asker in askers {
        asker.join().unwrap();
    }
    wait_listed(addr, &["healthy", "local"]);
    healthy.stop();
    assert_no_zombies(front.pid());
    front.stop();
    assert_front_plugins_gone(&dir);
    common::assert_no_zombie_children_of_self();
}

/// SIGTERM on a front drains its link calls: a relayed call in flight and a local call started
/// with it both complete (200), the front sends nothing new and then closes the link (1001),
/// exits 0, and no plugin of either side is left.
#[test]
#[cfg_attr(
    windows,
    ignore = "runs connect processes stopped with SIGTERM behind a front (docs/PLATFORMS.md)"
)]
fn sigterm_lets_relayed_and_local_calls_in_flight_complete() {
    let dir = TempDir::new("link", "drain");
    let front = start_front_with_local(&dir, &front_tokens(&dir, &["edge-1"]));
    let addr = front.addr;
    let pid = front.pid();
    let mut runner = Runner::new(&dir, "edge-1");
    runner.start(addr);
    wait_listed(addr, &["edge-1", "local"]);
    let remote_sleep = describe(addr, "edge-1", "sleep");
    let (status, body) = tool(
        addr,
        USER,
        json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "sleep"}),
    );
    assert_eq!(status, 200, "{body}");
    let local_sleep = body["output"]["binding"].as_str().unwrap().to_string();
    let call = |binding: String| {
        std::thread::spawn(move || {
            tool(
                addr,
                USER,
                json!({"action": "call", "binding": binding, "arguments": {"ms": 4000}}),
            )
        })
    };
    let relayed = call(remote_sleep);
    let local = call(local_sleep);
    runner.wait_for_call("sleep");
    let front_log = dir.path("front.log");
    let deadline = Instant::now() + LIMIT;
    while !std::fs::read_to_string(&front_log)
        .unwrap_or_default()
        .contains("\"sleep\"")
    {
        assert!(Instant::now() < deadline, "the local call never started");
        std::thread::sleep(Duration::from_millis(10));
    }

    let stopping = std::thread::spawn(move || front.stop());
    for (what, asked) in [("relayed", relayed), ("local", local)] {
        let (status, body) = asked.join().unwrap();
        assert_eq!(status, 200, "the {what} call: {body}");
        assert_eq!(
            body["output"]["content"][0]["text"],
            json!("slept"),
            "{body}"
        );
    }
    let stderr = stopping.join().unwrap();
    assert!(
        stderr.contains("runner link `edge-1`: closed (1001)"),
        "the link was not closed after its answer: {stderr}"
    );
    assert!(common::process_is_gone(pid));
    assert_front_plugins_gone(&dir);
    // Each call was read once, never retried.
    assert_eq!(runner.calls("sleep"), 1);
    runner.stop();
    common::assert_no_zombie_children_of_self();
}

/// A link whose runner stops reading: the request being written blocks, and the callers
/// queued behind it learn that their request was never sent (`plugin_runner_unavailable`,
/// `not_started`) when the write bound (10 s) ends the link, not after a second one; those
/// whose frame went out end as lost answers (`outcome_unknown`).
#[test]
#[cfg_attr(
    windows,
    ignore = "needs a loopback socket whose buffers fill when the peer stops reading; under Wine the write never blocks (docs/PLATFORMS.md)"
)]
fn callers_queued_behind_a_blocked_write_are_not_started_within_the_write_bound() {
    let dir = TempDir::new("link", "blocked");
    let front = start_front(&front_tokens(&dir, &["edge-1"]));
    let addr = front.addr;
    let mut ws = linked(addr, "edge-1", "XXXXXXXXXXXXXXXXXXXXXX");
    wait_listed(addr, &["edge-1"]);
    let binding = describe_echo_on(&mut ws, addr, "wc_pbind_RRRRRRRRRRRRRRRRRRRRRR");
    // From now on the runner reads nothing: frames of ~900 KB fill the socket's buffers.
    let text = "x".repeat(900 * 1024);
    let (tx, rx) = std::sync::mpsc::channel();
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let (tx, binding, text) = (tx.clone(), binding.clone(), text.clone());
            std::thread::spawn(move || {
                let started = Instant::now();
                let call = json!({"action": "call", "binding": binding,
                    "arguments": {"text": text}});
                let answer = tool(addr, USER, call);
                let _ = tx.send((started.elapsed(), answer));
            })
        })
        .collect();
    let mut not_started = 0;
    for _ in 0..8 {
        let (took, (status, body)) = rx.recv_timeout(LIMIT * 2).expect("an answer");
        let dispatch = body["output"]["dispatch"].as_str().unwrap_or("");
        match (status, code(&body), dispatch) {
            (503, "plugin_runner_unavailable", "not_started") => not_started += 1,
            (504, "plugin_gateway_timeout", "outcome_unknown") => {}
            other => panic!("{other:?}: {body}"),
        }
        // The write bound is 10 s; two of them would be 20 s.
        assert!(took < Duration::from_secs(17), "an answer after {took:?}");
    }
    assert!(not_started >= 1, "no caller was queued behind the write");
    for caller in callers {
        caller.join().unwrap();
    }
    wait_listed(addr, &[]);
    drop(ws);
    assert_no_zombies(front.pid());
    front.stop();
    common::assert_no_zombie_children_of_self();
}

/// `max_in_flight` of a `[[runner_tokens]]` entry is that runner's cap on the front (the third
/// request at once to a runner capped at 2 is `plugin_runner_saturated`, nothing sent), and a
/// value out of 1..=64 stops `serve` at start with a message naming the key.
#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn a_runner_tokens_max_in_flight_caps_its_runner_and_is_validated() {
    let dir = TempDir::new("link", "token-cap");
    let tokens = dir.write(
        "capped-tokens.toml",
        &format!(
            "[[tokens]]\nname = \"user\"\ntoken = \"{USER}\"\n\
             scopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\"]\n\n\
             [[runner_tokens]]\nname = \"capped\"\ntoken = \"{}\"\nrunner = \"edge-1\"\n\
             max_in_flight = 2\n",
            runner_token("edge-1")
        ),
    );
    let front = start_front(&tokens);
    let addr = front.addr;
    let stuck = StuckLink::start(addr, "edge-1");
    wait_listed(addr, &["edge-1"]);
    let (tx, rx) = std::sync::mpsc::channel();
    let askers: Vec<_> = (0..5)
        .map(|_| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = tx.send(tool(
                    addr,
                    USER,
                    json!({"action": "list", "runner": "edge-1"}),
                ));
            })
        })
        .collect();
    for _ in 0..3 {
        let (status, body) = rx.recv_timeout(LIMIT).expect("a refusal");
        assert_eq!(
            (status, code(&body)),
            (503, "plugin_runner_saturated"),
            "{body}"
        );
        assert!(body.to_string().contains("2 requests in flight"), "{body}");
    }
    // The two admitted requests reach the link (their writes may trail the refusals), and no
    // third one ever does.
    assert_eq!(stuck.wait_read(2), 2);
    drop(stuck);
    for _ in 0..2 {
        let (_, body) = rx.recv_timeout(LIMIT).expect("a lost answer");
        assert_eq!(code(&body), "plugin_gateway_timeout", "{body}");
    }
    for asker in askers {
        asker.join().unwrap();
    }
    assert_no_zombies(front.pid());
    front.stop();

    for bad in ["0", "65", "\"8\""] {
        let text = std::fs::read_to_string(&tokens)
            .unwrap()
            .replace("max_in_flight = 2", &format!("max_in_flight = {bad}"));
        let file = dir.write("bad-cap-tokens.toml", &text);
        let mut cmd = common::cli_command(BIN);
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--tokens", s(&file)]);
        let run = common::run_to_end(cmd, LIMIT);
        assert_eq!(run.code, Some(2), "{run:?}");
        assert!(
            run.stderr
                .contains("runner_tokens[0].max_in_flight: must be a whole number from 1 to 64"),
            "{run:?}"
        );
        assert!(!run.stderr.contains(&runner_token("edge-1")), "{run:?}");
    }
    common::assert_no_zombie_children_of_self();
}

/// The command-line tool against the front at `front` with the user token: its run.
fn cli_at(front: SocketAddr, args: &[&str]) -> common::Run {
    let url = format!("http://{front}");
    let mut cmd = common::cli_command(BIN);
    cmd.args(args).args(["--server-url", &url, "--token", USER]);
    for var in common::PROXY_VARIABLES {
        cmd.env_remove(var);
    }
    common::run_to_end(cmd, LIMIT)
}

/// The single stdout line of `run`, as JSON.
fn json_of(run: &common::Run) -> Value {
    serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {run:?}"))
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs connect processes stopped with SIGTERM behind a front (docs/PLATFORMS.md)"
)]
fn the_cli_reaches_every_runner_of_a_front_whose_runners_all_dial_in() {
    let dir = TempDir::new("link", "cli");
    let ids = ["edge-1", "edge-2"];
    let front = start_front(&front_tokens(&dir, &ids));
    let addr = front.addr;
    let mut runners: Vec<Runner> = ids.iter().map(|id| Runner::new(&dir, id)).collect();
    for runner in &mut runners {
        runner.start(addr);
    }
    wait_listed(addr, &ids);

    // `list` without --plugin and --runner: the runners (this front has no `local`).
    let r = cli_at(addr, &["list"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stdout
            .contains("edge-1                   Runner edge-1\n")
            && r.stdout
                .contains("edge-2                   Runner edge-2\n")
            && r.stdout.contains("--runner ID"),
        "{r:?}"
    );
    let r = cli_at(addr, &["list", "--json"]);
    assert_eq!(
        json_of(&r),
        json!({"runners":[{"runner":"edge-1","name":"Runner edge-1"},
                          {"runner":"edge-2","name":"Runner edge-2"}]})
    );
    // --runner picks one: its providers, its tools.
    let r = cli_at(addr, &["list", "--runner", "edge-2", "--json"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(json_of(&r)["runner"], "edge-2", "{r:?}");
    assert_eq!(json_of(&r)["plugins"][0]["plugin"], "fx", "{r:?}");
    let r = cli_at(addr, &["list", "--runner", "edge-1", "--plugin", "fx"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("20 tools:"), "{r:?}");

    // The default runner is `local`, which this front lacks: the hint names list and --runner.
    let r = cli_at(addr, &["list", "--plugin", "fx"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("plugin_runner_not_found"), "{r:?}");
    assert!(
        r.stderr
            .contains("`list --server-url URL` shows the runners")
            && r.stderr.contains("--runner ID"),
        "{r:?}"
    );

    // describe prints the binding; call --binding calls it, on edge-2 only.
    let r = cli_at(
        addr,
        &[
            "describe", "--runner", "edge-2", "--plugin", "fx", "--tool", "echo",
        ],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    let binding = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("binding: "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("a binding line: {r:?}"))
        .to_string();
    assert!(binding.starts_with("wc_pbind_"), "{binding}");
    let r = cli_at(
        addr,
        &[
            "call",
            "--binding",
            &binding,
            "--arguments",
            r#"{"text":"by binding"}"#,
            "--json",
        ],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(json_of(&r)["structuredContent"]["text"], "by binding");
    assert_eq!((runners[0].calls("echo"), runners[1].calls("echo")), (0, 1));
    // The binding works again; an unknown one is describe_required.
    let r = cli_at(
        addr,
        &[
            "call",
            "--binding",
            &binding,
            "--arguments",
            r#"{"text":"again"}"#,
        ],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.starts_with("again\n"), "{r:?}");
    let r = cli_at(
        addr,
        &["call", "--binding", "wc_pbind_AAAAAAAAAAAAAAAAAAAAAA"],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("describe_required"), "{r:?}");

    // call, check and reload route by --runner too.
    let r = cli_at(
        addr,
        &[
            "call",
            "--runner",
            "edge-1",
            "--plugin",
            "fx",
            "--tool",
            "echo",
            "--arguments",
            r#"{"text":"one"}"#,
        ],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!((runners[0].calls("echo"), runners[1].calls("echo")), (1, 2));
    let r = cli_at(
        addr,
        &["check", "--runner", "edge-1", "--plugin", "fx", "--json"],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        (json_of(&r)["runner"].clone(), json_of(&r)["ready"].clone()),
        (json!("edge-1"), json!(true))
    );
    let r = cli_at(addr, &["check", "--runner", "edge-2"]);
    assert_eq!(r.code, Some(0), "every provider of edge-2: {r:?}");
    assert!(r.stdout.starts_with("fx: ready"), "{r:?}");
    let r = cli_at(addr, &["reload", "--runner", "edge-2", "--json"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(json_of(&r)["runner"], "edge-2", "{r:?}");
    // The reload replaced edge-2's provider: the old binding is plugin_replaced.
    let r = cli_at(
        addr,
        &[
            "call",
            "--binding",
            &binding,
            "--arguments",
            r#"{"text":"x"}"#,
        ],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("plugin_replaced"), "{r:?}");
    let r = cli_at(addr, &["list", "--runner", "edge-9"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("plugin_runner_not_found"), "{r:?}");

    for runner in &mut runners {
        runner.stop();
    }
    wait_listed(addr, &[]);
    let r = cli_at(addr, &["list"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.starts_with("no runners"), "{r:?}");
    assert_no_zombies(front.pid());
    let stderr = front.stop();
    assert!(!stderr.contains(USER), "{stderr}");
    common::assert_no_zombie_children_of_self();
}

/// Starts `connect` as runner `id` of `front` with the token of `token_of`, logging at the
/// default level (no RUST_LOG) to the file `log`.
#[cfg(unix)]
fn connect_logging_to(
    front: SocketAddr,
    config: &Path,
    token_of: &str,
    pids: &Path,
    log: &Path,
) -> Child {
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "connect",
        "--front-url",
        &format!("http://{front}"),
        "--config",
        s(config),
    ])
    .env("WEBCODEX_RUNNER_TOKEN", runner_token(token_of))
    .env("FIXTURE_PIDS", pids)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(log).expect("the log file"));
    for var in common::PROXY_VARIABLES {
        cmd.env_remove(var);
    }
    cmd.spawn().expect("spawn connect")
}

#[test]
#[cfg(unix)]
fn two_runners_with_one_token_are_logged_on_both_sides_at_the_default_level() {
    let dir = TempDir::new("link", "fight");
    let front = start_front(&front_tokens(&dir, &["edge-1"]));
    let addr = front.addr;
    let config = Runner::new(&dir, "edge-1").config.clone();
    let (logs, pids) = (
        [dir.path("one.log"), dir.path("two.log")],
        [dir.path("one.pids"), dir.path("two.pids")],
    );
    let mut one = connect_logging_to(addr, &config, "edge-1", &pids[0], &logs[0]);
    wait_listed(addr, &["edge-1"]);
    let mut two = connect_logging_to(addr, &config, "edge-1", &pids[1], &logs[1]);
    // Each takes the link from the other in turn; wait (bounded) until both were told and
    // both linked again.
    let told = "the peer closed the link (close code 1008: replaced by a newer link of this \
                runner token from 127.0.0.1:";
    let relinked = "INFO  webcodex_plugin::link: connect: relinked to the front at 127.0.0.1:";
    let deadline = Instant::now() + LIMIT;
    loop {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        if logs
            .iter()
            .all(|l| read(l).contains(told) && read(l).contains(relinked))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "both runners should be told why:\n{}\n---\n{}",
            read(&logs[0]),
            read(&logs[1])
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for (child, pid_file) in [(&mut one, &pids[0]), (&mut two, &pids[1])] {
        assert!(common::request_stop(child.id()), "SIGTERM to connect");
        let status = common::wait_bounded(child, LIMIT);
        assert_eq!(status.code(), Some(0));
        common::assert_all_gone(&common::recorded_plugin_pids(pid_file), "plugin");
    }
    for log in &logs {
        let text = std::fs::read_to_string(log).unwrap();
        // Without RUST_LOG: linked, relinked, and why each link ended.
        for line in [
            "INFO  webcodex_plugin::link: connect: linked to the front at 127.0.0.1:",
            relinked,
            told,
        ] {
            assert!(text.contains(line), "{line:?} missing in:\n{text}");
        }
        assert!(
            !text.contains("link request"),
            "per-request lines stay at info: {text}"
        );
        assert!(!text.contains(&runner_token("edge-1")), "{text}");
    }
    assert_no_zombies(front.pid());
    let stderr = front.stop();
    assert!(
        stderr.lines().any(|l| l.contains("WARN")
            && l.contains(
                "runner link `edge-1`: runner `edge-1` replaced its link from 127.0.0.1:"
            )
            && l.contains("by a new runner process from 127.0.0.1:")),
        "the front warns about the fight:\n{stderr}"
    );
    common::assert_no_zombie_children_of_self();
}
