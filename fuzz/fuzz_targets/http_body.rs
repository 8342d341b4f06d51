//! The HTTP request body of `POST /api/tools/call`.
//!
//! The input is the body. It is answered by a gateway whose runner has no providers, for a
//! caller holding every scope, exactly as the HTTP transport answers a read body: the status
//! is one of 200/400/403/503 (never 500: that is a caught panic), the body is
//! `{"id"?,"success","output"}`, and every failure carries a stable code and its dispatch.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use webcodex_plugin_host::parse_runner_config;
use webcodex_plugin_host::Dispatcher;
use webcodex_plugin_host::{Caller, Gateway};
use webcodex_plugin_host::{ConfigSource, Host, HostOptions};
use webcodex_plugin_http::__private::fuzz_answer_body;

fn dispatcher() -> &'static Dispatcher {
    static DISPATCHER: OnceLock<Dispatcher> = OnceLock::new();
    DISPATCHER.get_or_init(|| {
        let config = parse_runner_config("", 8).expect("an empty runner.toml is valid");
        let options = HostOptions {
            base_env: Some(Vec::new()),
            ..HostOptions::default()
        };
        let host = Host::start(ConfigSource::Fixed(config), options).expect("host starts");
        Dispatcher::new(Arc::new(Gateway::single(Arc::new(host))))
    })
}

fuzz_target!(|data: &[u8]| {
    let (status, response) = fuzz_answer_body(dispatcher(), &Caller::trusted(), data);
    assert!(
        matches!(status, 200 | 400 | 403 | 503),
        "unexpected status {status}"
    );
    let Value::Object(body) = &response else {
        panic!("the response body is an object");
    };
    assert!(body
        .keys()
        .all(|k| matches!(k.as_str(), "id" | "success" | "output")));
    let success = body["success"].as_bool().expect("success is a boolean");
    assert_eq!(success, status == 200);
    let output = &body["output"];
    if !success {
        assert!(output["error"]["code"]
            .as_str()
            .is_some_and(|c| !c.is_empty()));
        assert!(output["error"]["message"].is_string());
        assert!(matches!(
            output["dispatch"].as_str(),
            Some("not_started" | "outcome_unknown" | "completed")
        ));
    }
    // The response echoes the request's id, and nothing else of it.
    if let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(data) {
        assert_eq!(body.get("id"), request.get("id"));
    }
});
