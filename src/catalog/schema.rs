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
use std::mem::Discriminant;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::within_bounds;
use crate::frame::is_plain;

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
#[non_exhaustive]
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
    /// When the node checks nothing but a type that the value's variant tells (no `const`,
    /// `enum` or length; not `integer`): that variant, so a match is one comparison.
    only_variant: Option<Discriminant<Value>>,
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
    /// For each property (same order): whether `required` names it.
    property_required: Vec<bool>,
    /// How many `required` names are properties.
    required_properties: usize,
    /// `required` names a property that `properties` does not list.
    required_elsewhere: bool,
    /// Every property name is printable ASCII without `"` or `\`: a member that is a property
    /// is tallied by its key's length alone.
    plain_names: bool,
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
    let variant = |sample: Value| Some(std::mem::discriminant(&sample));
    let only_variant = match &kind {
        _ if const_value.is_some() || enum_values.is_some() => None,
        Kind::Object(_) => variant(Value::Object(Map::new())),
        Kind::Array(rule) if rule.length.min.is_none() && rule.length.max.is_none() => {
            variant(Value::Array(Vec::new()))
        }
        Kind::String(rule) if rule.min.is_none() && rule.max.is_none() => {
            variant(Value::String(String::new()))
        }
        Kind::Number => variant(Value::from(0)),
        Kind::Boolean => variant(Value::Bool(false)),
        Kind::Null => variant(Value::Null),
        Kind::Array(_) | Kind::String(_) | Kind::Integer => None,
    };
    Ok(Node {
        kind,
        const_value,
        enum_values,
        only_variant,
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
    let property_required: Vec<bool> = properties
        .iter()
        .map(|(name, _)| required.contains(name))
        .collect();
    let required_properties = property_required.iter().filter(|&&r| r).count();
    Ok(ObjectRule {
        required_elsewhere: required_properties < required.len(),
        plain_names: properties.iter().all(|(name, _)| is_plain(name.as_bytes())),
        properties,
        required,
        additional,
        property_required,
        required_properties,
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
                Some(n) if cap.is_none_or(|cap| n <= cap) => Ok(Some(n)),
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
#[derive(Clone, Copy)]
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
    match_here(node, value)?;
    match (&node.kind, value) {
        (Kind::Object(rule), Value::Object(map)) => {
            if let Some(name) = rule.missing(map) {
                return Err(Failure::new("missing required property").at(Segment::Key(name)));
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
            if let Some(schema) = &rule.items {
                for (i, item) in items.iter().enumerate() {
                    match_node(schema, item).map_err(|f| f.at(Segment::Index(i)))?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

impl ObjectRule {
    /// The first name of `required` (declared order) that `map` lacks.
    fn missing<'s>(&'s self, map: &Map<String, Value>) -> Option<&'s str> {
        self.required
            .iter()
            .find(|name| !map.contains_key(*name))
            .map(String::as_str)
    }
}

/// The checks of `node` on `value` itself, before anything below it but an object's
/// `required`: type, `const`, `enum`, then an array's length or a string's length.
#[inline]
fn match_here<'s>(node: &'s Node, value: &Value) -> Result<(), Failure<'s>> {
    if node.only_variant == Some(std::mem::discriminant(value)) {
        return Ok(());
    }
    match_rules(node, value)
}

/// [`match_here`] the long way.
fn match_rules<'s>(node: &'s Node, value: &Value) -> Result<(), Failure<'s>> {
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
        (Kind::Array(rule), Value::Array(items)) => {
            let len = items.len() as u64;
            if rule.length.min.is_some_and(|min| len < min) {
                return Err(Failure::new("too few items"));
            }
            if rule.length.max.is_some_and(|max| len > max) {
                return Err(Failure::new("too many items"));
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

mod arguments;
mod explain;

pub(crate) use arguments::Refusal;
pub(crate) use explain::{mismatch_detail, unsupported_detail, unsupported_keyword};

#[cfg(test)]
mod tests;
