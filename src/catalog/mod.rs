//! Tool definitions, Schema Profile v1, tool-result validation and the frozen catalog.
//!
//! Pure: no process code. [`admit_tools_list`] turns a tools/list result into a
//! [`FrozenCatalog`] or the first [`Diagnostic`]; [`Schema`] admits a schema and matches
//! instances against it; [`validate_tool_result`] checks a tools/call result.
//!
//! Every value validated here is checked on its own against the JSON bounds (docs/PROTOCOL.md
//! §3.2, JSON bounds per value): each inputSchema, outputSchema and annotations object, and each
//! call result.

mod frozen;
pub(crate) mod result;
mod schema;
mod tool;

pub use crate::diagnostic::{Diagnostic, DiagnosticCode, DIAGNOSTIC_FIELDS};
pub(crate) use frozen::valid_tool_name;
pub(crate) use frozen::{admit_initialize, rejected_tools_list};
pub use frozen::{admit_tools_list, FrozenCatalog, MAX_TOOLS};
pub(crate) use result::validate_tool_result_text;
pub(crate) use result::CallReply;
pub use result::{validate_tool_result, ResultFault, ToolResult};
pub use schema::{Schema, SchemaFault, SchemaMismatch};
pub use tool::{Tool, ToolHints, MAX_ARGUMENTS_BYTES};

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::frame::check_json_bounds_sized;

/// True when `value` is within the JSON bounds (docs/PROTOCOL.md §3, bounds) and its compact
/// serialization is at most `max_bytes` (one walk; see [`check_json_bounds_sized`]).
fn within_bounds(value: &Value, max_bytes: usize) -> bool {
    check_json_bounds_sized(value, max_bytes).is_ok()
}

/// `sha256:` + lowercase hex SHA-256 of `tag` followed by the canonical JSON of `value`.
///
/// serde_json is built without `preserve_order`, so object keys serialize sorted: the compact
/// serialization is canonical.
fn tagged_digest<T: Serialize + ?Sized>(tag: &[u8], value: &T) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tag);
    serde_json::to_writer(&mut hasher, value).expect("serializing a JSON value cannot fail");
    let digest = hasher.finalize();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        out.push(HEX[usize::from(byte >> 4)] as char);
        out.push(HEX[usize::from(byte & 0xf)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested_arrays(depth: usize) -> Value {
        let mut v = json!(null);
        for _ in 0..depth {
            v = json!([v]);
        }
        v
    }

    #[test]
    fn bounds_accept_depth_16_and_reject_17() {
        assert!(within_bounds_unsized(&nested_arrays(16)));
        assert!(!within_bounds_unsized(&nested_arrays(17)));
    }

    fn within_bounds_unsized(value: &Value) -> bool {
        within_bounds(value, usize::MAX)
    }

    #[test]
    fn bounds_accept_4096_nodes_and_reject_4097() {
        assert!(within_bounds_unsized(&Value::Array(vec![json!(1); 4095])));
        assert!(!within_bounds_unsized(&Value::Array(vec![json!(1); 4096])));
    }

    #[test]
    fn bounds_accept_512_kib_string_and_reject_one_more_byte() {
        assert!(within_bounds_unsized(&json!("x".repeat(512 * 1024))));
        assert!(!within_bounds_unsized(&json!("x".repeat(512 * 1024 + 1))));
    }

    #[test]
    fn bounds_accept_1024_byte_key_and_reject_1025() {
        assert!(within_bounds_unsized(&json!({ "k".repeat(1024): 1 })));
        assert!(!within_bounds_unsized(&json!({ "k".repeat(1025): 1 })));
    }

    #[test]
    fn bounds_reject_control_characters_in_keys() {
        assert!(!within_bounds_unsized(&json!({ "a\nb": 1 })));
        assert!(!within_bounds_unsized(&json!({ "a\u{7f}": 1 })));
        assert!(within_bounds_unsized(&json!({ "a": "values may hold \n" })));
    }

    #[test]
    fn serialized_len_is_exact_at_the_limit() {
        let v = json!({"a": "bc"});
        let len = serde_json::to_vec(&v).unwrap().len();
        assert!(within_bounds(&v, len));
        assert!(!within_bounds(&v, len - 1));
    }

    #[test]
    fn tagged_digest_is_sha256_of_tag_and_canonical_json() {
        let v = json!({"b": 1, "a": [true]});
        let mut bytes = b"tag\0".to_vec();
        bytes.extend_from_slice(br#"{"a":[true],"b":1}"#);
        let expected = Sha256::digest(&bytes);
        let hex: String = expected.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(tagged_digest(b"tag\0", &v), format!("sha256:{hex}"));
    }
}
