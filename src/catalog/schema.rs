//! Schema Profile v1: admission of schemas and matching of instances.

use serde_json::Value;

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
}

impl Schema {
    /// Admits `value` as a root schema (root type must be `object`).
    pub fn admit(value: &Value) -> Result<Schema, SchemaFault> {
        let _ = value;
        todo!()
    }

    /// The schema as the plugin declared it.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Matches an instance against the schema.
    pub fn check(&self, instance: &Value) -> Result<(), SchemaMismatch> {
        let _ = instance;
        todo!()
    }
}
