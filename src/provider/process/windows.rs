//! Windows: the plugin in a kill-on-close Job Object.
//!
//! The job plays the process group's part: retiring the instance terminates the job, so
//! grandchildren go with the plugin, and a host that dies closes the job's last handle, which
//! kills the tree. There is no zombie to reap and no id to be reused while the process handle is
//! open, so no lock orders kills against a reap.

use std::io;
use std::os::windows::io::{AsHandle, OwnedHandle};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use shared_child::SharedChild;

use super::PluginProcess;
use crate::spawn::windows::{spawn_in_job, wait_process_exit, wait_process_exit_until, Job};

/// The plugin's job, and a second handle to the process for the exit watch (SharedChild keeps
/// its own).
#[derive(Debug)]
pub(super) struct Tree {
    handle: OwnedHandle,
    job: Job,
}

/// Spawns `command` in a new kill-on-close job.
pub(super) fn spawn(command: Command) -> io::Result<(SharedChild, Tree)> {
    let (child, job) = spawn_in_job(command)?;
    let handle = child.as_handle().try_clone_to_owned()?;
    Ok((SharedChild::new(child)?, Tree { handle, job }))
}

impl PluginProcess {
    /// Terminates the job: the plugin and every process it started.
    pub(super) fn kill_tree(&self) {
        self.tree.job.terminate();
    }

    /// Ends what is left of the job of an exited plugin; true when its exit status is collected
    /// (now or before).
    pub(super) fn kill_and_reap_exited(&self) -> bool {
        self.tree.job.terminate();
        match self.child.try_wait() {
            Ok(Some(status)) => {
                self.keep_status(status);
                true
            }
            _ => false,
        }
    }

    /// Blocks until the plugin process has exited (its handle is signalled).
    pub(crate) fn wait_exit(&self) {
        wait_process_exit(self.tree.handle.as_handle());
    }

    /// Terminates the job, then waits, bounded by `deadline`, until the plugin and every process
    /// of its job are gone.
    pub(crate) fn reap(self: &Arc<Self>, deadline: Instant) {
        if !self.retire_and_reap_exited()
            && !wait_process_exit_until(self.tree.handle.as_handle(), Some(deadline))
        {
            log::warn!("plugin process did not exit within the termination bound");
            return;
        }
        self.tree.job.wait_empty(deadline);
    }
}
