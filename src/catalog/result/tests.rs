//! The result contract, value by value.

use serde_json::json;

use super::*;

fn ok(result: Value) -> ToolResult {
    validate_tool_result(result, None).expect("result is valid")
}

fn invalid(result: Value) {
    assert_eq!(
        validate_tool_result(result, None),
        Err(ResultFault::Invalid)
    );
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn output_schema() -> Schema {
    Schema::admit(&json!({"type": "object", "required": ["sum"],
        "properties": {"sum": {"type": "integer"}}}))
    .unwrap()
}

fn with_schema(result: Value) -> Result<ToolResult, ResultFault> {
    validate_tool_result(result, Some(&output_schema()))
}

#[test]
fn accepts_content_only_and_defaults_is_error_to_false() {
    let r = ok(json!({"content": [text("7")]}));
    assert_eq!(r.texts(), ["7"]);
    assert_eq!(r.structured_content(), None);
    assert!(!r.is_error());
}

#[test]
fn accepts_empty_content() {
    assert!(ok(json!({"content": []})).texts().is_empty());
}

#[test]
fn accepts_is_error_true() {
    assert!(ok(json!({"content": [], "isError": true})).is_error());
}

#[test]
fn rejects_result_that_is_not_an_object() {
    invalid(json!([]));
    invalid(json!(null));
    invalid(json!("text"));
}

#[test]
fn rejects_missing_content() {
    invalid(json!({}));
    invalid(json!({"isError": false}));
}

#[test]
fn rejects_content_that_is_not_an_array() {
    invalid(json!({"content": "x"}));
    invalid(json!({"content": text("x")}));
}

#[test]
fn accepts_32_content_items_and_rejects_33() {
    assert_eq!(
        ok(json!({"content": vec![text("x"); 32]})).texts().len(),
        32
    );
    invalid(json!({"content": vec![text("x"); 33]}));
}

#[test]
fn rejects_content_item_that_is_not_an_object() {
    invalid(json!({"content": ["x"]}));
}

#[test]
fn rejects_content_item_of_another_type() {
    invalid(json!({"content": [{"type": "image", "text": "x"}]}));
    invalid(json!({"content": [{"type": 1, "text": "x"}]}));
}

#[test]
fn rejects_content_item_with_extra_key() {
    invalid(json!({"content": [{"type": "text", "text": "x", "annotations": {}}]}));
}

#[test]
fn rejects_content_item_without_string_text() {
    invalid(json!({"content": [{"type": "text"}]}));
    invalid(json!({"content": [{"type": "text", "text": 1}]}));
    invalid(json!({"content": [{"type": "text", "data": "x"}]}));
}

#[test]
fn rejects_text_over_512_kib() {
    invalid(json!({"content": [text(&"x".repeat(512 * 1024 + 1))]}));
}

#[test]
fn rejects_unknown_top_level_key() {
    invalid(json!({"content": [], "_meta": {}}));
}

#[test]
fn rejects_structured_content_that_is_not_an_object() {
    invalid(json!({"content": [], "structuredContent": [1]}));
    invalid(json!({"content": [], "structuredContent": null}));
}

#[test]
fn rejects_is_error_that_is_not_a_boolean() {
    invalid(json!({"content": [], "isError": "true"}));
    invalid(json!({"content": [], "isError": null}));
}

fn result_of_serialized_len(total: usize) -> Value {
    let base = serde_json::to_vec(&json!({"content": [text("")]}))
        .unwrap()
        .len();
    json!({"content": [text(&"x".repeat(total - base))]})
}

#[test]
fn accepts_result_of_exactly_512_kib() {
    let r = result_of_serialized_len(512 * 1024);
    assert_eq!(serde_json::to_vec(&r).unwrap().len(), 512 * 1024);
    ok(r);
}

#[test]
fn rejects_result_one_byte_over_512_kib() {
    invalid(result_of_serialized_len(512 * 1024 + 1));
}

#[test]
fn rejects_structured_content_over_512_kib() {
    invalid(json!({"content": [], "structuredContent": {"x": "y".repeat(512 * 1024)}}));
}

#[test]
fn accepts_result_of_json_depth_16() {
    // The result is depth 0 and structuredContent depth 1.
    let mut v = json!(1);
    for _ in 2..16 {
        v = json!([v]);
    }
    ok(json!({"content": [], "structuredContent": {"a": v}}));
}

#[test]
fn rejects_result_of_json_depth_17() {
    let mut v = json!(1);
    for _ in 2..17 {
        v = json!([v]);
    }
    invalid(json!({"content": [], "structuredContent": {"a": v}}));
}

#[test]
fn rejects_result_of_more_than_4096_nodes() {
    // result, content, structuredContent and its array: 4 nodes.
    ok(json!({"content": [], "structuredContent": {"a": vec![0; 4092]}}));
    invalid(json!({"content": [], "structuredContent": {"a": vec![0; 4093]}}));
}

#[test]
fn rejects_control_character_in_a_key() {
    invalid(json!({"content": [], "structuredContent": {"a\u{0}": 1}}));
}

#[test]
fn rejects_over_long_key() {
    invalid(json!({"content": [], "structuredContent": {"k".repeat(1025): 1}}));
}

#[test]
fn without_output_schema_structured_content_is_accepted_as_is() {
    let r = ok(json!({"content": [], "structuredContent": {"anything": [1, "x"]}}));
    assert_eq!(
        r.structured_content(),
        json!({"anything": [1, "x"]}).as_object()
    );
}

#[test]
fn output_schema_accepts_matching_structured_content() {
    let r = with_schema(json!({"content": [text("7")], "structuredContent": {"sum": 7}}));
    assert!(r.is_ok());
}

#[test]
fn output_schema_requires_structured_content_when_not_an_error() {
    assert_eq!(
        with_schema(json!({"content": []})),
        Err(ResultFault::OutputSchemaViolation)
    );
    assert_eq!(
        with_schema(json!({"content": [], "isError": false})),
        Err(ResultFault::OutputSchemaViolation)
    );
}

#[test]
fn output_schema_rejects_mismatching_structured_content() {
    assert_eq!(
        with_schema(json!({"content": [], "structuredContent": {"sum": 7.5}})),
        Err(ResultFault::OutputSchemaViolation)
    );
}

#[test]
fn error_result_may_omit_structured_content() {
    assert!(with_schema(json!({"content": [text("boom")], "isError": true})).is_ok());
}

#[test]
fn error_result_with_structured_content_must_still_match() {
    assert_eq!(
        with_schema(json!({"content": [], "isError": true, "structuredContent": {}})),
        Err(ResultFault::OutputSchemaViolation)
    );
    assert!(with_schema(json!({"content": [], "isError": true,
        "structuredContent": {"sum": 1}}))
    .is_ok());
}

#[test]
fn contract_breach_wins_over_output_schema_violation() {
    assert_eq!(
        with_schema(json!({"content": [], "extra": 1})),
        Err(ResultFault::Invalid)
    );
}

#[test]
fn faults_map_to_stable_codes() {
    assert_eq!(ResultFault::Invalid.code(), ErrorCode::ResultInvalid);
    assert_eq!(
        ResultFault::OutputSchemaViolation.code(),
        ErrorCode::OutputSchemaViolation
    );
}

#[test]
fn to_json_always_has_is_error() {
    let r = ok(json!({"content": [text("a"), text("b")]}));
    assert_eq!(
        r.to_json(),
        json!({"content": [text("a"), text("b")], "isError": false})
    );
}

#[test]
fn to_json_keeps_structured_content_when_sent() {
    let input = json!({"content": [text("7")], "structuredContent": {"sum": 7}, "isError": true});
    assert_eq!(ok(input.clone()).to_json(), input);
}
