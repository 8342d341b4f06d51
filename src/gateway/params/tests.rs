use serde_json::json;

use super::*;

const TARGET: &str = "wc_proot_00112233445566778899aabbccddeeff";

fn parse(v: Value) -> Result<Action, Error> {
    Action::parse(&v)
}

fn invalid_message(v: Value) -> String {
    let e = parse(v).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArguments);
    assert_eq!(e.dispatch(), crate::Dispatch::NotStarted);
    e.message().to_string()
}

#[test]
fn list_without_fields_lists_runners() {
    assert_eq!(
        parse(json!({"action":"list"})).unwrap(),
        Action::List {
            runner: None,
            plugin: None
        }
    );
}

#[test]
fn list_with_runner_and_plugin() {
    assert_eq!(
        parse(json!({"action":"list","runner":"local","plugin":"p"})).unwrap(),
        Action::List {
            runner: Some("local".into()),
            plugin: Some("p".into())
        }
    );
}

#[test]
fn list_plugin_needs_runner() {
    let m = invalid_message(json!({"action":"list","plugin":"p"}));
    assert!(m.contains("`plugin`") && m.contains("`runner`"), "{m}");
}

#[test]
fn describe_needs_runner_plugin_and_tool() {
    assert_eq!(
        parse(json!({"action":"describe","runner":"local","plugin":"p","tool":"t"})).unwrap(),
        Action::Describe {
            runner: "local".into(),
            plugin: "p".into(),
            tool: "t".into(),
            project: None,
        }
    );
    for missing in ["runner", "plugin", "tool"] {
        let mut v = json!({"action":"describe","runner":"local","plugin":"p","tool":"t"});
        v.as_object_mut().unwrap().remove(missing);
        let m = invalid_message(v);
        assert!(m.contains(&format!("`{missing}` is required")), "{m}");
        assert!(m.contains("`describe`"), "{m}");
    }
}

#[test]
fn call_takes_binding_arguments_and_session() {
    assert_eq!(
        parse(json!({"action":"call","binding":"b","arguments":{"a":1},
                         "recording_session_id":"s1"}))
        .unwrap(),
        Action::Call {
            binding: "b".into(),
            arguments: json!({"a":1}),
            recording_session_id: Some("s1".into()),
            project_target: None,
        }
    );
}

#[test]
fn call_arguments_must_be_an_object() {
    for args in [json!([]), json!("x"), json!(1), json!(null)] {
        let m = invalid_message(json!({"action":"call","binding":"b","arguments":args}));
        assert!(m.contains("`arguments`"), "{m}");
    }
    let m = invalid_message(json!({"action":"call","binding":"b"}));
    assert!(m.contains("`arguments` is required"), "{m}");
}

#[test]
fn call_forbids_runner_plugin_and_tool() {
    for field in ["runner", "plugin", "tool"] {
        let mut v = json!({"action":"call","binding":"b","arguments":{}});
        v[field] = json!("x");
        let m = invalid_message(v);
        assert_eq!(
            m,
            format!("field `{field}` is not allowed for action `call`")
        );
    }
}

#[test]
fn check_and_reload_need_runner() {
    assert_eq!(
        parse(json!({"action":"check","runner":"local","plugin":"p"})).unwrap(),
        Action::Check {
            runner: "local".into(),
            plugin: "p".into(),
            recording_session_id: None
        }
    );
    assert_eq!(
        parse(json!({"action":"reload","runner":"local","recording_session_id":"s"})).unwrap(),
        Action::Reload {
            runner: "local".into(),
            recording_session_id: Some("s".into())
        }
    );
    assert!(invalid_message(json!({"action":"reload"})).contains("`runner` is required"));
    assert!(
        invalid_message(json!({"action":"check","plugin":"p"})).contains("`runner` is required")
    );
    assert!(invalid_message(json!({"action":"check","runner":"local"}))
        .contains("`plugin` is required"));
}

#[test]
fn catalog_needs_runner_and_project() {
    assert_eq!(
        parse(json!({"action":"catalog","runner":"local","project":"/p"})).unwrap(),
        Action::Catalog {
            runner: "local".into(),
            project: "/p".into()
        }
    );
    assert!(
        invalid_message(json!({"action":"catalog","runner":"local"}))
            .contains("`project` is required")
    );
}

#[test]
fn every_field_not_allowed_for_an_action_is_named() {
    let all = [
        "runner",
        "plugin",
        "tool",
        "binding",
        "arguments",
        "recording_session_id",
        "project",
        "project_target",
    ];
    for kind in ActionKind::ALL {
        for field in all {
            if kind.fields().contains(&field) {
                continue;
            }
            let v = json!({"action": kind.as_str(), field: "x"});
            let m = invalid_message(v);
            assert_eq!(
                m,
                format!(
                    "field `{field}` is not allowed for action `{}`",
                    kind.as_str()
                )
            );
        }
        let m = invalid_message(json!({"action": kind.as_str(), "extra": 1}));
        assert!(m.contains("`extra`") && m.contains(kind.as_str()), "{m}");
    }
}

#[test]
fn recording_session_id_only_on_call_check_reload() {
    for kind in [ActionKind::List, ActionKind::Describe, ActionKind::Catalog] {
        let m = invalid_message(json!({"action": kind.as_str(), "recording_session_id":"s"}));
        assert!(m.contains("`recording_session_id` is not allowed"), "{m}");
    }
}

#[test]
fn recording_session_id_must_be_a_sane_string() {
    for bad in [json!(""), json!(1), json!("a\nb"), json!("x".repeat(257))] {
        let m = invalid_message(json!({"action":"reload","runner":"local",
                                           "recording_session_id": bad}));
        assert!(m.contains("`recording_session_id`"), "{m}");
    }
}

#[test]
fn action_is_required_and_must_be_known() {
    assert!(invalid_message(json!({})).contains("`action` is required"));
    assert!(invalid_message(json!({"action":1})).contains("must be a string"));
    assert!(invalid_message(json!({"action":"delete"})).contains("unknown action"));
    assert!(invalid_message(json!([])).contains("JSON object"));
    assert!(invalid_message(json!(null)).contains("JSON object"));
}

#[test]
fn wrong_types_are_invalid_arguments() {
    let m = invalid_message(json!({"action":"list","runner":1}));
    assert_eq!(m, "field `runner` must be a string for action `list`");
    let m = invalid_message(json!({"action":"describe","runner":"l","plugin":null,"tool":"t"}));
    assert!(m.contains("`plugin` must be a string"), "{m}");
    let m = invalid_message(json!({"action":"call","binding":5,"arguments":{}}));
    assert!(m.contains("`binding` must be a string"), "{m}");
}

#[test]
fn echoed_field_names_are_bounded_and_clean() {
    let long = format!("a\u{1}{}", "b".repeat(500));
    let m = invalid_message(json!({"action":"list", long: 1}));
    assert!(!m.chars().any(char::is_control));
    assert!(m.len() < 200, "{m}");
}

#[test]
fn scopes_per_action() {
    assert_eq!(ActionKind::List.scope(), Scope::Inspect);
    assert_eq!(ActionKind::Describe.scope(), Scope::Inspect);
    assert_eq!(ActionKind::Catalog.scope(), Scope::Inspect);
    assert_eq!(ActionKind::Call.scope(), Scope::Invoke);
    assert_eq!(ActionKind::Check.scope(), Scope::Manage);
    assert_eq!(ActionKind::Reload.scope(), Scope::Manage);
}

#[test]
fn borrowed_parse_borrows_and_agrees_with_the_owned_one() {
    let params = json!({"action":"call","binding":"b","arguments":{"a":[1,2]},
                            "recording_session_id":"s1"});
    let action = ActionRef::parse(&params).unwrap();
    let ActionRef::Call {
        binding,
        arguments,
        recording_session_id,
        ..
    } = action
    else {
        panic!("not a call: {action:?}");
    };
    // The arguments and strings point into the parameters: nothing was copied.
    assert!(std::ptr::eq(arguments, &params["arguments"]));
    assert!(std::ptr::eq(binding, params["binding"].as_str().unwrap()));
    assert_eq!(recording_session_id, Some("s1"));
    assert_eq!(action.kind(), ActionKind::Call);
    assert_eq!(action.recording_session_id(), Some("s1"));

    let samples = [
        json!({"action":"list"}),
        json!({"action":"list","runner":"r"}),
        json!({"action":"list","runner":"r","plugin":"p"}),
        json!({"action":"describe","runner":"r","plugin":"p","tool":"t"}),
        json!({"action":"call","binding":"b","arguments":{}}),
        json!({"action":"call","binding":"b","arguments":{"x":{"y":[null]}},
                   "recording_session_id":"s"}),
        json!({"action":"check","runner":"r","plugin":"p"}),
        json!({"action":"check","runner":"r","plugin":"p","recording_session_id":"s"}),
        json!({"action":"reload","runner":"r"}),
        json!({"action":"reload","runner":"r","recording_session_id":"s"}),
        json!({"action":"catalog","runner":"r","project":"/p"}),
        json!({"action":"describe","runner":"r","plugin":"p","tool":"t","project":"/p"}),
        json!({"action":"call","binding":"b","arguments":{},"project_target":TARGET}),
    ];
    for params in samples {
        let borrowed = ActionRef::parse(&params).unwrap();
        let owned = Action::parse(&params).unwrap();
        assert_eq!(borrowed.into_action(), owned);
        assert_eq!(borrowed.kind(), owned.kind());
        assert_eq!(
            borrowed.recording_session_id(),
            owned.recording_session_id()
        );
    }
}

#[test]
fn no_action_has_more_fields_than_the_slots() {
    for kind in ActionKind::ALL {
        assert!(kind.fields().len() <= MAX_FIELDS, "{kind:?}");
    }
}

#[test]
fn the_first_field_not_allowed_in_key_order_is_named() {
    // Keys iterate in map order (sorted without `preserve_order`); the first bad one wins,
    // even after allowed ones and whatever the allowed ones hold.
    let v = json!({"action":"call","binding":5,"zz":1,"aa":2,"arguments":[]});
    let first = serde_json::from_value::<serde_json::Map<String, Value>>(v.clone())
        .unwrap()
        .keys()
        .find(|k| !["action", "binding", "arguments"].contains(&k.as_str()))
        .cloned()
        .unwrap();
    assert_eq!(
        invalid_message(v),
        format!("field `{first}` is not allowed for action `call`")
    );
}

#[test]
fn action_names_parse_to_their_kinds() {
    for kind in ActionKind::ALL {
        assert_eq!(ActionKind::parse(kind.as_str()), Some(kind));
    }
    for name in ["", "List", "lis", "lists", "call ", "describe\0"] {
        assert_eq!(ActionKind::parse(name), None, "{name:?}");
    }
}

#[test]
fn a_field_slot_is_its_place_in_the_fields_of_its_action() {
    let mut names: Vec<&str> = ActionKind::ALL
        .iter()
        .flat_map(|kind| kind.fields().iter().copied())
        .collect();
    names.extend([
        "action",
        "",
        "runners",
        "Binding",
        "recording_session_i",
        "tool\0",
    ]);
    for kind in ActionKind::ALL {
        for name in &names {
            let place = kind.fields().iter().position(|field| field == name);
            assert_eq!(kind.slot(name), place, "{kind:?} {name}");
        }
    }
}

/// The parse before the single pass: `action` looked up first, then every other member in key
/// order against the action's field list (the reference of the test below).
fn reference_parse(params: &Value) -> Result<Action, Error> {
    let map = params
        .as_object()
        .ok_or_else(|| invalid("the parameters must be a JSON object".to_string()))?;
    let kind = match map.get("action") {
        None => return Err(invalid("field `action` is required".to_string())),
        Some(Value::String(name)) => ActionKind::parse(name).ok_or_else(|| {
            invalid("unknown action; use list, describe, call, check, reload or catalog".into())
        })?,
        Some(_) => return Err(invalid("field `action` must be a string".to_string())),
    };
    for key in map.keys().filter(|key| *key != "action") {
        if !kind.fields().contains(&key.as_str()) {
            return Err(invalid(format!(
                "field `{}` is not allowed for action `{}`",
                echo(key),
                kind.as_str()
            )));
        }
    }
    // The fields themselves are read as before (their reading did not change).
    Action::parse(params)
}

#[test]
fn the_single_pass_agrees_with_looking_action_up_first() {
    let names = [
        "action",
        "runner",
        "plugin",
        "tool",
        "binding",
        "arguments",
        "recording_session_id",
        "project",
        "project_target",
        "",
        "aa",
        "zz",
        "Action",
        "runners",
    ];
    let actions = [
        json!("list"),
        json!("call"),
        json!("describe"),
        json!("check"),
        json!("reload"),
        json!("catalog"),
        json!("nope"),
        json!(1),
    ];
    let values = [
        json!("s"),
        json!({}),
        json!(1),
        json!(null),
        json!("id"),
        json!("/abs"),
        json!(TARGET),
    ];
    let mut seed = 11u64;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize % n
    };
    for _ in 0..20_000 {
        let mut map = serde_json::Map::new();
        for _ in 0..next(7) {
            let name = names[next(names.len())];
            let value = match name {
                "action" => actions[next(actions.len())].clone(),
                _ => values[next(values.len())].clone(),
            };
            map.insert(name.to_string(), value);
        }
        let params = Value::Object(map);
        let (new, old) = (Action::parse(&params), reference_parse(&params));
        match (&new, &old) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{params}"),
            (Err(a), Err(b)) => assert_eq!(a.message(), b.message(), "{params}"),
            _ => panic!("{params}: {new:?} against {old:?}"),
        }
    }
}

/// The plain serde reading of `plugin_tool` parameters: a tagged enum with the fields of each
/// action, unknown fields denied, then the rules a type does not say (`plugin` needs `runner`;
/// a session id is 1..=256 bytes without control characters; a `project` is an absolute path of
/// some platform, at most `MAX_PROJECT_BYTES` without control characters; a `project_target` is
/// of its form). The oracle of the one-pass parse: the same parameters accepted, read as the
/// same action.
mod serde_oracle {
    use serde::{Deserialize, Deserializer};
    use serde_json::{Map, Value};

    use super::super::{Action, MAX_PROJECT_BYTES, MAX_RECORDING_SESSION_ID_BYTES};

    /// A present field must be a string (`null` is no absent field).
    fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        String::deserialize(d).map(Some)
    }

    #[derive(Deserialize)]
    #[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
    enum Params {
        List {
            #[serde(default, deserialize_with = "present")]
            runner: Option<String>,
            #[serde(default, deserialize_with = "present")]
            plugin: Option<String>,
        },
        Describe {
            runner: String,
            plugin: String,
            tool: String,
            #[serde(default, deserialize_with = "present")]
            project: Option<String>,
        },
        Call {
            binding: String,
            arguments: Map<String, Value>,
            #[serde(default, deserialize_with = "present")]
            recording_session_id: Option<String>,
            #[serde(default, deserialize_with = "present")]
            project_target: Option<String>,
        },
        Check {
            runner: String,
            plugin: String,
            #[serde(default, deserialize_with = "present")]
            recording_session_id: Option<String>,
        },
        Reload {
            runner: String,
            #[serde(default, deserialize_with = "present")]
            recording_session_id: Option<String>,
        },
        Catalog {
            runner: String,
            project: String,
        },
    }

    fn session_ok(id: &Option<String>) -> bool {
        id.as_deref().is_none_or(|id| {
            (1..=MAX_RECORDING_SESSION_ID_BYTES).contains(&id.len())
                && !id.chars().any(char::is_control)
        })
    }

    fn project_ok(project: &Option<String>) -> bool {
        project.as_deref().is_none_or(|p| {
            let b = p.as_bytes();
            let drive = b.len() >= 3
                && b[0].is_ascii_alphabetic()
                && b[1] == b':'
                && (b[2] == b'/' || b[2] == b'\\');
            let absolute = b.first() == Some(&b'/') || b.starts_with(b"\\\\") || drive;
            absolute && p.len() <= MAX_PROJECT_BYTES && !p.chars().any(char::is_control)
        })
    }

    fn target_ok(target: &Option<String>) -> bool {
        target
            .as_deref()
            .is_none_or(crate::host::valid_project_target)
    }

    /// What serde and the rules make of `params`; `None` for a rejection.
    pub(super) fn parse(params: &Value) -> Option<Action> {
        Some(match Params::deserialize(params).ok()? {
            Params::List { runner, plugin } if plugin.is_none() || runner.is_some() => {
                Action::List { runner, plugin }
            }
            Params::List { .. } => return None,
            Params::Describe {
                runner,
                plugin,
                tool,
                project,
            } => Action::Describe {
                runner,
                plugin,
                tool,
                project: Some(project).filter(project_ok)?,
            },
            Params::Call {
                binding,
                arguments,
                recording_session_id,
                project_target,
            } => Action::Call {
                binding,
                arguments: Value::Object(arguments),
                recording_session_id: Some(recording_session_id).filter(session_ok)?,
                project_target: Some(project_target).filter(target_ok)?,
            },
            Params::Check {
                runner,
                plugin,
                recording_session_id,
            } => Action::Check {
                runner,
                plugin,
                recording_session_id: Some(recording_session_id).filter(session_ok)?,
            },
            Params::Reload {
                runner,
                recording_session_id,
            } => Action::Reload {
                runner,
                recording_session_id: Some(recording_session_id).filter(session_ok)?,
            },
            Params::Catalog { runner, project } => Action::Catalog { runner, project },
        })
    }
}

/// Parameters near the contract: an action (one of the six, now and then another or none),
/// most of its fields and now and then another one, values of every JSON type (strings empty,
/// long, with control characters).
fn params_strategy() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let value = || {
        prop_oneof![
            12 => "[a-z]{1,6}".prop_map(Value::from),
            1 => Just(json!("")),
            1 => Just(json!("a\u{7}b")),
            1 => Just(Value::from("s".repeat(MAX_RECORDING_SESSION_ID_BYTES + 1))),
            1 => Just(Value::from("s".repeat(MAX_RECORDING_SESSION_ID_BYTES))),
            // Paths of each platform's absolute forms and relative ones, project targets.
            2 => prop::sample::select(vec![
                "/srv/a", "/", "C:\\w", "d:/w", "\\\\s\\x", "C:", "c:x", "1:/x", "./x", "\\x",
            ])
            .prop_map(Value::from),
            1 => Just(Value::from(format!("/{}", "p".repeat(MAX_PROJECT_BYTES)))),
            1 => Just(Value::from(format!("/{}", "p".repeat(MAX_PROJECT_BYTES - 1)))),
            2 => Just(json!(TARGET)),
            3 => Just(json!({"a": 1})),
            1 => Just(json!([])),
            1 => Just(json!(null)),
            1 => Just(json!(7)),
        ]
    };
    let kind = prop::sample::select(ActionKind::ALL.to_vec());
    let other = prop::sample::select(vec!["tool", "project", "binding", "", "Action", "runners"]);
    let action = prop_oneof![
        12 => Just(None),
        1 => Just(Some(json!("nope"))),
        1 => Just(Some(json!(1))),
        1 => Just(Some(Value::Null)),
    ];
    (
        kind,
        action,
        prop::collection::vec((prop::bool::weighted(0.8), value()), 4),
        prop::option::weighted(0.15, (other, value())),
    )
        .prop_map(|(kind, action, fields, extra)| {
            let mut map = serde_json::Map::new();
            // `None`: the action's own name; `Null`: no action field at all.
            match action {
                None => drop(map.insert("action".into(), kind.as_str().into())),
                Some(Value::Null) => {}
                Some(other) => drop(map.insert("action".into(), other)),
            }
            for (name, (present, value)) in kind.fields().iter().zip(fields) {
                if present {
                    map.insert(name.to_string(), value);
                }
            }
            if let Some((name, value)) = extra {
                map.insert(name.to_string(), value);
            }
            Value::Object(map)
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

    /// The one-pass parse accepts what the serde reading accepts, as the same action, and
    /// refuses the rest as `invalid_arguments`.
    #[test]
    fn the_one_pass_parse_agrees_with_serde(params in params_strategy()) {
        let parsed = Action::parse(&params);
        let expected = serde_oracle::parse(&params);
        match (&parsed, expected) {
            (Ok(action), Some(expected)) => proptest::prop_assert_eq!(action, &expected),
            (Err(e), None) => proptest::prop_assert_eq!(e.code(), ErrorCode::InvalidArguments),
            (parsed, expected) => proptest::prop_assert!(
                false,
                "{} gives {:?}, serde {:?}", params, parsed, expected
            ),
        }
    }
}

#[test]
fn describe_takes_an_optional_absolute_project() {
    for project in [
        "/srv/app",
        "/",
        "C:\\work\\app",
        "d:/work",
        "\\\\server\\share\\app",
    ] {
        let v = json!({"action":"describe","runner":"r","plugin":"p","tool":"t","project":project});
        assert_eq!(
            parse(v).unwrap(),
            Action::Describe {
                runner: "r".into(),
                plugin: "p".into(),
                tool: "t".into(),
                project: Some(project.into()),
            },
            "{project}"
        );
    }
    let long = format!("/{}", "a".repeat(MAX_PROJECT_BYTES));
    for bad in [
        json!(""),
        json!("relative/dir"),
        json!("./x"),
        json!("C:relative"),
        json!("1:/x"),
        json!("/a\nb"),
        json!("/a\u{0}b"),
        json!(long),
    ] {
        let v = json!({"action":"describe","runner":"r","plugin":"p","tool":"t","project":bad});
        let m = invalid_message(v);
        assert!(m.contains("`project`") && m.contains("absolute"), "{m}");
    }
    let m = invalid_message(
        json!({"action":"describe","runner":"r","plugin":"p","tool":"t",
        "project":["/x"]}),
    );
    assert!(m.contains("`project` must be a string"), "{m}");
}

#[test]
fn call_takes_an_optional_project_target_of_its_form() {
    let v = json!({"action":"call","binding":"b","arguments":{},"project_target":TARGET});
    let Action::Call { project_target, .. } = parse(v).unwrap() else {
        panic!("not a call");
    };
    assert_eq!(project_target.as_deref(), Some(TARGET));
    for bad in [
        json!("wc_proot_"),
        json!("wc_proot_00112233445566778899AABBCCDDEEFF"),
        json!("wc_pbind_00112233445566778899aabbccddeeff"),
        json!(format!("{TARGET}0")),
        json!(1),
    ] {
        let v = json!({"action":"call","binding":"b","arguments":{},"project_target":bad});
        let m = invalid_message(v);
        assert!(m.contains("`project_target`"), "{m}");
    }
    // Only a call takes it; only describe and catalog take a project.
    let m = invalid_message(
        json!({"action":"describe","runner":"r","plugin":"p","tool":"t",
        "project_target":TARGET}),
    );
    assert!(m.contains("not allowed"), "{m}");
    let m = invalid_message(json!({"action":"call","binding":"b","arguments":{},"project":"/x"}));
    assert!(m.contains("not allowed"), "{m}");
}
