//! Host behaviour against real fixture processes: startup, check, reload, shutdown, environment.

use std::path::{Path, PathBuf};

use serde_json::json;
use webcodex_plugin_host::env::parse_runner_config;
use webcodex_plugin_host::host::{ConfigSource, Host, HostOptions, InstanceCall, ProviderState};
use webcodex_plugin_host::{Dispatch, ErrorCode, Phase};

fn fixture() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/fixture_plugin")
}

fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!("wc-host-{tag}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A provider block running the fixture in `mode`.
fn provider_toml(id: &str, mode: &str) -> String {
    format!(
        "[[plugins.providers]]\nid = \"{id}\"\nname = \"Provider {id}\"\ncommand = {cmd:?}\nargs = [\"{mode}\"]\ntimeout_secs = 5\n",
        cmd = fixture().display().to_string()
    )
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("runner.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn start(path: &Path) -> Host {
    Host::start(
        ConfigSource::File(path.to_path_buf()),
        HostOptions::default(),
    )
    .unwrap()
}

#[test]
fn startup_admits_every_provider_and_lists_failures_without_blocking_the_rest() {
    let dir = temp_dir("startup");
    let text = [
        provider_toml("alpha", "normal"),
        provider_toml("broken", "bad-version"),
        provider_toml("gamma", "normal"),
    ]
    .concat();
    let host = start(&write_config(&dir, &text));
    let set = host.providers();
    let states: Vec<_> = set
        .entries()
        .iter()
        .map(|e| (e.id.as_str(), e.error_code()))
        .collect();
    assert_eq!(
        states,
        vec![
            ("alpha", None),
            ("broken", Some(ErrorCode::ProtocolVersionMismatch)),
            ("gamma", None),
        ]
    );
    let result = host.call("gamma", "add", &json!({"a": 2, "b": 5})).unwrap();
    assert_eq!(result.structured_content().unwrap()["sum"], 7);
}

#[test]
fn invalid_config_refuses_to_start() {
    let dir = temp_dir("invalid");
    let path = write_config(&dir, "[plugins]\nrequest_timeout_secs = 0\n");
    let err = Host::start(ConfigSource::File(path), HostOptions::default()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ConfigInvalid);
    let path = write_config(&dir, "[plugins\n");
    let err = Host::start(ConfigSource::File(path), HostOptions::default()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ConfigParseFailed);
}

#[test]
fn check_reports_ready_candidate_without_touching_committed_set() {
    let dir = temp_dir("check");
    let host = start(&write_config(&dir, &provider_toml("alpha", "normal")));
    let before = host.provider("alpha").unwrap().instance();
    let report = host.check("alpha").unwrap();
    assert!(report.ready);
    assert_eq!(report.phase, Phase::Ready);
    assert!(report.tools.iter().any(|(name, _)| name == "echo"));
    assert_eq!(host.provider("alpha").unwrap().instance(), before);
}

#[test]
fn check_of_a_bad_plugin_is_a_not_ready_report() {
    let dir = temp_dir("check-bad");
    let host = start(&write_config(&dir, &provider_toml("alpha", "normal")));
    // The file now says the plugin is broken; the committed instance keeps serving.
    write_config(&dir, &provider_toml("alpha", "bad-tools"));
    let report = host.check("alpha").unwrap();
    assert!(!report.ready);
    assert_eq!(report.phase, Phase::Validation);
    let error = report.error.as_ref().unwrap();
    assert_eq!(error.code(), ErrorCode::ToolsListInvalid);
    let diagnostic = report.diagnostic().unwrap();
    assert_eq!(diagnostic.code.as_str(), "schema_keyword_unsupported");
    assert_eq!(diagnostic.tool.as_deref(), Some("add"));
    assert_eq!(diagnostic.field, Some("inputSchema"));
    host.call("alpha", "echo", &json!({"text": "still here"}))
        .unwrap();
}

#[test]
fn check_of_an_unknown_plugin_is_not_configured() {
    let dir = temp_dir("check-unknown");
    let host = start(&write_config(&dir, &provider_toml("alpha", "normal")));
    let err = host.check("nope").unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotConfigured);
}

#[test]
fn reload_replaces_every_instance_and_old_instances_become_stale() {
    let dir = temp_dir("reload");
    let host = start(&write_config(&dir, &provider_toml("alpha", "normal")));
    let old = host.provider("alpha").unwrap();
    let observation = old.catalog().get("echo").unwrap().observation().to_string();
    let report = host.reload().unwrap();
    assert!(report.committed);
    let new = host.provider("alpha").unwrap();
    assert_ne!(old.instance(), new.instance());
    let args = json!({"text": "x"});
    let err = host
        .call_instance(
            InstanceCall::new("alpha", old.instance(), "echo", &args).observation(&observation),
        )
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleProvider);
    assert_eq!(err.dispatch(), Dispatch::NotStarted);
    // An instance held by an in-flight user keeps working until it lets go.
    old.call("echo", &json!({"text": "in flight"})).unwrap();
    host.call_instance(
        InstanceCall::new("alpha", new.instance(), "echo", &args).observation(&observation),
    )
    .unwrap();
}

#[test]
fn reload_with_a_failing_candidate_keeps_the_old_set() {
    let dir = temp_dir("reload-fail");
    let host = start(&write_config(&dir, &provider_toml("alpha", "normal")));
    let before = host.provider("alpha").unwrap().instance();
    let text = [
        provider_toml("alpha", "normal"),
        provider_toml("beta", "silent-init"),
    ]
    .concat();
    write_config(&dir, &text.replace("timeout_secs = 5", "timeout_secs = 1"));
    let report = host.reload().unwrap();
    assert!(!report.committed);
    assert_eq!(report.failures.len(), 1);
    assert_eq!(report.failures[0].0, "beta");
    assert_eq!(report.failures[0].1.code(), ErrorCode::Timeout);
    assert_eq!(host.provider("alpha").unwrap().instance(), before);
    assert!(host.providers().entry("beta").is_none());
}

#[test]
fn reload_removes_providers_that_left_the_config() {
    let dir = temp_dir("reload-remove");
    let text = [
        provider_toml("alpha", "normal"),
        provider_toml("beta", "normal"),
    ]
    .concat();
    let host = start(&write_config(&dir, &text));
    let beta = host.provider("beta").unwrap().instance();
    write_config(&dir, &provider_toml("alpha", "normal"));
    assert!(host.reload().unwrap().committed);
    assert!(host.providers().entry("beta").is_none());
    assert_eq!(
        host.provider("beta").unwrap_err().code(),
        ErrorCode::NotConfigured
    );
    let err = host
        .call_instance(InstanceCall::new(
            "beta",
            beta,
            "echo",
            &json!({"text": "x"}),
        ))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleProvider);
}

#[test]
fn check_and_reload_share_one_gate() {
    let dir = temp_dir("gate");
    let text = provider_toml("slow", "silent-init").replace("timeout_secs = 5", "timeout_secs = 2");
    let host = std::sync::Arc::new(start(&write_config(&dir, &text)));
    let barrier = std::sync::Barrier::new(2);
    // Both take about 2 s (the candidate never answers initialize), and they start together:
    // whichever comes second is refused at once, never queued.
    let (check, reload) = std::thread::scope(|scope| {
        let check = scope.spawn(|| {
            barrier.wait();
            host.check("slow").map(|report| report.ready)
        });
        let reload = scope.spawn(|| {
            barrier.wait();
            host.reload().map(|report| report.committed)
        });
        (check.join().unwrap(), reload.join().unwrap())
    });
    match (check, reload) {
        (Ok(ready), Err(e)) => {
            assert!(!ready);
            assert_eq!(e.code(), ErrorCode::ReloadBusy);
            assert_eq!(e.dispatch(), Dispatch::NotStarted);
        }
        (Err(e), Ok(committed)) => {
            assert!(!committed);
            assert_eq!(e.code(), ErrorCode::CheckBusy);
            assert_eq!(e.dispatch(), Dispatch::NotStarted);
        }
        other => panic!("exactly one of check and reload must be refused: {other:?}"),
    }
}

#[test]
fn shutdown_stops_providers_and_refuses_reload() {
    let dir = temp_dir("shutdown");
    let host = start(&write_config(&dir, &provider_toml("alpha", "normal")));
    let provider = host.provider("alpha").unwrap();
    host.shutdown();
    assert!(provider.is_retired());
    assert_eq!(host.reload().unwrap_err().code(), ErrorCode::HostStopping);
}

#[test]
fn profile_init_script_and_secret_filtering_are_seen_from_inside_the_plugin() {
    let dir = temp_dir("env");
    let text = format!(
        r#"
[shell]
default_profile = "main"
env = {{ SHELL_LEVEL = "base", WEBCODEX_TOKEN = "secret-from-config" }}
[shell.profiles.main]
program = "bash"
args = ["-c"]
init_script = "echo chatter before the marker\nexport FROM_INIT=initialized\nexport WEBCODEX_PAT=secret-from-init"
env = {{ PROFILE_LEVEL = "profile" }}
{}"#,
        provider_toml("alpha", "normal")
    );
    let path = write_config(&dir, &text);
    let mut base: Vec<_> = std::env::vars_os().collect();
    base.push(("AUTHORIZATION".into(), "Bearer secret".into()));
    let options = HostOptions {
        base_env: Some(base),
        ..HostOptions::default()
    };
    let host = Host::start(ConfigSource::File(path), options).unwrap();
    let read = |name: &str| {
        let result = host.call("alpha", "env", &json!({"name": name})).unwrap();
        result.structured_content().unwrap()["value"].clone()
    };
    assert_eq!(read("FROM_INIT"), json!("initialized"));
    assert_eq!(read("SHELL_LEVEL"), json!("base"));
    assert_eq!(read("PROFILE_LEVEL"), json!("profile"));
    assert_eq!(read("WEBCODEX_TOKEN"), json!(null));
    assert_eq!(read("WEBCODEX_PAT"), json!(null));
    assert_eq!(read("AUTHORIZATION"), json!(null));
}

#[test]
fn provider_runs_in_its_configured_cwd() {
    let dir = temp_dir("cwd");
    let text = format!(
        "{}cwd = {:?}\n",
        provider_toml("alpha", "normal"),
        dir.display().to_string()
    );
    let host = start(&write_config(&dir, &text));
    let result = host.call("alpha", "cwd", &json!({})).unwrap();
    let reported = PathBuf::from(result.texts()[0]);
    assert_eq!(
        reported.canonicalize().unwrap(),
        dir.canonicalize().unwrap()
    );
}

#[test]
fn project_catalog_lists_tools_of_providers_working_in_the_root() {
    let dir = temp_dir("project");
    let other = temp_dir("project-other");
    let text = format!(
        "{}cwd = {:?}\n{}cwd = {:?}\n",
        provider_toml("alpha", "normal"),
        dir.display().to_string(),
        provider_toml("beta", "normal"),
        other.display().to_string()
    );
    let host = start(&write_config(&dir, &text));
    let catalog = host.project_catalog(&dir, 1 << 20).unwrap();
    assert!(catalog.total_count > 0);
    assert!(catalog.tools.iter().all(|t| t.plugin == "alpha"));
    assert!(catalog.catalog_revision.starts_with("wc_plugcat_"));
    let echo = catalog.tools.iter().find(|t| t.tool == "echo").unwrap();
    assert_eq!(
        echo.annotations.as_ref().unwrap()["readOnlyHint"],
        json!(true)
    );
    // The revision changes when an included provider is replaced.
    host.reload().unwrap();
    let after = host.project_catalog(&dir, 1 << 20).unwrap();
    assert_ne!(after.catalog_revision, catalog.catalog_revision);
    // The byte bound cuts entries but not the count.
    let small = host.project_catalog(&dir, 200).unwrap();
    assert!(small.tools.len() < small.total_count);
    assert_eq!(small.total_count, catalog.total_count);
}

#[test]
fn fixed_config_sources_need_no_file() {
    let config = parse_runner_config(&provider_toml("alpha", "normal"), 8).unwrap();
    let host = Host::start(ConfigSource::Fixed(config), HostOptions::default()).unwrap();
    assert!(matches!(
        host.providers().entry("alpha").unwrap().state,
        ProviderState::Ready(_)
    ));
    assert!(host.reload().unwrap().committed);
    let provider = host.provider("alpha").unwrap();
    assert_eq!(provider.response_spin(), std::time::Duration::ZERO);
}

#[test]
fn response_spin_option_keeps_results_and_timeouts() {
    let dir = temp_dir("spin");
    let text = provider_toml("alpha", "normal").replace("timeout_secs = 5", "timeout_secs = 1");
    let options = HostOptions {
        response_spin: std::time::Duration::from_micros(200),
        ..HostOptions::default()
    };
    let host = Host::start(ConfigSource::File(write_config(&dir, &text)), options).unwrap();
    assert_eq!(
        host.provider("alpha").unwrap().response_spin(),
        std::time::Duration::from_micros(200)
    );
    for i in 0..50 {
        let result = host.call("alpha", "add", &json!({"a": i, "b": 1})).unwrap();
        assert_eq!(result.structured_content().unwrap()["sum"], i + 1);
    }
    let err = host.call("alpha", "hang", &json!({})).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Timeout);
    assert_eq!(err.dispatch(), Dispatch::OutcomeUnknown);
}
