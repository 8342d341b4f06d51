use super::*;
use serde_json::json;

#[test]
fn a_failure_keeps_only_its_known_fields() {
    let relayed = failure(&json!({
        "error": {"code": "plugin_not_configured", "message": "a\nb", "data": {"x": 1}},
        "dispatch": "not_started", "recovery": "format_disk", "extra": true,
    }))
    .unwrap();
    assert_eq!(
        relayed.to_json(),
        json!({"error": {"code": "plugin_not_configured", "message": "a b"},
               "dispatch": "not_started"})
    );
    assert_eq!(relayed.code, ErrorCode::NotConfigured);
    // outcome_unknown is always do_not_retry, whatever the runner says.
    let relayed = failure(&json!({
        "error": {"code": "plugin_timeout", "message": "m"},
        "dispatch": "outcome_unknown", "recovery": "retry",
    }))
    .unwrap();
    assert_eq!(relayed.recovery, Some(Recovery::DoNotRetry));
    let long = failure(
        &json!({"error": {"code": "plugin_timeout", "message": "é".repeat(900)},
                               "dispatch": "completed"}),
    )
    .unwrap();
    let message = long.message;
    assert!(message.len() <= MAX_RELAYED_MESSAGE_BYTES && message.len() > 1000);
    for bad in [
        json!({"error": {"code": "made_up", "message": "m"}, "dispatch": "completed"}),
        json!({"error": {"code": "plugin_timeout"}, "dispatch": "completed"}),
        json!({"error": {"code": "plugin_timeout", "message": "m"}, "dispatch": "later"}),
        json!({"error": "plugin_timeout", "dispatch": "completed"}),
        json!([]),
    ] {
        assert!(failure(&bad).is_none(), "{bad}");
    }
}

#[test]
fn a_success_must_be_the_kind_asked() {
    let providers = json!({"runner": "local", "plugins": [
        {"plugin": "fx", "name": "Fixture", "status": "ready", "extra": 1},
        {"plugin": "dead", "name": "Dead", "status": "failed", "errorCode": "plugin_eof"},
    ], "unknown": "dropped"});
    assert_eq!(
        success(Expect::Providers, &providers, "edge")
            .unwrap()
            .to_json(),
        json!({"runner": "edge", "plugins": [
            {"plugin": "fx", "name": "Fixture", "status": "ready"},
            {"plugin": "dead", "name": "Dead", "status": "failed", "errorCode": "plugin_eof"},
        ]})
    );
    // A reload answer to a list: another kind.
    let mut reload = providers.clone();
    reload["failures"] = json!([]);
    assert!(success(Expect::Providers, &reload, "edge").is_none());
    assert!(success(Expect::Reload, &reload, "edge").is_some());
    // Bounds and vocabulary.
    for bad in [
        json!({"runner": "local", "plugins": [{"plugin": "FX", "name": "n", "status": "ready"}]}),
        json!({"runner": "local", "plugins": [{"plugin": "fx", "name": "n".repeat(129), "status": "ready"}]}),
        json!({"runner": "local", "plugins": [{"plugin": "fx", "name": "n", "status": "failed", "errorCode": "x"}]}),
        json!({"runner": "local", "plugins": [{"plugin": "fx", "name": "n", "status": "odd"}]}),
        json!({"runner": "local"}),
    ] {
        assert!(success(Expect::Providers, &bad, "edge").is_none(), "{bad}");
    }
    let detail = json!({"plugin": "fx", "name": "F", "status": "ready", "toolCount": 1,
                        "tools": [{"name": "echo", "title": "Echo", "description": "d"}]});
    assert_eq!(
        success(Expect::ProviderDetail { plugin: "fx" }, &detail, "edge")
            .unwrap()
            .to_json()["tools"],
        json!([{"name": "echo", "title": "Echo"}])
    );
    assert!(success(Expect::ProviderDetail { plugin: "other" }, &detail, "edge").is_none());
    let mut miscounted = detail.clone();
    miscounted["toolCount"] = json!(2);
    assert!(success(Expect::ProviderDetail { plugin: "fx" }, &miscounted, "edge").is_none());
}

#[test]
fn a_describe_admits_its_tool_like_a_local_one() {
    let answer = |tool: Value| {
        json!({"runner": "local", "plugin": "fx", "pluginName": "F", "tool": tool,
               "binding": "wc_pbind_remote", "leak": "dropped"})
    };
    let good = answer(json!({"name": "echo", "inputSchema": {"type": "object"}}));
    let described = describe(&good, "fx", "echo", "edge").unwrap();
    assert_eq!(described.binding, "wc_pbind_remote");
    let out = Outcome::Described(Box::new(described)).to_json();
    assert!(out.get("leak").is_none());
    assert_eq!(out["runner"], json!("edge"));
    for bad in [
        answer(json!({"name": "echo", "inputSchema": {"type": "object"}, "x": 1})),
        answer(json!({"name": "echo", "inputSchema": {"type": "object", "oneOf": []}})),
        answer(json!({"name": "other", "inputSchema": {"type": "object"}})),
    ] {
        assert!(describe(&bad, "fx", "echo", "edge").is_none(), "{bad}");
    }
}

#[test]
fn a_bound_describe_carries_its_project_and_target_or_is_refused() {
    let target = "wc_proot_00112233445566778899aabbccddeeff";
    let answer = |extra: Value| {
        let mut out = json!({"runner": "local", "plugin": "fx", "pluginName": "F",
            "tool": {"name": "echo", "inputSchema": {"type": "object"}},
            "binding": "wc_pbind_remote"});
        for (key, value) in extra.as_object().unwrap() {
            out[key] = value.clone();
        }
        out
    };
    let bound = describe(
        &answer(json!({"project": "/srv/app", "projectTarget": target})),
        "fx",
        "echo",
        "edge",
    )
    .unwrap();
    let project = bound.project.clone().unwrap();
    assert_eq!(
        (project.project.as_str(), project.target.as_str()),
        ("/srv/app", target)
    );
    let out = Outcome::Described(Box::new(bound)).to_json();
    assert_eq!(out["project"], "/srv/app");
    assert_eq!(out["projectTarget"], target);
    assert!(describe(&answer(json!({})), "fx", "echo", "edge")
        .unwrap()
        .project
        .is_none());
    for bad in [
        json!({"project": "/srv/app"}),
        json!({"projectTarget": target}),
        json!({"project": "/srv/app", "projectTarget": "wc_proot_x"}),
        json!({"project": "", "projectTarget": target}),
        json!({"project": "/a\nb", "projectTarget": target}),
        json!({"project": 1, "projectTarget": target}),
    ] {
        assert!(
            describe(&answer(bad.clone()), "fx", "echo", "edge").is_none(),
            "{bad}"
        );
    }
}

#[test]
fn check_and_catalog_outputs() {
    let ready = json!({"runner": "local", "plugin": "fx", "ready": true, "phase": "ready",
        "toolCount": 1, "tools": [{"name": "echo"}],
        "catalogDigest": format!("sha256:{}", "a".repeat(64))});
    let out = success(Expect::Check { plugin: "fx" }, &ready, "edge")
        .unwrap()
        .to_json();
    assert_eq!(out["runner"], json!("edge"));
    assert_eq!(out["catalogDigest"], ready["catalogDigest"]);
    let not_ready = json!({"runner": "local", "plugin": "fx", "ready": false,
        "phase": "tools_list", "toolCount": 0, "tools": [], "code": "plugin_tools_list_invalid",
        "detail": "bad\ttool", "diagnostic": {"code": "invalid_tool_name", "field": "name"}});
    let out = success(Expect::Check { plugin: "fx" }, &not_ready, "edge")
        .unwrap()
        .to_json();
    assert_eq!(out["detail"], json!("bad tool"));
    assert_eq!(
        out["diagnostic"],
        json!({"code": "invalid_tool_name", "field": "name"})
    );
    let mut lying = not_ready.clone();
    lying["diagnostic"]["field"] = json!("command");
    assert!(success(Expect::Check { plugin: "fx" }, &lying, "edge").is_none());
    let catalog = json!({"tools": [{"plugin": "fx", "name": "F", "tool": "echo",
        "description": "d", "annotations": {"readOnlyHint": true}}],
        "totalCount": 1, "catalogRevision": "wc_plugcat_abc", "runner": "local"});
    assert_eq!(
        success(Expect::Catalog, &catalog, "edge")
            .unwrap()
            .to_json()["runner"],
        json!("edge")
    );
    let mut bad = catalog.clone();
    bad["tools"][0]["annotations"] = json!({"command": "rm -rf"});
    assert!(success(Expect::Catalog, &bad, "edge").is_none());
}

#[test]
fn secrets_are_found_in_strings_and_keys() {
    let secret = "tok-123";
    assert!(contains_secret(
        &json!({"a": ["x", {"b": "..tok-123.."}]}),
        secret
    ));
    assert!(contains_secret(&json!({"tok-123": 1}), secret));
    assert!(!contains_secret(&json!({"a": "tok-12"}), secret));
    assert!(!contains_secret(&json!({"a": ""}), ""));
}
