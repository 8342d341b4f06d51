//! `webcodex-plugin mcp` spoken to in raw JSON-RPC lines: every error code and edge of the MCP
//! transport (requests before initialize, batches, over-long lines, unknown tools and methods,
//! unsupported versions, EOF with calls in flight), both eras, and `tools/list` equal to
//! `manifest` whatever the config.

use crate::mcp_support;

use std::process::Stdio;

use serde_json::{json, Value};

use mcp_support::*;

fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {response}"))
}

#[test]
fn handshake_era_requests_and_errors() {
    let dir = TempDir::new("handshake");
    let config = dir.config(&[("alpha", "normal")]);
    let mut mcp = McpProcess::start(&dir, &config, None);

    // Before initialize: only ping.
    let r = mcp.call(json!(1), "tools/list", json!({}));
    assert_eq!(error_code(&r), -32600, "{r}");
    let r = mcp.call(
        json!(2),
        "tools/call",
        json!({"name":"plugin_tool","arguments":{"action":"list"}}),
    );
    assert_eq!(error_code(&r), -32600, "{r}");
    let r = mcp.call(json!("p"), "ping", json!({}));
    assert_eq!(r["result"], json!({}));

    let init = mcp.initialize("2025-03-26");
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(
        init["result"]["capabilities"],
        json!({"tools":{"listChanged":false}})
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "webcodex-plugin");
    assert!(init["result"]["serverInfo"]["version"].is_string());
    assert!(init["result"]["instructions"].is_string());

    let r = mcp.call(json!(3), "tools/list", json!({"cursor": "ignored"}));
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 1);
    assert!(r["result"].get("resultType").is_none(), "{r}");

    // Unknown tool, unknown method, malformed params.
    let r = mcp.call(
        json!(4),
        "tools/call",
        json!({"name":"echo","arguments":{}}),
    );
    assert_eq!(error_code(&r), -32602);
    let r = mcp.call(json!(5), "resources/list", json!({}));
    assert_eq!(error_code(&r), -32601);
    let r = mcp.call(
        json!(6),
        "tools/call",
        json!({"name":"plugin_tool","arguments":[1]}),
    );
    assert_eq!(error_code(&r), -32602);

    // A batch (served: this session negotiated 2025-03-26), invalid JSON, a null id.
    mcp.send(json!([{"jsonrpc":"2.0","id":7,"method":"ping"}]));
    let r = mcp.next();
    assert_eq!(r, json!([{"jsonrpc":"2.0","id":7,"result":{}}]));
    mcp.send_raw(b"{not json");
    let r = mcp.next();
    assert_eq!(
        (error_code(&r), r["id"].clone()),
        (-32700, Value::Null),
        "{r}"
    );
    mcp.send_raw(br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#);
    let r = mcp.next();
    assert_eq!(
        (error_code(&r), r["id"].clone()),
        (-32600, Value::Null),
        "{r}"
    );

    // A line over 1 MiB: -32600 with id null, and reading goes on.
    let mut huge = br#"{"jsonrpc":"2.0","id":8,"method":"ping","params":{"pad":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'x', (1 << 20) + 10));
    huge.extend_from_slice(br#""}}"#);
    mcp.send_raw(&huge);
    let r = mcp.next();
    assert_eq!(
        (error_code(&r), r["id"].clone()),
        (-32600, Value::Null),
        "{r}"
    );
    let r = mcp.call(json!(9), "ping", json!({}));
    assert_eq!(r["result"], json!({}));

    // A tool call through the handshake era.
    let result = mcp.tool(json!(10), json!({"action":"list","runner":"local"}));
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["plugins"][0]["plugin"], "alpha");

    // Notifications and client responses get no answer.
    mcp.send(json!({"jsonrpc":"2.0","method":"notifications/whatever"}));
    mcp.send(json!({"jsonrpc":"2.0","id":"x","result":{}}));
    let r = mcp.call(json!(11), "ping", json!({}));
    assert_eq!(r["id"], 11);

    let pids = mcp.pids.clone();
    let (code, rest, _stderr) = mcp.finish();
    assert_eq!(code, Some(0));
    assert!(rest.is_empty(), "unexpected messages: {rest:?}");
    assert_plugins_gone(&pids);
}

#[test]
fn initialize_answers_the_newest_handshake_version_for_an_unknown_one() {
    let dir = TempDir::new("init-version");
    let config = dir.config(&[("alpha", "normal")]);
    let mut mcp = McpProcess::start(&dir, &config, None);
    for (i, asked, answered) in [
        (1, "2024-11-05", "2024-11-05"),
        (2, "2025-06-18", "2025-06-18"),
        (3, "2025-11-25", "2025-11-25"),
        (4, "2099-01-01", "2025-11-25"),
    ] {
        let r = mcp.call(
            json!(i),
            "initialize",
            json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name":"t","version":"0"}}),
        );
        assert_eq!(r["result"]["protocolVersion"], answered);
    }
    let (code, _, _) = mcp.finish();
    assert_eq!(code, Some(0));
}

#[test]
fn stateless_era_without_a_handshake() {
    let dir = TempDir::new("stateless");
    let config = dir.config(&[("alpha", "normal")]);
    let mut mcp = McpProcess::start(&dir, &config, None);

    let r = mcp.call(json!("d"), "server/discover", json!({"_meta": meta()}));
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"][0], STATELESS);
    assert!(result["supportedVersions"]
        .as_array()
        .unwrap()
        .contains(&json!("2024-11-05")));
    assert_eq!(
        result["capabilities"],
        json!({"tools":{"listChanged":false}})
    );
    assert_eq!(result["serverInfo"]["name"], "webcodex-plugin");
    assert!(result["instructions"].is_string());
    assert!(result["ttlMs"].as_u64().unwrap() > 0);
    assert_eq!(result["cacheScope"], "public");

    let r = mcp.call(json!(1), "tools/list", json!({"_meta": meta()}));
    assert_eq!(r["result"]["resultType"], "complete");
    assert!(r["result"]["ttlMs"].is_u64());
    assert_eq!(r["result"]["cacheScope"], "public");
    assert_eq!(r["result"]["tools"][0]["name"], "plugin_tool");

    // A call: describe then call, each result complete.
    let r = mcp.call(
        json!(2),
        "tools/call",
        json!({"name":"plugin_tool","_meta":meta(),
               "arguments":{"action":"describe","runner":"local","plugin":"alpha","tool":"echo"}}),
    );
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["isError"], false);
    let binding = r["result"]["structuredContent"]["binding"].clone();
    let r = mcp.call(
        json!(3),
        "tools/call",
        json!({"name":"plugin_tool","_meta":meta(),
               "arguments":{"action":"call","binding":binding,"arguments":{"text":"hi"}}}),
    );
    assert_eq!(
        r["result"],
        json!({"content":[{"type":"text","text":"hi"}],"structuredContent":{"text":"hi"},
               "isError":false,"resultType":"complete"})
    );

    // Unsupported version: -32022 with the supported versions.
    let mut old = meta();
    old["io.modelcontextprotocol/protocolVersion"] = json!("2099-12-31");
    let r = mcp.call(json!(4), "tools/list", json!({"_meta": old}));
    assert_eq!(error_code(&r), -32022);
    assert_eq!(r["error"]["data"]["requested"], "2099-12-31");
    assert_eq!(r["error"]["data"]["supported"][0], STATELESS);
    // Missing client capabilities: -32602.
    let r = mcp.call(
        json!(5),
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": STATELESS}}),
    );
    assert_eq!(error_code(&r), -32602);
    // server/discover without _meta: -32602; unknown method: -32601; unknown tool: -32602.
    let r = mcp.call(json!(6), "server/discover", json!({}));
    assert_eq!(error_code(&r), -32602);
    let r = mcp.call(json!(7), "prompts/list", json!({"_meta": meta()}));
    assert_eq!(error_code(&r), -32601);
    let r = mcp.call(
        json!(8),
        "tools/call",
        json!({"name":"nope","_meta": meta()}),
    );
    assert_eq!(error_code(&r), -32602);

    let pids = mcp.pids.clone();
    let (code, rest, _) = mcp.finish();
    assert_eq!(code, Some(0));
    assert!(rest.is_empty(), "{rest:?}");
    assert_plugins_gone(&pids);
}

/// `manifest --json` printed by the binary.
fn manifest_json() -> String {
    let out = common::cli_command(binary())
        .args(["manifest", "--json"])
        .stdin(Stdio::null())
        .output()
        .expect("run manifest");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    text.trim_end().to_string()
}

#[test]
fn tools_list_equals_the_manifest_whatever_the_config() {
    let manifest = manifest_json();
    let spec: Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(canonical(&spec), manifest, "manifest --json is canonical");
    assert_eq!(spec["name"], "plugin_tool");
    assert_eq!(spec["inputSchema"]["additionalProperties"], false);
    assert_eq!(spec["annotations"]["destructiveHint"], true);

    let human = common::cli_command(binary())
        .arg("manifest")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(human.status.success());
    assert!(String::from_utf8(human.stdout)
        .unwrap()
        .contains("describe"));

    let configs = [
        vec![("alpha", "normal")],
        vec![
            ("one", "normal"),
            ("two", "bad-tools"),
            ("three", "exit-at-start"),
        ],
        vec![],
    ];
    for (n, providers) in configs.iter().enumerate() {
        let dir = TempDir::new(&format!("manifest-{n}"));
        let config = dir.config(providers);
        let mut mcp = McpProcess::start(&dir, &config, Some("plugin:inspect"));
        let stateless = mcp.call(json!(1), "tools/list", json!({"_meta": meta()}));
        mcp.initialize("2025-11-25");
        let handshake = mcp.call(json!(2), "tools/list", json!({}));
        for r in [&stateless, &handshake] {
            let tools = r["result"]["tools"].as_array().unwrap();
            assert_eq!(tools.len(), 1);
            assert_eq!(canonical(&tools[0]), manifest, "config {n}");
        }
        let (code, _, _) = mcp.finish();
        assert_eq!(code, Some(0));
    }
}

#[test]
fn eof_with_calls_in_flight_answers_them_then_exits() {
    let dir = TempDir::new("eof");
    let config = dir.config(&[("a", "normal"), ("b", "normal"), ("c", "normal")]);
    let mut mcp = McpProcess::start(&dir, &config, None);
    mcp.initialize("2025-06-18");
    let mut bindings = Vec::new();
    for (i, plugin) in ["a", "b", "c"].iter().enumerate() {
        let r = mcp.tool(
            json!(format!("d{i}")),
            json!({"action":"describe","runner":"local","plugin":plugin,"tool":"sleep"}),
        );
        bindings.push(r["structuredContent"]["binding"].clone());
    }
    for (i, binding) in bindings.iter().enumerate() {
        mcp.request(
            json!(i),
            "tools/call",
            json!({"name":"plugin_tool","arguments":{"action":"call","binding":binding,"arguments":{"ms":400}}}),
        );
    }
    let pids = mcp.pids.clone();
    let host_pid = mcp.pid();
    let (code, rest, stderr) = mcp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    let mut ids: Vec<i64> = rest.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![0, 1, 2], "{rest:?}");
    for r in &rest {
        assert_eq!(
            r["result"],
            json!({"content":[{"type":"text","text":"slept"}],"isError":false})
        );
    }
    assert_plugins_gone(&pids);
    assert!(zombie_children_of(host_pid).is_empty());
}

#[test]
fn a_cancelled_call_completes_and_sends_no_response() {
    let dir = TempDir::new("cancel");
    let config = dir.config(&[("a", "normal")]);
    let mut mcp = McpProcess::start(&dir, &config, None);
    mcp.initialize("2025-11-25");
    let r = mcp.tool(
        json!("d"),
        json!({"action":"describe","runner":"local","plugin":"a","tool":"sleep"}),
    );
    let binding = r["structuredContent"]["binding"].clone();
    mcp.request(
        json!(7),
        "tools/call",
        // Long enough that the busy probe below lands while it runs, however loaded the machine.
        json!({"name":"plugin_tool","arguments":{"action":"call","binding":binding,"arguments":{"ms":5000}}}),
    );
    // In flight at the plugin before it is cancelled (a request still being dispatched could
    // lose the race to the probe below).
    mcp.wait_for_plugin_to_read(r#""ms":5000"#);
    mcp.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                    "params":{"requestId":7,"reason":"user"}}));
    // The call still runs: a second call to the same provider finds it busy, not retired.
    let busy = mcp.tool(
        json!(8),
        json!({"action":"call","binding":binding,"arguments":{"ms":1}}),
    );
    assert_eq!(busy["isError"], true, "{busy}");
    assert_eq!(
        busy["structuredContent"]["error"]["code"],
        "plugin_provider_busy"
    );
    let pids = mcp.pids.clone();
    let (code, rest, _) = mcp.finish();
    assert_eq!(code, Some(0));
    assert!(
        rest.iter().all(|r| r["id"] != 7),
        "the cancelled call was answered: {rest:?}"
    );
    assert!(rest.is_empty(), "{rest:?}");
    assert_plugins_gone(&pids);
}

#[test]
fn stdout_carries_only_mcp_messages_even_with_noisy_plugins() {
    let dir = TempDir::new("noisy");
    let config = dir.config(&[("n", "noisy"), ("s", "stray-stdout")]);
    let mut mcp = McpProcess::start(&dir, &config, None);
    mcp.initialize("2025-11-25");
    for i in 0..3 {
        mcp.tool(
            json!(i),
            json!({"action":"check","runner":"local","plugin":"s"}),
        );
        mcp.tool(
            json!(100 + i),
            json!({"action":"list","runner":"local","plugin":"n"}),
        );
    }
    // Every stdout line was parsed as a JSON-RPC message by the reader (it panics otherwise).
    let (code, rest, _) = mcp.finish();
    assert_eq!(code, Some(0));
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn an_invalid_config_refuses_to_start() {
    let dir = TempDir::new("bad-config");
    let config = dir.path("runner.toml");
    std::fs::write(&config, "[plugins\n").unwrap();
    let out = common::cli_command(binary())
        .args(["mcp", "--config"])
        .arg(&config)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "stdout must carry only MCP messages");
    let out = common::cli_command(binary())
        .args(["mcp", "--config"])
        .arg(&config)
        .args(["--scopes", "plugin:admin"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs cargo, which cannot run under Wine (docs/PLATFORMS.md)"
)]
fn the_library_and_binary_depend_on_no_async_runtime() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["tree", "--offline", "-e", "normal", "--prefix", "none"])
        .current_dir(mcp_support::common::REPO_ROOT)
        .stdin(Stdio::null())
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8(out.stdout).unwrap();
    assert!(tree.contains("webcodex-plugin-host"), "{tree}");
    for runtime in ["tokio ", "rmcp ", "async-std ", "smol "] {
        assert!(
            !tree.lines().any(|l| l.starts_with(runtime)),
            "the normal dependency graph contains {runtime}:\n{tree}"
        );
    }
}

/// A `check` and a `call` whose lines were read just before stdin's EOF are both answered
/// normally (never `plugin_manager_stopping`), then the server exits 0 with no plugin left.
#[test]
fn requests_read_just_before_eof_are_served_then_the_server_exits() {
    let dir = TempDir::new("eof-served");
    let config = dir.config(&[("a", "normal")]);
    let mut mcp = McpProcess::start(&dir, &config, None);
    mcp.initialize("2025-06-18");
    let described = mcp.tool(
        json!("d"),
        json!({"action":"describe","runner":"local","plugin":"a","tool":"sleep"}),
    );
    let binding = described["structuredContent"]["binding"].clone();
    mcp.request(
        json!("check"),
        "tools/call",
        json!({"name":"plugin_tool","arguments":{"action":"check","runner":"local","plugin":"a"}}),
    );
    mcp.request(
        json!("call"),
        "tools/call",
        json!({"name":"plugin_tool","arguments":{"action":"call","binding":binding,
               "arguments":{"ms":50}}}),
    );
    let pids = mcp.pids.clone();
    let host_pid = mcp.pid();
    // `finish` closes stdin at once, right after the two lines.
    let (code, rest, stderr) = mcp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(rest.len(), 2, "{rest:?}");
    let answer = |id: &str| {
        rest.iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no answer {id}: {rest:?}"))["result"]
            .clone()
    };
    let check = answer("check");
    assert_eq!(check["isError"], false, "{check}");
    assert_eq!(check["structuredContent"]["ready"], true, "{check}");
    assert_eq!(
        answer("call"),
        json!({"content":[{"type":"text","text":"slept"}],"isError":false})
    );
    assert_plugins_gone(&pids);
    assert!(zombie_children_of(host_pid).is_empty());
}

/// The methods 2026-07-28 removed (`initialize`, `ping`, `logging/setLevel`) are unknown in a
/// request of that era (-32601); the handshake era keeps `initialize` and `ping`.
#[test]
fn methods_removed_by_the_stateless_revision_are_unknown_in_its_era() {
    let dir = TempDir::new("stateless-removed");
    let config = dir.config(&[("alpha", "normal")]);
    let mut mcp = McpProcess::start(&dir, &config, None);
    for (i, method) in ["initialize", "ping", "logging/setLevel"]
        .iter()
        .enumerate()
    {
        let params = json!({"_meta": meta(), "protocolVersion": STATELESS, "capabilities": {},
                            "clientInfo": {"name": "t", "version": "0"}, "level": "info"});
        let r = mcp.call(json!(i), method, params);
        assert_eq!(error_code(&r), -32601, "{method}: {r}");
    }
    // The stateless initialize negotiated nothing: a handshake-era request still needs one.
    let r = mcp.call(json!("early"), "tools/list", json!({}));
    assert_eq!(error_code(&r), -32600, "{r}");
    let r = mcp.call(json!("p"), "ping", json!({}));
    assert_eq!(r["result"], json!({}));
    let init = mcp.initialize("2025-11-25");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let (code, rest, _) = mcp.finish();
    assert_eq!(code, Some(0));
    assert!(rest.is_empty(), "{rest:?}");
}

/// `mcp` echoes every id byte for byte: answers of the reading thread, `tools/call` answers of
/// a worker, errors, and before and after `initialize`.
#[test]
fn ids_come_back_byte_for_byte_over_mcp_stdio() {
    const IDS: [&str; 7] = [
        "18446744073709551616",
        "1e2",
        "-0",
        "1.50",
        "-1.5E-3",
        r#""caf\u00e9 \"id\"""#,
        "123456789012345678901234567890",
    ];
    let dir = TempDir::new("raw-ids");
    let config = dir.config(&[("alpha", "normal")]);
    let mut lines = Vec::new();
    for id in IDS {
        // Before initialize: -32600 with the id.
        lines.push(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#
        ));
    }
    lines.push(
        r#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#
            .to_string(),
    );
    for id in IDS {
        lines.push(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        lines.push(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"nope"}}"#));
    }
    for id in IDS {
        // One call per id at a time (an id in flight may not be reused).
        lines.push(format!(
            r#"{{"jsonrpc":"2.0", "id" : {id} ,"method":"tools/call","params":{{"name":"plugin_tool","arguments":{{"action":"list"}}}}}}"#
        ));
    }
    let mut child = mcp_support::common::cli_command(binary())
        .arg("mcp")
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mcp");
    let stdout = mcp_support::common::read_all(child.stdout.take().expect("stdout"));
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        for line in &lines {
            writeln!(stdin, "{line}").expect("write");
        }
    }
    let status = mcp_support::common::wait_bounded(&mut child, RESPONSE_LIMIT);
    assert_eq!(status.code(), Some(0));
    let out: Vec<String> = stdout.join().unwrap().lines().map(str::to_string).collect();
    assert_eq!(out.len(), lines.len(), "{out:#?}");
    for id in IDS {
        let echoed: Vec<&String> = out.iter().filter(|l| echoes(l, id)).collect();
        assert_eq!(echoed.len(), 4, "id {id}: {out:#?}");
        assert_eq!(
            echoed
                .iter()
                .filter(|l| l.contains(r#""isError":false"#))
                .count(),
            1,
            "the tools/call answer of id {id}"
        );
    }
}

/// True when the JSON `text` carries the member `"id":ID` exactly as written.
fn echoes(text: &str, id: &str) -> bool {
    text.contains(&format!("\"id\":{id},")) || text.contains(&format!("\"id\":{id}}}"))
}

/// A batch is served only once `initialize` negotiated 2025-03-26: each member answered, the
/// answers as one array (none for notifications), an empty array -32600; under any other
/// version (or before `initialize`) a batch is -32600.
#[test]
fn batches_are_served_only_under_2025_03_26() {
    let dir = TempDir::new("stdio-batch");
    let config = dir.config(&[("alpha", "normal")]);
    let mut mcp = McpProcess::start(&dir, &config, None);
    let batch = json!([
        {"jsonrpc":"2.0","id":1,"method":"tools/list"},
        {"jsonrpc":"2.0","method":"notifications/initialized"},
        tool_request(json!("c"), json!({"action":"list"})),
        {"jsonrpc":"2.0","id":2,"method":"nope"},
        7
    ]);
    let refused = |mcp: &mut McpProcess, what: &str| {
        let r = mcp.next();
        assert_eq!(
            (error_code(&r), r["id"].clone()),
            (-32600, Value::Null),
            "{what}: {r}"
        );
    };
    mcp.send(batch.clone());
    refused(&mut mcp, "before initialize");
    mcp.initialize("2025-06-18");
    mcp.send(batch.clone());
    refused(&mut mcp, "under 2025-06-18");

    mcp.initialize("2025-03-26");
    mcp.send(batch.clone());
    let answers = mcp.next();
    let answers = answers
        .as_array()
        .unwrap_or_else(|| panic!("one array: {answers}"));
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!("c"), &json!(2), &Value::Null]);
    assert_eq!(answers[0]["result"]["tools"][0]["name"], "plugin_tool");
    assert_eq!(answers[1]["result"]["isError"], false);
    assert_eq!(answers[2]["error"]["code"], -32601);
    assert_eq!(answers[3]["error"]["code"], -32600);
    // An empty array: one -32600 (not an array).
    mcp.send(json!([]));
    refused(&mut mcp, "an empty batch");
    // Only notifications: nothing at all; the next answer is the ping's.
    mcp.send(
        json!([{"jsonrpc":"2.0","method":"notifications/initialized"},
                    {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}]),
    );
    let r = mcp.call(json!("after"), "ping", json!({}));
    assert_eq!(r["result"], json!({}));
    let (code, rest, stderr) = mcp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(rest.is_empty(), "{rest:?}");
}

/// A batch's calls run concurrently (two calls that can only finish together both finish),
/// each under the in-flight bound like a separate request (65 calls: at most one saturated).
#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn a_batch_runs_its_calls_concurrently_under_the_in_flight_bound() {
    let dir = TempDir::new("stdio-batch-concurrent");
    let config = dir.rendezvous_config();
    let mut mcp = McpProcess::start(&dir, &config, None);
    mcp.initialize("2025-03-26");
    let mut calls = Vec::new();
    for plugin in ["a", "b"] {
        let described = mcp.tool(
            json!(format!("d-{plugin}")),
            json!({"action":"describe","runner":"local","plugin":plugin,"tool":"meet"}),
        );
        let binding = described["structuredContent"]["binding"].clone();
        calls.push(tool_request(
            json!(plugin),
            json!({"action":"call","binding":binding,"arguments":{}}),
        ));
    }
    mcp.send(Value::Array(calls));
    let answers = mcp.next();
    let met = json!({"content":[{"type":"text","text":"met"}],"isError":false});
    assert_eq!(answers[0]["id"], "a");
    assert_eq!(answers[0]["result"], met, "{answers}");
    assert_eq!(answers[1]["id"], "b");
    assert_eq!(answers[1]["result"], met, "{answers}");
    let (code, rest, _) = mcp.finish();
    assert_eq!(code, Some(0));
    assert!(rest.is_empty(), "{rest:?}");

    // A fresh server for the bound: a slot is freed only after its answer is written, so the
    // calls above may still hold theirs for a moment after their answers arrived.
    let mut mcp = McpProcess::start(&dir, &config, None);
    mcp.initialize("2025-03-26");
    let many: Vec<Value> = (0..65)
        .map(|i| tool_request(json!(i), json!({"action":"list"})))
        .collect();
    mcp.send(Value::Array(many));
    let answers = mcp.next();
    let answers = answers.as_array().expect("one array");
    assert_eq!(answers.len(), 65);
    let saturated: Vec<&Value> = answers
        .iter()
        .filter(|a| a["result"]["structuredContent"]["error"]["code"] == "gateway_saturated")
        .collect();
    // 65 members, 64 slots: at most one is refused (none when an early `list` ended before
    // the last member was admitted, which a loaded machine allows); every other is answered.
    assert!(saturated.len() <= 1, "{answers:?}");
    let listed = answers
        .iter()
        .filter(|a| a["result"]["isError"] == false)
        .count();
    assert_eq!(listed + saturated.len(), 65, "{answers:?}");
    let (code, rest, _) = mcp.finish();
    assert_eq!(code, Some(0));
    assert!(rest.is_empty(), "{rest:?}");
}
