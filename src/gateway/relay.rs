//! What a front gateway lets through of a remote runner's answer (docs/PROTOCOL.md §9.8,
//! relayed answers): every answer is validated as strictly as a local provider's, and rebuilt
//! from the fields its kind knows, before any of it reaches the caller.
//!
//! - **A success output** must be the output of the action asked (`list(runner)`,
//!   `list(runner, plugin)`, `describe`, `check`, `reload`, `catalog`): every field it needs
//!   present with its type and bounds (ids, names, titles, codes, counts), the plugin and tool
//!   the ones asked, and no key of another kind's output (that is another kind's answer). A key
//!   no output has is dropped. A `describe`'s tool definition is admitted exactly as a local
//!   tools/list entry is (Schema Profile v1), so the front can check the call result against
//!   its output schema; a `call` result goes through the local tools/call result validation.
//! - **A failure object** is rebuilt from `error.code` (one of this runtime's codes),
//!   `error.message` (control characters replaced, cut to [`MAX_RELAYED_MESSAGE_BYTES`]),
//!   `dispatch` and `recovery` (kept only when it is one of the fixed list, and always
//!   `do_not_retry` for an `outcome_unknown` failure); `data` and every other key are dropped.
//!
//! Anything else is not an answer this front can relay: the caller gets the hop's
//! classification (docs/PROTOCOL.md §9.8), never a piece of it.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::failure::Recovery;
use super::outcome::{
    CatalogOutcome, CheckOutcome, Described, DescribedProject, Outcome, ProviderDetail,
    ProviderList, ProviderStatus, ProviderSummary, ReloadFailure, ReloadOutcome, ToolFailure,
    ToolSummary,
};
use super::output::{self, ToolOutput};
use super::params::ActionKind;
use super::params::MAX_PROJECT_BYTES;
use super::runners::valid_id;
use crate::catalog::{admit_tools_list, valid_tool_name, DIAGNOSTIC_FIELDS, MAX_TOOLS};
use crate::diagnostic::{Diagnostic, DiagnosticCode};
use crate::error::{Dispatch, ErrorCode, Phase};
use crate::host::{valid_project_target, ProjectCatalog, ProjectTool};

/// The longest failure message relayed, in bytes (cut on a character boundary).
pub const MAX_RELAYED_MESSAGE_BYTES: usize = 1024;
/// The most providers a relayed list or reload may name.
const MAX_PROVIDERS: usize = 256;
/// The most entries a relayed project catalog may hold.
const MAX_CATALOG_ENTRIES: usize = 4096;
/// The longest provider display name, tool title and catalog revision, in bytes.
const MAX_NAME_BYTES: usize = 128;
/// The longest description of a catalog entry, in bytes.
const MAX_CATALOG_DESCRIPTION_BYTES: usize = 512;
/// The longest binding a runner may mint, in bytes.
const MAX_BINDING_BYTES: usize = 128;

/// The output an action expects, with what it asked for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Expect<'a> {
    /// `list(runner)`.
    Providers,
    /// `list(runner, plugin)`.
    ProviderDetail { plugin: &'a str },
    /// `describe(runner, plugin, tool)` (see [`describe`]).
    Describe,
    /// `check(runner, plugin)`.
    Check { plugin: &'a str },
    /// `reload(runner)`.
    Reload,
    /// `catalog(runner, project)`.
    Catalog,
}

/// Every top-level key of every `plugin_tool` output kind; a key of this list that the expected
/// kind does not have means the answer is of another kind.
const OUTPUT_KEYS: &[&str] = &[
    "runners",
    "runner",
    "plugins",
    "plugin",
    "name",
    "status",
    "errorCode",
    "toolCount",
    "tools",
    "pluginName",
    "tool",
    "binding",
    "project",
    "projectTarget",
    "ready",
    "phase",
    "catalogDigest",
    "code",
    "detail",
    "diagnostic",
    "failures",
    "totalCount",
    "catalogRevision",
    "content",
    "structuredContent",
    "isError",
    "error",
    "dispatch",
    "recovery",
];

impl Expect<'_> {
    /// The top-level keys of this kind's output.
    fn keys(self) -> &'static [&'static str] {
        match self {
            Expect::Providers => &["runner", "plugins"],
            Expect::ProviderDetail { .. } => &[
                "plugin",
                "name",
                "status",
                "errorCode",
                "toolCount",
                "tools",
            ],
            Expect::Describe => &[
                "runner",
                "plugin",
                "pluginName",
                "tool",
                "binding",
                "project",
                "projectTarget",
            ],
            Expect::Check { .. } => &[
                "runner",
                "plugin",
                "ready",
                "phase",
                "toolCount",
                "tools",
                "catalogDigest",
                "code",
                "detail",
                "diagnostic",
            ],
            Expect::Reload => &["runner", "plugins", "failures"],
            Expect::Catalog => &["runner", "tools", "totalCount", "catalogRevision"],
        }
    }
}

/// A relayed success output of the kind `expect`, rebuilt with `runner` as its runner id;
/// `None` when it is not such an output. Not for `describe` (see [`describe`]).
pub(crate) fn success(expect: Expect<'_>, output: &Value, runner: &str) -> Option<Outcome> {
    let map = of_kind(expect, output)?;
    let rebuilt = match expect {
        Expect::Providers => Outcome::Providers(ProviderList {
            runner: runner.to_string(),
            plugins: summaries(map.get("plugins")?)?,
        }),
        Expect::ProviderDetail { plugin } => {
            let provider = summary(map)?;
            if provider.plugin != plugin {
                return None;
            }
            let tools = tool_entries(map)?;
            if provider.status != ProviderStatus::Ready && !tools.is_empty() {
                return None;
            }
            Outcome::Provider(ProviderDetail { provider, tools })
        }
        Expect::Check { plugin } => Outcome::Checked(Box::new(check(map, plugin, runner)?)),
        Expect::Reload => {
            let failures = array(map.get("failures")?, MAX_PROVIDERS)?
                .iter()
                .map(|f| {
                    let f = f.as_object()?;
                    Some(ReloadFailure {
                        plugin: provider_id(f.get("plugin")?)?.to_string(),
                        code: error_code(f.get("code")?)?,
                    })
                })
                .collect::<Option<Vec<_>>>()?;
            Outcome::Reloaded(ReloadOutcome {
                runner: runner.to_string(),
                plugins: summaries(map.get("plugins")?)?,
                failures,
            })
        }
        Expect::Catalog => Outcome::Catalog(catalog(map, runner)?),
        Expect::Describe => return None,
    };
    Some(rebuilt)
}

/// An output received from another process for an action of kind `kind`, checked and rebuilt
/// as a relayed answer is, keeping its own runner id and its binding; a failure keeps its
/// message as it came (a front that prints it cleans it itself). `None` when it is not an
/// output of that kind.
pub(crate) fn received(kind: ActionKind, ok: bool, json: &Value) -> Option<Outcome> {
    if !ok {
        return failure_fields(json, false).map(Outcome::Failed);
    }
    let map = json.as_object()?;
    let runner = || {
        map.get("runner")
            .and_then(Value::as_str)
            .filter(|r| valid_id(r))
    };
    let plugin = || map.get("plugin").and_then(Value::as_str);
    match kind {
        ActionKind::List if map.contains_key("runners") => runners(map),
        ActionKind::List if map.contains_key("plugins") => {
            success(Expect::Providers, json, runner()?)
        }
        ActionKind::List => success(Expect::ProviderDetail { plugin: plugin()? }, json, ""),
        ActionKind::Describe => {
            let tool = map.get("tool")?.get("name")?.as_str()?;
            describe(json, plugin()?, tool, runner()?).map(|d| Outcome::Described(Box::new(d)))
        }
        ActionKind::Call => crate::catalog::validate_tool_result(json.clone(), None)
            .ok()
            .map(Outcome::Called),
        ActionKind::Check => success(Expect::Check { plugin: plugin()? }, json, runner()?),
        ActionKind::Reload => success(Expect::Reload, json, runner()?),
        ActionKind::Catalog => success(Expect::Catalog, json, runner()?),
    }
}

/// A relayed `describe` output for `plugin`'s `tool`, rebuilt with `runner` (its `binding`
/// still the runner's); `None` when it is not one (its tool definition is admitted as a local
/// tools/list entry is). A project-bound output carries both `project` (1..=4096 bytes of
/// text) and `projectTarget` (a target id), or neither; whether it is the project asked is the
/// caller's to check.
pub(crate) fn describe(
    output: &Value,
    plugin: &str,
    tool: &str,
    runner: &str,
) -> Option<Described> {
    let map = of_kind(Expect::Describe, output)?;
    if provider_id(map.get("plugin")?)? != plugin {
        return None;
    }
    let name = display_name(map.get("pluginName")?)?;
    let definition = map.get("tool")?;
    let catalog = admit_tools_list(&serde_json::json!({ "tools": [definition] })).ok()?;
    let admitted = catalog.tools().first()?.clone();
    if admitted.name() != tool {
        return None;
    }
    let binding = graphic_token(map.get("binding")?, MAX_BINDING_BYTES)?;
    let project = match (map.get("project"), map.get("projectTarget")) {
        (None, None) => None,
        (Some(Value::String(project)), Some(Value::String(target)))
            if !project.is_empty()
                && project.len() <= MAX_PROJECT_BYTES
                && !project.chars().any(char::is_control)
                && valid_project_target(target) =>
        {
            Some(DescribedProject::new(project.as_str(), target.as_str()))
        }
        _ => return None,
    };
    Some(Described {
        runner: runner.to_string(),
        plugin: plugin.to_string(),
        plugin_name: name.to_string(),
        tool: admitted,
        binding,
        project,
    })
}

/// A relayed failure object, rebuilt from its known fields; `None` when it is not one (no
/// known code, no message, no dispatch state).
pub(crate) fn failure(output: &Value) -> Option<ToolFailure> {
    failure_fields(output, true)
}

/// A failure object's known fields; its message cleaned and cut when `clean`.
fn failure_fields(output: &Value, clean_message: bool) -> Option<ToolFailure> {
    let map = output.as_object()?;
    let error = map.get("error")?.as_object()?;
    let code = error_code(error.get("code")?)?;
    let message = match error.get("message")? {
        Value::String(m) if clean_message => clean(m, MAX_RELAYED_MESSAGE_BYTES),
        Value::String(m) => m.clone(),
        _ => return None,
    };
    let dispatch = match map.get("dispatch")?.as_str()? {
        "not_started" => Dispatch::NotStarted,
        "outcome_unknown" => Dispatch::OutcomeUnknown,
        "completed" => Dispatch::Completed,
        _ => return None,
    };
    let recovery = match dispatch {
        Dispatch::OutcomeUnknown => Some(Recovery::DoNotRetry),
        _ => map
            .get("recovery")
            .and_then(Value::as_str)
            .and_then(|r| RECOVERIES.iter().find(|known| known.as_str() == r))
            .copied(),
    };
    Some(ToolFailure {
        code,
        message,
        dispatch,
        recovery,
    })
}

/// `list` without a runner: `{"runners":[{"runner","name"?}]}`.
fn runners(map: &Map<String, Value>) -> Option<Outcome> {
    if map.len() != 1 {
        return None;
    }
    let runners = array(map.get("runners")?, MAX_PROVIDERS)?
        .iter()
        .map(|r| {
            let r = r.as_object()?;
            let name = match r.get("name") {
                Some(name) => Some(display_name(name)?.to_string()),
                None => None,
            };
            Some(super::outcome::RunnerSummary {
                runner: provider_id(r.get("runner")?)?.to_string(),
                name,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Outcome::Runners(runners))
}

/// The fixed recovery list.
const RECOVERIES: [Recovery; 8] = [
    Recovery::Retry,
    Recovery::DescribeAgain,
    Recovery::ListAndDescribe,
    Recovery::Reload,
    Recovery::FixArguments,
    Recovery::FixRequest,
    Recovery::List,
    Recovery::DoNotRetry,
];

/// A string of 1 to `max` printable ASCII bytes (a binding, a catalog revision), else `None`.
fn graphic_token(value: &Value, max: usize) -> Option<String> {
    match value {
        Value::String(s)
            if (1..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            Some(s.clone())
        }
        _ => None,
    }
}

/// True when `secret` occurs in any string or key of `value`.
pub(crate) fn contains_secret(value: &Value, secret: &str) -> bool {
    if secret.is_empty() {
        return false;
    }
    match value {
        Value::String(s) => s.contains(secret),
        Value::Array(items) => items.iter().any(|v| contains_secret(v, secret)),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k.contains(secret) || contains_secret(v, secret)),
        _ => false,
    }
}

/// The object of `output` when it is of kind `expect`: an object with no key of another kind.
fn of_kind<'v>(expect: Expect<'_>, output: &'v Value) -> Option<&'v Map<String, Value>> {
    let map = output.as_object()?;
    let own = expect.keys();
    let foreign = map
        .keys()
        .any(|k| OUTPUT_KEYS.contains(&k.as_str()) && !own.contains(&k.as_str()));
    (!foreign).then_some(map)
}

/// `list(runner)` and `reload` providers: each `{plugin, name, status, errorCode?}`.
fn summaries(value: &Value) -> Option<Vec<ProviderSummary>> {
    array(value, MAX_PROVIDERS)?
        .iter()
        .map(|entry| summary(entry.as_object()?))
        .collect()
}

/// One provider summary `{plugin, name, status, errorCode?}` (`errorCode` exactly when failed).
fn summary(map: &Map<String, Value>) -> Option<ProviderSummary> {
    let status = match (map.get("status")?.as_str()?, map.get("errorCode")) {
        ("ready", None) => ProviderStatus::Ready,
        ("failed", Some(code)) => ProviderStatus::Failed(error_code(code)?),
        _ => return None,
    };
    Some(ProviderSummary {
        plugin: provider_id(map.get("plugin")?)?.to_string(),
        name: display_name(map.get("name")?)?.to_string(),
        status,
    })
}

/// `toolCount` and `tools:[{name, title?}]` of a list or check output; the count must match.
fn tool_entries(map: &Map<String, Value>) -> Option<Vec<ToolSummary>> {
    let tools = array(map.get("tools")?, MAX_TOOLS)?
        .iter()
        .map(|t| {
            let t = t.as_object()?;
            let title = match t.get("title") {
                Some(title) => Some(title_text(title)?),
                None => None,
            };
            Some(output::tool_summary(tool_name(t.get("name")?)?, title))
        })
        .collect::<Option<Vec<_>>>()?;
    (map.get("toolCount")?.as_u64()? == tools.len() as u64).then_some(tools)
}

fn check(map: &Map<String, Value>, plugin: &str, runner: &str) -> Option<CheckOutcome> {
    if provider_id(map.get("plugin")?)? != plugin {
        return None;
    }
    let ready = map.get("ready")?.as_bool()?;
    let phase = map.get("phase")?.as_str()?;
    let phase = *PHASES.iter().find(|p| p.as_str() == phase)?;
    let tools = tool_entries(map)?;
    let mut out = CheckOutcome {
        runner: runner.to_string(),
        plugin: plugin.to_string(),
        ready,
        phase,
        tools: Vec::new(),
        catalog_digest: None,
        code: None,
        detail: None,
        diagnostic: None,
    };
    if ready {
        if phase != Phase::Ready
            || ["code", "detail", "diagnostic"]
                .iter()
                .any(|k| map.contains_key(*k))
        {
            return None;
        }
        out.tools = tools;
        if let Some(digest) = map.get("catalogDigest") {
            let digest = digest.as_str()?;
            let hex = digest.strip_prefix("sha256:")?;
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            out.catalog_digest = Some(digest.to_string());
        }
    } else {
        if !tools.is_empty() || map.contains_key("catalogDigest") {
            return None;
        }
        out.code = Some(error_code(map.get("code")?)?);
        out.detail = Some(output::detail(map.get("detail")?.as_str()?));
        if let Some(diagnostic) = map.get("diagnostic") {
            out.diagnostic = Some(check_diagnostic(diagnostic)?);
        }
    }
    Some(out)
}

/// A check diagnostic `{code, tool?, field?}`.
fn check_diagnostic(value: &Value) -> Option<Diagnostic> {
    let map = value.as_object()?;
    let code = map.get("code")?.as_str()?;
    let code = *DIAGNOSTIC_CODES.iter().find(|c| c.as_str() == code)?;
    let tool = match map.get("tool") {
        Some(tool) => Some(tool_name(tool)?.to_string()),
        None => None,
    };
    let field = match map.get("field") {
        Some(field) => {
            let field = field.as_str()?;
            Some(*DIAGNOSTIC_FIELDS.iter().find(|f| **f == field)?)
        }
        None => None,
    };
    Some(Diagnostic { code, tool, field })
}

fn catalog(map: &Map<String, Value>, runner: &str) -> Option<CatalogOutcome> {
    let tools = array(map.get("tools")?, MAX_CATALOG_ENTRIES)?
        .iter()
        .map(|t| {
            let t = t.as_object()?;
            let title = match t.get("title") {
                Some(title) => Some(title_text(title)?.to_string()),
                None => None,
            };
            let description = match t.get("description") {
                Some(description) => {
                    let d = description.as_str()?;
                    if d.len() > MAX_CATALOG_DESCRIPTION_BYTES || !plain_text(d) {
                        return None;
                    }
                    Some(d.to_string())
                }
                None => None,
            };
            let annotations = match t.get("annotations") {
                Some(annotations) => {
                    let hints = annotations.as_object()?;
                    let known = [
                        "readOnlyHint",
                        "destructiveHint",
                        "idempotentHint",
                        "openWorldHint",
                    ];
                    if hints.is_empty()
                        || !hints
                            .iter()
                            .all(|(k, v)| known.contains(&k.as_str()) && v.is_boolean())
                    {
                        return None;
                    }
                    Some(hints.clone())
                }
                None => None,
            };
            Some(ProjectTool {
                plugin: provider_id(t.get("plugin")?)?.to_string(),
                name: display_name(t.get("name")?)?.to_string(),
                tool: tool_name(t.get("tool")?)?.to_string(),
                title,
                description,
                annotations,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let total = map.get("totalCount")?.as_u64()?;
    if total < tools.len() as u64 {
        return None;
    }
    let revision = graphic_token(map.get("catalogRevision")?, MAX_NAME_BYTES)?;
    Some(CatalogOutcome {
        runner: runner.to_string(),
        catalog: ProjectCatalog {
            tools,
            total_count: usize::try_from(total).ok()?,
            catalog_revision: revision,
        },
    })
}

fn array(value: &Value, max: usize) -> Option<&Vec<Value>> {
    value.as_array().filter(|a| a.len() <= max)
}

fn provider_id(value: &Value) -> Option<&str> {
    value.as_str().filter(|id| valid_id(id))
}

fn tool_name(value: &Value) -> Option<&str> {
    value.as_str().filter(|n| valid_tool_name(n))
}

/// A display name: 1..=128 bytes without control characters.
fn display_name(value: &Value) -> Option<&str> {
    value
        .as_str()
        .filter(|n| (1..=MAX_NAME_BYTES).contains(&n.len()) && !n.chars().any(char::is_control))
}

/// A tool title: 1..=128 bytes without control characters other than `\n`, `\r`, `\t`.
fn title_text(value: &Value) -> Option<&str> {
    value
        .as_str()
        .filter(|t| (1..=MAX_NAME_BYTES).contains(&t.len()) && plain_text(t))
}

fn plain_text(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
}

fn error_code(value: &Value) -> Option<ErrorCode> {
    value.as_str().and_then(ErrorCode::parse)
}

/// `text` with control characters replaced by spaces, cut to `max` bytes on a char boundary.
fn clean(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    for c in text.chars() {
        let c = if c.is_control() { ' ' } else { c };
        if out.len() + c.len_utf8() > max {
            break;
        }
        out.push(c);
    }
    out
}

const PHASES: [Phase; 9] = [
    Phase::Config,
    Phase::Environment,
    Phase::Executable,
    Phase::Spawn,
    Phase::Stdio,
    Phase::Initialize,
    Phase::ToolsList,
    Phase::Validation,
    Phase::Ready,
];

const DIAGNOSTIC_CODES: [DiagnosticCode; 12] = [
    DiagnosticCode::ToolsListResultMalformed,
    DiagnosticCode::ToolCountExceeded,
    DiagnosticCode::ToolDefinitionInvalid,
    DiagnosticCode::InvalidToolName,
    DiagnosticCode::DuplicateToolName,
    DiagnosticCode::InvalidToolTitle,
    DiagnosticCode::InvalidToolDescription,
    DiagnosticCode::InputSchemaInvalid,
    DiagnosticCode::OutputSchemaInvalid,
    DiagnosticCode::SchemaKeywordUnsupported,
    DiagnosticCode::AnnotationsInvalid,
    DiagnosticCode::SchemaBoundsExceeded,
];

impl ToolOutput {
    /// The typed outcome of this output of an action of kind `kind`: its own when it is typed;
    /// for a received output, the output checked and rebuilt as a relayed answer is (its own
    /// runner id and binding kept, a failure's message as it came), or `None` when it is not
    /// an output of that kind. A front that received an output renders it through this.
    ///
    /// Defined here, beside the checks it runs, so that `output` needs nothing of `relay`.
    pub fn typed(&self, kind: ActionKind) -> Option<Cow<'_, Outcome>> {
        match self.received_parts() {
            Some((success, json)) => received(kind, success, json).map(Cow::Owned),
            None => Some(Cow::Borrowed(self.outcome())),
        }
    }
}

#[cfg(test)]
mod tests;
