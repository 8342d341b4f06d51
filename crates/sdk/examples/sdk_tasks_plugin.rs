//! A webcodex-plugin-v1 plugin written on this crate, the plugin SDK: a small in-memory task
//! list with three tools, one of them destructive.
//!
//! Build and register it (from the repository root):
//!
//! ```sh
//! cargo build --release --example sdk_tasks_plugin
//! # runner.toml:
//! # [[plugins.providers]]
//! # id = "tasks"
//! # name = "Tasks (Rust SDK example)"
//! # command = "/absolute/path/to/target/release/examples/sdk_tasks_plugin"
//! webcodex-plugin check --config runner.toml --plugin tasks
//! webcodex-plugin call --config runner.toml --plugin tasks --tool add_task --arguments '{"title":"write docs"}'
//! ```
//!
//! The SDK answers `initialize` and `tools/list`, keeps stdout for protocol lines only, and turns
//! a [`ToolError`] into a result with `isError: true` (the CLI's `call` exits 1 for it).

use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use webcodex_plugin_sdk::{Plugin, ToolError, ToolReply, ToolSpec};

/// Longest task title accepted (the input schema says so too; the host checks it first).
const MAX_TITLE_CHARS: usize = 200;
/// Most tasks kept in memory.
const MAX_TASKS: usize = 1000;

type Tasks = Arc<Mutex<Vec<String>>>;

fn main() {
    let tasks: Tasks = Arc::new(Mutex::new(Vec::new()));
    if let Err(e) = plugin(tasks).serve_stdio() {
        eprintln!("sdk_tasks_plugin: {e}");
        std::process::exit(1);
    }
}

/// The plugin: `add_task`, `list_tasks` (read-only) and `clear_tasks` (destructive).
fn plugin(tasks: Tasks) -> Plugin {
    let (add, list, clear) = (tasks.clone(), tasks.clone(), tasks);
    Plugin::new("tasks")
        .tool(
            ToolSpec::new(
                "add_task",
                json!({
                    "type": "object",
                    "properties": {
                        "title": {
                            "type": "string",
                            "description": "What to do.",
                            "minLength": 1,
                            "maxLength": MAX_TITLE_CHARS
                        }
                    },
                    "required": ["title"],
                    "additionalProperties": false
                }),
            )
            .title("Add a task")
            .description("Appends a task and returns its number (1-based).")
            .output_schema(json!({
                "type": "object",
                "properties": {"number": {"type": "integer"}},
                "required": ["number"]
            }))
            .annotations(json!({"readOnlyHint": false, "idempotentHint": false})),
            move |args| add_task(&add, args),
        )
        .tool(
            ToolSpec::new(
                "list_tasks",
                json!({"type": "object", "additionalProperties": false}),
            )
            .title("List tasks")
            .description("Returns every task, oldest first.")
            .output_schema(json!({
                "type": "object",
                "properties": {"tasks": {"type": "array", "items": {"type": "string"}}},
                "required": ["tasks"]
            }))
            .annotations(json!({"readOnlyHint": true})),
            move |_| list_tasks(&list),
        )
        .tool(
            ToolSpec::new(
                "clear_tasks",
                json!({
                    "type": "object",
                    "properties": {
                        "confirm": {"type": "boolean", "description": "Must be true."}
                    },
                    "required": ["confirm"],
                    "additionalProperties": false
                }),
            )
            .title("Clear all tasks")
            .description("Deletes every task. Refused unless confirm is true.")
            .annotations(json!({"destructiveHint": true, "idempotentHint": true})),
            move |args| clear_tasks(&clear, args),
        )
}

fn lock(tasks: &Tasks) -> Result<std::sync::MutexGuard<'_, Vec<String>>, ToolError> {
    tasks
        .lock()
        .map_err(|_| ToolError::new("the task list is unavailable after an earlier failure"))
}

fn add_task(tasks: &Tasks, args: &Map<String, Value>) -> Result<ToolReply, ToolError> {
    let title = args
        .get("title")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| ToolError::new("title must be a non-blank string"))?;
    let mut tasks = lock(tasks)?;
    if tasks.len() >= MAX_TASKS {
        return Err(ToolError::new(format!(
            "the list is full ({MAX_TASKS} tasks); clear it first"
        )));
    }
    tasks.push(title.to_owned());
    let number = tasks.len();
    Ok(ToolReply::text(format!("task {number} added")).with_structured(json!({"number": number})))
}

fn list_tasks(tasks: &Tasks) -> Result<ToolReply, ToolError> {
    let tasks = lock(tasks)?;
    let text = if tasks.is_empty() {
        "no tasks".to_owned()
    } else {
        tasks
            .iter()
            .enumerate()
            .map(|(i, t)| format!("{}. {t}", i + 1))
            .collect::<Vec<_>>()
            .join("\n")
    };
    Ok(ToolReply::text(text).with_structured(json!({"tasks": *tasks})))
}

fn clear_tasks(tasks: &Tasks, args: &Map<String, Value>) -> Result<ToolReply, ToolError> {
    if args.get("confirm") != Some(&Value::Bool(true)) {
        return Err(ToolError::new(
            "refused: pass {\"confirm\": true} to delete every task",
        ));
    }
    let mut tasks = lock(tasks)?;
    let removed = tasks.len();
    tasks.clear();
    Ok(ToolReply::text(format!("removed {removed} tasks")))
}
