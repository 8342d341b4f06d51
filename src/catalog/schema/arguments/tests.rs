//! The one-walk check against the two walks it replaces: the JSON bounds walk with its size
//! bound, then `Schema::check`, on generated schemas and instances (conforming ones, broken
//! ones, and ones past every bound).

use serde_json::{json, Map, Value};

use super::*;
use crate::frame::{
    check_json_bounds_measured, check_json_bounds_sized, MAX_DEPTH, MAX_KEY_BYTES, MAX_NODES,
    MAX_STRING_BYTES,
};

/// The verdict of the two walks.
fn two_walks(schema: &Schema, instance: &Value, max_bytes: usize) -> Result<Measured, Refusal> {
    let measured = check_json_bounds_measured(instance, max_bytes).map_err(Refusal::Bounds)?;
    schema.check(instance).map_err(Refusal::Mismatch)?;
    assert_eq!(
        Ok(measured.len),
        check_json_bounds_sized(instance, max_bytes)
    );
    Ok(measured)
}

fn assert_same(schema: &Schema, instance: &Value, max_bytes: usize) {
    assert_eq!(
        schema.check_bounded(instance, max_bytes),
        two_walks(schema, instance, max_bytes),
        "schema {} instance {instance} max {max_bytes}",
        schema.source()
    );
}

const KEYS: &[&str] = &["a", "b", "c", "text", "é", "a/b", "~x", "", "😀", "\"q\""];
const TEXTS: &[&str] = &[
    "", "a", "hello", "é😀", "e\u{301}", "\n", "\u{1}", "\"\\", "12345678",
];

/// A small deterministic generator (the tests need no crate of their own).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }

    fn scalar(&mut self) -> Value {
        match self.below(8) {
            0 => Value::Null,
            1 => json!(self.below(2) == 0),
            2 => json!(self.below(5)),
            3 => json!(-(self.below(5) as i64)),
            4 => json!(1.5),
            5 => json!(2.0),
            _ => json!(self.pick(TEXTS)),
        }
    }

    /// A schema of the profile (`depth` levels below the root at most).
    fn schema(&mut self, depth: usize, root: bool) -> Value {
        let kinds = [
            "object", "array", "string", "number", "integer", "boolean", "null",
        ];
        let kind = match root {
            true => "object",
            false if depth == 0 => kinds[2 + self.below(5)],
            false => kinds[self.below(kinds.len())],
        };
        let mut node = Map::new();
        node.insert("type".into(), json!(kind));
        match kind {
            "object" => {
                let mut props = Map::new();
                for _ in 0..self.below(4) {
                    props.insert(
                        self.pick(KEYS).into(),
                        self.schema(depth.saturating_sub(1), false),
                    );
                }
                let mut required: Vec<&str> = Vec::new();
                for _ in 0..self.below(3) {
                    let name = self.pick(KEYS);
                    if !required.contains(&name) {
                        required.push(name);
                    }
                }
                node.insert("properties".into(), Value::Object(props));
                node.insert("required".into(), json!(required));
                if self.below(3) == 0 {
                    node.insert("additionalProperties".into(), json!(false));
                }
            }
            "array" => {
                if self.below(3) > 0 {
                    node.insert("items".into(), self.schema(depth.saturating_sub(1), false));
                }
                if self.below(3) == 0 {
                    node.insert("minItems".into(), json!(self.below(2)));
                    node.insert("maxItems".into(), json!(2 + self.below(2)));
                }
            }
            "string" if self.below(3) == 0 => {
                node.insert("minLength".into(), json!(self.below(2)));
                node.insert("maxLength".into(), json!(2 + self.below(4)));
            }
            _ => {}
        }
        match self.below(12) {
            0 => {
                node.insert("const".into(), self.scalar());
            }
            1 => {
                node.insert("enum".into(), json!([self.scalar(), self.scalar()]));
            }
            _ => {}
        }
        Value::Object(node)
    }

    /// An instance shaped by `schema`, with a wrong value now and then.
    fn instance(&mut self, schema: &Value, depth: usize) -> Value {
        if self.below(10) == 0 {
            return self.any(depth);
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("object") => {
                let mut map = Map::new();
                if let Some(Value::Object(props)) = schema.get("properties") {
                    for (name, child) in props {
                        if self.below(6) > 0 {
                            map.insert(name.clone(), self.instance(child, depth + 1));
                        }
                    }
                }
                if self.below(5) == 0 {
                    map.insert(self.pick(KEYS).into(), self.any(depth + 1));
                }
                Value::Object(map)
            }
            Some("array") => {
                let items = schema
                    .get("items")
                    .cloned()
                    .unwrap_or(json!({"type": "null"}));
                Value::Array(
                    (0..self.below(5))
                        .map(|_| self.instance(&items, depth + 1))
                        .collect(),
                )
            }
            Some("string") => json!(self.pick(TEXTS)),
            Some("integer") => json!(self.below(9)),
            Some("number") => json!(0.5),
            Some("boolean") => json!(true),
            _ => Value::Null,
        }
    }

    /// Any value, now and then past a bound.
    fn any(&mut self, depth: usize) -> Value {
        match self.below(40) {
            0 => nested(MAX_DEPTH + 1 - depth.min(MAX_DEPTH)),
            1 => Value::Array(vec![Value::Null; MAX_NODES]),
            2 => json!("x".repeat(MAX_STRING_BYTES + 1)),
            3 => json!({ "k".repeat(MAX_KEY_BYTES + 1): 1 }),
            4 => json!({ "bad\u{1}key": 1 }),
            5 => json!({ "\u{85}": [] }),
            6..=12 => json!([self.scalar(), {"a": self.scalar()}]),
            _ => self.scalar(),
        }
    }
}

/// `levels` arrays around `null`.
fn nested(levels: usize) -> Value {
    (0..levels).fold(Value::Null, |inner, _| json!([inner]))
}

#[test]
fn one_walk_gives_the_verdict_of_the_two_walks_on_generated_arguments() {
    let mut rng = Rng(0xa5a5);
    let (mut matched, mut mismatched, mut bounded) = (0, 0, 0);
    for _ in 0..3000 {
        let source = rng.schema(3, true);
        let schema = Schema::admit(&source).expect("a generated schema is admitted");
        for _ in 0..6 {
            let instance = rng.instance(&source, 0);
            let size = serde_json::to_vec(&instance).unwrap().len();
            for max in [
                usize::MAX,
                64 * 1024,
                size,
                size.saturating_sub(1),
                size / 2,
            ] {
                assert_same(&schema, &instance, max);
            }
            match schema.check_bounded(&instance, usize::MAX) {
                Ok(_) => matched += 1,
                Err(Refusal::Mismatch(_)) => mismatched += 1,
                Err(Refusal::Bounds(_)) => bounded += 1,
            }
        }
    }
    // Every verdict is common.
    assert!(
        matched > 2000 && mismatched > 2000 && bounded > 100,
        "{matched} {mismatched} {bounded}"
    );
}

#[test]
fn a_broken_bound_wins_over_an_earlier_mismatch() {
    let schema = Schema::admit(&json!({"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "array"}}}))
    .unwrap();
    let instance = json!({"a": "not an integer", "b": nested(MAX_DEPTH + 2)});
    assert_eq!(
        schema.check_bounded(&instance, usize::MAX),
        Err(Refusal::Bounds(JsonBoundsError::TooDeep))
    );
    assert_same(&schema, &instance, usize::MAX);
    let instance = json!({"a": "not an integer", "b": ["x".repeat(100)]});
    assert_eq!(
        schema.check_bounded(&instance, 60),
        Err(Refusal::Bounds(JsonBoundsError::TooLarge))
    );
    assert_same(&schema, &instance, 60);
}

#[test]
fn the_first_mismatch_and_its_path_are_those_of_check() {
    let schema = Schema::admit(&json!({"type": "object", "required": ["z"],
        "additionalProperties": false, "properties": {
        "a/b": {"type": "array", "items": {"type": "object", "properties": {
            "~x": {"type": "string", "maxLength": 1}}}},
        "c": {"type": "integer"}}}))
    .unwrap();
    for instance in [
        json!({"a/b": [{"~x": "ab"}], "c": "x", "z": 1}),
        json!({"a/b": [{}, {"~x": "é"}, {"~x": "éé"}], "z": 1}),
        json!({"a/b": [], "c": 1.5, "z": 1}),
        json!({"a/b": [], "d": 1, "z": 1}),
        json!({"a/b": [{"~x": 1}]}),
        json!({"z": 1, "c": 2}),
        json!([]),
    ] {
        assert!(schema.check_bounded(&instance, usize::MAX).is_err() || instance["z"] == 1);
        assert_same(&schema, &instance, usize::MAX);
    }
}

/// Every (node, value) pair the schema reaches in `instance`.
fn pairs<'s, 'v>(node: &'s Node, value: &'v Value, out: &mut Vec<(&'s Node, &'v Value)>) {
    out.push((node, value));
    match (&node.kind, value) {
        (Kind::Object(rule), Value::Object(map)) => {
            for (name, child) in &rule.properties {
                if let Some(v) = map.get(name) {
                    pairs(child, v, out);
                }
            }
        }
        (Kind::Array(rule), Value::Array(items)) => {
            if let Some(child) = &rule.items {
                items.iter().for_each(|v| pairs(child, v, out));
            }
        }
        _ => {}
    }
}

#[test]
fn a_node_that_only_checks_its_variant_matches_as_its_rules_do() {
    let mut rng = Rng(0x0dd);
    let mut quick = 0;
    for _ in 0..2000 {
        let source = rng.schema(3, true);
        let schema = Schema::admit(&source).unwrap();
        for _ in 0..6 {
            let instance = rng.instance(&source, 0);
            let mut found = Vec::new();
            pairs(&schema.root, &instance, &mut found);
            for (node, value) in found {
                let (fast, slow) = (match_here(node, value), match_rules(node, value));
                assert_eq!(fast.map_err(|f| f.reason), slow.map_err(|f| f.reason));
                quick += usize::from(node.only_variant.is_some());
            }
        }
    }
    assert!(quick > 10_000, "{quick}");
}

/// The usual arguments are checked in one loop, with the walks' verdict; anything the loop is
/// not sure of is left to the walk.
#[test]
fn flat_arguments_take_the_one_loop_path() {
    for name in ["text", "é"] {
        let schema = Schema::admit(&json!({"type": "object",
            "properties": {name: {"type": "string"}, "n": {"type": "number"}},
            "required": [name]}))
        .expect("admitted");
        let usual = json!({name: "hello", "n": 2});
        assert!(schema.check_flat(&usual, 1 << 16).is_some());
        assert_same(&schema, &usual, 1 << 16);
        for unsure in [
            json!({}),
            json!({name: 1}),
            json!({name: "a", "x": 1}),
            json!({name: []}),
        ] {
            assert_eq!(schema.check_flat(&unsure, 1 << 16), None, "{unsure}");
            assert_same(&schema, &unsure, 1 << 16);
        }
        assert_eq!(schema.check_flat(&usual, 10), None);
        assert_same(&schema, &usual, 10);
    }
}
