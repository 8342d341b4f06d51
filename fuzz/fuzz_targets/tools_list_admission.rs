//! tools/list admission: tool definitions and Schema Profile v1.
//!
//! The input is a tools/list result (JSON). An admitted catalog must be stable: admitting its
//! own frozen definitions again, in reverse order, gives the same tools and the same digest. A
//! rejection's diagnostic uses only the finite vocabulary (`field` one of six labels).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use webcodex_plugin_host::admit_tools_list;

const FIELDS: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

fuzz_target!(|data: &[u8]| {
    let Ok(result) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    match admit_tools_list(&result) {
        Ok(catalog) => {
            let mut definitions: Vec<Value> = catalog
                .tools()
                .iter()
                .map(|t| t.definition().clone())
                .collect();
            definitions.reverse();
            let again = admit_tools_list(&json!({ "tools": definitions }))
                .expect("a frozen catalog's own definitions are admissible");
            assert_eq!(
                catalog.digest(),
                again.digest(),
                "digest is order-independent"
            );
            assert_eq!(catalog.len(), again.len());
            for tool in catalog.tools() {
                assert!(catalog.get(tool.name()).is_some());
                // The admitted input schema matches nothing that is not an object.
                assert!(tool.input_schema().check(&json!(null)).is_err());
            }
        }
        Err(diagnostic) => {
            let reported = diagnostic.to_json();
            let text = reported.to_string();
            assert!(text.len() < 512, "diagnostics stay small");
            let code = reported["code"].as_str().expect("code is a string");
            if let Some(field) = reported.get("field") {
                let field = field.as_str().expect("field is a string");
                // Only the six labels of docs/PROTOCOL.md (check diagnostics), and none for a
                // malformed list or too many tools.
                assert!(
                    FIELDS.contains(&field),
                    "unexpected diagnostic field {field:?}"
                );
                assert!(
                    !matches!(code, "tools_list_result_malformed" | "tool_count_exceeded"),
                    "{code} carries field {field:?}"
                );
            }
        }
    }
});
