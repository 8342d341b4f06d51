//! A scripted runner for the client's exchange tests: it answers `describe` of `fx`/`echo`,
//! `call` (a text result), and anything else (`list`, `reload`) with a canned success, framed
//! and ended as its [`Mode`] says, and records every request it reads with the connection it
//! came on. Plain TCP or TLS; each connection runs on a detached thread of the test process,
//! bound to 127.0.0.1.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::common;

/// How long a connection waits for a request (a hang, never a timing).
const LIMIT: Duration = Duration::from_secs(30);

/// How the runner frames and ends its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `Content-Length`, the connection kept.
    KeepAlive,
    /// Chunked in several chunks, with a trailer; the connection kept.
    Chunked,
    /// `Connection: close`, then the runner closes.
    SaysClose,
    /// No length: the body ends when the runner closes.
    UntilClose,
    /// A `100 Continue` before each answer; the connection kept.
    Continue,
    /// Not HTTP (an SSH banner), then the close.
    Garbage,
    /// A head of more than 64 KiB.
    HugeHead,
    /// A `Content-Length` body of 1 MiB and one byte.
    HugeBody,
    /// A chunked body of more than 1 MiB.
    HugeChunked,
    /// A `103 Early Hints` and a `102 Processing` before each answer (interim answers, skipped);
    /// the connection kept.
    EarlyHints,
    /// A `101 Switching Protocols` nobody asked for, then an answer.
    Switching,
}

impl Mode {
    /// Whether the mode spoils answers (then `describe` is still answered well, so a front
    /// can bind the tool).
    fn spoils(self) -> bool {
        matches!(
            self,
            Mode::Garbage | Mode::HugeHead | Mode::HugeBody | Mode::HugeChunked | Mode::Switching
        )
    }
}

/// One request the runner read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The connection it came on, numbered from 0 in the order they were accepted.
    pub conn: usize,
    /// Its `params.action`.
    pub action: String,
}

/// A scripted runner.
pub struct ScriptedRunner {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl ScriptedRunner {
    /// A runner over plain TCP.
    pub fn start(mode: Mode) -> ScriptedRunner {
        ScriptedRunner::start_with(mode, None)
    }

    /// A runner over TLS with `config`.
    pub fn start_tls(mode: Mode, config: Arc<rustls::ServerConfig>) -> ScriptedRunner {
        ScriptedRunner::start_with(mode, Some(config))
    }

    fn start_with(mode: Mode, tls: Option<Arc<rustls::ServerConfig>>) -> ScriptedRunner {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        std::thread::spawn(move || {
            for (conn, stream) in listener.incoming().enumerate() {
                let Ok(tcp) = stream else { continue };
                tcp.set_read_timeout(Some(LIMIT)).unwrap();
                let record = Arc::clone(&record);
                let tls = tls.clone();
                std::thread::spawn(move || match tls {
                    None => {
                        let closer = tcp.try_clone().unwrap();
                        serve(tcp, conn, mode, &record);
                        let _ = closer.shutdown(Shutdown::Both);
                    }
                    Some(config) => {
                        let session = rustls::ServerConnection::new(config).unwrap();
                        let closer = tcp.try_clone().unwrap();
                        serve(rustls::StreamOwned::new(session, tcp), conn, mode, &record);
                        let _ = closer.shutdown(Shutdown::Both);
                    }
                });
            }
        });
        ScriptedRunner { addr, seen }
    }

    /// Its URL with `scheme` (`http` or `https`).
    pub fn url_with(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }

    pub fn url(&self) -> String {
        self.url_with("http")
    }

    /// Every request read so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The actions of [`ScriptedRunner::seen`].
    pub fn actions(&self) -> Vec<String> {
        self.seen().into_iter().map(|s| s.action).collect()
    }

    /// How many connections carried requests.
    pub fn connections(&self) -> usize {
        let mut conns: Vec<usize> = self.seen().into_iter().map(|s| s.conn).collect();
        conns.dedup();
        conns.len()
    }
}

/// Answers the requests of one connection until the client closes it or the mode ends it
/// (the caller then closes the socket).
fn serve(mut stream: impl Read + Write, conn: usize, mode: Mode, seen: &Mutex<Vec<Seen>>) {
    loop {
        let request = common::http::read_request(&mut stream);
        if !common::http::request_complete(request.as_bytes()) {
            return;
        }
        let body = request.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        let params = serde_json::from_str::<Value>(body).unwrap_or_default()["params"].clone();
        let action = params["action"].as_str().unwrap_or("?").to_string();
        seen.lock().unwrap().push(Seen {
            conn,
            action: action.clone(),
        });
        let mode = if action == "describe" && mode.spoils() {
            Mode::KeepAlive
        } else {
            mode
        };
        let (answer, keep) = answer(mode, &output(&action));
        if stream.write_all(&answer).is_err() || stream.flush().is_err() || !keep {
            return;
        }
    }
}

/// The success body of an `action`.
fn output(action: &str) -> Vec<u8> {
    let output = match action {
        "describe" => json!({
            "binding": "wc_pbind_klBFXeoLlSNUioRIQKmULA",
            "plugin": "fx",
            "pluginName": "Fixture",
            "runner": "local",
            "tool": {
                "name": "echo",
                "description": "Returns the text.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            },
        }),
        "call" => json!({"content": [{"type": "text", "text": "fine"}]}),
        _ => json!({"providers": [], "marker": "canned"}),
    };
    json!({"success": true, "output": output})
        .to_string()
        .into_bytes()
}

/// The bytes of an answer with `body` as `mode` frames it, and whether the connection stays.
fn answer(mode: Mode, body: &[u8]) -> (Vec<u8>, bool) {
    const HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                        Webcodex-Runner-Instance: scripted-runner\r\n";
    let sized = |extra: &str| {
        let mut out = format!("{HEAD}{extra}Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        out.extend_from_slice(body);
        out
    };
    match mode {
        Mode::KeepAlive => (sized(""), true),
        Mode::Continue => {
            let mut out = b"HTTP/1.1 100 Continue\r\n\r\n".to_vec();
            out.extend(sized(""));
            (out, true)
        }
        Mode::EarlyHints => {
            let mut out = b"HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n\
                HTTP/1.1 102 Processing\r\n\r\n"
                .to_vec();
            out.extend(sized(""));
            (out, true)
        }
        Mode::Switching => {
            let mut out =
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n"
                    .to_vec();
            out.extend(sized(""));
            (out, false)
        }
        Mode::SaysClose => (sized("Connection: close\r\n"), false),
        Mode::UntilClose => {
            let mut out = format!("{HEAD}Connection: close\r\n\r\n").into_bytes();
            out.extend_from_slice(body);
            (out, false)
        }
        Mode::Chunked => {
            let mut out = format!("{HEAD}Transfer-Encoding: chunked\r\n\r\n").into_bytes();
            for piece in body.chunks(body.len().div_ceil(3).max(1)) {
                out.extend(format!("{:x};piece\r\n", piece.len()).into_bytes());
                out.extend_from_slice(piece);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\nX-Trailer: done\r\n\r\n");
            (out, true)
        }
        Mode::Garbage => (b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec(), false),
        Mode::HugeHead => {
            let field = format!("X-Filler: {}\r\n", "y".repeat(1000));
            let extra = field.repeat(70);
            (sized(&extra), true)
        }
        Mode::HugeBody => {
            let mut out = format!("{HEAD}Content-Length: {}\r\n\r\n", (1 << 20) + 1).into_bytes();
            out.resize(out.len() + (1 << 20) + 1, b' ');
            (out, true)
        }
        Mode::HugeChunked => {
            let mut out = format!("{HEAD}Transfer-Encoding: chunked\r\n\r\n").into_bytes();
            let piece = vec![b' '; 64 * 1024];
            for _ in 0..17 {
                out.extend(format!("{:x}\r\n", piece.len()).into_bytes());
                out.extend_from_slice(&piece);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\n\r\n");
            (out, true)
        }
    }
}
