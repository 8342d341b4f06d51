//! Helpers of the MCP tests: a temp dir with a runner.toml of fixture providers, a raw
//! JSON-RPC client of the `webcodex-plugin mcp` process, and process-table checks.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub use webcodex_plugin_testkit as common;
pub use webcodex_plugin_testkit::tempdir;

/// How long a test waits for one response at most (never an expected duration).
pub const RESPONSE_LIMIT: Duration = Duration::from_secs(20);
/// The stateless protocol version.
pub const STATELESS: &str = "2026-07-28";

/// The `webcodex-plugin` binary under test.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_webcodex-plugin")
}

/// A temp directory (the shared [`tempdir::TempDir`]) removed on drop, with the MCP tests'
/// runner.toml writers.
pub struct TempDir(tempdir::TempDir);

impl TempDir {
    /// A fresh directory named after `label`.
    pub fn new(label: &str) -> TempDir {
        TempDir(tempdir::TempDir::new("mcp", label))
    }

    /// A path inside the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.path(name)
    }

    /// Writes a runner.toml with one fixture provider per `(id, mode)` and returns its path.
    pub fn config(&self, providers: &[(&str, &str)]) -> PathBuf {
        self.config_with(providers, "")
    }

    /// Like [`TempDir::config`], with `extra` appended to every provider block (TOML lines).
    pub fn config_with(&self, providers: &[(&str, &str)], extra: &str) -> PathBuf {
        let fixture = common::fixture_path();
        let mut text = String::new();
        for (id, mode) in providers {
            text.push_str(&format!(
                "[[plugins.providers]]\nid = {}\nname = {}\ncommand = {}\nargs = [{}]\n{extra}\n",
                toml_str(id),
                toml_str(&format!("Provider {id}")),
                toml_str(fixture.to_str().expect("fixture path is UTF-8")),
                toml_str(mode),
            ));
        }
        let path = self.path("runner.toml");
        std::fs::write(&path, text).expect("write config");
        path
    }
}

/// A TOML basic string.
pub fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The `_meta` of a stateless request.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "0"},
    })
}

/// A running `webcodex-plugin mcp` process spoken to in raw JSON-RPC lines.
pub struct McpProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: mpsc::Receiver<Value>,
    stderr: Option<std::thread::JoinHandle<String>>,
    /// Messages received but not yet asked for.
    pub received: Vec<Value>,
    /// The fixture's `FIXTURE_PIDS` file.
    pub pids: PathBuf,
    /// The fixture's `FIXTURE_LOG` file: every line a plugin read.
    pub log: PathBuf,
}

impl McpProcess {
    /// Starts `mcp --config CONFIG [--scopes S]` with `FIXTURE_PIDS` and `FIXTURE_LOG` in `dir`.
    pub fn start(dir: &TempDir, config: &Path, scopes: Option<&str>) -> McpProcess {
        let pids = dir.path("pids");
        let log = dir.path("plugin-log");
        let mut cmd = common::cli_command(binary());
        cmd.arg("mcp").arg("--config").arg(config);
        if let Some(scopes) = scopes {
            cmd.arg("--scopes").arg(scopes);
        }
        let mut child = cmd
            .env("FIXTURE_PIDS", &pids)
            .env("FIXTURE_LOG", &log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let line = line.expect("mcp stdout is UTF-8");
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                // One message, or the answers to a batch as one array.
                let messages = value
                    .as_array()
                    .cloned()
                    .unwrap_or_else(|| vec![value.clone()]);
                for message in &messages {
                    assert_eq!(message["jsonrpc"], "2.0", "not a JSON-RPC message: {line}");
                }
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        McpProcess {
            stdin: child.stdin.take(),
            stderr: Some(common::read_all(child.stderr.take().expect("stderr"))),
            child,
            messages: rx,
            received: Vec::new(),
            pids,
            log,
        }
    }

    /// Waits (up to 30 s) until a plugin has read a line containing `needle`: the request is
    /// in flight at the plugin, not only sent to the host.
    pub fn wait_for_plugin_to_read(&self, needle: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !std::fs::read_to_string(&self.log).is_ok_and(|log| log.contains(needle)) {
            assert!(
                std::time::Instant::now() < deadline,
                "no plugin read {needle:?} within 30 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// The child's pid.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Writes raw bytes followed by a newline.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).expect("write");
        stdin.write_all(b"\n").expect("write newline");
        stdin.flush().expect("flush");
    }

    /// Writes one message.
    pub fn send(&mut self, message: Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// Sends a request.
    pub fn request(&mut self, id: Value, method: &str, params: Value) {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
    }

    /// Sends a request and waits for its response.
    pub fn call(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.request(id.clone(), method, params);
        self.response(&id)
    }

    /// The handshake: `initialize` (answered) and `notifications/initialized`.
    pub fn initialize(&mut self, version: &str) -> Value {
        let result = self.call(
            json!("init"),
            "initialize",
            json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "raw-test", "version": "0"}}),
        );
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        result
    }

    /// `tools/call` of plugin_tool with `arguments`, in the handshake era.
    pub fn tool(&mut self, id: Value, arguments: Value) -> Value {
        let response = self.call(
            id,
            "tools/call",
            json!({"name": "plugin_tool", "arguments": arguments}),
        );
        response["result"].clone()
    }

    /// The next message, whatever its id.
    pub fn next(&mut self) -> Value {
        if !self.received.is_empty() {
            return self.received.remove(0);
        }
        self.messages
            .recv_timeout(RESPONSE_LIMIT)
            .unwrap_or_else(|e| panic!("no message ({e})"))
    }

    /// Waits for the response carrying `id` (other messages are kept).
    pub fn response(&mut self, id: &Value) -> Value {
        if let Some(i) = self.received.iter().position(|r| &r["id"] == id) {
            return self.received.remove(i);
        }
        let deadline = Instant::now() + RESPONSE_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .messages
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no response with id {id} ({e})"));
            if &message["id"] == id {
                return message;
            }
            self.received.push(message);
        }
    }

    /// Closes stdin, waits for the exit and returns (exit code, every message left, stderr).
    pub fn finish(mut self) -> (Option<i32>, Vec<Value>, String) {
        drop(self.stdin.take());
        let status = common::wait_bounded(&mut self.child, RESPONSE_LIMIT);
        let mut rest = std::mem::take(&mut self.received);
        while let Ok(message) = self.messages.recv_timeout(Duration::from_secs(2)) {
            rest.push(message);
        }
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default();
        (status.code(), rest, stderr)
    }
}

impl Drop for McpProcess {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The `KIND PID` lines of a `FIXTURE_PIDS` file.
pub use common::recorded_pids;

/// Asserts that every plugin process recorded in `pids` is gone (no orphan) and that this
/// test process has no zombie child.
pub fn assert_plugins_gone(pids: &Path) {
    let recorded = recorded_pids(pids);
    assert!(!recorded.is_empty(), "no plugin pid was recorded");
    for pid in recorded {
        assert!(
            common::wait_gone(pid),
            "plugin process {pid} outlived the host"
        );
    }
    common::assert_no_zombie_children_of_self();
}

/// The child processes of `pid` that are zombies, from `/proc`.
pub fn zombie_children_of(pid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&child| {
            common::proc_stat(child).is_some_and(|(parent, state)| parent == pid && state == 'Z')
        })
        .collect()
}

/// Canonical JSON: objects with sorted keys, compact (serde_json's map is ordered by key).
pub fn canonical(value: &Value) -> String {
    let reparsed: Value = serde_json::from_str(&value.to_string()).expect("JSON");
    reparsed.to_string()
}

/// A token with every scope, for `serve`.
pub const TOKEN_ALL: &str = "all-scopes-token-0123456789";
/// A token with `plugin:inspect` only.
pub const TOKEN_INSPECT: &str = "inspect-only-token-0123456789";
/// A token with `plugin:inspect` and `plugin:invoke`.
pub const TOKEN_INVOKE: &str = "inspect-invoke-token-0123456789";
/// A token with `plugin:manage` only.
pub const TOKEN_MANAGE: &str = "manage-only-token-0123456789";

/// The tokens file of [`ServeProcess`].
pub fn tokens_file(dir: &TempDir) -> PathBuf {
    let text = format!(
        "[[tokens]]\nname = \"all\"\ntoken = \"{TOKEN_ALL}\"\nscopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\"]\n\
         [[tokens]]\nname = \"inspect\"\ntoken = \"{TOKEN_INSPECT}\"\nscopes = [\"plugin:inspect\"]\n\
         [[tokens]]\nname = \"invoke\"\ntoken = \"{TOKEN_INVOKE}\"\nscopes = [\"plugin:inspect\", \"plugin:invoke\"]\n\
         [[tokens]]\nname = \"manage\"\ntoken = \"{TOKEN_MANAGE}\"\nscopes = [\"plugin:manage\"]\n"
    );
    let path = dir.path("tokens.toml");
    std::fs::write(&path, text).expect("write tokens");
    path
}

/// A running `webcodex-plugin serve` on 127.0.0.1 (port 0); stopped by SIGTERM.
pub struct ServeProcess {
    serve: common::serve::ServeProcess,
    /// `http://ADDR`.
    pub url: String,
    /// The fixture's `FIXTURE_PIDS` file.
    pub pids: PathBuf,
}

impl ServeProcess {
    /// Starts `serve` on `config` with [`tokens_file`] and these `--allow-origin` values.
    pub fn start(dir: &TempDir, config: &Path, origins: &[&str]) -> ServeProcess {
        let pids = dir.path("pids");
        let mut cmd = common::cli_command(binary());
        cmd.arg("serve")
            .arg("--config")
            .arg(config)
            .args(["--listen", "127.0.0.1:0", "--tokens"])
            .arg(tokens_file(dir));
        for origin in origins {
            cmd.args(["--allow-origin", origin]);
        }
        cmd.env("FIXTURE_PIDS", &pids);
        let serve = common::serve::ServeProcess::start(cmd);
        ServeProcess {
            url: serve.url(),
            serve,
            pids,
        }
    }

    /// The MCP endpoint URL.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.url)
    }

    /// The `host:port` part.
    pub fn addr(&self) -> &str {
        self.url.trim_start_matches("http://")
    }

    /// Sends SIGTERM and waits for exit 0; returns stderr.
    pub fn stop(self) -> String {
        self.serve.stop_within(RESPONSE_LIMIT)
    }

    /// [`ServeProcess::stop`], then [`assert_plugins_gone`] for its fixture pid file.
    pub fn stop_and_assert_plugins_gone(self) {
        let pids = self.pids.clone();
        self.stop();
        assert_plugins_gone(&pids);
    }
}

/// One raw HTTP/1.1 POST (or another method) with extra headers; returns (status, headers
/// lowercased, body).
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(RESPONSE_LIMIT))
        .expect("read timeout");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("send");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8(raw).expect("UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head}"));
    let headers = lines
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_ascii_lowercase(), v.trim().to_string()))
        })
        .collect();
    (status, headers, body.to_string())
}

/// A Python 3 plugin (standard library only) with one tool, `meet`: a call creates the file
/// `DIR/ME` and waits (at most 20 s) until `DIR/PEER` exists, then answers `met`, else
/// `alone`. Two calls to two such providers both answer `met` only when they run at once.
pub const RENDEZVOUS_PLUGIN: &str = r#"
import json, os, sys, time
me, peer, where = sys.argv[1], sys.argv[2], sys.argv[3]
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    request = json.loads(line)
    method, rid = request.get("method"), request.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "webcodex-plugin-v1"}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [{"name": "meet",
              "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False}}]}})
    elif method == "tools/call":
        open(os.path.join(where, me), "w").close()
        deadline = time.time() + 20
        while not os.path.exists(os.path.join(where, peer)) and time.time() < deadline:
            time.sleep(0.01)
        text = "met" if os.path.exists(os.path.join(where, peer)) else "alone"
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})
"#;

impl TempDir {
    /// A runner.toml with two [`RENDEZVOUS_PLUGIN`] providers, `a` and `b`, that meet in
    /// this directory.
    pub fn rendezvous_config(&self) -> PathBuf {
        let script = self.path("rendezvous.py");
        std::fs::write(&script, RENDEZVOUS_PLUGIN).expect("write the plugin");
        let meeting = self.path("meeting");
        std::fs::create_dir_all(&meeting).expect("meeting dir");
        let mut text = String::new();
        for (me, peer) in [("a", "b"), ("b", "a")] {
            text.push_str(&format!(
                "[[plugins.providers]]\nid = \"{me}\"\nname = \"Provider {me}\"\n\
                 command = \"python3\"\nargs = [{}, \"{me}\", \"{peer}\", {}]\ntimeout_secs = 60\n",
                toml_str(script.to_str().expect("UTF-8 path")),
                toml_str(meeting.to_str().expect("UTF-8 path")),
            ));
        }
        let path = self.path("runner.toml");
        std::fs::write(&path, text).expect("write config");
        path
    }
}

/// A `tools/call` of plugin_tool with `arguments`, as a JSON-RPC request with `id`.
pub fn tool_request(id: Value, arguments: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
           "params":{"name":"plugin_tool","arguments":arguments}})
}
