//! Windows: a child's process tree is a Job Object.
//!
//! Each child is created suspended, assigned to a fresh job that kills every process in it when
//! its last handle closes (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`), and only then resumed, so no
//! grandchild can start outside the job. The job is what a process group is on Unix: retirement,
//! cancellation and shutdown terminate it, and a host that dies for any reason closes its handle,
//! which ends the tree (the parent-death signal of Linux).

use std::io;
use std::os::windows::io::{AsRawHandle, BorrowedHandle};
use std::os::windows::process::CommandExt;
use std::process::{Child, Command};
use std::time::Instant;

use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
    JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{WaitForSingleObject, CREATE_SUSPENDED, INFINITE};

#[link(name = "ntdll")]
extern "system" {
    /// Resumes every thread of a process (ntdll; the process was created suspended).
    fn NtResumeProcess(process: HANDLE) -> i32;
}

/// The exit code a terminated job's processes get.
const KILLED_EXIT_CODE: u32 = 1;

/// A Job Object holding one child's process tree; closing it kills whatever is left.
#[derive(Debug)]
pub(crate) struct Job {
    handle: HANDLE,
}

// SAFETY: a job handle is a kernel object reference, usable from any thread.
unsafe impl Send for Job {}
// SAFETY: every operation on the handle is a thread-safe kernel call.
unsafe impl Sync for Job {}

impl Job {
    /// A new, unnamed job that kills its processes when its last handle is closed.
    fn new() -> io::Result<Job> {
        // SAFETY: null attributes and name create an unnamed, non-inheritable job.
        let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if handle.is_null() {
            return Err(io::Error::last_os_error());
        }
        let job = Job { handle };
        // SAFETY: a zeroed JOBOBJECT_EXTENDED_LIMIT_INFORMATION is valid (no limits).
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the pointer and size describe `limits`, which outlives the call.
        let ok = unsafe {
            SetInformationJobObject(
                job.handle,
                JobObjectExtendedLimitInformation,
                (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(job)
    }

    /// Kills every process in the job. Never blocks; a no-op once the job is empty.
    pub(crate) fn terminate(&self) {
        // SAFETY: plain call on a job handle owned by `self`.
        unsafe {
            TerminateJobObject(self.handle, KILLED_EXIT_CODE);
        }
    }

    /// How many processes of the job are still running.
    pub(crate) fn active_processes(&self) -> u32 {
        // SAFETY: a zeroed accounting record is a valid out-parameter.
        let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: the pointer and size describe `info`.
        let ok = unsafe {
            QueryInformationJobObject(
                self.handle,
                JobObjectBasicAccountingInformation,
                (&mut info as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            0
        } else {
            info.ActiveProcesses
        }
    }

    /// Waits, bounded by `deadline`, until no process of the job is left. Like the wait for an
    /// empty process group on Unix, it uses a short back-off (no job notification is cheaper
    /// for this one-off wait at termination).
    pub(crate) fn wait_empty(&self, deadline: Instant) {
        let mut pause = std::time::Duration::from_millis(1);
        while self.active_processes() > 0 {
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

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: the handle is owned by `self` and closed once; kill-on-close ends the tree.
        unsafe {
            CloseHandle(self.handle);
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
    let job = Job::new()?;
    command.creation_flags(CREATE_SUSPENDED);
    let mut child = spawn_retrying_internal_errors(&mut command)?;
    let process = child.as_raw_handle() as HANDLE;
    // SAFETY: both handles are valid: the job is ours, the process handle is the child's.
    let assigned = unsafe { AssignProcessToJobObject(job.handle, process) } != 0;
    let started = assigned && {
        // SAFETY: resumes the child created suspended above.
        unsafe { NtResumeProcess(process) >= 0 }
    };
    if !started {
        let error = io::Error::last_os_error();
        let _ = child.kill();
        let _ = child.wait();
        return Err(error);
    }
    Ok((child, job))
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
    let millis = match deadline {
        None => INFINITE,
        Some(deadline) => {
            let left = deadline.saturating_duration_since(Instant::now());
            u32::try_from(left.as_millis()).unwrap_or(INFINITE - 1)
        }
    };
    // SAFETY: the handle is valid for the call (borrowed by the caller).
    unsafe { WaitForSingleObject(handle.as_raw_handle() as HANDLE, millis) == WAIT_OBJECT_0 }
}
