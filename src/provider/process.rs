//! Spawning the plugin in its own process group and terminating the whole tree.
//!
//! The kill path never takes the session lock: a writer blocked in `write(2)` holds no lock
//! that termination needs. The group is signalled only while the leader is not yet reaped (exit
//! is watched through a pidfd or `waitid(WNOWAIT)`, neither of which reaps; the reap and every
//! group kill share one small lock), so the group id cannot have been reused. The exit watch
//! reaps the leader as soon as it has exited, so a retired plugin never lingers as a zombie.
//!
//! On Windows the tree is a Job Object instead of a process group (`windows`).
//!
//! Each retirement is counted process-wide by reason for operators (the admin listener's
//! metrics, [`retirement_counts`]): an instance counts once, under the reason that retired it
//! first.

#[cfg(unix)]
use std::io;
#[cfg(unix)]
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
#[cfg(unix)]
use std::process::{Command, Stdio};
#[cfg(unix)]
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(unix)]
use std::sync::Arc;
#[cfg(unix)]
use std::time::{Duration, Instant};

#[cfg(unix)]
use parking_lot::Mutex;
#[cfg(unix)]
use shared_child::SharedChild;

#[cfg(unix)]
use crate::spawn::{spawn_tied, wait_exit_noreap};

use crate::env::EnvSnapshot;
use crate::error::ErrorCode;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::PluginProcess;

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

/// The plugin process and its group.
#[cfg(unix)]
#[derive(Debug)]
pub(crate) struct PluginProcess {
    child: SharedChild,
    pgid: libc::pid_t,
    retired: AtomicBool,
    /// True once the leader was reaped. Group kills and the reap both hold this lock, so no
    /// signal is ever sent to the group id after the leader was reaped (it may be reused then).
    reaped: Mutex<bool>,
}

#[cfg(unix)]
impl PluginProcess {
    /// Spawns the plugin with piped stdio in a new process group, tied to the host's lifetime
    /// (see [`super::spawn`]).
    pub(crate) fn spawn(spec: &LaunchSpec) -> io::Result<PluginProcess> {
        let mut command = Command::new(&spec.program);
        command
            .args(&spec.args)
            .env_clear()
            .envs(spec.env.vars().iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(cwd) = &spec.cwd {
            command.current_dir(cwd);
        }
        let child = SharedChild::new(spawn_tied(command)?)?;
        let pgid = child.id() as libc::pid_t;
        Ok(PluginProcess {
            child,
            pgid,
            retired: AtomicBool::new(false),
            reaped: Mutex::new(false),
        })
    }

    pub(crate) fn child(&self) -> &SharedChild {
        &self.child
    }

    /// The process id of the plugin (the group leader; its group id is the same number).
    pub(crate) fn pid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    /// True once the instance was retired (fault, exit or shutdown).
    pub(crate) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Marks the instance retired and SIGKILLs the whole process group. Never blocks on I/O
    /// (the lock it takes is only held for a kill or a non-blocking reap).
    pub(crate) fn retire(&self) {
        self.retire_for(RetireReason::Stopped);
    }

    /// [`PluginProcess::retire`] after a request fault with this code (counted by reason).
    pub(crate) fn retire_on_fault(&self, code: ErrorCode) {
        self.retire_for(RetireReason::Fault(code));
    }

    fn retire_for(&self, reason: RetireReason) {
        if !self.retired.swap(true, Ordering::AcqRel) {
            count(reason);
        }
        self.kill_group();
    }

    /// SIGKILL to the process group, then to the leader through `SharedChild`; both are no-ops
    /// once the leader was reaped, so a reused group id or PID is never signalled.
    pub(crate) fn kill_group(&self) {
        let reaped = self.reaped.lock();
        if !*reaped {
            // SAFETY: plain syscall; the leader is not reaped (checked under the lock), so the
            // group id cannot have been reused.
            unsafe {
                libc::kill(-self.pgid, libc::SIGKILL);
            }
        }
        drop(reaped);
        let _ = self.child.kill();
    }

    /// Called once the leader was seen to exit: retires the instance, kills what is left of its
    /// group and reaps the leader, all at once (no zombie waits for a reload or shutdown).
    /// True when the leader is reaped (now or before).
    pub(crate) fn retire_and_reap_exited(&self) -> bool {
        if !self.retired.swap(true, Ordering::AcqRel) {
            count(RetireReason::Exited);
        }
        let mut reaped = self.reaped.lock();
        if *reaped {
            return true;
        }
        // SAFETY: the leader is not reaped yet (it is a zombie at most), so the group id is ours.
        unsafe {
            libc::kill(-self.pgid, libc::SIGKILL);
        }
        match self.child.try_wait() {
            Ok(Some(_)) => {
                *reaped = true;
                true
            }
            Ok(None) => false,
            Err(e) => {
                log::warn!("reaping the plugin process failed: {e}");
                false
            }
        }
    }

    /// Reaps the leader (killed before) and waits, bounded by `deadline`, until no process of
    /// the group is left. Grandchildren are reaped by init, so their disappearance is observed,
    /// not caused. A leader that has not exited by the deadline (a machine under heavy load) is
    /// reaped by a detached thread as soon as it does, so no zombie is left behind and the
    /// caller is not held past the bound.
    pub(crate) fn reap(self: &Arc<Self>, deadline: Instant) {
        if !self.retire_and_reap_exited() {
            log::warn!("plugin process did not exit within the termination bound");
            let process = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name("wc-reap".into())
                .stack_size(64 * 1024)
                .spawn(move || {
                    wait_exit_noreap(process.pgid);
                    process.retire_and_reap_exited();
                });
            if spawned.is_err() {
                log::error!("could not start a thread to reap a plugin process");
            }
            return;
        }
        let mut pause = Duration::from_millis(1);
        loop {
            // SAFETY: signal 0 sends nothing; it only checks whether the group has members.
            let alive = unsafe { libc::kill(-self.pgid, 0) } == 0;
            if !alive {
                return;
            }
            let now = Instant::now();
            if now >= deadline {
                log::debug!("process group still had members at the termination bound");
                return;
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(50));
        }
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
#[cfg(any(test, feature = "ops", feature = "internals"))]
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
