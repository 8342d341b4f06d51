//! The Rust example plugin on the crate's `sdk` (`examples/sdk_tasks_plugin.rs`), built with
//! cargo and run behind the host and through the CLI.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use webcodex_plugin_host::{ConfigSource, Host, HostOptions};

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");

/// `target/<profile>/examples/sdk_tasks_plugin`, built with the same cargo on first use
/// (`cargo test --test sdk_example` does not build examples by itself).
fn example_path() -> PathBuf {
    common::example_path("sdk_tasks_plugin")
}

/// A temp dir with a runner.toml for the example; removed on drop.
struct Runner(PathBuf);

impl Runner {
    fn new(label: &str) -> Runner {
        let dir =
            std::env::temp_dir().join(format!("wc-sdk-example-{}-{label}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let command = serde_json::to_string(example_path().to_str().unwrap()).unwrap();
        let text = format!(
            "[[plugins.providers]]\nid = \"tasks\"\nname = \"Tasks (Rust SDK example)\"\ncommand = {command}\n"
        );
        std::fs::write(dir.join("runner.toml"), text).unwrap();
        Runner(dir)
    }

    fn config(&self) -> PathBuf {
        self.0.join("runner.toml")
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs cargo, which cannot run under Wine (docs/PLATFORMS.md)"
)]
fn rust_sdk_example_is_admitted_and_keeps_state_between_calls() {
    let runner = Runner::new("host");
    let host = Host::start(ConfigSource::File(runner.config()), HostOptions::default()).unwrap();
    let provider = host.provider("tasks").unwrap();
    let names: Vec<_> = provider
        .catalog()
        .tools()
        .iter()
        .map(|t| t.name())
        .collect();
    assert_eq!(names, ["add_task", "clear_tasks", "list_tasks"]);
    drop(provider);
    let pids = plugin_children();
    assert_eq!(pids.len(), 1, "one running plugin process: {pids:?}");
    assert!(host.check("tasks").unwrap().ready);

    let first = host
        .call("tasks", "add_task", &json!({"title": "write docs"}))
        .unwrap();
    assert_eq!(first.structured_content().unwrap()["number"], 1);
    host.call("tasks", "add_task", &json!({"title": "ship"}))
        .unwrap();
    let listed = host.call("tasks", "list_tasks", &json!({})).unwrap();
    assert_eq!(
        listed.structured_content().unwrap()["tasks"],
        json!(["write docs", "ship"])
    );

    // The destructive tool refuses without confirmation: a completed call with isError.
    let refused = host
        .call("tasks", "clear_tasks", &json!({"confirm": false}))
        .unwrap();
    assert!(refused.is_error());
    assert!(
        refused.texts()[0].contains("refused"),
        "{:?}",
        refused.texts()
    );
    let listed = host.call("tasks", "list_tasks", &json!({})).unwrap();
    assert_eq!(
        listed.structured_content().unwrap()["tasks"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let cleared = host
        .call("tasks", "clear_tasks", &json!({"confirm": true}))
        .unwrap();
    assert!(!cleared.is_error());
    assert_eq!(cleared.texts(), ["removed 2 tasks"]);

    // Arguments against the schema never reach the plugin.
    let err = host
        .call("tasks", "add_task", &json!({"title": ""}))
        .unwrap_err();
    assert_eq!(err.code().as_str(), "plugin_arguments_schema_invalid");

    host.shutdown();
    // Shutdown kills at once and reaps within the termination bound: wait for it (bounded).
    for pid in pids {
        let deadline = std::time::Instant::now() + common::GENEROUS;
        while common::zombie_children_of_self().contains(&pid)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        common::assert_reaped(pid);
    }
}

/// Running (not zombie) children of this test process that run the example.
fn plugin_children() -> Vec<i32> {
    let me = std::process::id() as i32;
    common::proc_table()
        .into_iter()
        .filter(|p| p.ppid == me && p.state != 'Z')
        .map(|p| p.pid)
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.starts_with("sdk_tasks_plugi"))
        })
        .collect()
}

/// Runs the CLI with `args`; returns (exit code, stdout).
fn cli(args: &[&str]) -> (Option<i32>, String) {
    let mut command = common::cli_command(BIN);
    command.args(args);
    let run = common::run_to_end(command, Duration::from_secs(60));
    (run.code, run.stdout)
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs cargo, which cannot run under Wine (docs/PLATFORMS.md)"
)]
fn rust_sdk_example_through_the_cli_shows_destructive_and_refusals_exit_one() {
    let runner = Runner::new("cli");
    let config = runner.config();
    let config = config.to_str().unwrap();
    let (code, out) = cli(&[
        "describe",
        "--config",
        config,
        "--plugin",
        "tasks",
        "--tool",
        "clear_tasks",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("WARNING: DESTRUCTIVE"), "{out}");
    let (code, out) = cli(&[
        "call",
        "--config",
        config,
        "--plugin",
        "tasks",
        "--tool",
        "clear_tasks",
        "--arguments",
        r#"{"confirm":false}"#,
        "--json",
    ]);
    assert_eq!(code, Some(1), "a refused operation exits 1: {out}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out).unwrap()["isError"],
        true
    );
    let (code, out) = cli(&[
        "call",
        "--config",
        config,
        "--plugin",
        "tasks",
        "--tool",
        "add_task",
        "--arguments",
        r#"{"title":"x"}"#,
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("task 1 added"), "{out}");
}
