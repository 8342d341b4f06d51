//! The frames of `webcodex-runner-link-v1` (docs/PROTOCOL.md, runner links): one JSON object
//! per WebSocket text frame, at most [`MAX_FRAME_BYTES`]. Pure: parsing and encoding only, no
//! socket, so the fuzz target `link_frames` reaches every parser.
//!
//! - runner → front, first: `{"hello":{"protocol","instance","name"?}}` ([`Hello`]);
//! - front → runner: `{"welcome":{"runner":ID}}` ([`welcome`]);
//! - front → runner: `{"id":u64,"operation":OP,"params":{plugin_tool params},
//!   "traceparent"?:W3C}` ([`LinkRequest`]); a project-bound `describe` carries its `project`
//!   and a project-bound `call` its `project_target` inside the params, where a runner's strict
//!   parameter parsing refuses what it does not know;
//! - runner → front: `{"id":u64,"dispatch_state":D,"payload"?:{"kind","output"},
//!   "error"?:{"code","message","recovery"?}}` ([`LinkReply`]), exactly one of payload and
//!   error, a payload only with `completed`.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use webcodex_plugin_host::{ActionKind, ToolOutput, MAX_RUNNER_NAME_BYTES};
use webcodex_plugin_host::{Dispatch, ErrorCode};
use webcodex_plugin_host::{TraceContext, TRACEPARENT};

/// The protocol name a runner's hello carries (and the WebSocket subprotocol it asks for).
pub const PROTOCOL: &str = "webcodex-runner-link-v1";
/// The largest frame (and message) either side accepts, in bytes.
pub const MAX_FRAME_BYTES: usize = 1 << 20;
/// The length of a runner instance id: 22 characters of the URL-safe base64 alphabet (128
/// random bits).
pub const INSTANCE_CHARS: usize = 22;

/// A frame that breaks the protocol; the text says what, for the log and the close reason
/// (it never quotes the frame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError(pub String);

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad(what: &str) -> FrameError {
    FrameError(what.to_string())
}

/// The operations a front asks of a runner, each carrying the `plugin_tool` params of one
/// action (the action decides which operation it travels as).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `list` of one runner's providers.
    ProvidersList,
    /// `list` of one provider's tools, or `describe` of one tool.
    ToolsList,
    /// `call` through the runner's binding.
    ToolsCall,
    /// `check` of one provider.
    Check,
    /// `reload` of the runner.
    Reload,
    /// `catalog` of one project root.
    ProjectCatalog,
}

impl Operation {
    /// Every operation.
    pub const ALL: [Operation; 6] = [
        Operation::ProvidersList,
        Operation::ToolsList,
        Operation::ToolsCall,
        Operation::Check,
        Operation::Reload,
        Operation::ProjectCatalog,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::ProvidersList => "providers_list",
            Operation::ToolsList => "tools_list",
            Operation::ToolsCall => "tools_call",
            Operation::Check => "check",
            Operation::Reload => "reload",
            Operation::ProjectCatalog => "project_catalog",
        }
    }

    /// The operation of a wire name.
    pub fn parse(name: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|op| op.as_str() == name)
    }

    /// The operation that carries `params` (a `plugin_tool` request already addressed to the
    /// runner); `None` for an action that never crosses a link (the runner list) or unknown.
    pub fn of_params(params: &Value) -> Option<Operation> {
        let plugin = params.get("plugin").is_some();
        Some(match params.get("action")?.as_str()? {
            "list" if plugin => Operation::ToolsList,
            "list" => Operation::ProvidersList,
            "describe" => Operation::ToolsList,
            "call" => Operation::ToolsCall,
            "check" => Operation::Check,
            "reload" => Operation::Reload,
            "catalog" => Operation::ProjectCatalog,
            _ => return None,
        })
    }

    /// The action kind that `params` asks for, when this operation may carry it.
    pub fn carries(self, params: &Value) -> Option<ActionKind> {
        let kind = ActionKind::ALL
            .into_iter()
            .find(|k| Some(k.as_str()) == params.get("action").and_then(Value::as_str))?;
        (Operation::of_params(params) == Some(self)).then_some(kind)
    }
}

/// A runner's first frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// The runner process's instance id ([`INSTANCE_CHARS`] URL-safe base64 characters).
    pub instance: String,
    /// A display name for `list`, when the runner gives one.
    pub name: Option<String>,
}

/// Encodes a runner's hello.
pub fn encode_hello(instance: &str, name: Option<&str>) -> String {
    let mut hello = json!({"protocol": PROTOCOL, "instance": instance});
    if let Some(name) = name {
        hello["name"] = name.into();
    }
    json!({ "hello": hello }).to_string()
}

/// Parses a runner's first frame: exactly `{"hello":{...}}` with this protocol, a well-formed
/// instance id and at most a plain display name.
pub fn parse_hello(text: &str) -> Result<Hello, FrameError> {
    let value: Value = serde_json::from_str(text).map_err(|_| bad("the hello is not JSON"))?;
    let outer =
        only_keys(&value, &["hello"]).ok_or_else(|| bad("the first frame is not a hello"))?;
    let hello = outer
        .get("hello")
        .and_then(|h| only_keys(h, &["protocol", "instance", "name"]))
        .ok_or_else(|| bad("the hello is not an object of protocol, instance, name"))?;
    if hello.get("protocol").and_then(Value::as_str) != Some(PROTOCOL) {
        return Err(bad(
            "the hello names another protocol (expected webcodex-runner-link-v1)",
        ));
    }
    let instance = hello
        .get("instance")
        .and_then(Value::as_str)
        .filter(|i| valid_instance(i))
        .ok_or_else(|| bad("the hello's instance is not 22 URL-safe base64 characters"))?;
    let name = match hello.get("name") {
        None => None,
        Some(Value::String(n))
            if !n.is_empty()
                && n.len() <= MAX_RUNNER_NAME_BYTES
                && !n.chars().any(char::is_control) =>
        {
            Some(n.clone())
        }
        Some(_) => {
            return Err(bad(
                "the hello's name must be 1 to 128 bytes of text without control characters",
            ))
        }
    };
    Ok(Hello {
        instance: instance.to_string(),
        name,
    })
}

/// True for a well-formed instance id.
pub fn valid_instance(instance: &str) -> bool {
    instance.len() == INSTANCE_CHARS
        && instance
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A fresh instance id from the system's randomness (16 bytes, URL-safe base64 without
/// padding); `None` without it.
pub fn new_instance() -> Option<String> {
    use base64::Engine;
    let bytes: [u8; 16] = webcodex_plugin_host::random_bytes()?;
    Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The front's answer to a good hello.
pub fn welcome(runner: &str) -> String {
    json!({"welcome": {"runner": runner}}).to_string()
}

/// Parses the front's welcome: the runner id it admitted the link as.
pub fn parse_welcome(text: &str) -> Result<String, FrameError> {
    let value: Value = serde_json::from_str(text).map_err(|_| bad("the welcome is not JSON"))?;
    value
        .get("welcome")
        .and_then(|w| only_keys(w, &["runner"]))
        .and_then(|w| w.get("runner")?.as_str())
        .filter(|_| only_keys(&value, &["welcome"]).is_some())
        .map(str::to_string)
        .ok_or_else(|| bad("the front's first frame is not a welcome"))
}

/// One request of the front.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkRequest {
    /// The front's id for it, echoed by the reply.
    pub id: u64,
    /// What it asks.
    pub operation: Operation,
    /// The `plugin_tool` params of the action.
    pub params: Value,
    /// The request's trace context (`traceparent`, the front's request under a new parent
    /// id); `None` when the frame has none or its value is not a valid `traceparent` (the
    /// runner then makes a fresh one, as for the HTTP header). Never part of `params`.
    pub trace: Option<TraceContext>,
}

/// Encodes a request of the front, with its trace context when it has one. The params are
/// serialized once, straight into the frame (no copy of them).
pub fn encode_request(
    id: u64,
    operation: Operation,
    params: &Value,
    trace: Option<&TraceContext>,
) -> String {
    use std::fmt::Write as _;
    let mut frame = String::with_capacity(160);
    let _ = write!(
        frame,
        "{{\"id\":{id},\"operation\":\"{}\"",
        operation.as_str()
    );
    if let Some(trace) = trace {
        // 55 bytes of `00-`, hex digits and dashes: nothing to escape.
        let _ = write!(frame, ",\"{TRACEPARENT}\":\"{}\"", trace.header_value());
    }
    frame.push_str(",\"params\":");
    // Writing a Value into a String cannot fail, and its output is UTF-8.
    let mut bytes = frame.into_bytes();
    let _ = serde_json::to_writer(&mut bytes, params);
    bytes.push(b'}');
    String::from_utf8(bytes).unwrap_or_default()
}

/// Parses a request of the front. An `Err` with `Some(id)` names a request that can still be
/// answered (with `invalid_request`); `None` when not even its id was readable.
pub fn parse_request(text: &str) -> Result<LinkRequest, (Option<u64>, FrameError)> {
    let mut value: Value =
        serde_json::from_str(text).map_err(|_| (None, bad("the request is not JSON")))?;
    let id = value.get("id").and_then(Value::as_u64);
    let map = only_keys(&value, &["id", "operation", "params", TRACEPARENT]).ok_or_else(|| {
        (
            id,
            bad("the request has keys other than id, operation, params, traceparent"),
        )
    })?;
    let id = id.ok_or_else(|| (None, bad("the request has no u64 id")))?;
    let operation = map
        .get("operation")
        .and_then(Value::as_str)
        .and_then(Operation::parse)
        .ok_or_else(|| (Some(id), bad("the request's operation is unknown")))?;
    if !map.get("params").is_some_and(Value::is_object) {
        return Err((Some(id), bad("the request's params are not an object")));
    }
    let trace = match map.get(TRACEPARENT) {
        None => None,
        Some(Value::String(value)) => TraceContext::parse(value),
        Some(_) => return Err((Some(id), bad("the request's traceparent is not a string"))),
    };
    // The params are moved out of the frame, not copied.
    let params = value
        .as_object_mut()
        .and_then(|map| map.remove("params"))
        .unwrap_or_default();
    if operation.carries(&params).is_none() {
        return Err((
            Some(id),
            bad("the request's params are not an action of its operation"),
        ));
    }
    Ok(LinkRequest {
        id,
        operation,
        params,
        trace,
    })
}

/// Encodes the runner's reply to request `id` of action `kind`: its gateway's `output`.
pub fn encode_reply(id: u64, kind: ActionKind, output: &ToolOutput) -> String {
    if output.is_success() {
        // Written straight into the frame (the output is not copied into a new Value).
        let mut frame = format!(
            "{{\"id\":{id},\"dispatch_state\":\"{}\",\"payload\":{{\"kind\":\"{}\",\"output\":",
            Dispatch::Completed.as_str(),
            kind.as_str()
        )
        .into_bytes();
        let _ = serde_json::to_writer(&mut frame, output);
        frame.extend_from_slice(b"}}");
        return String::from_utf8(frame).unwrap_or_default();
    }
    if let Some(failure) = output.failure_info() {
        let mut error = json!({"code": failure.code.as_str(), "message": failure.message});
        if let Some(recovery) = failure.recovery {
            error["recovery"] = recovery.as_str().into();
        }
        return json!({"id": id, "dispatch_state": failure.dispatch.as_str(), "error": error})
            .to_string();
    }
    // A received failure, passed on as it came.
    let failure = output.to_json();
    let mut error = json!({
        "code": failure["error"]["code"],
        "message": failure["error"]["message"],
    });
    if let Some(recovery) = failure.get("recovery") {
        error["recovery"] = recovery.clone();
    }
    json!({"id": id, "dispatch_state": failure["dispatch"], "error": error}).to_string()
}

/// Encodes a reply that fails request `id` (e.g. a request the runner cannot read).
pub fn encode_failure(id: u64, code: ErrorCode, dispatch: Dispatch, message: &str) -> String {
    json!({
        "id": id,
        "dispatch_state": dispatch.as_str(),
        "error": {"code": code.as_str(), "message": message},
    })
    .to_string()
}

/// One reply of a runner, checked for shape only (the gateway validates its content).
#[derive(Debug, Clone, PartialEq)]
pub struct LinkReply {
    /// The request it answers.
    pub id: u64,
    /// The action kind its payload says it is (`None` for a failure).
    pub kind: Option<ActionKind>,
    /// The answer as a `plugin_tool` output: the payload's output, or the failure object
    /// `{"error":{"code","message"},"dispatch","recovery"?}`.
    pub output: ToolOutput,
}

/// The id of a frame that has one, for routing even a reply that is malformed otherwise.
pub fn reply_id(text: &str) -> Option<u64> {
    serde_json::from_str::<Value>(text)
        .ok()?
        .get("id")?
        .as_u64()
}

/// A runner's reply to a `call` that completed with a result, read without building a
/// `Value`: its id and the result's JSON text (unchecked: the gateway validates it as it
/// validates a local provider's result). `None` for any other frame, and for one this
/// reading is not sure of (an escape in a name, a duplicate key): [`parse_reply`] reads those.
pub fn parse_call_result(text: &str) -> Option<(u64, &str)> {
    /// A reply with a payload and no error (another member fails the reading).
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Reply<'a> {
        id: u64,
        dispatch_state: &'a str,
        #[serde(borrow)]
        payload: Payload<'a>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Payload<'a> {
        kind: &'a str,
        #[serde(borrow)]
        output: &'a RawValue,
    }
    let reply: Reply<'_> = serde_json::from_str(text).ok()?;
    let output = reply.payload.output.get();
    (reply.dispatch_state == Dispatch::Completed.as_str()
        && reply.payload.kind == ActionKind::Call.as_str()
        && output.starts_with('{'))
    .then_some((reply.id, output))
}

/// Parses a runner's reply: an id, a dispatch state and exactly one of payload (only with
/// `completed`, `{"kind","output"}`) and error (`{"code","message","recovery"?}`).
pub fn parse_reply(text: &str) -> Result<LinkReply, FrameError> {
    let mut value: Value = serde_json::from_str(text).map_err(|_| bad("the reply is not JSON"))?;
    let map = only_keys(&value, &["id", "dispatch_state", "payload", "error"])
        .ok_or_else(|| bad("the reply is not an object of id, dispatch_state, payload, error"))?;
    let id = map
        .get("id")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("the reply has no u64 id"))?;
    let dispatch = match map.get("dispatch_state").and_then(Value::as_str) {
        Some("completed") => Dispatch::Completed,
        Some("not_started") => Dispatch::NotStarted,
        Some("outcome_unknown") => Dispatch::OutcomeUnknown,
        _ => return Err(bad("the reply's dispatch_state is not a dispatch state")),
    };
    match (map.get("payload"), map.get("error")) {
        (Some(payload), None) => {
            if dispatch != Dispatch::Completed {
                return Err(bad("a payload comes only with dispatch_state completed"));
            }
            let payload = only_keys(payload, &["kind", "output"])
                .ok_or_else(|| bad("the payload is not an object of kind and output"))?;
            let kind = payload
                .get("kind")
                .and_then(Value::as_str)
                .and_then(|k| ActionKind::ALL.into_iter().find(|a| a.as_str() == k))
                .ok_or_else(|| bad("the payload's kind is not an action"))?;
            if !payload.get("output").is_some_and(Value::is_object) {
                return Err(bad("the payload's output is not an object"));
            }
            // Moved out of the frame, not copied.
            let output = value
                .get_mut("payload")
                .and_then(|p| p.as_object_mut())
                .and_then(|p| p.remove("output"))
                .unwrap_or_default();
            Ok(LinkReply {
                id,
                kind: Some(kind),
                output: ToolOutput::received(true, output),
            })
        }
        (None, Some(Value::Object(error))) => {
            let mut failure = json!({
                "error": {
                    "code": error.get("code").cloned().unwrap_or(Value::Null),
                    "message": error.get("message").cloned().unwrap_or(Value::Null),
                },
                "dispatch": dispatch.as_str(),
            });
            if let Some(recovery) = error.get("recovery") {
                failure["recovery"] = recovery.clone();
            }
            Ok(LinkReply {
                id,
                kind: None,
                output: ToolOutput::received(false, failure),
            })
        }
        _ => Err(bad("a reply has exactly one of payload and error")),
    }
}

/// The object of `value` when it has no key outside `allowed`.
fn only_keys<'v>(value: &'v Value, allowed: &[&str]) -> Option<&'v Map<String, Value>> {
    let map = value.as_object()?;
    map.keys()
        .all(|k| allowed.contains(&k.as_str()))
        .then_some(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use webcodex_plugin_host::Error;

    #[test]
    fn hello_and_welcome_round_trip() {
        let instance = new_instance().unwrap();
        assert!(valid_instance(&instance), "{instance}");
        let hello = parse_hello(&encode_hello(&instance, Some("Edge 1"))).unwrap();
        assert_eq!(hello.instance, instance);
        assert_eq!(hello.name.as_deref(), Some("Edge 1"));
        assert_eq!(parse_welcome(&welcome("edge-1")).unwrap(), "edge-1");
        for bad in [
            r#"{"hello":{"protocol":"other","instance":"AAAAAAAAAAAAAAAAAAAAAA"}}"#,
            r#"{"hello":{"protocol":"webcodex-runner-link-v1","instance":"short"}}"#,
            r#"{"hello":{"protocol":"webcodex-runner-link-v1","instance":"AAAAAAAAAAAAAAAAAAAAAA","x":1}}"#,
            r#"{"hello":{"protocol":"webcodex-runner-link-v1","instance":"AAAAAAAAAAAAAAAAAAAAAA","name":"a\u0007"}}"#,
            r#"{"id":1}"#,
            "not json",
        ] {
            assert!(parse_hello(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_reply_with_a_long_number_reads_back_the_same_after_a_round_trip() {
        // 110 digits: an f64 only approximates it, and must be the same one on every read.
        let digits = "5".repeat(73) + "2" + &"5".repeat(36);
        let frame = format!(
            r#"{{"id":7,"dispatch_state":"completed","payload":{{"kind":"list","output":{{"runner":"local","n":[{digits}]}}}}}}"#
        );
        let reply = parse_reply(&frame).unwrap();
        let again = parse_reply(&encode_reply(7, ActionKind::List, &reply.output)).unwrap();
        assert_eq!(again, reply);
    }

    #[test]
    fn a_completed_call_result_is_read_as_text_and_every_other_reply_is_not() {
        let result = r#"{"content":[{"type":"text","text":"hi"}],"isError":false}"#;
        let frame = format!(
            r#"{{"id":12,"dispatch_state":"completed","payload":{{"kind":"call","output":{result}}}}}"#
        );
        assert_eq!(parse_call_result(&frame), Some((12, result)));
        assert!(parse_reply(&frame).is_ok());
        let list = ToolOutput::received(true, json!({"providers": []}));
        let failed = ToolOutput::failure(&webcodex_plugin_host::Error::not_started(
            ErrorCode::ProviderBusy,
            "busy",
        ));
        for other in [
            encode_reply(5, ActionKind::List, &list),
            encode_reply(6, ActionKind::Call, &failed),
            // The fast reading is not sure of these; parse_reply decides them.
            frame.replace("completed", "compl\\u0065ted"),
            frame.replace(r#""id":12,"#, r#""id":12,"id":13,"#),
            frame.replace(r#""id":12,"#, r#""id":12,"extra":1,"#),
            frame.replace("}}}", r#"},"error":{"code":"x","message":"y"}}}"#),
            frame.replace("completed", "not_started"),
            frame.replace(result, "[1]"),
            frame.replace(r#""id":12"#, r#""id":-1"#),
            frame[..frame.len() - 1].to_string(),
        ] {
            assert_eq!(parse_call_result(&other), None, "{other}");
        }
        let escaped = parse_reply(&frame.replace("completed", "compl\\u0065ted")).unwrap();
        assert_eq!(escaped.kind, Some(ActionKind::Call));
    }

    #[test]
    fn requests_carry_the_actions_of_their_operation() {
        let params = json!({"action": "describe", "runner": "local", "plugin": "p", "tool": "t"});
        let text = encode_request(7, Operation::of_params(&params).unwrap(), &params, None);
        let request = parse_request(&text).unwrap();
        assert_eq!(request.operation, Operation::ToolsList);
        assert_eq!(request.params, params);
        assert_eq!(request.trace, None);
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap()["params"],
            params
        );
        let wrong = json!({"id": 3, "operation": "reload", "params": {"action": "call"}});
        assert_eq!(parse_request(&wrong.to_string()).unwrap_err().0, Some(3));
        assert_eq!(parse_request("[]").unwrap_err().0, None);
    }

    #[test]
    fn a_project_and_a_project_target_travel_inside_the_params() {
        let describe = json!({"action": "describe", "runner": "local", "plugin": "p",
                              "tool": "t", "project": "/srv/app"});
        let call = json!({"action": "call", "binding": "wc_pbind_x", "arguments": {},
                          "project_target": "wc_proot_00112233445566778899aabbccddeeff"});
        for (params, operation) in [
            (describe, Operation::ToolsList),
            (call, Operation::ToolsCall),
        ] {
            assert_eq!(Operation::of_params(&params), Some(operation));
            let request = parse_request(&encode_request(3, operation, &params, None)).unwrap();
            assert_eq!(request.params, params, "nothing of the params is dropped");
        }
    }

    #[test]
    fn a_request_carries_its_trace_context_beside_the_params() {
        let params =
            json!({"action": "call", "binding": "wc_pbind_x", "arguments": {"t": "\u{7}\""}});
        let trace = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        let text = encode_request(9, Operation::ToolsCall, &params, trace.as_ref());
        let request = parse_request(&text).unwrap();
        assert_eq!((request.id, request.trace), (9, trace));
        assert_eq!(request.params, params);
        assert!(request.params.get(TRACEPARENT).is_none());
        // A value that is not a traceparent is ignored (a fresh context on the runner); one
        // that is not a string is an unreadable request.
        let odd =
            json!({"id": 4, "operation": "tools_call", "params": params, "traceparent": "00-zz"});
        assert_eq!(parse_request(&odd.to_string()).unwrap().trace, None);
        let wrong = json!({"id": 4, "operation": "tools_call", "params": params, "traceparent": 1});
        assert_eq!(parse_request(&wrong.to_string()).unwrap_err().0, Some(4));
    }

    #[test]
    fn replies_have_exactly_one_of_payload_and_error() {
        let ok = ToolOutput::received(true, json!({"runner": "local", "plugins": []}));
        let reply = parse_reply(&encode_reply(5, ActionKind::List, &ok)).unwrap();
        assert_eq!((reply.id, reply.kind), (5, Some(ActionKind::List)));
        assert_eq!(reply.output, ok);
        let failed = ToolOutput::failure(&Error::not_started(ErrorCode::ProviderBusy, "busy"));
        let reply = parse_reply(&encode_reply(6, ActionKind::Call, &failed)).unwrap();
        assert_eq!(reply.output.to_json(), failed.to_json());
        assert_eq!(reply.output.code(), Some(ErrorCode::ProviderBusy));
        for bad in [
            r#"{"id":1,"dispatch_state":"completed"}"#,
            r#"{"id":1,"dispatch_state":"not_started","payload":{"kind":"list","output":{}}}"#,
            r#"{"id":1,"dispatch_state":"completed","payload":{"kind":"list","output":{}},"error":{}}"#,
            r#"{"id":1,"dispatch_state":"done","error":{}}"#,
            r#"{"id":-1,"dispatch_state":"completed","payload":{"kind":"list","output":{}}}"#,
            r#"{"id":1,"dispatch_state":"completed","payload":{"kind":"list","output":{}},"x":0}"#,
        ] {
            assert!(parse_reply(bad).is_err(), "{bad}");
        }
    }
}
