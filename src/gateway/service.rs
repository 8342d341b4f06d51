//! The `plugin_tool` service: parse → scope → route → act → canonical output.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::RwLock;
use serde_json::Value;

use super::binding::{BindingStore, BindingTarget};
use super::outcome::{DescribedProject, Outcome};
use super::output::{self, Failure, ToolOutput};
use super::params::{Action, ActionRef};
use super::project;
use super::recording::{RecordingEvent, RecordingHook};
use super::remote::{RemoteRunner, RemoteSlots};
use super::runners::LOCAL_RUNNER;
use super::scope::{Caller, Scope};
use crate::catalog::Tool;
use crate::error::{Dispatch, Error, ErrorCode};
use crate::host::{BoundInstance, Host, InstanceCall, DEFAULT_PROJECT_CATALOG_BYTES};
use crate::provider::StderrLine;

mod seal;
pub use seal::SEALED_TOOL_CACHE;

/// The result of [`Gateway::plugin_tool_local`]: the output and what only a local operator may
/// see.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LocalOutput {
    /// The output, exactly as [`Gateway::plugin_tool`] returns it.
    pub output: ToolOutput,
    /// The stderr lines of a `check` candidate (last lines, bounded); empty otherwise.
    pub check_stderr: Vec<StderrLine>,
    /// The [`Error::local_detail`] of the request's failure or of a `check` that is not
    /// ready. Never put it in an output a remote caller sees.
    pub detail: Option<String>,
}

/// What [`Gateway::plugin_tool_local`] gathers besides the output.
#[derive(Default)]
struct Local {
    check_stderr: Vec<StderrLine>,
    detail: Option<String>,
}

type SharedHook = Arc<dyn Fn(&RecordingEvent) + Send + Sync>;

/// Routes `plugin_tool` requests to named runners and keeps the binding store.
///
/// `Send + Sync`: one gateway serves concurrent requests from many threads. A slow call holds
/// only its own provider; list, describe, check and other providers are not blocked.
pub struct Gateway {
    runners: RwLock<BTreeMap<String, Runner>>,
    /// Counts the changes of `runners` (made under its write lock, before the change): a
    /// [`Reach`] taken before one is looked up again.
    generation: AtomicU64,
    bindings: BindingStore<Bound>,
    hook: RwLock<Option<SharedHook>>,
    instance: String,
    /// The in-flight slots the remote runners share (48; 16 stay for the local runner).
    remote_slots: RemoteSlots,
    /// The sealer of its bindings, once given (cluster mode), and the tools they name.
    sealing: seal::Sealing,
}

/// One runner a gateway routes to: a host in this process, or another machine's `serve`.
#[derive(Clone)]
enum Runner {
    Local(Arc<Host>),
    Remote(Arc<RemoteRunner>),
}

/// What a binding of this gateway stands for.
enum Bound {
    /// A tool of a host in this process, and how a call reaches it again (none for a sealed
    /// binding: looked up by its names).
    Local(BindingTarget, Option<Reach>),
    /// A tool described on a remote runner: the remote's own binding, never shown to a caller.
    Remote(Box<RemoteBinding>),
}

/// How a call reaches a local binding's host and instance without looking them up, while no
/// runner changed since the describe ([`Gateway::generation`]) and the host still commits the
/// set the instance was found in ([`BoundInstance`]); else they are looked up as before.
struct Reach {
    generation: u64,
    host: Weak<Host>,
    instance: BoundInstance,
}

struct RemoteBinding {
    runner: Arc<RemoteRunner>,
    /// The binding the remote runner minted.
    binding: String,
    /// The remote runner instance that minted it, when the runner names its instance.
    instance: Option<String>,
    plugin: String,
    /// The tool as the remote described it, admitted like a local one: a call result is
    /// checked against its output schema.
    tool: Tool,
    /// The project target the runner bound its binding to (`projectTarget`), when described
    /// with a `project`: every call carries it to the runner.
    project_target: Option<String>,
}

/// A call's parameters besides its binding.
#[derive(Clone, Copy)]
struct BoundCall<'a> {
    caller: &'a Caller,
    arguments: &'a Value,
    recording_session_id: Option<&'a str>,
    project_target: Option<&'a str>,
}

impl Bound {
    /// `(runner, plugin, tool)` for the recording hook.
    fn names(&self) -> (String, String, String) {
        match self {
            Bound::Local(t, _) => (t.runner.clone(), t.plugin.clone(), t.tool.clone()),
            Bound::Remote(t) => (
                t.runner.id().to_string(),
                t.plugin.clone(),
                t.tool.name().to_string(),
            ),
        }
    }
}

/// Tells the request's trace context what a successful action addressed, for its log lines
/// (it succeeded, so the names are what exists, not whatever a caller typed). A call's names
/// come from its binding, noted before it runs ([`note_bound`]).
fn note_target(action: ActionRef<'_>) {
    use crate::trace;
    match action {
        ActionRef::List { runner, plugin } => trace::note_target(runner, plugin, None),
        ActionRef::Describe {
            runner,
            plugin,
            tool,
            ..
        } => trace::note_target(Some(runner), Some(plugin), Some(tool)),
        ActionRef::Check { runner, plugin, .. } => {
            trace::note_target(Some(runner), Some(plugin), None)
        }
        ActionRef::Reload { runner, .. } | ActionRef::Catalog { runner, .. } => {
            trace::note_target(Some(runner), None, None)
        }
        ActionRef::Call { .. } => {}
    }
}

/// Tells the request's trace context the runner, plugin and tool of the binding it calls, so
/// the lines the call logs while it runs (a fault, a retirement) carry them too.
fn note_bound(bound: &Bound) {
    let (runner, plugin, tool) = match bound {
        Bound::Local(t, _) => (t.runner.as_str(), t.plugin.as_str(), t.tool.as_str()),
        Bound::Remote(t) => (t.runner.id(), t.plugin.as_str(), t.tool.name()),
    };
    crate::trace::note_target(Some(runner), Some(plugin), Some(tool));
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
            runners: RwLock::new(
                runners
                    .into_iter()
                    .map(|(name, host)| (name, Runner::Local(host)))
                    .collect(),
            ),
            generation: AtomicU64::new(0),
            bindings: BindingStore::default(),
            hook: RwLock::new(None),
            instance: instance_id(),
            remote_slots: RemoteSlots::default(),
            sealing: seal::Sealing::default(),
        }
    }

    /// This gateway's instance id: random, made when the gateway is created, so it changes when
    /// the process serving it restarts. `serve` sends it in the `Webcodex-Runner-Instance`
    /// response header so that a front gateway can tell a restarted runner (docs/PROTOCOL.md,
    /// remote runners). It encodes nothing.
    pub fn instance_id(&self) -> &str {
        &self.instance
    }

    /// Registers (or replaces) a remote runner under its id. Bindings described on a replaced
    /// runner then fail with `plugin_replaced`.
    pub fn insert_remote(&self, runner: Arc<RemoteRunner>) {
        self.change_runners()
            .insert(runner.id().to_string(), Runner::Remote(runner));
    }

    /// The runners, to change them: the write lock, taken and counted.
    fn change_runners(&self) -> parking_lot::RwLockWriteGuard<'_, BTreeMap<String, Runner>> {
        let runners = self.runners.write();
        self.generation.fetch_add(1, Ordering::SeqCst);
        runners
    }

    /// Removes the remote runner `id`, whichever it is (a runners-file entry the file no longer
    /// has): it leaves `list` and its bindings stop working. A local
    /// runner of that name stays. True when one was removed.
    pub fn remove_remote_by_id(&self, id: &str) -> bool {
        let mut runners = self.change_runners();
        if matches!(runners.get(id), Some(Runner::Remote(_))) {
            runners.remove(id);
            return true;
        }
        false
    }

    /// Takes the remote runner `id` out of the routing table when it is still `runner` (a
    /// dial-out runner whose link ended): it leaves `list`, and its bindings fail with
    /// `plugin_replaced`. True when it was taken out.
    pub fn remove_remote(&self, id: &str, runner: &Arc<RemoteRunner>) -> bool {
        let mut runners = self.change_runners();
        let current = matches!(runners.get(id), Some(Runner::Remote(r)) if Arc::ptr_eq(r, runner));
        if current {
            runners.remove(id);
        }
        current
    }

    /// A gateway with one runner, `local`.
    pub fn single(host: Arc<Host>) -> Gateway {
        Gateway::new([(LOCAL_RUNNER.to_string(), host)])
    }

    /// Registers (or replaces) a runner; returns the host previously registered under `name`.
    /// Bindings described on a replaced runner then fail with `plugin_replaced`.
    pub fn insert_runner(&self, name: impl Into<String>, host: Arc<Host>) -> Option<Arc<Host>> {
        match self
            .change_runners()
            .insert(name.into(), Runner::Local(host))
        {
            Some(Runner::Local(previous)) => Some(previous),
            _ => None,
        }
    }

    /// The host registered under `name` (`None` for a remote runner).
    pub fn runner(&self, name: &str) -> Option<Arc<Host>> {
        match self.runners.read().get(name) {
            Some(Runner::Local(host)) => Some(host.clone()),
            _ => None,
        }
    }

    /// The remote runners, in id order.
    pub fn remote_runners(&self) -> Vec<Arc<RemoteRunner>> {
        self.runners
            .read()
            .values()
            .filter_map(|r| match r {
                Runner::Remote(remote) => Some(remote.clone()),
                Runner::Local(_) => None,
            })
            .collect()
    }

    fn hosts(&self) -> Vec<Arc<Host>> {
        self.runners
            .read()
            .values()
            .filter_map(|r| match r {
                Runner::Local(host) => Some(host.clone()),
                Runner::Remote(_) => None,
            })
            .collect()
    }

    /// The registered runner names, sorted.
    pub fn runner_names(&self) -> Vec<String> {
        self.runners.read().keys().cloned().collect()
    }

    /// Begins shutdown on every host in this process (see [`Host::begin_shutdown`]): candidates of a
    /// running check or reload are killed at once, committed providers keep serving in-flight
    /// calls.
    pub fn begin_shutdown(&self) {
        for host in self.hosts() {
            host.begin_shutdown();
        }
    }

    /// The input of a stdio front ended (see [`Host::close_reloads`]): on every host in this
    /// process a running reload is cut short at once and no reload starts again; requests
    /// already read (calls, checks) are served normally before the caller shuts down.
    pub fn close_reloads(&self) {
        for host in self.hosts() {
            host.close_reloads();
        }
    }

    /// Shuts every host in this process down (see [`Host::shutdown`]); remote runners are not
    /// touched.
    pub fn shutdown(&self) {
        for host in self.hosts() {
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
        self.handle(caller, ActionRef::parse(params), None)
    }

    /// [`Gateway::plugin_tool`] for a typed request: the same checks of the values (a bad one
    /// is `invalid_arguments`), the same scope check and the same action, with no JSON to
    /// parse. For a program that builds its requests itself; a JSON front parses with
    /// [`Action::parse`] or calls [`Gateway::plugin_tool`].
    ///
    /// ```
    /// # use webcodex_plugin_host::{Action, Caller, Gateway};
    /// # fn example(gateway: &Gateway) {
    /// let list = Action::List { runner: Some("local".into()), plugin: None };
    /// let output = gateway.act_on(&Caller::trusted(), &list);
    /// # let _ = output;
    /// # }
    /// ```
    pub fn act_on(&self, caller: &Caller, action: &Action) -> ToolOutput {
        self.handle(caller, action.checked(), None)
    }

    /// [`Gateway::plugin_tool`] for a caller on this machine: a `check` also returns the
    /// candidate's stderr lines (empty for every other action). Never put them in an output a
    /// remote caller sees: stderr may hold anything the plugin printed.
    pub fn plugin_tool_local(&self, caller: &Caller, params: &Value) -> LocalOutput {
        let mut local = Local::default();
        let output = self.handle(caller, ActionRef::parse(params), Some(&mut local));
        LocalOutput {
            output,
            check_stderr: local.check_stderr,
            detail: local.detail,
        }
    }

    /// Acts on a request parsed or checked (borrowed: neither the call arguments nor any
    /// string is copied).
    fn handle(
        &self,
        caller: &Caller,
        action: Result<ActionRef<'_>, Error>,
        mut local: Option<&mut Local>,
    ) -> ToolOutput {
        let action = match action {
            Ok(action) => action,
            Err(error) => return ToolOutput::failure(&error),
        };
        let mut target = None;
        let scope = action.kind().scope();
        let result = if caller.has(scope) {
            self.act(action, caller, &mut target, local.as_deref_mut())
        } else {
            Err(Failure::Error(Error::not_started(
                ErrorCode::InsufficientScope,
                format!(
                    "action `{}` needs scope {}",
                    action.kind().as_str(),
                    scope.as_str()
                ),
            )))
        };
        if let Some(session_id) = action.recording_session_id() {
            self.record(action, session_id, target.as_deref(), &result);
        }
        if result.is_ok() {
            note_target(action);
        }
        if let (Some(local), Err(Failure::Error(e))) = (local, &result) {
            local.detail = e.local_detail().map(str::to_string);
        }
        match result {
            Ok(outcome) => outcome.into(),
            Err(failure) => failure.into_output(),
        }
    }

    #[inline(always)]
    fn act(
        &self,
        action: ActionRef<'_>,
        caller: &Caller,
        target: &mut Option<Arc<Bound>>,
        local: Option<&mut Local>,
    ) -> Result<Outcome, Failure> {
        if let ActionRef::Call {
            binding,
            arguments,
            recording_session_id,
            project_target,
        } = action
        {
            return self.call(
                binding,
                arguments,
                recording_session_id,
                (caller, project_target),
                target,
            );
        }
        if let ActionRef::Describe {
            project: Some(_), ..
        } = action
        {
            if !caller.has(Scope::ProjectRead) {
                return Err(Failure::Error(project::insufficient(
                    "action `describe` with a `project` needs scope project:read (besides \
                     plugin:inspect)",
                )));
            }
        }
        let runner = match action {
            ActionRef::List { runner: None, .. } => return Ok(output::runners(self.listing())),
            ActionRef::List {
                runner: Some(runner),
                ..
            }
            | ActionRef::Describe { runner, .. }
            | ActionRef::Check { runner, .. }
            | ActionRef::Reload { runner, .. }
            | ActionRef::Catalog { runner, .. } => runner,
            ActionRef::Call { .. } => unreachable!("handled above"),
        };
        match self.route(runner)? {
            (Runner::Local(host), generation) => {
                Ok(self.act_local((&host, generation), runner, action, local)?)
            }
            (Runner::Remote(remote), _) => self.act_remote(&remote, runner, action),
        }
    }

    /// The runners as `list` shows them: `(id, display name)`; a local runner has no name.
    fn listing(&self) -> Vec<(String, Option<String>)> {
        self.runners
            .read()
            .iter()
            .map(|(id, runner)| match runner {
                Runner::Local(_) => (id.clone(), None),
                Runner::Remote(remote) => (id.clone(), Some(remote.name().to_string())),
            })
            .collect()
    }

    /// Every action but `call` and the runner list, on a host in this process.
    fn act_local(
        &self,
        (host, generation): (&Arc<Host>, u64),
        runner: &str,
        action: ActionRef<'_>,
        local: Option<&mut Local>,
    ) -> Result<Outcome, Error> {
        match action {
            ActionRef::List { plugin: None, .. } => {
                let set = host.providers();
                Ok(output::providers(runner, set.entries()))
            }
            ActionRef::List {
                plugin: Some(plugin),
                ..
            } => {
                let set = host.providers();
                let entry = set.entry(plugin).ok_or_else(crate::host::not_configured)?;
                Ok(output::provider_detail(entry))
            }
            ActionRef::Describe {
                plugin,
                tool,
                project,
                ..
            } => self.describe((host, generation), runner, (plugin, tool), project),
            ActionRef::Check { plugin, .. } => {
                let report = host.check(plugin)?;
                let output = output::check(runner, &report);
                if let Some(local) = local {
                    local.detail = report.local_detail().map(str::to_string);
                    local.check_stderr = report.stderr;
                }
                Ok(output)
            }
            ActionRef::Reload { .. } => {
                let report = host.reload()?;
                Ok(output::reload(runner, &report))
            }
            ActionRef::Catalog { project, .. } => {
                let catalog =
                    host.project_catalog(Path::new(project), DEFAULT_PROJECT_CATALOG_BYTES)?;
                Ok(output::catalog(runner, catalog))
            }
            ActionRef::Call { .. } => unreachable!("calls are routed by their binding"),
        }
    }

    fn describe(
        &self,
        (host, generation): (&Arc<Host>, u64),
        runner: &str,
        (plugin, tool): (&str, &str),
        project: Option<&str>,
    ) -> Result<Outcome, Error> {
        let (provider, tool, instance, bound) = host.tool_bound(plugin, tool, project)?;
        let described = match (project, &bound) {
            (Some(project), Some(bound)) => Some(DescribedProject::new(project, bound.id())),
            _ => None,
        };
        let target = BindingTarget {
            runner: runner.to_string(),
            runner_id: host.runner_id(),
            plugin: provider.id().to_string(),
            instance: provider.instance(),
            tool: tool.name().to_string(),
            observation: tool.observation().to_string(),
            project: bound,
        };
        let host = Arc::downgrade(host);
        let reach = Reach {
            generation,
            host,
            instance,
        };
        let binding = self.mint(Bound::Local(target, Some(reach)))?;
        Ok(output::describe(
            runner, &provider, tool, binding, described,
        ))
    }

    /// Stores `bound` under a fresh binding (or seals it, when this gateway seals); its wire
    /// form.
    fn mint(&self, bound: Bound) -> Result<String, Error> {
        if let Some(sealed) = self.seal(&bound) {
            return sealed;
        }
        self.bindings
            .insert(bound)
            .map(|b| b.encode())
            .ok_or_else(|| {
                Error::not_started(
                    ErrorCode::Internal,
                    "the gateway could not create a binding (no system randomness); try again",
                )
            })
    }

    /// Calls exactly the instance a binding recorded; never re-resolves to a same-named tool.
    /// A project-bound binding first needs `project:write` and a project root that did not
    /// change (`project`).
    #[inline(always)]
    fn call(
        &self,
        binding: &str,
        arguments: &Value,
        recording_session_id: Option<&str>,
        (caller, project_target): (&Caller, Option<&str>),
        seen: &mut Option<Arc<Bound>>,
    ) -> Result<Outcome, Failure> {
        let bound = self.bound(binding)?;
        // Kept for the recording hook, which only a call with a session id reaches.
        *seen = recording_session_id.map(|_| bound.clone());
        note_bound(&bound);
        let (target, reach) = match &*bound {
            Bound::Local(target, reach) => (target, reach),
            Bound::Remote(target) => {
                let call = BoundCall {
                    caller,
                    arguments,
                    recording_session_id,
                    project_target,
                };
                return self.call_remote(target, call);
            }
        };
        if target.project.is_some() || project_target.is_some() {
            project::check_local(caller, target.project.as_ref(), project_target)?;
        }
        // The host the binding reached, held before the runners' count is compared: it is the
        // one registered under its runner name while no runner changed.
        let held = reach
            .as_ref()
            .and_then(|r| Some((r.host.upgrade()?, r.generation)));
        let host = match held {
            Some((host, generation)) if self.generation.load(Ordering::SeqCst) == generation => {
                host
            }
            _ => self
                .runner(&target.runner)
                .filter(|h| h.runner_id() == target.runner_id)
                .ok_or_else(replaced)?,
        };
        let result = match reach
            .as_ref()
            .and_then(|r| host.call_bound(&r.instance, arguments))
        {
            Some(result) => result,
            None => host.call_instance(
                InstanceCall::new(&target.plugin, target.instance, &target.tool, arguments)
                    .observation(&target.observation),
            ),
        };
        result.map(Outcome::Called).map_err(|e| match e.code() {
            ErrorCode::StaleProvider => replaced().into(),
            _ => e.into(),
        })
    }

    /// The runner registered under `runner`, and the runners' count read with it.
    fn route(&self, runner: &str) -> Result<(Runner, u64), Error> {
        let runners = self.runners.read();
        let generation = self.generation.load(Ordering::SeqCst);
        let found = runners.get(runner).cloned().ok_or_else(|| {
            Error::not_started(
                ErrorCode::RunnerNotFound,
                "no runner with that name; list to see the runners",
            )
        })?;
        Ok((found, generation))
    }

    fn record(
        &self,
        action: ActionRef<'_>,
        session_id: &str,
        target: Option<&Bound>,
        result: &Result<Outcome, Failure>,
    ) {
        let Some(hook) = self.hook.read().clone() else {
            return;
        };
        let (runner, plugin, tool) = match action {
            ActionRef::Call { .. } => match target.map(Bound::names) {
                Some((runner, plugin, tool)) => (Some(runner), Some(plugin), Some(tool)),
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
            error_code: result.as_ref().err().and_then(Failure::code),
        };
        if catch_unwind(AssertUnwindSafe(|| hook(&event))).is_err() {
            log::error!("the recording hook panicked; the event was dropped");
        }
    }
}

/// A fresh random instance id: 32 hex digits.
fn instance_id() -> String {
    let mut bytes: [u8; 16] = crate::random_bytes().unwrap_or_default();
    if bytes == [0; 16] {
        // No system randomness: a digest of the time and the address of a local, which still
        // changes from one process to the next and reveals neither.
        use sha2::{Digest, Sha256};
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let digest = Sha256::digest(format!("{nanos}:{:p}", &bytes).as_bytes());
        bytes.copy_from_slice(&digest[..16]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn replaced() -> Error {
    Error::not_started(
        ErrorCode::Replaced,
        "the provider or runner was replaced since the tool was described; list and describe again",
    )
}

mod forward;

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
