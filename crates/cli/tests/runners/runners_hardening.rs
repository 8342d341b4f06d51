//! A front gateway (`serve --config --runners`) against what outside probes tried: runner tokens
//! in the front's environment (never handed to a local plugin), a runner that hangs (its own
//! in-flight cap, so the front's shared slots stay free for the others), and a hostile runner
//! whose answers are validated as strictly as a local provider's (docs/PROTOCOL.md §9.8).
//!
//! The front and its plugins are real processes; a misbehaving runner is a small HTTP server in
//! this test process ([`FakeRunner`]) that answers each request as the test says, or never.

use crate::common;
use crate::tempdir;

use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::serve::ServeProcess;
use serde_json::{json, Value};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest any one process may take to start or stop, or any one answer to come (a hang,
/// never a timing).
const LIMIT: Duration = Duration::from_secs(30);
/// The token the caller presents to the front (every scope).
const CALLER: &str = "hardening-caller-all-scopes-0123";

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// A runner.toml with one fixture provider `fx`.
fn runner_config(dir: &TempDir) -> PathBuf {
    dir.write(
        "local.toml",
        &format!(
            "[plugins]\nrequest_timeout_secs = 30\n\n[[plugins.providers]]\nid = \"fx\"\n\
             name = \"Fixture\"\ncommand = {}\nargs = [\"normal\"]\n",
            serde_json::to_string(s(&common::fixture_path())).unwrap(),
        ),
    )
}

fn front_tokens(dir: &TempDir) -> PathBuf {
    dir.write(
        "front-tokens.toml",
        &format!(
            "[[tokens]]\nname = \"caller\"\ntoken = \"{CALLER}\"\n\
             scopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\"]\n"
        ),
    )
}

/// `serve --config local.toml --runners runners.toml` on loopback, with `env` set, a clean
/// proxy environment and its plugins' pids recorded in `front.pids`.
fn start_front(dir: &TempDir, runners: &Path, env: &[(&str, &str)]) -> ServeProcess {
    let local = runner_config(dir);
    let tokens = front_tokens(dir);
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--config",
        s(&local),
        "--runners",
        s(runners),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(&tokens),
    ])
    .env("FIXTURE_PIDS", dir.path("front.pids"));
    for var in common::PROXY_VARIABLES {
        cmd.env_remove(var);
    }
    for (key, value) in env {
        cmd.env(key, value);
    }
    ServeProcess::start(cmd)
}

/// One raw HTTP/1.1 POST of a plugin_tool request (Connection: close): status and JSON body.
fn post(addr: SocketAddr, params: &Value) -> (u16, Value) {
    let response = common::http::post_tool(addr, CALLER, params, LIMIT * 6);
    (response.status, response.json())
}

fn code(body: &Value) -> &str {
    body["output"]["error"]["code"].as_str().unwrap_or("")
}

fn dispatch(body: &Value) -> &str {
    body["output"]["dispatch"].as_str().unwrap_or("")
}

/// What a [`FakeRunner`] does with one request.
enum Reply {
    /// Answers with this status and JSON body.
    Answer(u16, Value),
    /// Holds the connection, answering nothing, until the runner is dropped.
    Hang,
}

/// Decides the reply to one `plugin_tool` request: its `params` and the bearer token it came
/// with.
type Handler = dyn Fn(&Value, &str) -> Reply + Send + Sync;

/// A runner that is not a `serve`: a loopback HTTP server in this test process answering each
/// `POST /api/tools/call` as its handler says (one thread per connection). Dropping it releases
/// every held connection.
struct FakeRunner {
    addr: SocketAddr,
    received: Arc<AtomicUsize>,
    released: Arc<(Mutex<bool>, Condvar)>,
}

impl FakeRunner {
    fn start(handler: impl Fn(&Value, &str) -> Reply + Send + Sync + 'static) -> FakeRunner {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(AtomicUsize::new(0));
        let released = Arc::new((Mutex::new(false), Condvar::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let (count, release) = (received.clone(), released.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (handler, count, release) = (handler.clone(), count.clone(), release.clone());
                std::thread::spawn(move || serve_one(stream, &*handler, &count, &release));
            }
        });
        FakeRunner {
            addr,
            received,
            released,
        }
    }

    /// How many requests have arrived so far.
    fn received(&self) -> usize {
        self.received.load(Ordering::SeqCst)
    }

    /// Waits (bounded) until `n` requests have arrived.
    fn wait_received(&self, n: usize) {
        let deadline = Instant::now() + LIMIT;
        while self.received() < n {
            assert!(
                Instant::now() < deadline,
                "{} of {n} requests arrived",
                self.received()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for FakeRunner {
    fn drop(&mut self) {
        let (flag, wake) = &*self.released;
        *flag.lock().unwrap() = true;
        wake.notify_all();
    }
}

fn serve_one(
    mut stream: TcpStream,
    handler: &Handler,
    count: &AtomicUsize,
    released: &(Mutex<bool>, Condvar),
) {
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    let request = common::http::read_request(&mut stream);
    let Some((head, body)) = request.split_once("\r\n\r\n") else {
        return;
    };
    let bearer = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("authorization")
                .then(|| value.trim().trim_start_matches("Bearer ").to_string())
        })
        .unwrap_or_default();
    let params = serde_json::from_str::<Value>(body).unwrap_or_default()["params"].clone();
    count.fetch_add(1, Ordering::SeqCst);
    match handler(&params, &bearer) {
        Reply::Answer(status, body) => {
            let body = body.to_string();
            let response = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
        Reply::Hang => {
            let (flag, wake) = released;
            let mut done = flag.lock().unwrap();
            let deadline = Instant::now() + LIMIT * 10;
            while !*done && Instant::now() < deadline {
                done = wake.wait_timeout(done, LIMIT).unwrap().0;
            }
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// A runners file naming `(id, runner)` pairs, each with a token file `ID.tok` holding
/// `token_of(id)`.
fn runners_file(dir: &TempDir, runners: &[(&str, SocketAddr)]) -> PathBuf {
    let mut text = String::new();
    for (id, addr) in runners {
        dir.write(&format!("{id}.tok"), &format!("{}\n", token_of(id)));
        text.push_str(&format!(
            "[[runners]]\nid = \"{id}\"\nname = \"Runner {id}\"\nurl = \"http://{addr}\"\n\
             token_file = \"{id}.tok\"\n\n"
        ));
    }
    dir.write("runners.toml", &text)
}

/// The front's bearer token for runner `id`.
fn token_of(id: &str) -> String {
    format!("front-to-{id}-secret-token-{}", std::process::id())
}

/// A port on loopback that nothing listens on (bound, then released).
fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// No plugin of the front outlives it, and no zombie is left.
fn stop_front(front: ServeProcess, dir: &TempDir) {
    front.stop_within(LIMIT);
    for pid in common::recorded_plugin_pids(&dir.path("front.pids")) {
        assert!(common::wait_gone(pid), "plugin {pid} outlived the front");
    }
    common::assert_no_zombie_children_of_self();
}

/// A runner token named by `token_env` in the runners file (in any ASCII case), and
/// `WEBCODEX_RUNNER_TOKEN`, never reach a local plugin's environment; other variables do.
#[test]
#[cfg_attr(
    windows,
    ignore = "runs serve processes stopped with SIGTERM; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn runner_tokens_never_reach_a_local_plugin() {
    let dir = TempDir::new("hardening", "env");
    dir.write("edge-b.tok", "edge-b-token-from-a-file-0123\n");
    // The runners need not be up: tokens are read at start, nothing is sent before a request.
    let runners = dir.write(
        "runners.toml",
        &format!(
            "[[runners]]\nid = \"edge-c\"\nname = \"Edge C\"\nurl = \"http://{}\"\n\
             token_env = \"EDGE_C_TOKEN\"\n\n\
             [[runners]]\nid = \"edge-b\"\nname = \"Edge B\"\nurl = \"http://{}\"\n\
             token_file = \"edge-b.tok\"\n",
            closed_port(),
            closed_port()
        ),
    );
    let secrets = [
        ("EDGE_C_TOKEN", "edge-c-secret-value-0123456789"),
        ("edge_c_token", "edge-c-lower-case-secret-0123"),
        ("Edge_C_Token", "edge-c-mixed-case-secret-0123"),
        ("WEBCODEX_RUNNER_TOKEN", "runner-link-secret-0123456789"),
        ("webcodex_runner_token", "runner-link-lower-secret-0123"),
    ];
    let mut env: Vec<(&str, &str)> = secrets.to_vec();
    env.push(("HARDENING_VISIBLE", "shown-to-plugins"));
    let front = start_front(&dir, &runners, &env);

    let body = post(
        front.addr,
        &json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "env"}),
    )
    .1;
    let binding = body["output"]["binding"]
        .as_str()
        .expect("a binding")
        .to_string();
    let value_of = |name: &str| -> Value {
        let (status, body) = post(
            front.addr,
            &json!({"action": "call", "binding": binding, "arguments": {"name": name}}),
        );
        assert_eq!(status, 200, "{body}");
        body["output"]["structuredContent"]["value"].clone()
    };
    // The control: an ordinary variable of the front reaches the plugin.
    assert_eq!(value_of("HARDENING_VISIBLE"), json!("shown-to-plugins"));
    for (name, _) in secrets {
        assert_eq!(value_of(name), Value::Null, "{name} reached a local plugin");
    }
    // A check candidate is prepared the same way.
    let (_, check) = post(
        front.addr,
        &json!({"action": "check", "runner": "local", "plugin": "fx"}),
    );
    assert_eq!(check["output"]["ready"], json!(true), "{check}");
    stop_front(front, &dir);
}

/// A runner that never answers holds at most its own cap (16) of the front's slots: 64 requests
/// to it at once (the front's whole shared in-flight bound) send 16, the other 48 fail at once
/// with `plugin_runner_saturated` (not started, retry), and `list` on the local runner and on
/// another runner still answer while the 16 hang.
#[test]
#[cfg_attr(
    windows,
    ignore = "runs serve processes stopped with SIGTERM; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn one_hung_runner_cannot_take_the_fronts_slots() {
    let dir = TempDir::new("hardening", "hung");
    let hung = FakeRunner::start(|_, _| Reply::Hang);
    let other = FakeRunner::start(|_, _| {
        Reply::Answer(
            200,
            json!({"success": true, "output": {"runner": "local", "plugins": []}}),
        )
    });
    let runners = runners_file(&dir, &[("hung", hung.addr), ("other", other.addr)]);
    let front = start_front(&dir, &runners, &[]);

    let (tx, rx) = mpsc::channel();
    let workers: Vec<_> = (0..64)
        .map(|_| {
            let (tx, addr) = (tx.clone(), front.addr);
            std::thread::spawn(move || {
                let _ = tx.send(post(addr, &json!({"action": "list", "runner": "hung"})));
            })
        })
        .collect();
    let mut refused = Vec::new();
    let deadline = Instant::now() + LIMIT;
    while refused.len() < 48 {
        assert!(
            hung.received() <= 16,
            "{} requests reached the hung runner: its cap is 16",
            hung.received()
        );
        assert!(
            Instant::now() < deadline,
            "only {} answers came",
            refused.len()
        );
        if let Ok(answer) = rx.recv_timeout(Duration::from_millis(20)) {
            refused.push(answer);
        }
    }
    for (status, body) in &refused {
        assert_eq!(*status, 503, "{body}");
        assert_eq!(code(body), "plugin_runner_saturated", "{body}");
        assert_eq!(dispatch(body), "not_started", "{body}");
        assert_eq!(body["output"]["recovery"], json!("retry"), "{body}");
        let message = body["output"]["error"]["message"].as_str().unwrap();
        assert!(message.contains("`hung`") && !message.contains(&hung.addr.to_string()));
    }
    hung.wait_received(16);

    // The 16 hang; the local runner and the other runner answer at once.
    let started = Instant::now();
    let (status, body) = post(front.addr, &json!({"action": "list", "runner": "local"}));
    assert_eq!(
        (status, body["success"].clone()),
        (200, json!(true)),
        "{body}"
    );
    assert_eq!(
        body["output"]["plugins"][0]["plugin"],
        json!("fx"),
        "{body}"
    );
    let (status, body) = post(front.addr, &json!({"action": "list", "runner": "other"}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"], json!({"runner": "other", "plugins": []}));
    assert!(
        started.elapsed() < common::GENEROUS * 2,
        "list waited behind the hung runner"
    );
    // The 17th request to the hung runner, one more beyond its cap: refused, nothing sent.
    let (status, body) = post(front.addr, &json!({"action": "list", "runner": "hung"}));
    assert_eq!(
        (status, code(&body)),
        (503, "plugin_runner_saturated"),
        "{body}"
    );
    assert_eq!(hung.received(), 16);

    // Released: the 16 end as lost answers (list changes nothing: not started).
    drop(hung);
    for _ in 0..16 {
        let (_, body) = rx.recv_timeout(LIMIT).expect("a held request was answered");
        assert_eq!(code(&body), "plugin_gateway_timeout", "{body}");
        assert_eq!(dispatch(&body), "not_started", "{body}");
    }
    for worker in workers {
        worker.join().unwrap();
    }
    drop(other);
    stop_front(front, &dir);
}

/// What the hostile runner answers to each request it gets (the front's token is `bearer`).
fn hostile_answer(params: &Value, bearer: &str) -> Reply {
    let ok = |output: Value| Reply::Answer(200, json!({"success": true, "output": output}));
    let failed = |output: Value| Reply::Answer(400, json!({"success": false, "output": output}));
    let plugin = params["plugin"].as_str().unwrap_or("");
    let tool = params["tool"].as_str().unwrap_or("");
    let definition = json!({"name": tool, "title": "Shaped", "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "number"}},
                         "required": ["n"]}});
    match (params["action"].as_str().unwrap_or(""), plugin, tool) {
        ("list", "", _) => ok(json!({"runner": "local", "leak": "hostile-extra-key",
            "plugins": [{"plugin": "fx", "name": "Fixture", "status": "ready",
                         "pid": "hostile-extra-key"}]})),
        ("list", "wrongkind", _) => ok(json!({"runner": "local", "plugins": [], "failures": []})),
        ("list", "failing", _) => failed(json!({
            "error": {"code": "plugin_not_configured",
                      "message": format!("first\nline {}", "x".repeat(5000)),
                      "data": {"secret": "hostile-data-field"}, "extra": "hostile-extra-key"},
            "dispatch": "not_started", "recovery": "format_the_disk",
            "hint": "hostile-extra-key"})),
        ("list", "known", _) => failed(json!({
            "error": {"code": "plugin_tool_unavailable", "message": "no such tool"},
            "dispatch": "not_started", "recovery": "list"})),
        ("list", "madeup", _) => failed(json!({
            "error": {"code": "hostile_made_up_code", "message": "m"},
            "dispatch": "not_started"})),
        ("list", "oversize", _) => ok(json!({"plugin": "oversize", "name": "n".repeat(10_000),
            "status": "ready", "toolCount": 0, "tools": []})),
        ("list", "echo", _) => failed(json!({
            "error": {"code": "plugin_rpc_error", "message": format!("your token is {bearer}")},
            "dispatch": "completed"})),
        ("describe", "fx", "leaky") => ok(json!({"runner": "local", "plugin": "fx",
            "pluginName": "Fixture", "binding": "remote-binding-1",
            "tool": {"name": "leaky", "title": format!("t {bearer}"),
                     "inputSchema": {"type": "object"}}})),
        ("describe", "fx", "badtool") => ok(json!({"runner": "local", "plugin": "fx",
            "pluginName": "Fixture", "binding": "remote-binding-1",
            "tool": {"name": "badtool", "inputSchema": {"type": "object"},
                     "hostile": "hostile-extra-key"}})),
        ("describe", "fx", _) => ok(json!({"runner": "local", "plugin": "fx",
            "pluginName": "Fixture", "binding": "remote-binding-1", "leak": "hostile-extra-key",
            "tool": definition})),
        ("check", _, _) => ok(json!({"runner": "local", "plugins": []})),
        ("call", _, _) => match params["arguments"]["mode"].as_str().unwrap_or("") {
            "ok" => ok(json!({"content": [{"type": "text", "text": "1"}],
                              "structuredContent": {"n": 1}, "isError": false})),
            "extra" => ok(json!({"content": [], "structuredContent": {"n": 1},
                                 "isError": false, "leak": "hostile-extra-key"})),
            "schema" => ok(json!({"content": [], "structuredContent": {"n": "one"}})),
            "kind" => ok(json!({"runner": "local", "plugins": []})),
            _ => failed(json!({
                "error": {"code": "plugin_timeout", "message": "late"},
                "dispatch": "outcome_unknown", "recovery": "retry"})),
        },
        _ => failed(json!({"error": {"code": "invalid_request", "message": "?"},
                           "dispatch": "not_started"})),
    }
}

/// Every answer a front relays from a hostile runner is validated as a local provider's: extra
/// keys and `data` dropped, an unknown recovery dropped, a message bounded, an unknown code, a
/// wrong kind or an oversize string refused, a tool definition admitted as a local one and a
/// call result checked against its output schema; an answer holding the front's own token for
/// that runner is refused (`plugin_rpc_error`) and the token is never shown.
#[test]
#[cfg_attr(
    windows,
    ignore = "runs serve processes stopped with SIGTERM; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn a_hostile_runners_answers_are_validated_like_a_local_providers() {
    let dir = TempDir::new("hardening", "hostile");
    let evil = FakeRunner::start(hostile_answer);
    let runners = runners_file(&dir, &[("evil", evil.addr)]);
    let front = start_front(&dir, &runners, &[]);
    let mut seen = Vec::new();
    let mut ask = |params: Value| -> (u16, Value) {
        let (status, body) = post(front.addr, &params);
        seen.push(body.to_string());
        (status, body)
    };
    let refused_as_lost = |body: &Value, dispatch_state: &str| {
        assert_eq!(code(body), "plugin_gateway_timeout", "{body}");
        assert_eq!(dispatch(body), dispatch_state, "{body}");
    };

    // Success: rebuilt from the known fields, with the front's runner id.
    let (status, body) = ask(json!({"action": "list", "runner": "evil"}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["output"],
        json!({"runner": "evil", "plugins": [{"plugin": "fx", "name": "Fixture", "status": "ready"}]})
    );
    // Another kind's output (a reload answer to a list), an oversize name: refused.
    let (_, body) = ask(json!({"action": "list", "runner": "evil", "plugin": "wrongkind"}));
    refused_as_lost(&body, "not_started");
    let (_, body) = ask(json!({"action": "list", "runner": "evil", "plugin": "oversize"}));
    refused_as_lost(&body, "not_started");
    let (_, body) = ask(json!({"action": "check", "runner": "evil", "plugin": "fx"}));
    refused_as_lost(&body, "outcome_unknown");

    // Failure objects: rebuilt from code, message, dispatch and a known recovery only.
    let (status, body) = ask(json!({"action": "list", "runner": "evil", "plugin": "failing"}));
    assert_eq!(
        (status, code(&body)),
        (400, "plugin_not_configured"),
        "{body}"
    );
    let output = body["output"].as_object().unwrap();
    assert_eq!(
        output.keys().collect::<Vec<_>>(),
        ["dispatch", "error"],
        "{body}"
    );
    assert_eq!(dispatch(&body), "not_started");
    let error = body["output"]["error"].as_object().unwrap();
    assert_eq!(error.keys().collect::<Vec<_>>(), ["code", "message"]);
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("first line xxx"), "{message}");
    assert!(message.len() <= 1024, "{} bytes", message.len());
    let (_, body) = ask(json!({"action": "list", "runner": "evil", "plugin": "known"}));
    assert_eq!(
        body["output"],
        json!({"error": {"code": "plugin_tool_unavailable", "message": "no such tool"},
               "dispatch": "not_started", "recovery": "list"})
    );
    let (_, body) = ask(json!({"action": "list", "runner": "evil", "plugin": "madeup"}));
    refused_as_lost(&body, "not_started");

    // The front's own token in an answer: refused, never shown.
    let (_, body) = ask(json!({"action": "list", "runner": "evil", "plugin": "echo"}));
    assert_eq!(code(&body), "plugin_rpc_error", "{body}");
    assert_eq!(dispatch(&body), "completed", "{body}");
    let (_, body) = ask(
        json!({"action": "describe", "runner": "evil", "plugin": "fx",
                               "tool": "leaky"}),
    );
    assert_eq!(code(&body), "plugin_rpc_error", "{body}");

    // describe: the definition is admitted like a local one (an unknown key refuses it); the
    // binding is the front's; extra keys are dropped.
    let (_, body) = ask(
        json!({"action": "describe", "runner": "evil", "plugin": "fx",
                               "tool": "badtool"}),
    );
    refused_as_lost(&body, "not_started");
    let (status, body) = ask(
        json!({"action": "describe", "runner": "evil", "plugin": "fx",
                                    "tool": "shaped"}),
    );
    assert_eq!(status, 200, "{body}");
    let output = body["output"].as_object().unwrap();
    assert_eq!(
        output.keys().collect::<Vec<_>>(),
        ["binding", "plugin", "pluginName", "runner", "tool"],
        "{body}"
    );
    assert_eq!(output["tool"]["title"], json!("Shaped"));
    let binding = output["binding"].as_str().unwrap().to_string();
    assert!(binding.starts_with("wc_pbind_"), "{binding}");

    // call: the result is checked as a local provider's, against the described output schema.
    let mut call = |mode: &str| {
        ask(json!({"action": "call", "binding": binding, "arguments": {"mode": mode}})).1
    };
    let body = call("ok");
    assert_eq!(
        body["output"],
        json!({"content": [{"type": "text", "text": "1"}], "structuredContent": {"n": 1},
               "isError": false})
    );
    for (mode, want) in [
        ("extra", "plugin_result_invalid"),
        ("kind", "plugin_result_invalid"),
        ("schema", "plugin_output_schema_violation"),
    ] {
        let body = call(mode);
        assert_eq!(code(&body), want, "{mode}: {body}");
        assert_eq!(dispatch(&body), "completed", "{mode}: {body}");
    }
    // An outcome_unknown failure never says retry, whatever the runner wrote.
    let body = call("lost");
    assert_eq!(
        body["output"],
        json!({"error": {"code": "plugin_timeout", "message": "late"},
               "dispatch": "outcome_unknown", "recovery": "do_not_retry"})
    );

    // Nothing of what the front must drop reached the caller.
    let everything = seen.join("\n");
    for banned in [
        token_of("evil").as_str(),
        "hostile-extra-key",
        "hostile-data-field",
        "format_the_disk",
        "hostile_made_up_code",
        "remote-binding-1",
    ] {
        assert!(!everything.contains(banned), "the front relayed {banned:?}");
    }
    let stderr = front.stop_within(LIMIT);
    assert!(!stderr.contains(&token_of("evil")), "a token in the log");
    drop(evil);
    common::assert_no_zombie_children_of_self();
}
