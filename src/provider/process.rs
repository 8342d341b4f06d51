//! Spawning the plugin in a tree of its own and terminating the whole tree.
//!
//! The tree is a process group on Unix (`unix`: signalled only while the leader is not reaped,
//! so its id cannot have been reused) and a Job Object on Windows (`windows`). The kill path
//! never takes the session lock. Each retirement is counted process-wide by reason for
//! operators ([`retirement_counts`]): an instance counts once, under the reason that retired it
//! first.

use std::io;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crossbeam_channel::Sender;
use shared_child::SharedChild;

use crate::env::EnvSnapshot;
use crate::error::ErrorCode;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

/// What to run: the resolved program, its argv, cwd and exact environment.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    /// Resolved program path.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// Working directory (absolute), or the host's.
    pub cwd: Option<PathBuf>,
    /// The exact environment (`env_clear()` + these).
    pub env: EnvSnapshot,
}

impl LaunchSpec {
    /// The command to run, with its exact environment and piped stdio.
    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.env.vars().iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        command
    }
}

/// The plugin process and its tree (a process group on Unix, a Job Object on Windows).
#[derive(Debug)]
pub(crate) struct PluginProcess {
    child: SharedChild,
    retired: AtomicBool,
    tree: imp::Tree,
    /// The leader's exit status once it was reaped; `exited` is signalled then.
    status: Mutex<Option<ExitStatus>>,
    exited: Condvar,
    /// Whether a fault or the exit retired the instance, and who to tell once (a restart).
    fault_watch: parking_lot::Mutex<(bool, Option<Sender<()>>)>,
}

impl PluginProcess {
    /// Spawns the plugin with piped stdio in a tree of its own: a new process group tied to the
    /// host's lifetime, or a kill-on-close job (see [`crate::spawn`]).
    pub(crate) fn spawn(spec: &LaunchSpec) -> io::Result<PluginProcess> {
        let (child, tree) = imp::spawn(spec.command())?;
        Ok(PluginProcess {
            child,
            retired: AtomicBool::new(false),
            tree,
            status: Mutex::new(None),
            exited: Condvar::new(),
            fault_watch: Default::default(),
        })
    }

    pub(crate) fn child(&self) -> &SharedChild {
        &self.child
    }

    /// The process id of the plugin (on Unix also its process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Keeps the status of the reaped leader and wakes [`PluginProcess::await_exit`].
    fn keep_status(&self, status: ExitStatus) {
        *self.status.lock() = Some(status);
        self.exited.notify_all();
    }

    /// How the plugin ended (its exit status or signal, in words), once its leader is reaped:
    /// waits for that until `deadline` at the latest.
    pub(crate) fn await_exit(&self, deadline: Instant) -> Option<String> {
        let mut status = self.status.lock();
        while status.is_none() && !self.exited.wait_until(&mut status, deadline).timed_out() {}
        status.map(crate::error::exit_detail)
    }

    /// True once the instance was retired (fault, exit or shutdown).
    pub(crate) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Marks the instance retired and kills its whole tree. Never blocks on I/O (on Unix the
    /// lock it takes is only held for a kill or a non-blocking reap).
    pub(crate) fn retire(&self) {
        self.retire_for(RetireReason::Stopped);
    }

    /// [`PluginProcess::retire`] after a request fault with this code (counted by reason).
    pub(crate) fn retire_on_fault(&self, code: ErrorCode) {
        self.retire_for(RetireReason::Fault(code));
    }

    fn retire_for(&self, reason: RetireReason) {
        if !self.retired.swap(true, Ordering::AcqRel) {
            self.retired_first(reason);
        }
        self.kill_tree();
    }

    /// Counts the first retirement and, unless the host stopped the instance, tells the watch.
    fn retired_first(&self, reason: RetireReason) {
        count(reason);
        if reason != RetireReason::Stopped {
            let mut watch = self.fault_watch.lock();
            watch.0 = true;
            if let Some(tell) = watch.1.take() {
                let _ = tell.try_send(());
            }
        }
    }

    /// Sends one `()` on `tell` (without blocking) once this instance is retired by a fault or
    /// its exit, never when the host stops it; at once when it already was.
    pub(crate) fn on_fault_retirement(&self, tell: Sender<()>) {
        let mut watch = self.fault_watch.lock();
        if watch.0 {
            let _ = tell.try_send(());
        } else {
            watch.1 = Some(tell);
        }
    }

    /// Called once the plugin was seen to exit: retires the instance, kills what is left of its
    /// tree and collects its exit status, all at once (no zombie waits for a reload or
    /// shutdown). True when the status is collected (now or before).
    pub(crate) fn retire_and_reap_exited(&self) -> bool {
        if !self.retired.swap(true, Ordering::AcqRel) {
            self.retired_first(RetireReason::Exited);
        }
        self.kill_and_reap_exited()
    }
}

/// Why an instance was retired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetireReason {
    /// The plugin exited by itself (a crash, or an exit nobody asked for).
    Exited,
    /// The host stopped it: shutdown, a replaced set, a finished check candidate.
    Stopped,
    /// A request failed in a way that retires the instance (timeout, protocol error, …).
    Fault(ErrorCode),
}

const CODES: usize = ErrorCode::ALL.len();

static EXITED: AtomicU64 = AtomicU64::new(0);
static STOPPED: AtomicU64 = AtomicU64::new(0);
static FAULTS: [AtomicU64; CODES] = [const { AtomicU64::new(0) }; CODES];

/// Counts one retirement.
pub(crate) fn count(reason: RetireReason) {
    let counter = match reason {
        RetireReason::Exited => &EXITED,
        RetireReason::Stopped => &STOPPED,
        RetireReason::Fault(code) => match FAULTS.get(code as usize) {
            Some(counter) => counter,
            None => return,
        },
    };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The retirements of plugin instances in this process so far, `(reason, count)`: `exited`
/// (the plugin exited by itself), `stopped` (shutdown, reload, a finished check candidate),
/// and the error code of each fault that retired an instance. `exited` and `stopped` are
/// always listed; a fault code only once it happened.
pub fn retirement_counts() -> Vec<(&'static str, u64)> {
    let mut counts = vec![
        ("exited", EXITED.load(Ordering::Relaxed)),
        ("stopped", STOPPED.load(Ordering::Relaxed)),
    ];
    for (code, counter) in ErrorCode::ALL.iter().zip(FAULTS.iter()) {
        let n = counter.load(Ordering::Relaxed);
        if n > 0 {
            counts.push((code.as_str(), n));
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_codes_index_their_own_counter() {
        for (i, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(*code as usize, i, "{}", code.as_str());
        }
        let before = retirement_counts();
        count(RetireReason::Fault(ErrorCode::Timeout));
        let after = retirement_counts();
        let timeouts = |counts: &[(&str, u64)]| {
            counts
                .iter()
                .find(|(reason, _)| *reason == ErrorCode::Timeout.as_str())
                .map_or(0, |(_, n)| *n)
        };
        assert!(timeouts(&after) > timeouts(&before));
        assert_eq!(after[0].0, "exited");
        assert_eq!(after[1].0, "stopped");
    }
}
