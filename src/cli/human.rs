//! Short, bounded human output, free of control characters. `--json` prints the canonical
//! object instead.

use std::fmt::Write;

use serde_json::Value;

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

fn field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A failure object: `error: CODE: message (dispatch; recovery)`.
pub(super) fn failure(output: &Value) -> String {
    let error = &output["error"];
    let mut line = format!(
        "error: {}: {} (dispatch: {}",
        clean(field(error, "code"), false),
        clean(field(error, "message"), false),
        clean(field(output, "dispatch"), false)
    );
    if let Some(recovery) = output.get("recovery").and_then(Value::as_str) {
        let _ = write!(line, "; recovery: {}", clean(recovery, false));
    }
    line.push(')');
    line
}

fn provider_line(plugin: &Value) -> String {
    let mut line = format!(
        "{:<24} {:<7} {}",
        clean(field(plugin, "plugin"), false),
        clean(field(plugin, "status"), false),
        clean(field(plugin, "name"), false)
    );
    if let Some(code) = plugin.get("errorCode").and_then(Value::as_str) {
        let _ = write!(line, "  ({})", clean(code, false));
    }
    line
}

/// `list(runner)`.
pub(super) fn providers(output: &Value) -> String {
    let plugins = output["plugins"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
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
pub(super) fn count(n: &Value, noun: &str) -> String {
    match n.as_u64() {
        Some(1) => format!("1 {noun}"),
        Some(n) => format!("{n} {noun}s"),
        None => format!("? {noun}s"),
    }
}

fn tool_lines(tools: &Value, out: &mut String) {
    for tool in tools.as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let _ = write!(out, "\n  {}", clean(field(tool, "name"), false));
        if let Some(title) = tool.get("title").and_then(Value::as_str) {
            let _ = write!(out, " — {}", clean(title, false));
        }
    }
}

/// `list(runner, plugin)`.
pub(super) fn provider_detail(output: &Value) -> String {
    let mut out = provider_line(output);
    let _ = write!(out, "\n{}:", count(&output["toolCount"], "tool"));
    tool_lines(&output["tools"], &mut out);
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

/// `describe`.
pub(super) fn describe(output: &Value) -> String {
    let tool = &output["tool"];
    let mut out = format!(
        "{} / {}",
        clean(field(output, "plugin"), false),
        clean(field(tool, "name"), false)
    );
    if let Some(title) = tool.get("title").and_then(Value::as_str) {
        let _ = write!(out, " — {}", clean(title, false));
    }
    if let Some(description) = tool.get("description").and_then(Value::as_str) {
        let _ = write!(out, "\n{}", clean(description, true));
    }
    let _ = write!(
        out,
        "\ninputSchema: {}",
        clean(&tool["inputSchema"].to_string(), false)
    );
    if let Some(schema) = tool.get("outputSchema") {
        let _ = write!(out, "\noutputSchema: {}", clean(&schema.to_string(), false));
    }
    annotation_lines(&tool["annotations"], &mut out);
    out
}

/// `call`: the text content, then structuredContent, then the tool's own error flag.
pub(super) fn call(output: &Value) -> String {
    let mut parts = Vec::new();
    for item in output["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        parts.push(clean(field(item, "text"), true));
    }
    if let Some(structured) = output.get("structuredContent") {
        parts.push(format!(
            "structuredContent: {}",
            clean(&structured.to_string(), false)
        ));
    }
    if output["isError"] == Value::Bool(true) {
        parts.push("(the tool reported an error: isError = true)".into());
    }
    parts.join("\n")
}

/// `check`.
pub(super) fn check(output: &Value) -> String {
    let plugin = clean(field(output, "plugin"), false);
    if output["ready"] == Value::Bool(true) {
        let mut out = format!("{plugin}: ready, {}", count(&output["toolCount"], "tool"));
        if let Some(digest) = output.get("catalogDigest").and_then(Value::as_str) {
            let _ = write!(out, " (catalog {})", clean(digest, false));
        }
        out.push(':');
        tool_lines(&output["tools"], &mut out);
        return out;
    }
    let mut out = format!(
        "{plugin}: not ready (phase {}): {}\n{}",
        clean(field(output, "phase"), false),
        clean(field(output, "code"), false),
        clean(field(output, "detail"), false)
    );
    if let Some(diagnostic) = output.get("diagnostic") {
        let _ = write!(
            out,
            "\ndiagnostic: {}",
            clean(&diagnostic.to_string(), false)
        );
    }
    out
}

/// `reload`.
pub(super) fn reload(output: &Value) -> String {
    let failures = output["failures"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if failures.is_empty() {
        return format!("reloaded:\n{}", providers(output));
    }
    let mut out = String::from("reload kept the previous providers; these candidates failed:");
    for failure in failures {
        let _ = write!(
            out,
            "\n  {}: {}",
            clean(field(failure, "plugin"), false),
            clean(field(failure, "code"), false)
        );
    }
    out
}

/// `catalog`.
pub(super) fn catalog(output: &Value) -> String {
    let tools = output["tools"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut out = format!(
        "{} (revision {})",
        count(&output["totalCount"], "tool"),
        clean(field(output, "catalogRevision"), false)
    );
    for tool in tools {
        let _ = write!(
            out,
            "\n  {} / {}",
            clean(field(tool, "plugin"), false),
            clean(field(tool, "tool"), false)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert_eq!(count(&json!(1), "tool"), "1 tool");
        assert_eq!(count(&json!(0), "tool"), "0 tools");
        assert_eq!(count(&json!(2), "tool"), "2 tools");
    }

    #[test]
    fn list_shows_names_and_titles() {
        let out = provider_detail(
            &json!({"plugin":"p","status":"ready","name":"P","toolCount":2,
            "tools":[{"name":"a","title":"A"},{"name":"b"}]}),
        );
        assert!(out.contains("\n  a — A"), "{out}");
        assert!(out.ends_with("\n  b"), "{out}");
        assert!(out.contains("2 tools:"), "{out}");
    }

    #[test]
    fn describe_marks_a_destructive_tool() {
        let out = describe(
            &json!({"plugin":"p","tool":{"name":"rm","inputSchema":{"type":"object"},
            "annotations":{"destructiveHint":true,"idempotentHint":false}}}),
        );
        assert!(
            out.contains("annotations: destructiveHint=true, idempotentHint=false"),
            "{out}"
        );
        assert!(out.contains("WARNING: DESTRUCTIVE"), "{out}");
        let out = describe(
            &json!({"plugin":"p","tool":{"name":"ls","inputSchema":{"type":"object"},
            "annotations":{"readOnlyHint":true,"x":1}}}),
        );
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
            describe(&json!({"plugin":"p","tool":tool}))
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
            failure(&out),
            "error: plugin_timeout: late (dispatch: outcome_unknown; recovery: do_not_retry)"
        );
    }
}
