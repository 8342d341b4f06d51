//! The one-request commands — list, describe, call, check, reload, catalog — each written once:
//! it sends `plugin_tool` requests to a [`Target`] (a host started in-process from `--config`,
//! or a `serve` endpoint from `--server-url`), prints the output and maps it to an exit code.
//! Each addresses the runner `--runner` names (`local` by default); with `--config` a command
//! about one provider starts that provider alone.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};
use webcodex_plugin_host::ErrorCode;
use webcodex_plugin_host::{load_runner_config, DEFAULT_MAX_PROVIDERS};
use webcodex_plugin_host::{ActionKind, Outcome, ToolOutput};

use super::human;
use super::target::{Answer, Resolved, Runner, Startup, Target};
use super::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};

/// Starts the target (as `startup` says), sends the requests of `requests`, closes the target
/// and returns what they returned (usually the last answer).
fn session<T>(
    source: Resolved,
    startup: Startup<'_>,
    requests: impl FnOnce(&Target) -> Result<T, i32>,
) -> Result<T, i32> {
    let target = source.open(startup)?;
    let answer = requests(&target);
    target.close();
    answer
}

/// One request to `target`; the exit code when it produced no output.
fn send(target: &Target, params: Value) -> Result<Answer, i32> {
    target.plugin_tool(&params).map_err(|e| e.0)
}

/// Prints the output of an action of kind `kind` (canonical JSON, or human text from its typed
/// outcome: an answer from a `serve` endpoint is checked and rebuilt first, and one that is not
/// an output of that kind is shown as its JSON) and returns the exit code for it.
pub(super) fn finish(output: &ToolOutput, kind: ActionKind, json: bool) -> i32 {
    let text = if json {
        output.to_json().to_string()
    } else {
        match output.typed(kind) {
            Some(outcome) => human::render(&outcome),
            None => human::clean(&output.to_json().to_string(), false),
        }
    };
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}");
    if output.code() == Some(ErrorCode::RunnerNotFound) {
        eprintln!(
            "hint: `list --server-url URL` shows the runners of the endpoint; give one with \
             --runner ID (the default is `local`)"
        );
    }
    if output.is_success() {
        EXIT_OK
    } else {
        EXIT_FAILURE
    }
}

/// Prints the local detail of an in-process answer (see `Error::local_detail`): a line of the
/// human output, or with `--json` a note on stderr (stdout keeps the canonical object).
fn print_detail(answer: &Answer, json: bool) {
    let Some(detail) = &answer.detail else {
        return;
    };
    let detail = human::clean(detail, false);
    if json {
        eprintln!("note: {detail}");
    } else {
        let _ = writeln!(std::io::stdout().lock(), "detail: {detail}");
    }
}

/// `list`: with `--plugin`, that provider's tools; else the providers of `--runner` (the
/// runner `local` of `--config`), or without `--runner` the runners of a `--server-url`
/// endpoint (a front's local, `--runners` and connected runners).
pub(super) fn list(source: Resolved, runner: &Runner, plugin: Option<&str>, json: bool) -> i32 {
    let runners = plugin.is_none() && !runner.is_given() && matches!(source, Resolved::Server(_));
    let (params, startup) = match plugin {
        Some(plugin) => (
            json!({"action": "list", "runner": runner.id(), "plugin": plugin}),
            Startup::Provider(plugin),
        ),
        None if runners => (json!({"action": "list"}), Startup::Providers),
        None => (
            json!({"action": "list", "runner": runner.id()}),
            Startup::Providers,
        ),
    };
    let answer = match session(source, startup, |t| send(t, params)) {
        Ok(answer) => answer,
        Err(code) => return code,
    };
    let code = finish(&answer.output, ActionKind::List, json);
    if runners && !json && code == EXIT_OK {
        let _ = writeln!(
            std::io::stdout().lock(),
            "(list a runner's providers with --runner ID)"
        );
    }
    code
}

/// The `describe` params of `plugin`'s `tool` on `runner`, bound to `project` when given.
fn describe_params(runner: &Runner, plugin: &str, tool: &str, project: Option<&str>) -> Value {
    let mut params =
        json!({"action": "describe", "runner": runner.id(), "plugin": plugin, "tool": tool});
    if let Some(project) = project {
        params["project"] = project.into();
    }
    params
}

pub(super) fn describe(
    source: Resolved,
    runner: &Runner,
    (plugin, tool): (&str, &str),
    project: Option<&str>,
    json: bool,
) -> i32 {
    let in_process = matches!(source, Resolved::Config(_));
    let params = describe_params(runner, plugin, tool, project);
    let answer = match session(source, Startup::Provider(plugin), |t| send(t, params)) {
        Ok(answer) => answer,
        Err(code) => return code,
    };
    let code = finish(&answer.output, ActionKind::Describe, json);
    let (binding, bound) = match answer.output.typed(ActionKind::Describe).as_deref() {
        Some(Outcome::Described(d)) => (d.binding.clone(), d.project.clone()),
        _ => {
            print_detail(&answer, json);
            return code;
        }
    };
    if let (false, Some(bound)) = (json, bound) {
        let _ = writeln!(
            std::io::stdout().lock(),
            "project: {} (bound: its calls run only while this root is unchanged)",
            human::clean(&bound.project, false)
        );
    }
    if !json {
        let note = if in_process {
            " (it lived in this command's host, which has ended: `call --config F --plugin P \
             --tool T` describes and calls in one process)"
        } else {
            " (call it: `call --server-url URL --binding B --arguments JSON`)"
        };
        let _ = writeln!(
            std::io::stdout().lock(),
            "binding: {}{note}",
            human::clean(&binding, false)
        );
    }
    code
}

/// What `call` calls: a tool described first in the same process, or a binding a `describe`
/// returned earlier.
pub(super) enum Callee<'a> {
    Tool {
        plugin: &'a str,
        tool: &'a str,
        project: Option<&'a str>,
    },
    Binding(&'a str),
}

pub(super) fn call(
    source: Resolved,
    runner: &Runner,
    callee: Callee<'_>,
    arguments: &str,
    json: bool,
) -> i32 {
    let arguments = match super::parse_arguments(arguments) {
        Ok(arguments) => arguments,
        Err(code) => return code,
    };
    let (plugin, tool, project) = match callee {
        Callee::Tool {
            plugin,
            tool,
            project,
        } => (plugin, tool, project),
        Callee::Binding(binding) => return call_binding(source, binding, &arguments, json),
    };
    let params = describe_params(runner, plugin, tool, project);
    let answer = session(source, Startup::Provider(plugin), |target| {
        let described = send(target, params)?;
        let binding = match described.output.typed(ActionKind::Describe).as_deref() {
            Some(Outcome::Described(d)) => d.binding.clone(),
            _ => return Ok(described),
        };
        send(
            target,
            json!({"action": "call", "binding": binding, "arguments": arguments}),
        )
    });
    match answer {
        Ok(answer) => {
            let printed = finish(&answer.output, ActionKind::Call, json);
            print_detail(&answer, json);
            super::call_exit_code(&answer.output, printed)
        }
        Err(code) => code,
    }
}

/// `call --binding B`: one `call` request with a binding a `describe` of the same endpoint
/// returned. In-process there is no such binding: each `--config` command starts its own host,
/// and a binding lives in the host that minted it.
fn call_binding(source: Resolved, binding: &str, arguments: &serde_json::Value, json: bool) -> i32 {
    if matches!(source, Resolved::Config(_)) {
        eprintln!(
            "error: --binding needs --server-url: a binding lives in the gateway that minted \
             it, and each --config command starts a host of its own, so no binding of an \
             earlier command exists here; give --plugin P --tool T instead (describe and call \
             in one process)"
        );
        return EXIT_USAGE;
    }
    let params = json!({"action": "call", "binding": binding, "arguments": arguments});
    match session(source, Startup::ConfigOnly, |t| send(t, params)) {
        Ok(answer) => {
            let printed = finish(&answer.output, ActionKind::Call, json);
            super::call_exit_code(&answer.output, printed)
        }
        Err(code) => code,
    }
}

pub(super) fn check(source: Resolved, runner: &Runner, plugin: &str, json: bool) -> i32 {
    match session(source, Startup::ConfigOnly, |t| {
        Ok(check_one(t, runner, plugin, json))
    }) {
        Ok(code) | Err(code) => code,
    }
}

/// `check` without `--plugin`: every configured provider in turn (config order; `list` of a
/// `--server-url` target for its ids), each result printed as by `check --plugin` (with
/// `--json`, one canonical check object per line). Exit 1 when any check failed as an action,
/// else 2 when any provider is not ready (or none is configured), else 0.
pub(super) fn check_all(source: Resolved, runner: &Runner, json: bool) -> i32 {
    let local_config = match &source {
        Resolved::Config(path) => Some(path.clone()),
        Resolved::Server(_) => None,
    };
    let outcome = session(source, Startup::ConfigOnly, |target| {
        let ids = match &local_config {
            Some(path) => configured_ids(path)?,
            None => listed_ids(target, runner)?,
        };
        if ids.is_empty() {
            eprintln!("error: no provider is configured; add a [[plugins.providers]] block");
            return Err(EXIT_USAGE);
        }
        let codes: Vec<i32> = ids
            .iter()
            .map(|id| check_one(target, runner, id, json))
            .collect();
        Ok(worst(&codes))
    });
    match outcome {
        Ok(code) | Err(code) => code,
    }
}

/// The exit code of several checks: a failed action beats a not-ready report beats success.
fn worst(codes: &[i32]) -> i32 {
    if codes.contains(&EXIT_FAILURE) {
        EXIT_FAILURE
    } else if codes.iter().any(|&c| c != EXIT_OK) {
        EXIT_USAGE
    } else {
        EXIT_OK
    }
}

/// The provider ids of a runner.toml, in order (already validated when the host was opened).
fn configured_ids(path: &Path) -> Result<Vec<String>, i32> {
    match load_runner_config(path, DEFAULT_MAX_PROVIDERS) {
        Ok(config) => Ok(config.plugins.providers.into_iter().map(|p| p.id).collect()),
        Err(e) => {
            eprintln!("error: {}: {}", e.code(), e.message());
            Err(EXIT_USAGE)
        }
    }
}

/// The provider ids a remote runner lists.
fn listed_ids(target: &Target, runner: &Runner) -> Result<Vec<String>, i32> {
    let answer = send(target, json!({"action": "list", "runner": runner.id()}))?;
    match answer.output.typed(ActionKind::List).as_deref() {
        Some(Outcome::Providers(list)) => {
            Ok(list.plugins.iter().map(|p| p.plugin.clone()).collect())
        }
        _ => Err(finish(&answer.output, ActionKind::List, false)),
    }
}

/// One check of `plugin` on an open target: prints it and returns its exit code.
fn check_one(target: &Target, runner: &Runner, plugin: &str, json: bool) -> i32 {
    let params = json!({"action": "check", "runner": runner.id(), "plugin": plugin});
    let answer = match send(target, params) {
        Ok(answer) => answer,
        Err(code) => return code,
    };
    let output = &answer.output;
    let code = finish(output, ActionKind::Check, json);
    print_detail(&answer, json);
    let ready = match output.typed(ActionKind::Check).as_deref() {
        Some(Outcome::Checked(report)) => Some(report.ready),
        _ => None,
    };
    if !json && !answer.check_stderr.is_empty() && ready == Some(false) {
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
    match (code, ready) {
        (EXIT_OK, Some(false)) => EXIT_USAGE,
        _ => code,
    }
}

pub(super) fn reload(source: Resolved, runner: &Runner, json: bool) -> i32 {
    let params = json!({"action": "reload", "runner": runner.id()});
    let output = match session(source, Startup::Providers, |t| send(t, params)) {
        Ok(answer) => answer.output,
        Err(code) => return code,
    };
    let code = finish(&output, ActionKind::Reload, json);
    let failed = matches!(
        output.typed(ActionKind::Reload).as_deref(),
        Some(Outcome::Reloaded(reload)) if !reload.failures.is_empty()
    );
    if code == EXIT_OK && failed {
        EXIT_USAGE
    } else {
        code
    }
}

pub(super) fn catalog(source: Resolved, runner: &Runner, project: &Path, json: bool) -> i32 {
    let Some(project) = project.to_str() else {
        eprintln!("error: --project must be valid UTF-8");
        return EXIT_USAGE;
    };
    let params = json!({"action": "catalog", "runner": runner.id(), "project": project});
    match session(source, Startup::Providers, |t| send(t, params)) {
        Ok(answer) => finish(&answer.output, ActionKind::Catalog, json),
        Err(code) => code,
    }
}
