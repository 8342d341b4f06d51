//! The built-in example plugin behind the `demo` and `bench` commands.

use serde_json::{json, Map, Value};

use super::{Plugin, ToolError, ToolReply, ToolSpec};

/// The built-in example plugin, `webcodex-example`, with three deterministic tools:
///
/// - `echo` `{text}` → the text, as content and as `structuredContent` `{"text"}`;
/// - `add` `{a, b}` (integers) → the sum, as content and `{"sum"}`; a sum outside the 64-bit
///   signed range is a [`ToolError`];
/// - `upper` `{text}` → the text in upper case, as content and `{"text"}`.
///
/// All schemas use only Schema Profile v1 keywords; all tools are annotated `readOnlyHint`.
/// The binary serves it as its hidden `example-plugin` command.
pub fn example_plugin() -> Plugin {
    Plugin::new("webcodex-example")
        .tool(
            ToolSpec::new("echo", text_input("The text to send back unchanged."))
                .title("Echo")
                .description("Returns the given text unchanged.")
                .output_schema(text_output())
                .annotations(read_only()),
            echo,
        )
        .tool(
            ToolSpec::new(
                "add",
                json!({
                    "type": "object",
                    "properties": {
                        "a": {"type": "integer", "description": "The first addend."},
                        "b": {"type": "integer", "description": "The second addend."}
                    },
                    "required": ["a", "b"],
                    "additionalProperties": false
                }),
            )
            .title("Add")
            .description("Adds two 64-bit integers; fails if the sum does not fit.")
            .output_schema(json!({
                "type": "object",
                "properties": {"sum": {"type": "integer"}},
                "required": ["sum"]
            }))
            .annotations(read_only()),
            add,
        )
        .tool(
            ToolSpec::new("upper", text_input("The text to convert to upper case."))
                .title("Upper case")
                .description("Returns the given text in upper case (Unicode-aware).")
                .output_schema(text_output())
                .annotations(read_only()),
            upper,
        )
}

fn text_input(description: &str) -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": description}},
        "required": ["text"],
        "additionalProperties": false
    })
}

fn text_output() -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    })
}

fn read_only() -> Value {
    json!({"readOnlyHint": true})
}

fn text_argument(args: &Map<String, Value>) -> Result<&str, ToolError> {
    args.get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::new("text must be a string"))
}

fn text_result(text: String) -> ToolReply {
    let mut structured = Map::with_capacity(1);
    structured.insert("text".to_owned(), Value::String(text.clone()));
    ToolReply::text(text).with_structured(Value::Object(structured))
}

fn echo(args: &Map<String, Value>) -> Result<ToolReply, ToolError> {
    text_argument(args).map(|text| text_result(text.to_owned()))
}

fn upper(args: &Map<String, Value>) -> Result<ToolReply, ToolError> {
    text_argument(args).map(|text| text_result(text.to_uppercase()))
}

fn add(args: &Map<String, Value>) -> Result<ToolReply, ToolError> {
    let a = integer_argument(args, "a")?;
    let b = integer_argument(args, "b")?;
    let sum = i64::try_from(a + b).map_err(|_| ToolError::new("sum overflows a 64-bit integer"))?;
    Ok(ToolReply::text(sum.to_string()).with_structured(json!({ "sum": sum })))
}

/// An integer argument, widened so that any i64 or u64 input adds without overflow.
fn integer_argument(args: &Map<String, Value>, key: &str) -> Result<i128, ToolError> {
    let value = args.get(key);
    value
        .and_then(Value::as_i64)
        .map(i128::from)
        .or_else(|| value.and_then(Value::as_u64).map(i128::from))
        .ok_or_else(|| ToolError::new(format!("{key} must be an integer")))
}
