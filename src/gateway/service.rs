//! The `plugin_tool` service: parse → scope → route → act → canonical output.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::Value;

use super::binding::{BindingStore, BindingTarget};
use super::failure::failure_output;
use super::output;
use super::params::ActionRef;
use super::recording::{RecordingEvent, RecordingHook};
use super::scope::Caller;
use crate::catalog::ToolResult;
use crate::error::{Dispatch, Error, ErrorCode};
use crate::host::{Host, InstanceCall, DEFAULT_PROJECT_CATALOG_BYTES};
use crate::provider::StderrLine;

/// The runner name [`Gateway::single`] registers its host under.
pub const LOCAL_RUNNER: &str = "local";

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

    /// An output received from another process (a `serve` endpoint): the code is read from
    /// the failure object, and is `None` when it is not one of this runtime's codes.
    #[cfg(feature = "http-client")]
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

/// The result of [`Gateway::plugin_tool_local`]: the output and what only a local operator may
/// see.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LocalOutput {
    /// The output, exactly as [`Gateway::plugin_tool`] returns it.
    pub output: ToolOutput,
    /// The stderr lines of a `check` candidate (last lines, bounded); empty otherwise.
    pub check_stderr: Vec<StderrLine>,
}

type SharedHook = Arc<dyn Fn(&RecordingEvent) + Send + Sync>;

/// Routes `plugin_tool` requests to named runners and keeps the binding store.
///
/// `Send + Sync`: one gateway serves concurrent requests from many threads. A slow call holds
/// only its own provider; list, describe, check and other providers are not blocked.
pub struct Gateway {
    runners: RwLock<BTreeMap<String, Arc<Host>>>,
    bindings: BindingStore,
    hook: RwLock<Option<SharedHook>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("runners", &self.runner_names())
            .field("bindings", &self.bindings.len())
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway over these named runners.
    pub fn new(runners: impl IntoIterator<Item = (String, Arc<Host>)>) -> Gateway {
        Gateway {
            runners: RwLock::new(runners.into_iter().collect()),
            bindings: BindingStore::default(),
            hook: RwLock::new(None),
        }
    }

    /// A gateway with one runner, `local`.
    pub fn single(host: Arc<Host>) -> Gateway {
        Gateway::new([(LOCAL_RUNNER.to_string(), host)])
    }

    /// Registers (or replaces) a runner; returns the host previously registered under `name`.
    /// Bindings described on a replaced runner then fail with `plugin_replaced`.
    pub fn insert_runner(&self, name: impl Into<String>, host: Arc<Host>) -> Option<Arc<Host>> {
        self.runners.write().insert(name.into(), host)
    }

    /// The host registered under `name`.
    pub fn runner(&self, name: &str) -> Option<Arc<Host>> {
        self.runners.read().get(name).cloned()
    }

    /// The registered runner names, sorted.
    pub fn runner_names(&self) -> Vec<String> {
        self.runners.read().keys().cloned().collect()
    }

    /// Shuts every registered host down (see [`Host::shutdown`]).
    pub fn shutdown(&self) {
        let hosts: Vec<Arc<Host>> = self.runners.read().values().cloned().collect();
        for host in hosts {
            host.shutdown();
        }
    }

    /// Installs the recording hook, replacing any previous one. It is called for `call`,
    /// `check` and `reload` requests that carry an explicit `recording_session_id`, and never
    /// otherwise.
    pub fn set_recording_hook(&self, hook: RecordingHook) {
        *self.hook.write() = Some(Arc::from(hook));
    }

    /// Handles one `plugin_tool` request: strict parameter parsing (`invalid_arguments`), then
    /// the scope check (`insufficient_scope`), then the action.
    pub fn plugin_tool(&self, caller: &Caller, params: &Value) -> ToolOutput {
        self.handle(caller, params, None)
    }

    /// [`Gateway::plugin_tool`] for a caller on this machine: a `check` also returns the
    /// candidate's stderr lines (empty for every other action). Never put them in an output a
    /// remote caller sees: stderr may hold anything the plugin printed.
    pub fn plugin_tool_local(&self, caller: &Caller, params: &Value) -> LocalOutput {
        let mut check_stderr = Vec::new();
        let output = self.handle(caller, params, Some(&mut check_stderr));
        LocalOutput {
            output,
            check_stderr,
        }
    }

    fn handle(
        &self,
        caller: &Caller,
        params: &Value,
        check_stderr: Option<&mut Vec<StderrLine>>,
    ) -> ToolOutput {
        // Borrowed from `params`: neither the call arguments nor any string is copied.
        let action = match ActionRef::parse(params) {
            Ok(action) => action,
            Err(error) => return ToolOutput::failure(&error),
        };
        let mut target = None;
        let scope = action.kind().scope();
        let result = if caller.has(scope) {
            self.act(action, &mut target, check_stderr)
        } else {
            Err(Error::not_started(
                ErrorCode::InsufficientScope,
                format!(
                    "action `{}` needs scope {}",
                    action.kind().as_str(),
                    scope.as_str()
                ),
            ))
        };
        if let Some(session_id) = action.recording_session_id() {
            self.record(action, session_id, target.as_deref(), &result);
        }
        match result {
            Ok(output) => ToolOutput::ok(output),
            Err(error) => ToolOutput::failure(&error),
        }
    }

    fn act(
        &self,
        action: ActionRef<'_>,
        target: &mut Option<Arc<BindingTarget>>,
        check_stderr: Option<&mut Vec<StderrLine>>,
    ) -> Result<Value, Error> {
        match action {
            ActionRef::List {
                runner: None,
                plugin: _,
            } => Ok(output::runners(
                self.runner_names().iter().map(String::as_str),
            )),
            ActionRef::List {
                runner: Some(runner),
                plugin: None,
            } => {
                let set = self.host(runner)?.providers();
                Ok(output::providers(runner, set.entries()))
            }
            ActionRef::List {
                runner: Some(runner),
                plugin: Some(plugin),
            } => {
                let set = self.host(runner)?.providers();
                let entry = set.entry(plugin).ok_or_else(crate::host::not_configured)?;
                Ok(output::provider_detail(entry))
            }
            ActionRef::Describe {
                runner,
                plugin,
                tool,
            } => self.describe(runner, plugin, tool),
            ActionRef::Call {
                binding, arguments, ..
            } => self.call(binding, arguments, target),
            ActionRef::Check { runner, plugin, .. } => {
                let report = self.host(runner)?.check(plugin)?;
                let output = output::check(runner, &report);
                if let Some(sink) = check_stderr {
                    *sink = report.stderr;
                }
                Ok(output)
            }
            ActionRef::Reload { runner, .. } => {
                let report = self.host(runner)?.reload()?;
                Ok(output::reload(runner, &report))
            }
            ActionRef::Catalog { runner, project } => {
                let catalog = self
                    .host(runner)?
                    .project_catalog(Path::new(project), DEFAULT_PROJECT_CATALOG_BYTES)?;
                Ok(output::catalog(runner, &catalog))
            }
        }
    }

    fn describe(&self, runner: &str, plugin: &str, tool: &str) -> Result<Value, Error> {
        let host = self.host(runner)?;
        let (provider, tool) = host.tool(plugin, tool)?;
        let binding = self
            .bindings
            .insert(BindingTarget {
                runner: runner.to_string(),
                runner_id: host.runner_id(),
                plugin: provider.id().to_string(),
                instance: provider.instance(),
                tool: tool.name().to_string(),
                observation: tool.observation().to_string(),
            })
            .ok_or_else(|| {
                Error::not_started(
                    ErrorCode::Internal,
                    "the gateway could not create a binding (no system randomness); try again",
                )
            })?;
        Ok(output::describe(
            runner,
            &provider,
            &tool,
            &binding.encode(),
        ))
    }

    /// Calls exactly the instance a binding recorded; never re-resolves to a same-named tool.
    fn call(
        &self,
        binding: &str,
        arguments: &Value,
        seen: &mut Option<Arc<BindingTarget>>,
    ) -> Result<Value, Error> {
        let target = self.bindings.resolve(binding).ok_or_else(|| {
            Error::not_started(
                ErrorCode::DescribeRequired,
                "the binding is unknown or expired; describe the tool again",
            )
        })?;
        *seen = Some(target.clone());
        let host = self
            .runner(&target.runner)
            .filter(|h| h.runner_id() == target.runner_id)
            .ok_or_else(replaced)?;
        host.call_instance(
            InstanceCall::new(&target.plugin, target.instance, &target.tool, arguments)
                .observation(&target.observation),
        )
        .map(ToolResult::into_json)
        .map_err(|e| match e.code() {
            ErrorCode::StaleProvider => replaced(),
            _ => e,
        })
    }

    fn host(&self, runner: &str) -> Result<Arc<Host>, Error> {
        self.runner(runner).ok_or_else(|| {
            Error::not_started(
                ErrorCode::RunnerNotFound,
                "no runner with that name; list to see the runners",
            )
        })
    }

    fn record(
        &self,
        action: ActionRef<'_>,
        session_id: &str,
        target: Option<&BindingTarget>,
        result: &Result<Value, Error>,
    ) {
        let Some(hook) = self.hook.read().clone() else {
            return;
        };
        let (runner, plugin, tool) = match action {
            ActionRef::Call { .. } => match target {
                Some(t) => (
                    Some(t.runner.clone()),
                    Some(t.plugin.clone()),
                    Some(t.tool.clone()),
                ),
                None => (None, None, None),
            },
            ActionRef::Check { runner, plugin, .. } => {
                (Some(runner.to_string()), Some(plugin.to_string()), None)
            }
            ActionRef::Reload { runner, .. } => (Some(runner.to_string()), None, None),
            _ => return,
        };
        let event = RecordingEvent {
            action: action.kind(),
            session_id: session_id.to_string(),
            runner,
            plugin,
            tool,
            success: result.is_ok(),
            dispatch: match result {
                Ok(_) => Dispatch::Completed,
                Err(e) => e.dispatch(),
            },
            error_code: result.as_ref().err().map(Error::code),
        };
        if catch_unwind(AssertUnwindSafe(|| hook(&event))).is_err() {
            log::error!("the recording hook panicked; the event was dropped");
        }
    }
}

fn replaced() -> Error {
    Error::not_started(
        ErrorCode::Replaced,
        "the provider or runner was replaced since the tool was described; list and describe again",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Gateway>();
        assert_send_sync::<ToolOutput>();
    }
}
