//! The canonical success outputs of `plugin_tool` (docs/PROTOCOL.md §8.4, outputs).
//!
//! Built only from provider ids, display names, tool definitions, stable codes and safe
//! messages: never from launch specs, instance ids or stderr.

use serde_json::{json, Map, Value};

use crate::catalog::Tool;
use crate::host::{CheckReport, ProjectCatalog, ProviderEntry, ReloadReport};
use crate::provider::Provider;

/// Longest check `detail`, in bytes (docs/PROTOCOL.md §3, bounds).
pub const MAX_DETAIL_BYTES: usize = 512;

/// `list` without a runner: `{"runners":[{"runner":…}]}`.
pub(crate) fn runners<'a>(names: impl IntoIterator<Item = &'a str>) -> Value {
    let runners: Vec<Value> = names.into_iter().map(|n| json!({"runner": n})).collect();
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

/// `list(runner, plugin)`: the summary plus `toolCount` and `tools:[{name,title?}]`. A failed
/// or retired provider lists no tools, since none of them can be called.
pub(crate) fn provider_detail(entry: &ProviderEntry) -> Value {
    let mut map = provider_summary(entry);
    let tools: Vec<Value> = match entry.provider() {
        Some(p) if !p.is_retired() => p.catalog().tools().iter().map(tool_summary).collect(),
        _ => Vec::new(),
    };
    map.insert("toolCount".into(), tools.len().into());
    map.insert("tools".into(), tools.into());
    Value::Object(map)
}

fn tool_summary(tool: &Tool) -> Value {
    name_title(tool.name(), tool.title())
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

/// `check`: `{"runner","plugin","ready","phase","toolCount","tools"}` plus, when not ready, `code`,
/// `detail` and `diagnostic` (when present). Not ready means no tools (docs/PROTOCOL.md §7.2,
/// check).
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
            map.insert("total_count".into(), catalog.total_count.into());
            map.insert(
                "catalog_revision".into(),
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
        assert_eq!(runners(["local"]), json!({"runners":[{"runner":"local"}]}));
    }

    #[test]
    fn name_title_omits_missing_title() {
        assert_eq!(name_title("a", None), json!({"name":"a"}));
        assert_eq!(name_title("a", Some("A")), json!({"name":"a","title":"A"}));
    }
}
