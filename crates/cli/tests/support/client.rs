//! Test endpoints for the `--server-url` client: a canned `plugin_tool` server (plain or TLS,
//! with a CA made by rcgen), and a recording HTTP proxy (forward and CONNECT). Each runs one
//! connection at a time on a detached thread bound to 127.0.0.1, which ends with the test process.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::common;

/// How long a test waits for anything.
pub const LIMIT: Duration = Duration::from_secs(30);

/// The body every canned answer carries.
pub const CANNED: &str = r#"{"success":true,"output":{"providers":[],"marker":"canned"}}"#;

/// One finished `webcodex-plugin` run.
pub use super::common::Run;

/// Every variable the client reads from the environment besides the proxy ones
/// ([`common::PROXY_VARIABLES`]), removed from each run's environment.
const CLIENT_VARIABLES: [&str; 2] = ["WEBCODEX_TOKEN", "WEBCODEX_PAT"];

/// Runs the binary with `args` and `env` on top of a cleaned environment, with debug logging.
pub fn run(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_webcodex-plugin"));
    command.args(args).env("RUST_LOG", "debug");
    for name in common::PROXY_VARIABLES.into_iter().chain(CLIENT_VARIABLES) {
        command.env_remove(name);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    common::run_to_end(command, LIMIT)
}

/// A test CA and a server certificate for 127.0.0.1 and localhost signed by it.
pub struct TestPki {
    pub ca_pem: String,
    pub server: Arc<rustls::ServerConfig>,
}

impl TestPki {
    pub fn new() -> TestPki {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "webcodex test CA");
        let ca_key = KeyPair::generate().unwrap();
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let leaf =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".into()]).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf_cert = leaf.signed_by(&leaf_key, &ca_cert, &ca_key).unwrap();
        // The process's default crypto provider (ring, the one the crate features name).
        let server = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf_cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
            )
            .unwrap();
        TestPki {
            ca_pem: ca_cert.pem(),
            server: Arc::new(server),
        }
    }
}

/// What the canned server does with a request it has read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Answers 200 with [`CANNED`].
    Answer,
    /// Closes the connection without a byte of answer.
    Close,
    /// Holds the connection, answering nothing, until the client goes away.
    Hold,
}

/// One connection the canned server accepted.
#[derive(Debug, Clone)]
pub struct Seen {
    pub peer: SocketAddr,
    /// The request read on it (head and body), empty when none was (a failed handshake).
    pub request: String,
}

/// A canned `plugin_tool` server.
pub struct Origin {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Origin {
    /// A server answering as `reply` says, over TLS when `tls` is given.
    pub fn start(reply: Reply, tls: Option<Arc<rustls::ServerConfig>>) -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(tcp) = stream else { continue };
                let peer = tcp.peer_addr().unwrap();
                tcp.set_read_timeout(Some(LIMIT)).unwrap();
                let request = match &tls {
                    None => serve_one(tcp, reply),
                    Some(config) => {
                        let conn = rustls::ServerConnection::new(Arc::clone(config)).unwrap();
                        serve_one(rustls::StreamOwned::new(conn, tcp), reply)
                    }
                };
                record.lock().unwrap().push(Seen { peer, request });
            }
        });
        Origin { addr, seen }
    }

    /// `http://` or `https://` URL of this server.
    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }

    /// Every connection accepted since the last call (the client under test has exited): a
    /// sentinel connection is made and waited for; connections are served one at a time, in
    /// order, so all earlier ones are recorded by then.
    pub fn seen(&self) -> Vec<Seen> {
        sentinel_wait(self.addr, &self.seen)
    }
}

/// Reads one request from `stream` and replies; the request text.
fn serve_one(mut stream: impl Read + Write, reply: Reply) -> String {
    let request = common::http::read_request(&mut stream);
    match reply {
        Reply::Answer if !request.is_empty() => {
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{CANNED}",
                CANNED.len()
            );
            let _ = stream.write_all(response.as_bytes());
            let _ = stream.flush();
        }
        Reply::Hold if !request.is_empty() => {
            let mut rest = [0u8; 256];
            while matches!(stream.read(&mut rest), Ok(n) if n > 0) {}
        }
        _ => {}
    }
    request
}

/// Connects a sentinel to `addr` and waits until it is recorded; takes the records before it
/// (and the sentinel's) out.
fn sentinel_wait(addr: SocketAddr, seen: &Mutex<Vec<Seen>>) -> Vec<Seen> {
    let sentinel = TcpStream::connect(addr).unwrap();
    let me = sentinel.local_addr().unwrap();
    sentinel.shutdown(Shutdown::Both).unwrap();
    let deadline = Instant::now() + LIMIT;
    loop {
        {
            let mut seen = seen.lock().unwrap();
            if let Some(i) = seen.iter().position(|s| s.peer == me) {
                let mut taken: Vec<Seen> = seen.drain(..=i).collect();
                taken.pop();
                return taken;
            }
        }
        assert!(Instant::now() < deadline, "the sentinel was never served");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A recording HTTP proxy: a CONNECT is tunnelled to its target (ureq uses CONNECT for http://
/// and https:// alike); any other request is only recorded and closed.
pub struct RecordingProxy {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl RecordingProxy {
    pub fn start() -> RecordingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut client) = stream else { continue };
                let peer = client.peer_addr().unwrap();
                client.set_read_timeout(Some(LIMIT)).unwrap();
                let head = read_head(&mut client);
                let first = head.lines().next().unwrap_or_default().to_string();
                if let Some(target) = first
                    .strip_prefix("CONNECT ")
                    .and_then(|r| r.split(' ').next())
                {
                    if let Ok(upstream) = TcpStream::connect(target) {
                        let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                        tunnel(client, upstream);
                    }
                }
                record.lock().unwrap().push(Seen {
                    peer,
                    request: first,
                });
            }
        });
        RecordingProxy { addr, seen }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The request lines of every connection since the last call (see [`Origin::seen`]).
    pub fn request_lines(&self) -> Vec<String> {
        sentinel_wait(self.addr, &self.seen)
            .into_iter()
            .map(|s| s.request)
            .collect()
    }
}

/// The request head, read a byte at a time so nothing after it is consumed.
fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Copies both ways until either side closes.
fn tunnel(client: TcpStream, upstream: TcpStream) {
    let (mut c_read, mut u_write) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut c_read, &mut u_write);
        let _ = u_write.shutdown(Shutdown::Write);
    });
    let (mut u_read, mut c_write) = (upstream, client);
    let _ = std::io::copy(&mut u_read, &mut c_write);
    let _ = c_write.shutdown(Shutdown::Write);
    let _ = up.join();
}

/// Writes `text` to `dir/name`; the path as a string.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// A fresh directory under the target's tmp dir.
pub fn temp_dir(label: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "client-{label}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
