//! `demo`: a built-in runner whose provider is this binary's own `example-plugin`, walked
//! through check → list → describe → call, printing every step.

use std::sync::Arc;

use serde_json::{json, Value};
use webcodex_plugin_host::Dispatch;
use webcodex_plugin_host::{Caller, Gateway, ToolOutput};
use webcodex_plugin_host::{ConfigSource, Host, HostOptions};
use webcodex_plugin_host::{PluginsConfig, ProviderConfig, RunnerConfig, DEFAULT_REQUEST_TIMEOUT};

use super::{human, EXIT_FAILURE, EXIT_OK};

/// The provider id of the built-in example plugin.
pub(super) const EXAMPLE_ID: &str = "example";

/// A runner configuration whose only provider is this binary's `example-plugin`.
pub(super) fn example_runner() -> Result<RunnerConfig, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot locate this binary to run its example plugin: {e}"))?;
    let command = exe
        .to_str()
        .ok_or("the path of this binary is not valid UTF-8")?
        .to_string();
    Ok(RunnerConfig {
        plugins: PluginsConfig {
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            providers: vec![ProviderConfig {
                id: EXAMPLE_ID.into(),
                name: "Example plugin (built in)".into(),
                command,
                args: vec!["example-plugin".into()],
                cwd: None,
                profile: None,
                timeout: DEFAULT_REQUEST_TIMEOUT,
                restart: Default::default(),
            }],
        },
        ..RunnerConfig::default()
    })
}

/// The binding a describe step returned, printed so the call that uses it can be followed.
fn binding_of(described: &ToolOutput) -> String {
    let binding = described.binding().unwrap_or_default().to_string();
    println!("binding: {binding}");
    binding
}

pub(super) fn run() -> i32 {
    let config = match example_runner() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    let host = match Host::start(ConfigSource::Fixed(config), HostOptions::default()) {
        Ok(host) => Arc::new(host),
        Err(e) => {
            eprintln!("error: {}: {}", e.code(), e.message());
            return EXIT_FAILURE;
        }
    };
    let gateway = Gateway::single(host);
    let caller = Caller::trusted();
    let mut ok = true;
    let mut step = |title: &str, params: Value| -> ToolOutput {
        println!("\n== {title}");
        println!("plugin_tool {params}");
        let output = gateway.plugin_tool(&caller, &params);
        println!("{}", human::render(output.outcome()));
        ok &= output.is_success();
        output
    };

    println!("webcodex-plugin demo: one runner (\"local\") with this binary's example plugin");
    step(
        "check: admit a disposable candidate (initialize + tools/list, no call)",
        json!({"action": "check", "runner": "local", "plugin": EXAMPLE_ID}),
    );
    step(
        "list: the runner's providers",
        json!({"action": "list", "runner": "local"}),
    );
    step(
        "list: one provider's tools",
        json!({"action": "list", "runner": "local", "plugin": EXAMPLE_ID}),
    );
    let binding = binding_of(&step(
        "describe: the full definition of `echo`, and a fresh binding",
        json!({"action": "describe", "runner": "local", "plugin": EXAMPLE_ID, "tool": "echo"}),
    ));
    step(
        "call: echo through the binding",
        json!({"action": "call", "binding": binding, "arguments": {"text": "hello from the demo"}}),
    );
    let binding = binding_of(&step(
        "describe: `add`, and a fresh binding",
        json!({"action": "describe", "runner": "local", "plugin": EXAMPLE_ID, "tool": "add"}),
    ));
    step(
        "call: add 2 + 5",
        json!({"action": "call", "binding": binding, "arguments": {"a": 2, "b": 5}}),
    );

    // A rejected call, to show the failure shape: the arguments never reach the plugin.
    println!("\n== call: add with a string argument (rejected before sending)");
    let params = json!({"action": "call", "binding": binding, "arguments": {"a": "two", "b": 5}});
    println!("plugin_tool {params}");
    let rejected = gateway.plugin_tool(&caller, &params);
    println!("{}", human::render(rejected.outcome()));
    ok &= rejected.dispatch() == Some(Dispatch::NotStarted);

    gateway.shutdown();
    if ok {
        println!("\ndemo finished: every step behaved as expected");
        EXIT_OK
    } else {
        println!("\ndemo finished with unexpected failures");
        EXIT_FAILURE
    }
}
