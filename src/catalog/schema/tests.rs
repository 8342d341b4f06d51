use super::*;
use serde_json::json;

fn admit(v: Value) -> Result<Schema, SchemaFault> {
    Schema::admit(&v)
}

/// A root object schema with one property `p` holding `schema`.
fn prop(schema: Value) -> Value {
    json!({"type": "object", "properties": {"p": schema}})
}

fn schema(v: Value) -> Schema {
    Schema::admit(&v).expect("schema is admissible")
}

fn mismatch(s: &Schema, instance: Value) -> (String, &'static str) {
    let m = s.check(&instance).expect_err("instance must not match");
    (m.path, m.reason)
}

// ---- admission: types ----

#[test]
fn admits_minimal_object_schema() {
    let s = schema(json!({"type": "object"}));
    assert_eq!(s.source(), &json!({"type": "object"}));
}

#[test]
fn admits_every_type_below_the_root() {
    for t in [
        "object", "array", "string", "number", "integer", "boolean", "null",
    ] {
        assert!(admit(prop(json!({ "type": t }))).is_ok(), "{t}");
    }
}

#[test]
fn rejects_root_of_a_type_other_than_object() {
    for t in ["array", "string", "number", "integer", "boolean", "null"] {
        assert_eq!(
            admit(json!({ "type": t })).err(),
            Some(SchemaFault::Invalid)
        );
    }
}

#[test]
fn rejects_a_schema_that_is_not_an_object() {
    assert_eq!(admit(json!(true)).err(), Some(SchemaFault::Invalid));
    assert_eq!(admit(prop(json!(true))).err(), Some(SchemaFault::Invalid));
    assert_eq!(admit(prop(json!([]))).err(), Some(SchemaFault::Invalid));
}

#[test]
fn rejects_missing_type() {
    assert_eq!(admit(json!({})).err(), Some(SchemaFault::Invalid));
    assert_eq!(
        admit(prop(json!({"title": "x"}))).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_type_that_is_not_one_string() {
    assert_eq!(
        admit(prop(json!({"type": ["string", "null"]}))).err(),
        Some(SchemaFault::Invalid)
    );
    assert_eq!(
        admit(prop(json!({"type": 1}))).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_unknown_type_name() {
    assert_eq!(
        admit(prop(json!({"type": "date"}))).err(),
        Some(SchemaFault::Invalid)
    );
}

// ---- admission: keywords ----

#[test]
fn admits_title_and_description_on_any_node() {
    assert!(
        admit(json!({"type": "object", "title": "T", "description": "D",
            "properties": {"p": {"type": "null", "title": "t", "description": ""}}}))
        .is_ok()
    );
}

#[test]
fn rejects_non_string_title_or_description() {
    assert_eq!(
        admit(json!({"type": "object", "title": 1})).err(),
        Some(SchemaFault::Invalid)
    );
    assert_eq!(
        admit(json!({"type": "object", "description": null})).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn admits_enum_of_1_to_128_values() {
    assert!(admit(prop(json!({"type": "string", "enum": ["a"]}))).is_ok());
    let values: Vec<Value> = (0..128).map(|i| json!(i)).collect();
    assert!(admit(prop(json!({"type": "integer", "enum": values}))).is_ok());
}

#[test]
fn rejects_empty_enum() {
    assert_eq!(
        admit(prop(json!({"type": "string", "enum": []}))).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_enum_of_129_values() {
    let values: Vec<Value> = (0..129).map(|i| json!(i)).collect();
    assert_eq!(
        admit(prop(json!({"type": "integer", "enum": values}))).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_enum_that_is_not_an_array() {
    assert_eq!(
        admit(prop(json!({"type": "string", "enum": "a"}))).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn admits_const_of_any_value() {
    for c in [
        json!(null),
        json!(1),
        json!("x"),
        json!([1]),
        json!({"a": 1}),
    ] {
        assert!(admit(json!({"type": "object", "const": c})).is_ok());
    }
}

#[test]
fn admits_128_properties() {
    let props: Map<String, Value> = (0..128)
        .map(|i| (format!("p{i}"), json!({"type": "null"})))
        .collect();
    assert!(admit(json!({"type": "object", "properties": props})).is_ok());
}

#[test]
fn rejects_129_properties() {
    let props: Map<String, Value> = (0..129)
        .map(|i| (format!("p{i}"), json!({"type": "null"})))
        .collect();
    assert_eq!(
        admit(json!({"type": "object", "properties": props})).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_properties_that_is_not_an_object() {
    assert_eq!(
        admit(json!({"type": "object", "properties": []})).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_an_invalid_property_schema() {
    assert_eq!(
        admit(prop(json!({"type": "string", "minLength": -1}))).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn admits_required_of_unique_strings_up_to_128() {
    assert!(admit(json!({"type": "object", "required": ["a", "b"]})).is_ok());
    let names: Vec<String> = (0..128).map(|i| format!("p{i}")).collect();
    assert!(admit(json!({"type": "object", "required": names})).is_ok());
}

#[test]
fn rejects_required_of_129_names() {
    let names: Vec<String> = (0..129).map(|i| format!("p{i}")).collect();
    assert_eq!(
        admit(json!({"type": "object", "required": names})).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_duplicate_required_names() {
    assert_eq!(
        admit(json!({"type": "object", "required": ["a", "a"]})).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_required_with_a_non_string() {
    assert_eq!(
        admit(json!({"type": "object", "required": ["a", 1]})).err(),
        Some(SchemaFault::Invalid)
    );
    assert_eq!(
        admit(json!({"type": "object", "required": "a"})).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn admits_boolean_additional_properties() {
    assert!(admit(json!({"type": "object", "additionalProperties": false})).is_ok());
    assert!(admit(json!({"type": "object", "additionalProperties": true})).is_ok());
}

#[test]
fn rejects_schema_valued_additional_properties() {
    assert_eq!(
        admit(json!({"type": "object", "additionalProperties": {"type": "string"}})).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_object_keywords_on_other_types() {
    for kw in [
        json!({"type": "string", "properties": {}}),
        json!({"type": "array", "required": []}),
        json!({"type": "integer", "additionalProperties": false}),
    ] {
        assert_eq!(admit(prop(kw)).err(), Some(SchemaFault::Invalid));
    }
}

#[test]
fn admits_string_lengths_including_min_equal_max() {
    assert!(admit(prop(
        json!({"type": "string", "minLength": 0, "maxLength": 10})
    ))
    .is_ok());
    assert!(admit(prop(
        json!({"type": "string", "minLength": 3, "maxLength": 3})
    ))
    .is_ok());
}

#[test]
fn rejects_negative_or_fractional_lengths() {
    for v in [json!(-1), json!(1.0), json!(1.5), json!("1")] {
        assert_eq!(
            admit(prop(json!({"type": "string", "maxLength": v}))).err(),
            Some(SchemaFault::Invalid)
        );
    }
}

#[test]
fn rejects_min_length_above_max_length() {
    assert_eq!(
        admit(prop(
            json!({"type": "string", "minLength": 4, "maxLength": 3})
        ))
        .err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_string_lengths_on_other_types() {
    assert_eq!(
        admit(prop(json!({"type": "array", "minLength": 1}))).err(),
        Some(SchemaFault::Invalid)
    );
    assert_eq!(
        admit(prop(json!({"type": "integer", "maxLength": 1}))).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn admits_item_counts_up_to_4096() {
    assert!(admit(prop(
        json!({"type": "array", "minItems": 4096, "maxItems": 4096})
    ))
    .is_ok());
}

#[test]
fn rejects_item_counts_of_4097() {
    assert_eq!(
        admit(prop(json!({"type": "array", "maxItems": 4097}))).err(),
        Some(SchemaFault::Invalid)
    );
    assert_eq!(
        admit(prop(json!({"type": "array", "minItems": 4097}))).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_min_items_above_max_items() {
    assert_eq!(
        admit(prop(json!({"type": "array", "minItems": 2, "maxItems": 1}))).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_array_keywords_on_other_types() {
    for kw in [
        json!({"type": "object", "items": {"type": "null"}}),
        json!({"type": "string", "minItems": 1}),
        json!({"type": "null", "maxItems": 1}),
    ] {
        assert_eq!(admit(prop(kw)).err(), Some(SchemaFault::Invalid));
    }
}

#[test]
fn admits_items_as_one_schema() {
    assert!(admit(prop(json!({"type": "array", "items": {"type": "string"}}))).is_ok());
}

#[test]
fn rejects_items_as_a_list_of_schemas() {
    assert_eq!(
        admit(prop(
            json!({"type": "array", "items": [{"type": "string"}]})
        ))
        .err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_an_invalid_items_schema() {
    assert_eq!(
        admit(prop(json!({"type": "array", "items": {"type": "x"}}))).err(),
        Some(SchemaFault::Invalid)
    );
}

#[test]
fn rejects_every_unsupported_keyword_sample() {
    let samples = [
        "$ref",
        "$schema",
        "$id",
        "$defs",
        "definitions",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "default",
        "examples",
        "uniqueItems",
        "patternProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "dependentRequired",
        "contains",
        "prefixItems",
        "nullable",
        "readOnly",
    ];
    for kw in samples {
        let mut root = Map::new();
        root.insert("type".into(), json!("object"));
        root.insert(kw.into(), json!(1));
        assert_eq!(
            admit(Value::Object(root.clone())).err(),
            Some(SchemaFault::KeywordUnsupported),
            "{kw} at root"
        );
        let mut nested = root;
        nested.insert("type".into(), json!("string"));
        assert_eq!(
            admit(prop(Value::Object(nested))).err(),
            Some(SchemaFault::KeywordUnsupported),
            "{kw} nested"
        );
    }
}

#[test]
fn unknown_keyword_wins_over_structural_faults_at_the_same_node() {
    assert_eq!(
        admit(json!({"type": "object", "$ref": "x"})).err(),
        Some(SchemaFault::KeywordUnsupported)
    );
    assert_eq!(
        admit(json!({"$ref": "x"})).err(),
        Some(SchemaFault::KeywordUnsupported)
    );
    assert_eq!(
        admit(json!({"type": "string", "pattern": "x"})).err(),
        Some(SchemaFault::KeywordUnsupported)
    );
    assert_eq!(
        admit(prop(
            json!({"type": "string", "minLength": -1, "format": "x"})
        ))
        .err(),
        Some(SchemaFault::KeywordUnsupported)
    );
}

#[test]
fn root_type_fault_wins_over_a_child_fault() {
    assert_eq!(
        admit(json!({"type": "array", "items": {"$ref": "x"}})).err(),
        Some(SchemaFault::Invalid)
    );
}

// ---- admission: bounds ----

fn with_description_of_serialized_len(total: usize) -> Value {
    let base = serde_json::to_vec(&json!({"type": "object", "description": ""}))
        .unwrap()
        .len();
    json!({"type": "object", "description": "d".repeat(total - base)})
}

#[test]
fn admits_schema_of_exactly_64_kib() {
    let v = with_description_of_serialized_len(64 * 1024);
    assert_eq!(serde_json::to_vec(&v).unwrap().len(), 64 * 1024);
    assert!(admit(v).is_ok());
}

#[test]
fn rejects_schema_one_byte_over_64_kib() {
    let v = with_description_of_serialized_len(64 * 1024 + 1);
    assert_eq!(admit(v).err(), Some(SchemaFault::BoundsExceeded));
}

fn const_of_json_depth(depth: usize) -> Value {
    // The const value sits at depth 1; each array adds one level.
    let mut v = json!(null);
    for _ in 1..depth {
        v = json!([v]);
    }
    json!({"type": "object", "const": v})
}

#[test]
fn admits_schema_of_json_depth_16() {
    assert!(admit(const_of_json_depth(16)).is_ok());
}

#[test]
fn rejects_schema_of_json_depth_17() {
    assert_eq!(
        admit(const_of_json_depth(17)).err(),
        Some(SchemaFault::BoundsExceeded)
    );
}

#[test]
fn admits_schema_of_4096_nodes_and_rejects_4097() {
    // root object, its "type" string and the const array are 3 nodes.
    let ok = json!({"type": "object", "const": vec![json!(null); 4093]});
    let over = json!({"type": "object", "const": vec![json!(null); 4094]});
    assert!(admit(ok).is_ok());
    assert_eq!(admit(over).err(), Some(SchemaFault::BoundsExceeded));
}

#[test]
fn admits_1024_byte_property_name_and_rejects_1025() {
    assert!(
        admit(json!({"type": "object", "properties": {"k".repeat(1024): {"type": "null"}}}))
            .is_ok()
    );
    assert_eq!(
        admit(json!({"type": "object", "properties": {"k".repeat(1025): {"type": "null"}}})).err(),
        Some(SchemaFault::BoundsExceeded)
    );
}

#[test]
fn rejects_control_character_in_a_key() {
    assert_eq!(
        admit(json!({"type": "object", "properties": {"a\u{1}": {"type": "null"}}})).err(),
        Some(SchemaFault::BoundsExceeded)
    );
}

fn nested_properties(levels: usize) -> Value {
    let mut v = json!({"type": "object"});
    for _ in 0..levels {
        v = json!({"type": "object", "properties": {"p": v}});
    }
    v
}

#[test]
fn admits_schema_nesting_within_json_depth() {
    // Nesting level k puts a node at JSON depth 2k and its `type` at 2k + 1.
    assert!(admit(nested_properties(7)).is_ok());
}

#[test]
fn rejects_schema_nesting_past_json_depth() {
    assert_eq!(
        admit(nested_properties(8)).err(),
        Some(SchemaFault::BoundsExceeded)
    );
}

#[test]
fn compile_rejects_schema_depth_over_16() {
    // Unreachable through `admit` (JSON depth is the tighter bound); guarded anyway.
    let mut v = json!({"type": "null"});
    for _ in 0..17 {
        v = json!({"type": "array", "items": v});
    }
    assert_eq!(compile(&v, 1).err(), Some(SchemaFault::BoundsExceeded));
}

// Matching instances against admitted schemas.
mod matching;

#[test]
fn example_schemas_use_only_profile_v1_keywords() {
    // The host's own admission (docs/PROTOCOL.md §4, Schema Profile) must accept every schema of
    // the plugin SDK's example plugin (the one behind `demo` and `bench`).
    for spec in webcodex_plugin_sdk::example_plugin().specs() {
        Schema::admit(&spec.input_schema).expect("inputSchema is admitted");
        let output = spec.output_schema.as_ref().expect("output schema");
        Schema::admit(output).expect("outputSchema is admitted");
    }
}
