//! The `tools/call` result of `plugin_tool` over MCP.
//!
//! - a successful `call` → the provider's validated ToolResult, unchanged (`isError` always
//!   present, `true` when the plugin reported a tool error);
//! - any other successful action → `{"content":[{"type":"text","text":<output JSON>}],
//!   "structuredContent":<output>,"isError":false}`;
//! - a failed action → the failure object (`error`, `dispatch`, `recovery`) the same way, with
//!   `"isError":true`: a model reads it and can follow `recovery`.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::jsonrpc::{self, RawJson};
use webcodex_plugin_host::{Outcome, ToolOutput};

/// The `CallToolResult` for the output of `plugin_tool(params)`.
pub fn call_tool_result(params: &Value, output: ToolOutput) -> Value {
    let call = params.get("action").and_then(Value::as_str) == Some("call");
    let success = output.is_success();
    let output = match output.into_outcome() {
        Outcome::Called(result) if call => return result.into_json(),
        Outcome::Received(r)
            if call && r.success && r.json.get("isError").is_some_and(Value::is_boolean) =>
        {
            return r.json
        }
        other => other.into_json(),
    };
    wrap(output, success)
}

/// The `CallToolResult` wrapping another action's output.
fn wrap(output: Value, success: bool) -> Value {
    let mut result = Map::with_capacity(3);
    let text = output.to_string();
    result.insert("content".into(), json!([{"type": "text", "text": text}]));
    result.insert("isError".into(), Value::Bool(!success));
    result.insert("structuredContent".into(), output);
    Value::Object(result)
}

/// [`call_tool_result`] as the JSON-RPC outcome to answer with, with `"resultType":"complete"`
/// when `stateless` (a 2026-era request). The same JSON, made with less work: another action's
/// output is serialized once, and that text is both the text content and the structured
/// content.
pub(crate) fn call_tool_outcome(
    params: &Value,
    output: ToolOutput,
    stateless: bool,
) -> jsonrpc::Outcome {
    let call = params.get("action").and_then(Value::as_str) == Some("call");
    let success = output.is_success();
    let passed = |mut result: Value| {
        if stateless {
            if let Some(map) = result.as_object_mut() {
                map.insert("resultType".into(), "complete".into());
            }
        }
        jsonrpc::Outcome::Result(result)
    };
    let output = match output.into_outcome() {
        Outcome::Called(result) if call => {
            return jsonrpc::Outcome::RawResult(RawJson::from_raw(match stateless {
                true => result.into_raw_with("resultType", "complete"),
                false => result.into_raw(),
            }))
        }
        Outcome::Received(r)
            if call && r.success && r.json.get("isError").is_some_and(Value::is_boolean) =>
        {
            return passed(r.json)
        }
        other => other,
    };
    let wrapped = RawJson::of(&output).and_then(|text| {
        RawJson::of(&Wrapped {
            content: [TextContent {
                text: text.get(),
                kind: "text",
            }],
            is_error: !success,
            result_type: stateless.then_some("complete"),
            structured_content: text.as_raw(),
        })
    });
    match wrapped {
        Ok(raw) => jsonrpc::Outcome::RawResult(raw),
        // Not reached (a `Value` always serializes); the slower way gives the same JSON.
        Err(_) => passed(wrap(output.into_json(), success)),
    }
}

/// A wrapped output's `CallToolResult`, its keys in the order a `Value` writes them.
#[derive(Serialize)]
struct Wrapped<'a> {
    content: [TextContent<'a>; 1],
    #[serde(rename = "isError")]
    is_error: bool,
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    #[serde(rename = "structuredContent")]
    structured_content: &'a RawValue,
}

#[derive(Serialize)]
struct TextContent<'a> {
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use webcodex_plugin_host::{Error, ErrorCode};

    #[test]
    fn a_call_passes_the_tool_result_through() {
        let result = json!({"content":[{"type":"text","text":"boom"}],"isError":true});
        let output: ToolOutput = Outcome::Called(
            webcodex_plugin_host::validate_tool_result(result.clone(), None).unwrap(),
        )
        .into();
        let params = json!({"action":"call","binding":"b","arguments":{}});
        assert_eq!(call_tool_result(&params, output), result);
    }

    #[test]
    fn the_answered_outcome_is_the_same_json_as_the_result() {
        let failure = ToolOutput::failure(&Error::not_started(ErrorCode::InvalidArguments, "m\"q"));
        let listed = ToolOutput::received(true, json!({"runners":[{"runner":"l\u{e9}\n"}]}));
        let called: ToolOutput = Outcome::Called(
            webcodex_plugin_host::validate_tool_result(
                json!({"content":[{"type":"text","text":"ok"}],"isError":false}),
                None,
            )
            .unwrap(),
        )
        .into();
        let call = json!({"action":"call","binding":"b","arguments":{}});
        let list = json!({"action":"list"});
        for (params, output) in [(&list, listed), (&call, failure), (&call, called)] {
            for stateless in [false, true] {
                let mut expected = call_tool_result(params, output.clone());
                if stateless {
                    expected["resultType"] = "complete".into();
                }
                let answered = match call_tool_outcome(params, output.clone(), stateless) {
                    jsonrpc::Outcome::Result(v) => v.to_string(),
                    jsonrpc::Outcome::RawResult(raw) => raw.get().to_string(),
                    jsonrpc::Outcome::Error(e) => panic!("{e:?}"),
                };
                assert_eq!(answered, expected.to_string(), "byte for byte");
            }
        }
    }

    #[test]
    fn other_actions_are_wrapped() {
        let output = ToolOutput::received(true, json!({"runners":[{"runner":"local"}]}));
        let got = call_tool_result(&json!({"action":"list"}), output);
        assert_eq!(
            got,
            json!({"content":[{"type":"text","text":"{\"runners\":[{\"runner\":\"local\"}]}"}],
                   "structuredContent":{"runners":[{"runner":"local"}]},"isError":false})
        );
    }

    #[test]
    fn failures_are_tool_errors_with_the_failure_object() {
        let output = ToolOutput::failure(&Error::not_started(ErrorCode::InvalidArguments, "m"));
        let got = call_tool_result(&json!({"action":"call"}), output.clone());
        assert_eq!(got["isError"], true);
        assert_eq!(got["structuredContent"], output.to_json());
        let text: Value =
            serde_json::from_str(got["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, output.to_json());
        assert_eq!(got["structuredContent"]["recovery"], "fix_arguments");
    }
}
