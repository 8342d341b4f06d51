//! `POST /mcp`, the stateless Streamable HTTP binding, without the HTTP server: one JSON-RPC
//! message (or, under 2025-03-26, one batch) per body in, one status and an optional JSON body
//! out.
//!
//! - a request → 200 `application/json` with its response (or the status the error calls for:
//!   400 for a malformed message, a header mismatch (-32020), missing `_meta` fields (-32602)
//!   or an unsupported version (-32022); 404 for an unknown method of the stateless era);
//! - a notification or a response → 202 with no body;
//! - a batch (a JSON array) is served when the `MCP-Protocol-Version` header is absent (a
//!   2025-03-26 client sends none; the later revisions say to assume 2025-03-26 then) or names
//!   2025-03-26: each member is handled on its own (its calls concurrently, each under the
//!   in-flight bound), and the answers come back as one array with 200, or 202 with no body
//!   when only notifications were sent; an empty array, or a batch under any other version, is
//!   400 with -32600;
//! - there is no session: every message is handled on its own, so the handshake era's
//!   `initialize` is answered but not required, and `notifications/cancelled` has nothing to
//!   cancel (closing the connection does not interrupt a call either).
//!
//! Authentication, the `Origin` check and the body bound belong to the HTTP server, before
//! this runs; it hands over the in-flight slot it took for the request.

use super::batch::{self, Member};
use super::headers::{self, RoutingHeaders};
use super::jsonrpc::INVALID_REQUEST;
use super::jsonrpc::{self, Body, Incoming, Malformed, Outgoing, RequestId, Response, RpcError};
use super::version;
use super::{McpSession, Step, Transport};
use webcodex_plugin_host::Caller;
use webcodex_plugin_host::{Dispatcher, Slot};

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// What `POST /mcp` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The JSON-RPC message (or batch answer) of the body; `None` for 202 (no body).
    pub body: Option<Outgoing>,
}

impl HttpAnswer {
    fn one(status: u16, response: Response) -> HttpAnswer {
        HttpAnswer {
            status,
            body: Some(Outgoing::One(response)),
        }
    }

    fn accepted() -> HttpAnswer {
        HttpAnswer {
            status: 202,
            body: None,
        }
    }
}

/// Answers one body for `caller`. `slot` is the in-flight slot the server took for this
/// request: a single message runs under it; a batch frees it and admits each of its calls
/// separately, exactly as separate requests would be.
pub fn answer(
    body: &[u8],
    routing: &RoutingHeaders,
    dispatcher: &Dispatcher,
    caller: &Caller,
    slot: Slot,
) -> HttpAnswer {
    let members = match jsonrpc::parse_body(body) {
        Body::Single(parsed) => return single(parsed, routing, dispatcher, caller),
        Body::Batch(members) => members,
    };
    let batches = routing
        .protocol_version
        .as_deref()
        .is_none_or(version::serves_batches);
    if !batches {
        let message = "batches are served only under protocol version 2025-03-26; send one \
                       JSON-RPC message per body";
        return HttpAnswer::one(400, transport_error(message));
    }
    if let Some(message) = batch::refusal(members.len()) {
        return HttpAnswer::one(400, transport_error(message));
    }
    drop(slot);
    let members: Vec<Member> = members
        .iter()
        .map(|member| batch_member(jsonrpc::parse(member.get().as_bytes()), routing, dispatcher))
        .collect();
    let (outgoing, slots) = batch::run(members, dispatcher, *caller);
    drop(slots);
    match outgoing {
        Some(outgoing) => HttpAnswer {
            status: 200,
            body: Some(outgoing),
        },
        None => HttpAnswer::accepted(),
    }
}

/// The step for one parsed message, after the routing headers were checked.
fn step(
    parsed: Result<Incoming, Malformed>,
    routing: &RoutingHeaders,
) -> Result<Step, (u16, Response)> {
    let incoming = match parsed {
        Ok(incoming) => incoming,
        Err(malformed) if malformed.answer => {
            return Err((400, malformed.error.response(&malformed.id)))
        }
        Err(_) => return Ok(Step::Nothing),
    };
    if let Err(reply) = headers::check(&incoming, routing) {
        return Err((reply.http_status, reply.message));
    }
    Ok(McpSession::new(Transport::Http).handle(incoming))
}

fn single(
    parsed: Result<Incoming, Malformed>,
    routing: &RoutingHeaders,
    dispatcher: &Dispatcher,
    caller: &Caller,
) -> HttpAnswer {
    // A malformed notification on its own still gets its error over HTTP (there is no stream
    // to stay silent on).
    let parsed = parsed.map_err(|mut malformed| {
        malformed.answer = true;
        malformed
    });
    match step(parsed, routing) {
        Err((status, response)) => HttpAnswer::one(status, response),
        Ok(Step::Reply(reply)) => HttpAnswer::one(reply.http_status, reply.message),
        Ok(Step::Call(call)) => {
            let output = dispatcher.execute_traced(caller, call.params(), call.trace());
            HttpAnswer::one(200, call.respond(output).message)
        }
        Ok(Step::Cancel(_) | Step::Nothing) => HttpAnswer::accepted(),
    }
}

fn batch_member(
    parsed: Result<Incoming, Malformed>,
    routing: &RoutingHeaders,
    dispatcher: &Dispatcher,
) -> Member {
    match step(parsed, routing) {
        Err((_, response)) => Member::Answer(response),
        Ok(Step::Call(call)) => Member::admit(call, None, dispatcher),
        Ok(other) => Member::of_step(other).unwrap_or(Member::Silent),
    }
}

/// A JSON-RPC error without an id, for answers given before the body was read (401, 403,
/// 405, 413, 503) and for a batch that is not served.
pub fn transport_error(message: &str) -> Response {
    RpcError::new(INVALID_REQUEST, message).response(&RequestId::null())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{json, Value};

    use super::*;
    use crate::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
    use webcodex_plugin_host::Gateway;

    fn dispatcher() -> Dispatcher {
        Dispatcher::new(Arc::new(Gateway::new([])))
    }

    fn post(body: &[u8], routing: &RoutingHeaders) -> (u16, Value) {
        let dispatcher = dispatcher();
        let slot = dispatcher.try_admit().unwrap();
        let a = answer(body, routing, &dispatcher, &Caller::trusted(), slot);
        assert_eq!(dispatcher.in_flight(), 0, "every slot is freed");
        (a.status, a.body.map_or(Value::Null, |b| b.to_value()))
    }

    fn modern(method: &str, name: Option<&str>) -> RoutingHeaders {
        RoutingHeaders {
            protocol_version: Some("2026-07-28".into()),
            method: Some(method.into()),
            name: name.map(Into::into),
        }
    }

    fn version(v: &str) -> RoutingHeaders {
        RoutingHeaders {
            protocol_version: Some(v.into()),
            ..RoutingHeaders::default()
        }
    }

    fn meta() -> Value {
        json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}})
    }

    #[test]
    fn notifications_and_responses_are_accepted_without_a_body() {
        for body in [
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}),
            json!({"jsonrpc":"2.0","id":1,"result":{}}),
        ] {
            let a = post(body.to_string().as_bytes(), &RoutingHeaders::default());
            assert_eq!(a, (202, Value::Null));
        }
    }

    #[test]
    fn a_stateless_call_runs_with_matching_headers() {
        let body = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
            "name":"plugin_tool","arguments":{"action":"list"},"_meta":meta()}});
        let (status, body) = post(
            body.to_string().as_bytes(),
            &modern("tools/call", Some("plugin_tool")),
        );
        assert_eq!(status, 200);
        assert_eq!(body["id"], 3);
        assert_eq!(body["result"]["resultType"], "complete");
        assert_eq!(body["result"]["isError"], false);
        assert_eq!(body["result"]["structuredContent"], json!({"runners":[]}));
    }

    #[test]
    fn mismatched_headers_unknown_methods_and_bad_bodies() {
        let body = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
            "name":"plugin_tool","arguments":{},"_meta":meta()}})
        .to_string();
        let (status, answer) = post(body.as_bytes(), &modern("tools/list", None));
        assert_eq!(status, 400);
        assert_eq!(answer["error"]["code"], -32020);

        let body =
            json!({"jsonrpc":"2.0","id":4,"method":"prompts/list","params":{"_meta":meta()}})
                .to_string();
        let (status, answer) = post(body.as_bytes(), &modern("prompts/list", None));
        assert_eq!(status, 404);
        assert_eq!(answer["error"]["code"], -32601);

        let (status, answer) = post(b"[]", &RoutingHeaders::default());
        assert_eq!(status, 400);
        assert_eq!(answer["error"]["code"], -32600);

        // The handshake era needs no session over HTTP.
        let body = json!({"jsonrpc":"2.0","id":5,"method":"tools/list"}).to_string();
        let (status, answer) = post(body.as_bytes(), &RoutingHeaders::default());
        assert_eq!(status, 200);
        assert_eq!(answer["result"]["tools"][0]["name"], "plugin_tool");
    }

    #[test]
    fn batches_only_under_2025_03_26() {
        let batch = json!([
            {"jsonrpc":"2.0","id":1,"method":"tools/list"},
            {"jsonrpc":"2.0","method":"notifications/initialized"},
            {"jsonrpc":"2.0","id":"c","method":"tools/call",
             "params":{"name":"plugin_tool","arguments":{"action":"list"}}},
            {"jsonrpc":"2.0","id":2,"method":"nope"},
            7
        ])
        .to_string();
        for routing in [RoutingHeaders::default(), version("2025-03-26")] {
            let (status, answer) = post(batch.as_bytes(), &routing);
            assert_eq!(status, 200);
            let answers = answer.as_array().expect("an array");
            let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
            assert_eq!(ids, [&json!(1), &json!("c"), &json!(2), &Value::Null]);
            assert_eq!(answers[1]["result"]["isError"], false);
            assert_eq!(answers[2]["error"]["code"], -32601);
            assert_eq!(answers[3]["error"]["code"], -32600);
        }
        for v in ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"] {
            let (status, answer) = post(batch.as_bytes(), &version(v));
            assert_eq!(
                (status, answer["error"]["code"].clone()),
                (400, json!(-32600)),
                "{v}"
            );
            assert_eq!(answer["id"], Value::Null);
        }
        let too_long = format!("[{}]", vec!["1"; batch::MAX_BATCH_MEMBERS + 1].join(","));
        let (status, answer) = post(too_long.as_bytes(), &RoutingHeaders::default());
        assert_eq!(
            (status, answer["error"]["code"].clone()),
            (400, json!(-32600))
        );
        let only_notifications = br#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
        assert_eq!(
            post(only_notifications, &RoutingHeaders::default()),
            (202, Value::Null)
        );
    }
}
