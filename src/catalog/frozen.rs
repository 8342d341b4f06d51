//! The frozen, sorted catalog of one provider instance.
//!
//! # Admission order
//! [`admit_tools_list`] first checks the envelope: the result must be exactly `{"tools":[…]}`
//! (`tools_list_result_malformed`, no field), with at most [`MAX_TOOLS`] entries
//! (`tool_count_exceeded`, no field). Then each tool is checked in list order, and within
//! a tool in this order; the first failure of the first failing tool is reported:
//!
//! | step | failure | code | tool | field |
//! |---|---|---|---|---|
//! | 1 | not an object | `tool_definition_invalid` | – | – |
//! | 2 | `name` missing or not a string | `tool_definition_invalid` | – | `name` |
//! | 3 | `name` breaks `^[A-Za-z0-9_.-]{1,128}$` | `invalid_tool_name` | – | `name` |
//! | 4 | a key outside the definition keys | `tool_definition_invalid` | name | – |
//! | 5 | `name` already used by an earlier tool | `duplicate_tool_name` | name | `name` |
//! | 6 | `title` not a string, not 1..=128 bytes, or bad control char | `invalid_tool_title` | name | `title` |
//! | 7 | `description` not a string, over 4096 bytes, or bad control char | `invalid_tool_description` | name | `description` |
//! | 8 | `inputSchema` missing | `tool_definition_invalid` | name | `inputSchema` |
//! | 9 | `inputSchema` not admissible | `input_schema_invalid` / `schema_keyword_unsupported` / `schema_bounds_exceeded` | name | `inputSchema` |
//! | 10 | `outputSchema` not admissible | `output_schema_invalid` / `schema_keyword_unsupported` / `schema_bounds_exceeded` | name | `outputSchema` |
//! | 11 | `annotations` not an object | `annotations_invalid` | name | `annotations` |
//! | 12 | `annotations` over 64 KiB or past the JSON bounds | `schema_bounds_exceeded` | name | `annotations` |
//!
//! Control characters allowed in a title or description are `\n`, `\r` and `\t` only. An
//! empty description is allowed; an empty title is not. An empty tool list is allowed.
//!
//! # Digests
//! The catalog digest is `sha256:` + hex SHA-256 of `webcodex-plugin-catalog-v1\0` followed by
//! the canonical JSON array of the definitions sorted by name; it does not depend on the order
//! in which the plugin listed its tools.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::{Error, ErrorCode};
use crate::frame::{check_json_bounds, PROTOCOL_VERSION};

use super::tool::Admitted;
use super::{
    tagged_digest, within_bounds, Diagnostic, DiagnosticCode, Schema, SchemaFault, Tool,
    DIAGNOSTIC_FIELDS,
};

/// Most tools one provider may declare.
pub const MAX_TOOLS: usize = 128;
/// Longest tool name, in bytes.
const MAX_NAME_BYTES: usize = 128;
/// Longest title, in bytes.
const MAX_TITLE_BYTES: usize = 128;
/// Longest description, in bytes.
const MAX_DESCRIPTION_BYTES: usize = 4096;
/// Largest serialized annotations object, in bytes.
const MAX_ANNOTATIONS_BYTES: usize = 64 * 1024;
/// Keys a tool definition may have.
const DEFINITION_KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];
/// Domain tag of a tool's schema observation.
const TOOL_TAG: &[u8] = b"webcodex-plugin-tool-v1\0";
/// Domain tag of the catalog digest.
const CATALOG_TAG: &[u8] = b"webcodex-plugin-catalog-v1\0";

/// The admitted tools of one provider instance, sorted by name, never mutated.
#[derive(Debug, Clone)]
pub struct FrozenCatalog {
    tools: Arc<[Tool]>,
    digest: String,
}

impl FrozenCatalog {
    /// The tools, sorted by name.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }
    /// Looks a tool up by exact name.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.find(name).map(|(_, tool)| tool)
    }
    /// The tool a call names, whose schema observation still equals `observation` (when
    /// given): else `plugin_tool_unavailable` or `plugin_schema_changed`, not started.
    pub(crate) fn lookup(&self, name: &str, observation: Option<&str>) -> Result<&Tool, Error> {
        let tool = self.get(name).ok_or_else(|| {
            Error::not_started(
                ErrorCode::ToolUnavailable,
                "the provider has no tool with that name",
            )
        })?;
        if let Some(expected) = observation {
            if tool.observation() != expected {
                return Err(Error::not_started(
                    ErrorCode::SchemaChanged,
                    "the tool's schema changed since it was described; describe it again",
                ));
            }
        }
        Ok(tool)
    }
    /// Looks a tool up by exact name: its place in [`FrozenCatalog::tools`], and the tool.
    pub(crate) fn find(&self, name: &str) -> Option<(usize, &Tool)> {
        self.tools
            .binary_search_by(|tool| tool.name().cmp(name))
            .ok()
            .map(|i| (i, &self.tools[i]))
    }
    /// `sha256:` + hex digest of a domain tag and the canonical JSON of the sorted tools.
    pub fn digest(&self) -> &str {
        &self.digest
    }
    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }
    /// True when the provider declared no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// Validates a tools/list `result` and freezes it; the first failing item wins.
///
/// The checks and their order are listed in the module documentation.
pub fn admit_tools_list(result: &Value) -> Result<FrozenCatalog, Diagnostic> {
    let list = match result.as_object() {
        Some(map) if map.len() == 1 => map.get("tools").and_then(Value::as_array),
        _ => None,
    }
    .ok_or_else(|| diagnostic(DiagnosticCode::ToolsListResultMalformed, None, None))?;
    if list.len() > MAX_TOOLS {
        return Err(diagnostic(DiagnosticCode::ToolCountExceeded, None, None));
    }
    let mut seen = HashSet::with_capacity(list.len());
    let mut tools = Vec::with_capacity(list.len());
    for value in list {
        tools.push(admit_tool(value, &mut seen)?);
    }
    tools.sort_by(|a, b| a.name().cmp(b.name()));
    let definitions: Vec<&Value> = tools.iter().map(Tool::definition).collect();
    let digest = tagged_digest(CATALOG_TAG, &definitions);
    Ok(FrozenCatalog {
        tools: tools.into(),
        digest,
    })
}

/// The admission error of a tools/list `result` that [`admit_tools_list`] refused with
/// `diagnostic`: `plugin_tools_list_invalid` with the diagnostic, and for an unsupported schema
/// keyword the keyword and its JSON Pointer as the local detail (for the operator only).
pub(crate) fn rejected_tools_list(result: &Value, diagnostic: Diagnostic) -> Error {
    let detail = match (&diagnostic.code, &diagnostic.tool, diagnostic.field) {
        (DiagnosticCode::SchemaKeywordUnsupported, Some(tool), Some(field)) => result["tools"]
            .as_array()
            .and_then(|tools| tools.iter().find(|t| t["name"] == tool.as_str()))
            .and_then(|t| super::schema::unsupported_keyword(&t[field]))
            .map(|(keyword, at)| super::schema::unsupported_detail(tool, field, &keyword, &at)),
        _ => None,
    };
    let error = Error::not_started(
        ErrorCode::ToolsListInvalid,
        format!("the tool list was rejected: {}", diagnostic.code.as_str()),
    )
    .with_diagnostic(diagnostic);
    match detail {
        Some(detail) => error.with_local_detail(detail),
        None => error,
    }
}

fn diagnostic(code: DiagnosticCode, tool: Option<&str>, field: Option<&'static str>) -> Diagnostic {
    debug_assert!(field.is_none_or(|f| DIAGNOSTIC_FIELDS.contains(&f)));
    Diagnostic {
        code,
        tool: tool.map(str::to_owned),
        field,
    }
}

fn admit_tool<'v>(value: &'v Value, seen: &mut HashSet<&'v str>) -> Result<Tool, Diagnostic> {
    use DiagnosticCode as Code;

    let map = value
        .as_object()
        .ok_or_else(|| diagnostic(Code::ToolDefinitionInvalid, None, None))?;
    let name = map
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| diagnostic(Code::ToolDefinitionInvalid, None, Some("name")))?;
    if !valid_tool_name(name) {
        return Err(diagnostic(Code::InvalidToolName, None, Some("name")));
    }
    let fail = |code, field| diagnostic(code, Some(name), field);
    if map.keys().any(|k| !DEFINITION_KEYS.contains(&k.as_str())) {
        return Err(fail(Code::ToolDefinitionInvalid, None));
    }
    if !seen.insert(name) {
        return Err(fail(Code::DuplicateToolName, Some("name")));
    }
    let title = optional_text(map, "title", 1, MAX_TITLE_BYTES)
        .map_err(|()| fail(Code::InvalidToolTitle, Some("title")))?;
    let description = optional_text(map, "description", 0, MAX_DESCRIPTION_BYTES)
        .map_err(|()| fail(Code::InvalidToolDescription, Some("description")))?;
    let input = map
        .get("inputSchema")
        .ok_or_else(|| fail(Code::ToolDefinitionInvalid, Some("inputSchema")))?;
    let input_schema = Schema::admit(input).map_err(|f| {
        fail(
            schema_code(f, Code::InputSchemaInvalid),
            Some("inputSchema"),
        )
    })?;
    let output_schema = match map.get("outputSchema") {
        None => None,
        Some(output) => Some(Schema::admit(output).map_err(|f| {
            fail(
                schema_code(f, Code::OutputSchemaInvalid),
                Some("outputSchema"),
            )
        })?),
    };
    let annotations = match map.get("annotations") {
        None => None,
        Some(a) if !a.is_object() => {
            return Err(fail(Code::AnnotationsInvalid, Some("annotations")))
        }
        Some(a) if !within_bounds(a, MAX_ANNOTATIONS_BYTES) => {
            return Err(fail(Code::SchemaBoundsExceeded, Some("annotations")))
        }
        Some(a) => Some(a.clone()),
    };
    let definition = value.clone();
    let observation = tagged_digest(TOOL_TAG, &definition);
    Ok(Tool::new(Admitted {
        name: name.to_owned(),
        title,
        description,
        input_schema,
        output_schema,
        annotations,
        definition,
        observation,
    }))
}

/// `^[A-Za-z0-9_.-]{1,128}$`.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    (1..=MAX_NAME_BYTES).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// An optional string of `min..=max` bytes without control characters other than `\n\r\t`.
fn optional_text(
    map: &Map<String, Value>,
    key: &str,
    min: usize,
    max: usize,
) -> Result<Option<String>, ()> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::String(s))
            if (min..=max).contains(&s.len())
                && !s
                    .chars()
                    .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t')) =>
        {
            Ok(Some(s.clone()))
        }
        Some(_) => Err(()),
    }
}

fn schema_code(fault: SchemaFault, invalid: DiagnosticCode) -> DiagnosticCode {
    match fault {
        SchemaFault::KeywordUnsupported => DiagnosticCode::SchemaKeywordUnsupported,
        SchemaFault::Invalid => invalid,
        SchemaFault::BoundsExceeded => DiagnosticCode::SchemaBoundsExceeded,
    }
}

/// Checks the initialize result: an object within the JSON bounds whose `protocolVersion` is
/// `webcodex-plugin-v1` (`plugin_initialize_invalid`, or `plugin_protocol_version_mismatch`
/// for another version; not started).
pub(crate) fn admit_initialize(result: &Value) -> Result<(), Error> {
    let invalid = |message: &str| Error::not_started(ErrorCode::InitializeInvalid, message);
    if check_json_bounds(result).is_err() {
        return Err(invalid("the initialize result exceeds the JSON bounds"));
    }
    let Some(object) = result.as_object() else {
        return Err(invalid("the initialize result is not an object"));
    };
    match object.get("protocolVersion") {
        Some(Value::String(version)) if version == PROTOCOL_VERSION => Ok(()),
        Some(Value::String(_)) => Err(Error::not_started(
            ErrorCode::ProtocolVersionMismatch,
            "the plugin speaks another protocol version; it must answer protocolVersion \"webcodex-plugin-v1\"",
        )),
        _ => Err(invalid(
            "the initialize result has no protocolVersion string",
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sha2::{Digest, Sha256};

    use super::*;
    use DiagnosticCode as Code;

    fn tool(name: &str) -> Value {
        json!({"name": name, "inputSchema": {"type": "object"}})
    }

    fn with(name: &str, key: &str, value: Value) -> Value {
        let mut t = tool(name);
        t[key] = value;
        t
    }

    fn admit(tools: Vec<Value>) -> Result<FrozenCatalog, Diagnostic> {
        admit_tools_list(&json!({ "tools": tools }))
    }

    fn fails(tools: Vec<Value>) -> (Code, Option<String>, Option<&'static str>) {
        let d = admit(tools).expect_err("list must be rejected");
        if let Some(field) = d.field {
            assert!(DIAGNOSTIC_FIELDS.contains(&field), "field {field:?}");
        }
        (d.code, d.tool, d.field)
    }

    fn of(
        code: Code,
        tool: Option<&str>,
        field: Option<&'static str>,
    ) -> (Code, Option<String>, Option<&'static str>) {
        (code, tool.map(str::to_owned), field)
    }

    // ---- envelope ----

    #[test]
    fn admits_an_empty_tool_list() {
        let c = admit(vec![]).unwrap();
        assert!(c.is_empty());
        assert_eq!(c.len(), 0);
        assert!(c.digest().starts_with("sha256:"));
    }

    #[test]
    fn rejects_result_that_is_not_exactly_tools_array() {
        for result in [
            json!([]),
            json!(null),
            json!({}),
            json!({"tools": {}}),
            json!({"tools": null}),
            json!({"tools": [], "nextCursor": "x"}),
            json!({"tool": []}),
        ] {
            let d = admit_tools_list(&result).unwrap_err();
            assert_eq!(
                (d.code, d.tool, d.field),
                of(Code::ToolsListResultMalformed, None, None),
                "{result}"
            );
        }
    }

    #[test]
    fn admits_128_tools() {
        let tools = (0..128).map(|i| tool(&format!("t{i}"))).collect();
        assert_eq!(admit(tools).unwrap().len(), 128);
    }

    #[test]
    fn rejects_129_tools() {
        let tools = (0..129).map(|i| tool(&format!("t{i}"))).collect();
        assert_eq!(fails(tools), of(Code::ToolCountExceeded, None, None));
    }

    #[test]
    fn tool_count_is_checked_before_any_tool() {
        let mut tools: Vec<Value> = (0..129).map(|i| tool(&format!("t{i}"))).collect();
        tools[0] = json!(1);
        assert_eq!(fails(tools).0, Code::ToolCountExceeded);
    }

    // ---- each diagnostic ----

    #[test]
    fn rejects_tool_that_is_not_an_object() {
        assert_eq!(
            fails(vec![json!("add")]),
            of(Code::ToolDefinitionInvalid, None, None)
        );
    }

    #[test]
    fn rejects_missing_name() {
        assert_eq!(
            fails(vec![json!({"inputSchema": {"type": "object"}})]),
            of(Code::ToolDefinitionInvalid, None, Some("name"))
        );
    }

    #[test]
    fn rejects_non_string_name() {
        assert_eq!(
            fails(vec![json!({"name": 1, "inputSchema": {"type": "object"}})]),
            of(Code::ToolDefinitionInvalid, None, Some("name"))
        );
    }

    #[test]
    fn admits_names_of_every_allowed_character_up_to_128_bytes() {
        let long = "a".repeat(128);
        let c = admit(vec![tool("Az09_.-"), tool(&long)]).unwrap();
        assert!(c.get("Az09_.-").is_some() && c.get(&long).is_some());
    }

    #[test]
    fn rejects_invalid_names_without_naming_the_tool() {
        for name in ["", "a b", "a/b", "é", "a\n", &"a".repeat(129)] {
            assert_eq!(
                fails(vec![tool(name)]),
                of(Code::InvalidToolName, None, Some("name")),
                "{name:?}"
            );
        }
    }

    #[test]
    fn rejects_unknown_key_naming_the_tool() {
        assert_eq!(
            fails(vec![with("add", "extra", json!(1))]),
            of(Code::ToolDefinitionInvalid, Some("add"), None)
        );
    }

    #[test]
    fn rejects_duplicate_name() {
        assert_eq!(
            fails(vec![tool("add"), tool("sub"), tool("add")]),
            of(Code::DuplicateToolName, Some("add"), Some("name"))
        );
    }

    #[test]
    fn names_differing_in_case_are_distinct() {
        assert_eq!(admit(vec![tool("a"), tool("A")]).unwrap().len(), 2);
    }

    #[test]
    fn admits_title_of_1_and_128_bytes_with_allowed_whitespace() {
        for title in ["T", &"t".repeat(128), "a\nb\r\tc"] {
            let c = admit(vec![with("t", "title", json!(title))]).unwrap();
            assert_eq!(c.tools()[0].title(), Some(title));
        }
    }

    #[test]
    fn rejects_bad_titles() {
        for title in [
            json!(""),
            json!("t".repeat(129)),
            json!("a\u{0}b"),
            json!("a\u{1b}"),
            json!("\u{85}"),
            json!(1),
            json!(null),
        ] {
            assert_eq!(
                fails(vec![with("t", "title", title.clone())]),
                of(Code::InvalidToolTitle, Some("t"), Some("title")),
                "{title}"
            );
        }
    }

    #[test]
    fn title_bounds_count_bytes() {
        // 64 two-byte chars = 128 bytes ok; 65 = 130 bytes rejected.
        assert!(admit(vec![with("t", "title", json!("é".repeat(64)))]).is_ok());
        assert_eq!(
            fails(vec![with("t", "title", json!("é".repeat(65)))]).0,
            Code::InvalidToolTitle
        );
    }

    #[test]
    fn admits_empty_description_and_4096_bytes() {
        assert!(admit(vec![with("t", "description", json!(""))]).is_ok());
        assert!(admit(vec![with("t", "description", json!("d".repeat(4096)))]).is_ok());
        assert!(admit(vec![with("t", "description", json!("line\n\ttab\r\n"))]).is_ok());
    }

    #[test]
    fn rejects_bad_descriptions() {
        for d in [
            json!("d".repeat(4097)),
            json!("bell\u{7}"),
            json!("del\u{7f}"),
            json!([]),
            json!(null),
        ] {
            assert_eq!(
                fails(vec![with("t", "description", d)]),
                of(Code::InvalidToolDescription, Some("t"), Some("description"))
            );
        }
    }

    #[test]
    fn rejects_missing_input_schema() {
        assert_eq!(
            fails(vec![json!({"name": "t"})]),
            of(Code::ToolDefinitionInvalid, Some("t"), Some("inputSchema"))
        );
    }

    #[test]
    fn rejects_invalid_input_schema() {
        assert_eq!(
            fails(vec![with("t", "inputSchema", json!({"type": "string"}))]),
            of(Code::InputSchemaInvalid, Some("t"), Some("inputSchema"))
        );
        assert_eq!(
            fails(vec![with("t", "inputSchema", json!(null))]),
            of(Code::InputSchemaInvalid, Some("t"), Some("inputSchema"))
        );
    }

    #[test]
    fn rejects_unsupported_keyword_in_input_schema() {
        assert_eq!(
            fails(vec![with(
                "t",
                "inputSchema",
                json!({"type": "object", "$ref": "#"})
            )]),
            of(
                Code::SchemaKeywordUnsupported,
                Some("t"),
                Some("inputSchema")
            )
        );
    }

    #[test]
    fn rejects_input_schema_past_its_bounds() {
        let big = json!({"type": "object", "description": "d".repeat(64 * 1024)});
        assert_eq!(
            fails(vec![with("t", "inputSchema", big)]),
            of(Code::SchemaBoundsExceeded, Some("t"), Some("inputSchema"))
        );
    }

    #[test]
    fn rejects_invalid_output_schema() {
        assert_eq!(
            fails(vec![with("t", "outputSchema", json!({"type": "array"}))]),
            of(Code::OutputSchemaInvalid, Some("t"), Some("outputSchema"))
        );
    }

    #[test]
    fn rejects_unsupported_keyword_in_output_schema() {
        assert_eq!(
            fails(vec![with(
                "t",
                "outputSchema",
                json!({"type": "object", "anyOf": []})
            )]),
            of(
                Code::SchemaKeywordUnsupported,
                Some("t"),
                Some("outputSchema")
            )
        );
    }

    #[test]
    fn rejects_output_schema_past_its_bounds() {
        let mut deep = json!(1);
        for _ in 0..16 {
            deep = json!([deep]);
        }
        assert_eq!(
            fails(vec![with(
                "t",
                "outputSchema",
                json!({"type": "object", "const": deep})
            )]),
            of(Code::SchemaBoundsExceeded, Some("t"), Some("outputSchema"))
        );
    }

    #[test]
    fn admits_output_schema() {
        let c = admit(vec![with("t", "outputSchema", json!({"type": "object"}))]).unwrap();
        assert!(c.tools()[0].output_schema().is_some());
    }

    #[test]
    fn rejects_annotations_that_are_not_an_object() {
        for a in [json!([]), json!(null), json!("readOnly")] {
            assert_eq!(
                fails(vec![with("t", "annotations", a)]),
                of(Code::AnnotationsInvalid, Some("t"), Some("annotations"))
            );
        }
    }

    fn annotations_of_serialized_len(total: usize) -> Value {
        let base = serde_json::to_vec(&json!({"x": ""})).unwrap().len();
        json!({"x": "a".repeat(total - base)})
    }

    #[test]
    fn admits_annotations_of_exactly_64_kib() {
        assert!(admit(vec![with(
            "t",
            "annotations",
            annotations_of_serialized_len(64 * 1024)
        )])
        .is_ok());
    }

    #[test]
    fn rejects_annotations_over_64_kib() {
        assert_eq!(
            fails(vec![with(
                "t",
                "annotations",
                annotations_of_serialized_len(64 * 1024 + 1)
            )]),
            of(Code::SchemaBoundsExceeded, Some("t"), Some("annotations"))
        );
    }

    #[test]
    fn rejects_annotations_past_json_bounds() {
        assert_eq!(
            fails(vec![with("t", "annotations", json!({"bad\u{1}key": true}))]),
            of(Code::SchemaBoundsExceeded, Some("t"), Some("annotations"))
        );
    }

    // ---- first failing item wins ----

    #[test]
    fn first_failing_tool_wins() {
        assert_eq!(
            fails(vec![
                tool("ok"),
                with("a", "title", json!("")),
                tool("bad name")
            ]),
            of(Code::InvalidToolTitle, Some("a"), Some("title"))
        );
    }

    #[test]
    fn within_a_tool_checks_run_in_documented_order() {
        let mut t = json!({"name": "bad name", "extra": 1, "title": ""});
        assert_eq!(fails(vec![t.clone()]).0, Code::InvalidToolName);
        t["name"] = json!("t");
        assert_eq!(fails(vec![t.clone()]).0, Code::ToolDefinitionInvalid);
        t.as_object_mut().unwrap().remove("extra");
        t["description"] = json!(1);
        assert_eq!(fails(vec![t.clone()]).0, Code::InvalidToolTitle);
        t["title"] = json!("T");
        t["outputSchema"] = json!({"$ref": "x"});
        t["annotations"] = json!([]);
        assert_eq!(fails(vec![t.clone()]).0, Code::InvalidToolDescription);
        t["description"] = json!("D");
        assert_eq!(
            fails(vec![t.clone()]),
            of(Code::ToolDefinitionInvalid, Some("t"), Some("inputSchema"))
        );
        t["inputSchema"] = json!({"type": "null"});
        assert_eq!(fails(vec![t.clone()]).0, Code::InputSchemaInvalid);
        t["inputSchema"] = json!({"type": "object"});
        assert_eq!(fails(vec![t.clone()]).0, Code::SchemaKeywordUnsupported);
        t["outputSchema"] = json!({"type": "object"});
        assert_eq!(fails(vec![t.clone()]).0, Code::AnnotationsInvalid);
        t["annotations"] = json!({});
        assert!(admit(vec![t]).is_ok());
    }

    #[test]
    fn duplicate_is_detected_after_the_keys_of_the_duplicate() {
        assert_eq!(
            fails(vec![tool("a"), with("a", "extra", json!(1))]),
            of(Code::ToolDefinitionInvalid, Some("a"), None)
        );
        assert_eq!(
            fails(vec![tool("a"), with("a", "title", json!(""))]),
            of(Code::DuplicateToolName, Some("a"), Some("name"))
        );
    }

    // ---- sorting, lookup and digests ----

    #[test]
    fn tools_are_sorted_by_name() {
        let c = admit(vec![tool("b"), tool("C"), tool("a"), tool("_")]).unwrap();
        let names: Vec<&str> = c.tools().iter().map(Tool::name).collect();
        assert_eq!(names, ["C", "_", "a", "b"]);
    }

    #[test]
    fn get_finds_by_exact_name() {
        let c = admit(vec![tool("b"), tool("a"), tool("c")]).unwrap();
        assert_eq!(c.get("b").map(Tool::name), Some("b"));
        assert!(c.get("B").is_none());
        assert!(c.get("").is_none());
    }

    #[test]
    fn digest_does_not_depend_on_listing_order() {
        let one = admit(vec![tool("a"), with("b", "title", json!("B"))]).unwrap();
        let two = admit(vec![with("b", "title", json!("B")), tool("a")]).unwrap();
        assert_eq!(one.digest(), two.digest());
    }

    #[test]
    fn changed_description_changes_digest_and_observation() {
        let one = admit(vec![tool("a"), with("b", "description", json!("x"))]).unwrap();
        let two = admit(vec![tool("a"), with("b", "description", json!("y"))]).unwrap();
        assert_ne!(one.digest(), two.digest());
        assert_ne!(
            one.get("b").unwrap().observation(),
            two.get("b").unwrap().observation()
        );
        assert_eq!(
            one.get("a").unwrap().observation(),
            two.get("a").unwrap().observation()
        );
    }

    fn sha(tag: &[u8], json: &[u8]) -> String {
        let digest = Sha256::new()
            .chain_update(tag)
            .chain_update(json)
            .finalize();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }

    #[test]
    fn observation_is_tagged_hash_of_canonical_definition() {
        let c = admit(vec![with("t", "title", json!("T"))]).unwrap();
        let canonical = br#"{"inputSchema":{"type":"object"},"name":"t","title":"T"}"#;
        assert_eq!(
            c.tools()[0].observation(),
            sha(b"webcodex-plugin-tool-v1\0", canonical)
        );
    }

    #[test]
    fn digest_is_tagged_hash_of_sorted_definition_array() {
        let c = admit(vec![tool("b"), tool("a")]).unwrap();
        let canonical = br#"[{"inputSchema":{"type":"object"},"name":"a"},{"inputSchema":{"type":"object"},"name":"b"}]"#;
        assert_eq!(c.digest(), sha(b"webcodex-plugin-catalog-v1\0", canonical));
    }
}
