//! Schema Profile v1 benches (docs/PROTOCOL.md §4, Schema Profile; docs/PERFORMANCE.md): matching
//! arguments against an admitted schema, admitting schemas, and validating a tools/call result.
//! Throughput is the serialized size of the instance (check, result) or of the schema (admit).
//!
//! Run with `cargo bench --bench schema`.

use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    black_box, criterion_group, criterion_main, BatchSize, BenchmarkGroup, Criterion, Throughput,
};
use serde_json::{json, Map, Value};
use webcodex_plugin_host::MAX_ARGUMENTS_BYTES;
use webcodex_plugin_host::{__private::frame::check_json_bounds, __private::frame::MAX_NODES};
use webcodex_plugin_host::{validate_tool_result, Schema};

/// Largest serialized schema (docs/PROTOCOL.md §3, bounds).
const MAX_SCHEMA_BYTES: usize = 64 * 1024;

fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(40);
    group
}

fn serialized_len(value: &Value) -> usize {
    serde_json::to_vec(value).expect("serialize").len()
}

fn admit(schema: &Value) -> Schema {
    Schema::admit(schema).expect("schema is admissible")
}

/// The example plugin's `echo` input schema.
fn echo_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to send back unchanged."}},
        "required": ["text"],
        "additionalProperties": false
    })
}

/// Ten properties of every type, all required, no additional properties.
fn ten_property_case() -> (Value, Value) {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 64},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "enabled": {"type": "boolean"},
            "mode": {"type": "string", "enum": ["fast", "safe", "auto"]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 16},
            "limits": {"type": "object", "properties": {
                "min": {"type": "integer"}, "max": {"type": "integer"}},
                "required": ["min", "max"], "additionalProperties": false},
            "kind": {"type": "string", "const": "request"},
            "note": {"type": "null"},
            "path": {"type": "string", "description": "A relative path."}
        },
        "required": ["name", "count", "ratio", "enabled", "mode", "tags", "limits", "kind",
            "note", "path"],
        "additionalProperties": false
    });
    let instance = json!({
        "name": "report", "count": 42, "ratio": 0.75, "enabled": true, "mode": "safe",
        "tags": ["a", "b", "c"], "limits": {"min": 1, "max": 10}, "kind": "request",
        "note": null, "path": "src/lib.rs"
    });
    (schema, instance)
}

/// `levels` array schemas nested under property `a`, around an `integer` leaf.
fn nested_array_schema(levels: usize) -> Value {
    let leaf = (0..levels).fold(
        json!({"type": "integer"}),
        |inner, _| json!({"type": "array", "items": inner}),
    );
    json!({"type": "object", "properties": {"a": leaf}})
}

/// The deepest schema chain Schema::admit accepts (nested `items`, the cheapest nesting in
/// JSON depth) and an instance that follows it to the bottom.
/// Returns the schema, the instance and the depth of the instance's deepest value.
fn max_depth_case() -> (Value, Value, usize) {
    let levels = (1..64)
        .take_while(|&n| Schema::admit(&nested_array_schema(n)).is_ok())
        .last()
        .expect("at least one level is admissible");
    let leaf = (0..levels).fold(json!(1), |inner, _| json!([inner]));
    (
        nested_array_schema(levels),
        json!({ "a": leaf }),
        levels + 1,
    )
}

/// A full binary tree of arrays under property `a` using the whole 4096-node budget: the root
/// object plus 2^12 - 1 tree nodes, integers at the leaves.
fn full_tree_case() -> (Value, Value) {
    fn tree(depth: usize) -> Value {
        if depth == 0 {
            json!(7)
        } else {
            json!([tree(depth - 1), tree(depth - 1)])
        }
    }
    (nested_array_schema(11), json!({ "a": tree(11) }))
}

/// The longest integer array the node bound allows in arguments: root + array + 4094 items.
fn long_array_case() -> (Value, Value) {
    let schema = json!({"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 4096}},
        "required": ["items"]});
    let items: Vec<Value> = (0..MAX_NODES as u64 - 2).map(Value::from).collect();
    (schema, json!({ "items": items }))
}

/// One string filling the 64 KiB arguments bound, made of `unit` repeated, under `maxLength`.
fn long_string_case(unit: &str) -> (Value, Value) {
    let schema = json!({"type": "object", "properties": {
        "text": {"type": "string", "minLength": 1, "maxLength": 65536}},
        "required": ["text"]});
    let overhead = serialized_len(&json!({"text": ""}));
    let text = unit.repeat((MAX_ARGUMENTS_BYTES - overhead) / unit.len());
    (schema, json!({ "text": text }))
}

fn check(c: &mut Criterion) {
    let mut group = group(c, "schema/check");
    let (deep_schema, deep_instance, depth) = max_depth_case();
    let cases: Vec<(String, (Value, Value))> = vec![
        (
            "typical/echo_text_hello".into(),
            (echo_schema(), json!({"text": "hello"})),
        ),
        ("typical/10_properties".into(), ten_property_case()),
        (
            format!("worst/max_depth_{depth}"),
            (deep_schema, deep_instance),
        ),
        ("worst/full_tree_4096_nodes".into(), full_tree_case()),
        ("worst/array_4094_integers".into(), long_array_case()),
        ("worst/string_64KiB_ascii".into(), long_string_case("x")),
        (
            "worst/string_64KiB_multibyte".into(),
            long_string_case("é✓"),
        ),
    ];
    for (name, (schema, instance)) in cases {
        // Every case is an instance the provider would pass to check: within the bounds.
        assert_eq!(check_json_bounds(&instance), Ok(()), "{name}: JSON bounds");
        let len = serialized_len(&instance);
        assert!(len <= MAX_ARGUMENTS_BYTES, "{name}: {len} bytes");
        let schema = admit(&schema);
        schema.check(&instance).expect("instance matches");
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_function(name, |b| b.iter(|| schema.check(black_box(&instance))));
    }
    group.finish();
}

/// A schema close to the 64 KiB limit: 128 properties of four kinds (strings with enums and
/// lengths, integers, arrays of small objects, booleans), each with a title and description.
fn large_schema() -> Value {
    let build = |description_len: usize| {
        let description = "d".repeat(description_len);
        let mut properties = Map::new();
        for i in 0..128 {
            let mut node = match i % 4 {
                0 => json!({"type": "string", "minLength": 1, "maxLength": 64,
                    "enum": ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]}),
                1 => json!({"type": "integer"}),
                2 => json!({"type": "array", "maxItems": 32, "items": {"type": "object",
                    "properties": {"key": {"type": "string"}, "value": {"type": "number"}},
                    "required": ["key"], "additionalProperties": false}}),
                _ => json!({"type": "boolean"}),
            };
            node["title"] = json!(format!("Property {i}"));
            node["description"] = json!(description);
            properties.insert(format!("property_{i:03}"), node);
        }
        let required: Vec<Value> = properties.keys().map(|k| json!(k)).collect();
        json!({"type": "object", "title": "Large", "description": "A schema near 64 KiB.",
            "properties": properties, "required": required, "additionalProperties": false})
    };
    let base = serialized_len(&build(0));
    let schema = build((MAX_SCHEMA_BYTES - 1024 - base) / 128);
    assert!(serialized_len(&schema) <= MAX_SCHEMA_BYTES);
    schema
}

fn admission(c: &mut Criterion) {
    let mut group = group(c, "schema/admit");
    for (name, schema) in [
        ("typical/echo_input", echo_schema()),
        ("typical/10_properties", ten_property_case().0),
        ("large/128_properties_63KiB", large_schema()),
    ] {
        admit(&schema);
        group.throughput(Throughput::Bytes(serialized_len(&schema) as u64));
        group.bench_function(name, |b| b.iter(|| Schema::admit(black_box(&schema))));
    }
    group.finish();
}

fn tool_result(c: &mut Criterion) {
    let mut group = group(c, "schema/validate_tool_result");
    // The example plugin's echo output schema and result.
    let output_schema = admit(&json!({"type": "object",
        "properties": {"text": {"type": "string"}}, "required": ["text"]}));
    let result = json!({"content": [{"type": "text", "text": "hello"}],
        "structuredContent": {"text": "hello"}, "isError": false});
    group.throughput(Throughput::Bytes(serialized_len(&result) as u64));
    for (name, schema) in [
        ("typical/echo_with_output_schema", Some(&output_schema)),
        ("typical/echo_without_output_schema", None),
    ] {
        validate_tool_result(result.clone(), schema).expect("valid result");
        // The validator consumes the result: the clone is made outside the timing.
        group.bench_function(name, |b| {
            b.iter_batched(
                || result.clone(),
                |r| validate_tool_result(r, schema),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, check, admission, tool_result);
criterion_main!(benches);
