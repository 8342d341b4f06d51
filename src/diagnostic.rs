//! The finite admission-diagnostic vocabulary (docs/PROTOCOL.md §4.5, admission diagnostics).
//!
//! Below both `error` (an admission failure carries a diagnostic) and `catalog` (which finds
//! them); public as `catalog::{Diagnostic, DiagnosticCode}`.

/// Admission diagnostic codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DiagnosticCode {
    /// The tools/list result is not exactly `{"tools":[...]}`.
    ToolsListResultMalformed,
    /// More than 128 tools.
    ToolCountExceeded,
    /// A tool definition is not an object, lacks a key, or has an unknown key.
    ToolDefinitionInvalid,
    /// A tool name breaks `^[A-Za-z0-9_.-]{1,128}$`.
    InvalidToolName,
    /// Two tools share a name.
    DuplicateToolName,
    /// A title breaks its bounds.
    InvalidToolTitle,
    /// A description breaks its bounds.
    InvalidToolDescription,
    /// The inputSchema is not an admissible schema.
    InputSchemaInvalid,
    /// The outputSchema is not an admissible schema.
    OutputSchemaInvalid,
    /// A schema uses a keyword outside Schema Profile v1.
    SchemaKeywordUnsupported,
    /// annotations is not an object within bounds.
    AnnotationsInvalid,
    /// A schema or annotations object exceeds its size or JSON bounds.
    SchemaBoundsExceeded,
}

impl DiagnosticCode {
    /// The stable wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosticCode::ToolsListResultMalformed => "tools_list_result_malformed",
            DiagnosticCode::ToolCountExceeded => "tool_count_exceeded",
            DiagnosticCode::ToolDefinitionInvalid => "tool_definition_invalid",
            DiagnosticCode::InvalidToolName => "invalid_tool_name",
            DiagnosticCode::DuplicateToolName => "duplicate_tool_name",
            DiagnosticCode::InvalidToolTitle => "invalid_tool_title",
            DiagnosticCode::InvalidToolDescription => "invalid_tool_description",
            DiagnosticCode::InputSchemaInvalid => "input_schema_invalid",
            DiagnosticCode::OutputSchemaInvalid => "output_schema_invalid",
            DiagnosticCode::SchemaKeywordUnsupported => "schema_keyword_unsupported",
            DiagnosticCode::AnnotationsInvalid => "annotations_invalid",
            DiagnosticCode::SchemaBoundsExceeded => "schema_bounds_exceeded",
        }
    }
}

/// One admission diagnostic: `{code, tool?, field?}`. `field` is a label such as `inputSchema`,
/// never a schema fragment or a parser message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// What is wrong.
    pub code: DiagnosticCode,
    /// The tool's name, when it is a valid name.
    pub tool: Option<String>,
    /// The definition key at fault (`name`, `title`, `description`, `inputSchema`, `outputSchema`,
    /// `annotations`, `tools`).
    pub field: Option<&'static str>,
}

impl Diagnostic {
    /// The diagnostic as a JSON object `{code, tool?, field?}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        map.insert("code".into(), self.code.as_str().into());
        if let Some(tool) = &self.tool {
            map.insert("tool".into(), tool.clone().into());
        }
        if let Some(field) = self.field {
            map.insert("field".into(), field.into());
        }
        serde_json::Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn to_json_holds_only_the_parts_present() {
        let d = Diagnostic {
            code: DiagnosticCode::ToolCountExceeded,
            tool: None,
            field: None,
        };
        assert_eq!(d.to_json(), json!({"code": "tool_count_exceeded"}));
    }

    #[test]
    fn to_json_names_tool_and_field() {
        let d = Diagnostic {
            code: DiagnosticCode::SchemaKeywordUnsupported,
            tool: Some("add".into()),
            field: Some("inputSchema"),
        };
        assert_eq!(
            d.to_json(),
            json!({"code": "schema_keyword_unsupported", "tool": "add", "field": "inputSchema"})
        );
    }
}
