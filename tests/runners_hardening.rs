//! A front gateway (`serve --config --runners`) against what outside probes tried: runner tokens
//! in the front's environment (never handed to a local plugin), a runner that hangs (its own
//! in-flight cap, so the front's shared slots stay free for the others), and a hostile runner
//! whose answers are validated as strictly as a local provider's (docs/PROTOCOL.md §9.8).
//!
//! The front and its plugins are real processes; a misbehaving runner is a small HTTP server in
//! this test process ([`FakeRunner`]) that answers each request as the test says, or never.

mod common;
mod tempdir;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    let body = json!({"tool": "plugin_tool", "params": params}).to_string();
    let raw = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {CALLER}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(LIMIT * 6)).unwrap();
    stream.write_all(raw.as_bytes()).expect("write request");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read response");
    let _ = stream.shutdown(Shutdown::Both);
    let response = common::http::parse_response(&response);
    (response.status, response.json())
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
