//! Argument and result matching against an admitted Schema Profile v1 schema.
//!
//! The input is a stream of JSON values: a schema, then an instance. When the schema is
//! admitted, the instance is matched as call arguments and as a tools/call result's
//! structuredContent. A mismatch path may name only properties the schema declares (or
//! requires) and array indices: never instance data. A validated result stays valid when
//! validated again.
#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use webcodex_plugin_host::__private::frame::check_json_bounds;
use webcodex_plugin_host::{validate_tool_result, Schema};

fuzz_target!(|data: &[u8]| {
    let mut values = serde_json::Deserializer::from_slice(data).into_iter::<Value>();
    let (Some(Ok(schema)), Some(Ok(instance))) = (values.next(), values.next()) else {
        return;
    };
    let Ok(admitted) = Schema::admit(&schema) else {
        return;
    };
    let mut names = BTreeSet::new();
    declared_names(&schema, &mut names);

    // As call arguments: bounds first, then the schema.
    let _ = check_json_bounds(&instance);
    if let Err(mismatch) = admitted.check(&instance) {
        for segment in mismatch.path.split('/').skip(1) {
            let segment = segment.replace("~1", "/").replace("~0", "~");
            assert!(
                segment.bytes().all(|b| b.is_ascii_digit()) || names.contains(&segment),
                "a mismatch path holds a segment the schema does not declare"
            );
        }
        assert!(!mismatch.reason.is_empty());
    }

    // As structured content of a result, with and without an error flag.
    for is_error in [false, true] {
        let result = json!({
            "content": [{"type": "text", "text": "t"}],
            "structuredContent": instance.clone(),
            "isError": is_error,
        });
        let with_schema = validate_tool_result(result.clone(), Some(&admitted));
        let without = validate_tool_result(result, None);
        if let Ok(valid) = with_schema {
            assert!(without.is_ok(), "a schema can only narrow what is accepted");
            assert_eq!(valid.is_error(), is_error);
            validate_tool_result(valid.to_json(), Some(&admitted))
                .expect("a validated result validates again");
        }
    }
    // The instance itself as a whole result.
    if let Ok(valid) = validate_tool_result(instance.clone(), Some(&admitted)) {
        let json = valid.to_json();
        assert_eq!(json["isError"].as_bool(), Some(valid.is_error()));
        validate_tool_result(json, Some(&admitted)).expect("a validated result validates again");
    }
});

/// Every property name a schema declares in `properties` or `required`, at any depth.
fn declared_names(schema: &Value, names: &mut BTreeSet<String>) {
    let Some(map) = schema.as_object() else {
        return;
    };
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (name, child) in properties {
            names.insert(name.clone());
            declared_names(child, names);
        }
    }
    if let Some(Value::Array(required)) = map.get("required") {
        names.extend(required.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    if let Some(items) = map.get("items") {
        declared_names(items, names);
    }
}
