//! Where a schema or an instance broke Schema Profile v1, in words for the operator of this
//! host (its log and the in-process `check` and `call`): the unsupported keyword and its JSON
//! Pointer in the plugin's own schema, the keyword an instance broke and the JSON Pointer of
//! the value. Never in a `plugin_tool` output, whose diagnostics stay `{code, tool, field}`.

use serde_json::Value;

use super::{SchemaMismatch, KEYWORDS};

/// Longest name or pointer quoted in a detail; longer ones are cut.
const MAX_QUOTED: usize = 200;

/// The first keyword outside the profile that [`Schema::admit`](super::Schema::admit) met in
/// `schema` (the same walk: a node's own keys in key order, then its `properties` in key
/// order, then its `items`), and its JSON Pointer in `schema`: (keyword, pointer).
pub(crate) fn unsupported_keyword(schema: &Value) -> Option<(String, String)> {
    find_unsupported(schema, &mut String::new(), 0)
}

fn find_unsupported(node: &Value, at: &mut String, depth: usize) -> Option<(String, String)> {
    let map = node.as_object()?;
    if depth > super::MAX_SCHEMA_DEPTH {
        return None;
    }
    if let Some(key) = map.keys().find(|k| !KEYWORDS.contains(&k.as_str())) {
        return Some((key.clone(), format!("{at}/{}", escape(key))));
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (name, child) in properties {
            let len = at.len();
            at.push_str("/properties/");
            at.push_str(&escape(name));
            let found = find_unsupported(child, at, depth + 1);
            at.truncate(len);
            if found.is_some() {
                return found;
            }
        }
    }
    let items = map.get("items")?;
    let len = at.len();
    at.push_str("/items");
    let found = find_unsupported(items, at, depth + 1);
    at.truncate(len);
    found
}

/// A JSON Pointer reference token (RFC 6901: `~` → `~0`, `/` → `~1`).
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// `text` as a log may quote it: control characters escaped, cut to a bound.
pub(crate) fn quoted(text: &str) -> String {
    let mut out: String = text.escape_debug().collect();
    if out.len() > MAX_QUOTED {
        let mut cut = MAX_QUOTED;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push('…');
    }
    out
}

/// The detail of a schema that uses keyword `keyword` at `pointer` (in the `field` of tool
/// `tool`).
pub(crate) fn unsupported_detail(tool: &str, field: &str, keyword: &str, pointer: &str) -> String {
    format!(
        "tool `{tool}`: the {field} uses `{}` at {} (a JSON Pointer in that schema), a keyword \
         outside Schema Profile v1 ({}); remove it, or state the rule in `description`",
        quoted(keyword),
        quoted(pointer),
        KEYWORDS.join(", ")
    )
}

/// The keyword of the schema that a [`SchemaMismatch`] broke.
fn mismatch_keyword(reason: &str) -> &'static str {
    match reason {
        "not equal to const" => "const",
        "not one of enum" => "enum",
        "too few items" => "minItems",
        "too many items" => "maxItems",
        "string too short" => "minLength",
        "string too long" => "maxLength",
        "missing required property" => "required",
        "unknown property" => "additionalProperties",
        _ => "type",
    }
}

/// The detail of a `structuredContent` that does not match the tool's output schema.
pub(crate) fn mismatch_detail(mismatch: &SchemaMismatch) -> String {
    let pointer = if mismatch.path.is_empty() {
        "\"\" (the whole object)".to_string()
    } else {
        quoted(&mismatch.path)
    };
    format!(
        "structuredContent does not match the tool's outputSchema at JSON Pointer {pointer} \
         (of structuredContent): {} (keyword `{}`)",
        mismatch.reason,
        mismatch_keyword(mismatch.reason)
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::{Schema, SchemaFault};

    #[test]
    fn the_unsupported_keyword_is_the_one_admission_refused() {
        let schemas = [
            (json!({"type":"object","$ref":"#/x"}), "$ref", "/$ref"),
            (
                json!({"type":"object","properties":{"a":{"type":"string"},
                    "b/c":{"type":"string","format":"date","pattern":"x"}}}),
                "format",
                "/properties/b~1c/format",
            ),
            (
                json!({"type":"object","properties":{"list":{"type":"array",
                    "items":{"type":"object","anyOf":[]}}}}),
                "anyOf",
                "/properties/list/items/anyOf",
            ),
        ];
        for (schema, keyword, pointer) in schemas {
            assert_eq!(
                Schema::admit(&schema).unwrap_err(),
                SchemaFault::KeywordUnsupported
            );
            let found = unsupported_keyword(&schema).expect("found");
            assert_eq!((found.0.as_str(), found.1.as_str()), (keyword, pointer));
        }
        assert!(unsupported_keyword(&json!({"type":"object"})).is_none());
    }

    #[test]
    fn a_mismatch_names_its_pointer_and_keyword() {
        let schema = Schema::admit(&json!({"type":"object","required":["n"],
            "properties":{"n":{"type":"integer"}}}))
        .unwrap();
        let m = schema.check(&json!({"n": "x"})).unwrap_err();
        let text = mismatch_detail(&m);
        assert!(
            text.contains("JSON Pointer /n") && text.contains("keyword `type`"),
            "{text}"
        );
        let m = schema.check(&json!({})).unwrap_err();
        assert!(mismatch_detail(&m).contains("keyword `required`"));
    }
}
