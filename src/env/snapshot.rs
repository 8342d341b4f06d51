//! The prepared environment snapshot a plugin is started with.
//!
//! [`prepare_environment`] builds it in this order: the host's environment, `shell.path_prepend`
//! in front of PATH, `shell.env`, the profile's `env` (later wins). When the profile has an
//! `init_script`, the profile program runs it once and the environment it prints with `env -0`
//! after a unique marker line *replaces* what was built so far (PowerShell and cmd profiles get
//! their own script, [`dialect`]). Sensitive variables are removed before the script runs and
//! again from its output.
//!
//! The init_script runs in its own process group with a time limit; on timeout the whole group is
//! killed. Its stderr is only logged at debug level, and no error message ever carries the script
//! text, an environment value or stderr.
//!
//! Its stdout reader, stderr logger and exit watch are supervised as a plugin's I/O threads
//! are (`crate::spawn::ThreadSet`): bounded channels, and every thread joined within a bound
//! before the script's result is returned.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[cfg(unix)]
use crossbeam_channel::Receiver;
use crossbeam_channel::RecvTimeoutError;

#[cfg(unix)]
use parking_lot::Mutex;

use super::secrets::SecretNames;
use super::{ProfileConfig, ProviderConfig, ShellConfig};
use crate::error::{Dispatch, Error, ErrorCode, Phase, Result};
use crate::spawn::{AdmissionCancel, Cancellable, ThreadSet};

/// How long a profile's init_script may run.
pub const INIT_SCRIPT_LIMIT: Duration = Duration::from_secs(30);

/// The most init_script stdout the host accepts (chatter plus the environment).
const STDOUT_LIMIT: usize = 4 * 1024 * 1024;
/// The most init_script stderr kept for the debug log; the rest is read and discarded.
const STDERR_LIMIT: usize = 64 * 1024;
/// How long to wait for stdout to close after the script exited (a background process may still
/// hold it open).
const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// Stack of the init_script's reader and exit-watch threads.
const READER_STACK: usize = 64 * 1024;

/// An exact environment: the plugin gets these variables and no others.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EnvSnapshot {
    vars: Vec<(OsString, OsString)>,
}

impl EnvSnapshot {
    /// A snapshot of exactly these variables (sensitive ones removed), sorted by name; for a
    /// name given twice the last value wins.
    ///
    /// On Windows names are compared without regard to ASCII case (`Path` and `PATH` are one
    /// variable: the last spelling and value given win) and sorted by their upper case.
    pub fn from_vars(vars: impl IntoIterator<Item = (OsString, OsString)>) -> EnvSnapshot {
        EnvSnapshot::from_vars_without(vars, &SecretNames::default())
    }

    /// [`EnvSnapshot::from_vars`] that also removes the extra names of `secrets`.
    pub fn from_vars_without(
        vars: impl IntoIterator<Item = (OsString, OsString)>,
        secrets: &SecretNames,
    ) -> EnvSnapshot {
        let map: BTreeMap<OsString, (OsString, OsString)> = vars
            .into_iter()
            .filter(|(k, _)| !secrets.contains(k))
            .map(|(k, v)| (name_key(&k).into_owned(), (k, v)))
            .collect();
        EnvSnapshot {
            vars: map.into_values().collect(),
        }
    }

    /// The value of one variable, by exact name (on Windows, by name in any ASCII case).
    pub fn get(&self, key: &str) -> Option<&OsStr> {
        let key = name_key(OsStr::new(key));
        self.vars
            .binary_search_by(|(k, _)| name_key(k).cmp(&key))
            .ok()
            .map(|i| self.vars[i].1.as_os_str())
    }

    /// Every variable, sorted by name.
    pub fn vars(&self) -> &[(OsString, OsString)] {
        &self.vars
    }
}

/// The form of a variable name that snapshots compare: the name itself on Unix, its ASCII upper
/// case on Windows, where environment names are case-insensitive.
#[cfg(unix)]
fn name_key(name: &OsStr) -> Cow<'_, OsStr> {
    Cow::Borrowed(name)
}

/// The form of a variable name that snapshots compare: the name itself on Unix, its ASCII upper
/// case on Windows, where environment names are case-insensitive.
#[cfg(windows)]
fn name_key(name: &OsStr) -> Cow<'_, OsStr> {
    Cow::Owned(name.to_ascii_uppercase())
}

/// Prepares the environment for `provider` from the host's own environment (`base`).
///
/// Profile: the provider's, else `shell.default_profile`, else none. Then PATH gets
/// `path_prepend`, `shell.env` and the profile's `env` are applied; with an init_script the
/// profile program runs once (at most [`INIT_SCRIPT_LIMIT`], in the provider's cwd) and its
/// `env -0` output becomes the snapshot. Sensitive variables are always removed. Failure:
/// `plugin_environment_prepare_failed` (phase `environment`).
pub fn prepare_environment(
    shell: &ShellConfig,
    provider: &ProviderConfig,
    base: impl IntoIterator<Item = (OsString, OsString)>,
) -> Result<EnvSnapshot> {
    prepare_with_limit(
        shell,
        provider,
        base,
        INIT_SCRIPT_LIMIT,
        &SecretNames::default(),
        &AdmissionCancel::new(),
    )
}

/// [`prepare_environment`] for a candidate: the extra names of `secrets` are removed too, and
/// cancelling `cancel` kills a running init_script's process group at once (the preparation
/// then fails).
pub(crate) fn prepare_candidate_environment(
    shell: &ShellConfig,
    provider: &ProviderConfig,
    base: impl IntoIterator<Item = (OsString, OsString)>,
    secrets: &SecretNames,
    cancel: &AdmissionCancel,
) -> Result<EnvSnapshot> {
    prepare_with_limit(shell, provider, base, INIT_SCRIPT_LIMIT, secrets, cancel)
}

fn failed(message: impl Into<String>) -> Error {
    Error::new(
        ErrorCode::EnvironmentPrepareFailed,
        Dispatch::NotStarted,
        message,
    )
    .in_phase(Phase::Environment)
}

fn prepare_with_limit(
    shell: &ShellConfig,
    provider: &ProviderConfig,
    base: impl IntoIterator<Item = (OsString, OsString)>,
    limit: Duration,
    secrets: &SecretNames,
    cancel: &AdmissionCancel,
) -> Result<EnvSnapshot> {
    let profile = match provider.profile.as_ref().or(shell.default_profile.as_ref()) {
        None => None,
        Some(name) => Some((
            name.as_str(),
            shell.profiles.get(name).ok_or_else(|| {
                failed(format!("profile '{name}' is not defined in shell.profiles"))
            })?,
        )),
    };

    let mut vars: Vec<(OsString, OsString)> = base.into_iter().collect();
    prepend_path(&mut vars, &shell.path_prepend)?;
    vars.extend(
        shell
            .env
            .iter()
            .chain(profile.iter().flat_map(|(_, p)| p.env.iter()))
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    let built = EnvSnapshot::from_vars_without(vars, secrets);

    match profile {
        Some((name, p)) if p.init_script.is_some() => {
            let vars = run_init_script(name, p, &built, provider.cwd.as_deref(), limit, cancel)?;
            Ok(EnvSnapshot::from_vars_without(vars, secrets))
        }
        _ => Ok(built),
    }
}

/// Puts `entries` in front of PATH (the last PATH in `vars` wins, as in a snapshot).
fn prepend_path(vars: &mut Vec<(OsString, OsString)>, entries: &[String]) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut path = std::env::join_paths(entries).map_err(|_| {
        // Windows quotes an entry holding `;` (PATH allows it); only `"` cannot be joined.
        failed(if cfg!(windows) {
            "a shell.path_prepend entry contains '\"', which PATH cannot hold; remove the quotes"
        } else {
            "a shell.path_prepend entry contains the PATH separator; split it into entries"
        })
    })?;
    let existing = vars
        .iter()
        .rposition(|(k, _)| is_path_key(k))
        .map(|i| vars.remove(i));
    let key = match existing {
        Some((key, value)) => {
            if !value.is_empty() {
                path.push(if cfg!(windows) { ";" } else { ":" });
                path.push(value);
            }
            key
        }
        None => OsString::from("PATH"),
    };
    vars.retain(|(k, _)| !is_path_key(k));
    vars.push((key, path));
    Ok(())
}

fn is_path_key(key: &OsStr) -> bool {
    if cfg!(windows) {
        key.to_str().is_some_and(|k| k.eq_ignore_ascii_case("PATH"))
    } else {
        key == "PATH"
    }
}

static MARKER_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A marker line no init_script can predict.
fn unique_marker() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = MARKER_COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("__WEBCODEX_ENV_{}_{nanos}_{n}__", std::process::id())
}

/// What the stdout reader thread reports.
enum Captured {
    Output(Vec<u8>),
    TooLarge,
    Failed,
}

fn run_init_script(
    name: &str,
    profile: &ProfileConfig,
    env: &EnvSnapshot,
    cwd: Option<&Path>,
    limit: Duration,
    cancel: &AdmissionCancel,
) -> Result<Vec<(OsString, OsString)>> {
    let marker = unique_marker();
    let dialect = Dialect::of(&profile.program);
    let script = dialect.script(profile.init_script.as_deref().unwrap_or(""), &marker);

    let mut command = Command::new(&profile.program);
    command.args(&profile.args);
    // Kept until the script has run (cmd's batch file is removed on drop).
    let _script_file = dialect
        .pass_script(&mut command, script, &marker)
        .map_err(|e| {
            failed(format!(
                "the init_script of profile '{name}' could not be written for cmd ({})",
                e.kind()
            ))
        })?;
    command
        .env_clear()
        .envs(env.vars().iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let (mut child, group) = spawn_script(command).map_err(|e| {
        failed(format!(
            "the shell program of profile '{name}' could not be started ({}); check its program and the provider's cwd",
            e.kind()
        ))
    })?;
    let group = Arc::new(group);
    if !cancel.register(Box::new(ScriptKill(Arc::downgrade(&group)))) {
        group.kill_and_reap(&mut child);
        return Err(failed("the plugin host is stopping"));
    }

    // The readers and the exit watch are supervised like a plugin's I/O threads: bounded
    // channels, and joined within a bound before this returns.
    let mut threads = ThreadSet::new("init_script");
    let captured = supervise(name, &mut child, &group, &mut threads, limit);
    threads.join_until(Instant::now() + DRAIN_GRACE);
    let (captured, status) = captured?;
    let output = match captured {
        Captured::Output(bytes) => bytes,
        Captured::TooLarge => {
            return Err(failed(format!(
                "init_script of profile '{name}' printed more than 4 MiB"
            )))
        }
        Captured::Failed => {
            return Err(failed(format!(
                "reading the init_script output of profile '{name}' failed"
            )))
        }
    };
    if !status.success() {
        return Err(failed(format!(
            "init_script of profile '{name}' {}",
            describe_status(status)
        )));
    }
    parse_env_output(&output, &marker, dialect.lists_by_line()).ok_or_else(|| {
        failed(format!(
            "init_script of profile '{name}' did not print the environment; it must not exit or exec early"
        ))
    })
}

/// Reads the running init_script's output and waits for its exit within `limit`, on helper
/// threads started in `threads`; returns what it printed and its status, reaped. Every failure
/// kills the group and reaps the script before it returns.
fn supervise(
    name: &str,
    child: &mut Child,
    group: &ScriptGroup,
    threads: &mut ThreadSet,
    limit: Duration,
) -> Result<(Captured, ExitStatus)> {
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let (tx, rx) = crossbeam_channel::bounded(1);
    let spawned = threads.spawn("env-init-stdout".into(), READER_STACK, move || {
        let _ = tx.send(match stdout {
            Some(out) => read_bounded(out),
            None => Captured::Failed,
        });
    });
    if spawned.is_err() {
        group.kill_and_reap(child);
        return Err(failed(format!(
            "could not start a thread to read the init_script output of profile '{name}'"
        )));
    }
    if let Some(err) = stderr {
        // It ends when the last holder of the pipe closes it.
        let spawned = threads.spawn("env-init-stderr".into(), READER_STACK, move || {
            log_stderr(err)
        });
        if spawned.is_err() {
            log::debug!("init_script stderr is not logged: no thread could be started");
        }
    }

    // The exit is watched without reaping, so the group can still be signalled safely after
    // the script ended (a background process it started may hold stdout open).
    let exited = match watch_exit(child, threads) {
        Ok(exited) => exited,
        Err(_) => {
            group.kill_and_reap(child);
            return Err(failed(format!(
                "could not start a thread to wait for the init_script of profile '{name}'"
            )));
        }
    };
    match exited.recv_timeout(limit) {
        Ok(()) => {}
        Err(RecvTimeoutError::Timeout) => {
            group.kill();
            // SIGKILL ends the leader promptly; the watch reports it without reaping.
            let _ = exited.recv();
            group.kill_and_reap(child);
            return Err(failed(format!(
                "init_script of profile '{name}' did not finish within {} s",
                limit.as_secs()
            )));
        }
        Err(RecvTimeoutError::Disconnected) => {
            group.kill_and_reap(child);
            return Err(failed(format!(
                "waiting for the init_script of profile '{name}' failed"
            )));
        }
    }

    let captured = match rx.recv_timeout(DRAIN_GRACE) {
        Ok(c) => Ok(c),
        Err(_) => {
            // Something the script started still holds stdout; end the rest of its group while
            // the leader is unreaped (its group id cannot have been reused).
            group.kill();
            rx.recv_timeout(DRAIN_GRACE)
        }
    };
    // Reaped only now, after the last signal to the group.
    let status = group.reap(child).map_err(|e| {
        failed(format!(
            "waiting for the init_script of profile '{name}' failed ({})",
            e.kind()
        ))
    })?;
    let captured = captured.map_err(|_| {
        failed(format!(
            "init_script of profile '{name}' left a background process holding its output open"
        ))
    })?;
    Ok((captured, status))
}

fn describe_status(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("was killed by signal {signal}");
    }
    "failed".to_string()
}

/// Reads at most [`STDOUT_LIMIT`] bytes. Beyond that the pipe is dropped, so the script's next
/// write fails instead of blocking until the time limit.
fn read_bounded(out: impl Read) -> Captured {
    let mut bytes = Vec::new();
    match out.take(STDOUT_LIMIT as u64 + 1).read_to_end(&mut bytes) {
        Ok(_) if bytes.len() > STDOUT_LIMIT => Captured::TooLarge,
        Ok(_) => Captured::Output(bytes),
        Err(_) => Captured::Failed,
    }
}

fn log_stderr(mut err: impl Read) {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    let mut total = 0usize;
    loop {
        match err.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                total += n;
                let room = STDERR_LIMIT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    if total > 0 {
        log::debug!(
            "init_script stderr ({total} bytes, first {} shown): {}",
            kept.len(),
            String::from_utf8_lossy(&kept)
        );
    }
}

/// Starts the init_script's shell, tied to the host, in a process group of its own.
#[cfg(unix)]
fn spawn_script(command: Command) -> std::io::Result<(Child, ScriptGroup)> {
    let child = crate::spawn::spawn_tied(command)?;
    let group = ScriptGroup::of(&child);
    Ok((child, group))
}

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows::{spawn_script, watch_exit, ScriptGroup};

/// The init_script's process group (its pgid is its pid: `process_group(0)`). It is signalled
/// only while the leader is unreaped: the kill and the reap share one lock, so shutdown may kill
/// it from another thread without ever reaching a reused group id.
#[cfg(unix)]
#[derive(Debug)]
pub(crate) struct ScriptGroup {
    pgid: crate::sys::unix::Pid,
    reaped: Mutex<bool>,
}

#[cfg(unix)]
impl ScriptGroup {
    fn of(child: &Child) -> ScriptGroup {
        ScriptGroup {
            pgid: crate::sys::unix::pid_of(child),
            reaped: Mutex::new(false),
        }
    }

    /// SIGKILL to the whole group, unless the leader was reaped already. Never blocks.
    pub(crate) fn kill(&self) {
        let reaped = self.reaped.lock();
        if !*reaped {
            // The leader is unreaped (checked under the lock), so the group id is still the
            // script's. A group already empty is no failure.
            let _ = crate::sys::unix::kill_group(self.pgid);
        }
    }

    /// Waits for the leader to exit without reaping, then reaps it under the lock.
    fn reap(&self, child: &mut Child) -> std::io::Result<ExitStatus> {
        crate::sys::unix::wait_exit_noreap(self.pgid);
        let mut reaped = self.reaped.lock();
        let status = child.wait();
        *reaped = true;
        status
    }

    /// Kills the group while the leader is still unreaped, then reaps it.
    fn kill_and_reap(&self, child: &mut Child) {
        self.kill();
        let _ = child.kill();
        let _ = self.reap(child);
    }
}

/// What [`AdmissionCancel::cancel`] does to a running init_script: kill its group (held weakly).
struct ScriptKill(std::sync::Weak<ScriptGroup>);

impl Cancellable for ScriptKill {
    fn cancel(&self) {
        if let Some(group) = self.0.upgrade() {
            group.kill();
        }
    }

    fn is_gone(&self) -> bool {
        self.0.strong_count() == 0
    }
}

#[cfg(unix)]
/// A receiver that gets one message once `child` has exited, without reaping it
/// (`waitid` with `WNOWAIT` on a small thread of `threads`).
fn watch_exit(child: &Child, threads: &mut ThreadSet) -> std::io::Result<Receiver<()>> {
    let pid = crate::sys::unix::pid_of(child);
    let (tx, rx) = crossbeam_channel::bounded(1);
    threads.spawn("env-init-wait".into(), READER_STACK, move || {
        crate::sys::unix::wait_exit_noreap(pid);
        let _ = tx.send(());
    })?;
    Ok(rx)
}

/// The `KEY=VALUE` list after the first marker line (`\nMARKER\n`, or `\r\n` at its end):
/// NUL-separated, or one per line when `by_line` (cmd's `set`); `None` when the marker is
/// missing.
fn parse_env_output(
    output: &[u8],
    marker: &str,
    by_line: bool,
) -> Option<Vec<(OsString, OsString)>> {
    let line = format!("\n{marker}");
    let line = line.as_bytes();
    let mut from = 0;
    let start = loop {
        let at = from + output[from..].windows(line.len()).position(|w| w == line)? + line.len();
        match &output[at..] {
            [b'\n', ..] => break at + 1,
            [b'\r', b'\n', ..] => break at + 2,
            _ => from = at,
        }
    };
    let separator = if by_line { b'\n' } else { 0 };
    Some(
        output[start..]
            .split(|&b| b == separator)
            .map(|entry| match entry {
                [rest @ .., b'\r'] if by_line => rest,
                _ => entry,
            })
            .filter_map(|entry| {
                let eq = entry.iter().position(|&b| b == b'=')?;
                (eq > 0).then(|| (os_string(&entry[..eq]), os_string(&entry[eq + 1..])))
            })
            .collect(),
    )
}

#[cfg(unix)]
fn os_string(bytes: &[u8]) -> OsString {
    std::os::unix::ffi::OsStringExt::from_vec(bytes.to_vec())
}

#[cfg(not(unix))]
fn os_string(bytes: &[u8]) -> OsString {
    OsString::from(String::from_utf8_lossy(bytes).into_owned())
}

mod dialect;
use dialect::Dialect;

#[cfg(test)]
mod tests;
