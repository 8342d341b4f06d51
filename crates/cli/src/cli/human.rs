//! Short, bounded human output, free of control characters. `--json` prints the canonical
//! object instead.

use std::fmt::Write;

use serde_json::Value;
use webcodex_plugin_host::{
    CatalogOutcome, CheckOutcome, Outcome, ProviderDetail, ProviderStatus, ProviderSummary,
    ReloadOutcome, ToolFailure, ToolSummary,
};
use webcodex_plugin_host::{Tool, ToolResult};

/// Longest single text printed; longer texts are cut with a note pointing at `--json`.
const MAX_TEXT_BYTES: usize = 16 * 1024;

/// `text` with control characters replaced (newlines kept when `multiline`) and cut to the bound.
pub(super) fn clean(text: &str, multiline: bool) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_TEXT_BYTES));
    for c in text.chars() {
        if out.len() >= MAX_TEXT_BYTES {
            out.push_str(" … (cut; use --json for the whole output)");
            break;
        }
        match c {
            '\n' if multiline => out.push('\n'),
            '\t' => out.push(' '),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// The human text of a typed outcome (a received output that did not validate: its JSON).
pub(super) fn render(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Runners(runners) if runners.is_empty() => {
            "no runners (a front lists the runners connected now)".into()
        }
        Outcome::Runners(runners) => runners
            .iter()
            .map(|r| match &r.name {
                Some(name) if *name != r.runner => {
                    format!("{:<24} {}", clean(&r.runner, false), clean(name, false))
                }
                _ => clean(&r.runner, false),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Outcome::Providers(list) => providers(&list.plugins),
        Outcome::Provider(detail) => provider_detail(detail),
        Outcome::Described(described) => describe(&described.plugin, &described.tool),
        Outcome::Called(result) => call(result),
        Outcome::Checked(report) => check(report),
        Outcome::Reloaded(reload) => self::reload(reload),
        Outcome::Catalog(c) => catalog(c),
        Outcome::Failed(f) => failure(f),
        other => clean(&other.to_json().to_string(), false),
    }
}

/// A failure: `error: CODE: message (dispatch; recovery)`.
pub(super) fn failure(failure: &ToolFailure) -> String {
    let mut line = format!(
        "error: {}: {} (dispatch: {}",
        failure.code.as_str(),
        clean(&failure.message, false),
        failure.dispatch.as_str()
    );
    if let Some(recovery) = failure.recovery {
        let _ = write!(line, "; recovery: {}", recovery.as_str());
    }
    line.push(')');
    line
}

fn provider_line(plugin: &ProviderSummary) -> String {
    let status = match plugin.status {
        ProviderStatus::Ready => "ready",
        ProviderStatus::Failed(_) => "failed",
    };
    let mut line = format!(
        "{:<24} {:<7} {}",
        clean(&plugin.plugin, false),
        status,
        clean(&plugin.name, false)
    );
    if let Some(code) = plugin.error_code() {
        let _ = write!(line, "  ({})", code.as_str());
    }
    line
}

/// `list(runner)`.
pub(super) fn providers(plugins: &[ProviderSummary]) -> String {
    if plugins.is_empty() {
        return "no providers configured".into();
    }
    plugins
        .iter()
        .map(provider_line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `1 tool`, `2 tools`: a count and its noun, singular for exactly one.
pub(super) fn count(n: usize, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

fn tool_lines(tools: &[ToolSummary], out: &mut String) {
    for tool in tools {
        let _ = write!(out, "\n  {}", clean(&tool.name, false));
        if let Some(title) = &tool.title {
            let _ = write!(out, " — {}", clean(title, false));
        }
    }
}

/// `list(runner, plugin)`.
pub(super) fn provider_detail(detail: &ProviderDetail) -> String {
    let mut out = provider_line(&detail.provider);
    let _ = write!(out, "\n{}:", count(detail.tools.len(), "tool"));
    tool_lines(&detail.tools, &mut out);
    out
}

/// The four interpreted hints, as `describe` shows them; a destructive tool gets a warning
/// line of its own, and so does a tool without the hints that would say it is safe (the
/// inspector's rule, as MCP clients read hints: neither `readOnlyHint: true` nor
/// `destructiveHint: false` means it may be destructive).
fn annotation_lines(annotations: &Value, out: &mut String) {
    let hint = |key: &str| annotations.get(key).and_then(Value::as_bool);
    if hint("readOnlyHint") != Some(true) && hint("destructiveHint").is_none() {
        out.push_str(NO_HINTS_WARNING);
    }
    let Some(map) = annotations.as_object() else {
        return;
    };
    const HINTS: [&str; 4] = [
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    ];
    let hints: Vec<String> = HINTS
        .iter()
        .filter_map(|key| {
            let value = map.get(*key).and_then(Value::as_bool)?;
            Some(format!("{key}={value}"))
        })
        .collect();
    let others = map.keys().filter(|k| !HINTS.contains(&k.as_str())).count();
    if hints.is_empty() && others == 0 {
        return;
    }
    let _ = write!(out, "\nannotations: ");
    if hints.is_empty() {
        out.push_str("no hints");
    } else {
        out.push_str(&hints.join(", "));
    }
    if others > 0 {
        let _ = write!(out, " (+{others} other keys; see --json)");
    }
    if map.get("destructiveHint") == Some(&Value::Bool(true)) {
        out.push_str("\nWARNING: DESTRUCTIVE: this tool may delete or overwrite data");
    } else if map.get("readOnlyHint") == Some(&Value::Bool(true)) {
        out.push_str("\nread-only: the tool says it changes nothing");
    }
}

/// The warning line of a tool that does not say it is read-only or non-destructive.
const NO_HINTS_WARNING: &str = "\nwarning: no hints: the tool does not say it is read-only \
     (readOnlyHint) or non-destructive (destructiveHint), so it may change or delete data";

/// `describe`: the admitted tool definition of provider `plugin`.
pub(super) fn describe(plugin: &str, tool: &Tool) -> String {
    let mut out = format!("{} / {}", clean(plugin, false), clean(tool.name(), false));
    if let Some(title) = tool.title() {
        let _ = write!(out, " — {}", clean(title, false));
    }
    if let Some(description) = tool.description() {
        let _ = write!(out, "\n{}", clean(description, true));
    }
    let definition = tool.definition();
    let _ = write!(
        out,
        "\ninputSchema: {}",
        clean(&definition["inputSchema"].to_string(), false)
    );
    if let Some(schema) = definition.get("outputSchema") {
        let _ = write!(out, "\noutputSchema: {}", clean(&schema.to_string(), false));
    }
    annotation_lines(tool.annotations().unwrap_or(&Value::Null), &mut out);
    out
}

/// `call`: the text content, then structuredContent, then the tool's own error flag.
pub(super) fn call(result: &ToolResult) -> String {
    let mut parts: Vec<String> = result.texts().iter().map(|t| clean(t, true)).collect();
    if let Some(structured) = result.structured_content() {
        let text = serde_json::to_string(structured).unwrap_or_default();
        parts.push(format!("structuredContent: {}", clean(&text, false)));
    }
    if result.is_error() {
        parts.push("(the tool reported an error: isError = true)".into());
    }
    parts.join("\n")
}

/// `check`.
pub(super) fn check(report: &CheckOutcome) -> String {
    let plugin = clean(&report.plugin, false);
    if report.ready {
        let mut out = format!("{plugin}: ready, {}", count(report.tools.len(), "tool"));
        if let Some(digest) = &report.catalog_digest {
            let _ = write!(out, " (catalog {})", clean(digest, false));
        }
        out.push(':');
        tool_lines(&report.tools, &mut out);
        return out;
    }
    let mut out = format!(
        "{plugin}: not ready (phase {}): {}\n{}",
        report.phase.as_str(),
        report.code.map_or("", |c| c.as_str()),
        clean(report.detail.as_deref().unwrap_or(""), false)
    );
    if let Some(diagnostic) = &report.diagnostic {
        let _ = write!(
            out,
            "\ndiagnostic: {}",
            clean(&diagnostic.to_json().to_string(), false)
        );
    }
    out
}

/// `reload`.
pub(super) fn reload(reload: &ReloadOutcome) -> String {
    if reload.failures.is_empty() {
        return format!("reloaded:\n{}", providers(&reload.plugins));
    }
    let mut out = String::from("reload kept the previous providers; these candidates failed:");
    for failure in &reload.failures {
        let _ = write!(
            out,
            "\n  {}: {}",
            clean(&failure.plugin, false),
            failure.code.as_str()
        );
    }
    out
}

/// `catalog`.
pub(super) fn catalog(c: &CatalogOutcome) -> String {
    let mut out = format!(
        "{} (revision {})",
        count(c.catalog.total_count, "tool"),
        clean(&c.catalog.catalog_revision, false)
    );
    for tool in &c.catalog.tools {
        let _ = write!(
            out,
            "\n  {} / {}",
            clean(&tool.plugin, false),
            clean(&tool.tool, false)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use webcodex_plugin_host::{ActionKind, ToolOutput};

    /// The typed outcome of a canonical output object of an action of kind `kind`.
    fn typed(kind: ActionKind, success: bool, json: Value) -> Outcome {
        ToolOutput::received(success, json)
            .typed(kind)
            .expect("a canonical output")
            .into_owned()
    }

    fn describe_json(json: Value) -> String {
        match typed(ActionKind::Describe, true, json) {
            Outcome::Described(d) => describe(&d.plugin, &d.tool),
            other => panic!("{other:?}"),
        }
    }

    fn described(tool: Value) -> Value {
        json!({"runner":"local","plugin":"p","pluginName":"P","tool":tool,"binding":"b"})
    }

    #[test]
    fn control_characters_are_replaced() {
        assert_eq!(clean("a\u{1b}[31mb\tc", false), "a?[31mb c");
        assert_eq!(clean("a\nb", false), "a?b");
        assert_eq!(clean("a\nb", true), "a\nb");
    }

    #[test]
    fn long_text_is_cut() {
        let text = "x".repeat(100_000);
        assert!(clean(&text, false).len() < MAX_TEXT_BYTES + 100);
    }

    #[test]
    fn counts_are_singular_for_one() {
        assert_eq!(count(1, "tool"), "1 tool");
        assert_eq!(count(0, "tool"), "0 tools");
        assert_eq!(count(2, "tool"), "2 tools");
    }

    #[test]
    fn list_shows_names_and_titles() {
        let out = render(&typed(
            ActionKind::List,
            true,
            json!({"plugin":"p","status":"ready","name":"P","toolCount":2,
            "tools":[{"name":"a","title":"A"},{"name":"b"}]}),
        ));
        assert!(out.contains("\n  a — A"), "{out}");
        assert!(out.ends_with("\n  b"), "{out}");
        assert!(out.contains("2 tools:"), "{out}");
    }

    #[test]
    fn describe_marks_a_destructive_tool() {
        let out = describe_json(described(
            json!({"name":"rm","inputSchema":{"type":"object"},
            "annotations":{"destructiveHint":true,"idempotentHint":false}}),
        ));
        assert!(
            out.contains("annotations: destructiveHint=true, idempotentHint=false"),
            "{out}"
        );
        assert!(out.contains("WARNING: DESTRUCTIVE"), "{out}");
        let out = describe_json(described(
            json!({"name":"ls","inputSchema":{"type":"object"},
            "annotations":{"readOnlyHint":true,"x":1}}),
        ));
        assert!(
            out.contains("annotations: readOnlyHint=true (+1 other keys"),
            "{out}"
        );
        assert!(!out.contains("DESTRUCTIVE"), "{out}");
        assert!(!out.contains("no hints"), "{out}");
    }

    #[test]
    fn describe_warns_about_a_tool_without_hints() {
        let bare = |annotations: Option<Value>| {
            let mut tool = json!({"name":"t","inputSchema":{"type":"object"}});
            if let Some(a) = annotations {
                tool["annotations"] = a;
            }
            describe_json(described(tool))
        };
        for warned in [
            None,
            Some(json!({})),
            Some(json!({"idempotentHint":true})),
            Some(json!({"readOnlyHint":false})),
        ] {
            let out = bare(warned.clone());
            assert!(out.contains("\nwarning: no hints"), "{warned:?}: {out}");
        }
        for quiet in [
            json!({"readOnlyHint":true}),
            json!({"destructiveHint":false}),
            json!({"destructiveHint":true}),
        ] {
            let out = bare(Some(quiet.clone()));
            assert!(!out.contains("no hints"), "{quiet}: {out}");
        }
    }

    #[test]
    fn failure_names_code_dispatch_and_recovery() {
        let out = json!({"error":{"code":"plugin_timeout","message":"late"},"dispatch":"outcome_unknown","recovery":"do_not_retry"});
        assert_eq!(
            render(&typed(ActionKind::Call, false, out)),
            "error: plugin_timeout: late (dispatch: outcome_unknown; recovery: do_not_retry)"
        );
    }
}
