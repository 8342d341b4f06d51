//! Project-bound tools over MCP (`webcodex-plugin mcp`, stdio): the manifest's `project` on
//! describe, a bound call that works while the root is unchanged, and a refused one rendered as
//! an `isError` result whose structured content is the failure object. The root is a real
//! directory; the fixture's log proves the refused call never reached the plugin.

use crate::mcp_support::*;

use serde_json::{json, Value};

fn structured_failure(result: &Value) -> &Value {
    assert_eq!(result["isError"], true, "{result}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"], "the text is the failure");
    &result["structuredContent"]
}

fn calls(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"tools/call\""))
        .count()
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Windows refuses to rename a directory a plugin works in"
)]
fn a_project_bound_call_is_refused_as_an_is_error_result_once_the_root_changed() {
    let dir = TempDir::new("project");
    let root = dir.path("app");
    std::fs::create_dir(&root).unwrap();
    let root_text = root.to_str().unwrap();
    let config = dir.config_with(
        &[("fx", "normal")],
        &format!("cwd = {}", toml_str(root_text)),
    );
    let mut mcp = McpProcess::start(&dir, &config, None);
    mcp.initialize("2025-06-18");
    let listed = mcp.call(json!(1), "tools/list", json!({}));
    let properties = &listed["result"]["tools"][0]["inputSchema"]["properties"];
    assert_eq!(properties["project"]["type"], "string", "{listed}");
    assert_eq!(properties["project_target"]["type"], "string", "{listed}");

    let described = mcp.tool(
        json!(2),
        json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "echo",
               "project": root_text}),
    );
    assert_eq!(described["isError"], false, "{described}");
    let output = &described["structuredContent"];
    assert_eq!(output["project"], json!(root_text), "{described}");
    assert!(output["projectTarget"]
        .as_str()
        .unwrap()
        .starts_with("wc_proot_"));
    let binding = output["binding"].clone();
    let call = json!({"action": "call", "binding": binding, "arguments": {"text": "hi"}});
    let called = mcp.tool(json!(3), call.clone());
    assert_eq!(called["isError"], false, "{called}");
    assert_eq!(called["structuredContent"]["text"], "hi", "{called}");
    assert_eq!(calls(&mcp.log), 1);

    // The root renamed away and another put in its place.
    std::fs::rename(&root, dir.path("app-old")).unwrap();
    std::fs::create_dir(&root).unwrap();
    let refused = mcp.tool(json!(4), call);
    let failure = structured_failure(&refused);
    assert_eq!(
        failure,
        &json!({"error": {"code": "plugin_project_changed",
                          "message": "the project root changed; the call was not dispatched (list and describe again)"},
                "dispatch": "not_started", "recovery": "list_and_describe"})
    );
    // Described again: the plugin works in the old directory, not in this project now.
    let again = mcp.tool(
        json!(5),
        json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "echo",
               "project": root_text}),
    );
    assert_eq!(
        structured_failure(&again)["error"]["code"],
        "plugin_project_mismatch"
    );
    assert_eq!(calls(&mcp.log), 1, "the refused call reached the plugin");
    let (code, _, stderr) = mcp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_plugins_gone(&dir.path("pids"));
}

#[test]
fn a_describe_with_a_project_needs_project_read_over_mcp() {
    let dir = TempDir::new("project-scope");
    let root = dir.path("app");
    std::fs::create_dir(&root).unwrap();
    let root_text = root.to_str().unwrap();
    let config = dir.config_with(
        &[("fx", "normal")],
        &format!("cwd = {}", toml_str(root_text)),
    );
    let mut mcp = McpProcess::start(&dir, &config, Some("plugin:inspect,plugin:invoke"));
    mcp.initialize("2025-06-18");
    let describe = json!({"action": "describe", "runner": "local", "plugin": "fx",
                          "tool": "echo", "project": root_text});
    let refused = mcp.tool(json!(1), describe);
    let failure = structured_failure(&refused);
    assert_eq!(failure["error"]["code"], "insufficient_scope");
    assert!(failure["error"]["message"]
        .as_str()
        .unwrap()
        .contains("project:read"));
    // Without the project, as today.
    let plain = mcp.tool(
        json!(2),
        json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "echo"}),
    );
    assert_eq!(plain["isError"], false, "{plain}");
    let (code, _, stderr) = mcp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_plugins_gone(&dir.path("pids"));
}
