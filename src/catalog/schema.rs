//! Schema Profile v1: admission of schemas and matching of instances.
//!
//! # Admission
//! A schema is first checked as a whole against the JSON bounds and the 64 KiB size limit
//! ([`SchemaFault::BoundsExceeded`]). Then every node is compiled depth-first; at each node the
//! checks run in this order, and the first failure is reported:
//! 1. the node is an object ([`SchemaFault::Invalid`]);
//! 2. every key is a profile keyword ([`SchemaFault::KeywordUnsupported`]);
//! 3. `type` is one of the seven type names, and `object` at the root;
//! 4. every type-specific keyword belongs to that type;
//! 5. `title`, `description`, `enum`, then the type's own keywords: for `object`,
//!    `properties` (children in sorted key order), `required`, `additionalProperties`; for
//!    `array`, `items`, then `minItems`/`maxItems`; for `string`, `minLength`/`maxLength`.
//!    A length pair's `min ≤ max` is checked once both bounds are read.
//!
//! Count limits inside the profile (`enum` 1..=128 values, ≤ 128 `properties`, ≤ 128
//! `required`, `minItems`/`maxItems` ≤ 4096) are structural: [`SchemaFault::Invalid`].
//! `required` may name properties that `properties` does not list.
//!
//! # Matching
//! The compiled tree is matched without keyword lookups. At each node: type, then `const`,
//! then `enum`, then `required` (declared order), then the instance's properties in sorted key
//! order, or the array's length and items in order. A [`SchemaMismatch`] path holds only
//! property names declared by the schema and array indices: an unknown property is reported
//! at the path of the object that holds it, so no instance data ever appears in a mismatch.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::within_bounds;

/// Largest serialized schema, in bytes.
pub(crate) const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// Deepest schema nesting (the root schema is depth 0).
const MAX_SCHEMA_DEPTH: usize = 16;
/// Most values in one `enum`.
const MAX_ENUM_VALUES: usize = 128;
/// Most entries in one `properties`.
const MAX_PROPERTIES: usize = 128;
/// Most names in one `required`.
const MAX_REQUIRED: usize = 128;
/// Largest `minItems` / `maxItems`.
const MAX_ITEMS_BOUND: u64 = 4096;

/// Every keyword of the profile; anything else is unsupported.
const KEYWORDS: &[&str] = &[
    "type",
    "title",
    "description",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "items",
];

/// Why a schema was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaFault {
    /// A keyword outside the profile (`$ref`, `pattern`, `anyOf`, …).
    KeywordUnsupported,
    /// Structurally invalid (bad `type`, keyword on the wrong type, min > max, …).
    Invalid,
    /// Serialized size over 64 KiB, depth over 16, or JSON bounds exceeded.
    BoundsExceeded,
}

/// Why an instance does not match a schema. Never contains the instance's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaMismatch {
    /// JSON-pointer-like path of the failing value, e.g. `/items/0/name` (`` for the root).
    pub path: String,
    /// What was expected, e.g. `expected integer`, `missing required property`.
    pub reason: &'static str,
}

/// An admitted schema, compiled for fast matching.
#[derive(Debug, Clone)]
pub struct Schema {
    source: Value,
    root: Arc<Node>,
}

/// One compiled schema node.
#[derive(Debug)]
struct Node {
    kind: Kind,
    const_value: Option<Value>,
    enum_values: Option<Vec<Value>>,
}

/// The node's type with its type-specific rules.
#[derive(Debug)]
enum Kind {
    Object(ObjectRule),
    Array(ArrayRule),
    String(LengthRule),
    Number,
    Integer,
    Boolean,
    Null,
}

#[derive(Debug)]
struct ObjectRule {
    /// Sorted by name (built from a sorted map), searched by binary search.
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    additional: bool,
}

#[derive(Debug)]
struct ArrayRule {
    length: LengthRule,
    items: Option<Box<Node>>,
}

#[derive(Debug, Default)]
struct LengthRule {
    min: Option<u64>,
    max: Option<u64>,
}

impl Schema {
    /// Admits `value` as a root schema (root type must be `object`).
    ///
    /// Fails with [`SchemaFault::BoundsExceeded`] when the value breaks the JSON bounds or
    /// serializes to more than 64 KiB, [`SchemaFault::KeywordUnsupported`] when a node uses a
    /// keyword outside the profile, and [`SchemaFault::Invalid`] for any other breach.
    pub fn admit(value: &Value) -> Result<Schema, SchemaFault> {
        if !within_bounds(value, MAX_SCHEMA_BYTES) {
            return Err(SchemaFault::BoundsExceeded);
        }
        let root = compile(value, 0)?;
        Ok(Schema {
            source: value.clone(),
            root: Arc::new(root),
        })
    }

    /// The schema as the plugin declared it.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Matches an instance against the schema, reporting the first mismatch.
    pub fn check(&self, instance: &Value) -> Result<(), SchemaMismatch> {
        match_node(&self.root, instance).map_err(Failure::into_mismatch)
    }
}

fn compile(value: &Value, depth: usize) -> Result<Node, SchemaFault> {
    if depth > MAX_SCHEMA_DEPTH {
        return Err(SchemaFault::BoundsExceeded);
    }
    let map = value.as_object().ok_or(SchemaFault::Invalid)?;
    if map.keys().any(|k| !KEYWORDS.contains(&k.as_str())) {
        return Err(SchemaFault::KeywordUnsupported);
    }
    let type_name = match map.get("type") {
        Some(Value::String(name)) => name.as_str(),
        _ => return Err(SchemaFault::Invalid),
    };
    if !matches!(
        type_name,
        "object" | "array" | "string" | "number" | "integer" | "boolean" | "null"
    ) || (depth == 0 && type_name != "object")
    {
        return Err(SchemaFault::Invalid);
    }
    if map
        .keys()
        .any(|k| owner(k).is_some_and(|owner| owner != type_name))
    {
        return Err(SchemaFault::Invalid);
    }
    for key in ["title", "description"] {
        if map.get(key).is_some_and(|v| !v.is_string()) {
            return Err(SchemaFault::Invalid);
        }
    }
    let enum_values = match map.get("enum") {
        None => None,
        Some(Value::Array(values)) if (1..=MAX_ENUM_VALUES).contains(&values.len()) => {
            Some(values.clone())
        }
        Some(_) => return Err(SchemaFault::Invalid),
    };
    let const_value = map.get("const").cloned();
    let kind = match type_name {
        "object" => Kind::Object(compile_object(map, depth)?),
        "array" => Kind::Array(ArrayRule {
            items: match map.get("items") {
                None => None,
                Some(items) => Some(Box::new(compile(items, depth + 1)?)),
            },
            length: length_rule(map, "minItems", "maxItems", Some(MAX_ITEMS_BOUND))?,
        }),
        "string" => Kind::String(length_rule(map, "minLength", "maxLength", None)?),
        "number" => Kind::Number,
        "integer" => Kind::Integer,
        "boolean" => Kind::Boolean,
        _ => Kind::Null,
    };
    Ok(Node {
        kind,
        const_value,
        enum_values,
    })
}

/// The only type a type-specific keyword may appear on.
fn owner(keyword: &str) -> Option<&'static str> {
    match keyword {
        "properties" | "required" | "additionalProperties" => Some("object"),
        "minLength" | "maxLength" => Some("string"),
        "minItems" | "maxItems" | "items" => Some("array"),
        _ => None,
    }
}

fn compile_object(map: &Map<String, Value>, depth: usize) -> Result<ObjectRule, SchemaFault> {
    let properties = match map.get("properties") {
        None => Vec::new(),
        Some(Value::Object(props)) if props.len() <= MAX_PROPERTIES => {
            let mut compiled = Vec::with_capacity(props.len());
            for (name, schema) in props {
                compiled.push((name.clone(), compile(schema, depth + 1)?));
            }
            compiled
        }
        Some(_) => return Err(SchemaFault::Invalid),
    };
    let required = match map.get("required") {
        None => Vec::new(),
        Some(Value::Array(names)) if names.len() <= MAX_REQUIRED => {
            let mut seen = BTreeSet::new();
            let mut required = Vec::with_capacity(names.len());
            for name in names {
                let name = name.as_str().ok_or(SchemaFault::Invalid)?;
                if !seen.insert(name) {
                    return Err(SchemaFault::Invalid);
                }
                required.push(name.to_owned());
            }
            required
        }
        Some(_) => return Err(SchemaFault::Invalid),
    };
    let additional = match map.get("additionalProperties") {
        None => true,
        Some(Value::Bool(allowed)) => *allowed,
        Some(_) => return Err(SchemaFault::Invalid),
    };
    Ok(ObjectRule {
        properties,
        required,
        additional,
    })
}

fn length_rule(
    map: &Map<String, Value>,
    min_key: &str,
    max_key: &str,
    cap: Option<u64>,
) -> Result<LengthRule, SchemaFault> {
    let bound = |key: &str| -> Result<Option<u64>, SchemaFault> {
        match map.get(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if cap.map_or(true, |cap| n <= cap) => Ok(Some(n)),
                _ => Err(SchemaFault::Invalid),
            },
        }
    };
    let rule = LengthRule {
        min: bound(min_key)?,
        max: bound(max_key)?,
    };
    if let (Some(min), Some(max)) = (rule.min, rule.max) {
        if min > max {
            return Err(SchemaFault::Invalid);
        }
    }
    Ok(rule)
}

/// One step of a mismatch path; keys always borrow from the schema, never from the instance.
enum Segment<'s> {
    Key(&'s str),
    Index(usize),
}

/// A mismatch on its way up: segments are pushed innermost first while unwinding, so the
/// success path never allocates.
struct Failure<'s> {
    reversed_path: Vec<Segment<'s>>,
    reason: &'static str,
}

impl<'s> Failure<'s> {
    fn new(reason: &'static str) -> Failure<'s> {
        Failure {
            reversed_path: Vec::new(),
            reason,
        }
    }

    fn at(mut self, segment: Segment<'s>) -> Failure<'s> {
        self.reversed_path.push(segment);
        self
    }

    fn into_mismatch(self) -> SchemaMismatch {
        let mut path = String::new();
        for segment in self.reversed_path.iter().rev() {
            path.push('/');
            match segment {
                Segment::Key(key) => {
                    for c in key.chars() {
                        match c {
                            '~' => path.push_str("~0"),
                            '/' => path.push_str("~1"),
                            c => path.push(c),
                        }
                    }
                }
                Segment::Index(index) => path.push_str(&index.to_string()),
            }
        }
        SchemaMismatch {
            path,
            reason: self.reason,
        }
    }
}

fn match_node<'s>(node: &'s Node, value: &Value) -> Result<(), Failure<'s>> {
    let type_ok = match (&node.kind, value) {
        (Kind::Object(_), Value::Object(_))
        | (Kind::Array(_), Value::Array(_))
        | (Kind::String(_), Value::String(_))
        | (Kind::Number, Value::Number(_))
        | (Kind::Boolean, Value::Bool(_))
        | (Kind::Null, Value::Null) => true,
        (Kind::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
        _ => false,
    };
    if !type_ok {
        return Err(Failure::new(node.kind.expected()));
    }
    if node.const_value.as_ref().is_some_and(|c| c != value) {
        return Err(Failure::new("not equal to const"));
    }
    if node
        .enum_values
        .as_ref()
        .is_some_and(|e| !e.contains(value))
    {
        return Err(Failure::new("not one of enum"));
    }
    match (&node.kind, value) {
        (Kind::Object(rule), Value::Object(map)) => {
            for name in &rule.required {
                if !map.contains_key(name) {
                    return Err(Failure::new("missing required property").at(Segment::Key(name)));
                }
            }
            for (key, child) in map {
                match rule
                    .properties
                    .binary_search_by(|(name, _)| name.as_str().cmp(key))
                {
                    Ok(i) => {
                        let (name, schema) = &rule.properties[i];
                        match_node(schema, child).map_err(|f| f.at(Segment::Key(name)))?;
                    }
                    Err(_) if !rule.additional => return Err(Failure::new("unknown property")),
                    Err(_) => {}
                }
            }
        }
        (Kind::Array(rule), Value::Array(items)) => {
            let len = items.len() as u64;
            if rule.length.min.is_some_and(|min| len < min) {
                return Err(Failure::new("too few items"));
            }
            if rule.length.max.is_some_and(|max| len > max) {
                return Err(Failure::new("too many items"));
            }
            if let Some(schema) = &rule.items {
                for (i, item) in items.iter().enumerate() {
                    match_node(schema, item).map_err(|f| f.at(Segment::Index(i)))?;
                }
            }
        }
        (Kind::String(rule), Value::String(s)) if rule.min.is_some() || rule.max.is_some() => {
            let len = s.chars().count() as u64;
            if rule.min.is_some_and(|min| len < min) {
                return Err(Failure::new("string too short"));
            }
            if rule.max.is_some_and(|max| len > max) {
                return Err(Failure::new("string too long"));
            }
        }
        _ => {}
    }
    Ok(())
}

impl Kind {
    fn expected(&self) -> &'static str {
        match self {
            Kind::Object(_) => "expected object",
            Kind::Array(_) => "expected array",
            Kind::String(_) => "expected string",
            Kind::Number => "expected number",
            Kind::Integer => "expected integer",
            Kind::Boolean => "expected boolean",
            Kind::Null => "expected null",
        }
    }
}

#[cfg(test)]
mod tests {
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
        assert!(admit(
            json!({"type": "object", "properties": {"k".repeat(1024): {"type": "null"}}})
        )
        .is_ok());
        assert_eq!(
            admit(json!({"type": "object", "properties": {"k".repeat(1025): {"type": "null"}}}))
                .err(),
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

    // ---- matching ----

    #[test]
    fn integer_accepts_i64_and_u64() {
        let s = schema(prop(json!({"type": "integer"})));
        for v in [json!(0), json!(-1), json!(i64::MIN), json!(u64::MAX)] {
            assert!(s.check(&json!({ "p": v })).is_ok());
        }
    }

    #[test]
    fn integer_rejects_floats_even_when_whole() {
        let s = schema(prop(json!({"type": "integer"})));
        for v in [json!(1.0), json!(1.5), json!("1")] {
            assert_eq!(
                mismatch(&s, json!({ "p": v })),
                ("/p".into(), "expected integer")
            );
        }
    }

    #[test]
    fn number_accepts_integers_and_floats() {
        let s = schema(prop(json!({"type": "number"})));
        for v in [json!(1), json!(-1.5), json!(u64::MAX)] {
            assert!(s.check(&json!({ "p": v })).is_ok());
        }
        assert_eq!(
            mismatch(&s, json!({"p": "1"})),
            ("/p".into(), "expected number")
        );
    }

    #[test]
    fn every_type_reports_what_it_expected() {
        let cases = [
            ("object", "expected object"),
            ("array", "expected array"),
            ("string", "expected string"),
            ("number", "expected number"),
            ("integer", "expected integer"),
            ("boolean", "expected boolean"),
            ("null", "expected null"),
        ];
        for (t, reason) in cases {
            let s = schema(prop(json!({ "type": t })));
            let wrong = if t == "null" {
                json!(false)
            } else {
                json!(null)
            };
            assert_eq!(mismatch(&s, json!({ "p": wrong })), ("/p".into(), reason));
        }
    }

    #[test]
    fn boolean_and_null_match_their_values() {
        let s = schema(json!({"type": "object", "properties": {
            "b": {"type": "boolean"}, "n": {"type": "null"}}}));
        assert!(s.check(&json!({"b": false, "n": null})).is_ok());
    }

    #[test]
    fn root_mismatch_has_empty_path() {
        let s = schema(json!({"type": "object"}));
        assert_eq!(mismatch(&s, json!([])), (String::new(), "expected object"));
    }

    #[test]
    fn string_length_counts_unicode_scalars_not_bytes() {
        let s = schema(prop(
            json!({"type": "string", "minLength": 3, "maxLength": 3}),
        ));
        assert!(s.check(&json!({"p": "éé€"})).is_ok()); // 7 bytes, 3 chars
        assert_eq!(
            mismatch(&s, json!({"p": "éé"})),
            ("/p".into(), "string too short")
        );
    }

    #[test]
    fn string_length_edges() {
        let s = schema(prop(
            json!({"type": "string", "minLength": 2, "maxLength": 4}),
        ));
        assert!(s.check(&json!({"p": "ab"})).is_ok());
        assert!(s.check(&json!({"p": "abcd"})).is_ok());
        assert_eq!(
            mismatch(&s, json!({"p": "a"})),
            ("/p".into(), "string too short")
        );
        assert_eq!(
            mismatch(&s, json!({"p": "abcde"})),
            ("/p".into(), "string too long")
        );
    }

    #[test]
    fn missing_required_property_is_reported_at_its_path() {
        let s = schema(json!({"type": "object", "required": ["a"],
            "properties": {"a": {"type": "string"}}}));
        assert_eq!(
            mismatch(&s, json!({})),
            ("/a".into(), "missing required property")
        );
        assert!(s.check(&json!({"a": "x"})).is_ok());
    }

    #[test]
    fn required_may_name_an_unlisted_property() {
        let s = schema(json!({"type": "object", "required": ["x"]}));
        assert!(s.check(&json!({"x": [1]})).is_ok());
        assert_eq!(
            mismatch(&s, json!({})),
            ("/x".into(), "missing required property")
        );
    }

    #[test]
    fn unknown_properties_are_allowed_by_default() {
        let s = schema(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
        assert!(s.check(&json!({"a": "x", "b": 1})).is_ok());
    }

    #[test]
    fn unknown_properties_are_allowed_when_additional_properties_is_true() {
        let s = schema(json!({"type": "object", "additionalProperties": true}));
        assert!(s.check(&json!({"b": 1})).is_ok());
    }

    #[test]
    fn unknown_property_is_rejected_at_the_object_path_when_additional_properties_is_false() {
        let s = schema(
            json!({"type": "object", "properties": {"o": {"type": "object",
            "properties": {"a": {"type": "string"}}, "additionalProperties": false}}}),
        );
        assert!(s.check(&json!({"o": {"a": "x"}})).is_ok());
        let m = s
            .check(&json!({"o": {"a": "x", "secret-key": 1}}))
            .unwrap_err();
        assert_eq!((m.path.as_str(), m.reason), ("/o", "unknown property"));
        assert!(!format!("{m:?}").contains("secret"));
    }

    #[test]
    fn listed_properties_are_validated() {
        let s = schema(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
        assert_eq!(
            mismatch(&s, json!({"a": 1})),
            ("/a".into(), "expected string")
        );
    }

    #[test]
    fn const_requires_equal_value() {
        let s = schema(prop(json!({"type": "integer", "const": 1})));
        assert!(s.check(&json!({"p": 1})).is_ok());
        assert_eq!(
            mismatch(&s, json!({"p": 2})),
            ("/p".into(), "not equal to const")
        );
    }

    #[test]
    fn const_distinguishes_1_from_1_point_0() {
        let s = schema(prop(json!({"type": "number", "const": 1})));
        assert_eq!(
            mismatch(&s, json!({"p": 1.0})),
            ("/p".into(), "not equal to const")
        );
    }

    #[test]
    fn enum_requires_one_of_its_values() {
        let s = schema(prop(json!({"type": "string", "enum": ["a", "b"]})));
        assert!(s.check(&json!({"p": "b"})).is_ok());
        assert_eq!(
            mismatch(&s, json!({"p": "c"})),
            ("/p".into(), "not one of enum")
        );
    }

    #[test]
    fn enum_compares_structured_values() {
        let s = schema(prop(json!({"type": "object", "enum": [{"a": [1]}]})));
        assert!(s.check(&json!({"p": {"a": [1]}})).is_ok());
        assert_eq!(
            mismatch(&s, json!({"p": {"a": [2]}})),
            ("/p".into(), "not one of enum")
        );
    }

    #[test]
    fn items_are_validated_with_their_index_in_the_path() {
        let s = schema(prop(json!({"type": "array", "items": {"type": "integer"}})));
        assert!(s.check(&json!({"p": [1, 2]})).is_ok());
        assert_eq!(
            mismatch(&s, json!({"p": [1, "x", 3.5]})),
            ("/p/1".into(), "expected integer")
        );
    }

    #[test]
    fn array_length_edges() {
        let s = schema(prop(json!({"type": "array", "minItems": 1, "maxItems": 2})));
        assert!(s.check(&json!({"p": [1]})).is_ok());
        assert!(s.check(&json!({"p": [1, 2]})).is_ok());
        assert_eq!(
            mismatch(&s, json!({"p": []})),
            ("/p".into(), "too few items")
        );
        assert_eq!(
            mismatch(&s, json!({"p": [1, 2, 3]})),
            ("/p".into(), "too many items")
        );
    }

    #[test]
    fn nested_path_names_each_step() {
        let s = schema(
            json!({"type": "object", "properties": {"a": {"type": "array",
            "items": {"type": "object", "properties": {"b": {"type": "boolean"}}}}}}),
        );
        assert_eq!(
            mismatch(&s, json!({"a": [{"b": true}, {"b": "no"}]})),
            ("/a/1/b".into(), "expected boolean")
        );
    }

    #[test]
    fn path_escapes_tilde_and_slash() {
        let s = schema(json!({"type": "object", "properties": {"a/b~c": {"type": "null"}}}));
        assert_eq!(
            mismatch(&s, json!({"a/b~c": 1})),
            ("/a~1b~0c".into(), "expected null")
        );
    }

    #[test]
    fn first_mismatch_in_sorted_key_order_wins() {
        let s = schema(json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "string"}}}));
        assert_eq!(
            mismatch(&s, json!({"b": 1, "a": 1})),
            ("/a".into(), "expected string")
        );
    }

    #[test]
    fn mismatch_never_contains_instance_values() {
        let s = schema(prop(json!({"type": "integer", "enum": [1]})));
        let m = s.check(&json!({"p": 99_999})).unwrap_err();
        assert!(!m.path.contains("99999") && !m.reason.contains("99999"));
    }
}
