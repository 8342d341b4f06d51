//! Unix: the plugin leads its own process group.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use shared_child::SharedChild;

use super::PluginProcess;
use crate::spawn::spawn_tied;
use crate::sys::unix::{group_has_members, kill_group, pid_of, wait_exit_noreap, Pid};

/// The plugin's process group (its id is the leader's pid).
#[derive(Debug)]
pub(super) struct Tree {
    /// The group's id: the leader's pid.
    group: Pid,
    /// True once the leader was reaped. Group kills and the reap both hold this lock, so no
    /// signal is ever sent to the group id after the leader was reaped (it may be reused then).
    reaped: Mutex<bool>,
}

/// Spawns `command` as the leader of a new process group, tied to the host's lifetime.
pub(super) fn spawn(mut command: Command) -> io::Result<(SharedChild, Tree)> {
    command.process_group(0);
    let child = spawn_tied(command)?;
    let tree = Tree {
        group: pid_of(&child),
        reaped: Mutex::new(false),
    };
    let child = SharedChild::new(child)?;
    Ok((child, tree))
}

impl PluginProcess {
    /// The process group id: the leader's pid.
    pub(crate) fn pgid(&self) -> Pid {
        self.tree.group
    }

    /// SIGKILL to the process group, then to the leader through `SharedChild`; both are no-ops
    /// once the leader was reaped, so a reused group id or PID is never signalled.
    pub(super) fn kill_tree(&self) {
        let reaped = self.tree.reaped.lock();
        if !*reaped {
            // The leader is not reaped (checked under the lock), so the group id cannot have
            // been reused. A group already empty is no failure.
            let _ = kill_group(self.pgid());
        }
        drop(reaped);
        let _ = self.child.kill();
    }

    /// Kills what is left of the group of an exited leader and reaps it; true when the leader
    /// is reaped (now or before).
    pub(super) fn kill_and_reap_exited(&self) -> bool {
        let mut reaped = self.tree.reaped.lock();
        if *reaped {
            return true;
        }
        // The leader is not reaped yet (it is a zombie at most), so the group id is ours.
        let _ = kill_group(self.pgid());
        match self.child.try_wait() {
            Ok(Some(status)) => {
                *reaped = true;
                self.keep_status(status);
                true
            }
            Ok(None) => false,
            Err(e) => {
                log::warn!("reaping the plugin process failed: {e}");
                false
            }
        }
    }

    /// Blocks until the leader has exited, without reaping it.
    pub(crate) fn wait_exit(&self) {
        wait_exit_noreap(self.pgid());
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
                    process.wait_exit();
                    process.retire_and_reap_exited();
                });
            if spawned.is_err() {
                log::error!("could not start a thread to reap a plugin process");
            }
            return;
        }
        let mut pause = Duration::from_millis(1);
        loop {
            if !group_has_members(self.pgid()) {
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
