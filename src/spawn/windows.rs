//! Windows: a child's process tree is a Job Object.
//!
//! Each child is created suspended, assigned to a fresh job that kills every process in it when
//! its last handle closes (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`), and only then resumed, so no
//! grandchild can start outside the job. The job is what a process group is on Unix: retirement,
//! cancellation and shutdown terminate it, and a host that dies for any reason closes its handle,
//! which ends the tree (the parent-death signal of Linux).

use std::io;
use std::os::windows::io::BorrowedHandle;
use std::os::windows::process::CommandExt;
use std::process::{Child, Command};
use std::time::Instant;

use crate::sys::windows::CREATE_SUSPENDED;

/// The exit code a terminated job's processes get.
const KILLED_EXIT_CODE: u32 = 1;

/// A Job Object holding one child's process tree; dropping it kills whatever is left.
#[derive(Debug)]
pub(crate) struct Job(crate::sys::windows::Job);

impl Job {
    /// Kills every process in the job. Never blocks; a no-op once the job is empty.
    pub(crate) fn terminate(&self) {
        self.0.terminate(KILLED_EXIT_CODE);
    }

    /// Waits, bounded by `deadline`, until no process of the job is left. Like the wait for an
    /// empty process group on Unix, it uses a short back-off (no job notification is cheaper
    /// for this one-off wait at termination).
    pub(crate) fn wait_empty(&self, deadline: Instant) {
        let mut pause = std::time::Duration::from_millis(1);
        while self.0.active_processes() > 0 {
            let now = Instant::now();
            if now >= deadline {
                log::debug!("the job still had processes at the termination bound");
                return;
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(std::time::Duration::from_millis(50));
        }
    }
}

/// `ERROR_INTERNAL_ERROR`: what `CreateProcessW` now and then returns under load (seen under
/// Wine) before any process exists.
const ERROR_INTERNAL_ERROR: i32 = 1359;

/// How many times a `CreateProcessW` that failed with [`ERROR_INTERNAL_ERROR`] is tried again.
const INTERNAL_ERROR_RETRIES: u32 = 2;

/// Spawns `command` suspended, puts it in a new kill-on-close job, then resumes it.
pub(crate) fn spawn_in_job(mut command: Command) -> io::Result<(Child, Job)> {
    let job = crate::sys::windows::Job::kill_on_close()?;
    command.creation_flags(CREATE_SUSPENDED);
    let mut child = spawn_retrying_internal_errors(&mut command)?;
    if let Err(error) = job.assign_and_resume(&child) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(error);
    }
    Ok((child, Job(job)))
}

/// `command.spawn()`, tried again (at most [`INTERNAL_ERROR_RETRIES`] times) when it fails with
/// [`ERROR_INTERNAL_ERROR`]. A failed `CreateProcessW` created no process, so no byte reached a
/// plugin and trying again cannot repeat an effect; every other error is returned at once.
fn spawn_retrying_internal_errors(command: &mut Command) -> io::Result<Child> {
    let mut retries = 0;
    loop {
        match command.spawn() {
            Err(e)
                if e.raw_os_error() == Some(ERROR_INTERNAL_ERROR)
                    && retries < INTERNAL_ERROR_RETRIES =>
            {
                retries += 1;
                log::debug!("CreateProcessW failed with ERROR_INTERNAL_ERROR; trying again");
            }
            spawned => return spawned,
        }
    }
}

/// Blocks until the process behind `handle` has exited (its handle is signalled). Waiting does
/// not consume the exit: the owner still collects the status.
pub(crate) fn wait_process_exit(handle: BorrowedHandle<'_>) {
    if !wait_process_exit_until(handle, None) {
        log::warn!("waiting for a process handle failed");
    }
}

/// Like [`wait_process_exit`], bounded by `deadline` (`None`: no bound); true once the process
/// has exited.
pub(crate) fn wait_process_exit_until(
    handle: BorrowedHandle<'_>,
    deadline: Option<Instant>,
) -> bool {
    let timeout = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
    crate::sys::windows::wait_for_exit(handle, timeout)
}
