//! End-to-end tests of `webcodex-plugin serve` (the HTTP transport, docs/PROTOCOL.md §9.3) and of
//! the `--server-url` client mode: the real binary serves a runner with the fixture plugin on
//! `127.0.0.1:0` (it prints the bound address as its first stdout line); requests go over
//! loopback only, as raw HTTP/1.1 written by the test or through the CLI.

use crate::common;
use crate::tempdir;

use common::serve::{
    ServeProcess, TOKEN_ALL as ALL, TOKEN_CALLER as CALLER, TOKEN_VIEWER as VIEWER,
};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tempdir::TempDir;

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest any one process may run or any one wait may last (a hang, never a timing).
const LIMIT: Duration = Duration::from_secs(30);

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// runner.toml with one ready fixture provider `fx`, tokens.toml with three tokens, and one
/// token file per token.
fn files(dir: &TempDir) -> (PathBuf, PathBuf) {
    let fixture = common::fixture_path();
    let config = dir.write(
        "runner.toml",
        &format!(
            "[plugins]\nrequest_timeout_secs = 20\n\n[[plugins.providers]]\nid = \"fx\"\n\
             name = \"Fixture\"\ncommand = {}\nargs = [\"normal\"]\n",
            serde_json::to_string(s(&fixture)).unwrap()
        ),
    );
    let tokens = common::serve::write_tokens_file(dir);
    for (name, token) in [("all.tok", ALL), ("viewer.tok", VIEWER)] {
        dir.write(name, &format!("{token}\n"));
    }
    (config, tokens)
}

fn command(args: &[&str]) -> Command {
    let mut cmd = common::cli_command(BIN);
    cmd.args(args);
    cmd
}

fn run(args: &[&str]) -> common::Run {
    common::run_to_end(command(args), LIMIT)
}

/// A running `serve` process with the fixture's pid file; killed on drop if the test did not
/// stop it.
struct Server {
    serve: ServeProcess,
    addr: SocketAddr,
    pids: PathBuf,
}

impl Server {
    fn start(dir: &TempDir, config: &Path, tokens: &Path) -> Server {
        let pids = dir.path("pids");
        let mut cmd = command(&[
            "serve",
            "--config",
            s(config),
            "--listen",
            "127.0.0.1:0",
            "--tokens",
            s(tokens),
        ]);
        cmd.env("FIXTURE_PIDS", &pids).env("RUST_LOG", "info");
        let serve = ServeProcess::start(cmd);
        Server {
            addr: serve.addr,
            serve,
            pids,
        }
    }

    fn url(&self) -> String {
        self.serve.url()
    }

    /// One POST of a plugin_tool request with an optional bearer token.
    fn tool(&self, token: Option<&str>, params: Value) -> (u16, Value) {
        let body = json!({"tool": "plugin_tool", "params": params}).to_string();
        self.post(token, &body)
    }

    fn post(&self, token: Option<&str>, body: &str) -> (u16, Value) {
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        let raw = format!(
            "POST /api/tools/call HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        exchange(self.addr, raw.as_bytes())
    }

    /// SIGTERM, a bounded wait for exit 0, and every fixture process (plugins and their
    /// grandchildren) gone.
    ///
    /// Windows under Wine: no console control event can be delivered (docs/PLATFORMS.md), so
    /// serve is terminated instead, as a host that dies; its plugins' jobs close with it, which
    /// must end every fixture process all the same.
    fn stop(self) -> String {
        #[cfg(unix)]
        let stderr = self.serve.stop_within(LIMIT);
        #[cfg(windows)]
        let stderr = self.serve.terminate();
        let recorded = common::recorded_pids(&self.pids);
        assert!(!recorded.is_empty(), "no fixture process was recorded");
        common::assert_all_gone(&recorded, "fixture process");
        stderr
    }
}

/// Writes `raw` (from another thread, so a large body cannot deadlock) and reads the whole
/// response; returns its status and JSON body.
fn exchange(addr: SocketAddr, raw: &[u8]) -> (u16, Value) {
    exchange_within(addr, raw, LIMIT).expect("a response")
}

/// [`exchange`] with a read timeout: `None` when no complete response came in time.
fn exchange_within(addr: SocketAddr, raw: &[u8], timeout: Duration) -> Option<(u16, Value)> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(timeout)).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let raw = raw.to_vec();
    let writing = std::thread::spawn(move || {
        let _ = writer.write_all(&raw);
    });
    let mut response = Vec::new();
    let read = stream.read_to_end(&mut response);
    let _ = stream.shutdown(Shutdown::Both);
    writing.join().unwrap();
    if read.is_err() && !response.windows(4).any(|w| w == b"\r\n\r\n") {
        return None;
    }
    Some(parse_response(&response))
}

/// The status and JSON body of a whole response, which must say `Content-Type: application/json`.
fn parse_response(response: &[u8]) -> (u16, Value) {
    let response = common::http::parse_response(response);
    let content_type = response.header("content-type");
    assert!(
        content_type.starts_with("application/json"),
        "{:?}",
        response.headers
    );
    (response.status, response.json())
}

fn code(body: &Value) -> &str {
    body["output"]["error"]["code"].as_str().unwrap_or("")
}

#[test]
fn http_routes_auth_scopes_and_a_round_trip() {
    let dir = TempDir::new("serve", "routes");
    let (config, tokens) = files(&dir);
    let server = Server::start(&dir, &config, &tokens);
    let list = json!({"action": "list", "runner": "local"});

    // 401: no token, an unknown token, another scheme.
    for auth in [None, Some("not-a-known-token-at-all"), Some("")] {
        let (status, body) = server.tool(auth, list.clone());
        assert_eq!(status, 401, "{auth:?}: {body}");
        assert_eq!(body["success"], json!(false));
        assert_eq!(code(&body), "unauthorized");
        assert_eq!(body["output"]["dispatch"], json!("not_started"));
    }
    let raw = "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YTpi\r\n\
               Content-Length: 2\r\nConnection: close\r\n\r\n{}";
    assert_eq!(exchange(server.addr, raw.as_bytes()).0, 401);
    // A 401 echoes the request's id, like every other answer.
    let (status, body) = server.post(
        Some("not-a-known-token-at-all"),
        &json!({"id": "r0", "tool": "plugin_tool", "params": list}).to_string(),
    );
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["id"], json!("r0"), "{body}");

    // 200 list and describe with an inspect-only token; the id is echoed.
    let (status, body) = server.post(
        Some(VIEWER),
        &json!({"id": "r1", "tool": "plugin_tool", "params": list}).to_string(),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"id": "r1", "success": true, "output": {"runner": "local",
            "plugins": [{"plugin": "fx", "name": "Fixture", "status": "ready"}]}})
    );
    let describe = json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "add"});
    let (status, body) = server.tool(Some(VIEWER), describe);
    assert_eq!(status, 200, "{body}");
    assert!(body.get("id").is_none(), "no id was sent: {body}");
    assert_eq!(body["output"]["tool"]["name"], json!("add"));
    let binding = body["output"]["binding"].as_str().unwrap().to_string();

    // 403: the inspect-only token may not call or reload.
    let call = json!({"action": "call", "binding": binding, "arguments": {"a": 2, "b": 40}});
    let (status, body) = server.tool(Some(VIEWER), call.clone());
    assert_eq!((status, code(&body)), (403, "insufficient_scope"), "{body}");
    let (status, body) = server.tool(Some(CALLER), json!({"action": "reload", "runner": "local"}));
    assert_eq!((status, code(&body)), (403, "insufficient_scope"), "{body}");

    // 200 call with an invoke token.
    let (status, body) = server.tool(Some(CALLER), call);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], json!(true));
    assert_eq!(body["output"]["structuredContent"], json!({"sum": 42}));
    assert_eq!(body["output"]["isError"], json!(false));

    // 400: an unknown binding, bad parameters, a malformed body, a request without params.
    let bad =
        json!({"action": "call", "binding": "wc_pbind_AAAAAAAAAAAAAAAAAAAAAA", "arguments": {}});
    let (status, body) = server.tool(Some(ALL), bad);
    assert_eq!((status, code(&body)), (400, "describe_required"), "{body}");
    let (status, body) = server.tool(Some(ALL), json!({"action": "list", "plugin": "fx"}));
    assert_eq!((status, code(&body)), (400, "invalid_arguments"), "{body}");
    let (status, body) = server.post(Some(ALL), "{not json");
    assert_eq!((status, code(&body)), (400, "invalid_request"), "{body}");
    assert_eq!(body["output"]["dispatch"], json!("not_started"));
    let (status, body) = server.post(Some(ALL), r#"{"id":9,"tool":"plugin_tool"}"#);
    assert_eq!((status, code(&body)), (400, "invalid_request"), "{body}");
    assert_eq!(body["id"], json!(9));

    // 404, 405.
    let raw =
        "POST /api/other HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    let (status, body) = exchange(server.addr, raw.as_bytes());
    assert_eq!((status, code(&body)), (404, "invalid_request"), "{body}");
    let raw = format!(
        "GET /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ALL}\r\nConnection: close\r\n\r\n"
    );
    let (status, body) = exchange(server.addr, raw.as_bytes());
    assert_eq!((status, code(&body)), (405, "invalid_request"), "{body}");

    // 413: a body over 1 MiB (declared), then the server still answers.
    let big = format!(
        "{{\"tool\":\"plugin_tool\",\"params\":{{\"action\":\"list\",\"pad\":\"{}\"}}}}",
        "x".repeat(1 << 20)
    );
    let (status, body) = server.post(Some(ALL), &big);
    assert_eq!((status, code(&body)), (413, "invalid_request"), "{body}");
    assert_eq!(server.tool(Some(ALL), list.clone()).0, 200);

    // check and reload with the manage token.
    let (status, body) = server.tool(
        Some(ALL),
        json!({"action": "check", "runner": "local", "plugin": "fx"}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"]["ready"], json!(true));
    let (status, body) = server.tool(Some(ALL), json!({"action": "reload", "runner": "local"}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"]["failures"], json!([]));

    let stderr = server.stop();
    for token in [ALL, VIEWER, CALLER] {
        assert!(!stderr.contains(token), "a token was logged: {stderr}");
    }
    assert!(stderr.contains("token name viewer"), "{stderr}");
}

#[test]
fn the_in_flight_bound_answers_503_gateway_saturated() {
    let dir = TempDir::new("serve", "saturate");
    let (config, tokens) = files(&dir);
    let server = Server::start(&dir, &config, &tokens);
    // Each of these requests holds a handler: its declared body never comes.
    let head = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ALL}\r\n\
         Content-Length: 4000\r\n\r\n"
    );
    // Unauthenticated requests that declare a body and never send it are answered 401 at once
    // and do not tie up the threads that accept requests.
    let stalled: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut stream = TcpStream::connect(server.addr).unwrap();
            stream
                .write_all(
                    b"POST /api/tools/call HTTP/1.1\r\nHost: x\r\nContent-Length: 4000\r\n\r\n",
                )
                .unwrap();
            stream.set_read_timeout(Some(LIMIT)).unwrap();
            let mut head = [0u8; 12];
            stream.read_exact(&mut head).unwrap();
            assert_eq!(&head, b"HTTP/1.1 401");
            stream
        })
        .collect();
    let (status, _) = server.tool(Some(ALL), json!({"action": "list", "runner": "local"}));
    assert_eq!(status, 200);
    drop(stalled);
    let hold = || {
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        stream
    };
    let mut held: Vec<TcpStream> = (0..64).map(|_| hold()).collect();
    // A probe that gets no answer soon is abandoned and the next one sent. A probe may also
    // take a slot just before a held request arrives; that one is answered 503 and another is
    // held.
    let list = json!({"action": "list", "runner": "local"});
    let probe = json!({"tool": "plugin_tool", "params": list}).to_string();
    let probe = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ALL}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{probe}",
        probe.len()
    );
    let deadline = Instant::now() + LIMIT;
    let body = loop {
        assert!(Instant::now() < deadline, "never saturated");
        match exchange_within(server.addr, probe.as_bytes(), Duration::from_secs(1)) {
            Some((503, body)) => break body,
            Some((status, body)) => {
                assert_eq!(status, 200, "{body}");
                // A held request that met a probe in flight was answered 503: hold another.
                if held.len() < 256 {
                    held.push(hold());
                }
            }
            None => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code(&body), "gateway_saturated");
    assert_eq!(body["output"]["dispatch"], json!("not_started"));
    assert_eq!(body["output"]["recovery"], json!("retry"));
    for stream in &held {
        let _ = stream.shutdown(Shutdown::Both);
    }
    drop(held);
    let deadline = Instant::now() + LIMIT;
    while exchange_within(server.addr, probe.as_bytes(), Duration::from_secs(1))
        .is_none_or(|(status, _)| status != 200)
    {
        assert!(Instant::now() < deadline, "the slots were never released");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.stop();
}

#[test]
fn client_mode_prints_what_the_in_process_commands_print() {
    let dir = TempDir::new("serve", "client");
    let (config, tokens) = files(&dir);
    let server = Server::start(&dir, &config, &tokens);
    let url = server.url();
    let all = dir.path("all.tok");
    let viewer = dir.path("viewer.tok");
    let remote = |token: &Path, args: &[&str]| {
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["--server-url", &url, "--token-file", s(token)]);
        run(&full)
    };
    let local = |args: &[&str]| {
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["--config", s(&config)]);
        run(&full)
    };
    // The runner is `local` on both sides (in-process it is the only one; `list --server-url`
    // without --runner lists the endpoint's runners instead, below).
    for args in [
        &["list", "--runner", "local", "--json"][..],
        &["list", "--runner", "local"][..],
        &["list", "--plugin", "fx", "--json"][..],
        &[
            "call",
            "--plugin",
            "fx",
            "--tool",
            "add",
            "--arguments",
            r#"{"a":1,"b":2}"#,
            "--json",
        ][..],
        &[
            "call",
            "--plugin",
            "fx",
            "--tool",
            "add",
            "--arguments",
            r#"{"a":"x"}"#,
        ][..],
        &["call", "--plugin", "fx", "--tool", "is_error", "--json"][..],
        &["call", "--plugin", "fx", "--tool", "is_error"][..],
        &["check", "--plugin", "fx", "--json"][..],
        &["reload", "--json"][..],
        &["describe", "--plugin", "fx", "--tool", "nope", "--json"][..],
    ] {
        let (r, l) = (remote(&all, args), local(args));
        assert_eq!(
            (r.code, &r.stdout),
            (l.code, &l.stdout),
            "{args:?}: {r:?} vs {l:?}"
        );
    }
    // A tool that reports an error exits 1 in client mode too.
    let r = remote(
        &all,
        &["call", "--plugin", "fx", "--tool", "is_error", "--json"],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(
        serde_json::from_str::<Value>(r.stdout.trim()).unwrap()["isError"],
        true
    );
    let r = remote(&all, &["list", "--runner", "local", "--json"]);
    assert_eq!(r.code, Some(0));
    assert_eq!(
        serde_json::from_str::<Value>(r.stdout.trim()).unwrap(),
        json!({"runner": "local", "plugins": [{"plugin": "fx", "name": "Fixture", "status": "ready"}]})
    );
    // Without --plugin and --runner, the endpoint's runners: this serve has one, `local`.
    let r = remote(&all, &["list", "--json"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        serde_json::from_str::<Value>(r.stdout.trim()).unwrap(),
        json!({"runners": [{"runner": "local"}]})
    );
    let r = remote(&all, &["list"]);
    assert_eq!(
        r.stdout, "local\n(list a runner's providers with --runner ID)\n",
        "{r:?}"
    );
    // describe: the same but for the fresh binding.
    let args = ["describe", "--plugin", "fx", "--tool", "echo", "--json"];
    let (r, l) = (remote(&all, &args), local(&args));
    assert_eq!((r.code, l.code), (Some(0), Some(0)));
    let strip = |text: &str| {
        let mut v: Value = serde_json::from_str(text.trim()).unwrap();
        assert!(v["binding"].as_str().unwrap().starts_with("wc_pbind_"));
        v.as_object_mut().unwrap().remove("binding");
        v
    };
    assert_eq!(strip(&r.stdout), strip(&l.stdout));

    // A token without the scope: the failure, exit 1.
    let r = remote(&viewer, &["reload", "--json"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(
        serde_json::from_str::<Value>(r.stdout.trim()).unwrap()["error"]["code"],
        json!("insufficient_scope")
    );
    // An unknown token: unauthorized, exit 1; the token is never printed.
    let wrong = dir.write("wrong.tok", "wrong-token-wrong-token-0123\n");
    let r = remote(&wrong, &["list"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("unauthorized"), "{r:?}");
    assert!(!r.stdout.contains("wrong-token") && !r.stderr.contains("wrong-token"));
    // An empty token file, a bad URL: usage errors.
    let empty = dir.write("empty.tok", "\n");
    assert_eq!(remote(&empty, &["list"]).code, Some(2));
    let r = run(&[
        "list",
        "--server-url",
        "ftp://127.0.0.1:1",
        "--token-file",
        s(&all),
    ]);
    assert_eq!(r.code, Some(2), "{r:?}");
    // --config and --server-url together: a usage error.
    let r = run(&[
        "list",
        "--config",
        s(&config),
        "--server-url",
        &url,
        "--token-file",
        s(&all),
    ]);
    assert_eq!(r.code, Some(2), "{r:?}");
    server.stop();
}

#[test]
fn client_mode_reports_a_lost_response_and_never_retries() {
    let dir = TempDir::new("serve", "lost");
    let token = dir.write("t.tok", "some-token-some-token-0123\n");
    // Nothing listens: nothing was sent.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let r = run(&["reload", "--server-url", &url, "--token-file", s(&token)]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("nothing was sent"), "{r:?}");

    // A server that reads the request and closes without answering.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // Detached: it ends with the test process.
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            stream.set_read_timeout(Some(LIMIT)).unwrap();
            let _ = tx.send(common::http::read_request(&mut stream));
        }
    });
    for (args, action) in [
        (&["reload"][..], "reload"),
        (&["check", "--plugin", "fx"][..], "check"),
    ] {
        let mut full = args.to_vec();
        full.extend(["--server-url", &url, "--token-file", s(&token)]);
        let r = run(&full);
        assert_eq!(r.code, Some(1), "{r:?}");
        assert!(r.stderr.contains(&format!("`{action}`")), "{r:?}");
        assert!(r.stderr.contains("outcome may be unknown"), "{r:?}");
        assert!(r.stderr.contains("NOT retried"), "{r:?}");
        assert!(!r.stderr.contains("some-token"), "{r:?}");
    }
    let first = rx
        .recv_timeout(LIMIT)
        .expect("the request reached the server");
    assert!(
        first.starts_with("POST /api/tools/call HTTP/1.1\r\n"),
        "{first}"
    );
    assert!(first
        .to_ascii_lowercase()
        .contains("authorization: bearer some-token-some-token-0123\r\n"));
    // The check was the second and last connection: the reload was not retried.
    let second = rx
        .recv_timeout(LIMIT)
        .expect("the check reached the server");
    assert!(second.contains("\"check\""), "{second}");
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "a request was retried"
    );
}

#[test]
fn invalid_tokens_config_or_address_refuse_to_start() {
    let dir = TempDir::new("serve", "invalid");
    let (config, tokens) = files(&dir);
    let serve = |config: &Path, tokens: &Path, listen: &str| {
        run(&[
            "serve",
            "--config",
            s(config),
            "--listen",
            listen,
            "--tokens",
            s(tokens),
        ])
    };
    let short = dir.write(
        "short.toml",
        "[[tokens]]\nname = \"a\"\ntoken = \"tiny-secret\"\nscopes = [\"plugin:inspect\"]\n",
    );
    let r = serve(&config, &short, "127.0.0.1:0");
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("tokens[0].token"), "{r:?}");
    assert!(!r.stderr.contains("tiny-secret"), "{r:?}");
    let scope = dir.write(
        "scope.toml",
        &format!(
            "[[tokens]]\nname = \"a\"\ntoken = \"{ALL}\"\nscopes = [\"plugin:root\"]\nextra = 1\n"
        ),
    );
    let r = serve(&config, &scope, "127.0.0.1:0");
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("tokens[0]"), "{r:?}");
    assert!(!r.stderr.contains(ALL), "{r:?}");
    let bad_config = dir.write("bad.toml", "[plugins]\nbogus = 1\n");
    let r = serve(&bad_config, &tokens, "127.0.0.1:0");
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("plugin_config_invalid"), "{r:?}");
    let r = serve(&config, &tokens, "not an address");
    assert_eq!(r.code, Some(2), "{r:?}");
}
