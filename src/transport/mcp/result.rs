//! The `tools/call` result of `plugin_tool` over MCP.
//!
//! - a successful `call` → the provider's validated ToolResult, unchanged (`isError` always
//!   present, `true` when the plugin reported a tool error);
//! - any other successful action → `{"content":[{"type":"text","text":<output JSON>}],
//!   "structuredContent":<output>,"isError":false}`;
//! - a failed action → the failure object (`error`, `dispatch`, `recovery`) the same way, with
//!   `"isError":true`: a model reads it and can follow `recovery`.

use serde_json::{json, Map, Value};

use crate::gateway::{Outcome, ToolOutput};

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
    let mut result = Map::with_capacity(3);
    let text = output.to_string();
    result.insert("content".into(), json!([{"type": "text", "text": text}]));
    result.insert("isError".into(), Value::Bool(!success));
    result.insert("structuredContent".into(), output);
    Value::Object(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, ErrorCode};

    #[test]
    fn a_call_passes_the_tool_result_through() {
        let result = json!({"content":[{"type":"text","text":"boom"}],"isError":true});
        let output: ToolOutput =
            Outcome::Called(crate::catalog::validate_tool_result(result.clone(), None).unwrap())
                .into();
        let params = json!({"action":"call","binding":"b","arguments":{}});
        assert_eq!(call_tool_result(&params, output), result);
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
