//! The MCP stdio transport in process (`mcp::serve_stdio` over pipes): the in-flight bound,
//! cancellation that never interrupts a call (proved by the recording hook), scopes as over the
//! JSON-lines gateway, and the leak canary over every MCP output.

use crate::gateway_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use webcodex_plugin_host::Dispatch;
use webcodex_plugin_host::{serve_lines, MAX_IN_FLIGHT};
use webcodex_plugin_host::{Caller, Gateway, RecordingEvent, Scopes};
use webcodex_plugin_mcp::serve_stdio;

use gateway_support::*;

/// `mcp::serve_stdio` in process.
struct Served(PipedTransport);

fn serve(gateway: Arc<Gateway>, caller: Caller) -> Served {
    Served(PipedTransport::start(move |input, sink| {
        serve_stdio(gateway, caller, input, sink)
    }))
}

impl Served {
    fn send(&mut self, message: Value) {
        self.0.send_line(&message.to_string());
    }

    fn tool(&mut self, id: Value, arguments: Value) {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                         "params":{"name":"plugin_tool","arguments":arguments}}));
    }

    fn initialize(&mut self) {
        self.send(json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}));
        assert_eq!(self.next()["id"], "init");
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    }

    fn next(&self) -> Value {
        self.0.next_within(Duration::from_secs(20))
    }

    fn finish(self) -> Vec<Value> {
        self.0.finish()
    }
}

#[test]
fn beyond_the_in_flight_bound_a_call_is_a_saturated_tool_error() {
    let gw = Arc::new(gateway(vec![provider("alpha", &["normal"])]));
    // A recording hook that blocks holds each request's slot until released.
    let (release_tx, release_rx) = crossbeam_channel::unbounded::<()>();
    let release_rx = Arc::new(Mutex::new(release_rx));
    let (entered_tx, entered_rx) = crossbeam_channel::unbounded::<()>();
    gw.set_recording_hook(Box::new(move |_| {
        let _ = entered_tx.send(());
        let _ = release_rx.lock().unwrap().recv();
    }));
    let mut served = serve(gw.clone(), Caller::trusted());
    served.initialize();
    for i in 0..MAX_IN_FLIGHT {
        served.tool(
            json!(i),
            json!({"action":"reload","runner":"nope","recording_session_id":"s"}),
        );
    }
    for _ in 0..MAX_IN_FLIGHT {
        entered_rx.recv_timeout(Duration::from_secs(20)).unwrap();
    }
    served.tool(json!("extra"), json!({"action":"list"}));
    let saturated = served.next();
    assert_eq!(saturated["id"], "extra");
    let result = &saturated["result"];
    assert_eq!(result["isError"], true);
    assert_eq!(
        result["structuredContent"]["error"]["code"],
        "gateway_saturated"
    );
    assert_eq!(result["structuredContent"]["dispatch"], "not_started");
    assert_eq!(result["structuredContent"]["recovery"], "retry");
    // Other requests are still answered at once: they take no slot.
    served.send(json!({"jsonrpc":"2.0","id":"ping","method":"ping"}));
    assert_eq!(served.next()["id"], "ping");
    for _ in 0..MAX_IN_FLIGHT {
        release_tx.send(()).unwrap();
    }
    let mut ids = Vec::new();
    for _ in 0..MAX_IN_FLIGHT {
        let r = served.next();
        assert_eq!(
            r["result"]["structuredContent"]["error"]["code"],
            "plugin_runner_not_found"
        );
        ids.push(r["id"].as_u64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, (0..MAX_IN_FLIGHT as u64).collect::<Vec<_>>());
    // Once the slots are free, a call runs again.
    served.tool(json!("after"), json!({"action":"list"}));
    assert_eq!(served.next()["result"]["isError"], false);
    assert!(served.finish().is_empty());
    gw.shutdown();
}

#[test]
fn cancellation_drops_the_response_and_the_call_completes() {
    let gw = Arc::new(gateway(vec![provider("alpha", &["normal"])]));
    let (events_tx, events_rx) = crossbeam_channel::unbounded::<RecordingEvent>();
    gw.set_recording_hook(Box::new(move |event| {
        let _ = events_tx.send(event.clone());
    }));
    let binding = bind(&gw, "alpha", "sleep");
    let mut served = serve(gw.clone(), Caller::trusted());
    served.initialize();
    served.tool(
        json!("slow"),
        json!({"action":"call","binding":binding,"arguments":{"ms":500},
               "recording_session_id":"cancelled-call"}),
    );
    served.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                       "params":{"requestId":"slow","reason":"the user gave up"}}));
    // The same id may not be reused while the call is in flight.
    served.tool(json!("slow"), json!({"action":"list"}));
    let duplicate = served.next();
    assert_eq!(duplicate["id"], "slow");
    assert_eq!(duplicate["error"]["code"], -32600);
    // The call runs to completion (the hook sees it completed), and no response is sent for it.
    let event = events_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the call completed");
    assert_eq!(event.session_id, "cancelled-call");
    assert!(event.success);
    assert_eq!(event.dispatch, Dispatch::Completed);
    served.send(json!({"jsonrpc":"2.0","id":"after","method":"ping"}));
    assert_eq!(served.next()["id"], "after");
    // A later call on the same provider succeeds: the cancelled call did not retire it.
    served.tool(
        json!("again"),
        json!({"action":"call","binding":binding,"arguments":{"ms":1}}),
    );
    let again = served.next();
    assert_eq!(again["id"], "again");
    assert_eq!(again["result"]["isError"], false);
    // Cancelling something that is not in flight is ignored.
    served.send(
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"none"}}),
    );
    let rest = served.finish();
    assert!(rest.is_empty(), "{rest:?}");
    gw.shutdown();
}

/// Runs the same plugin_tool params through `gateway` (JSON lines) and `mcp` (stdio) with one
/// caller; returns (gateway output, MCP tool result).
fn both(gw: &Arc<Gateway>, caller: Caller, params: &Value) -> (Value, Value) {
    let line = json!({"id":1,"tool":"plugin_tool","params":params}).to_string() + "\n";
    let (sink, rx) = JsonLineSink::new();
    serve_lines(
        gw.clone(),
        caller,
        std::io::Cursor::new(line.into_bytes()),
        sink,
    )
    .unwrap();
    let gateway_output = rx.recv().unwrap()["output"].clone();
    let mut served = serve(gw.clone(), caller);
    served.initialize();
    served.tool(json!(1), params.clone());
    let result = served.next()["result"].clone();
    assert!(served.finish().is_empty());
    (gateway_output, result)
}

#[test]
fn scopes_hold_over_mcp_exactly_as_over_the_json_lines_gateway() {
    let gw = Arc::new(gateway(vec![provider("alpha", &["normal"])]));
    let binding = bind(&gw, "alpha", "echo");
    let requests = [
        json!({"action":"list","runner":"local"}),
        json!({"action":"describe","runner":"local","plugin":"alpha","tool":"add"}),
        json!({"action":"call","binding":binding,"arguments":{"text":"x"}}),
        json!({"action":"check","runner":"local","plugin":"alpha"}),
    ];
    for scopes in [
        "",
        "plugin:inspect",
        "plugin:invoke",
        "plugin:manage",
        "plugin:inspect,plugin:invoke",
    ] {
        let caller = Caller::new(Scopes::parse(scopes).unwrap());
        for params in &requests {
            let (gateway_output, result) = both(&gw, caller, params);
            let denied = gateway_output["error"]["code"] == "insufficient_scope";
            assert_eq!(
                denied,
                !caller.has(
                    webcodex_plugin_host::ActionKind::ALL
                        .into_iter()
                        .find(|a| a.as_str() == params["action"])
                        .unwrap()
                        .scope()
                ),
                "{scopes} {params}"
            );
            if denied {
                assert_eq!(result["isError"], true);
                assert_eq!(
                    result["structuredContent"], gateway_output,
                    "{scopes} {params}"
                );
            } else if params["action"] == "call" {
                assert_eq!(result, gateway_output);
            } else if params["action"] == "describe" {
                // Each describe mints a fresh binding; everything else is equal.
                let mut mcp = result["structuredContent"].clone();
                let mut gwo = gateway_output.clone();
                mcp["binding"] = Value::Null;
                gwo["binding"] = Value::Null;
                assert_eq!(mcp, gwo);
            } else {
                assert_eq!(
                    result["structuredContent"], gateway_output,
                    "{scopes} {params}"
                );
            }
        }
    }
    gw.shutdown();
}

#[test]
fn the_canary_never_appears_in_any_mcp_output() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let canary = format!("wcMCPCANARY{}x{nanos}", std::process::id());
    let cwd = temp_dir(&canary);
    let env = [
        ("FIXTURE_STDERR", format!("stderr says {canary}")),
        ("CANARY_SECRET", canary.clone()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let with_canary = |id: &str, mode: &str| {
        let mut p = provider(id, &[mode, &format!("--token={canary}"), &canary]);
        p.cwd = Some(cwd.to_path_buf());
        p.timeout = Duration::from_secs(2);
        p
    };
    let mut missing = with_canary("missing", "normal");
    missing.command = format!("/nonexistent/{canary}/plugin");
    let gw = Arc::new(Gateway::single(host(config(
        vec![
            with_canary("good", "normal"),
            with_canary("bad", "bad-tools"),
            with_canary("stray", "stray-stdout"),
            with_canary("exit", "exit-at-start"),
            missing,
        ],
        &env,
    ))));
    let fixture_path = fixture().display().to_string();

    let mut served = serve(gw.clone(), Caller::trusted());
    let mut seen = 0;
    let mut check = |message: &Value| {
        let text = message.to_string();
        assert!(!text.contains(&canary), "leaked the canary: {text}");
        assert!(!text.contains(&fixture_path), "leaked the command: {text}");
        assert!(!text.contains("fixture_plugin"), "{text}");
        seen += 1;
    };
    // Before initialize, malformed input, the handshake, discovery.
    served.send(json!({"jsonrpc":"2.0","id":0,"method":"tools/list"}));
    check(&served.next());
    served.initialize();
    served.send(
        json!({"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{}}}}),
    );
    check(&served.next());
    let mut id = 1;
    let mut run = |served: &mut Served, arguments: Value| -> Value {
        id += 1;
        served.tool(json!(id), arguments);
        let message = served.next();
        assert_eq!(message["id"], id);
        message
    };
    let mut outputs = Vec::new();
    for plugin in ["good", "bad", "stray", "exit", "missing", "nope"] {
        outputs.push(run(
            &mut served,
            json!({"action":"list","runner":"local","plugin":plugin}),
        ));
        outputs.push(run(
            &mut served,
            json!({"action":"check","runner":"local","plugin":plugin}),
        ));
        outputs.push(run(
            &mut served,
            json!({"action":"describe","runner":"local","plugin":plugin,"tool":"echo"}),
        ));
    }
    outputs.push(run(&mut served, json!({"action":"list","runner":"local"})));
    for (tool, arguments) in [
        ("stderr", json!({"bytes": 70000})),
        ("echo", json!({"text": 5})),
        ("is_error", json!({})),
        ("rpc_error", json!({})),
        ("crash", json!({})),
    ] {
        let described = run(
            &mut served,
            json!({"action":"describe","runner":"local","plugin":"good","tool":tool}),
        );
        let binding = described["result"]["structuredContent"]["binding"].clone();
        outputs.push(described);
        outputs.push(run(
            &mut served,
            json!({"action":"call","binding":binding,"arguments":arguments}),
        ));
        outputs.push(run(
            &mut served,
            json!({"action":"reload","runner":"local"}),
        ));
    }
    outputs.push(run(
        &mut served,
        json!({"action":"catalog","runner":"local","project":cwd.display().to_string()}),
    ));
    for message in &outputs {
        check(message);
    }
    for message in served.finish() {
        check(&message);
    }
    assert!(seen >= 37, "only {seen} outputs were audited");
    gw.shutdown();
}
