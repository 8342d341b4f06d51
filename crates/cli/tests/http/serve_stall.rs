//! Stalled HTTP clients against a real `webcodex-plugin serve` (fixture plugin, loopback only):
//! a client that stops mid-head, mid-body, trickles its head, or idles on a keep-alive
//! connection holds no connection thread or in-flight slot beyond the server's deadlines
//! (10 s per request, 5 s keep-alive idle; see README, `serve`), and never delays anyone else.
//!
//! Only generous "does not hang" bounds are asserted: [`CLOSED_WITHIN`] for the server to close
//! a stalled connection, and [`PROMPT`] (below the 10 s request deadline, so a server that
//! waited for the stalls to end could not pass) for answers that must not wait for them.

use crate::common;
use crate::tempdir;

use common::serve::ServeProcess;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tempdir::TempDir;

use serde_json::{json, Value};
use webcodex_plugin_http::{MAX_CONNECTIONS, REQUEST_DEADLINE};

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest any one process start or stop may take (a hang, never a timing).
const LIMIT: Duration = Duration::from_secs(30);
/// A stalled connection is closed by the server within this bound (the limits are 10 s).
const CLOSED_WITHIN: Duration = Duration::from_secs(25);
/// Answers that must not wait for stalled clients come within this bound: generous for a
/// request that takes milliseconds, and below the 10 s after which the stalls are cut off.
const PROMPT: Duration = Duration::from_secs(8);

const ALL: &str = "all-scopes-token-0123456789";

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// A running `serve` with one fixture provider; killed on drop if the test did not stop it.
struct Server {
    serve: ServeProcess,
    addr: SocketAddr,
    pids: PathBuf,
    _dir: TempDir,
}

impl Server {
    fn start(label: &str) -> Server {
        let dir = TempDir::new("stall", label);
        let fixture = common::fixture_path();
        // The canary rides in the plugin's args, cwd, environment and stderr.
        let canary = canary_text();
        let config = dir.write(
            "runner.toml",
            &format!(
                "[[plugins.providers]]\nid = \"fx\"\nname = \"Fixture\"\ncommand = {}\n\
                 args = [\"normal\", \"{canary}\"]\ncwd = {}\n",
                serde_json::to_string(s(&fixture)).unwrap(),
                serde_json::to_string(s(&dir)).unwrap()
            ),
        );
        let tokens = dir.write(
            "tokens.toml",
            &format!(
                "[[tokens]]\nname = \"all\"\ntoken = \"{ALL}\"\n\
                 scopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\"]\n"
            ),
        );
        let pids = dir.join("pids");
        let mut cmd = common::cli_command(BIN);
        cmd.args(["serve", "--config", s(&config), "--tokens", s(&tokens)])
            .args(["--listen", "127.0.0.1:0"])
            .env("FIXTURE_PIDS", &pids)
            .env("FIXTURE_STDERR", format!("stderr says {canary}"))
            .env("CANARY_SECRET", &canary);
        let serve = ServeProcess::start(cmd);
        Server {
            addr: serve.addr,
            serve,
            pids,
            _dir: dir,
        }
    }

    /// The number of threads of `serve` serving a connection.
    fn connection_threads(&self) -> usize {
        let tasks = format!("/proc/{}/task", self.serve.pid());
        let Ok(entries) = std::fs::read_dir(tasks) else {
            return 0;
        };
        entries
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.trim() == "wc-http-conn")
            .count()
    }

    /// Waits (bounded) until `ready(connection threads)` holds.
    fn wait_threads(&self, what: &str, ready: impl Fn(usize) -> bool) {
        let deadline = Instant::now() + CLOSED_WITHIN;
        loop {
            let n = self.connection_threads();
            if ready(n) {
                return;
            }
            assert!(Instant::now() < deadline, "{what}: {n} connection threads");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, a bounded wait for exit 0 within `within`, and every fixture process gone.
    fn stop_within(self, within: Duration) {
        self.serve.stop_within(within);
        let recorded = common::recorded_pids(&self.pids);
        assert!(!recorded.is_empty(), "no fixture process was recorded");
        common::assert_all_gone(&recorded, "fixture process");
        common::assert_no_zombie_children_of_self();
    }

    /// After a stall: every plugin `serve` started still runs as its child, and `serve` has
    /// no zombie child.
    fn assert_children_healthy(&self) {
        let serve = self.serve.pid();
        let table = common::proc_table();
        let zombies: Vec<_> = table
            .iter()
            .filter(|p| p.ppid == serve && p.state == 'Z')
            .collect();
        assert!(zombies.is_empty(), "zombie children of serve: {zombies:?}");
        for pid in common::recorded_plugin_pids(&self.pids) {
            let entry = common::proc_entry(pid);
            assert!(
                matches!(entry, Some(p) if p.ppid == serve && p.state != 'Z'),
                "plugin {pid}: {entry:?}"
            );
        }
    }

    fn stop(self) {
        self.stop_within(LIMIT);
    }
}

/// The canary of this test process: placed in every plugin's args, env and stderr.
fn canary_text() -> String {
    format!("wcSTALLCANARY{}", std::process::id())
}

/// Asserts that a response (head and body, as received) leaks neither the canary, nor the
/// plugin's command, nor a test directory (the plugin's cwd).
fn assert_no_leak(what: &str, received: &[u8]) {
    let canary = common::Canary::new([
        canary_text(),
        common::fixture_path().display().to_string(),
        "fixture_plugin".to_string(),
        std::env::temp_dir().join("wc-stall-").display().to_string(),
    ]);
    canary.assert_absent(what, &String::from_utf8_lossy(received));
}

/// A `list` request; `close` asks the server to close the connection after answering.
fn list_request(close: bool) -> String {
    let body = json!({"tool": "plugin_tool", "params": {"action": "list", "runner": "local"}});
    let body = body.to_string();
    let connection = if close { "Connection: close\r\n" } else { "" };
    format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ALL}\r\n\
         Content-Type: application/json\r\n{connection}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Reads one response (head and `Content-Length` body) from `stream`; status and body.
fn read_response(stream: &mut TcpStream) -> (u16, Value) {
    let mut bytes = Vec::new();
    let mut byte = [0u8; 1];
    while !bytes.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).expect("a response head");
        bytes.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&bytes).to_ascii_lowercase();
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).expect("a response body");
    assert_no_leak("a response head", &bytes);
    assert_no_leak("a response body", &body);
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// One request on a fresh connection, answered within `within`.
fn exchange(addr: SocketAddr, raw: &str, within: Duration) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(within)).unwrap();
    stream.write_all(raw.as_bytes()).expect("send a request");
    read_response(&mut stream)
}

/// Waits (at most [`CLOSED_WITHIN`] from `since`) for the server to close `stream`; returns
/// what it sent before closing. A reset counts as closed.
fn closed_by_server(stream: &mut TcpStream, since: Instant) -> Vec<u8> {
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = CLOSED_WITHIN.saturating_sub(since.elapsed());
        assert!(!left.is_zero(), "the server kept a stalled connection open");
        stream.set_read_timeout(Some(left)).unwrap();
        let done = match stream.read(&mut buf) {
            Ok(0) => true,
            Ok(n) => {
                received.extend_from_slice(&buf[..n]);
                false
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => true,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!("the server kept a stalled connection open for {CLOSED_WITHIN:?}")
            }
            Err(e) => panic!("reading a stalled connection: {e}"),
        };
        if done {
            // The server's last words (408, 431, 501, 400, 503, or nothing) leak nothing.
            assert_no_leak("the answer before a close", &received);
            return received;
        }
    }
}

/// The status of the response in `bytes`, if there is one.
fn status_of(bytes: &[u8]) -> Option<u16> {
    String::from_utf8_lossy(bytes)
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with SIGTERM and reads /proc; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn eighty_connections_stalled_mid_header_delay_no_one_and_are_closed() {
    assert!(REQUEST_DEADLINE < CLOSED_WITHIN && PROMPT < REQUEST_DEADLINE);
    let server = Server::start("header");
    let opened = Instant::now();
    let mut stalled: Vec<TcpStream> = (0..80)
        .map(|i| {
            let mut stream = TcpStream::connect(server.addr).expect("connect");
            let partial = match i % 3 {
                0 => "POST /api/tools/ca".to_string(),
                1 => "POST /api/tools/call HTTP/1.1\r\nHost: x\r\n".to_string(),
                _ => {
                    format!("POST /api/tools/call HTTP/1.1\r\nAuthorization: Bearer {ALL}\r\nCont")
                }
            };
            stream
                .write_all(partial.as_bytes())
                .expect("send a partial head");
            stream
        })
        .collect();
    // Every stalled connection is being served (each by a thread of its own).
    server.wait_threads("80 stalled connections", |n| n >= 80);
    let (status, body) = exchange(server.addr, &list_request(true), PROMPT);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], json!(true));
    // The server closes each stalled connection on its own (408 for a head that never ended).
    for stream in &mut stalled {
        let sent = closed_by_server(stream, opened);
        assert!(matches!(status_of(&sent), None | Some(408)), "{sent:?}");
    }
    // ...and holds no thread for them, while the clients are still connected.
    server.wait_threads("threads released", |n| n == 0);
    server.assert_children_healthy();
    let (status, _) = exchange(server.addr, &list_request(true), LIMIT);
    assert_eq!(status, 200);
    drop(stalled);
    server.stop();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with SIGTERM and reads /proc; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn a_head_trickled_byte_by_byte_is_cut_off_at_the_request_deadline() {
    let server = Server::start("trickle");
    let opened = Instant::now();
    let stream = TcpStream::connect(server.addr).expect("connect");
    let mut writer = stream.try_clone().unwrap();
    // One byte every 200 ms: each read makes progress, so only a whole-head deadline stops it.
    let trickle = std::thread::spawn(move || {
        let mut sent = 0usize;
        let header = b"POST /api/tools/call HTTP/1.1\r\nX-Slow: ";
        while opened.elapsed() < CLOSED_WITHIN + Duration::from_secs(2) {
            let byte = header.get(sent).copied().unwrap_or(b'a');
            if writer.write_all(&[byte]).is_err() {
                return sent;
            }
            sent += 1;
            std::thread::sleep(Duration::from_millis(200));
        }
        sent
    });
    let mut reader = stream;
    let sent = closed_by_server(&mut reader, opened);
    assert!(matches!(status_of(&sent), None | Some(408)), "{sent:?}");
    let _ = reader.shutdown(Shutdown::Both);
    let trickled = trickle.join().unwrap();
    assert!(trickled > 5, "the client trickled only {trickled} bytes");
    server.wait_threads("thread released", |n| n == 0);
    server.assert_children_healthy();
    server.stop();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with SIGTERM and reads /proc; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn a_body_that_stops_coming_frees_its_slot_and_its_connection() {
    let server = Server::start("body");
    let opened = Instant::now();
    // Every in-flight slot is held by a request whose declared body stops after 10 bytes.
    let head = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ALL}\r\n\
         Content-Length: 1000\r\n\r\n{{\"tool\":\"p"
    );
    let mut held: Vec<TcpStream> = (0..64)
        .map(|_| {
            let mut stream = TcpStream::connect(server.addr).expect("connect");
            stream
                .write_all(head.as_bytes())
                .expect("send a partial body");
            stream
        })
        .collect();
    // Every held request is read and in its slot before the first probe: a probe that took a
    // slot first would turn a held request away (503), and saturation could never be seen
    // (this raced once under CI load).
    server.wait_threads("held connections", |n| n >= 64);
    std::thread::sleep(Duration::from_millis(500));
    // They do hold the slots: a request finds none free (503, not started) ...
    let saturated = loop {
        assert!(
            opened.elapsed() < PROMPT,
            "the slow bodies never held the slots"
        );
        match exchange(server.addr, &list_request(true), PROMPT) {
            (503, body) => break body,
            (status, body) => assert_eq!(status, 200, "{body}"),
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        saturated["output"]["error"]["code"],
        json!("gateway_saturated")
    );
    assert_eq!(saturated["output"]["dispatch"], json!("not_started"));
    // ... until the server cuts them off (408) while their clients are still connected.
    for stream in &mut held {
        let sent = closed_by_server(stream, opened);
        // 503: this one lost the race for a slot against a probe above.
        assert!(matches!(status_of(&sent), Some(408 | 503)), "{sent:?}");
    }
    let (status, body) = exchange(server.addr, &list_request(true), LIMIT);
    assert_eq!(status, 200, "{body}");
    server.wait_threads("threads released", |n| n == 0);
    server.assert_children_healthy();
    drop(held);
    server.stop();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with SIGTERM and reads /proc; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn an_idle_keep_alive_connection_is_closed_and_stop_is_prompt() {
    let server = Server::start("idle");
    // Keep-alive works: two requests on one connection ...
    let mut kept = TcpStream::connect(server.addr).expect("connect");
    kept.set_read_timeout(Some(LIMIT)).unwrap();
    for _ in 0..2 {
        kept.write_all(list_request(false).as_bytes()).unwrap();
        let (status, body) = read_response(&mut kept);
        assert_eq!(status, 200, "{body}");
    }
    // ... and an idle one is closed by the server, without a response.
    let idle_since = Instant::now();
    assert!(closed_by_server(&mut kept, idle_since).is_empty());
    // A new connection that never sends a byte is closed the same way.
    let mut silent = TcpStream::connect(server.addr).expect("connect");
    assert!(closed_by_server(&mut silent, Instant::now()).is_empty());
    server.wait_threads("threads released", |n| n == 0);
    server.assert_children_healthy();
    // Stopping does not wait for idle or stalled connections: each is closed at once.
    let mut waiting: Vec<TcpStream> = (0..10)
        .map(|i| {
            let mut stream = TcpStream::connect(server.addr).expect("connect");
            if i % 2 == 0 {
                stream.write_all(list_request(false).as_bytes()).unwrap();
                stream.set_read_timeout(Some(LIMIT)).unwrap();
                assert_eq!(read_response(&mut stream).0, 200);
            } else {
                stream
                    .write_all(b"POST /api/tools/call HTTP/1.1\r\n")
                    .unwrap();
            }
            stream
        })
        .collect();
    server.wait_threads("10 open connections", |n| n == 10);
    let stopping = Instant::now();
    server.stop_within(PROMPT);
    for stream in &mut waiting {
        closed_by_server(stream, stopping);
    }
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with SIGTERM and reads /proc; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn connections_beyond_the_limit_are_refused_with_503() {
    let server = Server::start("cap");
    let mut open: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|_| {
            let mut stream = TcpStream::connect(server.addr).expect("connect");
            stream
                .write_all(b"POST /api/tools/call HTTP/1.1\r\n")
                .unwrap();
            stream
        })
        .collect();
    server.wait_threads("every connection served", |n| n == MAX_CONNECTIONS);
    let opened = Instant::now();
    let mut refused = TcpStream::connect(server.addr).expect("connect");
    let sent = closed_by_server(&mut refused, opened);
    assert_eq!(status_of(&sent), Some(503), "{sent:?}");
    let text = String::from_utf8_lossy(&sent);
    assert!(text.contains("gateway_saturated"), "{text}");
    for stream in &mut open {
        let _ = stream.shutdown(Shutdown::Both);
    }
    drop(open);
    server.wait_threads("threads released", |n| n == 0);
    server.assert_children_healthy();
    let (status, _) = exchange(server.addr, &list_request(true), LIMIT);
    assert_eq!(status, 200);
    server.stop();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with SIGTERM and reads /proc; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn chunked_bodies_continue_pipelining_and_bad_heads() {
    let server = Server::start("framing");
    let connect = || {
        let stream = TcpStream::connect(server.addr).expect("connect");
        stream.set_read_timeout(Some(LIMIT)).unwrap();
        stream
    };
    let body = json!({"tool": "plugin_tool", "params": {"action": "list", "runner": "local"}});
    let body = body.to_string();
    let (first, rest) = body.split_at(10);
    // A chunked body (with an extension and a trailer).
    let mut stream = connect();
    let chunked = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ALL}\r\n\
         Transfer-Encoding: chunked\r\n\r\n{:x};x=y\r\n{first}\r\n{:x}\r\n{rest}\r\n0\r\nT: v\r\n\r\n",
        first.len(),
        rest.len()
    );
    stream.write_all(chunked.as_bytes()).unwrap();
    assert_eq!(read_response(&mut stream).0, 200);
    // Expect: 100-continue, on the same (kept-alive) connection.
    let head = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ALL}\r\n\
         Expect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut interim = [0u8; 25];
    stream.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    stream.write_all(body.as_bytes()).unwrap();
    assert_eq!(read_response(&mut stream).0, 200);
    // Two pipelined requests, answered in order.
    let two = format!("{}{}", list_request(false), list_request(true));
    stream.write_all(two.as_bytes()).unwrap();
    assert_eq!(read_response(&mut stream).0, 200);
    assert_eq!(read_response(&mut stream).0, 200);
    assert!(closed_by_server(&mut stream, Instant::now()).is_empty());
    // Heads the server refuses, each answered and closed.
    let big = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "v".repeat(20 * 1024));
    let gzip = "POST /api/tools/call HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n";
    let both = "POST /api/tools/call HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\
                Content-Length: 3\r\n\r\n";
    for (raw, status) in [
        (big.as_str(), 431),
        (gzip, 501),
        (both, 400),
        ("HELLO\r\n\r\n", 400),
    ] {
        let mut stream = connect();
        stream.write_all(raw.as_bytes()).unwrap();
        let sent = closed_by_server(&mut stream, Instant::now());
        assert_eq!(status_of(&sent), Some(status), "{raw:.40}");
    }
    server.wait_threads("threads released", |n| n == 0);
    server.stop();
}
