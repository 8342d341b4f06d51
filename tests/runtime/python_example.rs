//! The README walk-through: the Python example plugin (standard library only) behind the host.

use serde_json::json;
use webcodex_plugin_host::{ConfigSource, Host, HostOptions};

/// The example's runner.toml as the README runs it, but for its 10 s timeout: a test takes a
/// generous 60 s, so a machine busy enough to start Python slowly fails no test.
fn host() -> Host {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/python/runner.toml");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("request_timeout_secs = 10\n"), "{text}");
    let text = text.replace("request_timeout_secs = 10\n", "request_timeout_secs = 60\n");
    let config = webcodex_plugin_host::parse_runner_config(&text, 8).unwrap();
    Host::start(ConfigSource::Fixed(config), HostOptions::default()).unwrap()
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn python_example_plugin_is_admitted_and_checked_ready() {
    let host = host();
    let provider = host.provider("notes").unwrap();
    let names: Vec<_> = provider
        .catalog()
        .tools()
        .iter()
        .map(|t| t.name())
        .collect();
    assert_eq!(names, ["add_note", "list_notes", "word_count"]);
    assert!(host.check("notes").unwrap().ready);
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn python_example_plugin_keeps_state_between_calls() {
    let host = host();
    let first = host
        .call("notes", "add_note", &json!({"text": "buy milk"}))
        .unwrap();
    assert_eq!(first.structured_content().unwrap()["number"], 1);
    host.call("notes", "add_note", &json!({"text": "call Ada"}))
        .unwrap();
    let listed = host.call("notes", "list_notes", &json!({})).unwrap();
    assert_eq!(
        listed.structured_content().unwrap()["notes"],
        json!(["buy milk", "call Ada"])
    );
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn python_example_plugin_arguments_are_checked_before_sending() {
    let host = host();
    let err = host
        .call("notes", "add_note", &json!({"text": ""}))
        .unwrap_err();
    assert_eq!(err.code().as_str(), "plugin_arguments_schema_invalid");
    assert_eq!(err.dispatch().as_str(), "not_started");
}
