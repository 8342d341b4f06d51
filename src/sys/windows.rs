//! Windows system calls: Job Objects and waits on process handles, through `windows-sys`; a
//! directory's identity through its handle, by winapi-util.
//!
//! One `unsafe` block per function that calls windows-sys, each with its SAFETY comment.
//! Handles are held as [`OwnedHandle`] (closed on drop, `Send` and `Sync`) and lent as
//! [`BorrowedHandle`], so no handle is used after it was closed.

use std::io;
use std::os::windows::io::{AsRawHandle, BorrowedHandle, FromRawHandle, OwnedHandle};
use std::process::Child;
use std::time::Duration;

use windows_sys::Win32::Foundation::{HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
    JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_BASIC_LIMIT_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{WaitForSingleObject, INFINITE};

/// `CreateProcessW`'s flag for a process whose first thread waits to be resumed
/// ([`Job::assign_and_resume`]).
pub(crate) use windows_sys::Win32::System::Threading::CREATE_SUSPENDED;

#[link(name = "ntdll")]
extern "system" {
    /// Resumes every thread of a process (ntdll: the Win32 API resumes one thread at a time,
    /// and `std::process::Child` keeps no handle to the child's first thread).
    fn NtResumeProcess(process: HANDLE) -> i32;
}

/// A Job Object that kills every process in it when its last handle is closed
/// (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`): dropping it ends the tree.
#[derive(Debug)]
pub(crate) struct Job(OwnedHandle);

impl Job {
    /// A new, unnamed, non-inheritable job that kills its processes when its last handle is
    /// closed. Fails when the system cannot create or configure one.
    pub(crate) fn kill_on_close() -> io::Result<Job> {
        let limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION {
            BasicLimitInformation: JOBOBJECT_BASIC_LIMIT_INFORMATION {
                LimitFlags: JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
                ..Default::default()
            },
            ..Default::default()
        };
        // SAFETY: null attributes and name create an unnamed, non-inheritable job; a non-null
        // handle is new and owned by nobody else, so `OwnedHandle` may close it. The pointer
        // and size given to SetInformationJobObject describe `limits`, which outlives the call.
        unsafe {
            let handle = CreateJobObjectW(std::ptr::null(), std::ptr::null());
            if handle.is_null() {
                return Err(io::Error::last_os_error());
            }
            let job = Job(OwnedHandle::from_raw_handle(handle));
            let set = SetInformationJobObject(
                job.raw(),
                JobObjectExtendedLimitInformation,
                (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            );
            if set == 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(job)
        }
    }

    /// Puts `child` (created with [`CREATE_SUSPENDED`]) in this job, then resumes it, so no
    /// process it starts can begin outside the job. Fails when either step does; the child
    /// is then still suspended (the caller kills it).
    pub(crate) fn assign_and_resume(&self, child: &Child) -> io::Result<()> {
        let process = child.as_raw_handle() as HANDLE;
        // SAFETY: both handles are valid for the calls: the job is owned by `self`, the
        // process handle by `child`, borrowed for this call.
        unsafe {
            if AssignProcessToJobObject(self.raw(), process) == 0 {
                return Err(io::Error::last_os_error());
            }
            let status = NtResumeProcess(process);
            if status < 0 {
                return Err(io::Error::other(format!(
                    "resuming the new process failed (NTSTATUS {status:#x})"
                )));
            }
        }
        Ok(())
    }

    /// Kills every process in the job, with `exit_code`. Never blocks; does nothing once the
    /// job is empty.
    pub(crate) fn terminate(&self, exit_code: u32) {
        // SAFETY: a plain call on the job handle owned by `self`.
        unsafe {
            TerminateJobObject(self.raw(), exit_code);
        }
    }

    /// How many processes of the job are still running (0 when the query fails).
    pub(crate) fn active_processes(&self) -> u32 {
        let mut info = JOBOBJECT_BASIC_ACCOUNTING_INFORMATION::default();
        // SAFETY: the job handle is owned by `self`; the pointer and size describe `info`,
        // which outlives the call; no returned-length pointer is asked for.
        let ok = unsafe {
            QueryInformationJobObject(
                self.raw(),
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

    fn raw(&self) -> HANDLE {
        self.0.as_raw_handle() as HANDLE
    }
}

/// Blocks until the process behind `handle` has exited (its handle is signalled), for at most
/// `timeout` (`None`: no bound); true once it has exited. Waiting does not consume the exit:
/// the owner still collects the status. False on a timeout and when the wait fails.
pub(crate) fn wait_for_exit(handle: BorrowedHandle<'_>, timeout: Option<Duration>) -> bool {
    let millis = match timeout {
        None => INFINITE,
        // At most just short of INFINITE (49 days).
        Some(timeout) => {
            u32::try_from(timeout.as_millis()).map_or(INFINITE - 1, |ms| ms.min(INFINITE - 1))
        }
    };
    // SAFETY: the handle is valid for the call (borrowed from its owner).
    unsafe { WaitForSingleObject(handle.as_raw_handle() as HANDLE, millis) == WAIT_OBJECT_0 }
}

/// An open handle to a directory, kept to hold its identity (a project root pinned while its
/// plugin runs): through winapi-util's safe wrappers, so no `unsafe` here.
#[derive(Debug)]
pub(crate) struct DirHandle(winapi_util::Handle);

/// A file's identity: (volume serial number, file index).
pub(crate) type FileId = (u64, u64);

/// Opens `path` (a reparse point at its last component is followed; directories open too) and
/// returns its handle, its identity and whether it is a directory. Fails when nothing is
/// there or it cannot be opened.
pub(crate) fn open_dir(path: &std::path::Path) -> io::Result<(DirHandle, FileId, bool)> {
    let dir = winapi_util::Handle::from_path_any(path)?;
    let info = winapi_util::file::information(&dir)?;
    let is_dir = dir.as_file().metadata()?.is_dir();
    let id = (info.volume_serial_number(), info.file_index());
    Ok((DirHandle(dir), id, is_dir))
}

/// The identity of what `path` leads to now (Windows has no `stat` by path that gives the
/// file index: this opens the path and asks its handle).
pub(crate) fn file_id_at(path: &std::path::Path) -> io::Result<FileId> {
    let info = winapi_util::file::information(winapi_util::Handle::from_path_any(path)?)?;
    Ok((info.volume_serial_number(), info.file_index()))
}

/// How many names the directory behind `dir` still has (0 once it was removed).
pub(crate) fn link_count(dir: &DirHandle) -> io::Result<u64> {
    winapi_util::file::information(&dir.0).map(|info| info.number_of_links())
}
