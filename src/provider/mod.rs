//! One plugin process: spawn, admission, calls and termination.
//!
//! A plugin is a separate program on the other end of two pipes. It can stop reading, stop
//! answering, answer garbage, flood stderr, die halfway or leave grandchildren behind, and the
//! caller must still learn, within its deadline, whether its request may have taken effect.
//!
//! Each [`Provider`] runs its plugin in a process group of its own (a Job Object on Windows,
//! `process`) with a writer, a stdout reader and a stderr drain that also watches the exit
//! (`io`). The calling thread is the coordinator (`session`): it takes the session with a
//! try-lock (a second caller gets `plugin_provider_busy`), arms one deadline before encoding
//! and waits on this build's response path (`direct` on Linux, `portable` elsewhere). One pure
//! function classifies every failure (`fault`); a failure that may leave the connection out of
//! step retires the instance, in one place (`Connection::settle`), and a retired instance is
//! never respawned. The exit watch retires and reaps an exited plugin at once.
//!
//! Caveats (docs/DECISIONS.md D-PROV-5, D-PROV-6): grandchildren that leave the process group
//! (`setsid`) escape the group kill and do not inherit the parent-death signal; termination waits
//! at most [`TERMINATION_BOUND`] for the group to empty.

#[cfg(all(target_os = "linux", not(webcodex_portable_wait)))]
mod direct;
mod event;
mod fault;
mod io;
#[cfg(any(not(target_os = "linux"), webcodex_portable_wait))]
mod portable;
mod process;
mod session;
mod stderr_ring;
mod stdout_buffer;

/// The response path of this build: the direct read on Linux, the portable path elsewhere and
/// under the test-only `webcodex_portable_wait` cfg.
#[cfg(all(target_os = "linux", not(webcodex_portable_wait)))]
use direct as imp;
#[cfg(any(not(target_os = "linux"), webcodex_portable_wait))]
use portable as imp;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

pub use crate::spawn::AdmissionCancel;
use crate::spawn::Cancellable;
pub use io::FORCE_EXIT_WAITER_ENV;
pub use process::retirement_counts;
pub use process::LaunchSpec;
pub(crate) use stderr_ring::stderr_tail;
pub use stderr_ring::{StderrLine, StderrRing};
pub use stderr_ring::{
    FAULT_LOG_STDERR_LINES, STDERR_MAX_LINES, STDERR_MAX_LINE_BYTES, STDERR_MAX_TOTAL_BYTES,
};

use crate::catalog::{
    admit_initialize, admit_tools_list, rejected_tools_list, CallReply, FrozenCatalog, Tool,
    ToolResult,
};
use crate::error::{Dispatch, Error, ErrorCode, Phase};
use crate::frame::{RequestEncoder, ResponseLine};
use event::EventSender;
use fault::{classify, RequestKind};
use io::{Event, IdleWatch, ThreadSet};
use process::PluginProcess;
use session::{any_response, Session};
use stderr_ring::Retirement;

/// How long termination may wait for the process group to empty.
pub const TERMINATION_BOUND: Duration = Duration::from_secs(1);

/// The response path this build was compiled with (for tests and measurements): `direct` or
/// `portable`.
pub fn response_wait_mode() -> &'static str {
    imp::NAME
}

/// A unique id of one provider instance (one spawned process), never reused in this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceId(u64);

impl InstanceId {
    fn next() -> InstanceId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        InstanceId(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The raw number (local use only: never shown to plugin_tool callers).
    pub fn get(self) -> u64 {
        self.0
    }
}

/// Everything needed to start one provider.
#[derive(Debug, Clone)]
pub struct ProviderSpec {
    /// Provider id (`^[a-z0-9_.-]{1,64}$`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// The process to run.
    pub launch: LaunchSpec,
    /// Total budget of each request.
    pub timeout: Duration,
}

/// A live, admitted plugin instance with its frozen catalog.
///
/// Dropping the last handle kills the process group, joins the I/O threads and reaps the
/// process, all bounded by `TERMINATION_BOUND` (one second).
#[derive(Debug)]
pub struct Provider {
    id: String,
    name: String,
    instance: InstanceId,
    timeout: Duration,
    catalog: FrozenCatalog,
    connection: Connection,
}

/// The process, its threads and the coordinator session.
#[derive(Debug)]
struct Connection {
    process: Arc<PluginProcess>,
    ring: Arc<Mutex<StderrRing>>,
    /// Tells the exit watch whether the plugin is admitted and idle (an exit then is logged).
    idle: Arc<IdleWatch>,
    session: Mutex<Option<Session>>,
    stop: EventSender,
    threads: Option<ThreadSet>,
    /// What the response path shares across requests (the Linux direct read: stdout's port).
    path: imp::ResponsePath,
}

impl Provider {
    /// Spawns the plugin and admits it: initialize → tools/list → validate → freeze.
    ///
    /// Failures carry their [`Phase`]; the process group is always killed on failure.
    pub fn start(spec: ProviderSpec) -> Result<Provider, Error> {
        Provider::start_cancellable(spec, &mut |_| {}, &AdmissionCancel::new())
    }

    /// Like [`Provider::start`], and hands the stderr ring to `observe` as soon as it exists
    /// (so a failed admission's stderr can still be shown to the operator), and ends at once
    /// when `cancel` is cancelled during admission: the plugin is killed and the error is
    /// `plugin_manager_stopping`, never a wait for its initialize or tools/list.
    pub(crate) fn start_cancellable(
        spec: ProviderSpec,
        observe: &mut dyn FnMut(Arc<Mutex<StderrRing>>),
        cancel: &AdmissionCancel,
    ) -> Result<Provider, Error> {
        if cancel.is_cancelled() {
            return Err(stopping().in_phase(Phase::Spawn));
        }
        let connection = Connection::open(&spec.id, &spec.launch)?;
        observe(connection.ring.clone());
        if !register_candidate(cancel, &connection) {
            return Err(stopping().in_phase(Phase::Spawn));
        }
        let catalog = connection.admit(spec.timeout)?;
        connection.idle.arm();
        Ok(Provider {
            id: spec.id,
            name: spec.name,
            instance: InstanceId::next(),
            timeout: spec.timeout,
            catalog,
            connection,
        })
    }

    /// The provider id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This instance's id.
    pub fn instance(&self) -> InstanceId {
        self.instance
    }

    /// The configured request timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The frozen catalog admitted at start.
    pub fn catalog(&self) -> &FrozenCatalog {
        &self.catalog
    }

    /// The plugin's process id, which is also its process group id (local operators and tests
    /// only; never shown to plugin_tool callers). After retirement the process is gone.
    pub fn process_id(&self) -> u32 {
        self.connection.process.pid()
    }

    /// True once the instance was retired (a fatal fault, its exit, or shutdown).
    pub fn is_retired(&self) -> bool {
        self.connection.process.is_retired()
    }

    /// Sends one `()` on `tell` once this instance is retired by a fault or by its plugin's
    /// exit, never when the host stops it (a reload, shutdown); at once when that happened.
    pub(crate) fn on_fault_retirement(&self, tell: crossbeam_channel::Sender<()>) {
        self.connection.process.on_fault_retirement(tell);
    }

    /// The recent stderr lines (local operators only; never shown to plugin_tool callers).
    pub fn stderr_lines(&self) -> Vec<StderrLine> {
        self.connection.ring.lock().lines()
    }

    /// Calls `tool` with `arguments` within the configured timeout.
    pub fn call(&self, tool: &str, arguments: &Value) -> Result<ToolResult, Error> {
        self.call_checked(tool, None, arguments, self.timeout)
    }

    /// Calls `tool`, first checking that its schema observation still equals `observation`
    /// (when given), with an explicit total `timeout`.
    ///
    /// Before the budget starts: retired check, catalog lookup, observation comparison,
    /// argument validation and the busy try-lock, all `not_started`. A failure that retires the
    /// instance is logged at warn (id, phase `call`, code, stderr tail) for the operator.
    pub fn call_checked(
        &self,
        tool: &str,
        observation: Option<&str>,
        arguments: &Value,
        timeout: Duration,
    ) -> Result<ToolResult, Error> {
        self.call_tool(|p| p.catalog.lookup(tool, observation), arguments, timeout)
    }

    /// [`Provider::call_checked`] of the tool that `tool` finds (in place of the lookup).
    pub(crate) fn call_tool<'p>(
        &'p self,
        tool: impl FnOnce(&'p Provider) -> Result<&'p Tool, Error>,
        arguments: &Value,
        timeout: Duration,
    ) -> Result<ToolResult, Error> {
        let in_call = self.connection.idle.in_call();
        let result = self.call_once(tool, arguments, timeout);
        drop(in_call);
        let result = result.map_err(|e| e.timed_out_after(timeout, timeout == self.timeout));
        if let Err(error) = &result {
            if error.is_fatal() {
                // Logged once stderr has closed, so the lines the plugin wrote as it died are
                // in the tail (or at once when it already has).
                let (id, phase, code) = (self.id.clone(), "call", error.code());
                let detail = error.local_detail().map(str::to_string);
                let retirement = Retirement {
                    id,
                    phase,
                    code,
                    detail,
                };
                stderr_ring::report(&self.connection.ring, retirement);
            }
        }
        result
    }

    fn call_once<'p>(
        &'p self,
        tool: impl FnOnce(&'p Provider) -> Result<&'p Tool, Error>,
        arguments: &Value,
        timeout: Duration,
    ) -> Result<ToolResult, Error> {
        if self.is_retired() {
            return Err(Error::not_started(
                ErrorCode::ProviderUnavailable,
                "the provider was retired after a fault; reload to start it again",
            ));
        }
        let tool = tool(self)?;
        let measured = Some(tool.check_arguments(arguments)?);
        let mut guard = self.connection.session.try_lock().ok_or_else(|| {
            Error::not_started(
                ErrorCode::ProviderBusy,
                "another request is running on this provider; try again when it finishes",
            )
        })?;
        let session = guard.as_mut().ok_or_else(stopping)?;
        let deadline = deadline_after(timeout);
        let answer = self.connection.round_trip(
            session,
            RequestKind::Call,
            deadline,
            |encoder, out| encoder.tools_call_measured(tool.call_head(), arguments, measured, out),
            |line, id| CallReply::read(line, id, || any_response(line, id)),
        );
        let answer = self.connection.settle(answer)?;
        drop(guard);
        let checked = answer.check(tool.output_schema())?;
        self.connection
            .settle(checked.map_err(|fault| fault.into_error().retiring()))
    }

    /// Announces shutdown: a waiting request ends with `plugin_manager_stopping`, the process
    /// group is killed. Does not wait; dropping the provider does the bounded cleanup.
    pub fn stop(&self) {
        let _ = self.connection.stop.try_send(Event::Stopping);
        self.connection.process.retire();
    }
}

/// What [`AdmissionCancel::cancel`] does to one provider candidate: tell a waiting request to
/// stop and kill the process group. Holds the process weakly, so a registration never keeps a
/// candidate alive.
struct CandidateKill {
    process: std::sync::Weak<PluginProcess>,
    stop: EventSender,
}

impl Cancellable for CandidateKill {
    fn cancel(&self) {
        if let Some(process) = self.process.upgrade() {
            let _ = self.stop.try_send(Event::Stopping);
            process.retire();
        }
    }

    fn is_gone(&self) -> bool {
        self.process.strong_count() == 0
    }
}

/// Registers `connection` with `cancel`; false (and the candidate is retired) when the batch is
/// already cancelled.
fn register_candidate(cancel: &AdmissionCancel, connection: &Connection) -> bool {
    let kill = CandidateKill {
        process: Arc::downgrade(&connection.process),
        stop: connection.stop.clone(),
    };
    if cancel.register(Box::new(kill)) {
        return true;
    }
    connection.process.retire();
    false
}

/// `now + timeout`, saturating far in the future instead of overflowing on huge timeouts.
fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600))
}

fn stopping() -> Error {
    Error::not_started(ErrorCode::HostStopping, "the plugin host is stopping")
}

impl Connection {
    fn open(id: &str, launch: &LaunchSpec) -> Result<Connection, Error> {
        let process = PluginProcess::spawn(launch).map_err(|e| {
            let os = e.raw_os_error().map(|os| format!(", os error {os}"));
            let message = format!(
                "the plugin process could not be started ({}{})",
                e.kind(),
                os.unwrap_or_default()
            );
            Error::not_started(ErrorCode::SpawnFailed, message).in_phase(Phase::Spawn)
        })?;
        let process = Arc::new(process);
        let stdio_failed = |process: &PluginProcess| {
            process.retire();
            Error::not_started(
                ErrorCode::SpawnFailed,
                "the plugin's stdio could not be set up",
            )
            .in_phase(Phase::Stdio)
        };
        let child = process.child();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.take_stdin(), child.take_stdout(), child.take_stderr())
        else {
            return Err(stdio_failed(&process));
        };
        let ring = Arc::new(Mutex::new(StderrRing::new()));
        #[allow(clippy::useless_conversion)] // to a descriptor on Unix, none on Windows
        let (path, response) =
            imp::ResponsePath::open(stdout.into()).map_err(|_| stdio_failed(&process))?;
        let idle = Arc::new(IdleWatch::new(id));
        let (channels, stop, threads) = io::start(
            id,
            &process,
            stdin,
            response,
            stderr,
            ring.clone(),
            idle.clone(),
        )
        .map_err(|_| stdio_failed(&process))?;
        Ok(Connection {
            process,
            ring,
            idle,
            session: Mutex::new(Some(Session::new(channels))),
            stop,
            threads: Some(threads),
            path,
        })
    }

    /// initialize → tools/list → validate → freeze, each request with its own budget. Any
    /// failure retires the candidate.
    fn admit(&self, timeout: Duration) -> Result<FrozenCatalog, Error> {
        let mut guard = self.session.lock();
        let session = guard.as_mut().ok_or_else(stopping)?;
        let admitted = self.admit_on(session, timeout);
        self.settle(admitted)
    }

    /// Sends one request built by `encode` on this build's response path and waits for the
    /// line that answers it until `deadline`, read by `read`; a failure comes back classified
    /// ([`fault::classify`]), for [`Connection::settle`] to retire the instance if it must.
    #[inline]
    fn round_trip<T>(
        &self,
        session: &mut Session,
        kind: RequestKind,
        deadline: Instant,
        encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
        read: impl FnMut(&ResponseLine, u64) -> Result<T, fault::Read>,
    ) -> Result<T, Error> {
        imp::round_trip(&self.path, session, deadline, encode, read)
            .map_err(|fault| classify(kind, fault).into_error())
    }

    /// initialize → tools/list → validate → freeze on `session`.
    fn admit_on(&self, session: &mut Session, timeout: Duration) -> Result<FrozenCatalog, Error> {
        let mut send = |phase, encode: &dyn Fn(&mut RequestEncoder, &mut Vec<u8>) -> u64| {
            let (kind, deadline) = (RequestKind::Admission, deadline_after(timeout));
            self.round_trip(session, kind, deadline, encode, any_response)
                .and_then(|(envelope, _)| envelope.into_result())
                .map_err(|e| admission_failure(e.timed_out_after(timeout, true), phase))
        };
        let initialize = send(Phase::Initialize, &|e, out| e.initialize(out))?;
        admit_initialize(&initialize).map_err(|e| admission_failure(e, Phase::Initialize))?;
        let tools = send(Phase::ToolsList, &|e, out| e.tools_list(out))?;
        admit_tools_list(&tools)
            .map_err(|d| admission_failure(rejected_tools_list(&tools, d), Phase::Validation))
    }

    /// The one place a request's failure retires the instance: when its error is marked
    /// retiring (the connection may be out of step, the result broke the contract, or
    /// admission failed). Hands `result` back, with how the plugin ended as the local detail of
    /// a `plugin_eof`; the retirement is counted under the error's code.
    fn settle<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        result.map_err(|error| {
            if !error.is_fatal() {
                return error;
            }
            // The plugin ended its stdout or exited by itself: how it ended (status, signal),
            // read before this host kills what is left, goes to the operator.
            let ended = (error.code() == ErrorCode::Eof)
                .then(|| self.process.await_exit(deadline_after(event::EXIT_GRACE)))
                .flatten();
            self.process.retire_on_fault(error.code());
            match ended {
                Some(how) => error.with_local_detail(how),
                None => error,
            }
        })
    }
}

/// Turns a request failure into an admission failure (not started, retiring) with a phase and
/// a message that tells the plugin author where to look.
fn admission_failure(error: Error, phase: Phase) -> Error {
    let hint = match error.code() {
        ErrorCode::MalformedJson | ErrorCode::ProtocolError | ErrorCode::UnexpectedMessage => {
            "; stdout must carry only protocol lines: check the command, its args and any build or log output printed to stdout"
        }
        ErrorCode::Eof => "; the plugin exited or closed stdout: check the command and its args",
        ErrorCode::Timeout => "; the plugin must answer initialize and tools/list promptly",
        _ => "",
    };
    let message = format!("{}{hint}", error.message());
    let mut out = Error::new(error.code(), Dispatch::NotStarted, message)
        .in_phase(phase)
        .retiring();
    if let Some(d) = error.diagnostic() {
        out = out.with_diagnostic(d.clone());
    }
    if let Some(detail) = error.local_detail() {
        out = out.with_local_detail(detail);
    }
    out
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.process.retire();
        // Dropping the session drops the job sender and the event receiver: the writer and any
        // blocked sender end.
        drop(self.session.get_mut().take());
        let deadline = Instant::now() + TERMINATION_BOUND;
        if let Some(threads) = self.threads.take() {
            threads.join_until(deadline);
        }
        self.process.reap(deadline);
        // stderr never closed (a grandchild that left the group may hold it): log what there is.
        let due = self.ring.lock().take_pending();
        if let Some((retirement, lines)) = due {
            retirement.log(&lines);
        }
    }
}
