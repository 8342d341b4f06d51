//! [`ToolOutput`], the result of one `plugin_tool` request, and the builders of its typed
//! [`Outcome`] from what a host reports (docs/PROTOCOL.md §8.4, outputs).
//!
//! Built only from provider ids, display names, tool definitions, stable codes and safe
//! messages: never from launch specs, instance ids or stderr.

use serde_json::Value;

use super::failure::Recovery;
use super::outcome::{
    CatalogOutcome, CheckOutcome, Described, DescribedProject, Outcome, ProviderDetail,
    ProviderList, ProviderStatus, ProviderSummary, Received, ReloadFailure, ReloadOutcome,
    RunnerSummary, ToolFailure, ToolSummary,
};
use crate::catalog::{Tool, ToolResult};
use crate::error::{Dispatch, Error, ErrorCode};
use crate::host::{CheckReport, ProjectCatalog, ProviderEntry, ReloadReport};
use crate::provider::Provider;

/// Longest check `detail`, in bytes (docs/PROTOCOL.md §3, bounds).
pub const MAX_DETAIL_BYTES: usize = 512;

/// The result of one `plugin_tool` request: a typed [`Outcome`]. [`ToolOutput::to_json`] is
/// its one canonical JSON object (`--json`, stdio, HTTP, MCP, the runner link all send it).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    outcome: Outcome,
}

/// Serializes as [`ToolOutput::to_json`] (see [`Outcome`]'s `Serialize`).
impl serde::Serialize for ToolOutput {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.outcome.serialize(serializer)
    }
}

impl From<Outcome> for ToolOutput {
    fn from(outcome: Outcome) -> ToolOutput {
        ToolOutput { outcome }
    }
}

impl ToolOutput {
    /// The failure output for `error`.
    pub fn failure(error: &Error) -> ToolOutput {
        Outcome::Failed(failure(error)).into()
    }

    /// An output received from another process (a `serve` endpoint, a runner link), kept as it
    /// came: a gateway validates and rebuilds it before any of it reaches a caller (a
    /// [`RunnerLink`](super::RunnerLink) answers with one).
    pub fn received(success: bool, json: Value) -> ToolOutput {
        Outcome::Received(Received { success, json }).into()
    }

    /// `(success, JSON object)` by value: what a relay validates.
    pub(crate) fn into_parts(self) -> (bool, Value) {
        (self.is_success(), self.into_json())
    }

    /// A received output's success flag and JSON object, borrowed; `None` for a typed one.
    pub(crate) fn received_parts(&self) -> Option<(bool, &Value)> {
        match &self.outcome {
            Outcome::Received(r) => Some((r.success, &r.json)),
            _ => None,
        }
    }

    /// The JSON object of a received output, borrowed; `None` for a typed one.
    pub(crate) fn received_json(&self) -> Option<&Value> {
        match &self.outcome {
            Outcome::Received(r) => Some(&r.json),
            _ => None,
        }
    }

    /// True when the action succeeded.
    pub fn is_success(&self) -> bool {
        self.outcome.is_success()
    }

    /// The typed outcome.
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// The typed outcome, by value.
    pub fn into_outcome(self) -> Outcome {
        self.outcome
    }

    /// The canonical JSON object: the success object of the action, or the failure object
    /// `{"error":{"code","message"},"dispatch","recovery"?}`.
    pub fn to_json(&self) -> Value {
        self.outcome.to_json()
    }

    /// [`ToolOutput::to_json`] by value (a call result is not copied).
    pub fn into_json(self) -> Value {
        self.outcome.into_json()
    }

    /// The failure's stable code; `None` on success (and for a received failure whose code is
    /// not one of this runtime's). Transports map it (for example to an HTTP status).
    pub fn code(&self) -> Option<ErrorCode> {
        match &self.outcome {
            Outcome::Failed(f) => Some(f.code),
            Outcome::Received(r) if !r.success => {
                r.json["error"]["code"].as_str().and_then(ErrorCode::parse)
            }
            _ => None,
        }
    }

    /// The failed action's dispatch state; `None` on success (and for a received failure
    /// without a known one).
    pub fn dispatch(&self) -> Option<Dispatch> {
        match &self.outcome {
            Outcome::Failed(f) => Some(f.dispatch),
            Outcome::Received(r) if !r.success => match r.json["dispatch"].as_str() {
                Some("not_started") => Some(Dispatch::NotStarted),
                Some("completed") => Some(Dispatch::Completed),
                Some("outcome_unknown") => Some(Dispatch::OutcomeUnknown),
                _ => None,
            },
            _ => None,
        }
    }

    /// The failure, when the action failed (not for a received output).
    pub fn failure_info(&self) -> Option<&ToolFailure> {
        match &self.outcome {
            Outcome::Failed(f) => Some(f),
            _ => None,
        }
    }

    /// The binding of a `describe`.
    pub fn binding(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Described(d) => Some(&d.binding),
            _ => None,
        }
    }

    /// The tool result of a `call`.
    pub fn call_result(&self) -> Option<&ToolResult> {
        match &self.outcome {
            Outcome::Called(result) => Some(result),
            _ => None,
        }
    }

    /// True when a `call` completed and the tool reported an error (`isError: true`).
    pub fn is_tool_error(&self) -> bool {
        match &self.outcome {
            Outcome::Called(result) => result.is_error(),
            Outcome::Received(r) => r.success && r.json.get("isError") == Some(&Value::Bool(true)),
            _ => false,
        }
    }
}

/// The canonical failure output object for `error`.
pub fn failure_output(error: &Error) -> Value {
    failure(error).to_json()
}

/// The typed failure for `error`, with its recovery.
pub(crate) fn failure(error: &Error) -> ToolFailure {
    ToolFailure {
        code: error.code(),
        message: error.message().to_string(),
        dispatch: error.dispatch(),
        recovery: Recovery::for_error(error),
    }
}

/// `list` without a runner (a local runner has no display name; a remote one has the name
/// from the runners file).
pub(crate) fn runners(runners: Vec<(String, Option<String>)>) -> Outcome {
    Outcome::Runners(
        runners
            .into_iter()
            .map(|(runner, name)| RunnerSummary { runner, name })
            .collect(),
    )
}

/// One provider as listed.
pub(crate) fn provider_summary(entry: &ProviderEntry) -> ProviderSummary {
    ProviderSummary {
        plugin: entry.id.clone(),
        name: entry.name.clone(),
        status: match entry.error_code() {
            None => ProviderStatus::Ready,
            Some(code) => ProviderStatus::Failed(code),
        },
    }
}

/// `list(runner)`.
pub(crate) fn providers(runner: &str, entries: &[ProviderEntry]) -> Outcome {
    Outcome::Providers(ProviderList {
        runner: runner.to_string(),
        plugins: entries.iter().map(provider_summary).collect(),
    })
}

/// `list(runner, plugin)`: the summary plus tool names and titles only (a description belongs
/// to `describe` and the project catalog). A failed or retired provider lists no tools, since
/// none of them can be called.
pub(crate) fn provider_detail(entry: &ProviderEntry) -> Outcome {
    let tools = match entry.provider() {
        Some(p) if !p.is_retired() => p
            .catalog()
            .tools()
            .iter()
            .map(|t| tool_summary(t.name(), t.title()))
            .collect(),
        _ => Vec::new(),
    };
    Outcome::Provider(ProviderDetail {
        provider: provider_summary(entry),
        tools,
    })
}

pub(crate) fn tool_summary(name: &str, title: Option<&str>) -> ToolSummary {
    ToolSummary {
        name: name.to_string(),
        title: title.map(str::to_string),
    }
}

/// `describe`.
pub(crate) fn describe(
    runner: &str,
    provider: &Provider,
    tool: Tool,
    binding: String,
    project: Option<DescribedProject>,
) -> Outcome {
    Outcome::Described(Box::new(Described {
        runner: runner.to_string(),
        plugin: provider.id().to_string(),
        plugin_name: provider.name().to_string(),
        tool,
        binding,
        project,
    }))
}

/// `check`: when ready the tools and the catalog digest; when not ready no tools, and the
/// code, detail and diagnostic (when present).
pub(crate) fn check(runner: &str, report: &CheckReport) -> Outcome {
    let mut outcome = CheckOutcome {
        runner: runner.to_string(),
        plugin: report.plugin.clone(),
        ready: report.ready,
        phase: report.phase,
        tools: Vec::new(),
        catalog_digest: None,
        code: None,
        detail: None,
        diagnostic: None,
    };
    if report.ready {
        outcome.tools = report
            .tools
            .iter()
            .map(|(name, title)| tool_summary(name, title.as_deref()))
            .collect();
        outcome.catalog_digest = report.catalog_digest.clone();
    } else {
        let (code, text) = match &report.error {
            Some(e) => (e.code(), detail(e.message())),
            None => (
                ErrorCode::ProviderUnavailable,
                "the candidate was not admitted".to_string(),
            ),
        };
        outcome.code = Some(code);
        outcome.detail = Some(text);
        outcome.diagnostic = report.diagnostic().cloned();
    }
    Outcome::Checked(Box::new(outcome))
}

/// `reload`.
pub(crate) fn reload(runner: &str, report: &ReloadReport) -> Outcome {
    Outcome::Reloaded(ReloadOutcome {
        runner: runner.to_string(),
        plugins: report
            .providers
            .entries()
            .iter()
            .map(provider_summary)
            .collect(),
        failures: report
            .failures
            .iter()
            .map(|(plugin, e)| ReloadFailure {
                plugin: plugin.clone(),
                code: e.code(),
            })
            .collect(),
    })
}

/// `catalog`.
pub(crate) fn catalog(runner: &str, catalog: ProjectCatalog) -> Outcome {
    Outcome::Catalog(CatalogOutcome {
        runner: runner.to_string(),
        catalog,
    })
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

/// Why an action failed: a failure of this gateway, or a remote runner's own failure (rebuilt
/// by `relay`), which passes through unchanged.
pub(crate) enum Failure {
    Error(Error),
    Remote(ToolFailure),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure::Error(error)
    }
}

impl Failure {
    pub(crate) fn dispatch(&self) -> Dispatch {
        match self {
            Failure::Error(e) => e.dispatch(),
            Failure::Remote(failure) => failure.dispatch,
        }
    }

    pub(crate) fn code(&self) -> Option<ErrorCode> {
        match self {
            Failure::Error(e) => Some(e.code()),
            Failure::Remote(failure) => Some(failure.code),
        }
    }

    pub(crate) fn into_output(self) -> ToolOutput {
        match self {
            Failure::Error(e) => ToolOutput::failure(&e),
            Failure::Remote(failure) => Outcome::Failed(failure).into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::params::ActionKind;
    use serde_json::json;

    #[test]
    fn failure_output_shape() {
        let e = Error::not_started(ErrorCode::DescribeRequired, "describe the tool again");
        assert_eq!(
            failure_output(&e),
            json!({"error":{"code":"describe_required","message":"describe the tool again"},
                   "dispatch":"not_started","recovery":"describe_again"})
        );
        let e = Error::new(ErrorCode::RpcError, Dispatch::Completed, "tool failed");
        assert_eq!(
            failure_output(&e),
            json!({"error":{"code":"plugin_rpc_error","message":"tool failed"},
                   "dispatch":"completed"})
        );
    }

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
            runners(vec![("local".into(), None), ("e".into(), Some("E".into()))]).to_json(),
            json!({"runners":[{"runner":"local"},{"runner":"e","name":"E"}]})
        );
    }

    #[test]
    fn a_tool_summary_omits_a_missing_title() {
        let detail = |title| {
            Outcome::Provider(ProviderDetail {
                provider: ProviderSummary {
                    plugin: "p".into(),
                    name: "P".into(),
                    status: ProviderStatus::Failed(ErrorCode::Eof),
                },
                tools: vec![tool_summary("a", title)],
            })
            .to_json()
        };
        assert_eq!(
            detail(None),
            json!({"plugin":"p","name":"P","status":"failed","errorCode":"plugin_eof",
                   "toolCount":1,"tools":[{"name":"a"}]})
        );
        assert_eq!(
            detail(Some("A"))["tools"],
            json!([{"name":"a","title":"A"}])
        );
    }

    #[test]
    fn a_received_canonical_output_types_and_serializes_back_the_same() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let cases = [
            (
                ActionKind::List,
                true,
                json!({"runners":[{"runner":"local"},{"runner":"e","name":"E"}]}),
            ),
            (
                ActionKind::List,
                true,
                json!({"runner":"local","plugins":[
                {"plugin":"a","name":"A","status":"ready"},
                {"plugin":"b","name":"B","status":"failed","errorCode":"plugin_eof"}]}),
            ),
            (
                ActionKind::List,
                true,
                json!({"plugin":"a","name":"A","status":"ready",
                "toolCount":2,"tools":[{"name":"x","title":"X"},{"name":"y"}]}),
            ),
            (
                ActionKind::Describe,
                true,
                json!({"runner":"local","plugin":"a","pluginName":"A",
                "tool":{"name":"x","inputSchema":{"type":"object"}},"binding":"wc_pbind_1"}),
            ),
            (
                ActionKind::Call,
                true,
                json!({"content":[{"type":"text","text":"t"}],"isError":false}),
            ),
            (
                ActionKind::Check,
                true,
                json!({"runner":"local","plugin":"a","ready":true,
                "phase":"ready","toolCount":1,"tools":[{"name":"x"}],"catalogDigest":digest}),
            ),
            (
                ActionKind::Check,
                true,
                json!({"runner":"local","plugin":"a","ready":false,
                "phase":"tools_list","toolCount":0,"tools":[],"code":"plugin_tools_list_invalid",
                "detail":"d","diagnostic":{"code":"invalid_tool_name","field":"name"}}),
            ),
            (
                ActionKind::Reload,
                true,
                json!({"runner":"local","plugins":[],
                "failures":[{"plugin":"a","code":"plugin_eof"}]}),
            ),
            (
                ActionKind::Catalog,
                true,
                json!({"runner":"local","tools":[{"plugin":"a","name":"A",
                "tool":"x","description":"d","annotations":{"readOnlyHint":true}}],
                "totalCount":1,"catalogRevision":"wc_plugcat_1"}),
            ),
            (
                ActionKind::Call,
                false,
                json!({"error":{"code":"plugin_timeout","message":"m\nn"},
                "dispatch":"outcome_unknown","recovery":"do_not_retry"}),
            ),
        ];
        for (kind, success, json) in cases {
            let received = ToolOutput::received(success, json.clone());
            assert_eq!(received.to_json(), json);
            let typed = received.typed(kind).unwrap_or_else(|| panic!("{json}"));
            assert!(!matches!(*typed, Outcome::Received(_)), "{json}");
            assert_eq!(typed.is_success(), success);
            assert_eq!(typed.to_json(), json);
            assert_eq!(serde_json::to_value(&*typed).unwrap(), json);
        }
        let odd = ToolOutput::received(true, json!({"runner":"local","plugins":"no"}));
        assert!(odd.typed(ActionKind::List).is_none());
    }
}
