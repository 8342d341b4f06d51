//! The canonical success outputs of `plugin_tool` (docs/PROTOCOL.md §8.4, outputs), and
//! [`ToolOutput`], the result of one request.
//!
//! Built only from provider ids, display names, tool definitions, stable codes and safe
//! messages: never from launch specs, instance ids or stderr.

use serde_json::{json, Map, Value};

use super::failure::failure_output;
use crate::catalog::Tool;
use crate::error::{Error, ErrorCode};
use crate::host::{CheckReport, ProjectCatalog, ProviderEntry, ReloadReport};
use crate::provider::Provider;

/// Longest check `detail`, in bytes (docs/PROTOCOL.md §3, bounds).
pub const MAX_DETAIL_BYTES: usize = 512;

/// The result of one `plugin_tool` request.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// True when the action succeeded.
    pub success: bool,
    /// The canonical success object, or the failure object
    /// `{"error":{"code","message"},"dispatch","recovery"?}`.
    pub output: Value,
    /// The failure's code, typed (`None` on success).
    code: Option<ErrorCode>,
}

impl ToolOutput {
    pub(crate) fn ok(output: Value) -> ToolOutput {
        ToolOutput {
            success: true,
            output,
            code: None,
        }
    }

    /// The failure output for `error`.
    pub fn failure(error: &Error) -> ToolOutput {
        ToolOutput {
            success: false,
            output: failure_output(error),
            code: Some(error.code()),
        }
    }

    /// A failure object relayed from a remote runner, already rebuilt (see `relay`).
    pub(crate) fn relayed_failure(code: ErrorCode, output: Value) -> ToolOutput {
        ToolOutput {
            success: false,
            output,
            code: Some(code),
        }
    }

    /// An output received from another process (a `serve` endpoint): the code is read from
    /// the failure object, and is `None` when it is not one of this runtime's codes.
    #[cfg(any(feature = "http-client", feature = "http-server"))]
    pub(crate) fn received(success: bool, output: Value) -> ToolOutput {
        let code = match success {
            true => None,
            false => output["error"]["code"].as_str().and_then(ErrorCode::parse),
        };
        ToolOutput {
            success,
            output,
            code,
        }
    }

    /// The failure's stable code; `None` on success. Transports map it (for example to an
    /// HTTP status) without reading the output object.
    pub fn code(&self) -> Option<ErrorCode> {
        self.code
    }
}

/// `list` without a runner: `{"runners":[{"runner":…,"name"?:…}]}` (a local runner has no
/// display name; a remote one has the name from the runners file).
pub(crate) fn runners(runners: Vec<(String, Option<String>)>) -> Value {
    let runners: Vec<Value> = runners
        .into_iter()
        .map(|(id, name)| match name {
            Some(name) => json!({"runner": id, "name": name}),
            None => json!({"runner": id}),
        })
        .collect();
    json!({ "runners": runners })
}

/// One provider as listed: `{"plugin","name","status","errorCode"?}`.
pub(crate) fn provider_summary(entry: &ProviderEntry) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("plugin".into(), entry.id.clone().into());
    map.insert("name".into(), entry.name.clone().into());
    match entry.error_code() {
        None => {
            map.insert("status".into(), "ready".into());
        }
        Some(code) => {
            map.insert("status".into(), "failed".into());
            map.insert("errorCode".into(), code.as_str().into());
        }
    }
    map
}

/// `list(runner)`: `{"runner","plugins":[summary…]}`.
pub(crate) fn providers(runner: &str, entries: &[ProviderEntry]) -> Value {
    json!({"runner": runner, "plugins": summaries(entries)})
}

fn summaries(entries: &[ProviderEntry]) -> Vec<Value> {
    entries
        .iter()
        .map(|e| Value::Object(provider_summary(e)))
        .collect()
}

/// `list(runner, plugin)`: the summary plus `toolCount` and `tools:[{name,title?}]`: names and
/// titles only (a description belongs to `describe` and the project catalog). A failed or
/// retired provider lists no tools, since none of them can be called.
pub(crate) fn provider_detail(entry: &ProviderEntry) -> Value {
    let mut map = provider_summary(entry);
    let tools: Vec<Value> = match entry.provider() {
        Some(p) if !p.is_retired() => p
            .catalog()
            .tools()
            .iter()
            .map(|t| name_title(t.name(), t.title()))
            .collect(),
        _ => Vec::new(),
    };
    map.insert("toolCount".into(), tools.len().into());
    map.insert("tools".into(), tools.into());
    Value::Object(map)
}

fn name_title(name: &str, title: Option<&str>) -> Value {
    let mut map = Map::new();
    map.insert("name".into(), name.into());
    if let Some(title) = title {
        map.insert("title".into(), title.into());
    }
    Value::Object(map)
}

/// `describe`: `{"runner","plugin","pluginName","tool":<definition>,"binding"}`.
pub(crate) fn describe(runner: &str, provider: &Provider, tool: &Tool, binding: &str) -> Value {
    json!({
        "runner": runner,
        "plugin": provider.id(),
        "pluginName": provider.name(),
        "tool": tool.definition(),
        "binding": binding,
    })
}

/// `check`: `{"runner","plugin","ready","phase","toolCount","tools"}` plus, when ready,
/// `catalogDigest`, and when not ready `code`, `detail` and `diagnostic` (when present). Not
/// ready means no tools.
pub(crate) fn check(runner: &str, report: &CheckReport) -> Value {
    let tools: Vec<Value> = if report.ready {
        report
            .tools
            .iter()
            .map(|(name, title)| name_title(name, title.as_deref()))
            .collect()
    } else {
        Vec::new()
    };
    let mut output = json!({
        "runner": runner,
        "plugin": report.plugin,
        "ready": report.ready,
        "phase": report.phase.as_str(),
        "toolCount": tools.len(),
        "tools": tools,
    });
    if let (true, Some(digest)) = (report.ready, &report.catalog_digest) {
        output["catalogDigest"] = digest.as_str().into();
    }
    if !report.ready {
        let (code, detail) = match &report.error {
            Some(e) => (e.code().as_str(), detail(e.message())),
            None => (
                crate::ErrorCode::ProviderUnavailable.as_str(),
                "the candidate was not admitted".to_string(),
            ),
        };
        output["code"] = code.into();
        output["detail"] = detail.into();
        if let Some(diagnostic) = report.diagnostic() {
            output["diagnostic"] = diagnostic.to_json();
        }
    }
    output
}

/// `reload`: `{"runner","plugins":[summary…],"failures":[{"plugin","code"}]}`.
pub(crate) fn reload(runner: &str, report: &ReloadReport) -> Value {
    let failures: Vec<Value> = report
        .failures
        .iter()
        .map(|(plugin, e)| json!({"plugin": plugin, "code": e.code().as_str()}))
        .collect();
    json!({
        "runner": runner,
        "plugins": summaries(report.providers.entries()),
        "failures": failures,
    })
}

/// `catalog`: the serialized project catalog plus `runner`.
pub(crate) fn catalog(runner: &str, catalog: &ProjectCatalog) -> Value {
    let mut map = match serde_json::to_value(catalog) {
        Ok(Value::Object(map)) => map,
        _ => {
            let mut map = Map::new();
            map.insert("tools".into(), Value::Array(Vec::new()));
            map.insert("totalCount".into(), catalog.total_count.into());
            map.insert(
                "catalogRevision".into(),
                catalog.catalog_revision.clone().into(),
            );
            map
        }
    };
    map.insert("runner".into(), runner.into());
    Value::Object(map)
}

/// A check detail: control characters replaced by spaces, cut to [`MAX_DETAIL_BYTES`] on a
/// char boundary.
pub(crate) fn detail(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MAX_DETAIL_BYTES));
    for c in message.chars() {
        let c = if c.is_control() { ' ' } else { c };
        if out.len() + c.len_utf8() > MAX_DETAIL_BYTES {
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detail_replaces_control_characters() {
        assert_eq!(detail("a\nb\tc\u{7f}d\u{85}e"), "a b c d e");
    }

    #[test]
    fn detail_is_cut_on_a_char_boundary() {
        let long = "é".repeat(400); // 800 bytes
        let d = detail(&long);
        assert!(d.len() <= MAX_DETAIL_BYTES);
        assert_eq!(d.len(), 512);
        let odd = format!("x{}", "é".repeat(400));
        let d = detail(&odd);
        assert_eq!(d.len(), 511);
        assert!(d.ends_with('é'));
        assert_eq!(detail("short"), "short");
    }

    #[test]
    fn runners_shape() {
        assert_eq!(
            runners(vec![("local".into(), None), ("e".into(), Some("E".into()))]),
            json!({"runners":[{"runner":"local"},{"runner":"e","name":"E"}]})
        );
    }

    #[test]
    fn name_title_omits_missing_title() {
        assert_eq!(name_title("a", None), json!({"name":"a"}));
        assert_eq!(name_title("a", Some("A")), json!({"name":"a","title":"A"}));
    }
}
