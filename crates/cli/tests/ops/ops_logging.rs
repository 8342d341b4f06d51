//! `--log-format json` on the long-running commands: every stderr line is one JSON object with
//! `ts`, `level`, `target` and `msg` (and, on a request's lines, its `trace_id`, `runner`,
//! `plugin`, `tool`, `action`, `dispatch` and `duration_ms`), and no line carries a token, an
//! argument value, an environment value or a path; the default text lines start with a
//! timestamp and show a request's fields as `[key=value …]`.
#![cfg(unix)]

use crate::common;
use crate::ops_support;
use crate::tempdir;

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use ops_support::{s, AdminServe, LIMIT, TOKEN};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
const ARG_MARKER: &str = "argument-value-marker-5e1f";
const ENV_MARKER: &str = "environment-value-marker-77c2";
const WRONG_TOKEN: &str = "wrong-token-marker-0123456789abcdef";

/// runner.toml with an unknown `[shell]` key (a warning is logged) and the fixture `fx`.
fn config(dir: &TempDir) -> std::path::PathBuf {
    let fixture = serde_json::to_string(s(&common::fixture_path())).unwrap();
    dir.write(
        "runner.toml",
        &format!(
            "[shell]\nbogus_key = 1\n\n[plugins]\nrequest_timeout_secs = 20\n\n[[plugins.providers]]\n\
             id = \"fx\"\nname = \"Fixture\"\ncommand = {fixture}\nargs = [\"normal\"]\n"
        ),
    )
}

/// The keys a line may carry besides `ts`, `level`, `target` and `msg`: a request's fields.
const REQUEST_FIELDS: [&str; 7] = [
    "action",
    "dispatch",
    "duration_ms",
    "plugin",
    "runner",
    "tool",
    "trace_id",
];

/// Checks every stderr line: one JSON object with `ts`, `level`, `target`, `msg` and otherwise
/// only request fields (a `trace_id` of 32 hex digits with any of them, `duration_ms` a
/// number), and none of `secrets` anywhere in it. Returns the parsed lines.
fn json_lines(stderr: &str, secrets: &[&str]) -> Vec<Value> {
    let lines: Vec<Value> = stderr
        .lines()
        .map(|line| {
            for secret in secrets {
                assert!(
                    !line.contains(secret),
                    "a log line carries {secret:?}: {line}"
                );
            }
            let value: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            let object = value
                .as_object()
                .unwrap_or_else(|| panic!("not an object: {line}"));
            let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
            keys.retain(|k| !REQUEST_FIELDS.contains(k));
            keys.sort_unstable();
            assert_eq!(keys, ["level", "msg", "target", "ts"], "{line}");
            if object.keys().any(|k| REQUEST_FIELDS.contains(&k.as_str())) {
                assert!(is_trace_id(&value["trace_id"]), "{line}");
            }
            if let Some(ms) = object.get("duration_ms") {
                assert!(ms.is_u64(), "{line}");
            }
            for key in ["action", "dispatch", "plugin", "runner", "tool"] {
                if let Some(v) = object.get(key) {
                    assert!(v.is_string(), "{line}");
                }
            }
            assert!(
                ["error", "warn", "info", "debug", "trace"]
                    .contains(&value["level"].as_str().unwrap()),
                "{line}"
            );
            assert!(is_timestamp(value["ts"].as_str().unwrap()), "{line}");
            value
        })
        .collect();
    assert!(!lines.is_empty(), "no log line at all");
    lines
}

/// 32 lower-case hex digits, not all zero.
fn is_trace_id(value: &Value) -> bool {
    value.as_str().is_some_and(|id| {
        id.len() == 32
            && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            && id.bytes().any(|b| b != b'0')
    })
}

/// `2026-12-01T20:10:00.123Z`.
fn is_timestamp(ts: &str) -> bool {
    let b = ts.as_bytes();
    ts.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z'
        && b.iter()
            .enumerate()
            .all(|(i, c)| [4, 7, 10, 13, 16, 19, 23].contains(&i) || c.is_ascii_digit())
}

#[test]
fn serve_json_logs_are_one_object_per_line_and_leak_nothing() {
    let dir = TempDir::new("ops", "jsonlog");
    let config = config(&dir);
    let tokens = common::serve::write_tokens_file(&dir);
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--config",
        s(&config),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(&tokens),
        "--admin-listen",
        "127.0.0.1:0",
        "--log-format",
        "json",
    ])
    .env("RUST_LOG", "debug")
    .env("WC_LOG_TEST_SECRET", ENV_MARKER)
    // The plugin's own stderr lines may reach the host's log (the quoted, escaped tail of a
    // failed or retired provider); they are the plugin's words, not the host's, so they carry
    // no marker of the host's environment here.
    .env("FIXTURE_STDERR", "a line of the plugin's stderr");
    let serve = AdminServe::start(cmd);
    let (status, described) = serve
        .tool(json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "echo"}));
    assert_eq!(status, 200, "{described}");
    let binding = described["output"]["binding"].clone();
    let (status, _) = serve
        .tool(json!({"action": "call", "binding": binding, "arguments": {"text": ARG_MARKER}}));
    assert_eq!(status, 200);
    // Arguments that break the schema, and a call that crashes the plugin.
    let (status, _) = serve.tool(
        json!({"action": "call", "binding": binding, "arguments": {"text": 1, "x": ARG_MARKER}}),
    );
    assert_eq!(status, 400);
    let (_, described) = serve
        .tool(json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "crash"}));
    let crash = described["output"]["binding"].clone();
    let (status, _) = serve.tool(json!({"action": "call", "binding": crash, "arguments": {}}));
    assert_ne!(status, 200);
    // A wrong token, and a path that does not exist.
    let body = json!({"tool": "plugin_tool", "params": {"action": "list"}}).to_string();
    let raw = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {WRONG_TOKEN}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(
        ops_support::exchange(serve.addr, raw.as_bytes()).status,
        401
    );
    assert_eq!(ops_support::get(serve.addr, "/nope").0, 404);
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");

    let fixture = common::fixture_path();
    let dir_path = dir.path("");
    let secrets = [
        TOKEN,
        WRONG_TOKEN,
        ARG_MARKER,
        ENV_MARKER,
        s(&dir_path),
        s(&fixture),
    ];
    let lines = json_lines(&stderr, &secrets);
    let messages: Vec<&str> = lines.iter().map(|l| l["msg"].as_str().unwrap()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("ignoring unknown key shell.bogus_key")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("POST /api/tools/call -> 401")),
        "{messages:?}"
    );
    // The request fields: a successful echo call, and a request refused before it ran.
    let access = |status: &str| -> Vec<&Value> {
        let wanted = format!("POST /api/tools/call -> {status}");
        lines
            .iter()
            .filter(|l| l["msg"].as_str().unwrap().contains(&wanted))
            .collect()
    };
    let call = access("200")
        .into_iter()
        .find(|l| l["action"] == "call")
        .unwrap_or_else(|| panic!("no access line of the call: {stderr}"));
    for (key, value) in [
        ("runner", "local"),
        ("plugin", "fx"),
        ("tool", "echo"),
        ("dispatch", "completed"),
    ] {
        assert_eq!(call[key], value, "{call}");
    }
    assert!(call["duration_ms"].is_u64(), "{call}");
    let refused = access("401");
    assert!(is_trace_id(&refused[0]["trace_id"]), "{}", refused[0]);
    assert!(refused[0].get("action").is_none(), "{}", refused[0]);
    let invalid = access("400")
        .into_iter()
        .find(|l| l["action"] == "call")
        .unwrap_or_else(|| panic!("no access line of the invalid call: {stderr}"));
    assert_eq!(invalid["dispatch"], "not_started", "{invalid}");
    // The crash's retirement warning waits for the plugin's stderr to close: written on the
    // call's thread it carries the call's trace id and names; written by the stderr thread
    // (stderr closed a moment after the call failed) it carries no request fields at all.
    let crashed = lines
        .iter()
        .find(|l| l["tool"] == "crash" && l["action"] == "call")
        .unwrap_or_else(|| panic!("no access line of the crash: {stderr}"));
    let retired = lines
        .iter()
        .find(|l| l["level"] == "warn" && l["msg"].as_str().unwrap().contains("retired"))
        .unwrap_or_else(|| panic!("no retirement warning: {stderr}"));
    if retired.get("trace_id").is_some() {
        assert_eq!(retired["trace_id"], crashed["trace_id"], "{retired}");
        assert_eq!(retired["plugin"], "fx", "{retired}");
        assert_eq!(retired["tool"], "crash", "{retired}");
    } else {
        assert!(retired.get("plugin").is_none(), "{retired}");
    }
}

#[test]
fn serve_text_lines_show_the_request_fields_compactly() {
    let dir = TempDir::new("ops", "textfields");
    let (config, tokens) = ops_support::files(&dir, false);
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--config",
        s(&config),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(&tokens),
        "--admin-listen",
        "127.0.0.1:0",
    ])
    .env("RUST_LOG", "info");
    let serve = AdminServe::start(cmd);
    let (status, _) = serve.tool(json!({"action": "list", "runner": "local"}));
    assert_eq!(status, 200);
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("POST /api/tools/call -> 200"))
        .unwrap_or_else(|| panic!("no access line: {stderr}"));
    let fields = line
        .split_once(" [trace_id=")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no fields: {line}"));
    let (trace_id, rest) = fields.split_once(' ').unwrap();
    assert!(is_trace_id(&json!(trace_id)), "{line}");
    assert!(
        rest.starts_with("runner=local action=list duration_ms="),
        "{line}"
    );
    assert!(rest.ends_with(']'), "{line}");
}

#[test]
fn gateway_and_mcp_take_log_format_json_and_text_lines_carry_a_timestamp() {
    let dir = TempDir::new("ops", "stdiolog");
    let config = config(&dir);
    let request = |command: &str, format: Option<&str>| -> String {
        let mut cmd = common::cli_command(BIN);
        cmd.args([command, "--config", s(&config)]);
        if let Some(format) = format {
            cmd.args(["--log-format", format]);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stderr = common::read_all(child.stderr.take().unwrap());
        let line = match command {
            "gateway" => r#"{"id":1,"tool":"plugin_tool","params":{"action":"list"}}"#,
            _ => r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        };
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{line}").unwrap();
        drop(stdin);
        let status = common::wait_bounded(&mut child, LIMIT);
        assert_eq!(status.code(), Some(0), "{command}");
        stderr.join().unwrap()
    };
    let dir_path = dir.path("");
    for command in ["gateway", "mcp"] {
        let stderr = request(command, Some("json"));
        let lines = json_lines(&stderr, &[s(&dir_path)]);
        assert_eq!(lines[0]["level"], "warn", "{command}: {stderr}");
        assert_eq!(lines[0]["target"], "webcodex_plugin_host::env::config");

        let text = request(command, None);
        let first = text
            .lines()
            .next()
            .unwrap_or_else(|| panic!("{command}: no log line"));
        let (ts, rest) = first.split_once(' ').unwrap();
        assert!(is_timestamp(ts), "{command}: {first}");
        assert!(
            rest.starts_with("WARN  webcodex_plugin_host::env::config: "),
            "{command}: {first}"
        );
    }
    // Only the long-running commands take the flag.
    let run = common::run_to_end(
        {
            let mut cmd = Command::new(BIN);
            cmd.args(["list", "--config", s(&config), "--log-format", "json"]);
            cmd
        },
        LIMIT,
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
}
