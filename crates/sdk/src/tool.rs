//! What a plugin author writes: tool definitions, tool outputs and tool errors.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// The definition of one tool, as sent in the `tools/list` result.
///
/// Serializes to `{"name", "title"?, "description"?, "inputSchema", "outputSchema"?,
/// "annotations"?}`; absent options are omitted, never sent as `null`. The host checks every
/// field at admission (name syntax, title and description length, Schema Profile v1, 64 KiB per
/// schema) and rejects the whole plugin on the first violation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// The tool name, unique within the plugin, `^[A-Za-z0-9_.-]{1,128}$`.
    pub name: String,
    /// A short human-readable title (1..=128 bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does (at most 4096 bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The Schema Profile v1 schema of the arguments; its root type must be `object`.
    pub input_schema: Value,
    /// The Schema Profile v1 schema of `structuredContent`, checked by the host on every result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// An annotations object; the host interprets `readOnlyHint`, `destructiveHint`,
    /// `idempotentHint` and `openWorldHint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

impl ToolSpec {
    /// A definition with a name and an input schema and nothing else.
    pub fn new(name: impl Into<String>, input_schema: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: None,
        }
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> ToolSpec {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> ToolSpec {
        self.description = Some(description.into());
        self
    }

    /// Sets the output schema. Every successful result must then carry a matching
    /// `structuredContent`, or the host rejects it.
    pub fn output_schema(mut self, schema: Value) -> ToolSpec {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the annotations object, e.g. `json!({"readOnlyHint": true})`.
    pub fn annotations(mut self, annotations: Value) -> ToolSpec {
        self.annotations = Some(annotations);
        self
    }
}

/// The successful reply of a tool handler: the result of one tools/call.
///
/// Becomes `{"content":[{"type":"text","text":…}…],"structuredContent"?:…}`. The host allows at
/// most 32 text items of 512 KiB each and 512 KiB for the whole result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolReply {
    /// The text content items, in order.
    pub text: Vec<String>,
    /// The structured content; must be a JSON object when present.
    pub structured: Option<Value>,
}

impl ToolReply {
    /// A reply with one text item.
    pub fn text(text: impl Into<String>) -> ToolReply {
        ToolReply {
            text: vec![text.into()],
            structured: None,
        }
    }

    /// Appends one more text item.
    pub fn with_text(mut self, text: impl Into<String>) -> ToolReply {
        self.text.push(text.into());
        self
    }

    /// Sets the structured content, which must be a JSON object.
    pub fn with_structured(mut self, structured: Value) -> ToolReply {
        self.structured = Some(structured);
        self
    }
}

/// A tool-level failure: the tool ran and reports that it could not do its job.
///
/// It is answered as a normal result with `isError: true` and the message as its only text
/// item, not as a JSON-RPC error, so the caller sees the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub(super) message: String,
}

impl ToolError {
    /// A tool error with this message.
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
        }
    }

    /// The message sent to the caller.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(message: String) -> ToolError {
        ToolError::new(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> ToolError {
        ToolError::new(message)
    }
}
