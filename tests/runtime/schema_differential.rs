//! Differential test: Schema Profile v1 matching against an established JSON Schema validator.
//!
//! Property-based: schemas are generated inside the profile (every one must be admitted), with
//! instances built from each schema — mostly conforming, with a random value, a missing
//! required property, an unknown property or a length one off the bound injected at any depth —
//! so that both matching and non-matching instances are common. The verdict of
//! [`Schema::check`] is compared with the `jsonschema` crate (draft 2020-12).
//!
//! Where the profile deliberately differs, the comparison is adjusted explicitly, and each
//! difference has its own test below:
//! - **Numbers keep their representation.** `integer` is a JSON number that is an i64/u64, so
//!   `1.0` is not an integer; `const`/`enum` compare values as written, so `1.0` is not equal
//!   to `1` (nor `-0.0` to `0`). JSON Schema compares numbers mathematically. The property
//!   therefore checks (a) the profile never accepts what the validator rejects, and (b) after
//!   rewriting every integral float as an integer, in schema and instance, the two agree
//!   exactly. Integral floats beyond ±2^53 are not generated (the rewrite would be lossy).
//! - **JSON bounds.** Call arguments (and results) are checked against the JSON bounds — depth
//!   16, 4096 nodes, 512 KiB strings, 1024-byte keys without control characters — before the
//!   schema; JSON Schema has no such bounds. Generated instances stay inside them (asserted).
//! - **String length** is counted in Unicode scalar values by both (no difference; generated
//!   strings mix ASCII, two- and four-byte characters and combining marks to show it).
//!
//! Cases: `PROPTEST_CASES` schemas (default 2000), each with 8 instances. Longer run:
//! `PROPTEST_CASES=200000 cargo test --release --test schema_differential` (see
//! docs/RELIABILITY.md).

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Map, Value};
use webcodex_plugin_host::__private::frame::check_json_bounds;
use webcodex_plugin_host::Schema;

/// Schemas per default run; each brings [`INSTANCES`] instances.
const DEFAULT_CASES: u32 = 2000;
/// Instances matched against each generated schema.
const INSTANCES: usize = 8;

// ---- generators -----------------------------------------------------------------------------

/// Property names: ASCII, multi-byte, JSON-pointer specials and the empty name.
fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "é", "a/b", "~x", "", "😀"]).prop_map(String::from)
}

/// Strings whose lengths in scalar values and in bytes differ.
fn text(min: usize, max: usize) -> BoxedStrategy<String> {
    vec(
        prop::sample::select(vec!["a", "Z", "é", "😀", "e\u{301}", "\u{10FFFF}", " "]),
        min..=max,
    )
    .prop_map(|parts| parts.concat())
    .boxed()
}

/// Numbers: small and extreme integers, non-integral floats and integral floats (`2.0`, `-0.0`).
fn number() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => (-3i64..=3).prop_map(Value::from),
        1 => prop::sample::select(vec![i64::MIN, i64::MAX]).prop_map(Value::from),
        1 => Just(Value::from(u64::MAX)),
        2 => (-3i64..=3).prop_map(|i| Value::from(i as f64 + 0.5)),
        2 => (-3i64..=3).prop_map(|i| Value::from(i as f64)),
        1 => Just(Value::from(-0.0f64)),
    ]
    .boxed()
}

fn scalar() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        text(0, 4).prop_map(Value::String),
    ]
    .boxed()
}

/// Any JSON value, nested at most three levels.
fn any_json() -> BoxedStrategy<Value> {
    scalar()
        .prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..4).prop_map(Value::Array),
                btree_map(key(), inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

/// An optional `min ≤ max` pair of length bounds.
fn bounds(limit: u64) -> impl Strategy<Value = (Option<u64>, Option<u64>)> {
    (0..=limit, 0..=limit, any::<bool>(), any::<bool>())
        .prop_map(|(a, b, lo, hi)| (lo.then_some(a.min(b)), hi.then_some(a.max(b))))
}

/// Adds the optional `title`, `const` or `enum` of a node.
fn decorate(node: Map<String, Value>) -> BoxedStrategy<Value> {
    let values = vec(any_json(), 1..4);
    (
        prop_oneof![6 => Just(None), 1 => any_json().prop_map(Some)],
        prop_oneof![5 => Just(None), 2 => values.prop_map(Some)],
        any::<bool>(),
    )
        .prop_map(move |(constant, choices, titled)| {
            let mut node = node.clone();
            if titled {
                node.insert("title".into(), json!("A title"));
            }
            if let Some(constant) = constant {
                node.insert("const".into(), constant);
            } else if let Some(choices) = choices {
                node.insert("enum".into(), Value::Array(choices));
            }
            Value::Object(node)
        })
        .boxed()
}

fn typed(name: &str) -> Map<String, Value> {
    let mut node = Map::new();
    node.insert("type".into(), json!(name));
    node
}

fn leaf_schema() -> BoxedStrategy<Value> {
    prop_oneof![
        bounds(4).prop_flat_map(|(min, max)| {
            let mut node = typed("string");
            if let Some(min) = min {
                node.insert("minLength".into(), json!(min));
            }
            if let Some(max) = max {
                node.insert("maxLength".into(), json!(max));
            }
            decorate(node)
        }),
        decorate(typed("number")),
        decorate(typed("integer")),
        decorate(typed("boolean")),
        decorate(typed("null")),
    ]
    .boxed()
}

/// An object node: properties, `required` (a subset of them, maybe plus an undeclared name)
/// and an optional `additionalProperties`.
fn object_schema(child: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    (
        btree_map(key(), child, 0..4),
        vec(any::<bool>(), 4),
        prop_oneof![3 => Just(None), 1 => key().prop_map(Some)],
        prop_oneof![Just(None), Just(Some(true)), Just(Some(false))],
    )
        .prop_flat_map(|(properties, picks, extra, additional)| {
            let mut node = typed("object");
            let mut required: Vec<String> = properties
                .keys()
                .zip(&picks)
                .filter(|(_, pick)| **pick)
                .map(|(k, _)| k.clone())
                .collect();
            if let Some(extra) = extra {
                if !required.contains(&extra) {
                    required.push(extra);
                }
            }
            if !properties.is_empty() {
                node.insert(
                    "properties".into(),
                    Value::Object(properties.into_iter().collect()),
                );
            }
            if !required.is_empty() {
                node.insert("required".into(), json!(required));
            }
            if let Some(additional) = additional {
                node.insert("additionalProperties".into(), json!(additional));
            }
            decorate(node)
        })
        .boxed()
}

fn array_schema(child: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    (prop::option::of(child), bounds(3))
        .prop_flat_map(|(items, (min, max))| {
            let mut node = typed("array");
            if let Some(items) = items {
                node.insert("items".into(), items);
            }
            if let Some(min) = min {
                node.insert("minItems".into(), json!(min));
            }
            if let Some(max) = max {
                node.insert("maxItems".into(), json!(max));
            }
            decorate(node)
        })
        .boxed()
}

/// A root schema inside the profile: an object node whose children nest up to four levels.
fn root_schema() -> BoxedStrategy<Value> {
    let node = leaf_schema().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![object_schema(inner.clone()), array_schema(inner)].boxed()
    });
    object_schema(node.boxed())
}

/// An instance for `schema`: mostly conforming, with faults injected at any depth.
fn instance_for(schema: &Value) -> BoxedStrategy<Value> {
    prop_oneof![8 => conforming(schema), 1 => any_json()].boxed()
}

fn conforming(schema: &Value) -> BoxedStrategy<Value> {
    let node = schema.as_object().expect("generated nodes are objects");
    if let Some(constant) = node.get("const") {
        return Just(constant.clone()).boxed();
    }
    if let Some(Value::Array(choices)) = node.get("enum") {
        return prop::sample::select(choices.clone()).boxed();
    }
    let bound = |key: &str| node.get(key).and_then(Value::as_u64).map(|n| n as usize);
    // Lengths reach one past each bound, so both sides of it are common.
    let span = |min: Option<usize>, max: Option<usize>| {
        let lo = min.map_or(0, |m| m.saturating_sub(1));
        let hi = max.map_or(lo + 3, |m| m + 1).max(lo);
        (lo, hi)
    };
    match node["type"].as_str().expect("typed node") {
        "null" => Just(Value::Null).boxed(),
        "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
        "integer" | "number" => number(),
        "string" => {
            let (lo, hi) = span(bound("minLength"), bound("maxLength"));
            text(lo, hi).prop_map(Value::String).boxed()
        }
        "array" => {
            let (lo, hi) = span(bound("minItems"), bound("maxItems"));
            let item = match node.get("items") {
                Some(items) => instance_for(items),
                None => any_json(),
            };
            vec(item, lo..=hi).prop_map(Value::Array).boxed()
        }
        "object" => {
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut members: Vec<BoxedStrategy<Option<(String, Value)>>> = Vec::new();
            if let Some(Value::Object(properties)) = node.get("properties") {
                for (name, child) in properties {
                    let present = if required.contains(&name.as_str()) {
                        0.95
                    } else {
                        0.6
                    };
                    let name = name.clone();
                    members.push(
                        prop::option::weighted(present, instance_for(child))
                            .prop_map(move |v| v.map(|v| (name.clone(), v)))
                            .boxed(),
                    );
                }
            }
            for name in required {
                // Required names that no property declares.
                if node.get("properties").and_then(|p| p.get(name)).is_none() {
                    let name = name.to_string();
                    members.push(
                        prop::option::weighted(0.9, any_json())
                            .prop_map(move |v| v.map(|v| (name.clone(), v)))
                            .boxed(),
                    );
                }
            }
            // Sometimes an undeclared property.
            members.push(
                prop::option::weighted(0.25, (key(), any_json()))
                    .prop_map(|m| m.map(|(k, v)| (format!("x{k}"), v)))
                    .boxed(),
            );
            members
                .prop_map(|members| Value::Object(members.into_iter().flatten().collect()))
                .boxed()
        }
        other => panic!("unexpected type {other}"),
    }
}

/// Every integral float (within ±2^53) rewritten as an integer: the profile's verdict on the
/// result is JSON Schema's verdict on the original.
fn normalize(value: &Value) -> Value {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            let f = n.as_f64().expect("a float");
            if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
                Value::from(f as i64)
            } else {
                value.clone()
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), normalize(v))).collect())
        }
        _ => value.clone(),
    }
}

// ---- the property ---------------------------------------------------------------------------

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// A fresh seed for each run (16 bytes, as XorShift takes).
fn seed() -> [u8; 16] {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    (nanos ^ u128::from(std::process::id()) << 64).to_le_bytes()
}

#[test]
fn profile_matching_agrees_with_jsonschema() {
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    };
    let strategy = root_schema().prop_flat_map(|schema| {
        let instances = vec(instance_for(&schema), INSTANCES);
        (Just(schema), instances)
    });
    let matched = AtomicUsize::new(0);
    let rejected = AtomicUsize::new(0);
    let representation = AtomicUsize::new(0);
    // XorShift: ChaCha is a fifth of the run time in a debug build. The seed is random per run
    // (a failure prints the minimal case); PROPTEST_RNG_SEED is not needed to reproduce it.
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::XorShift, &seed()));
    runner
        .run(&strategy, |(schema, instances)| {
            let profile = Schema::admit(&schema).expect("generated schemas are inside the profile");
            let oracle =
                jsonschema::validator_for(&schema).expect("profile schemas are valid JSON Schema");
            let normalized = Schema::admit(&normalize(&schema)).expect("still inside the profile");
            for instance in &instances {
                prop_assert!(
                    check_json_bounds(instance).is_ok(),
                    "instance within bounds"
                );
                let theirs = oracle.is_valid(instance);
                let ours = profile.check(instance).is_ok();
                // Deliberately stricter, never looser.
                prop_assert!(
                    !ours || theirs,
                    "the profile accepts what JSON Schema rejects:\n{schema}\n{instance}"
                );
                // Exactly equal once number representation no longer matters.
                let ours_normalized = normalized.check(&normalize(instance)).is_ok();
                prop_assert_eq!(
                    ours_normalized,
                    theirs,
                    "verdicts differ:\nschema {}\ninstance {}",
                    schema,
                    instance
                );
                if ours != theirs {
                    representation.fetch_add(1, Ordering::Relaxed);
                }
                let counter = if theirs { &matched } else { &rejected };
                counter.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let (matched, rejected, representation) = (
        matched.into_inner(),
        rejected.into_inner(),
        representation.into_inner(),
    );
    let total = matched + rejected;
    eprintln!(
        "schema differential: {} schemas, {total} instances: {matched} matching, {rejected} not \
         matching, {representation} rejected only for number representation",
        cases()
    );
    assert_eq!(total, cases() as usize * INSTANCES);
    // Neither side of the verdict is rare, so the comparison is not vacuous.
    assert!(
        matched * 5 > total,
        "too few matching instances: {matched}/{total}"
    );
    assert!(
        rejected * 5 > total,
        "too few rejected instances: {rejected}/{total}"
    );
}

// ---- the deliberate differences, one by one -------------------------------------------------

fn both(schema: Value, instance: Value) -> (bool, bool) {
    let ours = Schema::admit(&schema)
        .expect("admitted")
        .check(&instance)
        .is_ok();
    let theirs = jsonschema::validator_for(&schema)
        .expect("valid JSON Schema")
        .is_valid(&instance);
    (ours, theirs)
}

fn in_property(schema: Value) -> Value {
    json!({"type": "object", "properties": {"p": schema}})
}

#[test]
fn integral_floats_are_not_integers_in_the_profile() {
    for float in [json!(1.0), json!(-0.0), json!(1e3)] {
        let (ours, theirs) = both(in_property(json!({"type": "integer"})), json!({"p": float}));
        assert_eq!((ours, theirs), (false, true), "{float}");
    }
    // Above u64: JSON Schema still sees an integer; the profile does not.
    let big: Value = serde_json::from_str("18446744073709551616").unwrap();
    let (ours, theirs) = both(in_property(json!({"type": "integer"})), json!({ "p": big }));
    assert_eq!((ours, theirs), (false, true));
}

#[test]
fn const_and_enum_compare_numbers_as_written_in_the_profile() {
    let cases = [
        (json!({"type": "number", "const": 1}), json!(1.0)),
        (json!({"type": "number", "enum": [0, 2]}), json!(-0.0)),
        (json!({"type": "array", "const": [1]}), json!([1.0])),
    ];
    for (schema, value) in cases {
        let (ours, theirs) = both(in_property(schema.clone()), json!({ "p": value }));
        assert_eq!((ours, theirs), (false, true), "{schema}");
    }
}

#[test]
fn string_lengths_count_unicode_scalar_values_in_both() {
    // 😀 is four bytes and two UTF-16 units; e + U+0301 is two scalar values, one grapheme.
    for (text, length) in [("😀", 1), ("é", 1), ("e\u{301}", 2), ("a😀b", 3)] {
        for (min, max, expected) in [
            (length, length, true),
            (length + 1, length + 1, false),
            (0, length - 1, false),
        ] {
            let schema = in_property(json!({"type": "string", "minLength": min, "maxLength": max}));
            let (ours, theirs) = both(schema, json!({ "p": text }));
            assert_eq!(
                (ours, theirs),
                (expected, expected),
                "{text:?} in {min}..={max}"
            );
        }
    }
}

#[test]
fn json_bounds_reject_arguments_that_json_schema_accepts() {
    // Depth 17: the schema alone would match it, but the arguments' bounds do not hold.
    let mut deep = json!(1);
    for _ in 0..17 {
        deep = json!([deep]);
    }
    let cases = [
        json!({ "p": deep }),
        json!({ "p": "x".repeat(512 * 1024 + 1) }),
        json!({ "k".repeat(1025): 1 }),
        json!({ "a\u{1}": 1 }),
        json!({ "p": vec![0; 4096] }),
    ];
    let schema = json!({"type": "object"});
    for instance in cases {
        let (ours, theirs) = both(schema.clone(), instance.clone());
        assert!(ours && theirs, "the schema itself matches");
        assert!(
            check_json_bounds(&instance).is_err(),
            "but the bounds reject it"
        );
    }
}
