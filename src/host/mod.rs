//! One runner's committed provider set: eager parallel startup, check, reload, shutdown and the
//! project catalog.
//!
//! The committed set is an immutable [`ProviderSet`] behind an atomic pointer swap: readers
//! clone an `Arc` and never wait for a check or reload. Check and reload share one candidate
//! gate (a try-lock): a second one is refused with `plugin_check_busy` / `plugin_reload_busy`.
//! An instance replaced by a reload is not killed under its in-flight calls: its process tree
//! is killed when its last user lets go. Providers under `restart = "on-failure"` are started
//! again after a fault by the restart policy (`restart`), one entry of the committed set at a
//! time and never while a reload runs.

mod call;
mod project;
mod restart;
mod root;
mod set;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde_json::Value;

pub(crate) use call::BoundInstance;
pub use call::InstanceCall;
pub use project::{
    valid_project_target, ProjectCatalog, ProjectTarget, ProjectTool,
    DEFAULT_PROJECT_CATALOG_BYTES, PROJECT_TARGET_PREFIX,
};
pub use restart::{RESTART_BACKOFF_BASE, RESTART_BACKOFF_CAP, RESTART_RESET_AFTER};
pub use set::{ProviderEntry, ProviderSet, ProviderState};

use crate::catalog::{Diagnostic, Tool, ToolResult};
use crate::env::{
    load_runner_config, prepare_candidate_environment, resolve_executable, ProviderConfig,
    RunnerConfig, SecretNames, DEFAULT_MAX_PROVIDERS,
};
use crate::error::{Error, ErrorCode, Phase};
use crate::provider::{
    stderr_tail, AdmissionCancel, LaunchSpec, Provider, ProviderSpec, StderrLine, StderrRing,
};

/// Where a host reads its runner configuration (again at every check and reload).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ConfigSource {
    /// A runner.toml file, re-read by check and reload.
    File(PathBuf),
    /// A configuration held in memory (embedders, the demo, ad-hoc benches).
    Fixed(RunnerConfig),
}

/// Host knobs for embedders.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// Most providers per runner (default 8). Raising it is an explicit embedder decision.
    pub max_providers: usize,
    /// The base environment plugins start from; `None` = the host's own environment, read at
    /// each preparation.
    pub base_env: Option<Vec<(OsString, OsString)>>,
    /// Variable names removed from every plugin's environment besides the fixed sensitive ones,
    /// compared ASCII case-insensitively (a front passes the `token_env` names of its runners
    /// file, so no runner token reaches a local plugin).
    pub secret_variables: Vec<String>,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            max_providers: DEFAULT_MAX_PROVIDERS,
            base_env: None,
            secret_variables: Vec::new(),
        }
    }
}

/// The result of `check(plugin)`: a disposable candidate's admission, never a tools/call.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// The provider id.
    pub plugin: String,
    /// True when the candidate was admitted.
    pub ready: bool,
    /// `ready`, or the phase that failed.
    pub phase: Phase,
    /// Admitted tools (name, title), empty when not ready.
    pub tools: Vec<(String, Option<String>)>,
    /// The admitted catalog's digest (`sha256:…`), when ready.
    pub catalog_digest: Option<String>,
    /// The failure, when not ready.
    pub error: Option<Error>,
    /// The candidate's stderr (local operators only; never shown to plugin_tool callers).
    pub stderr: Vec<StderrLine>,
}

impl CheckReport {
    /// The admission diagnostic, when the tool list was rejected.
    pub fn diagnostic(&self) -> Option<&Diagnostic> {
        self.error.as_ref().and_then(|e| e.diagnostic())
    }

    /// The failure's [`Error::local_detail`], for the local operator only.
    pub fn local_detail(&self) -> Option<&str> {
        self.error.as_ref().and_then(|e| e.local_detail())
    }
}

/// The result of a reload: the set now committed and, when it was kept, why.
#[derive(Debug, Clone)]
pub struct ReloadReport {
    /// True when the candidate set was committed.
    pub committed: bool,
    /// The committed set after the reload (the old one when not committed).
    pub providers: Arc<ProviderSet>,
    /// The candidates that failed, `(provider id, error)`.
    pub failures: Vec<(String, Error)>,
}

/// One runner: a committed provider set and the operations on it.
#[derive(Debug)]
pub struct Host {
    runner: RunnerId,
    source: ConfigSource,
    options: HostOptions,
    committed: Arc<RwLock<Arc<ProviderSet>>>,
    /// Counts the committed sets (changed under `committed`'s write lock, before the set): a
    /// [`BoundInstance`] of an older one is looked up again.
    generation: Arc<AtomicU64>,
    gate: Mutex<()>,
    stopping: Arc<AtomicBool>,
    /// Set by [`Host::close_reloads`]: no reload may commit or start any more.
    reloads_closed: AtomicBool,
    /// The cancel handle of the check or reload preparing candidates now (at most one: they
    /// share the gate), and which of the two it is. Shutdown cancels it.
    candidates: Mutex<Option<(AdmissionCancel, Preparing)>>,
    /// The restart policy's threads and state (`restart = "on-failure"`).
    restarts: restart::Restarts,
}

/// What is preparing candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preparing {
    Check,
    Reload,
}

/// A unique id of one host (runner) instance, never reused in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunnerId(u64);

impl RunnerId {
    fn next() -> RunnerId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        RunnerId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl Host {
    /// Reads the configuration and starts every provider eagerly, in parallel.
    ///
    /// An invalid configuration is an error (nothing starts); a provider that fails admission is
    /// listed as failed and does not block the others.
    pub fn start(source: ConfigSource, options: HostOptions) -> Result<Host, Error> {
        let config = read_config(&source, &options)?;
        Ok(Host::start_config(source, options, config))
    }

    /// Reads and validates the whole configuration as [`Host::start`] does (an invalid one is an
    /// error and nothing starts), then starts only the provider `id`: the committed set holds
    /// it alone (an id the configuration lacks starts nothing). For a one-shot command that
    /// addresses one provider, which must neither wait for nor hear about the others.
    pub fn start_one(source: ConfigSource, options: HostOptions, id: &str) -> Result<Host, Error> {
        let mut config = read_config(&source, &options)?;
        config.plugins.providers.retain(|p| p.id == id);
        Ok(Host::start_config(source, options, config))
    }

    /// Starts every provider of `config` (read from `source`) in parallel.
    fn start_config(source: ConfigSource, options: HostOptions, config: RunnerConfig) -> Host {
        let results = prepare_all(&config, &options, &AdmissionCancel::new());
        let set = ProviderSet::from_results(&config, results);
        set.log_started();
        let host = Host::with_set(source, options, set);
        host.restarts.adopt(&config, &host.providers());
        host
    }

    /// Validates the configuration without starting any provider: the committed set is empty.
    /// For tools that only `check` (a check re-reads the configuration anyway).
    pub fn configured(source: ConfigSource, options: HostOptions) -> Result<Host, Error> {
        read_config(&source, &options)?;
        Ok(Host::with_set(source, options, ProviderSet::empty()))
    }

    fn with_set(source: ConfigSource, options: HostOptions, set: ProviderSet) -> Host {
        let committed = Arc::new(RwLock::new(Arc::new(set)));
        let generation = Arc::new(AtomicU64::new(0));
        let stopping = Arc::new(AtomicBool::new(false));
        let restarts = restart::Restarts::new(restart::Shared::new(
            committed.clone(),
            generation.clone(),
            stopping.clone(),
            options.clone(),
        ));
        Host {
            runner: RunnerId::next(),
            source,
            options,
            committed,
            generation,
            gate: Mutex::new(()),
            stopping,
            reloads_closed: AtomicBool::new(false),
            candidates: Mutex::new(None),
            restarts,
        }
    }

    /// Restarts the restart policy started so far (each a new process, admitted or not), by
    /// provider id: every provider of the committed configuration with
    /// `restart = "on-failure"` (0 until its first restart).
    pub fn restart_counts(&self) -> Vec<(String, u64)> {
        self.restarts.counts()
    }

    /// This runner instance's id (changes when the host restarts).
    pub fn runner_id(&self) -> RunnerId {
        self.runner
    }

    /// The committed provider set (a cheap snapshot).
    pub fn providers(&self) -> Arc<ProviderSet> {
        self.committed.read().clone()
    }

    /// The committed, ready provider with this id.
    pub fn provider(&self, id: &str) -> Result<Arc<Provider>, Error> {
        self.providers().ready(id)
    }

    /// Looks up a tool of a committed provider (for describe).
    pub fn tool(&self, plugin: &str, tool: &str) -> Result<(Arc<Provider>, Tool), Error> {
        let provider = self.provider(plugin)?;
        let found = provider.catalog().get(tool).cloned().ok_or_else(|| {
            Error::not_started(
                ErrorCode::ToolUnavailable,
                "the provider has no tool with that name",
            )
        })?;
        Ok((provider, found))
    }

    /// [`Host::tool`], and what a binding keeps to call them again ([`Host::call_bound`]);
    /// with a `project`, also the project target the binding is bound to (the checks of
    /// `plugin_project_unavailable` and `plugin_project_mismatch`), from the same committed
    /// set as the instance.
    pub(crate) fn tool_bound(
        &self,
        plugin: &str,
        tool: &str,
        project: Option<&str>,
    ) -> Result<(Arc<Provider>, Tool, BoundInstance, Option<ProjectTarget>), Error> {
        let (set, generation) = {
            let committed = self.committed.read();
            (committed.clone(), self.generation.load(Ordering::SeqCst))
        };
        let provider = set.ready(plugin)?;
        let (place, found) = provider.catalog().find(tool).ok_or_else(|| {
            Error::not_started(
                ErrorCode::ToolUnavailable,
                "the provider has no tool with that name",
            )
        })?;
        let found = found.clone();
        let target = match (project, set.entry(plugin)) {
            (Some(project), Some(entry)) => Some(project::bind(entry, project)?),
            _ => None,
        };
        let bound = BoundInstance {
            generation,
            provider: Arc::downgrade(&provider),
            tool: place,
        };
        Ok((provider, found, bound, target))
    }

    /// [`Host::call_instance`] of the instance and tool a binding kept, with the provider's
    /// timeout, while the set they were found in is still committed; `None` when it is not (or
    /// the instance is gone): the caller then looks them up with [`Host::call_instance`]. The
    /// instance is held before the set is compared, as `call_instance` holds the one it finds.
    pub(crate) fn call_bound(
        &self,
        bound: &BoundInstance,
        arguments: &Value,
    ) -> Option<Result<ToolResult, Error>> {
        let provider = bound.provider.upgrade()?;
        if self.generation.load(Ordering::SeqCst) != bound.generation {
            return None;
        }
        if provider.is_retired() {
            return Some(Err(set::unavailable()));
        }
        let timeout = provider.timeout();
        Some(provider.call_tool(
            |p| {
                p.catalog()
                    .tools()
                    .get(bound.tool)
                    .ok_or_else(set::unavailable)
            },
            arguments,
            timeout,
        ))
    }

    /// Calls a tool of the committed provider `plugin` with its configured timeout.
    pub fn call(&self, plugin: &str, tool: &str, arguments: &Value) -> Result<ToolResult, Error> {
        let provider = self.provider(plugin)?;
        provider.call(tool, arguments)
    }

    /// Calls a tool on the exact provider `instance` (as recorded by a binding); a replaced or
    /// removed instance is `stale_plugin_provider`, a retired one `plugin_provider_unavailable`.
    pub fn call_instance(&self, call: InstanceCall<'_>) -> Result<ToolResult, Error> {
        let provider = self.providers().instance(call.plugin, call.instance)?;
        let timeout = call.timeout.unwrap_or_else(|| provider.timeout());
        provider.call_checked(call.tool, call.observation, call.arguments, timeout)
    }

    /// Re-reads the configuration and admits only `plugin` as a disposable candidate: never a
    /// tools/call, its process tree always killed, the committed set untouched. A bad plugin,
    /// and an id that is not configured (`plugin_not_configured`, phase `config`), is a report
    /// with `ready == false`; only a busy gate or a stopping host is an error.
    pub fn check(&self, plugin: &str) -> Result<CheckReport, Error> {
        let _gate = self.gate.try_lock().ok_or_else(|| {
            Error::not_started(
                ErrorCode::CheckBusy,
                "another check or reload is running; try again when it finishes",
            )
        })?;
        self.ensure_running()?;
        let config = match read_config(&self.source, &self.options) {
            Ok(config) => config,
            Err(error) => return Ok(CheckReport::failed(plugin, error, Vec::new())),
        };
        let Some(cfg) = config.provider(plugin) else {
            let error = not_configured().in_phase(Phase::Config);
            return Ok(CheckReport::failed(plugin, error, Vec::new()));
        };
        let cancel = self.begin_candidates(Preparing::Check)?;
        let mut ring: Option<Arc<Mutex<StderrRing>>> = None;
        let result = prepare(&config, cfg, &self.options, &cancel, &mut |r| {
            ring = Some(r)
        })
        .map(|started| started.provider);
        self.end_candidates();
        let report = match result {
            Ok(candidate) => {
                let tools = candidate
                    .catalog()
                    .tools()
                    .iter()
                    .map(|t| (t.name().to_string(), t.title().map(str::to_string)))
                    .collect();
                let catalog_digest = Some(candidate.catalog().digest().to_string());
                let stderr = candidate.stderr_lines();
                drop(candidate);
                CheckReport {
                    plugin: plugin.to_string(),
                    ready: true,
                    phase: Phase::Ready,
                    tools,
                    catalog_digest,
                    error: None,
                    stderr,
                }
            }
            Err(error) => {
                let stderr = ring.map(|r| r.lock().lines()).unwrap_or_default();
                if !cancel.is_cancelled() {
                    // Info, not warn: a bad plugin is a successful check, and the local CLI
                    // prints the candidate's stderr itself.
                    log_admission_failure(log::Level::Info, true, plugin, &error, &stderr);
                }
                CheckReport::failed(plugin, error, stderr)
            }
        };
        if self.stopping.load(Ordering::Acquire) {
            return Err(host_stopping());
        }
        Ok(report)
    }

    /// Registers a fresh cancel handle for the candidates about to be prepared; fails when the
    /// host is stopping (or, for a reload, when reloads are closed). Shutdown stores its flag
    /// before it looks at the handle, and this checks the flags under the same lock, so no
    /// candidate is missed.
    fn begin_candidates(&self, preparing: Preparing) -> Result<AdmissionCancel, Error> {
        let mut current = self.candidates.lock();
        if self.stopping.load(Ordering::Acquire)
            || (preparing == Preparing::Reload && self.reloads_closed.load(Ordering::Acquire))
        {
            return Err(host_stopping());
        }
        let cancel = AdmissionCancel::new();
        *current = Some((cancel.clone(), preparing));
        Ok(cancel)
    }

    /// True when a reload may no longer commit.
    fn reload_cut_short(&self) -> bool {
        self.stopping.load(Ordering::Acquire) || self.reloads_closed.load(Ordering::Acquire)
    }

    /// The candidates are prepared: shutdown no longer needs to cancel them.
    fn end_candidates(&self) {
        *self.candidates.lock() = None;
    }

    /// Re-reads the configuration, prepares the complete candidate set in parallel and commits it
    /// only if every candidate was admitted; otherwise the old set stays and the failures are
    /// reported. Every provider restarts, even when nothing changed.
    pub fn reload(&self) -> Result<ReloadReport, Error> {
        let _gate = self.gate.try_lock().ok_or_else(|| {
            Error::not_started(
                ErrorCode::ReloadBusy,
                "another check or reload is running; try again when it finishes",
            )
        })?;
        self.ensure_running()?;
        // Pending and preparing restarts are cancelled; they are decided afresh at the end.
        let restarts = self.restarts.reload_begins();
        let config = read_config(&self.source, &self.options)?;
        let cancel = self.begin_candidates(Preparing::Reload)?;
        let results = prepare_all(&config, &self.options, &cancel);
        self.end_candidates();
        if self.reload_cut_short() {
            // Shutdown began while candidates were prepared: they are dropped (killed) here.
            drop(results);
            return Err(host_stopping());
        }
        let failures: Vec<(String, Error)> = config
            .plugins
            .providers
            .iter()
            .zip(results.iter())
            .filter_map(|(cfg, r)| r.as_ref().err().map(|e| (cfg.id.clone(), e.clone())))
            .collect();
        if !failures.is_empty() {
            // Candidates are dropped here: their process trees are killed.
            drop(results);
            return Ok(ReloadReport {
                committed: false,
                providers: self.providers(),
                failures,
            });
        }
        let new_set = Arc::new(ProviderSet::from_results(&config, results));
        new_set.log_started();
        let old = {
            let mut committed = self.committed.write();
            if self.reload_cut_short() {
                drop(committed);
                new_set.stop_all();
                return Err(host_stopping());
            }
            self.generation.fetch_add(1, Ordering::SeqCst);
            std::mem::replace(&mut *committed, new_set.clone())
        };
        restarts.committed(&config, &new_set);
        // Old instances are retired only when their last in-flight user lets go; those nobody
        // uses are all signalled first, so their teardowns overlap instead of queueing.
        old.stop_unused();
        Ok(ReloadReport {
            committed: true,
            providers: new_set,
            failures: Vec::new(),
        })
    }

    /// The first half of [`Host::shutdown`]: refuses new checks and reloads and kills the
    /// candidates a running check or reload is preparing, at once (that reload never commits).
    /// Committed providers keep serving, so in-flight calls can finish. Idempotent.
    pub fn begin_shutdown(&self) {
        self.stopping.store(true, Ordering::Release);
        self.restarts.stop();
        if let Some((cancel, _)) = self.candidates.lock().as_ref() {
            cancel.cancel();
        }
    }

    /// The input of a stdio front ended: no request follows, and those already read are served.
    /// A reload preparing candidates now has them killed at once and never commits (the exit
    /// must not wait for its candidates' handshakes); a later reload is refused with
    /// `plugin_manager_stopping`. Checks and calls go on normally. Idempotent.
    pub fn close_reloads(&self) {
        self.reloads_closed.store(true, Ordering::Release);
        if let Some((cancel, Preparing::Reload)) = self.candidates.lock().as_ref() {
            cancel.cancel();
        }
    }

    /// Stops every provider: waiting requests end with `plugin_manager_stopping`, process groups
    /// are killed and reaped (bounded). Does not wait for a running check or reload: its
    /// candidates are killed at once and a reload in progress never commits afterwards.
    /// Idempotent; also run on drop.
    pub fn shutdown(&self) {
        self.begin_shutdown();
        let mut committed = self.committed.write();
        self.generation.fetch_add(1, Ordering::SeqCst);
        let old = std::mem::replace(&mut *committed, Arc::new(ProviderSet::empty()));
        drop(committed);
        old.stop_all();
        drop(old);
        self.restarts.join();
    }

    /// The project catalog for an absolute project root: tools of ready providers whose
    /// configured cwd canonicalizes to that root, bounded by `max_bytes` of serialized entries.
    /// No process I/O.
    pub fn project_catalog(
        &self,
        root: &std::path::Path,
        max_bytes: usize,
    ) -> Result<ProjectCatalog, Error> {
        project::build(&self.providers(), root, max_bytes)
    }

    fn ensure_running(&self) -> Result<(), Error> {
        if self.stopping.load(Ordering::Acquire) {
            Err(host_stopping())
        } else {
            Ok(())
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl CheckReport {
    fn failed(plugin: &str, error: Error, stderr: Vec<StderrLine>) -> CheckReport {
        CheckReport {
            plugin: plugin.to_string(),
            ready: false,
            phase: error.phase().unwrap_or(Phase::Config),
            tools: Vec::new(),
            catalog_digest: None,
            error: Some(error),
            stderr,
        }
    }
}

fn host_stopping() -> Error {
    Error::not_started(ErrorCode::HostStopping, "the plugin host is stopping")
}

pub(crate) fn not_configured() -> Error {
    Error::not_started(
        ErrorCode::NotConfigured,
        "no provider with that id is configured in this runner",
    )
}

fn read_config(source: &ConfigSource, options: &HostOptions) -> Result<RunnerConfig, Error> {
    match source {
        ConfigSource::File(path) => load_runner_config(path, options.max_providers),
        ConfigSource::Fixed(config) => {
            if config.plugins.providers.len() > options.max_providers {
                return Err(Error::not_started(
                    ErrorCode::ConfigInvalid,
                    format!(
                        "plugins.providers has more than {} entries",
                        options.max_providers
                    ),
                )
                .in_phase(Phase::Config));
            }
            Ok(config.clone())
        }
    }
}

/// A provider just admitted, and the directory it was started in (see `root`).
pub(crate) struct Started {
    pub(crate) provider: Provider,
    pub(crate) root: Option<Arc<root::Pin>>,
}

/// Prepares every provider of `config` in parallel, one thread each; results in config order.
fn prepare_all(
    config: &RunnerConfig,
    options: &HostOptions,
    cancel: &AdmissionCancel,
) -> Vec<Result<Started, Error>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = config
            .plugins
            .providers
            .iter()
            .map(|cfg| {
                std::thread::Builder::new()
                    .name(format!("wc-start-{}", cfg.id))
                    .spawn_scoped(scope, move || prepare_logged(config, cfg, options, cancel))
            })
            .collect();
        handles
            .into_iter()
            .map(|spawned| match spawned {
                Ok(handle) => handle.join().unwrap_or_else(|_| {
                    Err(
                        Error::not_started(ErrorCode::SpawnFailed, "provider preparation panicked")
                            .in_phase(Phase::Spawn),
                    )
                }),
                Err(_) => Err(Error::not_started(
                    ErrorCode::SpawnFailed,
                    "could not start a thread to prepare the provider",
                )
                .in_phase(Phase::Spawn)),
            })
            .collect()
    })
}

/// [`prepare`] for a startup or reload candidate: a failed admission is logged at warn for
/// the operator (id, phase, code, stderr tail), unless the host is stopping.
fn prepare_logged(
    config: &RunnerConfig,
    cfg: &ProviderConfig,
    options: &HostOptions,
    cancel: &AdmissionCancel,
) -> Result<Started, Error> {
    let mut ring: Option<Arc<Mutex<StderrRing>>> = None;
    let result = prepare(config, cfg, options, cancel, &mut |r| ring = Some(r));
    if let Err(error) = &result {
        if !cancel.is_cancelled() {
            let lines = ring.map(|r| r.lock().lines()).unwrap_or_default();
            log_admission_failure(log::Level::Warn, false, &cfg.id, error, &lines);
        }
    }
    result
}

/// environment → executable → spawn → initialize → tools/list → validate → freeze. The `cwd`
/// is pinned just before the spawn: a directory put in its place later is not the one the
/// plugin works in.
fn prepare(
    config: &RunnerConfig,
    cfg: &ProviderConfig,
    options: &HostOptions,
    cancel: &AdmissionCancel,
    observe: &mut dyn FnMut(Arc<Mutex<StderrRing>>),
) -> Result<Started, Error> {
    let base = match &options.base_env {
        Some(vars) => vars.clone(),
        None => std::env::vars_os().collect(),
    };
    let secrets = SecretNames::with_extra(&options.secret_variables);
    let env = prepare_candidate_environment(&config.shell, cfg, base, &secrets, cancel)?;
    let program = resolve_executable(&cfg.command, &env, cfg.cwd.as_deref())?;
    let spec = ProviderSpec {
        id: cfg.id.clone(),
        name: cfg.name.clone(),
        launch: LaunchSpec {
            program,
            args: cfg.args.clone(),
            cwd: cfg.cwd.clone(),
            env,
        },
        timeout: cfg.timeout,
    };
    let root = cfg
        .cwd
        .as_deref()
        .and_then(|cwd| root::Pin::open(cwd).ok())
        .map(Arc::new);
    Provider::start_cancellable(spec, observe, cancel).map(|provider| Started { provider, root })
}

/// Logs a failed admission of provider `id` at `level` with the tail of its stderr `lines`
/// (`check` names the candidate of a check).
fn log_admission_failure(
    level: log::Level,
    check: bool,
    id: &str,
    error: &Error,
    lines: &[StderrLine],
) {
    let phase = error.phase().map_or("spawn", |p| p.as_str());
    let what = if check { "check candidate" } else { "provider" };
    let detail = error.local_detail().unwrap_or("");
    log::log!(
        level,
        "plugin {what} {id:?} failed admission: phase {phase}, code {}{}{detail}; stderr \
         tail: {}",
        error.code().as_str(),
        if detail.is_empty() { "" } else { ": " },
        stderr_tail(lines)
    );
}
