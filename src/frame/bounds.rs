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
///
/// Every value counts as a node, containers and the root included; object keys do not. The walk
/// stops at the first violation (values are visited depth-first, in document order) and never
/// descends more than `MAX_DEPTH + 1` levels, so any input is safe to check.
pub fn check_json_bounds(value: &Value) -> Result<(), JsonBoundsError> {
    let mut nodes = 0;
    walk(value, 0, &mut nodes)
}

/// Checks `value`, found at `depth`, and everything below it.
fn walk(value: &Value, depth: usize, nodes: &mut usize) -> Result<(), JsonBoundsError> {
    if depth > MAX_DEPTH {
        return Err(JsonBoundsError::TooDeep);
    }
    *nodes += 1;
    if *nodes > MAX_NODES {
        return Err(JsonBoundsError::TooManyNodes);
    }
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
        Value::String(s) if s.len() > MAX_STRING_BYTES => Err(JsonBoundsError::StringTooLong),
        Value::String(_) => Ok(()),
        Value::Array(items) => items.iter().try_for_each(|v| walk(v, depth + 1, nodes)),
        Value::Object(map) => map.iter().try_for_each(|(key, v)| {
            if key.len() > MAX_KEY_BYTES || key.chars().any(char::is_control) {
                return Err(JsonBoundsError::InvalidKey);
            }
            walk(v, depth + 1, nodes)
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Map};

    use super::*;

    /// `levels` arrays nested in each other around `null`: the `null` sits at depth `levels`.
    fn nested_arrays(levels: usize) -> Value {
        (0..levels).fold(Value::Null, |inner, _| Value::Array(vec![inner]))
    }

    /// An array holding `n - 1` nulls: `n` nodes in all.
    fn nodes(n: usize) -> Value {
        Value::Array(vec![Value::Null; n - 1])
    }

    fn object_with_key(key: &str) -> Value {
        let mut map = Map::new();
        map.insert(key.to_owned(), json!(1));
        Value::Object(map)
    }

    #[test]
    fn scalars_are_within_bounds() {
        for v in [
            json!(null),
            json!(true),
            json!(1.5),
            json!("s"),
            json!([]),
            json!({}),
        ] {
            assert_eq!(check_json_bounds(&v), Ok(()));
        }
    }

    #[test]
    fn depth_sixteen_is_accepted() {
        assert_eq!(check_json_bounds(&nested_arrays(MAX_DEPTH)), Ok(()));
    }

    #[test]
    fn depth_seventeen_is_too_deep() {
        let v = nested_arrays(MAX_DEPTH + 1);
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::TooDeep));
    }

    #[test]
    fn object_nesting_counts_toward_depth() {
        let v = (0..=MAX_DEPTH).fold(json!(1), |inner, _| json!({ "k": inner }));
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::TooDeep));
    }

    #[test]
    fn very_deep_value_does_not_overflow_the_stack() {
        let v = nested_arrays(100_000);
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::TooDeep));
        // Dropping is recursive in serde_json; unwind the nesting by hand.
        let mut v = v;
        while let Value::Array(mut items) = v {
            v = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn max_nodes_is_accepted() {
        assert_eq!(check_json_bounds(&nodes(MAX_NODES)), Ok(()));
    }

    #[test]
    fn one_node_past_max_is_too_many() {
        let v = nodes(MAX_NODES + 1);
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::TooManyNodes));
    }

    #[test]
    fn containers_count_as_nodes() {
        // The root object, MAX_NODES / 2 inner arrays and as many nulls: one node too many.
        let mut map = Map::new();
        for i in 0..MAX_NODES / 2 {
            map.insert(i.to_string(), json!([null]));
        }
        let v = Value::Object(map);
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::TooManyNodes));
    }

    #[test]
    fn string_of_max_bytes_is_accepted() {
        let v = Value::String("a".repeat(MAX_STRING_BYTES));
        assert_eq!(check_json_bounds(&v), Ok(()));
    }

    #[test]
    fn string_one_byte_too_long_is_rejected() {
        let v = json!({ "k": ["a".repeat(MAX_STRING_BYTES + 1)] });
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::StringTooLong));
    }

    #[test]
    fn key_of_max_bytes_is_accepted() {
        let v = object_with_key(&"k".repeat(MAX_KEY_BYTES));
        assert_eq!(check_json_bounds(&v), Ok(()));
    }

    #[test]
    fn key_one_byte_too_long_is_invalid() {
        let v = object_with_key(&"k".repeat(MAX_KEY_BYTES + 1));
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::InvalidKey));
    }

    #[test]
    fn empty_key_is_accepted() {
        let v = object_with_key("");
        assert_eq!(check_json_bounds(&v), Ok(()));
    }

    #[test]
    fn key_with_control_character_is_invalid() {
        for key in ["a\nb", "\t", "x\u{0}", "\u{7f}", "\u{85}"] {
            let v = json!([object_with_key(key)]);
            assert_eq!(
                check_json_bounds(&v),
                Err(JsonBoundsError::InvalidKey),
                "{key:?}"
            );
        }
    }

    #[test]
    fn key_with_unicode_is_accepted() {
        assert_eq!(check_json_bounds(&object_with_key("clé ✓")), Ok(()));
    }
}
