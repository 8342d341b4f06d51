//! Tool definitions, Schema Profile v1, tool-result validation and the frozen catalog.
//!
//! Pure: no process code. [`admit_tools_list`] turns a tools/list result into a
//! [`FrozenCatalog`] or the first [`Diagnostic`]; [`Schema`] admits a schema and matches
//! instances against it; [`validate_tool_result`] checks a tools/call result.

mod diagnostic;
mod frozen;
mod result;
mod schema;
mod tool;

pub use diagnostic::{Diagnostic, DiagnosticCode};
pub use frozen::{admit_tools_list, FrozenCatalog, MAX_TOOLS};
pub use result::{validate_tool_result, ResultFault, TextContent, ToolResult};
pub use schema::{Schema, SchemaFault, SchemaMismatch};
pub use tool::{Tool, ToolHints};
