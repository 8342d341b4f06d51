//! JSON bounds of DESIGN §4, applied to one value at a time.

use serde_json::Value;

/// Deepest nesting allowed (the root is depth 0).
pub const MAX_DEPTH: usize = 16;
/// Most values (every node) in one bounded value.
pub const MAX_NODES: usize = 4096;
/// Longest string value, in bytes.
pub const MAX_STRING_BYTES: usize = 512 * 1024;
/// Longest object key, in bytes; keys may not contain control characters.
pub const MAX_KEY_BYTES: usize = 1024;

/// Which JSON bound a value broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonBoundsError {
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// More than [`MAX_NODES`] values.
    TooManyNodes,
    /// A string longer than [`MAX_STRING_BYTES`].
    StringTooLong,
    /// A key longer than [`MAX_KEY_BYTES`] or containing a control character.
    InvalidKey,
}

/// Checks `value` against the JSON bounds.
pub fn check_json_bounds(value: &Value) -> Result<(), JsonBoundsError> {
    let _ = value;
    todo!()
}
