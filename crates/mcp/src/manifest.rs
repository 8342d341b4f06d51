//! The static ToolSpec of `plugin_tool`: what an MCP client's `tools/list` shows a model.
//!
//! It depends on no configuration and no running plugin. The input schema is one flat object:
//! an `action` enum plus every field of every action, with `additionalProperties: false`; the
//! strict per-action check (which field goes with which action) stays in the gateway's parser,
//! whose field table this schema is built from. The annotations are the worst case over all
//! actions, since `call` may run any plugin tool.

use serde_json::{json, Map, Value};

use webcodex_plugin_host::TOOL_NAME;
use webcodex_plugin_host::{ActionKind, MAX_PROJECT_BYTES, MAX_RECORDING_SESSION_ID_BYTES};

/// The tool's display title.
pub const TITLE: &str = "Native tool plugins";

/// What a model reads about the tool: the list → describe → call flow in a few sentences.
pub const DESCRIPTION: &str = "Use the tools of locally installed plugins. \
Step 1: {\"action\":\"list\"} shows the runners; {\"action\":\"list\",\"runner\":R} shows its \
plugins; adding \"plugin\":P shows that plugin's tools. \
Step 2: {\"action\":\"describe\",\"runner\":R,\"plugin\":P,\"tool\":T} returns the tool's full \
definition (its inputSchema) and a fresh \"binding\". \
Step 3: {\"action\":\"call\",\"binding\":B,\"arguments\":{...}} runs exactly that tool with \
arguments that match its inputSchema. \
To work on a project, add \"project\":ROOT (the absolute path of the project root) to describe: \
the binding is then bound to that root, and a call runs only while the root is unchanged. \
A failure returns {\"error\":{\"code\",\"message\"},\"dispatch\",\"recovery\"}: follow \
\"recovery\" (for example describe again), and never repeat a call whose dispatch is \
\"outcome_unknown\". \"check\" and \"reload\" are for administrators.";

/// The field descriptions of the flat input schema, in schema order.
const FIELDS: &[(&str, &str)] = &[
    (
        "runner",
        "The runner to use (\"local\" for this host); required by describe, check, reload, catalog.",
    ),
    ("plugin", "A plugin id as listed by list(runner)."),
    ("tool", "A tool name as listed by list(runner, plugin); for describe."),
    (
        "binding",
        "The binding returned by describe; for call. Describe again when a call says describe_required.",
    ),
    (
        "arguments",
        "The tool's arguments, matching the inputSchema that describe returned; for call.",
    ),
    (
        "recording_session_id",
        "Optional session id passed to the host's recording hook; for call, check, reload.",
    ),
    (
        "project",
        "An absolute project root: for catalog; optional for describe, which then binds the tool to \
         that project (its calls run only while the root is unchanged).",
    ),
    (
        "project_target",
        "Optional for call: the projectTarget a describe with a project returned; the call is \
         refused unless its binding is bound to that target.",
    ),
];

/// The ToolSpec of `plugin_tool` (`name`, `title`, `description`, `inputSchema`, `annotations`).
pub fn tool_spec() -> Value {
    let actions: Vec<&str> = ActionKind::ALL.iter().map(|a| a.as_str()).collect();
    let mut properties = Map::new();
    properties.insert(
        "action".into(),
        json!({
            "type": "string",
            "enum": actions,
            "description": "What to do: list, describe, call (the usual flow), check, reload, catalog.",
        }),
    );
    for (name, description) in FIELDS {
        let mut field = match *name {
            "arguments" => json!({"type": "object"}),
            "recording_session_id" => {
                json!({"type": "string", "maxLength": MAX_RECORDING_SESSION_ID_BYTES})
            }
            "project" => json!({"type": "string", "maxLength": MAX_PROJECT_BYTES}),
            "project_target" => json!({"type": "string", "minLength": 41, "maxLength": 41}),
            _ => json!({"type": "string"}),
        };
        field["description"] = (*description).into();
        properties.insert((*name).to_string(), field);
    }
    json!({
        "name": TOOL_NAME,
        "title": TITLE,
        "description": DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": properties,
            "required": ["action"],
            "additionalProperties": false,
        },
        "annotations": {
            "title": TITLE,
            "readOnlyHint": false,
            "destructiveHint": true,
            "idempotentHint": false,
            "openWorldHint": true,
        },
    })
}

/// The canonical serialization of [`tool_spec`]: compact JSON, object keys sorted.
pub fn canonical_json() -> String {
    tool_spec().to_string()
}

/// A human-readable rendering of the ToolSpec (for `manifest` without `--json`).
pub fn human() -> String {
    let mut out = format!("{TOOL_NAME} — {TITLE}\n\n{DESCRIPTION}\n\nactions and their fields:\n");
    for action in ActionKind::ALL {
        out.push_str(&format!(
            "  {:<9} {} (scope {})\n",
            action.as_str(),
            action.fields().join(", "),
            action.scope().as_str()
        ));
    }
    out.push_str(
        "  (describe with a project also needs scope project:read; a call of a binding bound \
         to a project, project:write)\n",
    );
    out.push_str(
        "\nannotations: readOnlyHint false, destructiveHint true, idempotentHint false, \
         openWorldHint true\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_field_is_in_the_flat_schema_and_nothing_else() {
        let spec = tool_spec();
        let properties = spec["inputSchema"]["properties"].as_object().unwrap();
        let mut wanted: Vec<&str> = ActionKind::ALL
            .iter()
            .flat_map(|a| a.fields().iter().copied())
            .chain(["action"])
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut got: Vec<&str> = properties.keys().map(String::as_str).collect();
        got.sort_unstable();
        assert_eq!(got, wanted);
        for (name, field) in properties {
            assert!(field["description"].is_string(), "{name}");
        }
        assert_eq!(spec["inputSchema"]["additionalProperties"], false);
        assert_eq!(
            properties["action"]["enum"],
            json!(["list", "describe", "call", "check", "reload", "catalog"])
        );
        // describe's optional project and call's optional project target.
        assert_eq!(properties["project"]["type"], "string");
        assert!(properties["project"]["description"]
            .as_str()
            .unwrap()
            .contains("describe"));
        assert_eq!(properties["project_target"]["maxLength"], 41);
        assert_eq!(spec["inputSchema"]["required"], json!(["action"]));
    }

    #[test]
    fn worst_case_annotations() {
        let a = &tool_spec()["annotations"];
        assert_eq!(a["readOnlyHint"], false);
        assert_eq!(a["destructiveHint"], true);
        assert_eq!(a["idempotentHint"], false);
        assert_eq!(a["openWorldHint"], true);
    }

    #[test]
    fn the_schema_is_admitted_by_the_hosts_own_schema_profile() {
        let admitted = webcodex_plugin_host::admit_tools_list(&json!({"tools": [tool_spec()]}));
        assert!(admitted.is_ok(), "{admitted:?}");
    }

    #[test]
    fn canonical_json_is_stable() {
        assert_eq!(canonical_json(), canonical_json());
        let back: Value = serde_json::from_str(&canonical_json()).unwrap();
        assert_eq!(back, tool_spec());
    }
}
