//! The one-request commands — list, describe, call, check, reload, catalog — each written once:
//! it sends `plugin_tool` requests to a [`Target`] (a host started in-process from `--config`,
//! or a `serve` endpoint from `--server-url`), prints the output and maps it to an exit code.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};
use webcodex_plugin_host::gateway::{ToolOutput, LOCAL_RUNNER};

use super::human;
use super::target::{Answer, Resolved, Startup, Target};
use super::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};

const RUNNER: &str = LOCAL_RUNNER;

/// Starts the target (as `startup` says), sends the requests of `requests`, closes the target
/// and returns the last answer.
fn session(
    source: Resolved,
    startup: Startup,
    requests: impl FnOnce(&Target) -> Result<Answer, i32>,
) -> Result<Answer, i32> {
    let target = source.open(startup)?;
    let answer = requests(&target);
    target.close();
    answer
}

/// One request to `target`; the exit code when it produced no output.
fn send(target: &Target, params: Value) -> Result<Answer, i32> {
    target.plugin_tool(&params).map_err(|e| e.0)
}

/// Prints the output (canonical JSON or human text) and returns the exit code for it.
pub(super) fn finish(output: &ToolOutput, json: bool, render: impl Fn(&Value) -> String) -> i32 {
    let text = if json {
        output.output.to_string()
    } else if output.success {
        render(&output.output)
    } else {
        human::failure(&output.output)
    };
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}");
    if output.success {
        EXIT_OK
    } else {
        EXIT_FAILURE
    }
}

pub(super) fn list(source: Resolved, plugin: Option<&str>, json: bool) -> i32 {
    let params = match plugin {
        Some(plugin) => json!({"action": "list", "runner": RUNNER, "plugin": plugin}),
        None => json!({"action": "list", "runner": RUNNER}),
    };
    let answer = match session(source, Startup::Providers, |t| send(t, params)) {
        Ok(answer) => answer,
        Err(code) => return code,
    };
    match plugin {
        Some(_) => finish(&answer.output, json, human::provider_detail),
        None => finish(&answer.output, json, human::providers),
    }
}

pub(super) fn describe(source: Resolved, plugin: &str, tool: &str, json: bool) -> i32 {
    let params = json!({"action": "describe", "runner": RUNNER, "plugin": plugin, "tool": tool});
    match session(source, Startup::Providers, |t| send(t, params)) {
        Ok(answer) => finish(&answer.output, json, human::describe),
        Err(code) => code,
    }
}

pub(super) fn call(source: Resolved, plugin: &str, tool: &str, arguments: &str, json: bool) -> i32 {
    let arguments: Value = match serde_json::from_str(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            eprintln!("error: --arguments must be a JSON object, e.g. '{{\"text\":\"hi\"}}'");
            return EXIT_USAGE;
        }
    };
    let params = json!({"action": "describe", "runner": RUNNER, "plugin": plugin, "tool": tool});
    let answer = session(source, Startup::Providers, |target| {
        let described = send(target, params)?;
        match described
            .output
            .output
            .get("binding")
            .and_then(Value::as_str)
        {
            Some(binding) if described.output.success => send(
                target,
                json!({"action": "call", "binding": binding, "arguments": arguments}),
            ),
            _ => Ok(described),
        }
    });
    match answer {
        Ok(answer) => finish(&answer.output, json, human::call),
        Err(code) => code,
    }
}

pub(super) fn check(source: Resolved, plugin: &str, json: bool) -> i32 {
    let params = json!({"action": "check", "runner": RUNNER, "plugin": plugin});
    let answer = match session(source, Startup::ConfigOnly, |t| send(t, params)) {
        Ok(answer) => answer,
        Err(code) => return code,
    };
    let output = &answer.output;
    let code = finish(output, json, human::check);
    if !json && !answer.check_stderr.is_empty() && output.output["ready"] == json!(false) {
        // Local operators may see the candidate's stderr; plugin_tool callers never do.
        eprintln!("stderr of the candidate (last lines):");
        for line in answer.check_stderr.iter().rev().take(20).rev() {
            eprintln!(
                "  | {}{}",
                line.text,
                if line.truncated { " …" } else { "" }
            );
        }
    }
    match (code, output.output.get("ready")) {
        (EXIT_OK, Some(Value::Bool(false))) => EXIT_USAGE,
        _ => code,
    }
}

pub(super) fn reload(source: Resolved, json: bool) -> i32 {
    let params = json!({"action": "reload", "runner": RUNNER});
    let output = match session(source, Startup::Providers, |t| send(t, params)) {
        Ok(answer) => answer.output,
        Err(code) => return code,
    };
    let code = finish(&output, json, human::reload);
    let failed = output.output["failures"]
        .as_array()
        .is_some_and(|f| !f.is_empty());
    if code == EXIT_OK && failed {
        EXIT_USAGE
    } else {
        code
    }
}

pub(super) fn catalog(source: Resolved, project: &Path, json: bool) -> i32 {
    let Some(project) = project.to_str() else {
        eprintln!("error: --project must be valid UTF-8");
        return EXIT_USAGE;
    };
    let params = json!({"action": "catalog", "runner": RUNNER, "project": project});
    match session(source, Startup::Providers, |t| send(t, params)) {
        Ok(answer) => finish(&answer.output, json, human::catalog),
        Err(code) => code,
    }
}
