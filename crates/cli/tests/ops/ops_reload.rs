//! SIGHUP on `serve`: the tokens file, runner.toml and the runners file are re-read while it
//! keeps serving; a bad file keeps the old state and logs a warning (never a token or a path).
#![cfg(unix)]

use crate::common;
use crate::ops_support;
use crate::tempdir;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use ops_support::{hang_up, s, LoggedServe, TOKEN};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// A token added to the tokens file after `serve` started.
const NEW_TOKEN: &str = "added-after-start-token-9f3e1c";
/// A marker inside a broken tokens file: no log line may quote it.
const BROKEN_MARKER: &str = "broken-file-marker-4b7d";

/// The test's tokens file with one more entry (`added`, every scope).
fn tokens_with_added(dir: &TempDir) {
    let base = std::fs::read_to_string(dir.path("tokens.toml")).unwrap();
    let text = format!(
        "{base}\n[[tokens]]\nname = \"added\"\ntoken = \"{NEW_TOKEN}\"\n\
         scopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\"]\n"
    );
    std::fs::write(dir.path("tokens.toml"), text).unwrap();
}

fn serve_command(config: &Path, tokens: &Path, runners: Option<&Path>) -> std::process::Command {
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--config",
        s(config),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(tokens),
    ])
    .env("RUST_LOG", "info");
    if let Some(runners) = runners {
        cmd.args(["--runners", s(runners)]);
    }
    for var in common::PROXY_VARIABLES {
        cmd.env_remove(var);
    }
    cmd
}

/// The plugin ids `list` shows on the runner `local`.
fn plugins(serve: &LoggedServe) -> Vec<String> {
    let (status, body) = serve.tool_with(TOKEN, "", json!({"action": "list", "runner": "local"}));
    assert_eq!(status, 200, "{body}");
    listed(&body, "plugins", "plugin")
}

fn list(serve: &LoggedServe, token: &str) -> (u16, Value) {
    serve.tool_with(token, "", json!({"action": "list"}))
}

/// The ids under `output.{array}[].{key}` of a `list` answer: the plugins of a one-runner
/// gateway (`plugins`, `plugin`) or the runners of a front (`runners`, `runner`).
fn listed(body: &Value, array: &str, key: &str) -> Vec<String> {
    let mut ids: Vec<String> = body["output"][array]
        .as_array()
        .unwrap_or_else(|| panic!("no {array}: {body}"))
        .iter()
        .filter_map(|p| p[key].as_str().map(str::to_string))
        .collect();
    ids.sort();
    ids
}

#[test]
fn sighup_swaps_the_tokens_and_a_broken_file_keeps_the_old_ones() {
    let dir = TempDir::new("ops", "hup-tokens");
    let (config, tokens) = ops_support::files(&dir, false);
    let mut serve = LoggedServe::start(serve_command(&config, &tokens, None));
    assert_eq!(list(&serve, NEW_TOKEN).0, 401, "not yet in the file");

    tokens_with_added(&dir);
    assert!(hang_up(serve.pid()));
    serve.wait_for_line("`--tokens reloaded`", |l| l.contains("--tokens reloaded"));
    assert_eq!(list(&serve, NEW_TOKEN).0, 200, "the added token works");
    assert_eq!(list(&serve, TOKEN).0, 200, "the old ones too");

    // A broken file: the tokens in place stay, the warning quotes nothing from the file.
    std::fs::write(
        &tokens,
        format!("[[tokens]]\nname = \"{BROKEN_MARKER}\"\ntoken = \"short\"\n"),
    )
    .unwrap();
    assert!(hang_up(serve.pid()));
    let warning = serve.wait_for_line("`--tokens not reloaded`", |l| {
        l.contains("--tokens not reloaded")
    });
    assert!(warning.contains("WARN"), "{warning}");
    assert!(!warning.contains(BROKEN_MARKER), "{warning}");
    assert!(!warning.contains(s(&tokens)), "{warning}");
    assert_eq!(list(&serve, NEW_TOKEN).0, 200, "the old tokens stay");
    assert_eq!(list(&serve, TOKEN).0, 200);

    // Removed from a good file: refused from then on.
    common::serve::write_tokens_file(&dir);
    assert!(hang_up(serve.pid()));
    serve.wait_for_line("a second `--tokens reloaded`", |l| {
        l.contains("--tokens reloaded")
    });
    assert_eq!(list(&serve, NEW_TOKEN).0, 401, "a removed token is refused");
    assert!(serve.alive(), "SIGHUP does not end serve");
    let (status, lines) = serve.stop();
    assert_eq!(status.code(), Some(0), "{lines:#?}");
    for line in &lines {
        assert!(!line.contains(NEW_TOKEN) && !line.contains(TOKEN), "{line}");
    }
}

#[test]
fn sighup_reloads_runner_toml_and_a_bad_one_keeps_the_providers() {
    let dir = TempDir::new("ops", "hup-config");
    let (config, tokens) = ops_support::files(&dir, false);
    let mut serve = LoggedServe::start(serve_command(&config, &tokens, None));
    assert_eq!(plugins(&serve), ["fx"]);

    // A second provider.
    let fixture = serde_json::to_string(s(&common::fixture_path())).unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{text}\n[[plugins.providers]]\nid = \"fy\"\nname = \"Second\"\ncommand = {fixture}\n\
             args = [\"normal\"]\n"
        ),
    )
    .unwrap();
    assert!(hang_up(serve.pid()));
    serve.wait_for_line("`runner.toml reloaded`", |l| {
        l.contains("runner.toml reloaded")
    });
    assert_eq!(plugins(&serve), ["fx", "fy"]);
    // The old instance of fx was stopped and reaped: no zombie child of serve.
    common::assert_no_leftovers(
        serve.pid() as i32,
        &[],
        common::ChildScope::AllZombieChildren,
    );

    // Not TOML: the providers stay and the warning says why.
    std::fs::write(&config, format!("[plugins\n{BROKEN_MARKER}")).unwrap();
    assert!(hang_up(serve.pid()));
    let warning = serve.wait_for_line("`runner.toml not reloaded`", |l| {
        l.contains("runner.toml not reloaded")
    });
    assert!(warning.contains("WARN"), "{warning}");
    assert!(!warning.contains(BROKEN_MARKER), "{warning}");
    assert_eq!(plugins(&serve), ["fx", "fy"]);
    assert!(serve.alive(), "SIGHUP does not end serve");
    let (status, lines) = serve.stop();
    assert_eq!(status.code(), Some(0), "{lines:#?}");
}

/// A runner `serve` (the fixture as `fx`) for a front; its token is [`TOKEN`].
fn runner(dir: &TempDir, name: &str) -> LoggedServe {
    let sub = TempDir::new("ops", name);
    let (config, tokens) = ops_support::files(&sub, false);
    let config = copy_into(dir, &config, &format!("{name}-runner.toml"));
    let tokens = copy_into(dir, &tokens, &format!("{name}-tokens.toml"));
    LoggedServe::start(serve_command(&config, &tokens, None))
}

fn copy_into(dir: &TempDir, from: &Path, name: &str) -> PathBuf {
    let to = dir.path(name);
    std::fs::copy(from, &to).unwrap();
    to
}

fn runners_text(dir: &TempDir, runners: &[(&str, SocketAddr)]) -> String {
    dir.write("runner.tok", &format!("{TOKEN}\n"));
    runners
        .iter()
        .map(|(id, addr)| {
            format!(
                "[[runners]]\nid = \"{id}\"\nname = \"Runner {id}\"\nurl = \"http://{addr}\"\n\
                 token_file = \"runner.tok\"\n\n"
            )
        })
        .collect()
}

#[test]
fn sighup_swaps_the_remote_runners_and_keeps_an_unchanged_ones_bindings() {
    let dir = TempDir::new("ops", "hup-runners");
    let r1 = runner(&dir, "r1");
    let r2 = runner(&dir, "r2");
    let (config, tokens) = ops_support::files(&dir, false);
    let runners = dir.write("runners.toml", &runners_text(&dir, &[("r1", r1.addr)]));
    let mut front = LoggedServe::start(serve_command(&config, &tokens, Some(&runners)));
    assert_eq!(
        listed(&list(&front, TOKEN).1, "runners", "runner"),
        ["local", "r1"]
    );
    let describe = json!({"action": "describe", "runner": "r1", "plugin": "fx", "tool": "echo"});
    let (status, described) = front.tool_with(TOKEN, "", describe);
    assert_eq!(status, 200, "{described}");
    let binding = described["output"]["binding"].clone();

    // r2 joins, r1 is unchanged.
    std::fs::write(
        &runners,
        runners_text(&dir, &[("r1", r1.addr), ("r2", r2.addr)]),
    )
    .unwrap();
    assert!(hang_up(front.pid()));
    front.wait_for_line("`--runners reloaded`", |l| l.contains("--runners reloaded"));
    assert_eq!(
        listed(&list(&front, TOKEN).1, "runners", "runner"),
        ["local", "r1", "r2"]
    );
    let call = json!({"action": "call", "binding": binding, "arguments": {"text": "kept"}});
    let (status, called) = front.tool_with(TOKEN, "", call.clone());
    assert_eq!(
        status, 200,
        "the unchanged runner keeps its bindings: {called}"
    );

    // A broken runners file changes nothing.
    std::fs::write(&runners, format!("[[runners]]\nid = \"{BROKEN_MARKER}\"\n")).unwrap();
    assert!(hang_up(front.pid()));
    let warning = front.wait_for_line("`--runners not reloaded`", |l| {
        l.contains("--runners not reloaded")
    });
    assert!(!warning.contains(s(&runners)), "{warning}");
    assert_eq!(
        listed(&list(&front, TOKEN).1, "runners", "runner"),
        ["local", "r1", "r2"]
    );

    // r1 leaves.
    std::fs::write(&runners, runners_text(&dir, &[("r2", r2.addr)])).unwrap();
    assert!(hang_up(front.pid()));
    front.wait_for_line("a second `--runners reloaded`", |l| {
        l.contains("--runners reloaded")
    });
    assert_eq!(
        listed(&list(&front, TOKEN).1, "runners", "runner"),
        ["local", "r2"]
    );
    let (status, called) = front.tool_with(TOKEN, "", call);
    assert_ne!(
        status, 200,
        "a removed runner's binding no longer works: {called}"
    );
    assert!(front.alive());
    let (status, lines) = front.stop();
    assert_eq!(status.code(), Some(0), "{lines:#?}");
    drop((r1, r2));
}

/// `tokens.toml` with [`NEW_TOKEN`] alone (the test's tokens, [`TOKEN`] among them, are
/// gone) and a runner token for runner `id`.
fn tokens_with_runner(dir: &TempDir, id: &str) {
    let text = format!(
        "[[tokens]]\nname = \"added\"\ntoken = \"{NEW_TOKEN}\"\n\
         scopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\"]\n\n\
         [[runner_tokens]]\nname = \"{id}-link\"\ntoken = \"runner-token-{BROKEN_MARKER}\"\n\
         runner = \"{id}\"\n"
    );
    std::fs::write(dir.path("tokens.toml"), text).unwrap();
}

/// A reload checks the runner ids as the start does: a runner token whose id is a runner of
/// the runners file in force is refused (the old tokens stay, a warning says why), and so is a
/// runners file that takes a runner token's id (the old runners stay).
#[test]
fn sighup_refuses_a_runner_id_that_is_both_static_and_dial_out() {
    let dir = TempDir::new("ops", "hup-ids");
    let (config, tokens) = ops_support::files(&dir, false);
    // Nobody listens there; no request goes to it.
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let runners = dir.write("runners.toml", &runners_text(&dir, &[("edge", down)]));
    let mut front = LoggedServe::start(serve_command(&config, &tokens, Some(&runners)));

    tokens_with_runner(&dir, "edge");
    assert!(hang_up(front.pid()));
    let warning = front.wait_for_line("`--tokens not reloaded`", |l| {
        l.contains("--tokens not reloaded")
    });
    assert!(warning.contains("WARN"), "{warning}");
    assert!(
        warning.contains("runner_tokens[0].runner: is also a runner of --runners"),
        "{warning}"
    );
    assert!(!warning.contains(BROKEN_MARKER), "{warning}");
    assert!(!warning.contains(s(&tokens)), "{warning}");
    assert_eq!(list(&front, TOKEN).0, 200, "the old tokens stay");
    assert_eq!(list(&front, NEW_TOKEN).0, 401, "the new file was not taken");
    // The runners file was re-read in the same reload, unchanged.
    front.wait_for_line("`--runners reloaded`", |l| l.contains("--runners reloaded"));

    // A runner token of its own id is taken; a runners file that names it is not.
    tokens_with_runner(&dir, "far");
    std::fs::write(
        &runners,
        runners_text(&dir, &[("edge", down), ("far", down)]),
    )
    .unwrap();
    assert!(hang_up(front.pid()));
    front.wait_for_line("a second `--tokens reloaded`", |l| {
        l.contains("--tokens reloaded")
    });
    let warning = front.wait_for_line("`--runners not reloaded`", |l| {
        l.contains("--runners not reloaded")
    });
    assert!(
        warning.contains("runner `far`: is also the runner of a runner token"),
        "{warning}"
    );
    assert_eq!(
        list(&front, NEW_TOKEN).0,
        200,
        "the new tokens are in force"
    );
    assert_eq!(list(&front, TOKEN).0, 401);
    let (status, body) = list(&front, NEW_TOKEN);
    assert_eq!(status, 200);
    assert_eq!(
        listed(&body, "runners", "runner"),
        ["edge", "local"],
        "the old runners stay"
    );
    assert!(front.alive());
    let (status, lines) = front.stop();
    assert_eq!(status.code(), Some(0), "{lines:#?}");
    for line in &lines {
        assert!(!line.contains(BROKEN_MARKER), "{line}");
    }
}

/// One keep-alive connection to `serve` that sends `plugin_tool` `list` requests.
struct KeepAlive {
    stream: std::net::TcpStream,
}

impl KeepAlive {
    fn open(addr: SocketAddr) -> KeepAlive {
        let stream = std::net::TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        KeepAlive { stream }
    }

    /// A `list` with `token` on this connection: the status; panics when the server closes.
    fn list(&mut self, token: &str) -> u16 {
        use std::io::{Read, Write};
        let body = json!({"tool": "plugin_tool", "params": {"action": "list"}}).to_string();
        let raw = format!(
            "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.stream.write_all(raw.as_bytes()).expect("write");
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
                let response = common::http::parse_response(&bytes);
                let length: usize = response.header("content-length").parse().unwrap();
                if bytes.len() >= end + 4 + length {
                    assert_ne!(
                        response.first_header("connection"),
                        Some("close"),
                        "the connection stays open"
                    );
                    return response.status;
                }
            }
            let n = self.stream.read(&mut chunk).expect("read");
            assert!(n > 0, "serve closed the keep-alive connection");
            bytes.extend_from_slice(&chunk[..n]);
        }
    }
}

#[test]
fn a_keep_alive_connection_is_authenticated_against_the_tokens_in_place() {
    let dir = TempDir::new("ops", "hup-keepalive");
    let (config, tokens) = ops_support::files(&dir, false);
    let mut serve = LoggedServe::start(serve_command(&config, &tokens, None));
    tokens_with_added(&dir);
    assert!(hang_up(serve.pid()));
    serve.wait_for_line("`--tokens reloaded`", |l| l.contains("--tokens reloaded"));

    let mut conn = KeepAlive::open(serve.addr);
    assert_eq!(conn.list(NEW_TOKEN), 200, "the added token works");
    assert_eq!(
        conn.list("not-a-token-of-this-file-0123"),
        401,
        "a connection accepted once still refuses another, unknown token"
    );
    assert_eq!(conn.list(NEW_TOKEN), 200);
    assert_eq!(
        conn.list(TOKEN),
        200,
        "another valid token on the same connection"
    );
    assert_eq!(conn.list(NEW_TOKEN), 200);

    // Removed from the file: refused on the very connection it was accepted on.
    common::serve::write_tokens_file(&dir);
    assert!(hang_up(serve.pid()));
    serve.wait_for_line("a second `--tokens reloaded`", |l| {
        l.contains("--tokens reloaded")
    });
    assert_eq!(conn.list(NEW_TOKEN), 401, "a removed token is refused");
    assert_eq!(conn.list(TOKEN), 200, "the token still in the file works");
    drop(conn);
    let (status, lines) = serve.stop();
    assert_eq!(status.code(), Some(0), "{lines:#?}");
}

/// runner.toml with one provider `py`, the restart policy tests' Python plugin (its pid file is
/// `pids` in `dir`), under `restart = "on-failure"` with `restart_max` and admission budget
/// `timeout_secs`.
fn restart_config(dir: &TempDir, restart_max: u32, timeout_secs: u32) -> PathBuf {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/restart_plugin.py"
    );
    dir.write(
        "runner.toml",
        &format!(
            "[shell]\nenv = {{ RESTART_PIDS = {pids:?} }}\n[plugins]\nrestart = \"on-failure\"\n\
             restart_max = {restart_max}\n[[plugins.providers]]\nid = \"py\"\nname = \"Py\"\n\
             command = \"python3\"\nargs = [{script:?}]\ntimeout_secs = {timeout_secs}\n",
            pids = s(&dir.path("pids")),
        ),
    )
}

/// The delay of a `restart N of at most M in a row in X s` log line, in seconds.
fn restart_delay(line: &str) -> Option<f64> {
    let rest = line.split(" in a row in ").nth(1)?;
    rest.split(" s").next()?.trim().parse().ok()
}

/// SIGKILL of the plugin `py` recorded last in `dir`'s pid file; its pid.
fn kill_plugin(dir: &TempDir) -> i32 {
    let pid = *common::recorded_plugin_pids(&dir.path("pids"))
        .last()
        .expect("a recorded plugin");
    // SAFETY: kill(2) on the plugin's pid, a live grandchild of this test.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    assert!(common::wait_gone(pid), "the host did not reap its plugin");
    pid
}

/// A plugin that always fails at start under `restart = "on-failure"` and `restart_max = 2`:
/// started once, restarted twice, then it stays down and the log says so; every process it
/// ran is reaped.
#[test]
fn a_plugin_that_always_crashes_at_start_stays_down_after_restart_max() {
    let dir = TempDir::new("ops", "restart-max");
    dir.write("crash", "");
    let config = restart_config(&dir, 2, 10);
    let tokens = common::serve::write_tokens_file(&dir);
    let mut serve = LoggedServe::start(serve_command(&config, &tokens, None));
    let line = serve.wait_for_line("`stays down`", |l| l.contains("stays down"));
    assert!(
        line.contains(
            r#"plugin provider "py" stays down: 2 restarts in a row failed (restart_max = 2)"#
        ),
        "{line}"
    );
    assert!(line.contains("fix the plugin and reload"), "{line}");
    let restarts = serve
        .seen()
        .iter()
        .filter(|l| l.contains("in a row in "))
        .count();
    assert_eq!(restarts, 2, "{:#?}", serve.seen());
    // Once at start and twice more: no restart is pending after the line.
    let started = common::recorded_plugin_pids(&dir.path("pids"));
    assert_eq!(started.len(), 3, "{started:?}");
    common::assert_plugins_cleaned_up(&started);
    let (status, listed) = serve.tool_with(TOKEN, "", json!({"action": "list", "runner": "local"}));
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        listed["output"]["plugins"][0]["status"], "failed",
        "{listed}"
    );
    assert_eq!(common::recorded_plugin_pids(&dir.path("pids")).len(), 3);
    let (status, lines) = serve.stop();
    assert_eq!(status.code(), Some(0), "{lines:#?}");
}

/// A reload (SIGHUP) while a restart waits out its backoff cancels it: the reload's own
/// instance serves, the cancelled restart never starts a process, and the restarts are decided
/// afresh (the next crash is restart 1 again).
#[test]
fn a_reload_during_a_pending_restart_cancels_it() {
    let dir = TempDir::new("ops", "restart-pending");
    let config = restart_config(&dir, 10, 10);
    let tokens = common::serve::write_tokens_file(&dir);
    let mut serve = LoggedServe::start(serve_command(&config, &tokens, None));
    assert_eq!(plugins(&serve), ["py"]);
    // Restarts crash at start, so their backoff grows: wait for one of at least 3 s.
    dir.write("crash", "");
    kill_plugin(&dir);
    let line = serve.wait_for_line("a restart pending for 3 s or more", |l| {
        restart_delay(l).is_some_and(|delay| delay >= 3.0)
    });
    let pending_until = Instant::now() + Duration::from_secs_f64(restart_delay(&line).unwrap());
    std::fs::remove_file(dir.path("crash")).unwrap();
    assert!(hang_up(serve.pid()));
    serve.wait_for_line("`runner.toml reloaded`", |l| {
        l.contains("runner.toml reloaded")
    });
    assert!(
        serve
            .seen()
            .iter()
            .any(|l| l
                .contains(r#"plugin provider "py": its pending restart is cancelled by a reload"#)),
        "{:#?}",
        serve.seen()
    );
    let started = common::recorded_plugin_pids(&dir.path("pids")).len();
    let (status, listed) = serve.tool_with(TOKEN, "", json!({"action": "list", "runner": "local"}));
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        listed["output"]["plugins"][0]["status"], "ready",
        "{listed}"
    );
    // The cancelled restart's time comes and goes: no process is started for it.
    let now = Instant::now();
    std::thread::sleep(pending_until.saturating_duration_since(now) + Duration::from_secs(1));
    assert_eq!(
        common::recorded_plugin_pids(&dir.path("pids")).len(),
        started
    );
    // Decided afresh: the reload's instance, killed, is restart 1 of a new row.
    kill_plugin(&dir);
    let line = serve.wait_for_line("a restart after the reload", |l| restart_delay(l).is_some());
    assert!(line.contains("restart 1 of at most 10 in a row"), "{line}");
    serve.wait_for_line("`restarted`", |l| {
        l.contains(r#""py" restarted: a new instance"#)
    });
    let pids = common::recorded_plugin_pids(&dir.path("pids"));
    let (status, lines) = serve.stop();
    assert_eq!(status.code(), Some(0), "{lines:#?}");
    common::assert_plugins_cleaned_up(&pids);
}

/// A reload (SIGHUP) while a restart's candidate is being admitted (it never answers) kills
/// that candidate at once, and the reload's own instance serves; the restart never commits.
#[test]
fn a_reload_kills_a_restart_being_admitted() {
    let dir = TempDir::new("ops", "restart-admitting");
    // A long admission budget: only the reload can end the hanging candidate in this test.
    let config = restart_config(&dir, 5, 60);
    let tokens = common::serve::write_tokens_file(&dir);
    let mut serve = LoggedServe::start(serve_command(&config, &tokens, None));
    assert_eq!(plugins(&serve), ["py"]);
    dir.write("hang", "");
    kill_plugin(&dir);
    let deadline = Instant::now() + ops_support::LIMIT;
    let candidate = loop {
        let pids = common::recorded_plugin_pids(&dir.path("pids"));
        if pids.len() == 2 {
            break pids[1];
        }
        assert!(Instant::now() < deadline, "no restart started");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::fs::remove_file(dir.path("hang")).unwrap();
    let reload_sent = Instant::now();
    assert!(hang_up(serve.pid()));
    serve.wait_for_line("`runner.toml reloaded`", |l| {
        l.contains("runner.toml reloaded")
    });
    assert!(
        common::wait_gone(candidate),
        "the restart's candidate lives on"
    );
    // Far below the 60 s admission budget: the reload killed it.
    assert!(reload_sent.elapsed() < Duration::from_secs(20));
    let (status, listed) = serve.tool_with(TOKEN, "", json!({"action": "list", "runner": "local"}));
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        listed["output"]["plugins"][0]["status"], "ready",
        "{listed}"
    );
    let pids = common::recorded_plugin_pids(&dir.path("pids"));
    assert_eq!(pids.len(), 3, "start, restart (killed), reload");
    let (status, lines) = serve.stop();
    assert_eq!(status.code(), Some(0), "{lines:#?}");
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("restarted: a new instance")),
        "{lines:#?}"
    );
    common::assert_plugins_cleaned_up(&pids);
}
