//! Plugins that need Node.js: the TypeScript scaffold end to end (init → npm install → npm run
//! build → check → call) and the raw-protocol Node example. Ignored by default because they
//! need `node` (and `npm` plus the npm registry for the scaffold); `.ci/run` installs Node and
//! runs them with `cargo test --test node -- --include-ignored`.

use crate::common;
use crate::tempdir;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use webcodex_plugin_host::{ConfigSource, Host, HostOptions};

use common::{run_to_end, Run};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// A hang guard for `npm install` on a slow network, never a timing assertion.
const NPM_LIMIT: Duration = Duration::from_secs(600);
/// A hang guard for one CLI run.
const CLI_LIMIT: Duration = Duration::from_secs(60);

/// The CLI with `args`, run from the repository's root (the examples' configs name their
/// plugins relative to it).
fn cli(args: &[&str]) -> Run {
    let mut command = common::cli_command(BIN);
    command.args(args).current_dir(common::REPO_ROOT);
    run_to_end(command, CLI_LIMIT)
}

fn npm(dir: &Path, args: &[&str]) {
    let mut command = Command::new("npm");
    command.args(args).current_dir(dir);
    let out = run_to_end(command, NPM_LIMIT);
    assert_eq!(out.code, Some(0), "npm {args:?} failed: {out:?}");
}

#[test]
#[ignore = "needs node and npm (and the npm registry)"]
fn typescript_scaffold_builds_as_printed_and_runs_end_to_end() {
    let tmp = TempDir::new("node", "ts-e2e");
    let dir = tmp.join("ts plugin");
    let init = cli(&[
        "init",
        dir.to_str().unwrap(),
        "--lang",
        "ts",
        "--id",
        "ts-e2e",
    ]);
    assert_eq!(init.code, Some(0), "{init:?}");
    assert!(
        init.stdout.contains("npm install && npm run build"),
        "{}",
        init.stdout
    );

    // Exactly the printed build step.
    npm(&dir, &["install", "--no-audit", "--no-fund"]);
    npm(&dir, &["run", "build"]);
    assert!(dir.join("dist/plugin.js").is_file());
    assert!(dir.join("dist/sdk.js").is_file());

    // The printed provider block, pasted into a runner.toml.
    let block = common::printed_provider_block(&init.stdout);
    let config = tmp.join("runner.toml");
    std::fs::write(
        &config,
        format!("[plugins]\nrequest_timeout_secs = 30\n\n{block}"),
    )
    .unwrap();
    let config = config.to_str().unwrap();

    let check = cli(&["check", "--config", config, "--plugin", "ts-e2e", "--json"]);
    assert_eq!(check.code, Some(0), "{check:?}");
    let report: Value = serde_json::from_str(&check.stdout).unwrap();
    assert_eq!(report["ready"], true, "{report}");
    assert_eq!(report["tools"], json!([{"name": "echo", "title": "Echo"}]));
    assert!(report["catalogDigest"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));

    let call = cli(&[
        "call",
        "--config",
        config,
        "--plugin",
        "ts-e2e",
        "--tool",
        "echo",
        "--arguments",
        r#"{"text":"hé there","uppercase":true}"#,
        "--json",
    ]);
    assert_eq!(call.code, Some(0), "{call:?}");
    let result: Value = serde_json::from_str(&call.stdout).unwrap();
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "HÉ THERE"}], "isError": false,
               "structuredContent": {"text": "HÉ THERE"}})
    );

    // errorResult: a completed call the tool reported as failed exits 1.
    let refused = cli(&[
        "call",
        "--config",
        config,
        "--plugin",
        "ts-e2e",
        "--tool",
        "echo",
        "--arguments",
        r#"{"text":"   "}"#,
    ]);
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(refused.stdout.contains("text is blank"), "{refused:?}");

    // The host checks arguments against the builder's schema before sending.
    let rejected = cli(&[
        "call",
        "--config",
        config,
        "--plugin",
        "ts-e2e",
        "--tool",
        "echo",
        "--arguments",
        r#"{"text":"x","extra":1}"#,
        "--json",
    ]);
    assert_eq!(rejected.code, Some(1), "{rejected:?}");
    assert!(rejected.stdout.contains("plugin_arguments_schema_invalid"));

    // A handler that throws stops the plugin without an answer: the outcome is unknown, never
    // a made-up result.
    let source = dir.join("src/plugin.ts");
    let original = std::fs::read_to_string(&source).unwrap();
    let with_boom = original.replace(
        "runPlugin(definePlugin({ tools: [echo] }));",
        r#"const boom = defineTool({
  name: "boom",
  inputSchema: schema.object({}),
  execute(): never {
    throw new Error("boom");
  },
});

runPlugin(definePlugin({ tools: [echo, boom] }));"#,
    );
    assert_ne!(with_boom, original, "the scaffold's last line changed");
    std::fs::write(&source, with_boom).unwrap();
    npm(&dir, &["run", "build"]);
    let boom = cli(&[
        "call", "--config", config, "--plugin", "ts-e2e", "--tool", "boom", "--json",
    ]);
    assert_eq!(boom.code, Some(1), "{boom:?}");
    let failure: Value = serde_json::from_str(&boom.stdout).unwrap();
    assert_eq!(failure["dispatch"], "outcome_unknown", "{failure}");
    assert_eq!(failure["error"]["code"], "plugin_eof", "{failure}");
}

/// The Node example's runner.toml, its plugin started in the repository's root (the config
/// names the script relative to it).
fn node_example_host() -> Host {
    let path = Path::new(common::REPO_ROOT).join("examples/node/runner.toml");
    let mut config = webcodex_plugin_host::load_runner_config(&path, 8).unwrap();
    let root = Path::new(common::REPO_ROOT).canonicalize().unwrap();
    config.plugins.providers[0].cwd = Some(root);
    Host::start(ConfigSource::Fixed(config), HostOptions::default()).unwrap()
}

#[test]
#[ignore = "needs node"]
fn node_example_plugin_is_admitted_and_keeps_state_between_calls() {
    let host = node_example_host();
    let names: Vec<String> = host
        .provider("notes-node")
        .unwrap()
        .catalog()
        .tools()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(names, ["add_note", "delete_notes", "list_notes"]);
    assert!(host.check("notes-node").unwrap().ready);

    let first = host
        .call("notes-node", "add_note", &json!({"text": "buy milk"}))
        .unwrap();
    assert_eq!(first.structured_content().unwrap()["number"], 1);
    host.call("notes-node", "add_note", &json!({"text": "call Ada"}))
        .unwrap();
    let listed = host.call("notes-node", "list_notes", &json!({})).unwrap();
    assert_eq!(
        listed.structured_content().unwrap()["notes"],
        json!(["buy milk", "call Ada"])
    );
    let refused = host
        .call("notes-node", "delete_notes", &json!({"confirm": false}))
        .unwrap();
    assert!(refused.is_error());
    let deleted = host
        .call("notes-node", "delete_notes", &json!({"confirm": true}))
        .unwrap();
    assert_eq!(deleted.texts(), ["deleted 2 notes"]);
    let err = host
        .call("notes-node", "add_note", &json!({"text": ""}))
        .unwrap_err();
    assert_eq!(err.code().as_str(), "plugin_arguments_schema_invalid");
    host.shutdown();
}

#[test]
#[ignore = "needs node"]
fn node_example_through_the_cli_marks_destructive_and_refusals_exit_one() {
    let config = Path::new(common::REPO_ROOT).join("examples/node/runner.toml");
    let config = config.to_str().unwrap();
    let describe = cli(&[
        "describe",
        "--config",
        config,
        "--plugin",
        "notes-node",
        "--tool",
        "delete_notes",
    ]);
    assert_eq!(describe.code, Some(0), "{describe:?}");
    assert!(
        describe.stdout.contains("WARNING: DESTRUCTIVE"),
        "{describe:?}"
    );
    let refused = cli(&[
        "call",
        "--config",
        config,
        "--plugin",
        "notes-node",
        "--tool",
        "delete_notes",
        "--arguments",
        r#"{"confirm":false}"#,
        "--json",
    ]);
    assert_eq!(refused.code, Some(1), "{refused:?}");
    let result: Value = serde_json::from_str(&refused.stdout).unwrap();
    assert_eq!(result["isError"], true);
}
