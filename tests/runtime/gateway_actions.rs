//! plugin_tool actions against a real host running the fixture plugin: output shapes, the
//! describe → call round trip, binding failures, replacement, retirement, scopes, recording.

use crate::common;
use crate::gateway_support;

use std::sync::{Arc, Mutex};

use serde_json::json;
use webcodex_plugin_host::Dispatch;
use webcodex_plugin_host::{Caller, Gateway, RecordingEvent, Scope, Scopes};

use gateway_support::*;

#[test]
fn list_without_runner_lists_the_runners() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    assert_eq!(
        ok(&gw, json!({"action":"list"})),
        json!({"runners":[{"runner":"local"}]})
    );
}

#[test]
fn list_runner_shows_ready_and_failed_providers() {
    let gw = gateway(vec![
        provider("alpha", &["normal"]),
        provider("broken", &["bad-version"]),
    ]);
    assert_eq!(
        ok(&gw, json!({"action":"list","runner":"local"})),
        json!({"runner":"local","plugins":[
            {"plugin":"alpha","name":"Provider alpha","status":"ready"},
            {"plugin":"broken","name":"Provider broken","status":"failed",
             "errorCode":"plugin_protocol_version_mismatch"}
        ]})
    );
}

#[test]
fn list_plugin_shows_tool_names_and_titles_without_schemas() {
    let gw = gateway(vec![
        provider("alpha", &["normal"]),
        provider("broken", &["bad-version"]),
    ]);
    let out = ok(
        &gw,
        json!({"action":"list","runner":"local","plugin":"alpha"}),
    );
    assert_eq!(
        keys(&out),
        ["name", "plugin", "status", "toolCount", "tools"]
    );
    assert_eq!(out["plugin"], "alpha");
    assert_eq!(out["status"], "ready");
    let tools = out["tools"].as_array().unwrap();
    assert_eq!(out["toolCount"], tools.len());
    assert_eq!(tools.len(), 20);
    assert!(tools.contains(&json!({"name":"echo","title":"Echo"})));
    assert!(tools.contains(&json!({"name":"add"})));
    assert!(tools.iter().all(|t| t.get("inputSchema").is_none()));

    let out = ok(
        &gw,
        json!({"action":"list","runner":"local","plugin":"broken"}),
    );
    assert_eq!(
        out,
        json!({"plugin":"broken","name":"Provider broken","status":"failed",
               "errorCode":"plugin_protocol_version_mismatch","toolCount":0,"tools":[]})
    );
}

#[test]
fn unknown_runner_and_unknown_plugin_have_their_codes() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    for params in [
        json!({"action":"list","runner":"remote"}),
        json!({"action":"describe","runner":"remote","plugin":"alpha","tool":"echo"}),
        json!({"action":"check","runner":"remote","plugin":"alpha"}),
        json!({"action":"reload","runner":"remote"}),
        json!({"action":"catalog","runner":"remote","project":"/"}),
    ] {
        let out = fail(&gw, params);
        assert_eq!(code(&out), "plugin_runner_not_found");
        assert_eq!(out["dispatch"], "not_started");
        assert_eq!(out["recovery"], "list");
    }
    for params in [
        json!({"action":"list","runner":"local","plugin":"nope"}),
        json!({"action":"describe","runner":"local","plugin":"nope","tool":"echo"}),
    ] {
        assert_eq!(code(&fail(&gw, params)), "plugin_not_configured");
    }
    let out = fail(
        &gw,
        json!({"action":"describe","runner":"local","plugin":"alpha","tool":"nope"}),
    );
    assert_eq!(code(&out), "plugin_tool_unavailable");
}

#[test]
fn describe_then_call_round_trip() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    let out = ok(
        &gw,
        json!({"action":"describe","runner":"local","plugin":"alpha","tool":"echo"}),
    );
    assert_eq!(
        keys(&out),
        ["binding", "plugin", "pluginName", "runner", "tool"]
    );
    assert_eq!(out["runner"], "local");
    assert_eq!(out["plugin"], "alpha");
    assert_eq!(out["pluginName"], "Provider alpha");
    assert_eq!(out["tool"]["name"], "echo");
    assert_eq!(out["tool"]["title"], "Echo");
    assert_eq!(out["tool"]["inputSchema"]["required"], json!(["text"]));
    assert_eq!(out["tool"]["annotations"], json!({"readOnlyHint":true}));
    let binding = out["binding"].as_str().unwrap();
    assert!(is_binding(binding), "{binding}");

    let result = ok(
        &gw,
        json!({"action":"call","binding":binding,"arguments":{"text":"hi"}}),
    );
    assert_eq!(
        result,
        json!({"content":[{"type":"text","text":"hi"}],"structuredContent":{"text":"hi"},
               "isError":false})
    );
    // The binding stays usable.
    let add = bind(&gw, "alpha", "add");
    let result = ok(
        &gw,
        json!({"action":"call","binding":add,"arguments":{"a":2,"b":5}}),
    );
    assert_eq!(result["structuredContent"], json!({"sum":7}));
}

#[test]
fn every_describe_creates_a_fresh_binding() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    let a = bind(&gw, "alpha", "echo");
    let b = bind(&gw, "alpha", "echo");
    assert_ne!(a, b);
    for binding in [a, b] {
        ok(
            &gw,
            json!({"action":"call","binding":binding,"arguments":{"text":"x"}}),
        );
    }
}

#[test]
fn a_tool_error_result_is_a_successful_call_with_is_error() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    let binding = bind(&gw, "alpha", "is_error");
    let out = ok(
        &gw,
        json!({"action":"call","binding":binding,"arguments":{}}),
    );
    assert_eq!(
        out,
        json!({"content":[{"type":"text","text":"bad input"}],"isError":true})
    );
}

#[test]
fn unknown_or_malformed_binding_is_describe_required() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    for binding in [
        "wc_pbind_AAAAAAAAAAAAAAAAAAAAAA".to_string(),
        "not-a-binding".to_string(),
        String::new(),
    ] {
        let out = fail(
            &gw,
            json!({"action":"call","binding":binding,"arguments":{}}),
        );
        assert_eq!(
            out,
            json!({"error":{"code":"describe_required",
                            "message":"the binding is unknown or expired; describe the tool again"},
                   "dispatch":"not_started","recovery":"describe_again"})
        );
    }
}

#[test]
fn arguments_not_matching_the_schema_fail_before_dispatch() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    let binding = bind(&gw, "alpha", "add");
    let out = fail(
        &gw,
        json!({"action":"call","binding":binding,"arguments":{"a":1.5,"b":2}}),
    );
    assert_eq!(code(&out), "plugin_arguments_schema_invalid");
    assert_eq!(out["dispatch"], "not_started");
    assert_eq!(out["recovery"], "fix_arguments");
}

#[test]
fn a_binding_from_before_a_reload_is_plugin_replaced() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    let old = bind(&gw, "alpha", "echo");
    let out = ok(&gw, json!({"action":"reload","runner":"local"}));
    assert_eq!(out["failures"], json!([]));
    let out = fail(
        &gw,
        json!({"action":"call","binding":old,"arguments":{"text":"x"}}),
    );
    assert_eq!(code(&out), "plugin_replaced");
    assert_eq!(out["dispatch"], "not_started");
    assert_eq!(out["recovery"], "list_and_describe");
    let new = bind(&gw, "alpha", "echo");
    ok(
        &gw,
        json!({"action":"call","binding":new,"arguments":{"text":"x"}}),
    );
}

#[test]
fn a_binding_from_a_replaced_runner_is_plugin_replaced() {
    let cfg = config(vec![provider("alpha", &["normal"])], &[]);
    let gw = Gateway::single(host(cfg.clone()));
    let old = bind(&gw, "alpha", "echo");
    let previous = gw.insert_runner("local", host(cfg)).unwrap();
    previous.shutdown();
    let out = fail(
        &gw,
        json!({"action":"call","binding":old,"arguments":{"text":"x"}}),
    );
    assert_eq!(code(&out), "plugin_replaced");
}

#[test]
fn a_binding_reaches_its_instance_again_whatever_else_changes() {
    // A binding keeps how to reach its host and instance (DECISIONS D-GW-3); whatever changes
    // around them, a call answers as looking them up would.
    let cfg = config(vec![provider("alpha", &["normal"])], &[]);
    let first = host(cfg.clone());
    let gw = Gateway::single(first.clone());
    let echo = bind(&gw, "alpha", "echo");
    let call = json!({"action":"call","binding":echo,"arguments":{"text":"x"}});
    ok(&gw, call.clone());
    // Another runner comes and goes: the binding's runner is the same host.
    assert!(gw.insert_runner("other", host(cfg.clone())).is_none());
    ok(&gw, call.clone());
    // The same host registered again under the same name: still the same instance.
    gw.insert_runner("local", first.clone()).unwrap();
    ok(&gw, call.clone());
    // A describe after those changes reaches the instance directly again.
    let again = bind(&gw, "alpha", "echo");
    ok(
        &gw,
        json!({"action":"call","binding":again,"arguments":{"text":"y"}}),
    );
    // The host shut down: its set is empty, the instance no longer committed.
    let pid = first.providers().entries()[0]
        .provider()
        .unwrap()
        .process_id() as i32;
    first.shutdown();
    for binding in [&echo, &again] {
        let out = fail(
            &gw,
            json!({"action":"call","binding":binding,"arguments":{"text":"x"}}),
        );
        assert_eq!(code(&out), "plugin_replaced");
        assert_eq!(out["dispatch"], "not_started");
    }
    assert!(common::wait_gone(pid));
}

#[test]
fn a_binding_does_not_keep_a_replaced_instance_running() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    let echo = bind(&gw, "alpha", "echo");
    ok(
        &gw,
        json!({"action":"call","binding":echo,"arguments":{"text":"x"}}),
    );
    let local = gw.runner("local").unwrap();
    let pid = local.providers().entries()[0]
        .provider()
        .unwrap()
        .process_id() as i32;
    ok(&gw, json!({"action":"reload","runner":"local"}));
    // Nobody uses the old instance (the binding holds it weakly): the reload stopped it.
    assert!(
        common::wait_gone(pid),
        "the replaced instance {pid} still runs"
    );
    let out = fail(
        &gw,
        json!({"action":"call","binding":echo,"arguments":{"text":"x"}}),
    );
    assert_eq!(code(&out), "plugin_replaced");
}

#[test]
fn a_retired_provider_is_listed_failed_and_old_bindings_say_reload() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    let echo = bind(&gw, "alpha", "echo");
    let crash = bind(&gw, "alpha", "crash");
    let out = fail(&gw, json!({"action":"call","binding":crash,"arguments":{}}));
    assert_eq!(out["dispatch"], "outcome_unknown");
    assert_eq!(out["recovery"], "do_not_retry");

    assert_eq!(
        ok(&gw, json!({"action":"list","runner":"local"}))["plugins"],
        json!([{"plugin":"alpha","name":"Provider alpha","status":"failed",
                "errorCode":"plugin_provider_unavailable"}])
    );
    let detail = ok(
        &gw,
        json!({"action":"list","runner":"local","plugin":"alpha"}),
    );
    assert_eq!(detail["status"], "failed");
    assert_eq!(detail["toolCount"], 0);

    let out = fail(
        &gw,
        json!({"action":"call","binding":echo,"arguments":{"text":"x"}}),
    );
    assert_eq!(code(&out), "plugin_provider_unavailable");
    assert_eq!(out["dispatch"], "not_started");
    assert_eq!(out["recovery"], "reload");
    let out = fail(
        &gw,
        json!({"action":"describe","runner":"local","plugin":"alpha","tool":"echo"}),
    );
    assert_eq!(code(&out), "plugin_provider_unavailable");

    ok(&gw, json!({"action":"reload","runner":"local"}));
    let echo = bind(&gw, "alpha", "echo");
    ok(
        &gw,
        json!({"action":"call","binding":echo,"arguments":{"text":"back"}}),
    );
}

#[test]
fn check_of_a_ready_provider() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    let out = ok(
        &gw,
        json!({"action":"check","runner":"local","plugin":"alpha"}),
    );
    assert_eq!(
        keys(&out),
        [
            "catalogDigest",
            "phase",
            "plugin",
            "ready",
            "runner",
            "toolCount",
            "tools"
        ]
    );
    assert_eq!(out["ready"], true);
    assert_eq!(out["phase"], "ready");
    assert_eq!(out["toolCount"], 20);
    // The committed instance of the same plugin has the same catalog digest.
    let committed = gw.runner("local").unwrap().provider("alpha").unwrap();
    assert_eq!(out["catalogDigest"], committed.catalog().digest());
    assert!(out["tools"]
        .as_array()
        .unwrap()
        .contains(&json!({"name":"echo","title":"Echo"})));
}

#[test]
fn check_of_a_bad_provider_is_a_not_ready_report() {
    let gw = gateway(vec![
        provider("alpha", &["normal"]),
        provider("bad", &["bad-tools"]),
    ]);
    let out = ok(
        &gw,
        json!({"action":"check","runner":"local","plugin":"bad"}),
    );
    assert_eq!(
        keys(&out),
        [
            "code",
            "detail",
            "diagnostic",
            "phase",
            "plugin",
            "ready",
            "runner",
            "toolCount",
            "tools"
        ]
    );
    assert_eq!(out["ready"], false);
    assert_eq!(out["phase"], "validation");
    assert_eq!(out["toolCount"], 0);
    assert_eq!(out["tools"], json!([]));
    assert_eq!(out["code"], "plugin_tools_list_invalid");
    let detail = out["detail"].as_str().unwrap();
    assert!(!detail.is_empty() && detail.len() <= 512);
    assert!(!detail.chars().any(char::is_control));
    assert_eq!(out["diagnostic"]["code"], "schema_keyword_unsupported");
    assert_eq!(out["diagnostic"]["tool"], "add");

    let out = ok(
        &gw,
        json!({"action":"check","runner":"local","plugin":"alpha"}),
    );
    assert_eq!(out["ready"], true);
}

#[test]
fn check_of_an_unconfigured_id_is_a_not_ready_config_report() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    let out = ok(
        &gw,
        json!({"action":"check","runner":"local","plugin":"nope"}),
    );
    assert_eq!(
        keys(&out),
        [
            "code",
            "detail",
            "phase",
            "plugin",
            "ready",
            "runner",
            "toolCount",
            "tools"
        ]
    );
    assert_eq!(out["plugin"], "nope");
    assert_eq!(out["ready"], false);
    assert_eq!(out["phase"], "config");
    assert_eq!(out["code"], "plugin_not_configured");
    assert_eq!(out["toolCount"], 0);
    assert_eq!(out["tools"], json!([]));
    assert!(!out["detail"].as_str().unwrap().is_empty());
}

#[test]
fn check_without_diagnostic_has_code_and_detail() {
    let gw = gateway(vec![provider("stray", &["stray-stdout"])]);
    let out = ok(
        &gw,
        json!({"action":"check","runner":"local","plugin":"stray"}),
    );
    assert_eq!(out["ready"], false);
    assert!(out["code"].is_string());
    assert!(out["detail"].is_string());
    assert!(out.get("diagnostic").is_none());
}

#[test]
fn reload_with_failures_is_a_success_listing_them() {
    let gw = gateway(vec![
        provider("alpha", &["normal"]),
        provider("broken", &["bad-version"]),
    ]);
    let out = run(&gw, json!({"action":"reload","runner":"local"}));
    assert!(out.is_success());
    assert_eq!(
        out.to_json(),
        json!({"runner":"local",
               "plugins":[
                 {"plugin":"alpha","name":"Provider alpha","status":"ready"},
                 {"plugin":"broken","name":"Provider broken","status":"failed",
                  "errorCode":"plugin_protocol_version_mismatch"}],
               "failures":[{"plugin":"broken","code":"plugin_protocol_version_mismatch"}]})
    );
}

#[test]
fn catalog_lists_the_tools_working_in_a_project() {
    let project = temp_dir("project");
    let mut alpha = provider("alpha", &["normal"]);
    alpha.cwd = Some(project.to_path_buf());
    let gw = gateway(vec![alpha, provider("elsewhere", &["normal"])]);
    let out = ok(
        &gw,
        json!({"action":"catalog","runner":"local","project":project.display().to_string()}),
    );
    assert_eq!(
        keys(&out),
        ["catalogRevision", "runner", "tools", "totalCount"]
    );
    assert_eq!(out["runner"], "local");
    assert_eq!(out["totalCount"], 20);
    let tools = out["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 20);
    assert!(tools.iter().all(|t| t["plugin"] == "alpha"));
    assert!(tools.contains(
        &json!({"plugin":"alpha","name":"Provider alpha","tool":"echo",
        "title":"Echo","description":"Returns the text.","annotations":{"readOnlyHint":true}})
    ));
    assert!(out["catalogRevision"]
        .as_str()
        .unwrap()
        .starts_with("wc_plugcat_"));

    let out = fail(
        &gw,
        json!({"action":"catalog","runner":"local","project":"relative/dir"}),
    );
    assert_eq!(code(&out), "invalid_arguments");
}

#[test]
fn scopes_are_checked_after_parsing() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    let nobody = Caller::new(Scopes::none());
    // Malformed: invalid_arguments even without any scope.
    let out = gw.plugin_tool(&nobody, &json!({"action":"call","runner":"local"}));
    assert_eq!(code(&out.to_json()), "invalid_arguments");
    let out = gw.plugin_tool(&nobody, &json!({"action":"list"}));
    assert_eq!(code(&out.to_json()), "insufficient_scope");
    assert_eq!(out.to_json()["dispatch"], "not_started");

    let binding = bind(&gw, "alpha", "echo");
    let call = json!({"action":"call","binding":binding,"arguments":{"text":"x"}});
    let manage = Caller::new(Scopes::none().with(Scope::Manage));
    let inspect = Caller::new(Scopes::none().with(Scope::Inspect));
    let invoke = Caller::new(Scopes::none().with(Scope::Invoke));
    for caller in [manage, inspect] {
        let out = gw.plugin_tool(&caller, &call);
        assert_eq!(code(&out.to_json()), "insufficient_scope");
    }
    assert!(gw.plugin_tool(&invoke, &call).is_success());
    assert!(!gw
        .plugin_tool(&invoke, &json!({"action":"list"}))
        .is_success());
    let check = json!({"action":"check","runner":"local","plugin":"alpha"});
    assert!(gw.plugin_tool(&manage, &check).is_success());
    assert!(!gw.plugin_tool(&invoke, &check).is_success());
    assert!(!gw
        .plugin_tool(&inspect, &json!({"action":"reload","runner":"local"}))
        .is_success());
    let describe = json!({"action":"describe","runner":"local","plugin":"alpha","tool":"echo"});
    assert!(gw.plugin_tool(&inspect, &describe).is_success());
    assert!(!gw.plugin_tool(&manage, &describe).is_success());
}

#[test]
fn recording_hook_sees_only_explicit_sessions() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    let events: Arc<Mutex<Vec<RecordingEvent>>> = Arc::default();
    let sink = events.clone();
    gw.set_recording_hook(Box::new(move |e| sink.lock().unwrap().push(e.clone())));

    let binding = bind(&gw, "alpha", "echo");
    ok(
        &gw,
        json!({"action":"call","binding":binding,"arguments":{"text":"x"}}),
    );
    ok(
        &gw,
        json!({"action":"check","runner":"local","plugin":"alpha"}),
    );
    assert!(events.lock().unwrap().is_empty());

    ok(
        &gw,
        json!({"action":"call","binding":binding,"arguments":{"text":"x"},
               "recording_session_id":"s-1"}),
    );
    ok(
        &gw,
        json!({"action":"check","runner":"local","plugin":"alpha","recording_session_id":"s-2"}),
    );
    fail(
        &gw,
        json!({"action":"call","binding":"wc_pbind_AAAAAAAAAAAAAAAAAAAAAA","arguments":{},
               "recording_session_id":"s-3"}),
    );
    ok(
        &gw,
        json!({"action":"reload","runner":"local","recording_session_id":"s-4"}),
    );
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 4);
    let e = &events[0];
    assert_eq!(e.action.as_str(), "call");
    assert_eq!(e.session_id, "s-1");
    assert_eq!(e.runner.as_deref(), Some("local"));
    assert_eq!(e.plugin.as_deref(), Some("alpha"));
    assert_eq!(e.tool.as_deref(), Some("echo"));
    assert!(e.success);
    assert_eq!(e.dispatch, Dispatch::Completed);
    assert_eq!(events[1].action.as_str(), "check");
    assert_eq!(events[1].plugin.as_deref(), Some("alpha"));
    assert!(!events[2].success);
    assert_eq!(events[2].runner, None);
    assert_eq!(events[2].dispatch, Dispatch::NotStarted);
    assert_eq!(events[3].action.as_str(), "reload");
    assert_eq!(events[3].plugin, None);
}

#[test]
fn a_panicking_recording_hook_does_not_break_the_request() {
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    gw.set_recording_hook(Box::new(|_| panic!("hook failure")));
    let out = ok(
        &gw,
        json!({"action":"reload","runner":"local","recording_session_id":"s"}),
    );
    assert_eq!(out["runner"], "local");
}

/// A typed request (`Gateway::act_on`) and its JSON form (`Gateway::plugin_tool`) are one
/// request: the same answers from the real plugin, the same refusals of bad values, the same
/// scope check.
#[test]
fn a_typed_request_is_answered_as_its_json_form() {
    use webcodex_plugin_host::Action;
    let gw = gateway(vec![provider("alpha", &["normal"])]);
    let trusted = Caller::trusted();
    let both = |caller: &Caller, params: serde_json::Value| {
        let action = Action::parse(&params).expect("parses");
        let typed = gw.act_on(caller, &action).to_json();
        (typed, gw.plugin_tool(caller, &params).to_json())
    };
    for params in [
        json!({"action": "list"}),
        json!({"action": "list", "runner": "local"}),
        json!({"action": "list", "runner": "local", "plugin": "alpha"}),
        json!({"action": "list", "runner": "nowhere"}),
        json!({"action": "check", "runner": "local", "plugin": "alpha"}),
        json!({"action": "call", "binding": "wc_pbind_unknown", "arguments": {}}),
        json!({"action": "describe", "runner": "local", "plugin": "alpha", "tool": "nope"}),
    ] {
        let (typed, parsed) = both(&trusted, params.clone());
        assert_eq!(typed, parsed, "{params}");
    }
    // describe → call, typed all the way: the plugin answers the typed call.
    let describe = Action::Describe {
        runner: "local".into(),
        plugin: "alpha".into(),
        tool: "echo".into(),
        project: None,
    };
    let described = gw.act_on(&trusted, &describe);
    let binding = described.binding().expect("described").to_string();
    let call = Action::Call {
        binding,
        arguments: json!({"text": "typed"}),
        recording_session_id: None,
        project_target: None,
    };
    let called = gw.act_on(&trusted, &call);
    assert!(called.is_success(), "{}", called.to_json());
    assert_eq!(
        called.to_json(),
        run(&gw, serde_json::to_value(call_params(&call)).unwrap()).to_json()
    );
    // Values the JSON parser refuses are refused in the typed form, with the same message.
    let refused = [
        (
            Action::List {
                runner: None,
                plugin: Some("alpha".into()),
            },
            json!({"action": "list", "plugin": "alpha"}),
        ),
        (
            Action::Describe {
                runner: "local".into(),
                plugin: "alpha".into(),
                tool: "echo".into(),
                project: Some("relative/path".into()),
            },
            json!({"action": "describe", "runner": "local", "plugin": "alpha", "tool": "echo",
                   "project": "relative/path"}),
        ),
        (
            Action::Call {
                binding: "wc_pbind_x".into(),
                arguments: json!([1]),
                recording_session_id: None,
                project_target: None,
            },
            json!({"action": "call", "binding": "wc_pbind_x", "arguments": [1]}),
        ),
        (
            Action::Reload {
                runner: "local".into(),
                recording_session_id: Some(String::new()),
            },
            json!({"action": "reload", "runner": "local", "recording_session_id": ""}),
        ),
        (
            Action::Call {
                binding: "wc_pbind_x".into(),
                arguments: json!({}),
                recording_session_id: None,
                project_target: Some("not-a-target".into()),
            },
            json!({"action": "call", "binding": "wc_pbind_x", "arguments": {},
                   "project_target": "not-a-target"}),
        ),
    ];
    for (action, params) in refused {
        let typed = gw.act_on(&trusted, &action).to_json();
        assert_eq!(code(&typed), "invalid_arguments", "{typed}");
        assert_eq!(
            typed,
            gw.plugin_tool(&trusted, &params).to_json(),
            "{params}"
        );
    }
    // The scope check is the same: a caller without plugin:inspect cannot list.
    let none = Caller::new(Scopes::none());
    let (typed, parsed) = both(&none, json!({"action": "list"}));
    assert_eq!(code(&typed), "insufficient_scope", "{typed}");
    assert_eq!(typed, parsed);
    gw.shutdown();
}

/// The JSON form of a typed `call` (what a JSON front would send).
fn call_params(action: &webcodex_plugin_host::Action) -> serde_json::Value {
    match action {
        webcodex_plugin_host::Action::Call {
            binding, arguments, ..
        } => json!({"action": "call", "binding": binding, "arguments": arguments}),
        other => panic!("not a call: {other:?}"),
    }
}
