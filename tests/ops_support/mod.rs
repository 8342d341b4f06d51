//! `serve` with an admin listener, run by the operations tests: started from a command line
//! that listens on `127.0.0.1:0` twice, both addresses read from its stdout
//! (`listening on http://ADDR`, then `admin listening on http://ADDR`); plain HTTP/1.1 GETs and
//! POSTs over loopback.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

use super::common;
use super::tempdir::TempDir;

/// The longest a process may take to start or stop, or one exchange may last (a hang, never a
/// timing).
pub const LIMIT: Duration = Duration::from_secs(30);
/// A token with every scope, in the tokens file of [`files`].
pub const TOKEN: &str = common::serve::TOKEN_ALL;

pub fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// runner.toml with the fixture provider `fx` (mode `normal`) and, when `dead` is set, a
/// provider `dead` whose command exits at once (it fails admission); and tokens.toml.
pub fn files(dir: &TempDir, dead: bool) -> (PathBuf, PathBuf) {
    let fixture = serde_json::to_string(s(&common::fixture_path())).unwrap();
    let mut text = format!(
        "[plugins]\nrequest_timeout_secs = 20\n\n[[plugins.providers]]\nid = \"fx\"\n\
         name = \"Fixture\"\ncommand = {fixture}\nargs = [\"normal\"]\n"
    );
    if dead {
        text.push_str(&format!(
            "\n[[plugins.providers]]\nid = \"dead\"\nname = \"Dead\"\ncommand = {fixture}\n\
             args = [\"exit-at-start\"]\n"
        ));
    }
    let config = dir.write("runner.toml", &text);
    (config, common::serve::write_tokens_file(dir))
}

/// A running `serve` with an admin listener; killed and reaped on drop.
pub struct AdminServe {
    child: Child,
    /// The serving address.
    pub addr: SocketAddr,
    /// The admin address.
    pub admin: SocketAddr,
    stderr: Option<JoinHandle<String>>,
    stdout: Option<JoinHandle<()>>,
}

impl AdminServe {
    /// Spawns `command` with stdin closed and waits (bounded) for both addresses.
    pub fn start(mut command: Command) -> AdminServe {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serve");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = common::read_all(child.stderr.take().expect("stderr"));
        let (tx, rx) = mpsc::channel();
        let stdout = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let _ = tx.send(line.unwrap_or_default());
            }
        });
        let mut next = |prefix: &str| -> SocketAddr {
            let line = match rx.recv_timeout(LIMIT) {
                Ok(line) => line,
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("serve printed no `{prefix}` line");
                }
            };
            line.strip_prefix(prefix)
                .unwrap_or_else(|| panic!("unexpected line {line:?}"))
                .parse()
                .expect("a socket address")
        };
        let addr = next("listening on http://");
        let admin = next("admin listening on http://");
        AdminServe {
            child,
            addr,
            admin,
            stderr: Some(stderr),
            stdout: Some(stdout),
        }
    }

    /// The process id of `serve`.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `GET path` on the admin port: status and body.
    pub fn admin_get(&self, path: &str) -> (u16, String) {
        get(self.admin, path)
    }

    /// One `plugin_tool` request on the serving port with [`TOKEN`].
    pub fn tool(&self, params: Value) -> (u16, Value) {
        let body = json!({"tool": "plugin_tool", "params": params}).to_string();
        let raw = format!(
            "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let response = exchange(self.addr, raw.as_bytes());
        (response.status, response.json())
    }

    /// Describes `fx`'s `echo` and calls it `n` times (each must succeed).
    pub fn call_echo(&self, n: usize) {
        let (status, described) = self
            .tool(json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "echo"}));
        assert_eq!(status, 200, "{described}");
        let binding = described["output"]["binding"].clone();
        for i in 0..n {
            let (status, called) = self.tool(json!({
                "action": "call", "binding": binding, "arguments": {"text": format!("hi {i}")}
            }));
            assert_eq!(status, 200, "{called}");
        }
    }

    /// SIGTERM and a bounded wait: the exit status, stdout's remaining lines drained, stderr.
    pub fn stop(self) -> (ExitStatus, String) {
        assert!(common::request_stop(self.child.id()), "SIGTERM failed");
        self.stop_after_signal()
    }

    /// [`AdminServe::stop`] when the test already sent the signal.
    pub fn stop_after_signal(mut self) -> (ExitStatus, String) {
        let status = common::wait_bounded(&mut self.child, LIMIT);
        if let Some(stdout) = self.stdout.take() {
            let _ = stdout.join();
        }
        let stderr = self
            .stderr
            .take()
            .map(|r| r.join().expect("stderr reader"))
            .unwrap_or_default();
        (status, stderr)
    }
}

impl Drop for AdminServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            if let Some(Ok(stderr)) = self.stderr.take().map(JoinHandle::join) {
                eprintln!("serve stderr:\n{stderr}");
            }
        }
    }
}

/// `GET path` with `Connection: close`: status and body as text.
pub fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let raw = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let response = exchange(addr, raw.as_bytes());
    (response.status, response.text())
}

/// Writes `raw` and reads the response to EOF.
pub fn exchange(addr: SocketAddr, raw: &[u8]) -> common::http::RawResponse {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    stream.write_all(raw).expect("write the request");
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).expect("read the response");
    common::http::parse_response(&bytes)
}

/// The value of the sample `name{labels}` (labels exactly as exposed) in an exposition.
pub fn sample(exposition: &str, series: &str) -> Option<f64> {
    exposition.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?;
        rest.strip_prefix(' ')?.trim().parse().ok()
    })
}
