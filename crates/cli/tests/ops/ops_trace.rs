//! Trace context: a W3C `traceparent` from the HTTP header or MCP `params._meta.traceparent`
//! (a fresh one otherwise) is in the request's log lines (as JSON fields with the request's
//! runner, plugin, tool, action, dispatch and duration), goes on to a `--runners` runner with
//! the same trace id, and never reaches a plugin.
#![cfg(unix)]

use crate::common;
use crate::ops_support;
use crate::tempdir;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use serde_json::{json, Value};

use ops_support::{s, LoggedServe, LIMIT, TOKEN};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const MCP_TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const MCP_TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

/// `serve --log-format json` with `RUST_LOG=info`, the fixture logging what it reads to `log`.
fn serve_command(
    config: &Path,
    tokens: &Path,
    runners: Option<&Path>,
    log: &Path,
) -> std::process::Command {
    let mut cmd = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--config",
        s(config),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(tokens),
        "--log-format",
        "json",
    ])
    .env("RUST_LOG", "info")
    .env("FIXTURE_LOG", log);
    if let Some(runners) = runners {
        cmd.args(["--runners", s(runners)]);
    }
    for var in common::PROXY_VARIABLES {
        cmd.env_remove(var);
    }
    cmd
}

fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

/// The JSON access line of `POST path` whose `trace_id` is `trace_id`.
fn access_line(serve: &mut LoggedServe, path: &str, trace_id: &str) -> Value {
    let wanted = format!("POST {path} -> ");
    let line = serve.wait_for_line(&format!("`{wanted}` with trace {trace_id}"), |l| {
        let v = parse(l);
        v["msg"].as_str().is_some_and(|m| m.contains(&wanted)) && v["trace_id"] == trace_id
    });
    parse(&line)
}

/// The next JSON access line of `POST path`.
fn next_access_line(serve: &mut LoggedServe, path: &str) -> Value {
    let wanted = format!("POST {path} -> ");
    let line = serve.wait_for_line(&format!("`{wanted}`"), |l| {
        parse(l)["msg"]
            .as_str()
            .is_some_and(|m| m.contains(&wanted))
    });
    parse(&line)
}

fn is_trace_id(value: &Value) -> bool {
    value.as_str().is_some_and(|id| {
        id.len() == 32
            && id
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            && id != "00000000000000000000000000000000"
    })
}

/// Everything the fixture plugins read (their `FIXTURE_LOG` files).
fn plugin_input(logs: &[&Path]) -> String {
    logs.iter()
        .map(|log| std::fs::read_to_string(log).unwrap_or_default())
        .collect()
}

#[test]
fn the_callers_trace_id_is_logged_forwarded_to_a_runner_and_kept_from_plugins() {
    let dir = TempDir::new("ops", "trace-front");
    let runner_dir = TempDir::new("ops", "trace-runner");
    let (runner_config, runner_tokens) = ops_support::files(&runner_dir, false);
    let runner_log = runner_dir.path("fixture.log");
    let mut runner = LoggedServe::start(serve_command(
        &runner_config,
        &runner_tokens,
        None,
        &runner_log,
    ));
    let (config, tokens) = ops_support::files(&dir, false);
    dir.write("r1.tok", &format!("{TOKEN}\n"));
    let runners = dir.write(
        "runners.toml",
        &format!(
            "[[runners]]\nid = \"r1\"\nname = \"Runner 1\"\nurl = \"http://{}\"\n\
             token_file = \"r1.tok\"\n",
            runner.addr
        ),
    );
    let front_log = dir.path("fixture.log");
    let mut front = LoggedServe::start(serve_command(&config, &tokens, Some(&runners), &front_log));
    let header = format!("traceparent: {TRACEPARENT}\r\n");

    // Through the front to the runner: describe, then call, both under the caller's trace.
    let describe = json!({"action": "describe", "runner": "r1", "plugin": "fx", "tool": "echo"});
    let (status, described) = front.tool_with(TOKEN, &header, describe);
    assert_eq!(status, 200, "{described}");
    let binding = described["output"]["binding"].clone();
    let call = json!({"action": "call", "binding": binding, "arguments": {"text": "traced"}});
    let (status, called) = front.tool_with(TOKEN, &header, call);
    assert_eq!(status, 200, "{called}");

    let described_line = access_line(&mut front, "/api/tools/call", TRACE_ID);
    assert_eq!(described_line["action"], "describe", "{described_line}");
    let called_line = access_line(&mut front, "/api/tools/call", TRACE_ID);
    assert_eq!(called_line["action"], "call", "{called_line}");
    assert_eq!(called_line["runner"], "r1", "{called_line}");
    assert_eq!(called_line["plugin"], "fx", "{called_line}");
    assert_eq!(called_line["tool"], "echo", "{called_line}");
    assert_eq!(called_line["dispatch"], "completed", "{called_line}");
    assert!(called_line["duration_ms"].is_u64(), "{called_line}");
    // The runner logged both hops under the same trace id.
    let hop = access_line(&mut runner, "/api/tools/call", TRACE_ID);
    assert_eq!(hop["action"], "describe", "{hop}");
    let hop = access_line(&mut runner, "/api/tools/call", TRACE_ID);
    assert_eq!(hop["action"], "call", "{hop}");
    assert_eq!(hop["runner"], "local", "{hop}");

    // No header, or a malformed one: a fresh trace id each time.
    let list = json!({"action": "list"});
    assert_eq!(front.tool_with(TOKEN, "", list.clone()).0, 200);
    let first = next_access_line(&mut front, "/api/tools/call");
    let zero = "traceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01\r\n";
    assert_eq!(front.tool_with(TOKEN, zero, list.clone()).0, 200);
    let second = next_access_line(&mut front, "/api/tools/call");
    let upper = format!("traceparent: {}\r\n", TRACEPARENT.to_ascii_uppercase());
    assert_eq!(front.tool_with(TOKEN, &upper, list).0, 200);
    let third = next_access_line(&mut front, "/api/tools/call");
    for line in [&first, &second, &third] {
        assert!(is_trace_id(&line["trace_id"]), "{line}");
        assert_ne!(line["trace_id"], TRACE_ID, "{line}");
    }
    assert_ne!(first["trace_id"], second["trace_id"]);
    assert_ne!(second["trace_id"], third["trace_id"]);

    // MCP over HTTP: `_meta.traceparent` names the request's trace, locally and on the hop.
    let local_describe =
        json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "echo"});
    let (status, described) = front.tool_with(TOKEN, "", local_describe);
    assert_eq!(status, 200, "{described}");
    let local_binding = described["output"]["binding"].clone();
    for binding in [&local_binding, &binding] {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "plugin_tool",
            "arguments": {"action": "call", "binding": binding, "arguments": {"text": "mcp"}},
            "_meta": {"traceparent": MCP_TRACEPARENT, "other": "meta-marker"},
        }})
        .to_string();
        let raw = format!(
            "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let response = ops_support::exchange(front.addr, raw.as_bytes());
        assert_eq!(response.status, 200, "{}", response.text());
        assert_eq!(
            response.json()["result"]["isError"],
            false,
            "{}",
            response.text()
        );
        let line = access_line(&mut front, "/mcp", MCP_TRACE_ID);
        assert_eq!(line["action"], "call", "{line}");
    }
    let hop = access_line(&mut runner, "/api/tools/call", MCP_TRACE_ID);
    assert_eq!(hop["tool"], "echo", "{hop}");

    let (status, _) = front.stop();
    assert_eq!(status.code(), Some(0));
    let (status, _) = runner.stop();
    assert_eq!(status.code(), Some(0));
    // The plugins read requests, but never a trace context nor MCP's `_meta`.
    let read = plugin_input(&[&front_log, &runner_log]);
    assert!(read.contains("traced") && read.contains("mcp"), "{read}");
    for absent in [
        "traceparent",
        TRACE_ID,
        MCP_TRACE_ID,
        "_meta",
        "meta-marker",
    ] {
        assert!(!read.contains(absent), "a plugin read {absent:?}: {read}");
    }
}

#[test]
fn mcp_on_stdio_takes_the_trace_from_meta_and_logs_it() {
    let dir = TempDir::new("ops", "trace-stdio");
    let (config, _) = ops_support::files(&dir, false);
    let log = dir.path("fixture.log");
    let mut cmd = common::cli_command(BIN);
    cmd.args(["mcp", "--config", s(&config), "--log-format", "json"])
        .env("RUST_LOG", "debug")
        .env("FIXTURE_LOG", &log);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcp");
    let stdout = common::read_all(child.stdout.take().unwrap());
    let stderr = common::read_all(child.stderr.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},
            "clientInfo":{"name":"t","version":"1"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"plugin_tool",
            "arguments":{"action":"list","runner":"local"},
            "_meta":{"traceparent":MCP_TRACEPARENT}}}),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"plugin_tool",
            "arguments":{"action":"list","runner":"local"}}}),
    ];
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let status = common::wait_bounded(&mut child, LIMIT);
    assert_eq!(status.code(), Some(0));
    let stdout = stdout.join().unwrap();
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    let stderr = stderr.join().unwrap();
    let finished: Vec<Value> = stderr
        .lines()
        .map(parse)
        .filter(|v| {
            v["msg"]
                .as_str()
                .is_some_and(|m| m.starts_with("plugin_tool: list"))
        })
        .collect();
    assert_eq!(finished.len(), 2, "{stderr}");
    let traced = finished
        .iter()
        .find(|v| v["trace_id"] == MCP_TRACE_ID)
        .unwrap_or_else(|| panic!("no line with the caller's trace id: {stderr}"));
    assert_eq!(traced["action"], "list", "{traced}");
    assert_eq!(traced["runner"], "local", "{traced}");
    let fresh = finished
        .iter()
        .find(|v| v["trace_id"] != MCP_TRACE_ID)
        .unwrap();
    assert!(is_trace_id(&fresh["trace_id"]), "{fresh}");
}
