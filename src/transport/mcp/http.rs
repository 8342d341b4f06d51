//! `POST /mcp`, the stateless Streamable HTTP binding, without the HTTP server: one JSON-RPC
//! message per body in, one status and an optional JSON body out.
//!
//! - a request → 200 `application/json` with its response (or the status the error calls for:
//!   400 for a malformed message, a header mismatch (-32020), missing `_meta` fields (-32602)
//!   or an unsupported version (-32022); 404 for an unknown method of the stateless era);
//! - a notification or a response → 202 with no body;
//! - there is no session: every message is handled on its own, so the handshake era's
//!   `initialize` is answered but not required, and `notifications/cancelled` has nothing to
//!   cancel (closing the connection does not interrupt a call either).
//!
//! Authentication, the `Origin` check, the body bound and the in-flight slot belong to the
//! HTTP server, before this runs.

use serde_json::Value;

use super::headers::{self, RoutingHeaders};
use super::jsonrpc::{self, RpcError, INVALID_REQUEST};
use super::{McpSession, Step, Transport};
use crate::gateway::ToolOutput;

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// What `POST /mcp` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The JSON-RPC message of the body; `None` for 202 (no body).
    pub body: Option<Value>,
}

/// Answers one body; `run` executes a `plugin_tool` call's params (the caller holds the
/// in-flight slot and the caller's scopes).
pub fn answer(
    body: &[u8],
    routing: &RoutingHeaders,
    run: impl FnOnce(&Value) -> ToolOutput,
) -> HttpAnswer {
    let incoming = match jsonrpc::parse(body) {
        Ok(incoming) => incoming,
        Err(malformed) => {
            return HttpAnswer {
                status: 400,
                body: Some(malformed.error.response(&malformed.id)),
            }
        }
    };
    if let Err(reply) = headers::check(&incoming, routing) {
        return HttpAnswer {
            status: reply.http_status,
            body: Some(reply.message),
        };
    }
    match McpSession::new(Transport::Http).handle(incoming) {
        Step::Reply(reply) => HttpAnswer {
            status: reply.http_status,
            body: Some(reply.message),
        },
        Step::Call(call) => {
            let output = run(call.params());
            HttpAnswer {
                status: 200,
                body: Some(call.respond(output).message),
            }
        }
        Step::Cancel(_) | Step::Nothing => HttpAnswer {
            status: 202,
            body: None,
        },
    }
}

/// A JSON-RPC error without an id, for answers given before the body was read (401, 403,
/// 405, 413, 503).
pub fn transport_error(message: &str) -> Value {
    RpcError::new(INVALID_REQUEST, message).response(&Value::Null)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::transport::mcp::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};

    fn no_call(_: &Value) -> ToolOutput {
        panic!("no plugin_tool call expected")
    }

    fn modern(method: &str, name: Option<&str>) -> RoutingHeaders {
        RoutingHeaders {
            protocol_version: Some("2026-07-28".into()),
            method: Some(method.into()),
            name: name.map(Into::into),
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
            let a = answer(
                body.to_string().as_bytes(),
                &RoutingHeaders::default(),
                no_call,
            );
            assert_eq!(
                a,
                HttpAnswer {
                    status: 202,
                    body: None
                }
            );
        }
    }

    #[test]
    fn a_stateless_call_runs_with_matching_headers() {
        let body = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
            "name":"plugin_tool","arguments":{"action":"list"},"_meta":meta()}});
        let a = answer(
            body.to_string().as_bytes(),
            &modern("tools/call", Some("plugin_tool")),
            |params| {
                assert_eq!(params, &json!({"action":"list"}));
                ToolOutput::ok(json!({"runners":[]}))
            },
        );
        assert_eq!(a.status, 200);
        let body = a.body.unwrap();
        assert_eq!(body["id"], 3);
        assert_eq!(body["result"]["resultType"], "complete");
        assert_eq!(body["result"]["isError"], false);
    }

    #[test]
    fn mismatched_headers_unknown_methods_and_bad_bodies() {
        let body = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
            "name":"plugin_tool","arguments":{},"_meta":meta()}})
        .to_string();
        let a = answer(body.as_bytes(), &modern("tools/list", None), no_call);
        assert_eq!(a.status, 400);
        assert_eq!(a.body.unwrap()["error"]["code"], -32020);

        let body =
            json!({"jsonrpc":"2.0","id":4,"method":"prompts/list","params":{"_meta":meta()}})
                .to_string();
        let a = answer(body.as_bytes(), &modern("prompts/list", None), no_call);
        assert_eq!(a.status, 404);
        assert_eq!(a.body.unwrap()["error"]["code"], -32601);

        let a = answer(b"[]", &RoutingHeaders::default(), no_call);
        assert_eq!(a.status, 400);
        assert_eq!(a.body.unwrap()["error"]["code"], -32600);

        // The handshake era needs no session over HTTP.
        let body = json!({"jsonrpc":"2.0","id":5,"method":"tools/list"}).to_string();
        let a = answer(body.as_bytes(), &RoutingHeaders::default(), no_call);
        assert_eq!(a.status, 200);
        assert_eq!(a.body.unwrap()["result"]["tools"][0]["name"], "plugin_tool");
    }
}
