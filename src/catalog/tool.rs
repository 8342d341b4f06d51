//! One admitted tool definition.

use serde_json::Value;

use super::Schema;

/// The four interpreted annotation hints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolHints {
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    pub open_world: Option<bool>,
}

/// An admitted, immutable tool definition.
#[derive(Debug, Clone)]
pub struct Tool {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) input_schema: Schema,
    pub(crate) output_schema: Option<Schema>,
    pub(crate) annotations: Option<Value>,
    pub(crate) definition: Value,
    pub(crate) observation: String,
}

impl Tool {
    /// The tool name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The optional title.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }
    /// The optional description.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }
    /// The input schema.
    pub fn input_schema(&self) -> &Schema {
        &self.input_schema
    }
    /// The output schema, if declared.
    pub fn output_schema(&self) -> Option<&Schema> {
        self.output_schema.as_ref()
    }
    /// The annotations object, if any.
    pub fn annotations(&self) -> Option<&Value> {
        self.annotations.as_ref()
    }
    /// The four interpreted hints (booleans only; others ignored).
    pub fn hints(&self) -> ToolHints {
        todo!()
    }
    /// The full definition as admitted (canonical key order).
    pub fn definition(&self) -> &Value {
        &self.definition
    }
    /// The schema observation: `sha256:` + hex digest of the canonical definition.
    pub fn observation(&self) -> &str {
        &self.observation
    }
}
