//! Unix: non-blocking stdin, `poll(2)` for a full pipe, and a pidfd to watch the exit where the
//! kernel offers one (the system calls are `crate::sys`'s).

use std::os::fd::{AsFd, OwnedFd};
use std::process::{ChildStderr, ChildStdin};
use std::sync::OnceLock;

use super::FORCE_EXIT_WAITER_ENV;
use crate::provider::process::PluginProcess;
use crate::sys::unix::{poll, Interest};

/// What the stderr drain watches to see the plugin exit.
pub(super) type ExitFd = OwnedFd;

/// One `write(2)` of stdin.
#[inline]
pub(super) fn write(stdin: &ChildStdin, bytes: &[u8]) -> std::io::Result<usize> {
    crate::sys::unix::write(stdin.as_fd(), bytes)
}

/// The writer, after a write the full pipe cut short: blocks until stdin takes bytes again.
pub(super) fn wait_writable(stdin: &ChildStdin) {
    poll([stdin.as_fd()], Interest::Writable, None);
}

/// The stderr drain's sleep: until stderr (while `stderr_open`) or the pidfd is readable;
/// returns which of them are.
pub(super) fn wait_stderr_or_exit(
    stderr: &ChildStderr,
    stderr_open: bool,
    pidfd: &OwnedFd,
) -> (bool, bool) {
    if stderr_open {
        let [err, pid] = poll([stderr.as_fd(), pidfd.as_fd()], Interest::Readable, None);
        (err, pid)
    } else {
        (false, poll([pidfd.as_fd()], Interest::Readable, None)[0])
    }
}

/// True when [`FORCE_EXIT_WAITER_ENV`] is `1`.
fn exit_waiter_forced() -> bool {
    static FORCED: OnceLock<bool> = OnceLock::new();
    *FORCED.get_or_init(|| std::env::var_os(FORCE_EXIT_WAITER_ENV).is_some_and(|v| v == "1"))
}

/// A pidfd to watch the plugin's exit, unless the waiter thread is forced.
pub(super) fn exit_pidfd(process: &PluginProcess) -> Option<OwnedFd> {
    if exit_waiter_forced() {
        None
    } else {
        open_pidfd(process)
    }
}

/// A pidfd for the plugin (Linux 5.3+), readable once it has exited; it never reaps.
#[cfg(target_os = "linux")]
fn open_pidfd(process: &PluginProcess) -> Option<OwnedFd> {
    crate::sys::linux::pidfd_open(process.pgid())
}

/// Other systems have no pidfd: the waiter thread watches the exit.
#[cfg(not(target_os = "linux"))]
fn open_pidfd(_process: &PluginProcess) -> Option<OwnedFd> {
    None
}
