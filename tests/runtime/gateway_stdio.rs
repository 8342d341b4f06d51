//! The JSON-lines transport: concurrency, ids, malformed lines, saturation, EOF.

use crate::gateway_support;

use std::io::Cursor;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use webcodex_plugin_host::{serve_lines, MAX_IN_FLIGHT};
use webcodex_plugin_host::{Caller, Gateway};

use gateway_support::*;

/// `serve_lines` in process, for the trusted caller.
struct Served(PipedTransport);

fn serve(gateway: Arc<Gateway>) -> Served {
    Served(PipedTransport::start(move |input, sink| {
        serve_lines(gateway, Caller::trusted(), input, sink)
    }))
}

impl Served {
    fn send(&mut self, line: &str) {
        self.0.send_line(line);
    }

    fn request(&mut self, id: Value, params: Value) {
        self.send(&json!({"id": id, "tool": "plugin_tool", "params": params}).to_string());
    }

    fn next(&self) -> Value {
        self.0.next_within(Duration::from_secs(10))
    }

    fn finish(self) -> Vec<Value> {
        self.0.finish()
    }
}

#[test]
fn a_slow_call_does_not_block_a_list() {
    let gw = Arc::new(gateway(vec![provider("alpha", &["normal"])]));
    let sleep = bind(&gw, "alpha", "sleep");
    let mut served = serve(gw);
    served.request(
        json!(1),
        json!({"action":"call","binding":sleep,"arguments":{"ms":3000}}),
    );
    served.request(json!("two"), json!({"action":"list","runner":"local"}));
    let first = served.next();
    assert_eq!(first["id"], "two");
    assert_eq!(first["success"], true);
    assert_eq!(first["output"]["plugins"][0]["plugin"], "alpha");
    // The list was answered before the 3 s call: it did not wait behind it (the order is the
    // outcome; no elapsed-time bound).
    let second = served.next();
    assert_eq!(second["id"], 1);
    assert_eq!(
        second,
        json!({"id":1,"success":true,"output":{"content":[{"type":"text","text":"slept"}],
               "isError":false}})
    );
    assert!(served.finish().is_empty());
}

#[test]
fn concurrent_calls_to_one_provider_get_busy_not_queued() {
    let dir = temp_dir("busy");
    let log = dir.path("plugin-log");
    let log_text = log.display().to_string();
    let gw = Arc::new(Gateway::single(host(config(
        vec![provider("alpha", &["normal"])],
        &[("FIXTURE_LOG", &log_text)],
    ))));
    let sleep = bind(&gw, "alpha", "sleep");
    let mut served = serve(gw);
    served.request(
        json!(1),
        json!({"action":"call","binding":sleep,"arguments":{"ms":3000}}),
    );
    // The first call is at the plugin before the second is sent.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains(r#""ms":3000"#)) {
        assert!(
            Instant::now() < deadline,
            "the plugin never read the first call"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    served.request(
        json!(2),
        json!({"action":"call","binding":sleep,"arguments":{"ms":1}}),
    );
    let busy = served.next();
    assert_eq!(busy["id"], 2);
    assert_eq!(busy["output"]["error"]["code"], "plugin_provider_busy");
    assert_eq!(busy["output"]["recovery"], "retry");
    assert_eq!(served.next()["id"], 1);
    served.finish();
}

#[test]
fn eof_waits_for_in_flight_requests() {
    let gw = Arc::new(gateway(vec![provider("alpha", &["normal"])]));
    let sleep = bind(&gw, "alpha", "sleep");
    let mut served = serve(gw);
    served.request(
        json!(9),
        json!({"action":"call","binding":sleep,"arguments":{"ms":500}}),
    );
    let started = Instant::now();
    let rest = served.finish();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["id"], 9);
    assert_eq!(rest[0]["success"], true);
}

fn invalid_request(response: &Value, id: Value) {
    assert_eq!(response["id"], id, "{response}");
    assert_eq!(response["success"], false);
    assert_eq!(response["output"]["error"]["code"], "invalid_request");
    assert_eq!(response["output"]["dispatch"], "not_started");
    assert!(response["output"]["error"]["message"].is_string());
}

#[test]
fn malformed_lines_get_invalid_request_and_reading_goes_on() {
    let gw = Arc::new(gateway(vec![provider("alpha", &["normal"])]));
    let mut input = String::new();
    for line in [
        "this is not json",
        "",
        "[1,2]",
        r#"{"id":3,"params":{"action":"list"}}"#,
        r#"{"id":4,"tool":"plugin_tool"}"#,
        r#"{"id":5,"tool":"other_tool","params":{"action":"list"}}"#,
        r#"{"id":{"nested":true},"tool":7,"params":{}}"#,
    ] {
        input.push_str(line);
        input.push('\n');
    }
    input.push_str(&"x".repeat((1 << 20) + 2));
    input.push('\n');
    input.push_str(r#"{"id":6,"tool":"plugin_tool","params":{"action":"lisst"}}"#);
    input.push('\n');
    input.push_str(r#"{"id":7,"tool":"plugin_tool","params":{"action":"list"}}"#);
    // No trailing newline on the last request: it still counts.
    let (sink, rx) = JsonLineSink::new();
    serve_lines(gw, Caller::trusted(), Cursor::new(input.into_bytes()), sink).unwrap();
    let mut responses: Vec<Value> = rx.try_iter().collect();
    assert_eq!(responses.len(), 10);
    // Invalid lines are answered by the reader, in order; requests may come in any order.
    let requests: Vec<Value> = responses.drain(8..).collect();
    invalid_request(&responses[0], Value::Null);
    invalid_request(&responses[1], Value::Null);
    invalid_request(&responses[2], Value::Null);
    invalid_request(&responses[3], json!(3));
    invalid_request(&responses[4], json!(4));
    invalid_request(&responses[5], json!(5));
    invalid_request(&responses[6], json!({"nested":true}));
    invalid_request(&responses[7], Value::Null);
    assert!(responses[7]["output"]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("1 MiB"));
    let by_id = |id: i64| requests.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(by_id(6)["output"]["error"]["code"], "invalid_arguments");
    assert_eq!(
        by_id(7),
        json!({"id":7,"success":true,"output":{"runners":[{"runner":"local"}]}})
    );
}

#[test]
fn beyond_the_in_flight_bound_requests_are_saturated() {
    let gw = Arc::new(gateway(vec![provider("alpha", &["normal"])]));
    // A recording hook that blocks holds each request's slot until released.
    let (release_tx, release_rx) = crossbeam_channel::unbounded::<()>();
    let release_rx = Arc::new(Mutex::new(release_rx));
    let (entered_tx, entered_rx) = crossbeam_channel::unbounded::<()>();
    gw.set_recording_hook(Box::new(move |_| {
        let _ = entered_tx.send(());
        let _ = release_rx.lock().unwrap().recv();
    }));
    let mut served = serve(gw);
    for i in 0..MAX_IN_FLIGHT {
        served.request(
            json!(i),
            json!({"action":"reload","runner":"nope","recording_session_id":"s"}),
        );
    }
    for _ in 0..MAX_IN_FLIGHT {
        entered_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    }
    served.request(json!("extra"), json!({"action":"list"}));
    let saturated = served.next();
    assert_eq!(saturated["id"], "extra");
    assert_eq!(saturated["output"]["error"]["code"], "gateway_saturated");
    assert_eq!(saturated["output"]["dispatch"], "not_started");
    assert_eq!(saturated["output"]["recovery"], "retry");
    for _ in 0..MAX_IN_FLIGHT {
        release_tx.send(()).unwrap();
    }
    let mut ids = Vec::new();
    for _ in 0..MAX_IN_FLIGHT {
        let r = served.next();
        assert_eq!(r["output"]["error"]["code"], "plugin_runner_not_found");
        ids.push(r["id"].as_u64().unwrap());
    }
    ids.sort();
    assert_eq!(ids, (0..MAX_IN_FLIGHT as u64).collect::<Vec<_>>());
    // Slots are released: new requests are served again.
    served.request(json!("after"), json!({"action":"list"}));
    assert_eq!(served.next()["success"], true);
    served.finish();
}

#[test]
fn scopes_of_the_transport_caller_apply() {
    let gw = Arc::new(gateway(vec![provider("alpha", &["normal"])]));
    let (sink, rx) = JsonLineSink::new();
    let caller =
        Caller::new(webcodex_plugin_host::Scopes::parse("plugin:inspect,plugin:invoke").unwrap());
    let input = r#"{"id":1,"tool":"plugin_tool","params":{"action":"reload","runner":"local"}}"#;
    serve_lines(gw, caller, Cursor::new(input.as_bytes().to_vec()), sink).unwrap();
    let r = rx.try_recv().unwrap();
    assert_eq!(r["output"]["error"]["code"], "insufficient_scope");
}
