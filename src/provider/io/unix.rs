//! Unix: non-blocking stdin, `poll(2)` for a full pipe, and a pidfd to watch the exit where the
//! kernel offers one.

use std::io::ErrorKind;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::process::{ChildStderr, ChildStdin};
use std::sync::OnceLock;

use super::FORCE_EXIT_WAITER_ENV;
use crate::provider::process::PluginProcess;

/// What the stderr drain watches to see the plugin exit.
pub(super) type ExitFd = OwnedFd;

/// Makes the descriptor `fd` non-blocking.
pub(crate) fn set_nonblocking(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor we own.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// One `write(2)` of stdin (a plain system call, `crate::syscall`).
pub(super) fn write(stdin: &ChildStdin, bytes: &[u8]) -> std::io::Result<usize> {
    crate::syscall::write(stdin.as_raw_fd(), bytes)
}

/// The writer, after a write the full pipe cut short: blocks until stdin takes bytes again.
pub(super) fn wait_writable(stdin: &ChildStdin) {
    poll_forever([stdin.as_raw_fd()], libc::POLLOUT);
}

/// The stderr drain's sleep: until stderr (while `stderr_open`) or the pidfd is readable;
/// returns which of them are.
pub(super) fn wait_stderr_or_exit(
    stderr: &ChildStderr,
    stderr_open: bool,
    pidfd: &OwnedFd,
) -> (bool, bool) {
    if stderr_open {
        let [err, pid] = poll_forever([stderr.as_raw_fd(), pidfd.as_raw_fd()], libc::POLLIN);
        (err != 0, pid != 0)
    } else {
        (
            false,
            poll_forever([pidfd.as_raw_fd()], libc::POLLIN)[0] != 0,
        )
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
        open_pidfd(process.pid() as libc::pid_t)
    }
}

/// Other systems have no pidfd: the waiter thread watches the exit.
#[cfg(not(target_os = "linux"))]
fn open_pidfd(_pid: libc::pid_t) -> Option<OwnedFd> {
    None
}

/// A pidfd for `pid` (Linux 5.3+), readable once the process has exited; it never reaps.
#[cfg(target_os = "linux")]
fn open_pidfd(pid: libc::pid_t) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor was just created and is owned by nobody else.
    Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Blocks in `poll(2)` until one of `fds` has `events` (or hung up, or failed); returns their
/// `revents`.
fn poll_forever<const N: usize>(fds: [RawFd; N], events: libc::c_short) -> [libc::c_short; N] {
    let mut polled = fds.map(|fd| libc::pollfd {
        fd,
        events,
        revents: 0,
    });
    // SAFETY: `polled` is a valid array of pollfd; an infinite timeout is a blocking wait.
    while unsafe { libc::poll(polled.as_mut_ptr(), N as libc::nfds_t, -1) } < 0 {
        if std::io::Error::last_os_error().kind() != ErrorKind::Interrupted {
            break;
        }
    }
    polled.map(|p| p.revents)
}
