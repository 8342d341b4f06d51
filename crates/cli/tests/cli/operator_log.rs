//! The operator's log: `serve`, `gateway` and `mcp` log a provider that dies mid-call and one
//! that fails admission at warn, with its id, phase, code and the tail of its stderr (escaped),
//! on the host's own stderr, never in a response. `serve` also logs one info line per provider
//! at start. Real processes throughout: the CLI binary and the fixture plugin.

use crate::common;
use crate::tempdir;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest one response or exit may take (a hang, never a timing).
const LIMIT: Duration = Duration::from_secs(30);

/// A line the fixture writes to stderr at start and before each tools/call, with an escape
/// sequence a log must not pass through.
fn marker() -> String {
    format!("wcTAIL{}x", std::process::id())
}

/// runner.toml: `crashy` (a normal fixture: its `crash` tool exits mid-call) and `broken`
/// (exits at start), both writing [`marker`] plus ESC to stderr.
fn write_config(dir: &TempDir) -> PathBuf {
    let fixture = common::fixture_path();
    let command = toml::Value::String(fixture.to_str().expect("UTF-8 path").into()).to_string();
    dir.write(
        "runner.toml",
        &format!(
            "[shell]\nenv = {{ FIXTURE_STDERR = \"{} says \\u001b[31mred\" }}\n\n\
             [[plugins.providers]]\nid = \"crashy\"\nname = \"Crashy\"\ncommand = {command}\nargs = [\"normal\"]\n\n\
             [[plugins.providers]]\nid = \"broken\"\nname = \"Broken\"\ncommand = {command}\nargs = [\"exit-at-start\"]\n",
            marker()
        ),
    )
}

/// Asserts that `stderr` (the host's log) has a warn line naming `needle` (id, phase and code)
/// together with the escaped stderr tail, and no raw control character at all.
fn assert_warned(stderr: &str, needle: &str) {
    let tail = format!("\"{} says ?[31mred\"", marker());
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("WARN") && l.contains(needle) && l.contains(&tail)),
        "no warn line with {needle:?} and the stderr tail {tail:?} in:\n{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "a control character reached the log:\n{stderr:?}"
    );
}

fn assert_both_warned(stderr: &str) {
    // One line per death: the crash mid-call is not also logged as an idle exit.
    assert_eq!(
        stderr.matches("plugin provider \"crashy\" retired").count(),
        1,
        "{stderr}"
    );
    // The crash tool exits with status 3: the line says so.
    assert_warned(
        stderr,
        "plugin provider \"crashy\" retired: phase call, code plugin_eof: the plugin exited \
         with status 3;",
    );
    assert_warned(
        stderr,
        // The plugin exits before it reads: the host sees EOF or a broken stdin, whichever first.
        "plugin provider \"broken\" failed admission: phase initialize, code plugin_",
    );
}

/// A line-speaking child (`gateway` or `mcp`) with stdout read on a thread of its own.
struct LineProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl LineProcess {
    fn start(mut command: Command) -> LineProcess {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the CLI");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let line = line.expect("stdout is UTF-8");
                let value = serde_json::from_str(&line).expect("stdout line is JSON");
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        LineProcess {
            stdin: child.stdin.take(),
            stderr: Some(common::read_all(child.stderr.take().expect("stderr"))),
            child,
            lines: rx,
        }
    }

    /// Sends one JSON line and returns the next line the process writes.
    fn ask(&mut self, message: Value) -> Value {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
        self.lines.recv_timeout(LIMIT).expect("a response")
    }

    /// Closes stdin, waits for exit 0 and returns stderr.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        let status = common::wait_bounded(&mut self.child, LIMIT);
        let stderr = self.stderr.take().expect("stderr").join().expect("reader");
        assert_eq!(status.code(), Some(0), "{stderr}");
        stderr
    }
}

impl Drop for LineProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn gateway_logs_a_plugin_that_exits_while_idle() {
    let dir = TempDir::new("oplog", "idle");
    let fixture = common::fixture_path();
    let command = toml::Value::String(fixture.to_str().expect("UTF-8 path").into()).to_string();
    let config = dir.write(
        "runner.toml",
        &format!(
            "[shell]\nenv = {{ FIXTURE_STDERR = \"{} says \\u001b[31mred\" }}\n\n\
             [[plugins.providers]]\nid = \"quitter\"\nname = \"Quitter\"\ncommand = {command}\n\
             args = [\"exit-after-handshake\"]\n",
            marker()
        ),
    );
    let mut gateway = LineProcess::start(cli(&["gateway"], &config));
    // The plugin exits by itself about 100 ms after its handshake; wait (bounded) until the
    // host has retired it, so the shutdown at EOF is not what ends it.
    let deadline = std::time::Instant::now() + LIMIT;
    let mut id = 0;
    loop {
        id += 1;
        let listed = gateway.ask(json!({"id":id,"tool":"plugin_tool","params":
            {"action":"list","runner":"local","plugin":"quitter"}}));
        if listed["output"]["errorCode"] == "plugin_provider_unavailable" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never retired: {listed}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let stderr = gateway.finish();
    // The fixture exits with status 4 after its handshake.
    assert_warned(
        &stderr,
        "plugin provider \"quitter\" retired: phase idle, code plugin_eof: the plugin exited \
         with status 4;",
    );
}

fn cli(args: &[&str], config: &Path) -> Command {
    let mut command = common::cli_command(BIN);
    command.args(args).arg("--config").arg(config);
    command
}

fn describe_crash() -> Value {
    json!({"action":"describe","runner":"local","plugin":"crashy","tool":"crash"})
}

#[test]
fn gateway_logs_a_crash_mid_call_and_a_failed_start_at_warn() {
    let dir = TempDir::new("oplog", "gateway");
    let config = write_config(&dir);
    let mut gateway = LineProcess::start(cli(&["gateway"], &config));
    let described = gateway.ask(json!({"id":1,"tool":"plugin_tool","params":describe_crash()}));
    let binding = described["output"]["binding"].clone();
    assert!(binding.is_string(), "{described}");
    let called = gateway.ask(json!({"id":2,"tool":"plugin_tool","params":
        {"action":"call","binding":binding,"arguments":{}}}));
    assert_eq!(called["output"]["error"]["code"], "plugin_eof", "{called}");
    assert!(!called.to_string().contains(&marker()), "{called}");
    assert!(!called.to_string().contains("status 3"), "{called}");
    let stderr = gateway.finish();
    assert_both_warned(&stderr);
}

#[test]
fn mcp_logs_a_crash_mid_call_and_a_failed_start_at_warn() {
    let dir = TempDir::new("oplog", "mcp");
    let config = write_config(&dir);
    let mut mcp = LineProcess::start(cli(&["mcp"], &config));
    mcp.ask(
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}),
    );
    let stdin = mcp.stdin.as_mut().expect("stdin");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc":"2.0","method":"notifications/initialized"})
    )
    .expect("write");
    let tool = |id: u64, arguments: Value| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
               "params":{"name":"plugin_tool","arguments":arguments}})
    };
    let described = mcp.ask(tool(1, describe_crash()));
    let binding = described["result"]["structuredContent"]["binding"].clone();
    assert!(binding.is_string(), "{described}");
    let called = mcp.ask(tool(
        2,
        json!({"action":"call","binding":binding,"arguments":{}}),
    ));
    assert!(
        called.to_string().contains("plugin_eof"),
        "the call should fail with plugin_eof: {called}"
    );
    assert!(!called.to_string().contains(&marker()), "{called}");
    let stderr = mcp.finish();
    assert_both_warned(&stderr);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn serve_logs_providers_at_start_and_a_crash_mid_call_at_warn() {
    let dir = TempDir::new("oplog", "serve");
    let config = write_config(&dir);
    let tokens = common::serve::write_tokens_file(&dir);
    let mut command = cli(&["serve", "--listen", "127.0.0.1:0"], &config);
    command.arg("--tokens").arg(&tokens).env("RUST_LOG", "info");
    let serve = common::serve::ServeProcess::start(command);
    let post = |params: Value| -> (u16, String) {
        let body = json!({"tool":"plugin_tool","params":params}).to_string();
        post(&serve.addr.to_string(), &body)
    };
    let (status, described) = post(describe_crash());
    assert_eq!(status, 200, "{described}");
    let described: Value = serde_json::from_str(&described).expect("JSON");
    let binding = described["output"]["binding"].clone();
    let (status, called) = post(json!({"action":"call","binding":binding,"arguments":{}}));
    assert_eq!(status, 400, "{called}");
    assert!(called.contains("plugin_eof"), "{called}");
    assert!(!called.contains(&marker()), "{called}");
    // A check candidate that fails is logged at info (a bad plugin is a successful check).
    let (status, checked) = post(json!({"action":"check","runner":"local","plugin":"broken"}));
    assert_eq!(status, 200, "{checked}");
    assert!(!checked.contains(&marker()), "{checked}");
    let stderr = serve.stop();
    let tail = format!("\"{} says ?[31mred\"", marker());
    assert!(
        stderr.lines().any(|l| l.contains("INFO")
            && l.contains("plugin check candidate \"broken\" failed admission: phase initialize")
            && l.contains(&tail)),
        "no info line for the failed check candidate in:\n{stderr}"
    );
    assert_both_warned(&stderr);
    for needle in [
        "plugin provider \"crashy\": ready, 20 tools",
        "plugin provider \"broken\": failed, code plugin_",
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains("INFO") && l.contains(needle)),
            "no info line {needle:?} in:\n{stderr}"
        );
    }
}

/// One raw HTTP/1.1 POST of `body` to `/api/tools/call` with the all-scopes token: (status, body).
fn post(addr: &str, body: &str) -> (u16, String) {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(LIMIT)).expect("read timeout");
    write!(
        stream,
        "POST /api/tools/call HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Authorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        common::serve::TOKEN_ALL,
        body.len()
    )
    .expect("send");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let response = common::http::parse_response(&raw);
    (response.status, response.text())
}

// ---------------------------------------------------------------------------------------------
// The local detail: what happened, in the host's log and the in-process CLI, never in a
// plugin_tool output.

/// runner.toml with one fixture provider `fx` (mode `mode`) and `extra` lines in its block.
fn fixture_config(dir: &TempDir, mode: &str, extra: &str) -> PathBuf {
    let fixture = common::fixture_path();
    let command = toml::Value::String(fixture.to_str().expect("UTF-8 path").into()).to_string();
    dir.write(
        "runner.toml",
        &format!(
            "[[plugins.providers]]\nid = \"fx\"\nname = \"Fixture\"\ncommand = {command}\n\
             args = [\"{mode}\"]\n{extra}"
        ),
    )
}

/// Waits (bounded) until the fixture recorded its pid in `pids`, and until it read a
/// tools/call of `tool` when one is given (its `FIXTURE_LOG` at `log`); the plugin's pid.
#[cfg(unix)]
fn wait_for_plugin(pids: &Path, call: Option<(&Path, &str)>) -> i32 {
    let deadline = std::time::Instant::now() + LIMIT;
    loop {
        let pid = common::recorded_plugin_pids(pids).first().copied();
        let called = match call {
            None => true,
            Some((log, tool)) => std::fs::read_to_string(log)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .any(|v| v["method"] == "tools/call" && v["params"]["name"] == tool),
        };
        if let (Some(pid), true) = (pid, called) {
            return pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the plugin never got there"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// SIGKILL to `pid` from outside, as an OOM killer or an operator would.
#[cfg(unix)]
fn sigkill(pid: i32) {
    // SAFETY: kill(2) on the pid of a plugin this test started through the CLI.
    assert_eq!(
        unsafe { libc::kill(pid, libc::SIGKILL) },
        0,
        "kill -9 {pid}"
    );
}

#[cfg(unix)]
const KILLED: &str = "the plugin was killed by signal 9 (SIGKILL)";

#[cfg(unix)]
#[test]
fn a_plugin_killed_by_sigkill_mid_call_is_named_so_by_the_cli_and_the_log() {
    let dir = TempDir::new("oplog", "sigkill-cli");
    let config = fixture_config(&dir, "normal", "");
    let (pids, log) = (dir.path("pids"), dir.path("log"));
    let mut command = cli(&["call", "--plugin", "fx", "--tool", "hang"], &config);
    command
        .env("FIXTURE_PIDS", &pids)
        .env("FIXTURE_LOG", &log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn call");
    let stdout = common::read_all(child.stdout.take().expect("stdout"));
    let stderr = common::read_all(child.stderr.take().expect("stderr"));
    let plugin = wait_for_plugin(&pids, Some((&log, "hang")));
    sigkill(plugin);
    let status = common::wait_bounded(&mut child, LIMIT);
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert_eq!(status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("error: plugin_eof:") && stdout.contains(&format!("detail: {KILLED}")),
        "the human output names the signal:\n{stdout}"
    );
    assert!(
        stderr.lines().any(|l| l.contains("WARN")
            && l.contains(&format!("retired: phase call, code plugin_eof: {KILLED};"))),
        "the log names the signal:\n{stderr}"
    );
    assert!(
        common::wait_gone(plugin),
        "the plugin {plugin} is still there"
    );
    common::assert_no_zombie_children_of_self();

    // --json: stdout keeps the canonical object; the detail is a note on stderr.
    let _ = std::fs::remove_file(&pids);
    let _ = std::fs::remove_file(&log);
    let mut command = cli(
        &["call", "--plugin", "fx", "--tool", "hang", "--json"],
        &config,
    );
    command
        .env("FIXTURE_PIDS", &pids)
        .env("FIXTURE_LOG", &log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn call --json");
    let stdout = common::read_all(child.stdout.take().expect("stdout"));
    let stderr = common::read_all(child.stderr.take().expect("stderr"));
    let plugin = wait_for_plugin(&pids, Some((&log, "hang")));
    sigkill(plugin);
    let status = common::wait_bounded(&mut child, LIMIT);
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert_eq!(status.code(), Some(1), "{stdout}\n{stderr}");
    let output: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(output["error"]["code"], "plugin_eof", "{output}");
    assert!(!stdout.contains("signal"), "{stdout}");
    assert!(stderr.contains(&format!("note: {KILLED}")), "{stderr}");
    assert!(common::wait_gone(plugin));
    common::assert_no_zombie_children_of_self();
}

#[cfg(unix)]
#[test]
fn a_plugin_killed_by_sigkill_is_named_in_the_gateway_log_but_not_in_plugin_tool_output() {
    // Mid-call.
    let dir = TempDir::new("oplog", "sigkill-gw");
    let config = fixture_config(&dir, "normal", "");
    let (pids, log) = (dir.path("pids"), dir.path("log"));
    let mut command = cli(&["gateway"], &config);
    command.env("FIXTURE_PIDS", &pids).env("FIXTURE_LOG", &log);
    let mut gateway = LineProcess::start(command);
    let described = gateway.ask(json!({"id":1,"tool":"plugin_tool","params":
        {"action":"describe","runner":"local","plugin":"fx","tool":"hang"}}));
    let binding = described["output"]["binding"].clone();
    let stdin = gateway.stdin.as_mut().expect("stdin");
    writeln!(
        stdin,
        "{}",
        json!({"id":2,"tool":"plugin_tool","params":{"action":"call","binding":binding,"arguments":{}}})
    )
    .expect("write");
    stdin.flush().expect("flush");
    let plugin = wait_for_plugin(&pids, Some((&log, "hang")));
    sigkill(plugin);
    let called = gateway
        .lines
        .recv_timeout(LIMIT)
        .expect("the call's answer");
    assert_eq!(called["output"]["error"]["code"], "plugin_eof", "{called}");
    let text = called.to_string();
    assert!(
        !text.contains("signal") && !text.contains("SIGKILL"),
        "{text}"
    );
    assert!(common::wait_gone(plugin));
    let stderr = gateway.finish();
    assert!(
        stderr.contains(&format!("retired: phase call, code plugin_eof: {KILLED};")),
        "{stderr}"
    );
    common::assert_no_zombie_children_of_self();

    // While idle.
    let dir = TempDir::new("oplog", "sigkill-idle");
    let config = fixture_config(&dir, "normal", "");
    let pids = dir.path("pids");
    let mut command = cli(&["gateway"], &config);
    command.env("FIXTURE_PIDS", &pids);
    let mut gateway = LineProcess::start(command);
    let plugin = wait_for_plugin(&pids, None);
    let listed = gateway.ask(json!({"id":1,"tool":"plugin_tool","params":
        {"action":"list","runner":"local","plugin":"fx"}}));
    assert_eq!(listed["output"]["status"], "ready", "{listed}");
    sigkill(plugin);
    let deadline = std::time::Instant::now() + LIMIT;
    for id in 2.. {
        let listed = gateway.ask(json!({"id":id,"tool":"plugin_tool","params":
            {"action":"list","runner":"local","plugin":"fx"}}));
        if listed["output"]["errorCode"] == "plugin_provider_unavailable" {
            assert!(!listed.to_string().contains("signal"), "{listed}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never retired: {listed}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(common::wait_gone(plugin));
    let stderr = gateway.finish();
    assert!(
        stderr.contains(&format!("retired: phase idle, code plugin_eof: {KILLED};")),
        "{stderr}"
    );
    common::assert_no_zombie_children_of_self();
}

#[cfg(unix)]
#[test]
fn a_timeout_names_its_value_and_the_key_that_sets_it() {
    let dir = TempDir::new("oplog", "timeout");
    let config = fixture_config(&dir, "normal", "timeout_secs = 1\n");
    let pids = dir.path("pids");
    let mut command = cli(&["call", "--plugin", "fx", "--tool", "hang"], &config);
    command.env("FIXTURE_PIDS", &pids);
    let r = common::run_to_end(command, LIMIT);
    assert_eq!(r.code, Some(1), "{r:?}");
    let detail = "the plugin did not answer within 1 s, the timeout set by the provider's \
                  `timeout_secs` in runner.toml, else by `request_timeout_secs` under [plugins]";
    assert!(
        r.stdout.contains("error: plugin_timeout:")
            && r.stdout.contains(&format!("detail: {detail}")),
        "{r:?}"
    );
    assert!(
        r.stderr.contains(&format!(
            "retired: phase call, code plugin_timeout: {detail}"
        )),
        "{r:?}"
    );
    common::assert_all_gone(&common::recorded_plugin_pids(&pids), "plugin");

    // The same timeout through plugin_tool: the bounded message only.
    let mut gateway = LineProcess::start(cli(&["gateway"], &config));
    let described = gateway.ask(json!({"id":1,"tool":"plugin_tool","params":
        {"action":"describe","runner":"local","plugin":"fx","tool":"hang"}}));
    let called = gateway.ask(json!({"id":2,"tool":"plugin_tool","params":
        {"action":"call","binding":described["output"]["binding"],"arguments":{}}}));
    assert_eq!(
        called["output"]["error"]["code"], "plugin_timeout",
        "{called}"
    );
    let text = called.to_string();
    assert!(
        !text.contains("timeout_secs") && !text.contains("1 s"),
        "{text}"
    );
    let stderr = gateway.finish();
    assert!(stderr.contains(detail), "{stderr}");
    common::assert_no_zombie_children_of_self();
}

#[test]
fn check_in_process_names_the_keyword_and_pointer_and_plugin_tool_check_does_not() {
    let dir = TempDir::new("oplog", "keyword");
    // `bad-tools`: the `add` tool's inputSchema gives property `a` the keyword `minimum`.
    let config = fixture_config(&dir, "bad-tools", "");
    let detail = "tool `add`: the inputSchema uses `minimum` at /properties/a/minimum (a JSON \
                  Pointer in that schema), a keyword outside Schema Profile v1";
    let r = common::run_to_end(cli(&["check", "--plugin", "fx"], &config), LIMIT);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(
        r.stdout.contains("schema_keyword_unsupported")
            && r.stdout.contains(&format!("detail: {detail}")),
        "{r:?}"
    );
    let r = common::run_to_end(cli(&["check", "--plugin", "fx", "--json"], &config), LIMIT);
    assert_eq!(r.code, Some(2), "{r:?}");
    let report: Value = serde_json::from_str(r.stdout.trim()).expect("one JSON object");
    assert_eq!(
        report["diagnostic"],
        json!({"code":"schema_keyword_unsupported","tool":"add","field":"inputSchema"})
    );
    assert!(!r.stdout.contains("minimum"), "{r:?}");
    assert!(r.stderr.contains(&format!("note: {detail}")), "{r:?}");

    // Through plugin_tool (the stdio gateway): the bounded diagnostic only; the gateway's own
    // log of the failed start names keyword and pointer.
    let mut gateway = LineProcess::start(cli(&["gateway"], &config));
    let checked = gateway.ask(json!({"id":1,"tool":"plugin_tool","params":
        {"action":"check","runner":"local","plugin":"fx"}}));
    assert_eq!(checked["output"]["ready"], false, "{checked}");
    assert_eq!(
        checked["output"]["diagnostic"]["code"], "schema_keyword_unsupported",
        "{checked}"
    );
    let text = checked.to_string();
    assert!(
        !text.contains("minimum") && !text.contains("/properties"),
        "{text}"
    );
    let stderr = gateway.finish();
    assert!(
        stderr.lines().any(|l| l.contains("WARN")
            && l.contains("plugin provider \"fx\" failed admission")
            && l.contains(detail)),
        "{stderr}"
    );
}

#[test]
fn an_output_schema_violation_names_pointer_and_keyword_locally_only() {
    let dir = TempDir::new("oplog", "output");
    let config = fixture_config(&dir, "normal", "");
    // `bad_output` answers structuredContent {"n": "not a number"} for an integer `n`.
    let detail = "structuredContent does not match the tool's outputSchema at JSON Pointer /n \
                  (of structuredContent): expected integer (keyword `type`)";
    let r = common::run_to_end(
        cli(&["call", "--plugin", "fx", "--tool", "bad_output"], &config),
        LIMIT,
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stdout.contains("plugin_output_schema_violation")
            && r.stdout.contains(&format!("detail: {detail}")),
        "{r:?}"
    );
    assert!(r.stderr.contains(detail), "the retirement line: {r:?}");
    let mut gateway = LineProcess::start(cli(&["gateway"], &config));
    let described = gateway.ask(json!({"id":1,"tool":"plugin_tool","params":
        {"action":"describe","runner":"local","plugin":"fx","tool":"bad_output"}}));
    let called = gateway.ask(json!({"id":2,"tool":"plugin_tool","params":
        {"action":"call","binding":described["output"]["binding"],"arguments":{}}}));
    assert_eq!(
        called["output"]["error"]["code"], "plugin_output_schema_violation",
        "{called}"
    );
    let text = called.to_string();
    assert!(
        !text.contains("JSON Pointer") && !text.contains("keyword"),
        "{text}"
    );
    gateway.finish();
}
