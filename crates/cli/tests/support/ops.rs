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

/// Waits (bounded by [`LIMIT`]) until the plugins' log file `log` holds `needle`; `what` names
/// the failure ("the call never reached the plugin").
pub fn wait_for_logged(log: &Path, needle: &str, what: &str) {
    let deadline = std::time::Instant::now() + LIMIT;
    while !std::fs::read_to_string(log)
        .unwrap_or_default()
        .contains(needle)
    {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

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
        let response = exchange(self.addr, tool_request(&params).as_bytes());
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

/// The raw `POST /api/tools/call` of one `plugin_tool` request with [`TOKEN`]
/// (`Connection: close`).
pub fn tool_request(params: &Value) -> String {
    let body = json!({"tool": "plugin_tool", "params": params}).to_string();
    format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
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

/// A running `serve` whose stderr lines a test can wait for while it runs (the operations
/// tests that act on a log line: a reload's outcome, a request's trace id). Killed and reaped
/// on drop.
pub struct LoggedServe {
    child: Child,
    /// The serving address.
    pub addr: SocketAddr,
    lines: mpsc::Receiver<String>,
    /// Every stderr line received so far.
    seen: Vec<String>,
}

impl LoggedServe {
    /// Spawns `command` (a `serve` listening on `127.0.0.1:0`) with stdin closed and waits
    /// (bounded) for its address.
    pub fn start(mut command: Command) -> LoggedServe {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serve");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                if tx.send(line.unwrap_or_default()).is_err() {
                    break;
                }
            }
        });
        let (addr_tx, addr_rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let _ = addr_tx.send(line.unwrap_or_default());
            }
        });
        let line = match addr_rx.recv_timeout(LIMIT) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let rest: Vec<String> = rx.try_iter().collect();
                panic!("serve printed no address; stderr: {rest:?}");
            }
        };
        let addr = line
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("unexpected line {line:?}"))
            .parse()
            .expect("a socket address");
        LoggedServe {
            child,
            addr,
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// The process id of `serve`.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (bounded by [`LIMIT`]) for a stderr line, not seen by an earlier wait, for which
    /// `wanted` holds; returns it. Earlier lines stay in [`LoggedServe::seen`].
    pub fn wait_for_line(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + LIMIT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if wanted(&line) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no log line {what} within {LIMIT:?}; seen: {:#?}",
                    self.seen
                ),
            }
        }
    }

    /// Every stderr line received so far.
    pub fn seen(&self) -> &[String] {
        &self.seen
    }

    /// True while the process has not exited.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// One `plugin_tool` request on the serving port with `token` and extra header lines
    /// (each `Name: value\r\n`): status and JSON body.
    pub fn tool_with(&self, token: &str, headers: &str, params: Value) -> (u16, Value) {
        let body = json!({"tool": "plugin_tool", "params": params}).to_string();
        let raw = format!(
            "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n{headers}\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let response = exchange(self.addr, raw.as_bytes());
        (response.status, response.json())
    }

    /// SIGTERM and a bounded wait: the exit status and every remaining stderr line.
    pub fn stop(mut self) -> (ExitStatus, Vec<String>) {
        assert!(common::request_stop(self.child.id()), "SIGTERM failed");
        let status = common::wait_bounded(&mut self.child, LIMIT);
        let mut lines = std::mem::take(&mut self.seen);
        // The writer is gone with the process: the channel ends.
        while let Ok(line) = self.lines.recv_timeout(LIMIT) {
            lines.push(line);
        }
        (status, lines)
    }
}

impl Drop for LoggedServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("serve stderr so far:\n{}", self.seen.join("\n"));
        }
    }
}

/// Sends SIGHUP to `pid` (a child of this test). True when the signal was sent.
#[cfg(unix)]
pub fn hang_up(pid: u32) -> bool {
    // SAFETY: kill(2) on the pid of a child the caller spawned and has not reaped.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGHUP) == 0 }
}

/// A TCP connection to `to` from the loopback address `from` (any of 127.0.0.0/8 on Linux), so
/// that one test can be many peers.
#[cfg(target_os = "linux")]
pub fn connect_from(from: std::net::Ipv4Addr, to: SocketAddr) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    socket.bind(&SocketAddr::new(from.into(), 0).into())?;
    socket.connect_timeout(&to.into(), Duration::from_secs(2))?;
    Ok(socket.into())
}

/// True while `stream` is open and nothing arrived on it (the server neither answered nor
/// closed it).
pub fn idle_and_open(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let mut byte = [0u8; 1];
    let open =
        matches!(stream.peek(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    let _ = stream.set_nonblocking(false);
    open
}

/// Idle connections held open against a server from many loopback peers: each peer keeps
/// `per_peer` connections that never send a byte, and a connection the server closes (or
/// answers) is replaced, so the flood lasts until [`Flood::stop`].
#[cfg(target_os = "linux")]
pub struct Flood {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Connections opened so far (replacements included).
    pub opened: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Connections held open at the end of the last round.
    pub holding: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    driver: Option<JoinHandle<()>>,
}

#[cfg(target_os = "linux")]
impl Flood {
    /// Starts the flood on `to` from `peers` with `per_peer` connections each.
    pub fn start(to: SocketAddr, peers: Vec<std::net::Ipv4Addr>, per_peer: usize) -> Flood {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::sync::Arc;
        let stop = Arc::new(AtomicBool::new(false));
        let opened = Arc::new(AtomicUsize::new(0));
        let holding = Arc::new(AtomicUsize::new(0));
        let (stop_flag, opened_count, holding_count) =
            (stop.clone(), opened.clone(), holding.clone());
        let driver = std::thread::spawn(move || {
            let mut held: Vec<(std::net::Ipv4Addr, Option<TcpStream>)> = peers
                .iter()
                .flat_map(|peer| std::iter::repeat_n(*peer, per_peer))
                .map(|peer| (peer, None))
                .collect();
            while !stop_flag.load(Ordering::SeqCst) {
                for (peer, stream) in held.iter_mut() {
                    if stream.as_ref().is_some_and(idle_and_open) {
                        continue;
                    }
                    *stream = connect_from(*peer, to).ok();
                    if stream.is_some() {
                        opened_count.fetch_add(1, Ordering::SeqCst);
                    }
                }
                let open = held.iter().filter(|(_, s)| s.is_some()).count();
                holding_count.store(open, Ordering::SeqCst);
                // Load, not a synchronisation: the next round replaces what the server closed.
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Flood {
            stop,
            opened,
            holding,
            driver: Some(driver),
        }
    }

    /// Ends the flood and closes its connections.
    pub fn stop(mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(driver) = self.driver.take() {
            driver.join().expect("the flood's driver");
        }
    }
}

#[cfg(target_os = "linux")]
impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
