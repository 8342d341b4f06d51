//! The typed outcome of one `plugin_tool` request, one type per action, and its one JSON form
//! (docs/PROTOCOL.md §8.4, outputs). Every front that prints or carries an output reads these
//! fields; every front that sends JSON uses [`Outcome::to_json`] / [`Outcome::into_json`].

use serde_json::{json, Map, Value};

use super::failure::Recovery;
use crate::catalog::{Tool, ToolResult};
use crate::diagnostic::Diagnostic;
use crate::error::{Dispatch, ErrorCode, Phase};
use crate::host::ProjectCatalog;

/// What one `plugin_tool` request produced.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// `list` without a runner: the runners.
    Runners(Vec<RunnerSummary>),
    /// `list(runner)`: the runner's providers.
    Providers(ProviderList),
    /// `list(runner, plugin)`: one provider and its tools.
    Provider(ProviderDetail),
    /// `describe`: the full tool definition and a fresh binding.
    Described(Box<Described>),
    /// `call`: the plugin's validated tool result, kept in its canonical JSON form.
    Called(ToolResult),
    /// `check`: a disposable candidate's admission.
    Checked(Box<CheckOutcome>),
    /// `reload`: the committed providers and the candidates that failed.
    Reloaded(ReloadOutcome),
    /// `catalog`: the project catalog.
    Catalog(CatalogOutcome),
    /// A failed action.
    Failed(ToolFailure),
    /// An output received from another process (a `serve` endpoint or a runner link), as it
    /// came: not validated yet. A gateway never returns one; it validates and rebuilds it first.
    Received(Received),
}

/// One runner of `list` without a runner.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunnerSummary {
    /// The runner id.
    pub runner: String,
    /// The display name (remote runners only).
    pub name: Option<String>,
}

/// A provider's state as listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderStatus {
    /// Ready to serve calls.
    Ready,
    /// Failed, with its stable code.
    Failed(ErrorCode),
}

/// One provider as listed: `{"plugin","name","status","errorCode"?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderSummary {
    /// The provider id.
    pub plugin: String,
    /// The display name.
    pub name: String,
    /// Ready or failed.
    pub status: ProviderStatus,
}

/// One tool as listed or checked: its name and title.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolSummary {
    /// The tool name.
    pub name: String,
    /// The title, when the tool has one.
    pub title: Option<String>,
}

/// `list(runner)`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderList {
    /// The runner id.
    pub runner: String,
    /// The providers, in set order.
    pub plugins: Vec<ProviderSummary>,
}

/// `list(runner, plugin)`: no tools for a failed or retired provider.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderDetail {
    /// The provider.
    pub provider: ProviderSummary,
    /// Its callable tools.
    pub tools: Vec<ToolSummary>,
}

/// `describe`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Described {
    /// The runner id.
    pub runner: String,
    /// The provider id.
    pub plugin: String,
    /// The provider's display name.
    pub plugin_name: String,
    /// The admitted tool definition.
    pub tool: Tool,
    /// The opaque binding a `call` goes through.
    pub binding: String,
    /// The project the binding is bound to, as the caller named it (`project`), and its
    /// opaque target id (`projectTarget`); `None` for a binding without a project.
    pub project: Option<DescribedProject>,
}

/// The project of a project-bound `describe`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DescribedProject {
    /// The project as the caller named it.
    pub project: String,
    /// The project target id (`wc_proot_…`): a call through a front carries it to the runner.
    pub target: String,
}

impl DescribedProject {
    /// A project and its target id.
    pub fn new(project: impl Into<String>, target: impl Into<String>) -> DescribedProject {
        DescribedProject {
            project: project.into(),
            target: target.into(),
        }
    }
}

impl PartialEq for Described {
    fn eq(&self, other: &Described) -> bool {
        (
            &self.runner,
            &self.plugin,
            &self.plugin_name,
            &self.binding,
            &self.project,
        ) == (
            &other.runner,
            &other.plugin,
            &other.plugin_name,
            &other.binding,
            &other.project,
        ) && self.tool.definition() == other.tool.definition()
    }
}

/// `check`: `code` and `detail` exactly when not ready; no tools when not ready.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CheckOutcome {
    /// The runner id.
    pub runner: String,
    /// The provider id.
    pub plugin: String,
    /// True when the candidate was admitted.
    pub ready: bool,
    /// `ready`, or the phase that failed.
    pub phase: Phase,
    /// The admitted tools.
    pub tools: Vec<ToolSummary>,
    /// The admitted catalog's digest, when ready and known.
    pub catalog_digest: Option<String>,
    /// Why it is not ready.
    pub code: Option<ErrorCode>,
    /// A safe, bounded detail of the failure.
    pub detail: Option<String>,
    /// The admission diagnostic, when the tool list was rejected.
    pub diagnostic: Option<Diagnostic>,
}

/// One candidate a reload could not admit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReloadFailure {
    /// The provider id.
    pub plugin: String,
    /// Its failure's code.
    pub code: ErrorCode,
}

/// `reload`: the providers now committed (the old set when a candidate failed).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReloadOutcome {
    /// The runner id.
    pub runner: String,
    /// The committed providers.
    pub plugins: Vec<ProviderSummary>,
    /// The candidates that failed; empty when the new set was committed.
    pub failures: Vec<ReloadFailure>,
}

/// `catalog`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CatalogOutcome {
    /// The runner id.
    pub runner: String,
    /// The project catalog.
    pub catalog: ProjectCatalog,
}

/// A failed action: `{"error":{"code","message"},"dispatch","recovery"?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolFailure {
    /// The stable code.
    pub code: ErrorCode,
    /// A safe message.
    pub message: String,
    /// How far the request got.
    pub dispatch: Dispatch,
    /// What the caller can do next, when anything.
    pub recovery: Option<Recovery>,
}

/// An output as received from another process.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Received {
    /// The `success` it came with.
    pub success: bool,
    /// The output object as it came.
    pub json: Value,
}

impl ToolFailure {
    /// The canonical failure object.
    pub fn to_json(&self) -> Value {
        let mut output = json!({
            "error": {"code": self.code.as_str(), "message": self.message},
            "dispatch": self.dispatch.as_str(),
        });
        if let Some(recovery) = self.recovery {
            output["recovery"] = recovery.as_str().into();
        }
        output
    }
}

impl ProviderSummary {
    /// The failure code of a failed provider.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self.status {
            ProviderStatus::Ready => None,
            ProviderStatus::Failed(code) => Some(code),
        }
    }

    fn to_map(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("plugin".into(), self.plugin.clone().into());
        map.insert("name".into(), self.name.clone().into());
        match self.status {
            ProviderStatus::Ready => {
                map.insert("status".into(), "ready".into());
            }
            ProviderStatus::Failed(code) => {
                map.insert("status".into(), "failed".into());
                map.insert("errorCode".into(), code.as_str().into());
            }
        }
        map
    }
}

impl ToolSummary {
    fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("name".into(), self.name.clone().into());
        if let Some(title) = &self.title {
            map.insert("title".into(), title.clone().into());
        }
        Value::Object(map)
    }
}

fn summaries(plugins: &[ProviderSummary]) -> Vec<Value> {
    plugins.iter().map(|p| Value::Object(p.to_map())).collect()
}

fn tool_list(tools: &[ToolSummary]) -> Vec<Value> {
    tools.iter().map(ToolSummary::to_json).collect()
}

impl Outcome {
    /// True unless the action failed (a received output: the `success` it came with).
    pub fn is_success(&self) -> bool {
        match self {
            Outcome::Failed(_) => false,
            Outcome::Received(r) => r.success,
            _ => true,
        }
    }

    /// The canonical JSON object: what every JSON front sends.
    pub fn to_json(&self) -> Value {
        match self {
            Outcome::Runners(runners) => {
                let runners: Vec<Value> = runners
                    .iter()
                    .map(|r| match &r.name {
                        Some(name) => json!({"runner": r.runner, "name": name}),
                        None => json!({"runner": r.runner}),
                    })
                    .collect();
                json!({ "runners": runners })
            }
            Outcome::Providers(list) => {
                json!({"runner": list.runner, "plugins": summaries(&list.plugins)})
            }
            Outcome::Provider(detail) => {
                let mut map = detail.provider.to_map();
                map.insert("toolCount".into(), detail.tools.len().into());
                map.insert("tools".into(), tool_list(&detail.tools).into());
                Value::Object(map)
            }
            Outcome::Described(d) => {
                let mut out = json!({
                    "runner": d.runner,
                    "plugin": d.plugin,
                    "pluginName": d.plugin_name,
                    "tool": d.tool.definition(),
                    "binding": d.binding,
                });
                if let Some(project) = &d.project {
                    out["project"] = project.project.as_str().into();
                    out["projectTarget"] = project.target.as_str().into();
                }
                out
            }
            Outcome::Called(result) => result.to_json(),
            Outcome::Checked(check) => check_json(check),
            Outcome::Reloaded(reload) => {
                let failures: Vec<Value> = reload
                    .failures
                    .iter()
                    .map(|f| json!({"plugin": f.plugin, "code": f.code.as_str()}))
                    .collect();
                json!({
                    "runner": reload.runner,
                    "plugins": summaries(&reload.plugins),
                    "failures": failures,
                })
            }
            Outcome::Catalog(c) => catalog_json(c),
            Outcome::Failed(failure) => failure.to_json(),
            Outcome::Received(r) => r.json.clone(),
        }
    }

    /// [`Outcome::to_json`] by value: a call result and a received output are not copied.
    pub fn into_json(self) -> Value {
        match self {
            Outcome::Called(result) => result.into_json(),
            Outcome::Received(r) => r.json,
            other => other.to_json(),
        }
    }
}

/// Serializes as [`Outcome::to_json`]; a call result is written as its canonical text, and a
/// received output straight from its JSON, without a copy.
impl serde::Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Outcome::Called(result) => result.as_raw().serialize(serializer),
            Outcome::Received(r) => r.json.serialize(serializer),
            Outcome::Providers(list) => list.serialize(serializer),
            Outcome::Described(described) => described.serialize(serializer),
            other => other.to_json().serialize(serializer),
        }
    }
}

/// Written field by field, as [`Outcome::to_json`] would (keys in a `Value`'s sorted order),
/// without building the `Value`: `list` of a runner is the most frequent answer with no
/// plugin I/O.
impl serde::Serialize for ProviderList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("plugins", &self.plugins)?;
        map.serialize_entry("runner", &self.runner)?;
        map.end()
    }
}

/// Written field by field, as [`Outcome::to_json`] would (keys in a `Value`'s sorted order),
/// the tool definition as its JSON text (written once, when the tool was admitted).
impl serde::Serialize for Described {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let fields = if self.project.is_some() { 7 } else { 5 };
        let mut map = serializer.serialize_map(Some(fields))?;
        map.serialize_entry("binding", &self.binding)?;
        map.serialize_entry("plugin", &self.plugin)?;
        map.serialize_entry("pluginName", &self.plugin_name)?;
        if let Some(project) = &self.project {
            map.serialize_entry("project", &project.project)?;
            map.serialize_entry("projectTarget", &project.target)?;
        }
        map.serialize_entry("runner", &self.runner)?;
        map.serialize_entry("tool", self.tool.definition_json())?;
        map.end()
    }
}

impl serde::Serialize for ProviderSummary {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let code = self.error_code();
        let mut map = serializer.serialize_map(Some(3 + usize::from(code.is_some())))?;
        if let Some(code) = code {
            map.serialize_entry("errorCode", code.as_str())?;
        }
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("plugin", &self.plugin)?;
        let status = match self.status {
            ProviderStatus::Ready => "ready",
            ProviderStatus::Failed(_) => "failed",
        };
        map.serialize_entry("status", status)?;
        map.end()
    }
}

fn check_json(check: &CheckOutcome) -> Value {
    let tools = tool_list(&check.tools);
    let mut output = json!({
        "runner": check.runner,
        "plugin": check.plugin,
        "ready": check.ready,
        "phase": check.phase.as_str(),
        "toolCount": tools.len(),
        "tools": tools,
    });
    if let Some(digest) = &check.catalog_digest {
        output["catalogDigest"] = digest.as_str().into();
    }
    if let Some(code) = check.code {
        output["code"] = code.as_str().into();
    }
    if let Some(detail) = &check.detail {
        output["detail"] = detail.as_str().into();
    }
    if let Some(diagnostic) = &check.diagnostic {
        output["diagnostic"] = diagnostic.to_json();
    }
    output
}

/// The serialized project catalog plus `runner`.
fn catalog_json(c: &CatalogOutcome) -> Value {
    let mut map = match serde_json::to_value(&c.catalog) {
        Ok(Value::Object(map)) => map,
        _ => {
            let mut map = Map::new();
            map.insert("tools".into(), Value::Array(Vec::new()));
            map.insert("totalCount".into(), c.catalog.total_count.into());
            map.insert(
                "catalogRevision".into(),
                c.catalog.catalog_revision.clone().into(),
            );
            map
        }
    };
    map.insert("runner".into(), c.runner.clone().into());
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_list_is_written_as_its_json_is() {
        let summary = |plugin: &str, name: &str, status| ProviderSummary {
            plugin: plugin.into(),
            name: name.into(),
            status,
        };
        for plugins in [
            vec![],
            vec![summary("echo", "Echo \"1\"\n\u{e9}", ProviderStatus::Ready)],
            vec![
                summary(
                    "a",
                    "A",
                    ProviderStatus::Failed(ErrorCode::ProviderUnavailable),
                ),
                summary("b", "B", ProviderStatus::Ready),
            ],
        ] {
            let outcome = Outcome::Providers(ProviderList {
                runner: "local".into(),
                plugins,
            });
            let written = serde_json::to_string(&outcome).unwrap();
            assert_eq!(written, outcome.to_json().to_string(), "byte for byte");
        }
    }

    #[test]
    fn a_described_tool_is_written_as_its_json_is() {
        let definition = serde_json::json!({
            "name": "echo",
            "description": "Echoes \"text\"\n\u{e9}",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "annotations": {"readOnlyHint": true},
        });
        let catalog = crate::catalog::admit_tools_list(&serde_json::json!({"tools": [definition]}))
            .expect("admitted");
        let outcome = Outcome::Described(Box::new(Described {
            runner: "local".into(),
            plugin: "echo".into(),
            plugin_name: "Echo \"1\"".into(),
            tool: catalog.tools()[0].clone(),
            binding: "b-1".into(),
            project: None,
        }));
        let written = serde_json::to_string(&outcome).unwrap();
        assert_eq!(written, outcome.to_json().to_string(), "byte for byte");
        if let Outcome::Described(mut described) = outcome {
            described.project = Some(DescribedProject::new(
                "/work/app \"1\"",
                "wc_proot_00112233445566778899aabbccddeeff",
            ));
            let bound = Outcome::Described(described);
            let written = serde_json::to_string(&bound).unwrap();
            assert_eq!(written, bound.to_json().to_string(), "byte for byte");
            assert!(
                written.contains(r#""project":"/work/app \"1\"""#),
                "{written}"
            );
        }
    }
}
