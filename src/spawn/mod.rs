//! Starting child processes tied to the host, below both `env` (init_scripts) and `provider`
//! (plugins): the long-lived spawner threads that give every child a parent-death signal, the
//! exit wait that does not reap, the cancel handle of a batch of children being started, and
//! the one supervisor of a child's helper threads (`threads`).
//! On Windows a child's tree is a Job Object instead (`windows`).

mod cancel;
mod threads;
#[cfg(unix)]
mod tied;
#[cfg(windows)]
pub(crate) mod windows;

pub use cancel::AdmissionCancel;
pub(crate) use cancel::Cancellable;
pub(crate) use threads::ThreadSet;
#[cfg(unix)]
pub(crate) use tied::spawn_tied;

#[cfg(unix)]
use std::io;

/// Blocks until the process `pid` has exited, without reaping it (`waitid` with `WNOWAIT`).
#[cfg(unix)]
pub(crate) fn wait_exit_noreap(pid: libc::pid_t) {
    loop {
        // SAFETY: zeroed siginfo is a valid out-parameter for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            return;
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}
