//! Sealed bindings against a real host running the fixture plugin: a gateway given a sealer
//! seals what a describe found instead of storing it, and opens it again on a call, on any
//! gateway of the process that holds the same sealer. The sealer here is the test's own
//! (reversible, not secret): the box itself is `webcodex_plugin_http::cluster`'s business and
//! is tested there.

use crate::gateway_support;

use std::sync::Arc;

use serde_json::json;
use webcodex_plugin_host::{BindingSealer, Gateway, SealedTarget};

use gateway_support::*;

/// `wc_pbind_T` and the contents in hex; opens only that form (also the sealer of the
/// project-bound tests' sealing gateways).
pub(crate) struct HexSealer;

impl BindingSealer for HexSealer {
    fn seal(&self, contents: &[u8]) -> Option<String> {
        let hex: String = contents.iter().map(|b| format!("{b:02x}")).collect();
        Some(format!("wc_pbind_T{hex}"))
    }

    fn open(&self, binding: &str) -> Option<Vec<u8>> {
        let hex = binding.strip_prefix("wc_pbind_T")?;
        if hex.len() % 2 != 0 {
            return None;
        }
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect()
    }
}

fn sealing(gateway: Gateway) -> Gateway {
    assert!(gateway.seal_bindings(Arc::new(HexSealer)));
    assert!(gateway.seals_bindings());
    gateway
}

fn call(gateway: &Gateway, binding: &str) -> serde_json::Value {
    ok(
        gateway,
        json!({"action":"call","binding":binding,"arguments":{"text":"hi"}}),
    )
}

#[test]
fn a_sealed_binding_calls_its_tool_on_every_gateway_of_its_host() {
    let host = host(config(vec![provider("alpha", &["normal"])], &[]));
    let first = sealing(Gateway::single(host.clone()));
    let second = sealing(Gateway::single(host));
    let binding = bind(&first, "alpha", "echo");
    assert!(binding.starts_with("wc_pbind_T"), "{binding}");
    assert!(!is_binding(&binding), "not a stored binding: {binding}");
    let contents = HexSealer.open(&binding).unwrap();
    match SealedTarget::decode(&contents).unwrap() {
        SealedTarget::Local {
            runner,
            plugin,
            tool,
            project,
            ..
        } => assert_eq!(
            (runner.as_str(), plugin.as_str(), tool.as_str(), project),
            ("local", "alpha", "echo", None)
        ),
        other => panic!("{other:?}"),
    }
    let expected = call(&first, &binding);
    assert_eq!(call(&second, &binding), expected);
    assert_eq!(expected["isError"], false, "{expected}");
    // A gateway that seals cannot be given another sealer.
    assert!(!first.seal_bindings(Arc::new(HexSealer)));
}

#[test]
fn no_count_evicts_a_sealed_binding() {
    let gw = sealing(gateway(vec![provider("alpha", &["normal"])]));
    let first = bind(&gw, "alpha", "echo");
    for _ in 0..600 {
        bind(&gw, "alpha", "echo");
    }
    call(&gw, &first);
}

#[test]
fn what_does_not_open_is_describe_required_and_what_changed_is_plugin_replaced() {
    let gw = sealing(gateway(vec![provider("alpha", &["normal"])]));
    let stored = Gateway::single(host(config(vec![provider("alpha", &["normal"])], &[])));
    let stored_binding = bind(&stored, "alpha", "echo");
    let sealed = bind(&gw, "alpha", "echo");
    let project = {
        let mut target = SealedTarget::decode(&HexSealer.open(&sealed).unwrap()).unwrap();
        if let SealedTarget::Local { project, .. } = &mut target {
            *project = Some(b"/srv/project".to_vec());
        }
        HexSealer.seal(&target.encode().unwrap()).unwrap()
    };
    for binding in [
        stored_binding.as_str(),
        "wc_pbind_Tzz",
        "wc_pbind_T00",
        &sealed[..sealed.len() - 2],
        project.as_str(),
    ] {
        let out = fail(
            &gw,
            json!({"action":"call","binding":binding,"arguments":{"text":"hi"}}),
        );
        assert_eq!(code(&out), "describe_required", "{binding}: {out}");
        assert_eq!(out["dispatch"], "not_started");
    }
    // Another runner name, another host instance: replaced.
    let renamed = {
        let mut target = SealedTarget::decode(&HexSealer.open(&sealed).unwrap()).unwrap();
        if let SealedTarget::Local { runner, .. } = &mut target {
            *runner = "elsewhere".into();
        }
        HexSealer.seal(&target.encode().unwrap()).unwrap()
    };
    let other_host = {
        let mut target = SealedTarget::decode(&HexSealer.open(&sealed).unwrap()).unwrap();
        if let SealedTarget::Local { runner_id, .. } = &mut target {
            *runner_id += 1000;
        }
        HexSealer.seal(&target.encode().unwrap()).unwrap()
    };
    for binding in [renamed, other_host] {
        let out = fail(
            &gw,
            json!({"action":"call","binding":binding,"arguments":{"text":"hi"}}),
        );
        assert_eq!(code(&out), "plugin_replaced", "{out}");
    }
    // A reload replaces the provider instance: the binding of the old one is replaced.
    ok(&gw, json!({"action":"reload","runner":"local"}));
    let out = fail(
        &gw,
        json!({"action":"call","binding":sealed,"arguments":{"text":"hi"}}),
    );
    assert_eq!(code(&out), "plugin_replaced", "{out}");
    call(&gw, &bind(&gw, "alpha", "echo"));
}
