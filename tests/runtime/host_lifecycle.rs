//! Host behaviour against real fixture processes: startup, check, reload, shutdown, environment.
//! After every check, reload or fault, the candidates and retired plugins are checked from
//! `/proc`: no zombie child, nothing left in their process groups, within the 1 s bound.

use crate::common;
use crate::tempdir;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use webcodex_plugin_host::parse_runner_config;
use webcodex_plugin_host::{ConfigSource, Host, HostOptions, InstanceCall, ProviderState};
use webcodex_plugin_host::{Dispatch, ErrorCode, Phase};

use tempdir::TempDir;

fn fixture() -> PathBuf {
    common::fixture_path()
}

/// A `[shell]` table that makes every fixture record its pid in `pids`.
fn pids_toml(pids: &Path) -> String {
    format!(
        "[shell]\nenv = {{ FIXTURE_PIDS = {:?} }}\n",
        pids.display().to_string()
    )
}

/// Asserts that every plugin recorded in `pids` (at least one) is gone and reaped.
fn assert_recorded_plugins_cleaned_up(pids: &Path) {
    let recorded = common::recorded_plugin_pids(pids);
    assert!(!recorded.is_empty(), "no plugin recorded in {pids:?}");
    common::assert_plugins_cleaned_up(&recorded);
}

fn temp_dir(tag: &str) -> TempDir {
    TempDir::new("host", tag)
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
    let candidates = dir.join("candidate-pids");
    let text = pids_toml(&candidates) + &provider_toml("alpha", "normal");
    write_config(&dir, &text);
    let report = host.check("alpha").unwrap();
    assert_recorded_plugins_cleaned_up(&candidates);
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
    let candidates = dir.join("candidate-pids");
    write_config(
        &dir,
        &(pids_toml(&candidates) + &provider_toml("alpha", "bad-tools")),
    );
    let report = host.check("alpha").unwrap();
    assert_recorded_plugins_cleaned_up(&candidates);
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
fn check_of_an_unknown_plugin_is_a_not_ready_config_report() {
    let dir = temp_dir("check-unknown");
    let host = start(&write_config(&dir, &provider_toml("alpha", "normal")));
    let report = host.check("nope").unwrap();
    assert!(!report.ready);
    assert_eq!(report.phase, Phase::Config);
    assert!(report.tools.is_empty());
    assert_eq!(
        report.error.as_ref().map(|e| e.code()),
        Some(ErrorCode::NotConfigured)
    );
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
    let candidates = dir.join("candidate-pids");
    let text = [
        pids_toml(&candidates),
        provider_toml("alpha", "normal"),
        // Only the failing candidate gets a short budget: the admitted one must have time to
        // start even on a loaded machine.
        provider_toml("beta", "silent-init").replace("timeout_secs = 5", "timeout_secs = 2"),
    ]
    .concat();
    write_config(&dir, &text);
    let report = host.reload().unwrap();
    // Both candidates, the admitted one too, are killed and reaped.
    assert_eq!(common::recorded_plugin_pids(&candidates).len(), 2);
    assert_recorded_plugins_cleaned_up(&candidates);
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
    let old = dir.join("old-pids");
    let text = [
        pids_toml(&old),
        provider_toml("alpha", "normal"),
        provider_toml("beta", "normal"),
    ]
    .concat();
    let host = start(&write_config(&dir, &text));
    let beta = host.provider("beta").unwrap().instance();
    write_config(&dir, &provider_toml("alpha", "normal"));
    assert!(host.reload().unwrap().committed);
    // The old instances nobody holds (the removed one too) are retired and reaped at once.
    assert_recorded_plugins_cleaned_up(&old);
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

/// After `close_reloads` (a stdio front's input ended) checks and calls are served normally and
/// only a reload is refused; the committed provider is untouched.
#[test]
fn close_reloads_refuses_only_reloads() {
    let dir = temp_dir("close-reloads");
    let pids = dir.join("pids");
    let host = start(&write_config(
        &dir,
        &(pids_toml(&pids) + &provider_toml("alpha", "normal")),
    ));
    let provider = host.provider("alpha").unwrap();
    host.close_reloads();
    assert_eq!(host.reload().unwrap_err().code(), ErrorCode::HostStopping);
    let report = host.check("alpha").expect("a check is still served");
    assert!(report.ready, "{report:?}");
    assert!(host
        .call("alpha", "echo", &serde_json::json!({"text": "hi"}))
        .is_ok());
    assert!(!provider.is_retired());
    host.shutdown();
    assert_recorded_plugins_cleaned_up(&pids);
}

#[test]
fn shutdown_stops_providers_and_refuses_reload() {
    let dir = temp_dir("shutdown");
    let pids = dir.join("pids");
    let host = start(&write_config(
        &dir,
        &(pids_toml(&pids) + &provider_toml("alpha", "normal")),
    ));
    let provider = host.provider("alpha").unwrap();
    host.shutdown();
    assert!(provider.is_retired());
    assert_recorded_plugins_cleaned_up(&pids);
    assert_eq!(host.reload().unwrap_err().code(), ErrorCode::HostStopping);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs a POSIX shell for the init_script (Wine has none; docs/PLATFORMS.md)"
)]
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
}

/// Waits (bounded) until `count` plugins recorded their pids in `pids`.
fn wait_for_recorded(pids: &Path, count: usize) -> Vec<i32> {
    let deadline = Instant::now() + common::GENEROUS;
    loop {
        let recorded = common::recorded_plugin_pids(pids);
        if recorded.len() >= count {
            return recorded;
        }
        assert!(Instant::now() < deadline, "only {recorded:?} started");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Shutdown while a reload prepares candidates whose initialize never answers: the candidates
/// are killed at once, the reload fails with `plugin_manager_stopping` long before the
/// candidates' timeout and never commits.
#[test]
fn shutdown_during_a_reload_kills_the_candidates_at_once_and_never_commits() {
    let dir = temp_dir("shutdown-reload");
    let host = std::sync::Arc::new(start(&write_config(
        &dir,
        &provider_toml("alpha", "normal"),
    )));
    let candidates = dir.join("candidate-pids");
    let text = [
        pids_toml(&candidates),
        provider_toml("alpha", "stuck-init"),
        provider_toml("beta", "silent-init"),
    ]
    .concat();
    write_config(&dir, &text.replace("timeout_secs = 5", "timeout_secs = 60"));
    let reloading = {
        let host = host.clone();
        std::thread::spawn(move || host.reload())
    };
    let pids = wait_for_recorded(&candidates, 2);
    host.shutdown();
    let deadline = Instant::now() + common::GENEROUS;
    while !reloading.is_finished() {
        assert!(
            Instant::now() < deadline,
            "the reload outlived the shutdown"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let result = reloading.join().unwrap();
    assert_eq!(
        result.map(|r| r.committed).unwrap_err().code(),
        ErrorCode::HostStopping
    );
    common::assert_plugins_cleaned_up(&pids);
    assert!(
        host.providers().entries().is_empty(),
        "nothing was committed"
    );
}

/// The same for a check whose candidate never answers initialize.
#[test]
fn shutdown_during_a_check_kills_the_candidate_at_once() {
    let dir = temp_dir("shutdown-check");
    let host = std::sync::Arc::new(start(&write_config(
        &dir,
        &provider_toml("alpha", "normal"),
    )));
    let candidates = dir.join("candidate-pids");
    let text = pids_toml(&candidates) + &provider_toml("alpha", "stuck-init");
    write_config(&dir, &text.replace("timeout_secs = 5", "timeout_secs = 60"));
    let checking = {
        let host = host.clone();
        std::thread::spawn(move || host.check("alpha").map(|r| r.ready))
    };
    let pids = wait_for_recorded(&candidates, 1);
    host.shutdown();
    let deadline = Instant::now() + common::GENEROUS;
    while !checking.is_finished() {
        assert!(Instant::now() < deadline, "the check outlived the shutdown");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        checking.join().unwrap().unwrap_err().code(),
        ErrorCode::HostStopping
    );
    common::assert_plugins_cleaned_up(&pids);
}

/// A Python plugin whose one tool returns every environment variable it sees.
const ENV_DUMP_PLUGIN: &str = r#"
import json, os, sys
for line in sys.stdin:
    req = json.loads(line)
    method, rid = req.get("method"), req.get("id")
    if method == "initialize":
        result = {"protocolVersion": "webcodex-plugin-v1"}
    elif method == "tools/list":
        result = {"tools": [{"name": "dump", "inputSchema": {"type": "object"}}]}
    else:
        text = json.dumps(dict(os.environ))
        result = {"content": [{"type": "text", "text": text}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
    sys.stdout.flush()
"#;

/// The sensitive names are removed in any letter case, from the host environment, `[shell]`
/// env, the profile's env and the init_script's output, as seen from inside the plugin.
#[test]
#[cfg_attr(
    windows,
    ignore = "needs a POSIX shell for the init_script (Wine has none; docs/PLATFORMS.md)"
)]
fn sensitive_variables_in_any_case_never_reach_the_plugin() {
    let dir = temp_dir("env-case");
    let script = dir.join("dump.py");
    std::fs::write(&script, ENV_DUMP_PLUGIN).unwrap();
    let text = format!(
        r#"
[shell]
default_profile = "main"
env = {{ Webcodex_Agent_Token = "secret-shell", KEEP_SHELL = "kept" }}
[shell.profiles.main]
program = "bash"
args = ["-c"]
init_script = "export Webcodex_Pat=secret-init\nexport authorization=secret-init-auth"
env = {{ webcodex_user_token = "secret-profile" }}
[[plugins.providers]]
id = "dump"
name = "Dump"
command = "python3"
args = [{script:?}]
"#,
        script = script.display().to_string()
    );
    let path = write_config(&dir, &text);
    let mut base: Vec<_> = std::env::vars_os().collect();
    for (key, value) in [
        ("webcodex_pat", "secret-base-1"),
        ("Authorization", "secret-base-2"),
        ("WEBCODEX_token", "secret-base-3"),
        ("WEBCODEX_USER_TOKEN", "secret-base-4"),
    ] {
        base.push((key.into(), value.into()));
    }
    let options = HostOptions {
        base_env: Some(base),
        ..HostOptions::default()
    };
    let host = Host::start(ConfigSource::File(path), options).unwrap();
    let result = host.call("dump", "dump", &json!({})).unwrap();
    let seen: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(result.texts()[0]).unwrap();
    assert_eq!(seen.get("KEEP_SHELL"), Some(&json!("kept")));
    let sensitive = [
        "WEBCODEX_TOKEN",
        "WEBCODEX_PAT",
        "WEBCODEX_AGENT_TOKEN",
        "WEBCODEX_USER_TOKEN",
        "AUTHORIZATION",
    ];
    for (name, value) in &seen {
        assert!(
            !sensitive.iter().any(|s| s.eq_ignore_ascii_case(name)),
            "{name} reached the plugin"
        );
        assert!(
            !value.as_str().unwrap_or("").contains("secret"),
            "a secret value reached the plugin as {name}"
        );
    }
}

/// A Python plugin whose tools/list result is chosen by its argument.
const LIST_PLUGIN: &str = r#"
import json, sys
mode = sys.argv[1]
for line in sys.stdin:
    req = json.loads(line)
    if req.get("method") == "initialize":
        result = {"protocolVersion": "webcodex-plugin-v1"}
    elif mode == "too-many":
        result = {"tools": [{"name": "t%d" % i, "inputSchema": {"type": "object"}} for i in range(129)]}
    elif mode == "malformed":
        result = {"tools": {}}
    else:
        result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}, "extra": 1}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": result}) + "\n")
    sys.stdout.flush()
"#;

/// A check diagnostic's `field` is one of the six definition keys, and absent for a malformed
/// result, too many tools and a definition that is invalid as a whole.
#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn check_diagnostic_field_is_absent_where_no_definition_key_is_at_fault() {
    let dir = temp_dir("diag-field");
    let script = dir.join("list.py");
    std::fs::write(&script, LIST_PLUGIN).unwrap();
    let mut text = String::new();
    for mode in ["too-many", "malformed", "unknown-key"] {
        text += &format!(
            "[[plugins.providers]]\nid = \"{mode}\"\nname = \"{mode}\"\ncommand = \"python3\"\nargs = [{:?}, \"{mode}\"]\n",
            script.display().to_string()
        );
    }
    let host = Host::configured(
        ConfigSource::File(write_config(&dir, &text)),
        HostOptions::default(),
    )
    .unwrap();
    for (mode, code, tool) in [
        ("too-many", "tool_count_exceeded", None),
        ("malformed", "tools_list_result_malformed", None),
        ("unknown-key", "tool_definition_invalid", Some("t")),
    ] {
        let report = host.check(mode).unwrap();
        assert!(!report.ready, "{mode}");
        let diagnostic = report.diagnostic().expect("a diagnostic");
        assert_eq!(diagnostic.code.as_str(), code, "{mode}");
        assert_eq!(diagnostic.tool.as_deref(), tool, "{mode}");
        assert_eq!(diagnostic.field, None, "{mode}");
        assert!(diagnostic.to_json().get("field").is_none());
    }
}

/// Shutdown while a reload's candidate is still in its profile's init_script: the script's
/// process group is killed at once and the reload ends with `plugin_manager_stopping`, long
/// before the script's 30 s limit.
#[test]
#[cfg_attr(
    windows,
    ignore = "needs a POSIX shell for the init_script (Wine has none; docs/PLATFORMS.md)"
)]
fn shutdown_during_a_candidates_init_script_kills_the_script_at_once() {
    let dir = temp_dir("shutdown-init");
    let host = std::sync::Arc::new(start(&write_config(
        &dir,
        &provider_toml("alpha", "normal"),
    )));
    let marker = dir.join("script-started");
    let text = format!(
        "[shell]\ndefault_profile = \"slow\"\n[shell.profiles.slow]\nprogram = \"bash\"\n\
         args = [\"-c\"]\ninit_script = \"echo $$ > {marker}.tmp && mv {marker}.tmp {marker}\\nsleep 60\"\n{}",
        provider_toml("alpha", "normal"),
        marker = marker.display()
    );
    write_config(&dir, &text);
    let reloading = {
        let host = host.clone();
        std::thread::spawn(move || host.reload().map(|r| r.committed))
    };
    let deadline = Instant::now() + common::GENEROUS;
    let script: i32 = loop {
        if let Ok(pid) = std::fs::read_to_string(&marker) {
            break pid.trim().parse().unwrap();
        }
        assert!(Instant::now() < deadline, "the init_script never started");
        std::thread::sleep(Duration::from_millis(10));
    };
    host.shutdown();
    let deadline = Instant::now() + common::GENEROUS;
    while !reloading.is_finished() {
        assert!(
            Instant::now() < deadline,
            "the reload waited for the init_script"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        reloading.join().unwrap().unwrap_err().code(),
        ErrorCode::HostStopping
    );
    // The script led its own group; it and its `sleep` are gone and reaped.
    common::assert_plugins_cleaned_up(&[script]);
}

/// Windows: the same with a `cmd` profile: shutdown terminates the script's job (cmd and the
/// `ping` it runs) at once.
#[cfg(windows)]
#[test]
fn shutdown_during_a_candidates_cmd_init_script_kills_the_script_at_once() {
    let dir = temp_dir("shutdown-init-cmd");
    let host = std::sync::Arc::new(start(&write_config(
        &dir,
        &provider_toml("alpha", "normal"),
    )));
    let text = format!(
        "[shell]\ndefault_profile = \"slow\"\n[shell.profiles.slow]\nprogram = \"cmd\"\n\
         args = [\"/d\", \"/c\"]\ninit_script = \"ping -n 60 127.0.0.1 >nul\"\n{}",
        provider_toml("alpha", "normal"),
    );
    write_config(&dir, &text);
    let reloading = {
        let host = host.clone();
        std::thread::spawn(move || host.reload().map(|r| r.committed))
    };
    let deadline = Instant::now() + common::GENEROUS;
    let pings = loop {
        let found = common::windows::descendants_named(std::process::id(), "ping.exe");
        if !found.is_empty() {
            break found;
        }
        assert!(
            Instant::now() < deadline,
            "the init_script never started ping"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    host.shutdown();
    let deadline = Instant::now() + common::GENEROUS;
    while !reloading.is_finished() {
        assert!(
            Instant::now() < deadline,
            "the reload waited for the init_script"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        reloading.join().unwrap().unwrap_err().code(),
        ErrorCode::HostStopping
    );
    // Gone within the termination bound, like the script's group on Unix.
    let pings: Vec<i32> = pings.into_iter().map(|pid| pid as i32).collect();
    common::assert_plugins_cleaned_up(&pings);
}

/// Waits (bounded by 30 s) until `done` holds, checking every 20 ms; `what` names the failure.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what} within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `restart = "on-failure"`: a plugin that crashes (the fixture's `crash` tool exits) comes back
/// as a new instance of the same provider, from the configuration it was committed with; calls
/// to the old instance are stale, the new one answers, the restart is counted, and the crashed
/// process is reaped (nothing left in its group).
#[test]
fn on_failure_restarts_a_crashed_plugin_as_a_new_instance() {
    let dir = temp_dir("restart");
    let pids = dir.join("pids");
    let text = [
        pids_toml(&pids),
        provider_toml("alpha", "normal").replace(
            "timeout_secs = 5",
            "timeout_secs = 5\nrestart = \"on-failure\"",
        ),
    ]
    .concat();
    let host = start(&write_config(&dir, &text));
    assert_eq!(host.restart_counts(), [("alpha".to_string(), 0)]);
    let old = host.provider("alpha").unwrap();
    let old_instance = old.instance();
    // Read before the crash: the restart may record its process as soon as the crash is seen.
    let first = common::recorded_plugin_pids(&pids);
    assert_eq!(first.len(), 1);
    let error = old.call("crash", &json!({})).unwrap_err();
    assert_eq!(error.dispatch(), Dispatch::OutcomeUnknown, "{error:?}");
    drop(old);
    // runner.toml changes after the start: a restart does not read it (only a reload does).
    write_config(&dir, &provider_toml("alpha", "bad-version"));
    wait_until("a new instance of alpha", || {
        host.provider("alpha")
            .is_ok_and(|p| p.instance() != old_instance)
    });
    let new = host.provider("alpha").unwrap();
    let answer = new.call("echo", &json!({"text": "back"})).unwrap();
    assert_eq!(answer.texts(), ["back"]);
    let args = json!({"text": "x"});
    let stale = host
        .call_instance(InstanceCall::new("alpha", old_instance, "echo", &args))
        .unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleProvider);
    assert_eq!(host.restart_counts(), [("alpha".to_string(), 1)]);
    let recorded = common::recorded_plugin_pids(&pids);
    assert_eq!(recorded.len(), 2, "one restart, one new process");
    common::assert_plugins_cleaned_up(&first);
    drop(new);
    host.shutdown();
    assert_recorded_plugins_cleaned_up(&pids);
}

/// The default, `restart = "never"`: a crashed plugin stays down (retired) and nothing starts
/// it again; the first restart of `on-failure` would have come within its 1 s ceiling.
#[test]
fn never_leaves_a_crashed_plugin_down() {
    let dir = temp_dir("never");
    let pids = dir.join("pids");
    let text = [pids_toml(&pids), provider_toml("alpha", "normal")].concat();
    let host = start(&write_config(&dir, &text));
    assert!(host.restart_counts().is_empty());
    let old = host.provider("alpha").unwrap();
    old.call("crash", &json!({})).unwrap_err();
    assert!(old.is_retired());
    // Three times the longest first backoff: a restart would have started by then.
    std::thread::sleep(webcodex_plugin_host::RESTART_BACKOFF_BASE * 3);
    assert_eq!(
        host.provider("alpha").unwrap_err().code(),
        ErrorCode::ProviderUnavailable
    );
    assert_eq!(common::recorded_plugin_pids(&pids).len(), 1);
    drop(old);
    assert_recorded_plugins_cleaned_up(&pids);
}
