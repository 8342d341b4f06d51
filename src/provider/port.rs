//! The plugin's stdout, handed between the stdout reader thread and the caller (Linux).
//!
//! Between requests the reader thread watches stdout and reads whatever the plugin writes
//! unasked (as on every other system). During a request the caller takes stdout over and reads
//! the response itself, so the plugin's write wakes the caller and no other thread: the call
//! costs the two thread wake-ups of a plain pipe round trip, not three.
//!
//! The hand-over, without waking the reader:
//! - stdout is non-blocking and its line reader sits behind one mutex. Whoever reads holds it.
//! - The reader thread sleeps in `epoll_wait` on a set of its own: stdout (while armed) and a
//!   wake descriptor. Once stdout is readable it takes the mutex, reads every line there is,
//!   hands each over on the event channel and goes back to sleep.
//! - The caller takes the mutex with a try-lock ([`StdoutPort::take`]) and disarms stdout in
//!   the reader's set (`epoll_ctl`: another thread's wait set can be changed without waking
//!   it). It then reads the response itself, sleeping in `poll(2)` on stdout and the event
//!   channel's wake descriptor ([`EventWait::wait_direct`]). When the request ends it re-arms
//!   stdout and lets go of the mutex ([`Held`]'s drop).
//! - If the reader holds the mutex (it is reading unasked output), the try-lock fails and the
//!   request takes the channel path of every other system: nothing waits on anything else.
//! - After a read fault the caller ends reading ([`Held::end`]): stdout closes, and the wake
//!   descriptor tells the reader thread to end as it would have after the fault itself.

#[cfg(target_os = "linux")]
pub(crate) use linux::{Held, StdoutPort, SUPPORTED};
#[cfg(not(target_os = "linux"))]
pub(crate) use other::{Held, StdoutPort, SUPPORTED};

use std::io::BufReader;

use super::wait::readiness;
#[allow(unused_imports)]
use super::wait::EventWait;
use crate::frame::LineReader;

/// The line reader over the plugin's stdout.
pub(crate) type StdoutLines = LineReader<BufReader<readiness::Stdout>>;

#[cfg(target_os = "linux")]
mod linux {
    use std::io::{self, BufReader, ErrorKind};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::time::Instant;

    use crossbeam_channel::RecvTimeoutError;
    use parking_lot::{Mutex, MutexGuard};

    use super::super::event::Event;
    use super::super::wait::{readiness, EventWait};
    use super::StdoutLines;
    use crate::frame::LineReader;

    /// This system can hand stdout over (epoll).
    pub(crate) const SUPPORTED: bool = true;

    const STDOUT_TOKEN: u64 = 0;
    const WAKE_TOKEN: u64 = 1;

    /// The plugin's stdout, shared by the reader thread and the caller.
    #[derive(Debug)]
    pub(crate) struct StdoutPort {
        /// The line reader; `None` once reading has ended (after a fault).
        lines: Mutex<Option<StdoutLines>>,
        /// stdout's descriptor, open while `lines` is `Some`.
        stdout: RawFd,
        /// The reader thread's wait set: stdout (while armed) and `wake`.
        epoll: OwnedFd,
        /// An eventfd that wakes the reader thread to end.
        wake: OwnedFd,
    }

    impl StdoutPort {
        /// Makes `stdout` non-blocking and builds the reader's wait set, with stdout armed.
        pub(crate) fn new(stdout: readiness::Stdout, buffer: usize) -> io::Result<StdoutPort> {
            let fd = stdout.as_raw_fd();
            set_nonblocking(fd)?;
            // SAFETY: epoll_create1 and eventfd take flags and return a new descriptor or -1.
            let epoll = owned(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
            let wake = owned(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
            let port = StdoutPort {
                lines: Mutex::new(Some(LineReader::new(BufReader::with_capacity(
                    buffer, stdout,
                )))),
                stdout: fd,
                epoll,
                wake,
            };
            port.control(libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, STDOUT_TOKEN)?;
            let wake_fd = port.wake.as_raw_fd();
            port.control(
                libc::EPOLL_CTL_ADD,
                wake_fd,
                libc::EPOLLIN as u32,
                WAKE_TOKEN,
            )?;
            Ok(port)
        }

        /// The caller's take-over for one request: `None` when the reader thread is reading
        /// right now (or reading has ended), so the request uses the event channel instead.
        #[inline]
        pub(crate) fn take(&self) -> Option<Held<'_>> {
            let lines = self.lines.try_lock()?;
            lines.as_ref()?;
            // Disarmed, stdout stays in the set but wakes nobody (a hang-up still would: the
            // reader then waits for the mutex, and reads the end of stdout after this request).
            self.control(libc::EPOLL_CTL_MOD, self.stdout, 0, STDOUT_TOKEN)
                .ok()?;
            Some(Held { port: self, lines })
        }

        /// The reader thread's sleep: blocks in `epoll_wait` until stdout is readable (while
        /// armed) or the wake descriptor is raised; no timeout.
        pub(crate) fn wait_for_reader(&self) {
            let mut ready = [libc::epoll_event { events: 0, u64: 0 }; 2];
            // SAFETY: a valid epoll descriptor and a buffer of two events; an infinite timeout
            // is a blocking wait, not a poll loop.
            while unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), ready.as_mut_ptr(), 2, -1) } < 0
            {
                if io::Error::last_os_error().kind() != ErrorKind::Interrupted {
                    return;
                }
            }
        }

        /// The line reader, for the reader thread (blocks while a caller holds it).
        pub(crate) fn lock(&self) -> MutexGuard<'_, Option<StdoutLines>> {
            self.lines.lock()
        }

        fn control(&self, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
            let mut event = libc::epoll_event { events, u64: token };
            // SAFETY: a valid epoll descriptor, a descriptor open while `lines` is Some, and a
            // valid event.
            if unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut event) } < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        }

        fn raise_wake(&self) {
            let one = 1u64.to_ne_bytes();
            // SAFETY: a non-blocking write of 8 bytes to an eventfd we own.
            let _ = unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), 8) };
        }
    }

    /// Stdout taken over by the caller for one request; re-armed for the reader on drop.
    pub(crate) struct Held<'a> {
        port: &'a StdoutPort,
        lines: MutexGuard<'a, Option<StdoutLines>>,
    }

    impl Held<'_> {
        /// The line reader; `None` after [`Held::end`].
        #[inline]
        pub(crate) fn lines(&mut self) -> Option<&mut StdoutLines> {
            self.lines.as_mut()
        }

        /// Ends reading after a fault (the reader must not be used again): closes stdout and
        /// wakes the reader thread, which ends.
        pub(crate) fn end(&mut self) {
            *self.lines = None;
            self.port.raise_wake();
        }

        /// Sleeps until stdout is readable (`Ok(None)`) or an event is queued, until `until`.
        #[inline]
        pub(crate) fn wait(
            &self,
            events: &EventWait,
            until: Instant,
        ) -> Result<Option<Event>, RecvTimeoutError> {
            events.wait_direct(self.port.stdout, until)
        }
    }

    impl Drop for Held<'_> {
        fn drop(&mut self) {
            if self.lines.is_some() {
                let port = self.port;
                let armed = libc::EPOLLIN as u32;
                if let Err(e) = port.control(libc::EPOLL_CTL_MOD, port.stdout, armed, STDOUT_TOKEN)
                {
                    // Cannot happen with a valid set and descriptor; the reader would stay blind.
                    log::error!("re-arming the plugin's stdout for its reader failed: {e}");
                }
            }
        }
    }

    fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor just created and owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn set_nonblocking(fd: RawFd) -> io::Result<()> {
        // SAFETY: fcntl on a descriptor we own.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Elsewhere the reader thread always reads stdout: the same types, never constructed.
#[cfg(not(target_os = "linux"))]
mod other {
    use std::time::Instant;

    use crossbeam_channel::RecvTimeoutError;

    use super::super::event::Event;
    use super::super::wait::EventWait;
    use super::StdoutLines;

    /// No hand-over here.
    pub(crate) const SUPPORTED: bool = false;

    /// Never constructed here.
    #[derive(Debug)]
    pub(crate) enum StdoutPort {}

    impl StdoutPort {
        #[cfg_attr(windows, allow(dead_code))]
        pub(crate) fn new(
            _stdout: crate::provider::wait::readiness::Stdout,
            _buffer: usize,
        ) -> std::io::Result<StdoutPort> {
            Err(std::io::ErrorKind::Unsupported.into())
        }

        pub(crate) fn take(&self) -> Option<Held<'_>> {
            match *self {}
        }
    }

    /// Never constructed here.
    pub(crate) enum Held<'a> {
        #[allow(dead_code)]
        Never(std::convert::Infallible, &'a ()),
    }

    impl Held<'_> {
        pub(crate) fn lines(&mut self) -> Option<&mut StdoutLines> {
            match *self {
                Held::Never(never, _) => match never {},
            }
        }
        pub(crate) fn end(&mut self) {
            match *self {
                Held::Never(never, _) => match never {},
            }
        }
        pub(crate) fn wait(
            &self,
            _events: &EventWait,
            _until: Instant,
        ) -> Result<Option<Event>, RecvTimeoutError> {
            match *self {
                Held::Never(never, _) => match never {},
            }
        }
    }
}
