//! One admitted tool definition.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;

use super::schema::Refusal;
use super::Schema;
use crate::error::{Error, ErrorCode};
use crate::frame::{tools_call_head, JsonBoundsError, Measured};

/// Largest serialized call arguments.
pub const MAX_ARGUMENTS_BYTES: usize = 64 * 1024;

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

/// An admitted, immutable tool definition (shared: a clone is a reference count).
#[derive(Debug, Clone)]
pub struct Tool(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    admitted: Admitted,
    /// The definition's JSON text, written once.
    definition_json: Box<RawValue>,
    /// The part of a tools/call frame that names this tool, written once.
    call_head: Box<[u8]>,
}

/// What an admitted tool holds.
#[derive(Debug)]
pub(crate) struct Admitted {
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
    /// The tool `admitted` describes, its definition's JSON text written once.
    pub(crate) fn new(admitted: Admitted) -> Tool {
        let definition_json = serde_json::value::to_raw_value(&admitted.definition)
            .expect("a JSON value always serializes");
        let call_head = tools_call_head(&admitted.name).into_boxed_slice();
        Tool(Arc::new(Shared {
            admitted,
            definition_json,
            call_head,
        }))
    }

    fn a(&self) -> &Admitted {
        &self.0.admitted
    }

    /// The definition's JSON text (what [`Tool::definition`] serializes to).
    pub fn definition_json(&self) -> &RawValue {
        &self.0.definition_json
    }

    /// The tool name.
    pub fn name(&self) -> &str {
        &self.a().name
    }
    /// What follows the id in a tools/call frame of this tool, up to its arguments
    /// ([`tools_call_head`]).
    pub(crate) fn call_head(&self) -> &[u8] {
        &self.0.call_head
    }
    /// The optional title.
    pub fn title(&self) -> Option<&str> {
        self.a().title.as_deref()
    }
    /// The optional description.
    pub fn description(&self) -> Option<&str> {
        self.a().description.as_deref()
    }
    /// The input schema.
    pub fn input_schema(&self) -> &Schema {
        &self.a().input_schema
    }
    /// The output schema, if declared.
    pub fn output_schema(&self) -> Option<&Schema> {
        self.a().output_schema.as_ref()
    }
    /// The annotations object, if any.
    pub fn annotations(&self) -> Option<&Value> {
        self.a().annotations.as_ref()
    }
    /// Checks call arguments: an object within the JSON and size bounds that matches the
    /// input schema. A failure is `plugin_arguments_schema_invalid`, not started.
    /// Returns what the bounds walk measured, for the encoder.
    pub(crate) fn check_arguments(&self, arguments: &Value) -> Result<Measured, Error> {
        let invalid =
            |message: String| Error::not_started(ErrorCode::ArgumentsSchemaInvalid, message);
        // The bounds first, wherever they break, then the schema: one walk for both.
        match self.a().input_schema.check_bounded(arguments, MAX_ARGUMENTS_BYTES) {
            Ok(measured) => Ok(measured),
            Err(Refusal::Bounds(bound)) => Err(invalid(match bound {
                JsonBoundsError::TooLarge => "arguments exceed 64 KiB when serialized".into(),
                _ => "arguments exceed the JSON bounds (depth 16, 4096 values, 512 KiB strings, 1024-byte keys)".into(),
            })),
            Err(Refusal::Mismatch(mismatch)) => {
                let at = if mismatch.path.is_empty() {
                    "the arguments".to_string()
                } else {
                    format!("arguments at {}", mismatch.path)
                };
                Err(invalid(format!(
                    "{at} do not match the tool's inputSchema: {}",
                    mismatch.reason
                )))
            }
        }
    }
    /// The four interpreted hints (booleans only; others ignored).
    pub fn hints(&self) -> ToolHints {
        let Some(Value::Object(annotations)) = &self.a().annotations else {
            return ToolHints::default();
        };
        let hint = |key: &str| annotations.get(key).and_then(Value::as_bool);
        ToolHints {
            read_only: hint("readOnlyHint"),
            destructive: hint("destructiveHint"),
            idempotent: hint("idempotentHint"),
            open_world: hint("openWorldHint"),
        }
    }
    /// The full definition as admitted (canonical key order): `name`, and `title`,
    /// `description`, `inputSchema`, `outputSchema`, `annotations` when present.
    pub fn definition(&self) -> &Value {
        &self.a().definition
    }
    /// The schema observation: `sha256:` + hex SHA-256 of `webcodex-plugin-tool-v1\0` followed
    /// by the canonical JSON of [`Tool::definition`]. Any change to the definition changes it.
    pub fn observation(&self) -> &str {
        &self.a().observation
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::admit_tools_list;

    fn tool_with(annotations: Option<Value>) -> Tool {
        let mut def = json!({"name": "t", "inputSchema": {"type": "object"}});
        if let Some(a) = annotations {
            def["annotations"] = a;
        }
        let catalog = admit_tools_list(&json!({ "tools": [def] })).unwrap();
        catalog.tools()[0].clone()
    }

    #[test]
    fn hints_read_the_four_booleans() {
        let t = tool_with(Some(json!({"readOnlyHint": true, "destructiveHint": false,
            "idempotentHint": true, "openWorldHint": false})));
        assert_eq!(
            t.hints(),
            ToolHints {
                read_only: Some(true),
                destructive: Some(false),
                idempotent: Some(true),
                open_world: Some(false),
            }
        );
    }

    #[test]
    fn hints_ignore_non_boolean_values() {
        let t = tool_with(Some(json!({"readOnlyHint": "yes", "destructiveHint": 1,
            "idempotentHint": null, "openWorldHint": true})));
        assert_eq!(
            t.hints(),
            ToolHints {
                open_world: Some(true),
                ..ToolHints::default()
            }
        );
    }

    #[test]
    fn hints_are_empty_without_annotations() {
        assert_eq!(tool_with(None).hints(), ToolHints::default());
        assert_eq!(
            tool_with(Some(json!({"other": 1}))).hints(),
            ToolHints::default()
        );
    }

    #[test]
    fn accessors_return_the_admitted_parts() {
        let def = json!({"name": "t", "title": "T", "description": "D",
            "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
            "annotations": {"x": 1}});
        let catalog = admit_tools_list(&json!({ "tools": [def.clone()] })).unwrap();
        let t = &catalog.tools()[0];
        assert_eq!(t.name(), "t");
        assert_eq!(t.title(), Some("T"));
        assert_eq!(t.description(), Some("D"));
        assert_eq!(t.input_schema().source(), &json!({"type": "object"}));
        assert_eq!(
            t.output_schema().map(Schema::source),
            Some(&json!({"type": "object"}))
        );
        assert_eq!(t.annotations(), Some(&json!({"x": 1})));
        assert_eq!(t.definition(), &def);
    }

    #[test]
    fn definition_holds_only_the_keys_present() {
        let t = tool_with(None);
        assert_eq!(
            t.definition(),
            &json!({"name": "t", "inputSchema": {"type": "object"}})
        );
        assert_eq!(t.title(), None);
        assert!(t.output_schema().is_none());
    }
}
