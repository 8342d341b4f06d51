//! The in-process commands: each starts a host from `--config`, sends one `plugin_tool`
//! request through the gateway and prints its output.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use webcodex_plugin_host::gateway::{Caller, Gateway, Scopes, ToolOutput};
use webcodex_plugin_host::host::{ConfigSource, Host, HostOptions};
use webcodex_plugin_host::transport::serve_lines;

use super::human;
use super::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};

const RUNNER: &str = "local";

/// Starts the host of `config`; an invalid configuration is reported on stderr.
pub(super) fn start(config: &Path) -> Result<Arc<Gateway>, i32> {
    match Host::start(
        ConfigSource::File(config.to_path_buf()),
        HostOptions::default(),
    ) {
        Ok(host) => Ok(Arc::new(Gateway::single(Arc::new(host)))),
        Err(e) => {
            eprintln!("error: {}: {}", e.code(), e.message());
            Err(EXIT_USAGE)
        }
    }
}

/// Sends one request with all scopes and shuts the host down.
fn request(gateway: &Gateway, params: Value) -> ToolOutput {
    gateway.plugin_tool(&Caller::trusted(), &params)
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

pub(super) fn list(config: &Path, plugin: Option<&str>, json: bool) -> i32 {
    let gateway = match start(config) {
        Ok(gateway) => gateway,
        Err(code) => return code,
    };
    let params = match plugin {
        Some(plugin) => json!({"action": "list", "runner": RUNNER, "plugin": plugin}),
        None => json!({"action": "list", "runner": RUNNER}),
    };
    let output = request(&gateway, params);
    gateway.shutdown();
    match plugin {
        Some(_) => finish(&output, json, human::provider_detail),
        None => finish(&output, json, human::providers),
    }
}

pub(super) fn describe(config: &Path, plugin: &str, tool: &str, json: bool) -> i32 {
    let gateway = match start(config) {
        Ok(gateway) => gateway,
        Err(code) => return code,
    };
    let output = request(
        &gateway,
        json!({"action": "describe", "runner": RUNNER, "plugin": plugin, "tool": tool}),
    );
    gateway.shutdown();
    finish(&output, json, human::describe)
}

pub(super) fn call(config: &Path, plugin: &str, tool: &str, arguments: &str, json: bool) -> i32 {
    let arguments: Value = match serde_json::from_str(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            eprintln!("error: --arguments must be a JSON object, e.g. '{{\"text\":\"hi\"}}'");
            return EXIT_USAGE;
        }
    };
    let gateway = match start(config) {
        Ok(gateway) => gateway,
        Err(code) => return code,
    };
    let described = request(
        &gateway,
        json!({"action": "describe", "runner": RUNNER, "plugin": plugin, "tool": tool}),
    );
    let output = match described.output.get("binding").and_then(Value::as_str) {
        Some(binding) if described.success => request(
            &gateway,
            json!({"action": "call", "binding": binding, "arguments": arguments}),
        ),
        _ => described,
    };
    gateway.shutdown();
    finish(&output, json, human::call)
}

pub(super) fn check(config: &Path, plugin: &str, json: bool) -> i32 {
    let host = match Host::configured(
        ConfigSource::File(config.to_path_buf()),
        HostOptions::default(),
    ) {
        Ok(host) => host,
        Err(e) => {
            eprintln!("error: {}: {}", e.code(), e.message());
            return EXIT_USAGE;
        }
    };
    let host = Arc::new(host);
    let gateway = Gateway::single(host.clone());
    let output = request(
        &gateway,
        json!({"action": "check", "runner": RUNNER, "plugin": plugin}),
    );
    let code = finish(&output, json, human::check);
    if !json && !host.last_check_stderr().is_empty() && output.output["ready"] == json!(false) {
        // Local operators may see the candidate's stderr; plugin_tool callers never do.
        eprintln!("stderr of the candidate (last lines):");
        for line in host.last_check_stderr().iter().rev().take(20).rev() {
            eprintln!(
                "  | {}{}",
                line.text,
                if line.truncated { " …" } else { "" }
            );
        }
    }
    gateway.shutdown();
    match (code, output.output.get("ready")) {
        (EXIT_OK, Some(Value::Bool(false))) => EXIT_USAGE,
        _ => code,
    }
}

pub(super) fn reload(config: &Path, json: bool) -> i32 {
    let gateway = match start(config) {
        Ok(gateway) => gateway,
        Err(code) => return code,
    };
    let output = request(&gateway, json!({"action": "reload", "runner": RUNNER}));
    gateway.shutdown();
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

pub(super) fn catalog(config: &Path, project: &Path, json: bool) -> i32 {
    let gateway = match start(config) {
        Ok(gateway) => gateway,
        Err(code) => return code,
    };
    let project = match project.to_str() {
        Some(p) => p.to_string(),
        None => {
            eprintln!("error: --project must be valid UTF-8");
            return EXIT_USAGE;
        }
    };
    let output = request(
        &gateway,
        json!({"action": "catalog", "runner": RUNNER, "project": project}),
    );
    gateway.shutdown();
    finish(&output, json, human::catalog)
}

pub(super) fn gateway(config: &Path, scopes: &str) -> i32 {
    let scopes = match Scopes::parse(scopes) {
        Ok(scopes) => scopes,
        Err(e) => {
            eprintln!("error: --scopes: {e}");
            return EXIT_USAGE;
        }
    };
    let gateway = match start(config) {
        Ok(gateway) => gateway,
        Err(code) => return code,
    };
    let stdin = std::io::stdin();
    let result = serve_lines(
        gateway.clone(),
        Caller::new(scopes),
        stdin.lock(),
        std::io::stdout(),
    );
    gateway.shutdown();
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: the gateway transport failed: {e}");
            EXIT_FAILURE
        }
    }
}
