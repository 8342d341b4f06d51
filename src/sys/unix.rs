//! Unix system calls, through rustix's safe API: no `unsafe` here.
//!
//! Errors come back as [`io::Error`] with the system's `errno` (`raw_os_error()`), so callers
//! match on [`io::ErrorKind`] as with the standard library.

use std::io;
use std::os::fd::BorrowedFd;
use std::process::Child;
use std::time::Duration;

use rustix::buffer::spare_capacity;
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::process::{WaitId, WaitIdOptions};

/// A process id (and, for a process that leads its group, the group's id).
pub(crate) use rustix::process::Pid;
/// A signal number, with this system's constants (`Signal::KILL`…).
pub(crate) use rustix::process::Signal;

/// The id of the process `child` (its group's id too, when it was spawned with
/// `CommandExt::process_group(0)`).
pub(crate) fn pid_of(child: &Child) -> Pid {
    Pid::from_child(child)
}

/// Sends SIGKILL to every process of the group `group`. Fails with `ESRCH` when the group has no
/// process left. The caller must know the group is still its own: signal it only while its
/// leader is unreaped (after the reap the id may be reused).
pub(crate) fn kill_group(group: Pid) -> io::Result<()> {
    Ok(rustix::process::kill_process_group(group, Signal::KILL)?)
}

/// True while the process group `group` has a process (signal 0: nothing is sent). False once
/// it is empty, and on any error.
pub(crate) fn group_has_members(group: Pid) -> bool {
    rustix::process::test_kill_process_group(group).is_ok()
}

/// Blocks until the child `pid` has exited, without reaping it (`waitid` with `WEXITED |
/// WNOWAIT`): its status stays to be collected by its owner. Restarts after a signal; returns
/// on any other failure too (`ECHILD`: not a child of this process, or reaped already).
pub(crate) fn wait_exit_noreap(pid: Pid) {
    loop {
        match rustix::process::waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Err(Errno::INTR) => continue,
            Ok(_) | Err(_) => return,
        }
    }
}

/// Makes the open file description behind `fd` non-blocking (`O_NONBLOCK`): a read or write
/// that would wait fails with [`io::ErrorKind::WouldBlock`] instead. Fails when `fcntl` does.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    Ok(rustix::fs::fcntl_setfl(fd, flags | OFlags::NONBLOCK)?)
}

/// One `read(2)` from `fd` into the whole capacity of `buffer`, which then holds exactly the
/// bytes read (`Ok(0)` with `buffer` empty: the end of the stream). No byte of the buffer is
/// written but by the system call (no zero-fill: a large, mostly unused buffer keeps its
/// pages untouched). On failure `buffer` is empty; a signal gives
/// [`io::ErrorKind::Interrupted`], a non-blocking descriptor with nothing to read
/// [`io::ErrorKind::WouldBlock`].
#[inline]
pub(crate) fn read_into(fd: BorrowedFd<'_>, buffer: &mut Vec<u8>) -> io::Result<usize> {
    buffer.clear();
    Ok(rustix::io::read(fd, spare_capacity(buffer))?)
}

/// One `write(2)` of `bytes` to `fd`: how many were written (fewer than asked when a pipe is
/// nearly full). A non-blocking descriptor whose pipe is full gives
/// [`io::ErrorKind::WouldBlock`]; a pipe with no reader left, `EPIPE` (the host ignores
/// SIGPIPE, as every Rust program does).
#[inline]
pub(crate) fn write(fd: BorrowedFd<'_>, bytes: &[u8]) -> io::Result<usize> {
    Ok(rustix::io::write(fd, bytes)?)
}

/// What [`poll`] waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interest {
    /// Bytes to read (or the end of the stream).
    Readable,
    /// Room to write.
    Writable,
}

/// Blocks in `poll(2)` until one of `fds` is ready for `interest`, hung up or failed, or until
/// `timeout` has passed (`None`: no bound; `Some(Duration::ZERO)`: only looks). Returns, for
/// each descriptor, whether it is ready (or hung up, or failed). A signal restarts the wait
/// (with the whole timeout: meant for no bound or none); any other failure returns every
/// descriptor as not ready.
pub(crate) fn poll<const N: usize>(
    fds: [BorrowedFd<'_>; N],
    interest: Interest,
    timeout: Option<Duration>,
) -> [bool; N] {
    let events = match interest {
        Interest::Readable => PollFlags::IN,
        Interest::Writable => PollFlags::OUT,
    };
    let mut polled = fds.map(|fd| PollFd::from_borrowed_fd(fd, events));
    // A timeout too long for a `timespec` (billions of years) is no bound.
    let timeout = timeout.and_then(|timeout| Timespec::try_from(timeout).ok());
    loop {
        match rustix::event::poll(&mut polled, timeout.as_ref()) {
            Err(Errno::INTR) => continue,
            Ok(_) => break,
            Err(_) => return [false; N],
        }
    }
    let mut ready = [false; N];
    for (ready, polled) in ready.iter_mut().zip(&polled) {
        *ready = !polled.revents().is_empty();
    }
    ready
}
