//! A call's result read from its text (`validate_tool_result_text`: the one scan of the fast
//! path when it is sure, the `Value` path otherwise), as the call path and fronts read a
//! result, against its oracle, the `Value` path alone (decode, then `validate_tool_result`).
//!
//! The input is the result's text. Both paths give the same verdict, and an accepted result
//! the same canonical text, with no output schema and with one (`{"text": string}` required).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use webcodex_plugin_host::__private::validate_tool_result_text;
use webcodex_plugin_host::{validate_tool_result, Schema};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let schema = Schema::admit(&json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    }))
    .expect("a valid schema");
    for output_schema in [None, Some(&schema)] {
        let scanned = validate_tool_result_text(text, output_schema);
        let decoded = match serde_json::from_str::<Value>(text) {
            Ok(value) => validate_tool_result(value, output_schema),
            Err(_) => Err(webcodex_plugin_host::ResultFault::Invalid),
        };
        match (&scanned, &decoded) {
            (Ok(a), Ok(b)) => assert_eq!(a.as_raw().get(), b.as_raw().get(), "{text}"),
            (Err(a), Err(b)) => assert_eq!(a, b, "{text}"),
            _ => panic!(
                "the scan and the Value path disagree on {text:?}: {scanned:?} / {decoded:?}"
            ),
        }
    }
});
