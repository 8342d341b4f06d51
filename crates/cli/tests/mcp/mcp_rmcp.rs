//! Interop with a real MCP client this project did not write: the official Rust SDK (`rmcp`)
//! drives `webcodex-plugin mcp` over child-process stdio and `serve`'s `POST /mcp` over
//! Streamable HTTP, in both eras (the `initialize` handshake and the stateless
//! `server/discover` lifecycle): list → describe → call → invalid
//! arguments → a plugin's `isError` result → 20 concurrent calls (a provider serves one call at
//! a time and a runner holds at most 8 providers, so the 20 are one `call` per provider plus
//! `describe` and `list` requests, all in flight together).

use crate::mcp_support;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, JsonObject, ProtocolVersion,
};
use rmcp::service::{Peer, RoleClient};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{json, Value};

use mcp_support::*;

/// rmcp's Streamable HTTP client transport for `POST /mcp` with a bearer token.
macro_rules! http_transport {
    ($server:expr, $token:expr) => {
        StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri($server.mcp_url())
                .auth_header($token)
                .max_concurrent_requests(CONCURRENT + 4),
        )
    };
}

/// How many concurrent tools/call requests the scenario makes.
const CONCURRENT: usize = 20;
/// How many providers the runner has (the configuration's maximum).
const PROVIDERS: usize = 8;

fn providers() -> Vec<(String, &'static str)> {
    (0..PROVIDERS)
        .map(|i| (format!("p{i}"), "normal"))
        .collect()
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

async fn plugin_tool(peer: &Peer<RoleClient>, arguments: Value) -> CallToolResult {
    peer.call_tool(CallToolRequestParams::new("plugin_tool").with_arguments(object(arguments)))
        .await
        .expect("tools/call answered")
}

/// The text of the first content block.
fn first_text(result: &CallToolResult) -> String {
    let block = serde_json::to_value(&result.content[0]).expect("content serializes");
    assert_eq!(block["type"], "text", "{block}");
    block["text"].as_str().expect("text").to_string()
}

fn structured(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("no structuredContent: {result:?}"))
}

async fn describe(peer: &Peer<RoleClient>, plugin: &str, tool: &str) -> String {
    let result = plugin_tool(
        peer,
        json!({"action":"describe","runner":"local","plugin":plugin,"tool":tool}),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let out = structured(&result);
    assert_eq!(out["tool"]["name"], tool);
    out["binding"].as_str().expect("a binding").to_string()
}

/// list → describe → call → invalid arguments → isError result → 20 concurrent calls.
async fn scenario(peer: Peer<RoleClient>) {
    // tools/list: exactly plugin_tool, as the manifest says.
    let tools = peer.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 1);
    let tool = &tools[0];
    assert_eq!(tool.name, "plugin_tool");
    let annotations = tool.annotations.as_ref().expect("annotations");
    assert_eq!(annotations.destructive_hint, Some(true));
    assert_eq!(annotations.read_only_hint, Some(false));
    let spec = webcodex_plugin_mcp::manifest::tool_spec();
    assert_eq!(
        Value::Object((*tool.input_schema).clone()),
        spec["inputSchema"]
    );

    // list
    let listed = plugin_tool(&peer, json!({"action":"list","runner":"local"})).await;
    assert_eq!(listed.is_error, Some(false));
    let plugins = structured(&listed)["plugins"].as_array().unwrap().len();
    assert_eq!(plugins, PROVIDERS);
    let text = first_text(&listed);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        structured(&listed)
    );

    // describe → call
    let echo = describe(&peer, "p0", "echo").await;
    let called = plugin_tool(
        &peer,
        json!({"action":"call","binding":echo,"arguments":{"text":"hello"}}),
    )
    .await;
    assert_eq!(called.is_error, Some(false));
    assert_eq!(structured(&called), json!({"text":"hello"}));

    // Invalid arguments: an isError result carrying the failure object.
    let invalid = plugin_tool(
        &peer,
        json!({"action":"call","binding":echo,"arguments":{"text":5}}),
    )
    .await;
    assert_eq!(invalid.is_error, Some(true));
    let failure = structured(&invalid);
    assert_eq!(failure["error"]["code"], "plugin_arguments_schema_invalid");
    assert_eq!(failure["dispatch"], "not_started");
    assert_eq!(failure["recovery"], "fix_arguments");
    let invalid = plugin_tool(&peer, json!({"action":"call","tool":"echo"})).await;
    assert_eq!(invalid.is_error, Some(true));
    assert_eq!(structured(&invalid)["error"]["code"], "invalid_arguments");

    // A plugin result with isError true passes through unchanged.
    let is_error = describe(&peer, "p0", "is_error").await;
    let result = plugin_tool(
        &peer,
        json!({"action":"call","binding":is_error,"arguments":{}}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    assert!(result.structured_content.is_none());
    assert_eq!(first_text(&result), "bad input");

    // 20 concurrent tools/call requests: a call on every provider and describe/list requests
    // in between, all sent before any answer is awaited; each gets its own answer.
    let mut bindings = Vec::new();
    for i in 0..PROVIDERS {
        bindings.push(describe(&peer, &format!("p{i}"), "echo").await);
    }
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..CONCURRENT {
        let peer = peer.clone();
        let (arguments, expected) = if let Some(binding) = bindings.get(i) {
            let text = format!("call-{i}");
            (
                json!({"action":"call","binding":binding,"arguments":{"text":text}}),
                json!({"text": text}),
            )
        } else if i % 2 == 0 {
            let plugin = format!("p{}", i % PROVIDERS);
            (
                json!({"action":"list","runner":"local","plugin":plugin}),
                json!(plugin),
            )
        } else {
            let plugin = format!("p{}", i % PROVIDERS);
            (
                json!({"action":"describe","runner":"local","plugin":plugin,"tool":"add"}),
                json!(plugin),
            )
        };
        calls.spawn(async move { (i, expected, plugin_tool(&peer, arguments).await) });
    }
    let mut answered = Vec::new();
    while let Some(joined) = calls.join_next().await {
        let (i, expected, result) = joined.expect("call task");
        assert_eq!(result.is_error, Some(false), "request {i}: {result:?}");
        let out = structured(&result);
        if i < PROVIDERS {
            assert_eq!(out, expected);
        } else {
            assert_eq!(out["plugin"], expected, "request {i}: {out}");
        }
        answered.push(i);
    }
    answered.sort_unstable();
    assert_eq!(answered, (0..CONCURRENT).collect::<Vec<_>>());

    // An unknown tool is a protocol error (-32602).
    let err = peer
        .call_tool(CallToolRequestParams::new("echo").with_arguments(JsonObject::new()))
        .await
        .expect_err("unknown tool");
    assert!(format!("{err:?}").contains("-32602"), "{err:?}");
}

fn mcp_command(dir: &TempDir) -> (tokio::process::Command, std::path::PathBuf) {
    let providers = providers();
    let refs: Vec<(&str, &str)> = providers.iter().map(|(id, m)| (id.as_str(), *m)).collect();
    let config = dir.config(&refs);
    let pids = dir.path("pids");
    let command = tokio::process::Command::new(binary()).configure(|cmd| {
        cmd.arg("mcp").arg("--config").arg(&config);
        cmd.env("FIXTURE_PIDS", &pids);
        for key in ["FIXTURE_LOG", "FIXTURE_STDERR", "RUST_LOG"] {
            cmd.env_remove(key);
        }
    });
    (command, pids)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_over_stdio_with_the_initialize_handshake() {
    let dir = TempDir::new("rmcp-stdio-legacy");
    let (command, pids) = mcp_command(&dir);
    let transport = TokioChildProcess::new(command).expect("spawn mcp");
    let client = ClientConfig::default()
        .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
        .await
        .expect("initialize handshake");
    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("webcodex-plugin")
    );
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    scenario(client.peer().clone()).await;
    client.cancel().await.expect("close the client");
    assert_plugins_gone(&pids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_over_stdio_in_the_stateless_era() {
    let dir = TempDir::new("rmcp-stdio-modern");
    let (command, pids) = mcp_command(&dir);
    let transport = TokioChildProcess::new(command).expect("spawn mcp");
    let client = ClientConfig::default()
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover lifecycle");
    let info = client.peer_info().expect("server info");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    scenario(client.peer().clone()).await;
    client.cancel().await.expect("close the client");
    assert_plugins_gone(&pids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_auto_lifecycle_probes_and_stays_stateless() {
    let dir = TempDir::new("rmcp-stdio-auto");
    let (command, pids) = mcp_command(&dir);
    let transport = TokioChildProcess::new(command).expect("spawn mcp");
    let client = ClientConfig::default()
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
        )
        .await
        .expect("auto lifecycle");
    let info = client.peer_info().expect("server info");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    let listed = plugin_tool(client.peer(), json!({"action":"list"})).await;
    assert_eq!(structured(&listed), json!({"runners":[{"runner":"local"}]}));
    client.cancel().await.expect("close the client");
    assert_plugins_gone(&pids);
}

fn serve_config(dir: &TempDir) -> std::path::PathBuf {
    let providers = providers();
    let refs: Vec<(&str, &str)> = providers.iter().map(|(id, m)| (id.as_str(), *m)).collect();
    dir.config(&refs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
async fn rmcp_over_http_with_the_initialize_handshake() {
    let dir = TempDir::new("rmcp-http-legacy");
    let server = ServeProcess::start(&dir, &serve_config(&dir), &[]);
    let client = ClientConfig::default()
        .serve_with_lifecycle(
            http_transport!(server, TOKEN_INVOKE),
            ClientLifecycleMode::Initialize,
        )
        .await
        .expect("initialize over HTTP");
    let info = client.peer_info().expect("server info");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    scenario(client.peer().clone()).await;
    client.cancel().await.expect("close the client");
    server.stop_and_assert_plugins_gone();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
async fn rmcp_over_http_in_the_stateless_era() {
    let dir = TempDir::new("rmcp-http-modern");
    let server = ServeProcess::start(&dir, &serve_config(&dir), &[]);
    let client = ClientConfig::default()
        .serve_with_lifecycle(
            http_transport!(server, TOKEN_INVOKE),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover over HTTP");
    let info = client.peer_info().expect("server info");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    scenario(client.peer().clone()).await;
    client.cancel().await.expect("close the client");
    server.stop_and_assert_plugins_gone();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
async fn rmcp_over_http_without_a_valid_token_sees_the_bearer_challenge() {
    let dir = TempDir::new("rmcp-http-401");
    let server = ServeProcess::start(&dir, &serve_config(&dir), &[]);
    let err = ClientConfig::default()
        .serve_with_lifecycle(
            http_transport!(server, "not-a-valid-token-at-all"),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect_err("an unknown token is refused");
    assert!(err.is_authorization_required(), "{err:?}");
    server.stop();
}
