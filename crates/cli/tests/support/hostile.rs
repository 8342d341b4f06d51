//! Hostile peers for the client's tests: `hostile.py` (Python 3 stdlib, beside this file) run as
//! a child process, its port read from its first stdout line, killed and reaped on drop.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long a peer may take to print its port (a hang, never a timing).
const START_LIMIT: Duration = Duration::from_secs(30);

/// One running peer.
pub struct Peer {
    child: Child,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    log: PathBuf,
}

impl Peer {
    /// Starts `hostile.py ARGS… LOG` with its log at `dir/NAME.log`.
    fn start(dir: &Path, name: &str, args: &[&str]) -> Peer {
        let log = dir.join(format!("{name}.log"));
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/hostile.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args(args)
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn python3 hostile.py");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let port = rx
            .recv_timeout(START_LIMIT)
            .ok()
            .and_then(|l| l.trim().parse().ok());
        let Some(port) = port else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hostile.py {args:?} printed no port");
        };
        Peer { child, port, log }
    }

    /// A plugin_tool "server" answering `status` to every POST with a body of `kind`
    /// (`success`, `failure` or `empty`) that echoes the Authorization header it received.
    pub fn echo(dir: &Path, status: u16, kind: &str) -> Peer {
        let status = status.to_string();
        Peer::start(
            dir,
            &format!("echo-{status}-{kind}"),
            &["echo", &status, kind],
        )
    }

    /// A runner's `serve` that describes `fx`/`echo` and answers each call with a success of
    /// `kind`: `token`, `token-escaped`, `invalid` or `ok` (see `hostile.py`).
    pub fn runner(dir: &Path, kind: &str) -> Peer {
        Peer::start(dir, &format!("runner-{kind}"), &["runner", kind])
    }

    /// A SOCKS4/4a/5 proxy that relays every CONNECT (`relay`) or refuses it (`refuse`).
    pub fn socks(dir: &Path, mode: &str) -> Peer {
        Peer::start(dir, &format!("socks-{mode}"), &["socks", mode])
    }

    /// An HTTP proxy that answers `status` to every CONNECT.
    pub fn refusing_proxy(dir: &Path, status: u16) -> Peer {
        let status = status.to_string();
        Peer::start(
            dir,
            &format!("refuse-{status}"),
            &["refuse-connect", &status],
        )
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `SCHEME://127.0.0.1:PORT`, for a proxy.
    pub fn proxy_url(&self, scheme: &str) -> String {
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The lines logged so far (one per request or tunnel; each is written before the peer
    /// answers, so all of a finished client's are there).
    pub fn log_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Forgets the lines logged so far.
    pub fn clear_log(&self) {
        let _ = std::fs::remove_file(&self.log);
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
