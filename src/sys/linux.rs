//! Linux-only system calls: the pidfd of a plugin, the parent-death signal of a child, the
//! stdout reader's epoll set and eventfd, and a second open file description of a pipe.
//!
//! Through rustix's safe API, except the one `unsafe` block of `CommandExt::pre_exec`.
//! Items of the direct read alone are unused under the test-only `webcodex_portable_wait` cfg.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

use rustix::event::{epoll, EventfdFlags, Timespec};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal};

/// A pidfd for the process `pid` (Linux 5.3 and later): readable once the process has exited;
/// it never reaps. `None` when the kernel has no `pidfd_open` (`ENOSYS`), the process is gone,
/// or no descriptor is free.
pub(crate) fn pidfd_open(pid: Pid) -> Option<OwnedFd> {
    rustix::process::pidfd_open(pid, PidfdFlags::empty()).ok()
}

/// Makes the child that `command` spawns get SIGKILL when the thread that forked it exits
/// (`prctl(PR_SET_PDEATHSIG)`, set in the child before `exec`), and refuse to start when this
/// process died before that took effect: the spawn then fails with `ESRCH` (the child's parent
/// is no longer this process). Makes `Command::spawn` take the `fork` path (`pre_exec`).
pub(crate) fn die_with_parent(command: &mut Command) {
    let host = rustix::process::getpid();
    let in_child = move || -> io::Result<()> {
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        if rustix::process::getppid() != Some(host) {
            // The host died before prctl took effect: do not start at all.
            return Err(Errno::SRCH.into());
        }
        Ok(())
    };
    // SAFETY: the closure runs in the child between `fork` and `exec`, where only
    // async-signal-safe work is sound: it makes two system calls (rustix calls the kernel
    // itself: no lock, no allocation) and builds an `io::Error` from an errno (no allocation).
    // It captures only a `Pid` (`Copy`).
    unsafe {
        command.pre_exec(in_child);
    }
}

/// An epoll set (close-on-exec) whose entries carry a `u64` token.
#[derive(Debug)]
#[cfg_attr(webcodex_portable_wait, allow(dead_code))]
pub(crate) struct Epoll(OwnedFd);

#[cfg_attr(webcodex_portable_wait, allow(dead_code))]
impl Epoll {
    /// A new, empty set. Fails when no descriptor is free.
    pub(crate) fn new() -> io::Result<Epoll> {
        Ok(Epoll(epoll::create(epoll::CreateFlags::CLOEXEC)?))
    }

    /// Adds `fd` with `token`, watched for bytes to read when `readable`; otherwise it wakes
    /// nobody, but for a hang-up or an error, which epoll always reports. Fails when `fd` is in
    /// the set already or cannot be watched.
    pub(crate) fn add(&self, fd: BorrowedFd<'_>, token: u64, readable: bool) -> io::Result<()> {
        Ok(epoll::add(
            &self.0,
            fd,
            epoll::EventData::new_u64(token),
            Self::flags(readable),
        )?)
    }

    /// Changes the entry of `fd` (added before) as [`Epoll::add`] sets it. Fails when `fd` is
    /// not in the set.
    pub(crate) fn modify(&self, fd: BorrowedFd<'_>, token: u64, readable: bool) -> io::Result<()> {
        Ok(epoll::modify(
            &self.0,
            fd,
            epoll::EventData::new_u64(token),
            Self::flags(readable),
        )?)
    }

    fn flags(readable: bool) -> epoll::EventFlags {
        if readable {
            epoll::EventFlags::IN
        } else {
            epoll::EventFlags::empty()
        }
    }

    /// Blocks until an entry is ready or `timeout` has passed (`None`: no bound); the tokens
    /// of the ready entries, at most `N`. A signal restarts the wait (with the whole timeout);
    /// any other failure returns no token.
    pub(crate) fn wait<const N: usize>(&self, timeout: Option<Duration>) -> [Option<u64>; N] {
        // A timeout too long for a `timespec` (billions of years) is no bound.
        let timeout = timeout.and_then(|timeout| Timespec::try_from(timeout).ok());
        let mut events = [MaybeUninit::<epoll::Event>::uninit(); N];
        let mut tokens = [None; N];
        loop {
            match epoll::wait(&self.0, &mut events, timeout.as_ref()) {
                Ok((ready, _)) => {
                    for (token, event) in tokens.iter_mut().zip(ready.iter()) {
                        *token = Some(event.data.u64());
                    }
                    return tokens;
                }
                Err(Errno::INTR) => {}
                Err(_) => return tokens,
            }
        }
    }
}

/// An eventfd (non-blocking, close-on-exec): one side raises it, the other drains it.
#[derive(Debug)]
#[cfg_attr(webcodex_portable_wait, allow(dead_code))]
pub(crate) struct EventFd(OwnedFd);

#[cfg_attr(webcodex_portable_wait, allow(dead_code))]
impl EventFd {
    /// A new eventfd, not readable. Fails when no descriptor is free.
    pub(crate) fn new() -> io::Result<EventFd> {
        let flags = EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC;
        Ok(EventFd(rustix::event::eventfd(0, flags)?))
    }

    /// Makes it readable. Never blocks; cannot fail but for a saturated counter, which is
    /// readable already.
    pub(crate) fn raise(&self) {
        let _ = rustix::io::write(&self.0, &1u64.to_ne_bytes());
    }

    /// Makes it not readable (one read resets the counter). Never blocks.
    pub(crate) fn drain(&self) {
        let mut sink = [0u8; 8];
        let _ = rustix::io::read(&self.0, &mut sink);
    }
}

impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// How [`reopen_pipe`] opens the pipe again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(webcodex_portable_wait, allow(dead_code))]
pub(crate) enum Reopen {
    /// Its read end, blocking.
    BlockingRead,
    /// Its write end, non-blocking.
    NonBlockingWrite,
}

/// Opens `/proc/self/fd/N` for the descriptor `fd` (close-on-exec): for a pipe, a new open
/// file description of the same pipe, with flags of its own (a blocking read end beside a
/// non-blocking one, or a write end). `None` when `/proc` is not mounted or no descriptor is
/// free.
#[cfg_attr(webcodex_portable_wait, allow(dead_code))]
pub(crate) fn reopen_pipe(fd: BorrowedFd<'_>, how: Reopen) -> Option<OwnedFd> {
    let flags = match how {
        Reopen::BlockingRead => OFlags::RDONLY,
        Reopen::NonBlockingWrite => OFlags::WRONLY | OFlags::NONBLOCK,
    };
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    rustix::fs::open(path.as_str(), flags | OFlags::CLOEXEC, Mode::empty()).ok()
}
