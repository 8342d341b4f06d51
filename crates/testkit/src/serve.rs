//! A `webcodex-plugin serve` process run by a test: started from a command line that listens on
//! `127.0.0.1:0`, its address read from its first stdout line (`listening on http://ADDR`),
//! stopped as an operator would (SIGTERM, exit 0), and killed and reaped on drop.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The longest `serve` may take to print its address or to exit when stopped (a hang, never a
/// timing).
pub const SERVE_LIMIT: Duration = Duration::from_secs(30);

/// A token with every scope, in [`write_tokens_file`].
pub const TOKEN_ALL: &str = "all-scopes-token-0123456789";
/// A token with `plugin:inspect` only, in [`write_tokens_file`].
pub const TOKEN_VIEWER: &str = "viewer-token-inspect-only-0123";
/// A token with `plugin:inspect` and `plugin:invoke`, in [`write_tokens_file`].
pub const TOKEN_CALLER: &str = "caller-token-inspect-invoke-0123";

/// Writes `dir/tokens.toml` for `serve --tokens` with the three test tokens (`all`, `viewer`,
/// `caller`); returns its path.
pub fn write_tokens_file(dir: &Path) -> PathBuf {
    let path = dir.join("tokens.toml");
    let text = format!(
        "[[tokens]]\nname = \"all\"\ntoken = \"{TOKEN_ALL}\"\n\
         scopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\", \"project:read\", \
         \"project:write\"]\n\n\
         [[tokens]]\nname = \"viewer\"\ntoken = \"{TOKEN_VIEWER}\"\nscopes = [\"plugin:inspect\"]\n\n\
         [[tokens]]\nname = \"caller\"\ntoken = \"{TOKEN_CALLER}\"\n\
         scopes = [\"plugin:inspect\", \"plugin:invoke\"]\n"
    );
    std::fs::write(&path, text).expect("write tokens.toml");
    path
}

/// The runner token of dial-out runner `id` in [`write_front_tokens`] (unique per test process).
pub fn runner_token(id: &str) -> String {
    format!("runner-token-{id}-{}", std::process::id())
}

/// Writes `dir/front-tokens.toml` for a front: the user token `user` with every scope, and a
/// `[[runner_tokens]]` entry ([`runner_token`]) for each of `runners`; returns its path.
pub fn write_front_tokens(dir: &Path, user: &str, runners: &[&str]) -> PathBuf {
    let mut text = format!(
        "[[tokens]]\nname = \"user\"\ntoken = \"{user}\"\n\
         scopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\", \"project:read\", \
         \"project:write\"]\n\n"
    );
    for id in runners {
        text.push_str(&format!(
            "[[runner_tokens]]\nname = \"{id}-token\"\ntoken = \"{}\"\nrunner = \"{id}\"\n\n",
            runner_token(id)
        ));
    }
    let path = dir.join("front-tokens.toml");
    std::fs::write(&path, text).expect("write front-tokens.toml");
    path
}

/// A running `serve` process. Its stderr is read on a thread of its own (returned by the stop
/// methods); it is killed and reaped on drop if the test did not stop it.
pub struct ServeProcess {
    child: Child,
    /// The address `serve` listens on.
    pub addr: SocketAddr,
    stderr: Option<JoinHandle<String>>,
}

impl ServeProcess {
    /// Spawns `command` (a `serve` command line, usually from [`super::cli_command`]) with stdin
    /// closed and stdout and stderr piped, and waits (bounded by [`SERVE_LIMIT`]) for the
    /// address it prints. Panics, with the process killed and reaped, when none comes.
    pub fn start(mut command: Command) -> ServeProcess {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serve");
        let stdout = child.stdout.take().expect("serve stdout");
        let stderr = super::read_all(child.stderr.take().expect("serve stderr"));
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let _ = tx.send(line.unwrap_or_default());
            }
        });
        let Ok(line) = rx.recv_timeout(SERVE_LIMIT) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve printed no address");
        };
        let addr = line
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .expect("a socket address");
        ServeProcess {
            child,
            addr,
            stderr: Some(stderr),
        }
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The process id of `serve`.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// SIGKILL (no goodbye to anyone), and the process reaped.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Asks `serve` to stop (SIGTERM; Windows: Ctrl-Break, see [`super::request_stop`]) and
    /// waits at most `within` for it to exit; asserts exit 0 and returns its stderr.
    pub fn stop_within(self, within: Duration) -> String {
        let (status, stderr) = self.stop_status(within);
        assert_eq!(status.code(), Some(0), "serve exit: {status:?}; {stderr}");
        stderr
    }

    /// [`ServeProcess::stop_within`] bounded by [`SERVE_LIMIT`].
    pub fn stop(self) -> String {
        self.stop_within(SERVE_LIMIT)
    }

    /// Asks `serve` to stop and waits at most `within` for it to exit; its exit status and
    /// stderr, for a test that expects something other than exit 0.
    pub fn stop_status(mut self, within: Duration) -> (ExitStatus, String) {
        assert!(
            super::request_stop(self.child.id()),
            "SIGTERM to serve failed"
        );
        let status = super::wait_bounded(&mut self.child, within);
        (status, self.take_stderr())
    }

    /// Terminates `serve` (as a host that dies: no stop request) and returns its stderr.
    pub fn terminate(mut self) -> String {
        self.child.kill().expect("terminate serve");
        let _ = super::wait_bounded(&mut self.child, SERVE_LIMIT);
        self.take_stderr()
    }

    /// Everything `serve` wrote to stderr (it has exited, so the pipe is closed).
    fn take_stderr(&mut self) -> String {
        self.stderr
            .take()
            .map(|reader| reader.join().expect("stderr reader"))
            .unwrap_or_default()
    }
}

impl Drop for ServeProcess {
    /// Kills and reaps `serve`; when a test failed, shows what `serve` wrote to stderr.
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            if let Some(Ok(stderr)) = self.stderr.take().map(JoinHandle::join) {
                eprintln!("serve stderr:\n{stderr}");
            }
        }
    }
}
