//! One front gateway in front of several runners (docs/PROTOCOL.md, remote runners): three real
//! `webcodex-plugin serve` runners with the fixture plugin on loopback, and a front (`serve
//! --config --runners`, `gateway --runners` on stdio, and `mcp --config --runners` as an MCP
//! server on stdio) that routes to them. Faults are real:
//! a runner is killed (unavailable, then the circuit breaker), one is restarted (old bindings
//! `plugin_replaced`), and one dies during a slow call (the answer lost: outcome unknown, never
//! retried).

use crate::common;
use crate::inspector_support;
use crate::tempdir;

use common::serve::ServeProcess;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tempdir::TempDir;

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest any one process may take to start or stop, or any one answer to come (a hang,
/// never a timing).
const LIMIT: Duration = Duration::from_secs(30);

/// The tokens callers present to the front.
const CALLER: &str = "front-caller-inspect-invoke-0123";
const VIEWER: &str = "front-viewer-inspect-only-01234";
const MANAGER: &str = "front-manager-all-scopes-012345";

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// The leak canary of this test process, in every plugin's args, cwd, environment and stderr
/// (on runners and on the front's local runner alike).
fn canary_text() -> String {
    format!("wcFRONTCANARY{}", std::process::id())
}

/// A runner.toml with one fixture provider `fx` (the canary in its args, the test directory
/// as its cwd).
fn runner_config(dir: &TempDir, name: &str) -> PathBuf {
    let fixture = common::fixture_path();
    dir.write(
        name,
        &format!(
            "[plugins]\nrequest_timeout_secs = 30\n\n[[plugins.providers]]\nid = \"fx\"\n\
             name = \"Fixture\"\ncommand = {}\nargs = [\"normal\", \"{}\"]\ncwd = {}\n",
            serde_json::to_string(s(&fixture)).unwrap(),
            canary_text(),
            serde_json::to_string(s(dir)).unwrap()
        ),
    )
}

/// One runner's files: its config, its tokens file (one all-scopes token, the front's
/// credential on it), its fixture log and pid file.
struct RunnerFiles {
    id: &'static str,
    config: PathBuf,
    tokens: PathBuf,
    token: String,
    log: PathBuf,
    pids: PathBuf,
}

impl RunnerFiles {
    fn new(dir: &TempDir, id: &'static str) -> RunnerFiles {
        let token = format!("runner-{id}-secret-token-{}", std::process::id());
        let tokens = dir.write(
            &format!("{id}-tokens.toml"),
            &format!(
                "[[tokens]]\nname = \"front\"\ntoken = \"{token}\"\n\
                 scopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\"]\n"
            ),
        );
        RunnerFiles {
            id,
            config: runner_config(dir, &format!("{id}.toml")),
            tokens,
            token,
            log: dir.path(&format!("{id}.log")),
            pids: dir.path(&format!("{id}.pids")),
        }
    }

    /// The tools/call requests this runner's plugins read, by tool name (across restarts).
    fn calls(&self, tool: &str) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["method"] == "tools/call" && v["params"]["name"] == tool)
            .count()
    }

    fn wait_for_call(&self, tool: &str) {
        let deadline = Instant::now() + LIMIT;
        while self.calls(tool) == 0 {
            assert!(Instant::now() < deadline, "{} never read the call", self.id);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A running `serve` process (a runner or a front); killed on drop.
struct Server {
    serve: ServeProcess,
    addr: SocketAddr,
}

impl Server {
    fn spawn(cmd: Command) -> Server {
        let serve = ServeProcess::start(cmd);
        Server {
            addr: serve.addr,
            serve,
        }
    }

    /// A runner serving its files on `listen` (its plugins log to its fixture files).
    fn runner(files: &RunnerFiles, listen: &str) -> Server {
        let mut cmd = common::cli_command(BIN);
        cmd.args([
            "serve",
            "--config",
            s(&files.config),
            "--listen",
            listen,
            "--tokens",
            s(&files.tokens),
        ])
        .env("FIXTURE_LOG", &files.log)
        .env("FIXTURE_PIDS", &files.pids)
        .env("FIXTURE_STDERR", format!("stderr says {}", canary_text()))
        .env("CANARY_SECRET", canary_text());
        Server::spawn(cmd)
    }

    fn pid(&self) -> i32 {
        self.serve.pid()
    }

    /// SIGKILL (no goodbye to anyone), reaped; its plugins die with it (parent-death signal).
    fn kill(mut self, files: &RunnerFiles) {
        self.serve.kill();
        for pid in common::recorded_plugin_pids(&files.pids) {
            assert!(
                common::wait_gone(pid),
                "plugin {pid} of {} outlived it",
                files.id
            );
        }
    }

    /// One POST of a plugin_tool request: status, body, and the runner instance header.
    fn tool(&self, token: &str, params: Value) -> (u16, Value) {
        let (status, body, _) = post(self.addr, token, &params);
        (status, body)
    }

    /// SIGTERM and a bounded wait for exit 0; its stderr.
    fn stop(self) -> String {
        self.serve.stop_within(LIMIT)
    }
}

/// One raw HTTP/1.1 POST (Connection: close): status, JSON body, `Webcodex-Runner-Instance`.
fn post(addr: SocketAddr, token: &str, params: &Value) -> (u16, Value, Option<String>) {
    let response = common::http::post_tool(addr, token, params, LIMIT * 2);
    let instance = response
        .first_header("webcodex-runner-instance")
        .map(str::to_string);
    (response.status, response.json(), instance)
}

fn code(body: &Value) -> &str {
    body["output"]["error"]["code"].as_str().unwrap_or("")
}

fn dispatch(body: &Value) -> &str {
    body["output"]["dispatch"].as_str().unwrap_or("")
}

/// The front's tokens file.
fn front_tokens(dir: &TempDir) -> PathBuf {
    dir.write(
        "front-tokens.toml",
        &format!(
            "[[tokens]]\nname = \"caller\"\ntoken = \"{CALLER}\"\n\
             scopes = [\"plugin:inspect\", \"plugin:invoke\"]\n\n\
             [[tokens]]\nname = \"viewer\"\ntoken = \"{VIEWER}\"\nscopes = [\"plugin:inspect\"]\n\n\
             [[tokens]]\nname = \"manager\"\ntoken = \"{MANAGER}\"\n\
             scopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\"]\n"
        ),
    )
}

/// The runners file: r1 and r2 with token files (relative to the runners file), r3 with a token
/// variable.
fn runners_file(dir: &TempDir, runners: &[(&RunnerFiles, SocketAddr)]) -> PathBuf {
    let mut text = String::new();
    for (files, addr) in runners {
        let credential = if files.id == "r3" {
            "token_env = \"WC_TEST_R3_TOKEN\"".to_string()
        } else {
            dir.write(&format!("{}.tok", files.id), &format!("{}\n", files.token));
            format!("token_file = \"{}.tok\"", files.id)
        };
        text.push_str(&format!(
            "[[runners]]\nid = \"{}\"\nname = \"Runner {}\"\nurl = \"http://{addr}\"\n{credential}\n\n",
            files.id, files.id
        ));
    }
    dir.write("runners.toml", &text)
}

/// A front command with a clean proxy environment (loopback runners must be reached directly).
fn front_command(args: &[&str], r3_token: &str, log: &Path, pids: &Path) -> Command {
    let mut cmd = common::cli_command(BIN);
    cmd.args(args)
        .env("WC_TEST_R3_TOKEN", r3_token)
        .env("FIXTURE_LOG", log)
        .env("FIXTURE_PIDS", pids)
        .env("FIXTURE_STDERR", format!("stderr says {}", canary_text()))
        .env("CANARY_SECRET", canary_text());
    for var in common::PROXY_VARIABLES {
        cmd.env_remove(var);
    }
    cmd
}

/// No zombie child of `pid` and no live process left in the process groups of the plugins
/// recorded in `pid_files`, after those plugins' runner died.
fn assert_clean(front: i32, dead_runner_pids: &[&Path]) {
    let groups: Vec<i32> = dead_runner_pids
        .iter()
        .flat_map(|p| common::recorded_plugin_pids(p))
        .collect();
    common::assert_no_leftovers(front, &[], common::ChildScope::AllZombieChildren);
    for pid in groups {
        assert!(common::wait_gone(pid), "plugin {pid} still runs");
    }
    common::assert_no_zombie_children_of_self();
}

/// Everything the front answered, for the leak check at the end.
#[derive(Default)]
struct Seen(Vec<String>);

impl Seen {
    fn front(&mut self, front: &Server, token: &str, params: Value) -> Value {
        let (status, body, instance) = post(front.addr, token, &params);
        let text = format!("{status} {body} {instance:?}");
        self.0.push(text);
        body
    }
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs serve processes stopped with SIGTERM; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn one_front_many_runners_with_faults() {
    let dir = TempDir::new("front", "faults");
    let r1 = RunnerFiles::new(&dir, "r1");
    let r2 = RunnerFiles::new(&dir, "r2");
    let r3 = RunnerFiles::new(&dir, "r3");
    let servers: Vec<Server> = [&r1, &r2, &r3]
        .iter()
        .map(|f| Server::runner(f, "127.0.0.1:0"))
        .collect();
    let [s1, s2, s3]: [Server; 3] = servers.try_into().ok().unwrap();
    let mut runner_pids = vec![s1.pid(), s2.pid(), s3.pid()];
    let (a1, a2, a3) = (s1.addr, s2.addr, s3.addr);
    let runners = runners_file(&dir, &[(&r1, a1), (&r2, a2), (&r3, a3)]);
    let local = runner_config(&dir, "local.toml");
    let tokens = front_tokens(&dir);
    let (local_log, local_pids) = (dir.path("local.log"), dir.path("local.pids"));
    let front = Server::spawn(front_command(
        &[
            "serve",
            "--config",
            s(&local),
            "--runners",
            s(&runners),
            "--listen",
            "127.0.0.1:0",
            "--tokens",
            s(&tokens),
        ],
        &r3.token,
        &local_log,
        &local_pids,
    ));
    let mut seen = Seen::default();

    // list: every runner, remote ones with their names.
    let body = seen.front(&front, VIEWER, json!({"action": "list"}));
    assert_eq!(
        body["output"],
        json!({"runners": [
            {"runner": "local"},
            {"runner": "r1", "name": "Runner r1"},
            {"runner": "r2", "name": "Runner r2"},
            {"runner": "r3", "name": "Runner r3"},
        ]}),
        "{body}"
    );

    // list, describe, call through each runner; the front's bindings are its own.
    let mut bindings = std::collections::BTreeMap::new();
    for (files, server) in [(&r1, &s1), (&r2, &s2), (&r3, &s3)] {
        let id = files.id;
        let body = seen.front(&front, VIEWER, json!({"action": "list", "runner": id}));
        assert_eq!(body["success"], json!(true), "{body}");
        assert_eq!(body["output"]["runner"], json!(id));
        assert_eq!(body["output"]["plugins"][0]["plugin"], json!("fx"));
        assert_eq!(body["output"]["plugins"][0]["status"], json!("ready"));
        let body = seen.front(
            &front,
            VIEWER,
            json!({"action": "list", "runner": id, "plugin": "fx"}),
        );
        assert_eq!(body["output"]["runner"], Value::Null, "{body}");
        assert!(body["output"]["toolCount"].as_u64().unwrap() > 5, "{body}");
        let body = seen.front(
            &front,
            VIEWER,
            json!({"action": "describe", "runner": id, "plugin": "fx", "tool": "echo"}),
        );
        assert_eq!(body["success"], json!(true), "{body}");
        assert_eq!(body["output"]["runner"], json!(id));
        assert_eq!(body["output"]["tool"]["name"], json!("echo"));
        let binding = body["output"]["binding"].as_str().unwrap().to_string();
        assert!(
            binding.starts_with("wc_pbind_") && binding.len() == 31,
            "{binding}"
        );
        // The runner does not know the front's binding: it is the front's own.
        let (_, direct) = server.tool(
            &files.token,
            json!({"action": "call", "binding": binding, "arguments": {"text": "x"}}),
        );
        assert_eq!(code(&direct), "describe_required", "{direct}");
        let text = format!("via {id}");
        let body = seen.front(
            &front,
            CALLER,
            json!({"action": "call", "binding": binding, "arguments": {"text": text}}),
        );
        assert_eq!(body["success"], json!(true), "{body}");
        assert_eq!(body["output"]["structuredContent"], json!({"text": text}));
        assert_eq!(files.calls("echo"), 1, "{id}");
        bindings.insert(id, binding);
    }
    // The local runner still works beside them.
    let body = seen.front(
        &front,
        VIEWER,
        json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "add"}),
    );
    let local_binding = body["output"]["binding"].as_str().unwrap().to_string();
    let body = seen.front(
        &front,
        CALLER,
        json!({"action": "call", "binding": local_binding, "arguments": {"a": 2, "b": 3}}),
    );
    assert_eq!(
        body["output"]["structuredContent"],
        json!({"sum": 5}),
        "{body}"
    );

    // The front enforces the caller's scopes before forwarding anything.
    let (status, body, _) = post(
        front.addr,
        VIEWER,
        &json!({"action": "call", "binding": bindings["r1"], "arguments": {"text": "no"}}),
    );
    assert_eq!((status, code(&body)), (403, "insufficient_scope"), "{body}");
    let body = seen.front(&front, CALLER, json!({"action": "reload", "runner": "r1"}));
    assert_eq!(code(&body), "insufficient_scope", "{body}");
    assert_eq!(r1.calls("echo"), 1);
    // Unknown runner: by exact id only.
    for runner in ["r4", "R1", "r1 ", "local2"] {
        let body = seen.front(&front, VIEWER, json!({"action": "list", "runner": runner}));
        assert_eq!(code(&body), "plugin_runner_not_found", "{runner}: {body}");
    }
    // check and catalog are forwarded too, the runner id rewritten.
    let body = seen.front(
        &front,
        MANAGER,
        json!({"action": "check", "runner": "r2", "plugin": "fx"}),
    );
    assert_eq!(body["output"]["runner"], json!("r2"), "{body}");
    assert_eq!(body["output"]["ready"], json!(true), "{body}");
    // A well-formed remote failure object comes back as the runner wrote it (rebuilt field by field).
    let body = seen.front(
        &front,
        VIEWER,
        json!({"action": "describe", "runner": "r2", "plugin": "nope", "tool": "echo"}),
    );
    let (_, direct) = s2.tool(
        &r2.token,
        json!({"action": "describe", "runner": "local", "plugin": "nope", "tool": "echo"}),
    );
    assert_eq!(body["output"], direct["output"], "{body}");
    assert_eq!(code(&body), "plugin_not_configured");

    let instances: Vec<String> = [(&s1, &r1), (&s2, &r2), (&s3, &r3)]
        .iter()
        .map(|(server, files)| {
            post(server.addr, &files.token, &json!({"action": "list"}))
                .2
                .expect("serve names its runner instance")
        })
        .collect();

    // --- A lost answer: r3 dies during a slow call. Outcome unknown, never retried. ---
    let front_addr = front.addr;
    let slow = std::thread::spawn({
        let binding = {
            let body = seen.front(
                &front,
                VIEWER,
                json!({"action": "describe", "runner": "r3", "plugin": "fx", "tool": "sleep"}),
            );
            body["output"]["binding"].as_str().unwrap().to_string()
        };
        move || {
            post(
                front_addr,
                CALLER,
                &json!({"action": "call", "binding": binding, "arguments": {"ms": 20000}}),
            )
        }
    });
    r3.wait_for_call("sleep");
    s3.kill(&r3);
    let (status, body, _) = slow.join().unwrap();
    seen.0.push(format!("{status} {body}"));
    assert_eq!(code(&body), "plugin_gateway_timeout", "{body}");
    assert_eq!(dispatch(&body), "outcome_unknown", "{body}");
    assert_eq!(body["output"]["recovery"], json!("do_not_retry"), "{body}");
    assert_clean(front.pid(), &[&r3.pids]);
    // Restarted on its port with the same log: the call was read exactly once, never again.
    let s3 = Server::runner(&r3, &a3.to_string());
    runner_pids.push(s3.pid());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(r3.calls("sleep"), 1, "the lost call was retried");
    drop(s3);

    // --- A killed runner: unavailable, not started; the breaker opens after 3. ---
    s1.kill(&r1);
    assert_clean(front.pid(), &[&r1.pids]);
    for _ in 0..3 {
        let body = seen.front(
            &front,
            CALLER,
            json!({"action": "call", "binding": bindings["r1"], "arguments": {"text": "down"}}),
        );
        assert_eq!(code(&body), "plugin_runner_unavailable", "{body}");
        assert_eq!(dispatch(&body), "not_started", "{body}");
        assert_eq!(body["output"]["recovery"], json!("retry"), "{body}");
    }
    let opened = Instant::now();
    // Open: requests fail fast without even connecting (a listener on the port sees nothing).
    let listener = TcpListener::bind(a1).expect("r1's port is free again");
    listener.set_nonblocking(true).unwrap();
    for params in [
        json!({"action": "list", "runner": "r1"}),
        json!({"action": "call", "binding": bindings["r1"], "arguments": {"text": "x"}}),
    ] {
        let body = seen.front(&front, CALLER, params);
        assert_eq!(code(&body), "plugin_runner_unavailable", "{body}");
        assert_eq!(dispatch(&body), "not_started", "{body}");
    }
    assert!(
        listener.accept().is_err(),
        "an open circuit must not connect to the runner"
    );
    drop(listener);
    // The other runners are not affected.
    let body = seen.front(&front, VIEWER, json!({"action": "list", "runner": "r2"}));
    assert_eq!(body["success"], json!(true), "{body}");

    // --- A restarted runner: old bindings are plugin_replaced; describe again works. ---
    s2.kill(&r2);
    let s2 = Server::runner(&r2, &a2.to_string());
    runner_pids.push(s2.pid());
    let body = seen.front(
        &front,
        CALLER,
        json!({"action": "call", "binding": bindings["r2"], "arguments": {"text": "old"}}),
    );
    assert_eq!(code(&body), "plugin_replaced", "{body}");
    assert_eq!(dispatch(&body), "not_started", "{body}");
    assert_eq!(
        body["output"]["recovery"],
        json!("list_and_describe"),
        "{body}"
    );
    assert_eq!(r2.calls("echo"), 1, "a stale binding reached the plugin");
    let body = seen.front(
        &front,
        VIEWER,
        json!({"action": "describe", "runner": "r2", "plugin": "fx", "tool": "echo"}),
    );
    let fresh = body["output"]["binding"].as_str().unwrap().to_string();
    let body = seen.front(
        &front,
        CALLER,
        json!({"action": "call", "binding": fresh, "arguments": {"text": "again"}}),
    );
    assert_eq!(
        body["output"]["structuredContent"],
        json!({"text": "again"}),
        "{body}"
    );

    // --- r1 comes back; after the open time one probe closes the circuit. ---
    let s1 = Server::runner(&r1, &a1.to_string());
    runner_pids.push(s1.pid());
    let wait = (opened + Duration::from_secs(15) + Duration::from_millis(500))
        .saturating_duration_since(Instant::now());
    std::thread::sleep(wait);
    let body = seen.front(&front, VIEWER, json!({"action": "list", "runner": "r1"}));
    assert_eq!(body["success"], json!(true), "the probe: {body}");
    // r1 restarted too: its old binding is replaced.
    let body = seen.front(
        &front,
        CALLER,
        json!({"action": "call", "binding": bindings["r1"], "arguments": {"text": "old"}}),
    );
    assert_eq!(code(&body), "plugin_replaced", "{body}");

    // Nothing of a runner's config, token, binding or instance reached the caller.
    let everything = seen.0.join("\n");
    let mut secrets: Vec<String> = vec![
        r1.token.clone(),
        r2.token.clone(),
        r3.token.clone(),
        "WC_TEST_R3_TOKEN".into(),
        "r1.tok".into(),
        dir.display().to_string(),
    ];
    for addr in [a1, a2, a3] {
        secrets.push(addr.to_string());
    }
    secrets.extend(instances);
    for secret in &secrets {
        assert!(
            !everything.contains(secret.as_str()),
            "the front leaked {secret:?}"
        );
    }
    // Nor anything of a plugin, on a runner or local: command, argv, cwd, env, stderr, pids
    // (the runners' and the front's plugins, and the runner processes themselves).
    let mut pids: Vec<i32> = [&r1.pids, &r2.pids, &r3.pids, &local_pids]
        .iter()
        .flat_map(|p| common::recorded_plugin_pids(p))
        .collect();
    pids.extend(runner_pids.iter().copied());
    assert!(!pids.is_empty(), "no plugin process was recorded");
    let canary = common::Canary {
        strings: vec![
            canary_text(),
            common::fixture_path().display().to_string(),
            "fixture_plugin".to_string(),
        ],
        pids,
    };
    for answer in &seen.0 {
        canary.assert_absent("an answer of the front", answer);
    }
    // Every binding the caller saw is one of the front's (unknown to every runner).
    let front_bindings: Vec<&str> = everything
        .match_indices("wc_pbind_")
        .map(|(i, _)| &everything[i..i + 31])
        .collect();
    for b in front_bindings {
        let (_, direct) = s2.tool(
            &r2.token,
            json!({"action": "call", "binding": b, "arguments": {"text": "x"}}),
        );
        assert_eq!(
            code(&direct),
            "describe_required",
            "{b} is a runner's binding"
        );
    }

    let front_pid = front.pid();
    let stderr = front.stop();
    for token in [&r1.token, &r2.token, &r3.token] {
        assert!(!stderr.contains(token.as_str()), "a token in the log");
    }
    assert!(common::wait_gone(front_pid));
    drop(s1);
    drop(s2);
    common::assert_no_zombie_children_of_self();
}

/// `gateway --runners` alone (no local runner): JSON lines on stdio, routed to a remote.
#[test]
#[cfg_attr(
    windows,
    ignore = "runs serve processes stopped with SIGTERM; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn stdio_gateway_with_runners_only() {
    let dir = TempDir::new("front", "stdio");
    let r1 = RunnerFiles::new(&dir, "r1");
    let s1 = Server::runner(&r1, "127.0.0.1:0");
    // Without --config the id `local` is free for a remote runner.
    dir.write("local.tok", &format!("{}\n", r1.token));
    let runners = dir.write(
        "runners.toml",
        &format!(
            "[[runners]]\nid = \"local\"\nname = \"Remote as local\"\nurl = \"http://{}\"\n\
             token_file = \"local.tok\"\n",
            s1.addr
        ),
    );
    let (log, pids) = (dir.path("none.log"), dir.path("none.pids"));
    let mut child = front_command(
        &[
            "gateway",
            "--runners",
            s(&runners),
            "--scopes",
            "plugin:inspect,plugin:invoke",
        ],
        "unused",
        &log,
        &pids,
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn gateway");
    let stderr = common::read_all(child.stderr.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |id: u64, params: Value| -> Value {
        let line = json!({"id": id, "tool": "plugin_tool", "params": params}).to_string();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let answer: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(answer["id"], json!(id));
        answer
    };
    let a = ask(1, json!({"action": "list"}));
    assert_eq!(
        a["output"],
        json!({"runners": [{"runner": "local", "name": "Remote as local"}]})
    );
    let a = ask(
        2,
        json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "add"}),
    );
    let binding = a["output"]["binding"].as_str().unwrap().to_string();
    let a = ask(
        3,
        json!({"action": "call", "binding": binding, "arguments": {"a": 40, "b": 2}}),
    );
    assert_eq!(a["output"]["structuredContent"], json!({"sum": 42}), "{a}");
    // The stdio caller has no plugin:manage: refused at the front, never forwarded.
    let a = ask(4, json!({"action": "reload", "runner": "local"}));
    assert_eq!(a["output"]["error"]["code"], json!("insufficient_scope"));
    drop(stdin);
    let status = common::wait_bounded(&mut child, LIMIT);
    assert_eq!(status.code(), Some(0));
    let stderr = stderr.join().unwrap();
    assert!(!stderr.contains(&r1.token), "a token in the log");
    s1.stop();
}

/// `mcp --config --runners`: an MCP client on stdio (raw JSON-RPC lines, handshake era) sees
/// only `plugin_tool`, and through it both the local runner and a real remote `serve` runner:
/// list → describe → call reaches the remote's plugin, a scope the stdio caller lacks is refused
/// at the front, and a killed runner is `plugin_runner_unavailable`, not started.
#[test]
#[cfg_attr(
    windows,
    ignore = "runs serve processes stopped with SIGTERM; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn mcp_with_runners_routes_to_a_remote_serve() {
    let dir = TempDir::new("front", "mcp");
    let r1 = RunnerFiles::new(&dir, "r1");
    let s1 = Server::runner(&r1, "127.0.0.1:0");
    let runners = runners_file(&dir, &[(&r1, s1.addr)]);
    let local = runner_config(&dir, "local.toml");
    let (log, pids) = (dir.path("local.log"), dir.path("local.pids"));
    let mut child = front_command(
        &[
            "mcp",
            "--config",
            s(&local),
            "--runners",
            s(&runners),
            "--scopes",
            "plugin:inspect,plugin:invoke",
        ],
        "unused",
        &log,
        &pids,
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn mcp");
    let stderr = common::read_all(child.stderr.take().unwrap());
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let _ = tx.send(line.unwrap_or_default());
        }
    });
    let mut client = LineClient {
        stdin: Some(child.stdin.take().unwrap()),
        answers: rx,
        seen: Vec::new(),
    };
    let init = client.rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "runners-front-test", "version": "0"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let tools = client.rpc(2, "tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["plugin_tool"], "{tools}");
    let mut tool = |id: u64, arguments: Value| -> Value {
        let answer = client.rpc(
            id,
            "tools/call",
            json!({"name": "plugin_tool", "arguments": arguments}),
        );
        answer["result"].clone()
    };

    let r = tool(3, json!({"action": "list"}));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(
        r["structuredContent"],
        json!({"runners": [{"runner": "local"}, {"runner": "r1", "name": "Runner r1"}]})
    );
    let r = tool(4, json!({"action": "list", "runner": "r1", "plugin": "fx"}));
    assert_eq!(r["isError"], false, "{r}");
    let r = tool(
        5,
        json!({"action": "describe", "runner": "r1", "plugin": "fx", "tool": "add"}),
    );
    assert_eq!(r["isError"], false, "{r}");
    let binding = r["structuredContent"]["binding"]
        .as_str()
        .expect("a binding")
        .to_string();
    let r = tool(
        6,
        json!({"action": "call", "binding": binding, "arguments": {"a": 40, "b": 2}}),
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"], json!({"sum": 42}), "{r}");
    // The call ran on the remote runner's plugin, not on the local one.
    assert_eq!(r1.calls("add"), 1);
    assert_eq!(
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("tools/call")
            .count(),
        0
    );
    // The stdio caller lacks plugin:manage: refused at the front, never forwarded.
    let r = tool(7, json!({"action": "reload", "runner": "r1"}));
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(
        r["structuredContent"]["error"]["code"], "insufficient_scope",
        "{r}"
    );
    // The runner dies: its requests are unavailable, not started; the local runner still works.
    s1.kill(&r1);
    let r = tool(8, json!({"action": "list", "runner": "r1", "plugin": "fx"}));
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(
        r["structuredContent"]["error"]["code"], "plugin_runner_unavailable",
        "{r}"
    );
    assert_eq!(r["structuredContent"]["dispatch"], "not_started", "{r}");
    let r = tool(
        9,
        json!({"action": "list", "runner": "local", "plugin": "fx"}),
    );
    assert_eq!(r["isError"], false, "{r}");

    client.stdin = None;
    let status = common::wait_bounded(&mut child, LIMIT);
    assert_eq!(status.code(), Some(0));
    assert!(
        client.answers.recv_timeout(LIMIT).is_err(),
        "a message after EOF"
    );
    let stderr = stderr.join().unwrap();
    // Never a token anywhere; the runner's address only in the operator's log, never in an
    // MCP message.
    assert!(!stderr.contains(&r1.token), "a token in the log: {stderr}");
    for text in &client.seen {
        assert!(!text.contains(&r1.token), "a token in an answer: {text}");
        assert!(
            !text.contains(&s1_addr_text(&runners)),
            "a runner url: {text}"
        );
    }
    assert_clean(child.id() as i32, &[&r1.pids, &pids]);
}

/// A JSON-RPC client on a child's stdio lines (stdin closed by setting `stdin` to `None`).
struct LineClient {
    stdin: Option<std::process::ChildStdin>,
    answers: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl LineClient {
    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// One request and its answer (the front answers each before the next is sent).
    fn rpc(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let line = self
            .answers
            .recv_timeout(LIMIT * 2)
            .expect("an answer from mcp");
        self.seen.push(line.clone());
        let answer: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
        assert_eq!(answer["id"], json!(id), "{answer}");
        answer
    }
}

/// The `host:port` of the runners file's first url (must never reach a caller).
fn s1_addr_text(runners: &Path) -> String {
    let text = std::fs::read_to_string(runners).unwrap();
    let url = text
        .lines()
        .find_map(|l| l.strip_prefix("url = \"http://"))
        .expect("a url");
    url.trim_end_matches('"').to_string()
}

/// A bad runners file stops `serve` before anything starts, saying what to fix, without a token.
#[test]
#[cfg_attr(
    windows,
    ignore = "runs serve processes stopped with SIGTERM; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn a_bad_runners_file_is_a_usage_error() {
    let dir = TempDir::new("front", "bad");
    let local = runner_config(&dir, "local.toml");
    let tokens = front_tokens(&dir);
    let secret = "never-echo-this-token-0123456789";
    for (text, want) in [
        (
            format!("[[runners]]\nid = \"a\"\nname = \"A\"\nurl = \"http://127.0.0.1:9\"\ntoken = \"{secret}\"\n"),
            "unknown key `token`",
        ),
        (
            "[[runners]]\nid = \"local\"\nname = \"A\"\nurl = \"http://127.0.0.1:9\"\ntoken_env = \"X\"\n".to_string(),
            "`local` is the runner of --config",
        ),
        (
            "[[runners]]\nid = \"a\"\nname = \"A\"\nurl = \"http://127.0.0.1:9\"\ntoken_file = \"missing.tok\"\n".to_string(),
            "cannot read token_file",
        ),
    ] {
        let runners = dir.write("runners.toml", &text);
        let pids = dir.path("bad.pids");
        let out = front_command(
            &[
                "serve", "--config", s(&local), "--runners", s(&runners), "--listen",
                "127.0.0.1:0", "--tokens", s(&tokens),
            ],
            "unused",
            &dir.path("bad.log"),
            &pids,
        )
        .stdin(Stdio::null())
        .output()
        .expect("run serve");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(want), "{stderr}");
        assert!(!stderr.contains(secret), "{stderr}");
        assert!(out.stdout.is_empty(), "it must not start listening");
        // No plugin was started for a bad runners file.
        assert!(common::recorded_plugin_pids(&pids).is_empty());
    }
}

/// The inspector page served by a front lists every runner, a remote one with its name and its
/// providers, and an unreachable one with its failure, in the browser.
#[test]
#[ignore = "needs chromium and chromedriver"]
fn the_inspector_of_a_front_shows_every_runner() {
    let dir = TempDir::new("front", "inspector");
    let r1 = RunnerFiles::new(&dir, "r1");
    let r2 = RunnerFiles::new(&dir, "r2");
    let s1 = Server::runner(&r1, "127.0.0.1:0");
    let s2 = Server::runner(&r2, "127.0.0.1:0");
    let runners = runners_file(&dir, &[(&r1, s1.addr), (&r2, s2.addr)]);
    s2.kill(&r2);
    let local = runner_config(&dir, "local.toml");
    let tokens = front_tokens(&dir);
    let front = Server::spawn(front_command(
        &[
            "serve",
            "--config",
            s(&local),
            "--runners",
            s(&runners),
            "--listen",
            "127.0.0.1:0",
            "--tokens",
            s(&tokens),
        ],
        "unused",
        &dir.path("local.log"),
        &dir.path("local.pids"),
    ));
    let browser = inspector_support::Browser::start();
    browser.connect(&format!("http://{}", front.addr), MANAGER);
    let ids = browser.exec(
        "return Array.from(document.querySelectorAll('section.runner'))\
           .map((s) => s.getAttribute('data-runner'));",
        vec![],
    );
    assert_eq!(ids, json!(["local", "r1", "r2"]));
    let r1_section = browser.text_of("section.runner[data-runner=\"r1\"]");
    assert!(r1_section.contains("Runner r1"), "{r1_section}");
    assert_eq!(
        browser.count("section.runner[data-runner=\"r1\"] article.provider[data-plugin=\"fx\"]"),
        1
    );
    let r2_section = browser.text_of("section.runner[data-runner=\"r2\"]");
    assert!(
        r2_section.contains("plugin_runner_unavailable"),
        "{r2_section}"
    );
    assert!(!r2_section.contains(&s1.addr.to_string()));
    drop(browser);
    front.stop();
    s1.stop();
}
