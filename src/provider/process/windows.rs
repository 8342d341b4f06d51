//! Windows: the plugin in a kill-on-close Job Object.
//!
//! The job plays the process group's part: retiring the instance terminates the job, so
//! grandchildren go with the plugin, and a host that dies closes the job's last handle, which
//! kills the tree. There is no zombie to reap and no id to be reused while the process handle is
//! open, so no lock orders kills against a reap.

use std::io;
use std::os::windows::io::{AsHandle, OwnedHandle};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use shared_child::SharedChild;

use super::LaunchSpec;
use super::{count, RetireReason};
use crate::spawn::windows::{spawn_in_job, wait_process_exit, wait_process_exit_until, Job};

/// The plugin process and its job.
#[derive(Debug)]
pub(crate) struct PluginProcess {
    child: SharedChild,
    /// A second handle to the process, for the exit watch (SharedChild keeps its own).
    handle: OwnedHandle,
    job: Job,
    retired: AtomicBool,
}

impl PluginProcess {
    /// Spawns the plugin with piped stdio in a new kill-on-close job (see
    /// [`crate::spawn::windows`]).
    pub(crate) fn spawn(spec: &LaunchSpec) -> io::Result<PluginProcess> {
        let mut command = Command::new(&spec.program);
        command
            .args(&spec.args)
            .env_clear()
            .envs(spec.env.vars().iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cwd) = &spec.cwd {
            command.current_dir(cwd);
        }
        let (child, job) = spawn_in_job(command)?;
        let handle = child.as_handle().try_clone_to_owned()?;
        Ok(PluginProcess {
            child: SharedChild::new(child)?,
            handle,
            job,
            retired: AtomicBool::new(false),
        })
    }

    pub(crate) fn child(&self) -> &SharedChild {
        &self.child
    }

    /// The process id of the plugin.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True once the instance was retired (fault, exit or shutdown).
    pub(crate) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Marks the instance retired and terminates its job. Never blocks on I/O.
    pub(crate) fn retire(&self) {
        self.retire_for(RetireReason::Stopped);
    }

    /// [`PluginProcess::retire`] after a request fault with this code (counted by reason).
    pub(crate) fn retire_on_fault(&self, code: crate::error::ErrorCode) {
        self.retire_for(RetireReason::Fault(code));
    }

    fn retire_for(&self, reason: RetireReason) {
        if !self.retired.swap(true, Ordering::AcqRel) {
            count(reason);
        }
        self.kill_group();
    }

    /// Terminates the job: the plugin and every process it started.
    pub(crate) fn kill_group(&self) {
        self.job.terminate();
    }

    /// Called once the plugin was seen to exit: retires the instance and ends what is left of
    /// its job. True when the exit status is collected (now or before).
    pub(crate) fn retire_and_reap_exited(&self) -> bool {
        if !self.retired.swap(true, Ordering::AcqRel) {
            count(RetireReason::Exited);
        }
        self.job.terminate();
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Blocks until the plugin process has exited (its handle is signalled).
    pub(crate) fn wait_exit(&self) {
        wait_process_exit(self.handle.as_handle());
    }

    /// Terminates the job, then waits, bounded by `deadline`, until the plugin and every process
    /// of its job are gone.
    pub(crate) fn reap(self: &Arc<Self>, deadline: Instant) {
        if !self.retire_and_reap_exited()
            && !wait_process_exit_until(self.handle.as_handle(), Some(deadline))
        {
            log::warn!("plugin process did not exit within the termination bound");
            return;
        }
        self.job.wait_empty(deadline);
    }
}
