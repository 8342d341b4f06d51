//! tools/call result validation (DESIGN §3, §4, §13.3).

use serde_json::{Map, Value};

use super::Schema;
use crate::error::ErrorCode;

/// One text content item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextContent {
    /// The text.
    pub text: String,
}

/// A validated tools/call result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// Text content items (at most 32).
    pub content: Vec<TextContent>,
    /// Structured content, when the plugin sent it.
    pub structured_content: Option<Map<String, Value>>,
    /// Whether the tool reported an error (false when omitted).
    pub is_error: bool,
}

impl ToolResult {
    /// The canonical output: `content`, `structuredContent` when present, `isError` always.
    pub fn to_json(&self) -> Value {
        todo!()
    }
}

/// Why a result was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultFault {
    /// Breaks the result contract or its bounds.
    Invalid,
    /// structuredContent missing or not matching the declared outputSchema.
    OutputSchemaViolation,
}

impl ResultFault {
    /// The stable error code.
    pub fn code(self) -> ErrorCode {
        match self {
            ResultFault::Invalid => ErrorCode::ResultInvalid,
            ResultFault::OutputSchemaViolation => ErrorCode::OutputSchemaViolation,
        }
    }
}

/// Validates a tools/call `result` against the contract and the tool's output schema.
pub fn validate_tool_result(result: Value, output_schema: Option<&Schema>) -> Result<ToolResult, ResultFault> {
    let _ = (result, output_schema);
    todo!()
}
