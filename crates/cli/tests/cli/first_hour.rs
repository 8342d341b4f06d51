//! What a newcomer meets in the first hour with a fresh clone, as real runs of the CLI binary:
//! `init`'s next steps run as printed, `check` without `--plugin` checks every provider,
//! `describe` warns about a tool without hints, and `demo` shows the binding of each call.

use crate::common;
use crate::tempdir;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest one run may take (a hang, never a timing).
const LIMIT: Duration = Duration::from_secs(60);

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

fn run_in(dir: &Path, args: &[&str]) -> common::Run {
    let mut command = common::cli_command(BIN);
    command.args(args).current_dir(dir);
    common::run_to_end(command, LIMIT)
}

/// PATH without any directory that holds a `webcodex-plugin` binary: a newcomer who ran
/// `cargo run` has none on PATH.
fn path_without_the_binary() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<_> = std::env::split_paths(&path)
        .filter(|dir| {
            !dir.join("webcodex-plugin").exists() && !dir.join("webcodex-plugin.exe").exists()
        })
        .collect();
    std::env::join_paths(kept).expect("PATH entries join")
}

/// The command lines `init` printed: every line indented by four spaces.
fn printed_commands(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("    "))
        .map(str::to_string)
        .collect()
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none)")]
fn init_next_steps_run_as_printed() {
    let dir = TempDir::new("first-hour", "init");
    let target = dir.path("my plugin");
    let init = run_in(
        &dir,
        &["init", s(&target), "--lang", "python", "--id", "mine"],
    );
    assert_eq!(init.code, Some(0), "{}", init.stderr);
    dir.write("runner.toml", &common::printed_provider_block(&init.stdout));
    let commands = printed_commands(&init.stdout);
    assert!(
        commands.iter().any(|c| c.contains(" check ")),
        "no check command printed: {}",
        init.stdout
    );
    for line in commands {
        let mut shell = Command::new("sh");
        shell
            .args(["-c", &line])
            .current_dir(&dir)
            .env("PATH", path_without_the_binary());
        let run = common::run_to_end(shell, LIMIT);
        assert_eq!(
            run.code,
            Some(0),
            "the printed command {line:?} failed:\n{}{}",
            run.stdout,
            run.stderr
        );
        if line.contains(" check ") {
            assert!(run.stdout.starts_with("mine: ready"), "{}", run.stdout);
        }
    }
}

/// A runner.toml of fixture providers `(id, mode)`.
fn fixture_config(dir: &TempDir, providers: &[(&str, &str)]) -> std::path::PathBuf {
    let command = toml::Value::String(s(&common::fixture_path()).to_string()).to_string();
    let text: String = providers
        .iter()
        .map(|(id, mode)| {
            format!(
                "[[plugins.providers]]\nid = \"{id}\"\nname = \"{id}\"\ncommand = {command}\nargs = [\"{mode}\"]\n\n"
            )
        })
        .collect();
    dir.write("runner.toml", &text)
}

#[test]
fn check_without_plugin_checks_every_configured_provider() {
    let dir = TempDir::new("first-hour", "check-all");
    let config = fixture_config(&dir, &[("good", "normal"), ("bad", "bad-tools")]);
    let human = run_in(&dir, &["check", "--config", s(&config)]);
    assert_eq!(human.code, Some(2), "one is not ready: {human:?}");
    let good = human
        .stdout
        .find("good: ready, 20 tools")
        .expect("good's result");
    let bad = human
        .stdout
        .find("bad: not ready (phase validation): plugin_tools_list_invalid")
        .unwrap_or_else(|| panic!("bad's result: {}", human.stdout));
    assert!(good < bad, "config order: {}", human.stdout);

    let json = run_in(&dir, &["check", "--config", s(&config), "--json"]);
    assert_eq!(json.code, Some(2), "{json:?}");
    let reports: Vec<serde_json::Value> = json
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one canonical check object per line"))
        .collect();
    let summary: Vec<(&str, bool)> = reports
        .iter()
        .map(|r| (r["plugin"].as_str().unwrap(), r["ready"].as_bool().unwrap()))
        .collect();
    assert_eq!(summary, [("good", true), ("bad", false)]);

    let config = fixture_config(&dir, &[("one", "normal"), ("two", "normal")]);
    let all_ready = run_in(&dir, &["check", "--config", s(&config)]);
    assert_eq!(all_ready.code, Some(0), "{all_ready:?}");
    assert!(all_ready.stdout.contains("one: ready"), "{all_ready:?}");
    assert!(all_ready.stdout.contains("two: ready"), "{all_ready:?}");
}

#[test]
fn describe_warns_about_a_tool_without_hints_and_json_stays_canonical() {
    let dir = TempDir::new("first-hour", "describe-hints");
    let config = fixture_config(&dir, &[("fx", "normal")]);
    let describe = |tool: &str, json: bool| {
        let mut args = vec![
            "describe",
            "--config",
            s(&config),
            "--plugin",
            "fx",
            "--tool",
            tool,
        ];
        if json {
            args.push("--json");
        }
        let out = run_in(&dir, &args);
        assert_eq!(out.code, Some(0), "{out:?}");
        out.stdout
    };
    // `add` has no annotations at all; `echo` says readOnlyHint: true.
    let add = describe("add", false);
    assert!(
        add.lines().any(|l| l.starts_with("warning: no hints:")),
        "{add}"
    );
    let echo = describe("echo", false);
    assert!(!echo.contains("warning"), "{echo}");

    let json = describe("add", true);
    assert_eq!(json.lines().count(), 1, "{json}");
    assert!(!json.contains("warning"), "{json}");
    let value: serde_json::Value = serde_json::from_str(&json).expect("canonical JSON");
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["binding", "plugin", "pluginName", "runner", "tool"]);
    assert!(value["tool"].get("annotations").is_none(), "{value}");
}

/// `serve` in front of a remote runner that cannot be reached answers 503
/// `plugin_runner_unavailable`, and the README's status list says so.
#[test]
#[cfg_attr(
    windows,
    ignore = "runs serve processes stopped with SIGTERM; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn serve_answers_503_for_an_unreachable_runner_as_the_readme_lists() {
    let dir = TempDir::new("first-hour", "unreachable");
    // A loopback port with nothing listening on it.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    dir.write("far.tok", "far-runner-token-0123456789\n");
    let runners = dir.write(
        "runners.toml",
        &format!(
            "[[runners]]\nid = \"far\"\nname = \"Far\"\nurl = \"http://{closed}\"\ntoken_file = \"far.tok\"\n"
        ),
    );
    let tokens = common::serve::write_tokens_file(&dir);
    let mut command = common::cli_command(BIN);
    command
        .args(["serve", "--runners", s(&runners), "--listen", "127.0.0.1:0"])
        .args(["--tokens", s(&tokens)]);
    for key in common::PROXY_VARIABLES {
        command.env_remove(key);
    }
    let serve = common::serve::ServeProcess::start(command);
    let body = serde_json::json!({"tool":"plugin_tool","params":{"action":"list","runner":"far"}})
        .to_string();
    let (status, answer) = post(&serve.addr.to_string(), &body);
    serve.stop();
    assert_eq!(status, 503, "{answer}");
    let answer: serde_json::Value = serde_json::from_str(&answer).expect("JSON");
    assert_eq!(
        answer["output"]["error"]["code"], "plugin_runner_unavailable",
        "{answer}"
    );

    let readme = std::fs::read_to_string(std::path::Path::new(common::REPO_ROOT).join("README.md"))
        .expect("README.md");
    let list = readme
        .split("\n\n")
        .find(|p| p.contains("POST /api/tools/call") && p.contains("with status 200"))
        .expect("the README's HTTP status list");
    let at_503 = list.find("503").unwrap_or_else(|| panic!("no 503: {list}"));
    assert!(
        list[at_503..].contains("plugin_runner_unavailable"),
        "the status list must name 503 plugin_runner_unavailable: {list}"
    );
}

/// One raw HTTP/1.1 POST of `body` to `/api/tools/call` with the all-scopes token: (status, body).
fn post(addr: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
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

/// `demo` prints, after each describe, the binding it got, and every call it makes uses a
/// binding printed before it.
#[test]
fn demo_shows_the_binding_of_each_tool_it_calls() {
    let dir = TempDir::new("first-hour", "demo");
    let demo = run_in(&dir, &["demo"]);
    assert_eq!(demo.code, Some(0), "{demo:?}");
    let mut printed = Vec::new();
    let mut calls = 0;
    for line in demo.stdout.lines() {
        if let Some(binding) = line.strip_prefix("binding: ") {
            assert!(binding.starts_with("wc_pbind_"), "{line}");
            printed.push(binding.to_string());
        }
        let Some(params) = line.strip_prefix("plugin_tool ") else {
            continue;
        };
        let params: serde_json::Value = serde_json::from_str(params).expect("params JSON");
        if params["action"] == "call" {
            calls += 1;
            let binding = params["binding"].as_str().expect("a binding");
            assert!(
                printed.iter().any(|b| b == binding),
                "the call {params} uses a binding no describe step printed:\n{}",
                demo.stdout
            );
        }
    }
    assert!(calls >= 2, "{}", demo.stdout);
    assert!(printed.len() >= 2, "{}", demo.stdout);
}

/// `check --server-url` without `--plugin` checks every provider the server lists.
#[test]
#[cfg_attr(
    windows,
    ignore = "runs serve processes stopped with SIGTERM; not run under Wine yet (docs/PLATFORMS.md)"
)]
fn check_without_plugin_in_client_mode_checks_every_listed_provider() {
    let dir = TempDir::new("first-hour", "check-all-remote");
    let config = fixture_config(&dir, &[("good", "normal"), ("bad", "bad-tools")]);
    let tokens = common::serve::write_tokens_file(&dir);
    let token = dir.write("all.tok", &format!("{}\n", common::serve::TOKEN_ALL));
    let mut command = common::cli_command(BIN);
    command
        .args(["serve", "--config", s(&config), "--listen", "127.0.0.1:0"])
        .args(["--tokens", s(&tokens)]);
    let serve = common::serve::ServeProcess::start(command);
    let mut client = common::cli_command(BIN);
    client
        .args([
            "check",
            "--server-url",
            &serve.url(),
            "--token-file",
            s(&token),
        ])
        .current_dir(&dir);
    for key in common::PROXY_VARIABLES {
        client.env_remove(key);
    }
    let out = common::run_to_end(client, LIMIT);
    serve.stop();
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stdout.contains("good: ready, 20 tools"), "{out:?}");
    assert!(
        out.stdout.contains("bad: not ready (phase validation)"),
        "{out:?}"
    );
}

/// The Rust scaffold builds where Cargo's target directory is and its block finds the binary
/// there: `init` and the printed commands run with `CARGO_TARGET_DIR` set (relative, so
/// relative to the plugin directory, as Cargo reads it when the build step `cd`s there).
/// Cargo builds offline (`CARGO_NET_OFFLINE`): the scaffold's dependencies are `serde_json` and
/// the copy of the plugin SDK that `init` wrote beside it (a path crate on serde, serde_json and
/// memchr), all in the local registry since this workspace depends on them too. The
/// scaffold's own tests pass as well.
#[test]
#[cfg(unix)]
fn the_rust_scaffold_finds_its_binary_under_cargo_target_dir() {
    let dir = TempDir::new("first-hour", "rust-target-dir");
    let target = dir.path("rusty");
    let with_env = |command: &mut Command| {
        command
            .env("CARGO_TARGET_DIR", "shared-target")
            .env("CARGO_NET_OFFLINE", "true")
            .env_remove("CARGO_BUILD_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET");
    };
    let mut init = common::cli_command(BIN);
    init.args(["init", s(&target), "--lang", "rust", "--id", "rusty"])
        .current_dir(&dir);
    with_env(&mut init);
    let init = common::run_to_end(init, LIMIT);
    assert_eq!(init.code, Some(0), "{}", init.stderr);
    let block = common::printed_provider_block(&init.stdout);
    let canonical = std::fs::canonicalize(&target).unwrap();
    let binary = canonical.join("shared-target/release/rusty");
    assert!(
        block.contains(&format!("command = \"{}\"", s(&binary))),
        "the block names the binary under CARGO_TARGET_DIR: {block}"
    );
    assert!(
        init.stdout.contains("a Cargo target directory"),
        "{}",
        init.stdout
    );
    dir.write("runner.toml", &block);
    for line in printed_commands(&init.stdout) {
        let mut shell = Command::new("sh");
        shell
            .args(["-c", &line])
            .current_dir(&dir)
            .env("PATH", path_without_the_binary_but_cargo());
        with_env(&mut shell);
        let run = common::run_to_end(shell, Duration::from_secs(600));
        assert_eq!(
            run.code,
            Some(0),
            "the printed command {line:?} failed:\n{}{}",
            run.stdout,
            run.stderr
        );
        if line.contains(" check ") {
            assert!(run.stdout.starts_with("rusty: ready"), "{}", run.stdout);
        }
    }
    assert!(binary.is_file(), "cargo built {}", binary.display());
    // The scaffold's README says `cargo test`; in release mode it reuses the build above.
    let mut test = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    test.args(["test", "--release"]).current_dir(&canonical);
    with_env(&mut test);
    let run = common::run_to_end(test, Duration::from_secs(600));
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("2 passed"), "{}", run.stdout);
    assert!(
        !canonical.join("target").exists(),
        "nothing built under target/"
    );
}

/// [`path_without_the_binary`], keeping the directory of the `cargo` that runs this test.
#[cfg(unix)]
fn path_without_the_binary_but_cargo() -> std::ffi::OsString {
    let mut dirs: Vec<std::path::PathBuf> =
        std::env::split_paths(&path_without_the_binary()).collect();
    if let Some(cargo_dir) = std::env::var_os("CARGO")
        .map(std::path::PathBuf::from)
        .and_then(|cargo| cargo.parent().map(Path::to_path_buf))
    {
        dirs.insert(0, cargo_dir);
    }
    std::env::join_paths(dirs).expect("PATH entries join")
}
