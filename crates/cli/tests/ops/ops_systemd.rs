//! `serve` under systemd's protocols, with the real binary: the readiness notification
//! (`NOTIFY_SOCKET`: `READY=1` once listening with providers started, `STOPPING=1` on SIGTERM)
//! and socket activation (`LISTEN_FDS`/`LISTEN_PID`: the listener is descriptor 3 and `--listen`
//! may be omitted). The test plays the service manager: it binds the sockets itself.
#![cfg(unix)]

use crate::common;
use crate::ops_support;
use crate::tempdir;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use ops_support::{files, s, LIMIT, TOKEN};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");

/// A datagram socket bound at `dir/notify.sock`, reads bounded by [`LIMIT`].
fn notify_socket(dir: &TempDir) -> (UnixDatagram, std::path::PathBuf) {
    let path = dir.path("notify.sock");
    let socket = UnixDatagram::bind(&path).expect("bind the notify socket");
    socket.set_read_timeout(Some(LIMIT)).unwrap();
    (socket, path)
}

fn recv(socket: &UnixDatagram) -> String {
    let mut buf = [0u8; 256];
    let n = socket
        .recv(&mut buf)
        .expect("a notification within the limit");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// The first stdout line of `serve` and the address in it.
fn listening_line(child: &mut std::process::Child) -> SocketAddr {
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let _ = tx.send(line.unwrap_or_default());
        }
    });
    let line = rx.recv_timeout(LIMIT).expect("serve printed its address");
    line.strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected line {line:?}"))
        .parse()
        .expect("an address")
}

fn list_status(addr: SocketAddr) -> u16 {
    let body =
        json!({"tool": "plugin_tool", "params": {"action": "list", "runner": "local"}}).to_string();
    let raw = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    ops_support::exchange(addr, raw.as_bytes()).status
}

#[test]
fn notify_socket_hears_ready_once_listening_then_stopping_on_sigterm() {
    let dir = TempDir::new("ops", "notify");
    let (config, tokens) = files(&dir, false);
    let (socket, path) = notify_socket(&dir);
    let mut child = common::cli_command(BIN)
        .args([
            "serve",
            "--config",
            s(&config),
            "--listen",
            "127.0.0.1:0",
            "--tokens",
            s(&tokens),
        ])
        .env("NOTIFY_SOCKET", &path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let guard = KillOnDrop(child.id());
    let addr = listening_line(&mut child);
    assert_eq!(recv(&socket), "READY=1");
    // READY=1 came after the listener was bound and the providers started: a request is served.
    assert_eq!(list_status(addr), 200);
    assert!(common::request_stop(child.id()));
    assert_eq!(recv(&socket), "STOPPING=1");
    let status = common::wait_bounded(&mut child, LIMIT);
    assert_eq!(status.code(), Some(0));
    std::mem::forget(guard);
}

/// Spawns `serve` with `socket` as descriptor 3, `LISTEN_FDS=1` and `LISTEN_PID` set to the
/// child's own pid (known only after fork: a shell sets it and execs the binary).
fn activated(socket: RawFd, args: &[&str]) -> Command {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(r#"LISTEN_PID=$$ exec "$0" "$@""#)
        .arg(BIN)
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("NOTIFY_SOCKET")
        .env("LISTEN_FDS", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: dup2(2) and fcntl(2) only, both async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(socket, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let flags = libc::fcntl(3, libc::F_GETFD);
            libc::fcntl(3, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
            Ok(())
        });
    }
    cmd
}

#[test]
fn an_inherited_listener_serves_requests_without_listen() {
    let dir = TempDir::new("ops", "activation");
    let (config, tokens) = files(&dir, false);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut child = activated(
        listener.as_raw_fd(),
        &["serve", "--config", s(&config), "--tokens", s(&tokens)],
    )
    .spawn()
    .expect("spawn serve");
    let guard = KillOnDrop(child.id());
    assert_eq!(listening_line(&mut child), addr);
    assert_eq!(list_status(addr), 200);
    assert_eq!(list_status(addr), 200);
    assert!(common::request_stop(child.id()));
    let status = common::wait_bounded(&mut child, LIMIT);
    assert_eq!(status.code(), Some(0));
    std::mem::forget(guard);
    // The service manager's socket outlives the service: still listening for the next start.
    let pending = TcpStream::connect_timeout(&addr, Duration::from_secs(5));
    assert!(
        pending.is_ok(),
        "the inherited socket was shut down: {pending:?}"
    );
    listener.set_nonblocking(true).unwrap();
    let accepted = (0..500).find_map(|_| {
        std::thread::sleep(Duration::from_millis(10));
        listener.accept().ok()
    });
    assert!(accepted.is_some(), "the inherited socket no longer accepts");
}

#[test]
fn an_inherited_socket_that_is_not_a_tcp_listener_is_refused() {
    let dir = TempDir::new("ops", "badfd");
    let (config, tokens) = files(&dir, false);
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let run = common::run_to_end(
        activated(
            udp.as_raw_fd(),
            &["serve", "--config", s(&config), "--tokens", s(&tokens)],
        ),
        LIMIT,
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("not a TCP stream socket"),
        "{}",
        run.stderr
    );
    // A connected (not listening) TCP socket.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let connected = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let run = common::run_to_end(
        activated(
            connected.as_raw_fd(),
            &["serve", "--config", s(&config), "--tokens", s(&tokens)],
        ),
        LIMIT,
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("does not listen"), "{}", run.stderr);
}

#[test]
fn without_activation_listen_is_required() {
    let dir = TempDir::new("ops", "nolisten");
    let (config, tokens) = files(&dir, false);
    // LISTEN_PID names another process: the variables are not for this one.
    let mut cmd = common::cli_command(BIN);
    cmd.args(["serve", "--config", s(&config), "--tokens", s(&tokens)])
        .env("LISTEN_FDS", "1")
        .env("LISTEN_PID", "1");
    let run = common::run_to_end(cmd, LIMIT);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("serve needs --listen ADDR"),
        "{}",
        run.stderr
    );
}

struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // SAFETY: kill(2) on this test's own child, which is not yet reaped when this runs.
        unsafe {
            libc::kill(self.0 as i32, libc::SIGKILL);
        }
    }
}
