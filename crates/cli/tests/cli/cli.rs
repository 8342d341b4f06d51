//! End-to-end tests of the `webcodex-plugin` command-line tool (docs/PROTOCOL.md §8, plugin_tool;
//! §9, transports and the command-line tool): every subcommand is run as a separate process against
//! runner.toml files that start the fixture plugin, and only its exit code, stdout and stderr are
//! judged.

use crate::common;
use crate::tempdir;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::Run;
use tempdir::TempDir;

/// The longest any one CLI process may run before the test gives up (a hang, never a timing).
const PROCESS_LIMIT: Duration = Duration::from_secs(30);
/// How long the gateway test waits for one response line.
const RESPONSE_LIMIT: Duration = Duration::from_secs(10);

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");

/// A TOML basic string (JSON string escapes are a subset of TOML's).
fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("string serializes")
}

/// One `[[plugins.providers]]` block running the fixture in `mode`.
fn provider(id: &str, name: &str, mode: &str, cwd: Option<&Path>) -> String {
    let fixture = common::fixture_path();
    let mut block = format!(
        "[[plugins.providers]]\nid = {}\nname = {}\ncommand = {}\nargs = [{}]\n",
        toml_str(id),
        toml_str(name),
        toml_str(fixture.to_str().expect("fixture path is UTF-8")),
        toml_str(mode),
    );
    if let Some(cwd) = cwd {
        block.push_str(&format!(
            "cwd = {}\n",
            toml_str(cwd.to_str().expect("cwd is UTF-8"))
        ));
    }
    block
}

/// Writes a runner.toml with `[plugins]` and the given provider blocks.
fn runner_toml(dir: &TempDir, providers: &[String]) -> PathBuf {
    let mut text = String::from("[plugins]\nrequest_timeout_secs = 20\n\n");
    for block in providers {
        text.push_str(block);
        text.push('\n');
    }
    dir.write("runner.toml", &text)
}

/// A runner with one ready fixture provider `fx`.
fn ready_runner(dir: &TempDir) -> PathBuf {
    runner_toml(dir, &[provider("fx", "Fixture", "normal", None)])
}

/// A `webcodex-plugin` command with a clean environment for the fixture and the logger.
fn command(args: &[&OsStr]) -> Command {
    let mut cmd = common::cli_command(BIN);
    cmd.args(args);
    cmd
}

/// Runs the CLI with `args` and extra environment variables; stdin is empty.
fn run_env(args: &[&str], env: &[(&str, &OsStr)]) -> Run {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let mut cmd = command(&args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    common::run_to_end(cmd, PROCESS_LIMIT)
}

fn run(args: &[&str]) -> Run {
    run_env(args, &[])
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// Asserts that `text` has no control character other than `\n`.
fn assert_no_control_chars(what: &str, text: &str) {
    if let Some(c) = text.chars().find(|&c| c.is_control() && c != '\n') {
        panic!("{what}: human output contains control character {c:?}: {text:?}");
    }
}

/// The `KIND PID` lines of a `FIXTURE_PIDS` file.
fn recorded_pids(path: &Path) -> Vec<(String, i32)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (kind, pid) = l.split_once(' ')?;
            Some((kind.to_string(), pid.trim().parse().ok()?))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// demo

#[test]
fn demo_exits_zero_and_shows_a_successful_echo_call() {
    let out = run(&["demo"]);
    out.assert_code(0);
    assert!(
        out.stdout.lines().any(|l| l == "hello from the demo"),
        "the echo result is missing: {}",
        out.stdout
    );
    assert_eq!(
        out.stdout.lines().rfind(|l| !l.is_empty()),
        Some("demo finished: every step behaved as expected"),
        "{}",
        out.stdout
    );
    assert_no_control_chars("demo", &out.stdout);
}

// ---------------------------------------------------------------------------------------------
// list / describe

#[test]
fn list_json_prints_the_providers_with_status_and_error_code() {
    let dir = TempDir::new("cli", "list-json");
    let config = runner_toml(
        &dir,
        &[
            provider("fx", "Fixture", "normal", None),
            provider("badver", "Bad version", "bad-version", None),
        ],
    );
    let out = run(&["list", "--config", path_str(&config), "--json"]);
    out.assert_code(0);
    assert_eq!(
        out.json(),
        json!({
            "runner": "local",
            "plugins": [
                {"plugin": "fx", "name": "Fixture", "status": "ready"},
                {"plugin": "badver", "name": "Bad version", "status": "failed",
                 "errorCode": "plugin_protocol_version_mismatch"},
            ]
        })
    );
}

#[test]
fn list_human_shows_each_provider_with_status_and_error_code() {
    let dir = TempDir::new("cli", "list-human");
    let config = runner_toml(
        &dir,
        &[
            provider("fx", "Fixture", "normal", None),
            provider("badver", "Bad version", "bad-version", None),
        ],
    );
    let out = run(&["list", "--config", path_str(&config)]);
    out.assert_code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    let fx: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(fx, ["fx", "ready", "Fixture"], "{}", out.stdout);
    assert!(
        lines[1].starts_with("badver")
            && lines[1].contains("failed")
            && lines[1].contains("plugin_protocol_version_mismatch"),
        "{}",
        out.stdout
    );
}

#[test]
fn list_with_plugin_json_has_tool_count_and_tools_without_schemas() {
    let dir = TempDir::new("cli", "list-plugin");
    let config = ready_runner(&dir);
    let out = run(&[
        "list",
        "--config",
        path_str(&config),
        "--plugin",
        "fx",
        "--json",
    ]);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["plugin"], "fx");
    assert_eq!(v["name"], "Fixture");
    assert_eq!(v["status"], "ready");
    let tools = v["tools"].as_array().expect("tools is an array");
    assert_eq!(v["toolCount"], json!(tools.len()));
    assert!(tools.len() >= 2, "{v}");
    for tool in tools {
        let keys: Vec<&str> = tool
            .as_object()
            .expect("tool is an object")
            .keys()
            .map(String::as_str)
            .collect();
        assert!(
            keys.iter().all(|k| *k == "name" || *k == "title"),
            "a listed tool carries more than name/title: {tool}"
        );
    }
    assert!(tools.contains(&json!({"name": "add"})));
    assert!(tools.contains(&json!({"name": "echo", "title": "Echo"})));
}

#[test]
fn describe_json_has_the_full_definition_and_an_opaque_binding() {
    let dir = TempDir::new("cli", "describe");
    let config = ready_runner(&dir);
    let out = run(&[
        "describe",
        "--config",
        path_str(&config),
        "--plugin",
        "fx",
        "--tool",
        "add",
        "--json",
    ]);
    out.assert_code(0);
    let v = out.json();
    let mut keys: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["binding", "plugin", "pluginName", "runner", "tool"]);
    assert_eq!(v["runner"], "local");
    assert_eq!(v["plugin"], "fx");
    assert_eq!(v["pluginName"], "Fixture");
    assert_eq!(v["tool"]["name"], "add");
    assert_eq!(v["tool"]["inputSchema"]["type"], "object");
    assert_eq!(
        v["tool"]["outputSchema"]["properties"]["sum"]["type"],
        "integer"
    );
    let binding = v["binding"].as_str().expect("binding is a string");
    let suffix = binding
        .strip_prefix("wc_pbind_")
        .unwrap_or_else(|| panic!("binding prefix: {binding}"));
    assert_eq!(suffix.len(), 22, "binding length: {binding}");
    assert!(
        suffix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        "binding alphabet: {binding}"
    );
}

// ---------------------------------------------------------------------------------------------
// call

#[test]
fn call_json_prints_the_validated_tool_result_and_exits_zero() {
    let dir = TempDir::new("cli", "call-ok");
    let config = ready_runner(&dir);
    let out = run(&[
        "call",
        "--config",
        path_str(&config),
        "--plugin",
        "fx",
        "--tool",
        "add",
        "--arguments",
        r#"{"a":2,"b":5}"#,
        "--json",
    ]);
    out.assert_code(0);
    assert_eq!(
        out.json(),
        json!({
            "content": [{"type": "text", "text": "7"}],
            "structuredContent": {"sum": 7},
            "isError": false
        })
    );
}

/// Asserts the canonical failure shape and returns the error code.
fn assert_failure_shape(v: &Value, dispatch: &str) -> String {
    let obj = v.as_object().expect("failure is an object");
    assert!(
        obj.keys()
            .all(|k| ["error", "dispatch", "recovery"].contains(&k.as_str())),
        "unexpected key in a failure: {v}"
    );
    let error = v["error"].as_object().expect("error is an object");
    let mut keys: Vec<&str> = error.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "message"], "{v}");
    assert!(
        !v["error"]["message"].as_str().unwrap_or("").is_empty(),
        "{v}"
    );
    assert_eq!(v["dispatch"], dispatch, "{v}");
    if let Some(recovery) = obj.get("recovery") {
        assert!(recovery.is_string(), "{v}");
    }
    v["error"]["code"].as_str().expect("code").to_string()
}

#[test]
fn call_rpc_error_exits_one_with_the_failure_shape() {
    let dir = TempDir::new("cli", "call-rpc-error");
    let config = ready_runner(&dir);
    let out = run(&[
        "call",
        "--config",
        path_str(&config),
        "--plugin",
        "fx",
        "--tool",
        "rpc_error",
        "--json",
    ]);
    out.assert_code(1);
    let v = out.json();
    assert_eq!(assert_failure_shape(&v, "completed"), "plugin_rpc_error");
    // The error's `data` is never surfaced (docs/PROTOCOL.md §2.6).
    assert!(!out.stdout.contains("secret"), "{}", out.stdout);
}

#[test]
fn call_with_arguments_against_the_schema_exits_one_not_started() {
    let dir = TempDir::new("cli", "call-bad-args");
    let log = dir.join("stdin.log");
    let config = ready_runner(&dir);
    let out = run_env(
        &[
            "call",
            "--config",
            path_str(&config),
            "--plugin",
            "fx",
            "--tool",
            "add",
            "--arguments",
            r#"{"a":"two","b":5}"#,
            "--json",
        ],
        &[("FIXTURE_LOG", log.as_os_str())],
    );
    out.assert_code(1);
    let v = out.json();
    assert_eq!(
        assert_failure_shape(&v, "not_started"),
        "plugin_arguments_schema_invalid"
    );
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !logged.contains("tools/call"),
        "rejected arguments reached the plugin: {logged}"
    );
}

#[test]
fn call_with_arguments_that_are_not_an_object_is_a_usage_error() {
    let dir = TempDir::new("cli", "call-not-object");
    let pids = dir.join("pids");
    let config = ready_runner(&dir);
    for arguments in ["[1,2]", "not json", r#""text""#, "42", "null", "{"] {
        let out = run_env(
            &[
                "call",
                "--config",
                path_str(&config),
                "--plugin",
                "fx",
                "--tool",
                "add",
                "--arguments",
                arguments,
                "--json",
            ],
            &[("FIXTURE_PIDS", pids.as_os_str())],
        );
        out.assert_code(2);
        assert_eq!(
            out.stdout, "",
            "arguments {arguments}: stdout must be empty"
        );
        assert!(
            out.stderr.contains("--arguments"),
            "arguments {arguments}: {}",
            out.stderr
        );
    }
    assert!(
        recorded_pids(&pids).is_empty(),
        "a usage error must not start any plugin"
    );
}

// ---------------------------------------------------------------------------------------------
// check

#[test]
fn check_json_of_a_ready_plugin_exits_zero() {
    let dir = TempDir::new("cli", "check-ready");
    let config = ready_runner(&dir);
    let out = run(&[
        "check",
        "--config",
        path_str(&config),
        "--plugin",
        "fx",
        "--json",
    ]);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["runner"], "local");
    assert_eq!(v["plugin"], "fx");
    assert_eq!(v["ready"], true);
    assert_eq!(v["phase"], "ready");
    let tools = v["tools"].as_array().expect("tools");
    assert!(!tools.is_empty());
    assert_eq!(v["toolCount"], json!(tools.len()));
    for key in ["code", "detail", "diagnostic"] {
        assert!(v.get(key).is_none(), "a ready check has no {key}: {v}");
    }
}

#[test]
fn check_json_of_a_not_ready_plugin_exits_two_with_code_detail_and_diagnostic() {
    let dir = TempDir::new("cli", "check-not-ready");
    let config = runner_toml(
        &dir,
        &[provider("badtools", "Bad tools", "bad-tools", None)],
    );
    let out = run(&[
        "check",
        "--config",
        path_str(&config),
        "--plugin",
        "badtools",
        "--json",
    ]);
    out.assert_code(2);
    let v = out.json();
    assert_eq!(v["runner"], "local");
    assert_eq!(v["plugin"], "badtools");
    assert_eq!(v["ready"], false);
    assert_eq!(v["phase"], "validation");
    assert_eq!(v["toolCount"], 0);
    assert_eq!(v["tools"], json!([]));
    assert_eq!(v["code"], "plugin_tools_list_invalid");
    let detail = v["detail"].as_str().expect("detail is a string");
    assert!(
        !detail.is_empty() && detail.len() <= 512,
        "detail: {detail}"
    );
    assert_eq!(
        v["diagnostic"],
        json!({"code": "schema_keyword_unsupported", "tool": "add", "field": "inputSchema"})
    );
}

#[test]
fn check_json_of_an_unconfigured_id_is_a_not_ready_report_and_exits_two() {
    let dir = TempDir::new("cli", "check-unconfigured");
    let config = ready_runner(&dir);
    let out = run(&[
        "check",
        "--config",
        path_str(&config),
        "--plugin",
        "nope",
        "--json",
    ]);
    out.assert_code(2);
    let v = out.json();
    assert_eq!(v["plugin"], "nope");
    assert_eq!(v["ready"], false);
    assert_eq!(v["phase"], "config");
    assert_eq!(v["code"], "plugin_not_configured");
    assert_eq!(v["toolCount"], 0);
    assert_eq!(v["tools"], json!([]));
    assert!(v["detail"].as_str().is_some_and(|d| !d.is_empty()));
}

#[test]
fn check_human_of_a_not_ready_plugin_says_what_failed() {
    let dir = TempDir::new("cli", "check-human");
    let config = runner_toml(
        &dir,
        &[provider("badtools", "Bad tools", "bad-tools", None)],
    );
    let stderr_text = "candidate-note-from-stderr";
    let out = run_env(
        &[
            "check",
            "--config",
            path_str(&config),
            "--plugin",
            "badtools",
        ],
        &[("FIXTURE_STDERR", OsStr::new(stderr_text))],
    );
    out.assert_code(2);
    for needle in [
        "badtools",
        "not ready",
        "validation",
        "plugin_tools_list_invalid",
        "schema_keyword_unsupported",
        "inputSchema",
        "add",
    ] {
        assert!(
            out.stdout.contains(needle),
            "missing {needle}: {}",
            out.stdout
        );
    }
    assert_no_control_chars("check", &out.stdout);
    // The candidate's stderr is for the local operator, on stderr only.
    assert!(!out.stdout.contains(stderr_text), "{}", out.stdout);
    assert!(out.stderr.contains(stderr_text), "{}", out.stderr);
}

#[test]
fn check_json_never_prints_the_candidate_stderr() {
    let dir = TempDir::new("cli", "check-json-stderr");
    let config = runner_toml(
        &dir,
        &[provider("badtools", "Bad tools", "bad-tools", None)],
    );
    let stderr_text = "candidate-note-from-stderr";
    let out = run_env(
        &[
            "check",
            "--config",
            path_str(&config),
            "--plugin",
            "badtools",
            "--json",
        ],
        &[("FIXTURE_STDERR", OsStr::new(stderr_text))],
    );
    out.assert_code(2);
    out.json();
    assert!(!out.stdout.contains(stderr_text), "{}", out.stdout);
}

// ---------------------------------------------------------------------------------------------
// reload

#[test]
fn reload_json_exits_zero_with_the_new_providers() {
    let dir = TempDir::new("cli", "reload-ok");
    let config = ready_runner(&dir);
    let out = run(&["reload", "--config", path_str(&config), "--json"]);
    out.assert_code(0);
    assert_eq!(
        out.json(),
        json!({
            "runner": "local",
            "plugins": [{"plugin": "fx", "name": "Fixture", "status": "ready"}],
            "failures": []
        })
    );
}

#[test]
fn reload_with_a_failing_candidate_reports_failures_and_exits_two() {
    let dir = TempDir::new("cli", "reload-fail");
    let config = runner_toml(
        &dir,
        &[
            provider("fx", "Fixture", "normal", None),
            provider("badver", "Bad version", "bad-version", None),
        ],
    );
    let out = run(&["reload", "--config", path_str(&config), "--json"]);
    out.assert_code(2);
    let v = out.json();
    assert_eq!(v["runner"], "local");
    assert_eq!(
        v["failures"],
        json!([{"plugin": "badver", "code": "plugin_protocol_version_mismatch"}])
    );
    // The previous set is kept: fx ready, badver failed since the start.
    assert_eq!(
        v["plugins"],
        json!([
            {"plugin": "fx", "name": "Fixture", "status": "ready"},
            {"plugin": "badver", "name": "Bad version", "status": "failed",
             "errorCode": "plugin_protocol_version_mismatch"},
        ])
    );

    let human = run(&["reload", "--config", path_str(&config)]);
    human.assert_code(2);
    assert!(
        human.stdout.contains("badver")
            && human.stdout.contains("plugin_protocol_version_mismatch"),
        "{}",
        human.stdout
    );
}

// ---------------------------------------------------------------------------------------------
// catalog

#[test]
fn catalog_json_lists_only_tools_of_the_provider_working_in_the_project() {
    let dir = TempDir::new("cli", "catalog");
    let project = dir.subdir("project");
    let other = dir.subdir("other");
    let config = runner_toml(
        &dir,
        &[
            provider("fx", "Fixture", "normal", Some(&project)),
            provider("elsewhere", "Elsewhere", "normal", Some(&other)),
            provider("nocwd", "No cwd", "normal", None),
        ],
    );
    // A non-canonical spelling of the same root matches too.
    let spelled = project.join("..").join("project");
    for root in [&project, &spelled] {
        let out = run(&[
            "catalog",
            "--config",
            path_str(&config),
            "--project",
            path_str(root),
            "--json",
        ]);
        out.assert_code(0);
        let v = out.json();
        let tools = v["tools"].as_array().expect("tools");
        assert!(!tools.is_empty(), "{v}");
        assert!(
            tools
                .iter()
                .all(|t| t["plugin"] == "fx" && t["name"] == "Fixture"),
            "a tool of another provider is listed: {v}"
        );
        assert!(tools.iter().any(|t| t["tool"] == "add"));
        let echo = tools.iter().find(|t| t["tool"] == "echo").expect("echo");
        assert_eq!(echo["title"], "Echo");
        assert_eq!(echo["annotations"], json!({"readOnlyHint": true}));
        assert!(echo.get("inputSchema").is_none(), "{echo}");
        assert_eq!(v["totalCount"], json!(tools.len()));
        assert!(
            v["catalogRevision"]
                .as_str()
                .is_some_and(|r| r.starts_with("wc_plugcat_")),
            "{v}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// invalid configuration and usage errors

/// Runs `list`, `gateway` and the other config-reading commands on `config` and expects exit 2,
/// empty stdout and a stderr message containing every needle.
fn assert_config_refused(config: &Path, needles: &[&str]) {
    let config = path_str(config);
    for args in [
        vec!["list", "--config", config],
        vec!["list", "--config", config, "--json"],
        vec!["gateway", "--config", config],
        vec![
            "describe", "--config", config, "--plugin", "fx", "--tool", "add",
        ],
        vec![
            "call", "--config", config, "--plugin", "fx", "--tool", "add", "--json",
        ],
        vec!["check", "--config", config, "--plugin", "fx", "--json"],
        vec!["reload", "--config", config, "--json"],
        vec!["catalog", "--config", config, "--project", "/", "--json"],
    ] {
        let out = run(&args);
        out.assert_code(2);
        assert_eq!(out.stdout, "", "{args:?}: stdout must be empty");
        for needle in needles {
            assert!(
                out.stderr.contains(needle),
                "{args:?}: stderr does not name {needle}: {}",
                out.stderr
            );
        }
    }
}

#[test]
fn a_toml_syntax_error_is_refused_with_a_message_on_stderr() {
    let dir = TempDir::new("cli", "config-syntax");
    let config = dir.write("runner.toml", "[plugins\nrequest_timeout_secs = 3\n");
    assert_config_refused(&config, &["plugin_config_parse_failed", "TOML"]);
}

#[test]
fn an_unknown_key_in_plugins_is_refused_naming_the_key() {
    let dir = TempDir::new("cli", "config-unknown-key");
    let config = dir.write(
        "runner.toml",
        "[plugins]\nrequest_timeout_secs = 3\nretries = 2\n",
    );
    assert_config_refused(&config, &["plugin_config_invalid", "retries"]);
}

#[test]
fn an_unknown_key_in_a_provider_is_refused_naming_the_key() {
    let dir = TempDir::new("cli", "config-unknown-provider-key");
    let mut block = provider("fx", "Fixture", "normal", None);
    block.push_str("restart = true\n");
    let config = runner_toml(&dir, &[block]);
    assert_config_refused(&config, &["plugin_config_invalid", "restart"]);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "reading a directory fails as 'permission denied' on Windows, not 'is a directory' (docs/PLATFORMS.md)"
)]
fn a_missing_config_file_is_refused() {
    let dir = TempDir::new("cli", "config-missing");
    let config = dir.join("absent.toml");
    // Named by the path as given, and said plainly.
    assert_config_refused(
        &config,
        &[
            "plugin_config_read_failed",
            path_str(&config),
            "does not exist",
        ],
    );
    let sub = dir.subdir("a-directory");
    assert_config_refused(&sub, &["plugin_config_read_failed", "is a directory"]);
}

#[test]
fn usage_errors_exit_two() {
    let dir = TempDir::new("cli", "usage");
    let config = ready_runner(&dir);
    let config = path_str(&config);
    for args in [
        vec!["frobnicate"],
        vec![],
        vec!["list"],
        vec!["gateway"],
        vec!["describe", "--config", config, "--plugin", "fx"],
        vec!["call", "--plugin", "fx", "--tool", "add"],
        vec!["list", "--config", config, "--no-such-flag"],
        // --config hosts one runner, `local`; a binding lives in the host that minted it.
        vec!["list", "--config", config, "--runner", "edge-1"],
        vec!["list", "--config", config, "--runner", "Not An Id"],
        vec!["call", "--config", config, "--binding", "wc_pbind_x"],
        vec![
            "call",
            "--config",
            config,
            "--binding",
            "b",
            "--plugin",
            "fx",
        ],
        vec!["call", "--config", config],
    ] {
        let out = run(&args);
        out.assert_code(2);
        assert_eq!(out.stdout, "", "{args:?}: stdout must be empty");
        assert!(!out.stderr.is_empty(), "{args:?}: stderr must explain");
    }
    let out = run(&["list", "--config", config, "--runner", "edge-1"]);
    assert!(
        out.stderr.contains("--server-url"),
        "says what to use: {out:?}"
    );
    let out = run(&["call", "--config", config, "--binding", "wc_pbind_x"]);
    assert!(
        out.stderr.contains("--binding needs --server-url")
            && out.stderr.contains("--plugin P --tool T"),
        "says why and what to use: {out:?}"
    );
    // `--runner local` is the default, so it is accepted with --config.
    run(&["list", "--config", config, "--runner", "local"]).assert_code(0);
    // serve's usage line: --config is optional (a front needs none), --tokens is required.
    let out = run(&["serve"]);
    out.assert_code(2);
    let usage = out
        .stderr
        .lines()
        .find(|l| l.starts_with("Usage:"))
        .unwrap_or_else(|| panic!("a usage line: {out:?}"));
    assert!(
        usage.contains("--tokens <TOKENS>") && !usage.contains("--config"),
        "{usage}"
    );
}

/// `describe`, `call` and `list --plugin` with `--config` start the provider they name and no
/// other: a provider that hangs at start (here for 20 s, `request_timeout_secs`) neither
/// delays them nor logs a warning. The whole `[plugins]` part is still validated first.
#[test]
fn one_provider_commands_start_that_provider_alone() {
    let dir = TempDir::new("cli", "start-one");
    let pids = dir.join("pids");
    let config = runner_toml(
        &dir,
        &[
            provider("stuck", "Stuck", "stuck-init", None),
            provider("fx", "Fixture", "normal", None),
        ],
    );
    let config = path_str(&config);
    let commands: [&[&str]; 3] = [
        &[
            "describe", "--config", config, "--plugin", "fx", "--tool", "echo",
        ],
        &[
            "call",
            "--config",
            config,
            "--plugin",
            "fx",
            "--tool",
            "echo",
            "--arguments",
            r#"{"text":"hi"}"#,
        ],
        &["list", "--config", config, "--plugin", "fx"],
    ];
    for (i, args) in commands.iter().enumerate() {
        let started = Instant::now();
        let out = run_env(args, &[("FIXTURE_PIDS", pids.as_os_str())]);
        out.assert_code(0);
        assert!(
            !out.stderr.contains("WARN") && !out.stderr.contains("stuck"),
            "{args:?}: nothing about the other provider: {out:?}"
        );
        // The outcome that matters: one plugin started per command, never `stuck`.
        let started_plugins = recorded_pids(&pids)
            .iter()
            .filter(|(kind, _)| kind == "self")
            .count();
        assert_eq!(started_plugins, i + 1, "{args:?}: only fx started");
        // A generous bound: starting `stuck` would take its 20 s timeout.
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{args:?} took {:?}",
            started.elapsed()
        );
    }
    let out = run(commands[0]);
    assert!(
        out.stdout.contains("\nbinding: wc_pbind_"),
        "describe prints the binding: {out:?}"
    );
    for (_, pid) in recorded_pids(&pids) {
        assert!(common::wait_gone(pid), "plugin {pid} outlived its command");
    }
    common::assert_no_zombie_children_of_self();

    // A broken block elsewhere in [plugins] still refuses the command, before anything starts.
    let broken = runner_toml(
        &dir,
        &[
            provider("stuck", "Stuck", "stuck-init", None) + "colour = \"red\"\n",
            provider("fx", "Fixture", "normal", None),
        ],
    );
    let _ = std::fs::remove_file(&pids);
    let out = run_env(
        &[
            "describe",
            "--config",
            path_str(&broken),
            "--plugin",
            "fx",
            "--tool",
            "echo",
        ],
        &[("FIXTURE_PIDS", pids.as_os_str())],
    );
    out.assert_code(2);
    assert!(
        out.stderr.contains("plugin_config_invalid") && out.stderr.contains("colour"),
        "{out:?}"
    );
    assert!(recorded_pids(&pids).is_empty(), "nothing started: {out:?}");
}

// ---------------------------------------------------------------------------------------------
// gateway over stdin/stdout

/// A running `webcodex-plugin gateway` with its stdin and a channel of its response lines.
struct GatewayProcess {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    responses: mpsc::Receiver<Value>,
    stderr: Option<std::thread::JoinHandle<String>>,
    received: Vec<Value>,
}

impl GatewayProcess {
    fn start(
        config: &Path,
        scopes: Option<&str>,
        pids: &Path,
        env: &[(&str, &OsStr)],
    ) -> GatewayProcess {
        let mut args: Vec<&OsStr> = vec![
            OsStr::new("gateway"),
            OsStr::new("--config"),
            config.as_os_str(),
        ];
        if let Some(scopes) = scopes {
            args.push(OsStr::new("--scopes"));
            args.push(OsStr::new(scopes));
        }
        let mut cmd = command(&args);
        for (key, value) in env {
            cmd.env(key, value);
        }
        let mut child = cmd
            .env("FIXTURE_PIDS", pids)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn gateway");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let line = line.expect("gateway stdout is UTF-8");
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("response is not JSON ({e}): {line}"));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        GatewayProcess {
            stdin: child.stdin.take(),
            stderr: Some(common::read_all(child.stderr.take().expect("stderr"))),
            child,
            responses: rx,
            received: Vec::new(),
        }
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).expect("write request");
        stdin.write_all(b"\n").expect("write newline");
        stdin.flush().expect("flush");
    }

    fn request(&mut self, id: Value, params: Value) {
        self.send_line(&json!({"id": id, "tool": "plugin_tool", "params": params}).to_string());
    }

    /// Waits for the response carrying `id` (other responses are kept).
    fn response(&mut self, id: &Value) -> Value {
        if let Some(found) = self.received.iter().find(|r| &r["id"] == id) {
            return found.clone();
        }
        let deadline = Instant::now() + RESPONSE_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let response = self
                .responses
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no response with id {id} ({e})"));
            self.received.push(response.clone());
            if &response["id"] == id {
                return response;
            }
        }
    }

    /// Closes stdin, waits for the exit and returns (exit code, every response, stderr).
    fn finish(mut self) -> (Option<i32>, Vec<Value>, String) {
        drop(self.stdin.take());
        let status = common::wait_bounded(&mut self.child, PROCESS_LIMIT);
        // The reader thread ends at EOF of stdout; collect what is left.
        while let Ok(response) = self.responses.recv_timeout(RESPONSE_LIMIT) {
            self.received.push(response);
        }
        let stderr = self
            .stderr
            .take()
            .expect("stderr reader")
            .join()
            .expect("stderr reader");
        (status.code(), std::mem::take(&mut self.received), stderr)
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        // Only on a failed test: never leave the gateway running.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The `output` of a successful response.
fn success_output(response: &Value) -> &Value {
    assert_eq!(response["success"], true, "expected success: {response}");
    &response["output"]
}

#[test]
fn gateway_answers_every_request_once_by_id_and_exits_zero_on_eof() {
    let dir = TempDir::new("cli", "gateway");
    let pids = dir.join("pids");
    let config = runner_toml(
        &dir,
        &[
            provider("fx", "Fixture", "normal", None),
            provider("badver", "Bad version", "bad-version", None),
        ],
    );
    let mut gw = GatewayProcess::start(&config, None, &pids, &[]);

    gw.request(json!(1), json!({"action": "list"}));
    gw.request(json!("two"), json!({"action": "list", "runner": "local"}));
    gw.request(
        json!(3),
        json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "add"}),
    );
    assert_eq!(
        success_output(&gw.response(&json!(1))),
        &json!({"runners": [{"runner": "local"}]})
    );
    let providers = success_output(&gw.response(&json!("two"))).clone();
    assert_eq!(providers["plugins"][0]["status"], "ready");
    assert_eq!(
        providers["plugins"][1]["errorCode"],
        "plugin_protocol_version_mismatch"
    );

    // Interactive: the call uses the binding of the describe response.
    let described = gw.response(&json!(3));
    let binding = success_output(&described)["binding"]
        .as_str()
        .expect("binding")
        .to_string();
    gw.request(
        json!(4),
        json!({"action": "call", "binding": binding, "arguments": {"a": 2, "b": 5}}),
    );
    assert_eq!(
        success_output(&gw.response(&json!(4))),
        &json!({"content": [{"type": "text", "text": "7"}], "structuredContent": {"sum": 7}, "isError": false})
    );

    // A grandchild of the plugin: it must be gone after the gateway exits.
    gw.request(
        json!(5),
        json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "grandchild"}),
    );
    let binding = success_output(&gw.response(&json!(5)))["binding"]
        .as_str()
        .expect("binding")
        .to_string();
    gw.request(
        json!(6),
        json!({"action": "call", "binding": binding, "arguments": {}}),
    );
    success_output(&gw.response(&json!(6)));

    // A slow call still in flight at EOF is answered before the exit (docs/PROTOCOL.md §9.2).
    gw.request(
        json!(8),
        json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "sleep"}),
    );
    let binding = success_output(&gw.response(&json!(8)))["binding"]
        .as_str()
        .expect("binding")
        .to_string();
    gw.request(
        json!(11),
        json!({"action": "call", "binding": binding, "arguments": {"ms": 300}}),
    );
    gw.request(
        json!(7),
        json!({"action": "check", "runner": "local", "plugin": "fx"}),
    );
    // Answered before EOF: a check still preparing its candidate at EOF is cut short (docs/DECISIONS.md, shutdown).
    assert_eq!(success_output(&gw.response(&json!(7)))["ready"], true);
    gw.send_line("this is not json");
    gw.send_line(r#"{"id":9,"tool":"plugin_tool"}"#);
    gw.request(
        json!(10),
        json!({"action": "call", "binding": "wc_pbind_AAAAAAAAAAAAAAAAAAAAAA", "arguments": {}}),
    );

    let (code, responses, stderr) = gw.finish();
    assert_eq!(code, Some(0), "gateway exit; stderr: {stderr}");

    let ids = [
        json!(1),
        json!("two"),
        json!(3),
        json!(4),
        json!(5),
        json!(6),
        json!(7),
        json!(8),
        json!(9),
        json!(10),
        json!(11),
        Value::Null,
    ];
    assert_eq!(responses.len(), ids.len(), "responses: {responses:#?}");
    for id in &ids {
        let matching: Vec<&Value> = responses.iter().filter(|r| &r["id"] == id).collect();
        assert_eq!(matching.len(), 1, "responses with id {id}: {matching:?}");
        let keys: Vec<&str> = matching[0]
            .as_object()
            .expect("response object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.len(), 3, "{}", matching[0]);
        assert!(matching[0]["success"].is_boolean() && matching[0]["output"].is_object());
    }
    let by_id = |id: Value| responses.iter().find(|r| r["id"] == id).expect("by id");

    assert_eq!(success_output(by_id(json!(7)))["ready"], true);
    assert_eq!(
        success_output(by_id(json!(11)))["content"],
        json!([{"type": "text", "text": "slept"}])
    );
    for id in [Value::Null, json!(9)] {
        let bad = by_id(id);
        assert_eq!(bad["success"], false, "{bad}");
        assert_eq!(
            assert_failure_shape(&bad["output"], "not_started"),
            "invalid_request"
        );
    }
    let unknown = by_id(json!(10));
    assert_eq!(unknown["success"], false);
    assert_eq!(
        assert_failure_shape(&unknown["output"], "not_started"),
        "describe_required"
    );

    // Every plugin process (the provider, the check candidate) and the grandchild are gone.
    let recorded = recorded_pids(&pids);
    let selves = recorded.iter().filter(|(k, _)| k == "self").count();
    let grandchildren = recorded.iter().filter(|(k, _)| k == "grandchild").count();
    assert!(
        selves >= 3 && grandchildren == 1,
        "recorded processes: {recorded:?}"
    );
    for (kind, pid) in &recorded {
        assert!(
            common::wait_gone(*pid),
            "{kind} process {pid} still runs after the gateway exited"
        );
    }
}

#[test]
fn gateway_with_only_the_inspect_scope_refuses_calls() {
    let dir = TempDir::new("cli", "gateway-scopes");
    let pids = dir.join("pids");
    let log = dir.join("stdin.log");
    let config = ready_runner(&dir);
    let mut gw = GatewayProcess::start(
        &config,
        Some("plugin:inspect"),
        &pids,
        &[("FIXTURE_LOG", log.as_os_str())],
    );
    gw.request(
        json!(1),
        json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "echo"}),
    );
    let binding = success_output(&gw.response(&json!(1)))["binding"]
        .as_str()
        .expect("binding")
        .to_string();
    gw.request(
        json!(2),
        json!({"action": "call", "binding": binding, "arguments": {"text": "hi"}}),
    );
    gw.request(json!(3), json!({"action": "reload", "runner": "local"}));
    for id in [json!(2), json!(3)] {
        let refused = gw.response(&id);
        assert_eq!(refused["success"], false, "{refused}");
        assert_eq!(
            assert_failure_shape(&refused["output"], "not_started"),
            "insufficient_scope"
        );
    }
    let (code, responses, stderr) = gw.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_eq!(responses.len(), 3, "{responses:#?}");
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !logged.contains("tools/call"),
        "a refused call reached the plugin: {logged}"
    );
    for (kind, pid) in recorded_pids(&pids) {
        assert!(common::wait_gone(pid), "{kind} process {pid} still runs");
    }
}

/// The stdio gateway binds a describe to its `project` with its default scopes (which hold
/// `project:read` and `project:write`), calls while the root is unchanged, and refuses the call
/// once the root was moved away, before the plugin reads it; with `--scopes` lacking
/// `project:read`, the describe is `insufficient_scope` naming it. Unix only: Windows refuses
/// to move a directory a plugin works in.
#[cfg(unix)]
#[test]
fn the_stdio_gateway_binds_to_a_project_and_refuses_a_moved_root() {
    let dir = TempDir::new("cli", "gateway-project");
    let (pids, log) = (dir.join("pids"), dir.join("stdin.log"));
    let root = dir.subdir("project");
    let config = runner_toml(&dir, &[provider("fx", "Fixture", "normal", Some(&root))]);
    let describe = json!({"action": "describe", "runner": "local", "plugin": "fx",
                          "tool": "add", "project": path_str(&root)});
    let env = [("FIXTURE_LOG", log.as_os_str())];
    let calls = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("tools/call")
            .count()
    };

    let mut gw = GatewayProcess::start(&config, None, &pids, &env);
    gw.request(json!(1), describe.clone());
    let described = success_output(&gw.response(&json!(1))).clone();
    assert_eq!(described["project"], json!(path_str(&root)), "{described}");
    assert!(
        described["projectTarget"]
            .as_str()
            .is_some_and(|t| t.starts_with("wc_proot_") && t.len() == 41),
        "{described}"
    );
    let binding = described["binding"].as_str().expect("binding").to_string();
    let call = json!({"action": "call", "binding": binding, "arguments": {"a": 2, "b": 5}});
    gw.request(json!(2), call.clone());
    assert_eq!(
        success_output(&gw.response(&json!(2)))["structuredContent"]["sum"],
        7
    );
    std::fs::rename(&root, dir.join("moved")).unwrap();
    gw.request(json!(3), call);
    let refused = gw.response(&json!(3));
    assert_eq!(refused["success"], false, "{refused}");
    assert_eq!(
        assert_failure_shape(&refused["output"], "not_started"),
        "plugin_project_changed"
    );
    assert_eq!(refused["output"]["recovery"], "list_and_describe");
    let base = root.parent().expect("the test's directory");
    assert!(!refused.to_string().contains(path_str(base)), "{refused}");
    let (code, _, stderr) = gw.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_eq!(calls(), 1, "the refused call reached the plugin");

    std::fs::rename(dir.join("moved"), &root).unwrap();
    let mut gw = GatewayProcess::start(&config, Some("plugin:inspect,plugin:invoke"), &pids, &env);
    gw.request(json!(1), describe);
    let refused = gw.response(&json!(1));
    assert_eq!(
        assert_failure_shape(&refused["output"], "not_started"),
        "insufficient_scope"
    );
    assert!(
        refused["output"]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("project:read")),
        "{refused}"
    );
    let (code, _, stderr) = gw.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_eq!(calls(), 1);
    let recorded = recorded_pids(&pids);
    assert_eq!(recorded.len(), 2, "one plugin per gateway: {recorded:?}");
    for (kind, pid) in recorded {
        assert!(common::wait_gone(pid), "{kind} process {pid} still runs");
    }
    common::assert_no_zombie_children_of_self();
}

// ---------------------------------------------------------------------------------------------
// output hygiene

#[test]
fn stdout_carries_only_the_result_while_logs_go_to_stderr() {
    let dir = TempDir::new("cli", "stdout-only");
    let mut text = String::from("[shell]\nunknown_shell_key = 1\n\n[plugins]\n\n");
    text.push_str(&provider("fx", "Fixture", "normal", None));
    let config = dir.write("runner.toml", &text);
    let out = run_env(
        &["list", "--config", path_str(&config), "--json"],
        &[("RUST_LOG", OsStr::new("debug"))],
    );
    out.assert_code(0);
    let expected = json!({
        "runner": "local",
        "plugins": [{"plugin": "fx", "name": "Fixture", "status": "ready"}]
    });
    assert_eq!(out.stdout, format!("{expected}\n"));
    // The tolerated unknown [shell] key is logged, and the log went to stderr.
    assert!(
        out.stderr.contains("unknown_shell_key"),
        "expected a log line on stderr: {:?}",
        out.stderr
    );
}

#[test]
fn human_call_output_replaces_control_characters() {
    let dir = TempDir::new("cli", "human-call");
    let config = ready_runner(&dir);
    let arguments = json!({"text": "\u{1b}[31mred\u{7}\r\ttab\nsecond line\u{0}"}).to_string();
    let out = run(&[
        "call",
        "--config",
        path_str(&config),
        "--plugin",
        "fx",
        "--tool",
        "echo",
        "--arguments",
        &arguments,
    ]);
    out.assert_code(0);
    assert_no_control_chars("call", &out.stdout);
    assert!(out.stdout.contains("?[31mred"), "{}", out.stdout);
    assert!(out.stdout.contains("second line"), "{}", out.stdout);
}

#[test]
fn human_outputs_of_every_command_are_free_of_control_characters() {
    let dir = TempDir::new("cli", "human-all");
    let project = dir.subdir("project");
    // Display names may hold control characters; human output must not print them.
    let config = runner_toml(
        &dir,
        &[
            provider("fx", "Fix\u{1b}[31mture\u{7}\r", "normal", Some(&project)),
            provider("badtools", "Bad\u{1b}tools", "bad-tools", None),
        ],
    );
    let config = path_str(&config);
    let project = path_str(&project);
    let commands: Vec<Vec<&str>> = vec![
        vec!["list", "--config", config],
        vec!["list", "--config", config, "--plugin", "fx"],
        vec![
            "describe", "--config", config, "--plugin", "fx", "--tool", "echo",
        ],
        vec![
            "call",
            "--config",
            config,
            "--plugin",
            "fx",
            "--tool",
            "rpc_error",
        ],
        vec!["check", "--config", config, "--plugin", "fx"],
        vec!["check", "--config", config, "--plugin", "badtools"],
        vec!["reload", "--config", config],
        vec!["catalog", "--config", config, "--project", project],
    ];
    for args in commands {
        let out = run(&args);
        assert!(
            matches!(out.code, Some(0..=2)),
            "{args:?}: unexpected exit {out:?}"
        );
        assert!(!out.stdout.is_empty(), "{args:?}: no output");
        assert_no_control_chars(&format!("{args:?}"), &out.stdout);
    }
}

// ---------------------------------------------------------------------------------------------
// First run and authoring: exit codes, messages and human output a newcomer meets first

#[test]
fn call_of_a_tool_that_reports_an_error_exits_one_in_both_modes() {
    let dir = TempDir::new("cli", "call-is-error");
    let config = ready_runner(&dir);
    let config = path_str(&config);
    let base = [
        "call", "--config", config, "--plugin", "fx", "--tool", "is_error",
    ];
    let out = run(&[&base[..], &["--json"]].concat());
    out.assert_code(1);
    let v = out.json();
    assert_eq!(v["isError"], true, "{out:?}");
    assert_eq!(v["content"][0]["text"], "bad input");
    let out = run(&base);
    out.assert_code(1);
    assert!(out.stdout.contains("bad input"), "{}", out.stdout);
    assert!(out.stdout.contains("isError = true"), "{}", out.stdout);
    // A tool that did not report an error still exits 0.
    let out = run(&[
        "call",
        "--config",
        config,
        "--plugin",
        "fx",
        "--tool",
        "echo",
        "--arguments",
        r#"{"text":"ok"}"#,
    ]);
    out.assert_code(0);
}

#[test]
fn arguments_errors_say_what_is_wrong() {
    let dir = TempDir::new("cli", "arguments-reason");
    let config = ready_runner(&dir);
    let cases = [
        (r#"{"a": 1e999}"#, "number out of range"),
        (r#"{"a": "\q"}"#, "invalid escape"),
        ("{", "EOF while parsing"),
        ("[1,2]", "it is an array, not an object"),
        (r#""text""#, "it is a string, not an object"),
    ];
    for (arguments, reason) in cases {
        let out = run(&[
            "call",
            "--config",
            path_str(&config),
            "--plugin",
            "fx",
            "--tool",
            "add",
            "--arguments",
            arguments,
        ]);
        out.assert_code(2);
        assert!(
            out.stderr.contains("--arguments must be a JSON object") && out.stderr.contains(reason),
            "{arguments}: {}",
            out.stderr
        );
    }
}

#[test]
fn a_toml_syntax_error_gives_the_parser_reason_and_position_without_values() {
    let dir = TempDir::new("cli", "config-reason");
    let config = dir.write(
        "runner.toml",
        "[plugins]\nrequest_timeout_secs = 3\nsecret = \"hunter2\\q\"\n",
    );
    let out = run(&["list", "--config", path_str(&config)]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("line 3") && out.stderr.contains("invalid escape sequence"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("hunter2"), "{}", out.stderr);
}

#[test]
fn near_miss_tables_warn_did_you_mean_plugins_without_rust_log() {
    let dir = TempDir::new("cli", "near-miss");
    let fixture = common::fixture_path();
    let text = format!(
        "request_timeout_secs = 5\n[[plugin.providers]]\nid = \"fx\"\nname = \"Fixture\"\ncommand = {}\n",
        toml_str(fixture.to_str().unwrap())
    );
    let config = dir.write("runner.toml", &text);
    let out = run(&["list", "--config", path_str(&config)]);
    out.assert_code(0);
    assert!(
        out.stdout.contains("no providers configured"),
        "{}",
        out.stdout
    );
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("did you mean [plugins]"))
        .collect();
    assert_eq!(warnings.len(), 2, "{}", out.stderr);
    assert!(out.stderr.contains("`plugin`") && out.stderr.contains("`request_timeout_secs`"));
}

#[test]
fn check_warns_of_a_near_miss_once_though_it_reads_the_config_twice() {
    let dir = TempDir::new("cli", "near-miss-check");
    let fixture = common::fixture_path();
    let text = format!(
        "[plugin]\nx = 1\n[[plugins.providers]]\nid = \"fx\"\nname = \"Fixture\"\ncommand = {}\nargs = [\"normal\"]\n",
        toml_str(fixture.to_str().unwrap())
    );
    let config = dir.write("runner.toml", &text);
    let out = run(&["check", "--config", path_str(&config), "--plugin", "fx"]);
    out.assert_code(0);
    let warnings = out
        .stderr
        .lines()
        .filter(|l| l.contains("did you mean [plugins]"))
        .count();
    assert_eq!(warnings, 1, "{}", out.stderr);
}

#[test]
fn a_cwd_that_does_not_exist_is_reported_as_such() {
    let dir = TempDir::new("cli", "cwd-missing");
    let missing = dir.join("no-such-dir");
    let config = runner_toml(&dir, &[provider("fx", "Fixture", "normal", Some(&missing))]);
    let out = run(&[
        "check",
        "--config",
        path_str(&config),
        "--plugin",
        "fx",
        "--json",
    ]);
    out.assert_code(2);
    let v = out.json();
    assert_eq!(v["code"], "plugin_spawn_failed", "{v}");
    let detail = v["detail"].as_str().unwrap();
    assert!(detail.contains("cwd does not exist"), "{detail}");
    assert!(
        !detail.contains("no-such-dir"),
        "no path in a detail: {detail}"
    );
}

#[test]
fn check_shows_the_catalog_digest_in_both_modes() {
    let dir = TempDir::new("cli", "check-digest");
    let config = ready_runner(&dir);
    let args = ["check", "--config", path_str(&config), "--plugin", "fx"];
    let out = run(&[&args[..], &["--json"]].concat());
    out.assert_code(0);
    let digest = out.json()["catalogDigest"].as_str().unwrap().to_string();
    assert!(
        digest.starts_with("sha256:") && digest.len() == "sha256:".len() + 64,
        "{digest}"
    );
    let out = run(&args);
    out.assert_code(0);
    assert!(
        out.stdout.contains(&format!("(catalog {digest})")),
        "{}",
        out.stdout
    );
    // The digest is the frozen catalog's: the same tools give the same digest.
    let again = run(&[&args[..], &["--json"]].concat());
    assert_eq!(again.json()["catalogDigest"], json!(digest));
}

/// A Python plugin with one destructive tool that has no title, and one read-only tool.
const PY_DESTRUCTIVE: &str = r#"import json, sys
TOOLS = [
    {"name": "wipe", "description": "Deletes every note.\nNo undo.",
     "inputSchema": {"type": "object"},
     "annotations": {"destructiveHint": True, "idempotentHint": True}},
]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m = msg["method"]
    if m == "initialize":
        result = {"protocolVersion": "webcodex-plugin-v1"}
    elif m == "tools/list":
        result = {"tools": TOOLS}
    else:
        result = {"content": [{"type": "text", "text": "wiped"}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"#;

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn human_list_describe_and_check_speak_plainly() {
    let dir = TempDir::new("cli", "human-plain");
    let script = dir.write("wipe.py", PY_DESTRUCTIVE);
    let block = format!(
        "[[plugins.providers]]\nid = \"notes\"\nname = \"Notes\"\ncommand = \"python3\"\nargs = [{}]\n",
        toml_str(path_str(&script))
    );
    let config = runner_toml(&dir, &[block]);
    let config = path_str(&config);

    let out = run(&["list", "--config", config, "--plugin", "notes"]);
    out.assert_code(0);
    assert!(out.stdout.contains("\n1 tool:\n"), "{}", out.stdout);
    // list entries are names and titles only: the description is for describe.
    assert!(
        out.stdout.contains("\n  wipe") && !out.stdout.contains("Deletes every note"),
        "{}",
        out.stdout
    );
    let out = run(&["list", "--config", config, "--plugin", "notes", "--json"]);
    assert_eq!(out.json()["tools"], json!([{"name": "wipe"}]));

    let out = run(&["check", "--config", config, "--plugin", "notes"]);
    out.assert_code(0);
    assert!(
        out.stdout.contains("notes: ready, 1 tool (catalog sha256:"),
        "{}",
        out.stdout
    );

    let out = run(&[
        "describe", "--config", config, "--plugin", "notes", "--tool", "wipe",
    ]);
    out.assert_code(0);
    assert!(
        out.stdout
            .contains("annotations: destructiveHint=true, idempotentHint=true"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("WARNING: DESTRUCTIVE"),
        "{}",
        out.stdout
    );

    let project = dir.to_str().unwrap();
    let out = run(&["catalog", "--config", config, "--project", project]);
    out.assert_code(0);
    assert!(
        out.stdout.starts_with("0 tools (revision wc_plugcat_"),
        "{}",
        out.stdout
    );
}

#[test]
fn version_and_completions_work() {
    let out = run(&["--version"]);
    out.assert_code(0);
    assert_eq!(
        out.stdout.trim(),
        format!("webcodex-plugin {}", env!("CARGO_PKG_VERSION"))
    );
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = run(&["completions", shell]);
        out.assert_code(0);
        assert!(out.stdout.contains("webcodex-plugin"), "{shell}");
        assert!(
            out.stdout.contains("check"),
            "{shell}: subcommands are completed"
        );
    }
    run(&["completions", "tcsh"]).assert_code(2);
}

#[test]
fn init_prints_build_then_provider_block_then_check() {
    let dir = TempDir::new("cli", "init-steps");
    for (lang, build) in [
        ("ts", Some("npm install && npm run build")),
        ("rust", Some("cargo build --release")),
        ("python", None),
    ] {
        let target = dir.join(format!("plugin-{lang}"));
        let out = run(&["init", path_str(&target), "--lang", lang, "--id", "demo-x"]);
        out.assert_code(0);
        let text = &out.stdout;
        let block = text
            .find("[[plugins.providers]]")
            .expect("a provider block");
        // The binary's own path comes first (quoted where it needs it: `.exe`, spaces).
        let check = text
            .find("webcodex-plugin")
            .filter(|_| text.contains(" check --config runner.toml --plugin demo-x"))
            .and_then(|_| text.find(" check --config runner.toml --plugin demo-x"))
            .expect("the check command");
        assert!(block < check, "{text}");
        match build {
            Some(build) => {
                let at = text.find(build).unwrap_or_else(|| panic!("{lang}: {text}"));
                assert!(at < block, "{lang}: build comes first: {text}");
                assert!(text.contains("1. build it"), "{text}");
            }
            None => assert!(!text.contains("build it"), "{lang}: {text}"),
        }
        // The printed block parses and names the scaffold's directory.
        let toml_text: String = text[block..check]
            .lines()
            .take_while(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        let parsed: toml::Table =
            toml::from_str(&toml_text).unwrap_or_else(|e| panic!("{e}: {toml_text}"));
        let entry = &parsed["plugins"]["providers"][0];
        assert_eq!(entry["id"].as_str(), Some("demo-x"));
        let canonical = std::fs::canonicalize(&target).unwrap();
        // `init` prints the ordinary `C:\…` form of a Windows path, not the verbatim `\\?\C:\…`.
        let canonical = canonical.to_str().map(|p| p.trim_start_matches(r"\\?\"));
        assert_eq!(entry["cwd"].as_str(), canonical);
    }
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn python_scaffold_works_as_printed_init_check_call() {
    let dir = TempDir::new("cli", "init-python-e2e");
    let target = dir.join("py plugin");
    let init = run(&["init", path_str(&target), "--id", "py-e2e"]);
    init.assert_code(0);
    let block = common::printed_provider_block(&init.stdout);
    let config = dir.write("runner.toml", &block);
    let config = path_str(&config);
    let check = run(&["check", "--config", config, "--plugin", "py-e2e"]);
    check.assert_code(0);
    assert!(
        check
            .stdout
            .starts_with("py-e2e: ready, 1 tool (catalog sha256:"),
        "the README's promise: {}",
        check.stdout
    );
    let call = run(&[
        "call",
        "--config",
        config,
        "--plugin",
        "py-e2e",
        "--tool",
        "echo",
        "--arguments",
        r#"{"text":"hi"}"#,
    ]);
    call.assert_code(0);
    assert!(call.stdout.starts_with("hi\n"), "{}", call.stdout);
}
