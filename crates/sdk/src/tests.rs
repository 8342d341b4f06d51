//! The serve loop's contract, driven with in-memory input and output.

use std::io::{self, BufReader, Cursor, Write};

use serde_json::{json, Map, Value};

use super::*;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"webcodex-plugin-v1"}}"#;

/// Serves `input` with `plugin` and returns the raw output.
fn serve_raw(plugin: Plugin, input: impl Into<Vec<u8>>) -> Vec<u8> {
    let mut output = Vec::new();
    plugin
        .serve(Cursor::new(input.into()), &mut output)
        .expect("in-memory serve");
    output
}

/// Serves `input` and parses each output line; also checks every line is one JSON value.
fn serve(plugin: Plugin, input: &str) -> Vec<Value> {
    let output = serve_raw(plugin, input);
    assert!(output.is_empty() || output.ends_with(b"\n"));
    output
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).expect("each output line is one JSON value"))
        .collect()
}

fn call_line(id: u64, name: &str, arguments: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":arguments}})
        .to_string()
        + "\n"
}

/// The result of one tools/call on the example plugin.
fn example_call(name: &str, arguments: Value) -> Value {
    let responses = serve(example_plugin(), &call_line(7, name, arguments));
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0]["id"], 7);
    responses[0]["result"].clone()
}

fn error_of(response: &Value) -> (i64, &str) {
    let error = response["error"].as_object().expect("an error response");
    assert!(response.get("result").is_none());
    (
        error["code"].as_i64().expect("integer code"),
        error["message"].as_str().expect("string message"),
    )
}

/// A plugin with one tool that reports how many arguments it got, fails or panics on request.
fn probe_plugin() -> Plugin {
    Plugin::new("probe").tool(
        ToolSpec::new("probe", json!({"type": "object"})),
        |args: &Map<String, Value>| match args.get("mode").and_then(Value::as_str) {
            Some("fail") => Err(ToolError::new("it failed")),
            Some("panic") => panic!("probe asked to panic"),
            Some("huge") => Ok(ToolReply::text("x".repeat(MAX_LINE_BYTES))),
            _ => Ok(ToolReply::text(args.len().to_string())),
        },
    )
}

#[test]
fn initialize_answers_protocol_version_and_server_info() {
    let responses = serve(example_plugin(), &format!("{INIT}\n"));
    assert_eq!(
        responses,
        vec![json!({"jsonrpc":"2.0","id":1,"result":{
            "protocolVersion":"webcodex-plugin-v1",
            "serverInfo":{"name":"webcodex-example"}
        }})]
    );
}

#[test]
fn initialize_with_other_version_is_invalid_params() {
    let input =
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"mcp"}}"#;
    let responses = serve(example_plugin(), &format!("{input}\n"));
    assert_eq!(responses[0]["id"], 1);
    let (code, message) = error_of(&responses[0]);
    assert_eq!(code, -32602);
    assert!(!message.is_empty() && message.len() <= 512);
}

#[test]
fn initialize_without_params_is_invalid_params() {
    let responses = serve(
        example_plugin(),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n",
    );
    assert_eq!(error_of(&responses[0]).0, -32602);
}

#[test]
fn tools_list_has_exactly_the_tools_key_and_present_fields_only() {
    let plugin = Plugin::new("p")
        .tool(
            ToolSpec::new("bare", json!({"type": "object"})),
            |_: &Map<String, Value>| Ok(ToolReply::default()),
        )
        .tool(
            ToolSpec::new("full", json!({"type": "object"}))
                .title("Full")
                .description("All fields.")
                .output_schema(json!({"type": "object"}))
                .annotations(json!({"readOnlyHint": true})),
            |_: &Map<String, Value>| Ok(ToolReply::default()),
        );
    let responses = serve(
        plugin,
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}\n",
    );
    assert_eq!(
        responses[0]["result"],
        json!({"tools":[
            {"name":"bare","inputSchema":{"type":"object"}},
            {"name":"full","title":"Full","description":"All fields.",
             "inputSchema":{"type":"object"},"outputSchema":{"type":"object"},
             "annotations":{"readOnlyHint":true}}
        ]})
    );
}

#[test]
fn example_plugin_lists_echo_add_upper_with_titles_and_descriptions() {
    let responses = serve(
        example_plugin(),
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n",
    );
    let tools = responses[0]["result"]["tools"]
        .as_array()
        .expect("tools array");
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["echo", "add", "upper"]);
    for tool in tools {
        assert!(tool["title"].is_string() && tool["description"].is_string());
        assert_eq!(tool["annotations"], json!({"readOnlyHint": true}));
        assert!(tool["outputSchema"].is_object());
    }
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["text"]));
    assert_eq!(tools[0]["inputSchema"]["additionalProperties"], false);
}

#[test]
fn echo_returns_text_and_structured_content() {
    assert_eq!(
        example_call("echo", json!({"text": "hello"})),
        json!({"content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello"}})
    );
}

#[test]
fn add_returns_the_sum() {
    assert_eq!(
        example_call("add", json!({"a": 2, "b": 5})),
        json!({"content":[{"type":"text","text":"7"}],"structuredContent":{"sum":7}})
    );
    assert_eq!(
        example_call("add", json!({"a": i64::MIN, "b": u64::MAX}))["structuredContent"],
        json!({"sum": i64::MAX})
    );
}

#[test]
fn add_overflow_is_a_tool_error() {
    assert_eq!(
        example_call("add", json!({"a": i64::MAX, "b": 1})),
        json!({"content":[{"type":"text","text":"sum overflows a 64-bit integer"}],"isError":true})
    );
}

#[test]
fn upper_returns_upper_case_text() {
    assert_eq!(
        example_call("upper", json!({"text": "straße"})),
        json!({"content":[{"type":"text","text":"STRASSE"}],"structuredContent":{"text":"STRASSE"}})
    );
}

#[test]
fn tool_error_is_a_result_with_is_error_true() {
    let responses = serve(
        probe_plugin(),
        &call_line(3, "probe", json!({"mode": "fail"})),
    );
    assert_eq!(
        responses[0],
        json!({"jsonrpc":"2.0","id":3,"result":{
            "content":[{"type":"text","text":"it failed"}],"isError":true
        }})
    );
}

#[test]
fn wrong_argument_type_is_a_tool_error_not_a_crash() {
    let result = example_call("echo", json!({"text": 5}));
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"][0]["text"], "text must be a string");
}

#[test]
fn unknown_tool_is_invalid_params() {
    let responses = serve(example_plugin(), &call_line(3, "nope", json!({})));
    assert_eq!(error_of(&responses[0]), (-32602, "unknown tool"));
}

#[test]
fn missing_arguments_are_an_empty_object() {
    let input = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"probe\"}}\n";
    let responses = serve(probe_plugin(), input);
    assert_eq!(responses[0]["result"]["content"][0]["text"], "0");
}

#[test]
fn non_object_arguments_are_invalid_params() {
    for arguments in [json!([]), json!("x"), Value::Null] {
        let responses = serve(probe_plugin(), &call_line(3, "probe", arguments));
        assert_eq!(error_of(&responses[0]).0, -32602);
    }
}

#[test]
fn call_without_name_or_params_is_invalid_params() {
    let input = concat!(
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"arguments\":{}}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\"}\n",
    );
    let responses = serve(probe_plugin(), input);
    assert_eq!(responses.len(), 2);
    assert_eq!(error_of(&responses[0]).0, -32602);
    assert_eq!(error_of(&responses[1]).0, -32602);
}

#[test]
fn unknown_method_is_method_not_found() {
    let responses = serve(
        example_plugin(),
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}\n",
    );
    assert_eq!(responses[0]["id"], "a");
    assert_eq!(error_of(&responses[0]).0, -32601);
}

#[test]
fn request_without_method_is_invalid_request() {
    let responses = serve(
        example_plugin(),
        "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":5}\n",
    );
    assert_eq!(error_of(&responses[0]).0, -32600);
}

#[test]
fn notifications_get_no_reply() {
    let input = concat!(
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"x\"}}}\n",
    );
    assert!(serve_raw(example_plugin(), input).is_empty());
}

#[test]
fn null_id_is_a_request_not_a_notification() {
    let responses = serve(
        example_plugin(),
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}\n",
    );
    assert_eq!(responses[0]["id"], Value::Null);
    assert_eq!(error_of(&responses[0]).0, -32601);
}

#[test]
fn invalid_lines_are_ignored_and_serving_continues() {
    let input = format!("not json\n\n[1,2]\n42\n\u{feff}{INIT}\n{{\"id\":\n\r\n{INIT}\n");
    let responses = serve(example_plugin(), &input);
    assert_eq!(responses.len(), 1);
    assert_eq!(
        responses[0]["result"]["protocolVersion"],
        "webcodex-plugin-v1"
    );
}

#[test]
fn oversized_line_is_skipped_to_its_newline() {
    let mut input = vec![b' '; MAX_LINE_BYTES + 1];
    input.extend_from_slice(format!("\n{INIT}\n").as_bytes());
    let output = serve_raw(example_plugin(), input);
    let responses: Vec<&[u8]> = output
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(responses.len(), 1);
    let response: Value = serde_json::from_slice(responses[0]).expect("json");
    assert_eq!(response["id"], 1);
}

#[test]
fn line_of_exactly_the_limit_is_served() {
    let call = call_line(5, "echo", json!({"text": "padded"}));
    let call = call.trim_end();
    let mut input = vec![b' '; MAX_LINE_BYTES - call.len()];
    input.extend_from_slice(call.as_bytes());
    input.extend_from_slice(b"\r\n");
    let output = serve_raw(example_plugin(), input);
    let response: Value = serde_json::from_slice(&output).expect("one response");
    assert_eq!(response["result"]["structuredContent"]["text"], "padded");
}

#[test]
fn crlf_lines_and_lines_split_across_reads_are_served() {
    let input = format!("{INIT}\r\n{}", call_line(2, "echo", json!({"text": "é"})));
    let mut output = Vec::new();
    let reader = BufReader::with_capacity(5, Cursor::new(input.into_bytes()));
    example_plugin().serve(reader, &mut output).expect("serve");
    let lines: Vec<Value> = output
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("json"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["result"]["content"][0]["text"], "é");
}

#[test]
fn last_line_without_newline_is_served_then_eof_exits() {
    let responses = serve(example_plugin(), INIT);
    assert_eq!(responses.len(), 1);
}

#[test]
fn eof_exits_cleanly_without_output() {
    assert!(serve_raw(example_plugin(), "").is_empty());
}

#[test]
fn panicking_handler_is_an_internal_error_and_serving_continues() {
    let input = call_line(1, "probe", json!({"mode": "panic"})) + &call_line(2, "probe", json!({}));
    let responses = serve(probe_plugin(), &input);
    assert_eq!(error_of(&responses[0]).0, -32603);
    assert_eq!(responses[1]["result"]["content"][0]["text"], "0");
}

#[test]
fn result_over_the_line_limit_is_an_internal_error() {
    let responses = serve(
        probe_plugin(),
        &call_line(1, "probe", json!({"mode": "huge"})),
    );
    assert_eq!(error_of(&responses[0]).0, -32603);
}

/// Records each `write` and counts flushes.
#[derive(Default)]
struct Recorder {
    writes: Vec<Vec<u8>>,
    flushes: usize,
}

impl Write for &mut Recorder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writes.push(buf.to_vec());
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flushes += 1;
        Ok(())
    }
}

#[test]
fn each_response_is_one_write_of_one_line_then_a_flush() {
    let input = format!("{INIT}\n{}", call_line(2, "echo", json!({"text": "a\nb"})));
    let mut recorder = Recorder::default();
    example_plugin()
        .serve(Cursor::new(input), &mut recorder)
        .expect("serve");
    assert_eq!(recorder.writes.len(), 2);
    assert_eq!(recorder.flushes, 2);
    for write in &recorder.writes {
        assert_eq!(write.iter().filter(|&&b| b == b'\n').count(), 1);
        assert!(write.ends_with(b"\n"));
    }
}

struct Closed;

impl Write for Closed {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::ErrorKind::BrokenPipe.into())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn write_error_ends_serving_with_that_error() {
    let error = example_plugin()
        .serve(Cursor::new(format!("{INIT}\n")), Closed)
        .expect_err("closed output");
    assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
}

#[test]
#[should_panic(expected = "duplicate tool name")]
fn duplicate_tool_name_panics() {
    let ok = |_: &Map<String, Value>| Ok(ToolReply::default());
    let _ = Plugin::new("p")
        .tool(ToolSpec::new("t", json!({"type": "object"})), ok)
        .tool(ToolSpec::new("t", json!({"type": "object"})), ok);
}

#[test]
fn tool_output_helpers_build_text_and_structured() {
    let output = ToolReply::text("a")
        .with_text("b")
        .with_structured(json!({"k": 1}));
    assert_eq!(output.text, ["a", "b"]);
    assert_eq!(output.structured, Some(json!({"k": 1})));
    assert_eq!(ToolError::from("m").message(), "m");
}

#[test]
fn source_files_are_every_source_file_of_the_crate() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut on_disk: Vec<String> = std::fs::read_dir(&src)
        .expect("src/ is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| {
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            format!("src/{name}")
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = source::FILES.iter().map(|(p, _)| p.to_string()).collect();
    listed.sort();
    assert_eq!(listed, on_disk, "source::FILES lists every file under src/");
    for (path, text) in source::FILES {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), *text, "{path}");
    }
}
