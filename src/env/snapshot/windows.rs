//! Windows: the init_script's shell in a kill-on-close Job Object (its process tree), watched
//! on its process handle.

use std::os::windows::io::{AsHandle, OwnedHandle};
use std::process::{Child, Command, ExitStatus};

use crate::spawn::windows::{spawn_in_job, wait_process_exit, Job};
use crate::spawn::ThreadSet;

/// Starts the init_script's shell in a job of its own.
pub(super) fn spawn_script(command: Command) -> std::io::Result<(Child, ScriptGroup)> {
    let (child, job) = spawn_in_job(command)?;
    Ok((child, ScriptGroup { job }))
}

/// The init_script's job: the shell and everything it started.
#[derive(Debug)]
pub(crate) struct ScriptGroup {
    job: Job,
}

impl ScriptGroup {
    /// Terminates the whole job. Never blocks.
    pub(crate) fn kill(&self) {
        self.job.terminate();
    }

    /// Waits for the shell to exit and collects its status.
    pub(super) fn reap(&self, child: &mut Child) -> std::io::Result<ExitStatus> {
        child.wait()
    }

    /// Terminates the job, then collects the shell's status.
    pub(super) fn kill_and_reap(&self, child: &mut Child) {
        self.kill();
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A receiver that gets one message once `child` has exited (a wait on a second handle to the
/// process, on a small thread of `threads`; the status stays to be collected).
pub(super) fn watch_exit(
    child: &Child,
    threads: &mut ThreadSet,
) -> std::io::Result<crossbeam_channel::Receiver<()>> {
    let handle: OwnedHandle = child.as_handle().try_clone_to_owned()?;
    let (tx, rx) = crossbeam_channel::bounded(1);
    threads.spawn("env-init-wait".into(), super::READER_STACK, move || {
        wait_process_exit(handle.as_handle());
        let _ = tx.send(());
    })?;
    Ok(rx)
}
