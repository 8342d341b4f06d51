//! Fronts that scale out (docs/PROTOCOL.md, cluster mode): `serve --cluster-keys` replicas and
//! real `connect` runners linked to every replica, on loopback, with the fixture plugin.
//!
//! - without a balancer (plain `cargo test`): a binding described on one replica is called on
//!   another; a foreign, tampered or stored-form binding is `describe_required`; a key
//!   rotation with overlap (SIGHUP); a restarted replica awaits its runners before it is
//!   ready; `--config` and bad keys are refused;
//! - behind a real balancer (Debian's haproxy, `#[ignore = "needs haproxy"]`, run by `.ci/run`):
//!   round robin per request before three replicas and two runners, thousands of calls, a
//!   replica SIGKILLed mid-traffic and brought back, a key rotation, tampered and foreign
//!   bindings. Every step checks the process table.

use crate::common;
use crate::tempdir;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::serve::runner_token;
use serde_json::{json, Value};
use tempdir::TempDir;
use webcodex_plugin_http::cluster::{ClusterKeys, KeySet};

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest a process may take to start or stop, or an answer to come (a hang, never a
/// timing).
const LIMIT: Duration = Duration::from_secs(30);
/// A user token with every scope.
const USER: &str = "cluster-user-all-scopes-0123456789";
/// The runners' reconnect delay cap (`Backoff::CAP`), and the slack a loaded machine gets on
/// top of it to start a process and dial.
const BACKOFF_CAP: Duration = Duration::from_secs(30);
const RELINK_SLACK: Duration = Duration::from_secs(10);

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// A `[[keys]]` entry made by `token new --cluster-key --name ID`.
fn new_key(id: &str) -> String {
    let mut cmd = common::cli_command(BIN);
    cmd.args(["token", "new", "--cluster-key", "--name", id]);
    let run = common::run_to_end(cmd, LIMIT);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.starts_with("[[keys]]\n"), "{}", run.stdout);
    run.stdout
}

/// A sealer of exactly these entries (the test opens and seals boxes itself).
fn sealer(entries: &[&str]) -> ClusterKeys {
    ClusterKeys::new(KeySet::parse(&entries.join("\n")).unwrap(), None).unwrap()
}

/// One `serve --cluster-keys` replica: its command line (to start it again) and process, and
/// the lines it logged so far.
struct Replica {
    args: Vec<String>,
    addr: SocketAddr,
    admin: Option<SocketAddr>,
    child: Option<Child>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Replica {
    /// Starts `serve` with `args` (which name `--listen` and maybe `--admin-listen`) and waits
    /// for its address lines.
    fn start(args: Vec<String>) -> Replica {
        let mut replica = Replica {
            args,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            admin: None,
            child: None,
            log: Arc::new(Mutex::new(Vec::new())),
        };
        replica.spawn();
        replica
    }

    fn spawn(&mut self) {
        self.log = Arc::new(Mutex::new(Vec::new()));
        let mut cmd = common::cli_command(BIN);
        cmd.arg("serve")
            .args(&self.args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn serve");
        let stderr = child.stderr.take().unwrap();
        let log = self.log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                log.lock().unwrap().push(line.unwrap_or_default());
            }
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let _ = tx.send(line.unwrap_or_default());
            }
        });
        let wants_admin = self.args.iter().any(|a| a == "--admin-listen");
        self.child = Some(child);
        let line = rx.recv_timeout(LIMIT).expect("serve printed no address");
        self.addr = line
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("unexpected line {line:?}"))
            .parse()
            .unwrap();
        if wants_admin {
            let line = rx
                .recv_timeout(LIMIT)
                .expect("serve printed no admin address");
            self.admin = Some(
                line.strip_prefix("admin listening on http://")
                    .unwrap_or_else(|| panic!("unexpected line {line:?}"))
                    .parse()
                    .unwrap(),
            );
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// SIGKILL, reaped; returns its pid.
    fn kill(&mut self) -> i32 {
        let mut child = self.child.take().expect("running");
        let pid = child.id() as i32;
        let _ = child.kill();
        let _ = child.wait();
        pid
    }

    /// Waits until a line it logged contains `needle`.
    fn wait_logged(&self, needle: &str) {
        wait_for(&format!("serve logs {needle:?}"), LIMIT, || {
            self.log.lock().unwrap().iter().any(|l| l.contains(needle))
        });
    }

    #[cfg(unix)]
    fn hang_up(&self) {
        // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
        let sent = unsafe { libc::kill(self.pid() as libc::pid_t, libc::SIGHUP) == 0 };
        assert!(sent, "SIGHUP to serve failed");
    }

    /// SIGHUP has no Windows counterpart; the tests that reload are ignored there.
    #[cfg(not(unix))]
    fn hang_up(&self) {
        unreachable!("SIGHUP is Unix-only");
    }

    /// SIGTERM: exit 0 within the limit.
    fn stop(&mut self) {
        let mut child = self.child.take().expect("running");
        assert!(common::request_stop(child.id()));
        let status = common::wait_bounded(&mut child, LIMIT);
        assert_eq!(
            status.code(),
            Some(0),
            "serve exit {status:?}: {:?}",
            self.log
        );
    }

    /// `GET path` on the admin listener: status and body.
    fn admin_get(&self, path: &str) -> (u16, Value) {
        let raw = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let (status, body, _) = exchange(self.admin.expect("an admin listener"), &raw);
        (status, body)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            if std::thread::panicking() {
                let log = self.log.lock().map(|l| l.join("\n")).unwrap_or_default();
                eprintln!("serve {:?} stderr:\n{log}", self.addr);
            }
        }
    }
}

/// One `connect` runner linked to every front URL it is given.
struct Runner {
    id: &'static str,
    providers: usize,
    pids: PathBuf,
    child: Option<Child>,
    stderr: Option<JoinHandle<String>>,
}

impl Runner {
    /// `connect` to every URL of `fronts`, hosting `providers` fixture providers (`fx0`, `fx1`,
    /// …; a provider serves one call at a time).
    fn start(dir: &TempDir, id: &'static str, fronts: &[String], providers: usize) -> Runner {
        Runner::start_in(dir, id, fronts, providers, None)
    }

    /// [`Runner::start`] with every provider working in `cwd` (a project root) when given.
    fn start_in(
        dir: &TempDir,
        id: &'static str,
        fronts: &[String],
        providers: usize,
        cwd: Option<&Path>,
    ) -> Runner {
        let fixture = serde_json::to_string(s(&common::fixture_path())).unwrap();
        let mut config = "[plugins]\nrequest_timeout_secs = 30\n".to_string();
        for i in 0..providers {
            config.push_str(&format!(
                "\n[[plugins.providers]]\nid = \"fx{i}\"\nname = \"Fixture {i}\"\n\
                 command = {fixture}\nargs = [\"normal\"]\n"
            ));
            if let Some(cwd) = cwd {
                config.push_str(&format!(
                    "cwd = {}\n",
                    serde_json::to_string(s(cwd)).unwrap()
                ));
            }
        }
        let config = dir.write(&format!("{id}.toml"), &config);
        let pids = dir.path(&format!("{id}.pids"));
        let mut cmd = common::connect_command(BIN, &runner_token(id));
        cmd.args(["--config", s(&config), "--name", id]);
        for front in fronts {
            cmd.args(["--front-url", front]);
        }
        cmd.env("FIXTURE_PIDS", &pids).env("RUST_LOG", "info");
        let mut child = cmd.spawn().expect("spawn connect");
        let stderr = common::read_all(child.stderr.take().unwrap());
        Runner {
            id,
            providers,
            pids,
            child: Some(child),
            stderr: Some(stderr),
        }
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    fn plugins(&self) -> Vec<i32> {
        common::recorded_plugin_pids(&self.pids)
    }

    /// SIGTERM: exit 0, its plugins gone.
    fn stop(&mut self) {
        let mut child = self.child.take().expect("running");
        assert!(common::request_stop(child.id()));
        let status = common::wait_bounded(&mut child, LIMIT);
        let stderr = self.stderr.take().unwrap().join().unwrap();
        assert_eq!(status.code(), Some(0), "connect exit {status:?}: {stderr}");
        for pid in self.plugins() {
            assert!(
                common::wait_gone(pid),
                "plugin {pid} of {} outlived it",
                self.id
            );
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            if std::thread::panicking() {
                if let Some(Ok(stderr)) = self.stderr.take().map(JoinHandle::join) {
                    eprintln!("{} stderr:\n{stderr}", self.id);
                }
            }
        }
    }
}

/// One raw HTTP/1.1 exchange (`Connection: close`): status, JSON body (null when empty or
/// not JSON) and the `Webcodex-Runner-Instance` header (which replica answered).
fn exchange(addr: SocketAddr, raw: &str) -> (u16, Value, String) {
    match try_exchange(addr, raw) {
        Ok(answer) => answer,
        Err(e) => panic!("no answer from {addr}: {e}"),
    }
}

fn try_exchange(addr: SocketAddr, raw: &str) -> std::io::Result<(u16, Value, String)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(LIMIT * 2))?;
    stream.write_all(raw.as_bytes())?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    if response.is_empty() {
        return Err(std::io::Error::other(
            "the connection closed without an answer",
        ));
    }
    let response = common::http::parse_response(&response);
    let body = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    let instance = response
        .first_header("webcodex-runner-instance")
        .unwrap_or_default()
        .to_string();
    Ok((response.status, body, instance))
}

/// The raw request of one `plugin_tool` action with the user token.
fn tool_request(params: &Value) -> String {
    let body = json!({"tool": "plugin_tool", "params": params}).to_string();
    format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {USER}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn tool(addr: SocketAddr, params: Value) -> (u16, Value, String) {
    exchange(addr, &tool_request(&params))
}

/// Describes `echo` of provider `plugin` of runner `runner` at `addr`: the binding and the
/// replica that answered.
fn describe_of(addr: SocketAddr, runner: &str, plugin: &str) -> (String, String) {
    let (status, body, instance) = tool(
        addr,
        json!({"action": "describe", "runner": runner, "plugin": plugin, "tool": "echo"}),
    );
    assert_eq!(status, 200, "{body}");
    (
        body["output"]["binding"].as_str().unwrap().to_string(),
        instance,
    )
}

/// [`describe_of`] the first provider, `fx0`.
fn describe(addr: SocketAddr, runner: &str) -> (String, String) {
    describe_of(addr, runner, "fx0")
}

fn call_params(binding: &str, text: &str) -> Value {
    json!({"action": "call", "binding": binding, "arguments": {"text": text}})
}

/// Calls `binding` at `addr`, which must succeed and echo; the replica that answered.
fn call_ok(addr: SocketAddr, binding: &str) -> String {
    let (status, body, instance) = tool(addr, call_params(binding, "hi"));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["output"]["isError"], false, "{body}");
    instance
}

/// The failure code of a call of `binding` at `addr`.
fn call_code(addr: SocketAddr, binding: &str) -> String {
    let (status, body, _) = tool(addr, call_params(binding, "hi"));
    assert_ne!(status, 200, "{body}");
    body["output"]["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The runner ids `list` shows at `addr`.
fn listed(addr: SocketAddr) -> Vec<String> {
    let (status, body, _) = tool(addr, json!({"action": "list"}));
    assert_eq!(status, 200, "{body}");
    body["output"]["runners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["runner"].as_str().unwrap().to_string())
        .collect()
}

/// Waits until `done`, at most `within`; how long it took.
fn wait_for(what: &str, within: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < within,
            "never within {within:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    started.elapsed()
}

/// Waits until `list` at `addr` shows every runner of `runners`.
fn wait_linked(addr: SocketAddr, runners: &[&str], within: Duration) -> Duration {
    wait_for(&format!("{runners:?} linked to {addr}"), within, || {
        let ids = listed(addr);
        runners.iter().all(|r| ids.iter().any(|id| id == r))
    })
}

/// The process table is as it should be: every process of `alive` runs (not a zombie), every
/// runner has each of its plugins, started once, alive under it, nothing of `gone` is left, and the test has no
/// zombie child.
fn check_process_table(alive: &[i32], runners: &[&Runner], gone: &[i32]) {
    for pid in alive {
        let state = common::proc_stat(*pid).map(|(_, state)| state);
        assert!(
            matches!(state, Some(s) if s != 'Z' && s != 'X'),
            "process {pid} is not running ({state:?})"
        );
    }
    for runner in runners {
        let plugins = runner.plugins();
        assert_eq!(
            plugins.len(),
            runner.providers,
            "{}: each provider started once: {plugins:?}",
            runner.id
        );
        for plugin in plugins {
            assert_eq!(
                common::proc_stat(plugin).map(|(ppid, _)| ppid),
                Some(runner.pid()),
                "{}'s plugin {plugin} runs under it",
                runner.id
            );
        }
    }
    for pid in gone {
        assert!(common::wait_gone(*pid), "process {pid} is still there");
    }
    common::assert_no_zombie_children_of_self();
}

/// The tokens file: the user token and a runner token for each of `runners`.
fn tokens(dir: &TempDir, runners: &[&str]) -> PathBuf {
    common::serve::write_front_tokens(dir, USER, runners)
}

/// `--listen 127.0.0.1:0 --tokens T --cluster-keys K` and `extra`.
fn replica_args(tokens: &Path, keys: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["--listen", "127.0.0.1:0", "--tokens", s(tokens)]
        .into_iter()
        .map(String::from)
        .collect();
    args.extend(["--cluster-keys".to_string(), s(keys).to_string()]);
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver, and reloads it with SIGHUP (docs/PLATFORMS.md)"
)]
fn a_binding_described_on_one_replica_is_called_on_another_and_a_foreign_one_is_not() {
    let dir = TempDir::new("cluster", "direct");
    let tokens = tokens(&dir, &["edge"]);
    let keys = dir.write("keys.toml", &new_key("one"));
    let foreign_keys = dir.write("foreign.toml", &new_key("one"));
    let a = Replica::start(replica_args(&tokens, &keys, &[]));
    let b = Replica::start(replica_args(&tokens, &keys, &[]));
    // A front of another cluster (its own key of the same id) the runner links to as well.
    let foreign = Replica::start(replica_args(&tokens, &foreign_keys, &[]));
    let urls: Vec<String> = [&a, &b, &foreign]
        .iter()
        .map(|r| format!("http://{}", r.addr))
        .collect();
    let mut runner = Runner::start(&dir, "edge", &urls, 1);
    for replica in [&a, &b, &foreign] {
        wait_linked(replica.addr, &["edge"], LIMIT);
    }
    check_process_table(
        &[a.pid() as i32, b.pid() as i32, runner.pid()],
        &[&runner],
        &[],
    );

    let (binding, described_on) = describe(a.addr, "edge");
    assert!(
        binding.starts_with("wc_pbind_") && binding.len() > 31,
        "{binding}"
    );
    let called_on = call_ok(b.addr, &binding);
    assert_ne!(described_on, called_on, "two replicas answered");
    assert_eq!(call_ok(a.addr, &binding), described_on);
    // Every replica of the cluster opens it; the foreign front does not, nor do the cluster's
    // replicas open the foreign front's.
    assert_eq!(call_code(foreign.addr, &binding), "describe_required");
    let (foreign_binding, _) = describe(foreign.addr, "edge");
    call_ok(foreign.addr, &foreign_binding);
    assert_eq!(call_code(a.addr, &foreign_binding), "describe_required");
    // One character changed, and a binding of the stored form.
    let middle = binding.len() / 2;
    let flipped = if &binding[middle..=middle] == "A" {
        "B"
    } else {
        "A"
    };
    let tampered = format!("{}{flipped}{}", &binding[..middle], &binding[middle + 1..]);
    assert_eq!(call_code(b.addr, &tampered), "describe_required");
    assert_eq!(
        call_code(b.addr, "wc_pbind_AAAAAAAAAAAAAAAAAAAAAA"),
        "describe_required"
    );
    // The box holds the runner and the runner's own (sealed) binding, readable with the key.
    let target = webcodex_plugin_host::SealedTarget::decode(
        &sealer(&[&std::fs::read_to_string(&keys).unwrap()])
            .open_at(&binding, 0)
            .expect("the cluster key opens it"),
    )
    .unwrap();
    match target {
        webcodex_plugin_host::SealedTarget::Remote {
            runner,
            binding,
            plugin,
            tool,
            ..
        } => {
            assert_eq!(
                (runner.as_str(), plugin.as_str(), tool.as_str()),
                ("edge", "fx0", "echo")
            );
            assert!(
                binding.starts_with("wc_pbind_") && binding.len() > 31,
                "{binding}"
            );
        }
        other => panic!("{other:?}"),
    }
    runner.stop();
    for replica in [&a, &b] {
        wait_for("the runner leaves list", LIMIT, || {
            listed(replica.addr).is_empty()
        });
    }
    // A runner that is gone: its bindings are replaced.
    assert_eq!(call_code(b.addr, &binding), "plugin_replaced");
    check_process_table(&[a.pid() as i32, b.pid() as i32], &[], &[]);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver, and reloads it with SIGHUP (docs/PLATFORMS.md)"
)]
fn keys_rotate_with_overlap_and_a_restarted_replica_awaits_its_runners() {
    let dir = TempDir::new("cluster", "rotate");
    let tokens = tokens(&dir, &["edge"]);
    let (old_key, new_key_text) = (new_key("old"), new_key("new"));
    let keys = dir.write("keys.toml", &old_key);
    let mut replica = Replica::start(replica_args(
        &tokens,
        &keys,
        &["--admin-listen", "127.0.0.1:0", "--binding-ttl", "2h"],
    ));
    // No runner linked yet: not ready, and it says which runner it awaits.
    let (status, body) = replica.admin_get("/readyz");
    assert_eq!(
        (status, &body["awaitingRunners"]),
        (503, &json!(["edge"])),
        "{body}"
    );
    let mut runner = Runner::start(&dir, "edge", &[format!("http://{}", replica.addr)], 1);
    wait_linked(replica.addr, &["edge"], LIMIT);
    wait_for("ready once the runner linked", LIMIT, || {
        replica.admin_get("/readyz").0 == 200
    });
    let (old, _) = describe(replica.addr, "edge");
    assert!(sealer(&[&old_key]).open_at(&old, 0).is_some());

    // The new key first, the old one still there: new bindings are sealed with the new key,
    // old ones still open.
    std::fs::write(&keys, format!("{new_key_text}\n{old_key}")).unwrap();
    replica.hang_up();
    let only_new = sealer(&[&new_key_text]);
    let mut new = String::new();
    wait_for("new bindings sealed with the new key", LIMIT, || {
        new = describe(replica.addr, "edge").0;
        only_new.open_at(&new, 0).is_some()
    });
    call_ok(replica.addr, &old);
    call_ok(replica.addr, &new);
    // The old key removed: its bindings no longer open, the new ones do.
    std::fs::write(&keys, &new_key_text).unwrap();
    replica.hang_up();
    wait_for("the old key's bindings refused", LIMIT, || {
        let (_, body, _) = tool(replica.addr, call_params(&old, "hi"));
        body["output"]["error"]["code"] == "describe_required"
    });
    call_ok(replica.addr, &new);
    // A keys file that does not parse keeps the keys in force.
    std::fs::write(&keys, "[[keys]]\nid = \"broken\"\n").unwrap();
    replica.hang_up();
    replica.wait_logged("--cluster-keys not reloaded, the old keys stay: keys[0]: has no `secret`");
    call_ok(replica.addr, &new);

    // Restarted (SIGKILL, then the same command line): not ready until the runner relinked.
    std::fs::write(&keys, &new_key_text).unwrap();
    let args = replica.args.clone();
    let addr = replica.addr;
    let killed = replica.kill();
    check_process_table(&[runner.pid()], &[&runner], &[killed]);
    let mut args_again = args;
    let listen = args_again.iter().position(|a| a == "--listen").unwrap() + 1;
    args_again[listen] = addr.to_string();
    let again = Replica::start(args_again);
    let (status, _) = again.admin_get("/readyz");
    assert_eq!(status, 503, "not ready before the runner relinked");
    let took = wait_linked(again.addr, &["edge"], BACKOFF_CAP + RELINK_SLACK);
    eprintln!(
        "the runner relinked {} ms after the replica came back",
        took.as_millis()
    );
    wait_for("ready again", LIMIT, || again.admin_get("/readyz").0 == 200);
    // Bindings sealed before the restart open on the new process: the key is the same.
    call_ok(again.addr, &new);
    runner.stop();
    drop(again);
    common::assert_no_zombie_children_of_self();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver, and reloads it with SIGHUP (docs/PLATFORMS.md)"
)]
fn a_project_bound_binding_is_called_on_another_replica_until_its_root_changes() {
    let dir = TempDir::new("cluster", "project");
    let root = dir.subdir("app");
    let tokens = tokens(&dir, &["edge"]);
    let keys = dir.write("keys.toml", &new_key("one"));
    let a = Replica::start(replica_args(&tokens, &keys, &[]));
    let b = Replica::start(replica_args(&tokens, &keys, &[]));
    let urls: Vec<String> = [&a, &b]
        .iter()
        .map(|r| format!("http://{}", r.addr))
        .collect();
    let mut runner = Runner::start_in(&dir, "edge", &urls, 1, Some(&root));
    for replica in [&a, &b] {
        wait_linked(replica.addr, &["edge"], LIMIT);
    }
    let project = s(&root).to_string();
    let (status, body, described_on) = tool(
        a.addr,
        json!({"action": "describe", "runner": "edge", "plugin": "fx0", "tool": "echo",
               "project": project}),
    );
    assert_eq!(status, 200, "{body}");
    let output = &body["output"];
    assert_eq!(output["project"], json!(project), "{body}");
    let target = output["projectTarget"].as_str().unwrap().to_string();
    let binding = output["binding"].as_str().unwrap().to_string();
    // The front's box holds the runner's target; the runner's box, its project.
    let opened = sealer(&[&std::fs::read_to_string(&keys).unwrap()])
        .open_at(&binding, 0)
        .expect("the cluster key opens it");
    match webcodex_plugin_host::SealedTarget::decode(&opened).unwrap() {
        webcodex_plugin_host::SealedTarget::Remote { project, .. } => {
            assert_eq!(project.as_deref(), Some(target.as_bytes()));
        }
        other => panic!("{other:?}"),
    }
    let called_on = call_ok(b.addr, &binding);
    assert_ne!(described_on, called_on, "two replicas answered");
    let (status, body, _) = tool(
        b.addr,
        json!({"action": "call", "binding": binding, "arguments": {"text": "hi"},
               "project_target": target}),
    );
    assert_eq!(status, 200, "{body}");
    check_process_table(
        &[a.pid() as i32, b.pid() as i32, runner.pid()],
        &[&runner],
        &[],
    );
    // The root moved away: refused on every replica before the plugin reads anything.
    std::fs::rename(&root, dir.path("app-moved")).unwrap();
    for replica in [&a, &b] {
        assert_eq!(call_code(replica.addr, &binding), "plugin_project_changed");
    }
    check_process_table(
        &[a.pid() as i32, b.pid() as i32, runner.pid()],
        &[&runner],
        &[],
    );
    runner.stop();
    common::assert_no_zombie_children_of_self();
}

#[test]
fn cluster_mode_refuses_a_local_runner_and_bad_keys_with_a_reason() {
    let dir = TempDir::new("cluster", "refusals");
    let tokens = tokens(&dir, &["edge"]);
    let keys = dir.write("keys.toml", &new_key("k"));
    let config = dir.write("runner.toml", "[plugins]\n");
    let bad = dir.write("bad.toml", "[[keys]]\nid = \"k\"\nsecret = \"c2hvcnQ=\"\n");
    let serve = |args: &[&str]| {
        let mut cmd = common::cli_command(BIN);
        cmd.arg("serve").args(args);
        common::run_to_end(cmd, LIMIT)
    };
    let base = ["--listen", "127.0.0.1:0", "--tokens", s(&tokens)];
    let run = serve(
        &[
            &base[..],
            &["--cluster-keys", s(&keys), "--config", s(&config)],
        ]
        .concat(),
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("has no local runner"), "{}", run.stderr);
    assert!(run.stderr.contains("connect"), "{}", run.stderr);
    let run = serve(&[&base[..], &["--cluster-keys", s(&bad)]].concat());
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("keys[0].secret"), "{}", run.stderr);
    let run = serve(
        &[
            &base[..],
            &["--cluster-keys", s(&keys), "--binding-ttl", "1w"],
        ]
        .concat(),
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("--binding-ttl"), "{}", run.stderr);
    let run = serve(&[&base[..], &["--binding-ttl", "1h"]].concat());
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("--cluster-keys"), "{}", run.stderr);
    common::assert_no_zombie_children_of_self();
}

mod balancer;
