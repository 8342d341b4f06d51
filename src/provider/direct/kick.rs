//! Waking a caller that sleeps in a blocking `read(2)` on the plugin's stdout (Linux).
//!
//! The caller reads a second, blocking open file description of stdout opened through
//! `/proc/self/fd`. The other reasons to stop waiting write one byte into the pipe ("a kick")
//! through a write end opened for that moment only; a kicked request always fails and retires
//! the connection, so the byte is never read as part of a later response. Who kicks, the exit
//! grace ([`EXIT_GRACE`]) and the retry of a kick with no descriptor free ([`KICK_RETRY`]):
//! docs/DECISIONS.md D-PROV-10.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::provider::event::{Wake, EXIT_GRACE};
use crate::sys::linux::{reopen_pipe, Reopen};

const IDLE: u8 = 0;
const SLEEPING: u8 = 1;
const KICKED: u8 = 2;
/// "No such moment" in the nanosecond fields.
const NEVER: u64 = u64::MAX;
/// How soon the watchdog tries again a kick that could not be written (no descriptor free for
/// its write end).
const KICK_RETRY: Duration = Duration::from_millis(10);

/// The blocking description of stdout and the state of the caller that sleeps on it.
#[derive(Debug)]
pub(crate) struct Kicker {
    /// The blocking description of stdout, shared with stdout's buffer, which reads it while
    /// the caller sleeps; held here too, so the write end a kick opens is always this pipe's.
    blocking: Arc<OwnedFd>,
    state: AtomicU8,
    /// The sleeping request's deadline, nanoseconds after `epoch`.
    deadline: AtomicU64,
    /// When the watchdog (the stdout reader thread) looks next, nanoseconds after `epoch`.
    watch: AtomicU64,
    /// The caller was kicked but the byte could not be written: the watchdog retries it.
    kick_unwritten: AtomicBool,
    epoch: Instant,
    /// Tests: how many of the next kicks fail to open their write end.
    #[cfg(test)]
    failing_opens: std::sync::atomic::AtomicU32,
}

impl Kicker {
    /// Opens the blocking description of `stdout` (the read end of the plugin's stdout pipe);
    /// `None` when `/proc` cannot give one (requests then wait on the event channel).
    pub(crate) fn open(stdout: BorrowedFd<'_>) -> Option<Arc<Kicker>> {
        let fd = reopen_pipe(stdout, Reopen::BlockingRead)?;
        Some(Arc::new(Kicker {
            blocking: Arc::new(fd),
            state: AtomicU8::new(IDLE),
            deadline: AtomicU64::new(NEVER),
            watch: AtomicU64::new(NEVER),
            kick_unwritten: AtomicBool::new(false),
            epoch: Instant::now(),
            #[cfg(test)]
            failing_opens: std::sync::atomic::AtomicU32::new(0),
        }))
    }

    /// The blocking description the caller reads (for stdout's buffer).
    pub(crate) fn blocking(&self) -> Arc<OwnedFd> {
        Arc::clone(&self.blocking)
    }

    /// The caller, just before its blocking read: it sleeps until `until`. The caller must
    /// check the event channel after this (the fence pairs with the one in [`Kicker::kick`]).
    /// True when the watchdog looks next after `until`: it must be woken to look earlier.
    pub(crate) fn sleep(&self, until: Instant) -> bool {
        let deadline = self.nanos(until);
        self.deadline.store(deadline, Ordering::Relaxed);
        self.state.store(SLEEPING, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.watch.load(Ordering::SeqCst) > deadline
    }

    /// The watchdog, before it sleeps: it looks next in `timeout_ms` (negative: never, unless
    /// woken).
    pub(crate) fn set_watch(&self, timeout_ms: i32) {
        let at = match u64::try_from(timeout_ms) {
            Ok(ms) => self.nanos(Instant::now() + Duration::from_millis(ms)),
            Err(_) => NEVER,
        };
        self.watch.store(at, Ordering::SeqCst);
    }

    /// The caller, after its read: `false` when it was kicked (a kick byte is in the pipe or
    /// was read: the request must fail and retire the connection).
    pub(crate) fn wake_up(&self) -> bool {
        self.deadline.store(NEVER, Ordering::Relaxed);
        self.kick_unwritten.store(false, Ordering::SeqCst);
        match self
            .state
            .compare_exchange(SLEEPING, IDLE, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => true,
            Err(_) => {
                self.state.store(IDLE, Ordering::SeqCst);
                false
            }
        }
    }

    /// After an event was queued: kicks the caller if it sleeps. A kick whose byte cannot be
    /// written (no descriptor free) is left to the watchdog to retry, at the request's deadline
    /// at the latest.
    pub(crate) fn kick(&self) {
        fence(Ordering::SeqCst);
        if self
            .state
            .compare_exchange(SLEEPING, KICKED, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return;
        }
        // Marked before the attempt, so a watchdog that looks meanwhile retries it: a second
        // byte is harmless, a kicked request never reads another response.
        self.kick_unwritten.store(true, Ordering::SeqCst);
        if self.write_kick() {
            self.kick_unwritten.store(false, Ordering::SeqCst);
        } else {
            log::error!(
                "waking a request that waits for a plugin's response failed (no file descriptor \
                 free?): the stdout reader retries it, by the request's deadline at the latest"
            );
        }
    }

    /// The plugin exited (called after its `Exited` event was queued): a caller that sleeps
    /// now is due to be kicked [`EXIT_GRACE`] from now at the latest (if its response has not
    /// come and stdout has not ended by then, a grandchild holds it). True when a caller
    /// sleeps: the watchdog must then be woken to look at the earlier moment.
    pub(crate) fn exited(&self) -> bool {
        fence(Ordering::SeqCst);
        if self.state.load(Ordering::SeqCst) != SLEEPING {
            return false;
        }
        let due = self.nanos(Instant::now() + EXIT_GRACE);
        self.deadline.fetch_min(due, Ordering::SeqCst);
        true
    }

    /// The watchdog (the stdout reader thread): kicks a sleeping caller whose deadline has
    /// passed; returns how long until it is due, if a caller sleeps.
    /// A kick that could not be written is tried again (every [`KICK_RETRY`] until it is).
    pub(crate) fn kick_if_due(&self) -> Option<Duration> {
        match self.state.load(Ordering::SeqCst) {
            SLEEPING => {}
            KICKED if self.kick_unwritten.load(Ordering::SeqCst) => {
                if !self.write_kick() {
                    return Some(KICK_RETRY);
                }
                self.kick_unwritten.store(false, Ordering::SeqCst);
                return None;
            }
            _ => return None,
        }
        let due = self.deadline.load(Ordering::Relaxed);
        if due == NEVER {
            // Caught in the middle of a wake-up (or a sleep): look again in a moment.
            return Some(Duration::from_millis(1));
        }
        let now = self.nanos(Instant::now());
        if now >= due {
            self.kick();
            return self
                .kick_unwritten
                .load(Ordering::SeqCst)
                .then_some(KICK_RETRY);
        }
        Some(Duration::from_nanos(due - now))
    }

    fn nanos(&self, at: Instant) -> u64 {
        let nanos = at.saturating_duration_since(self.epoch).as_nanos();
        u64::try_from(nanos).unwrap_or(NEVER - 1)
    }

    /// Writes one byte into the pipe through a write end opened for the moment; false when
    /// the write end cannot be opened. (A full pipe needs no byte: the caller has bytes to
    /// read.)
    fn write_kick(&self) -> bool {
        #[cfg(test)]
        if self
            .failing_opens
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return false;
        }
        let Some(writer) = reopen_pipe(self.blocking.as_fd(), Reopen::NonBlockingWrite) else {
            return false;
        };
        let _ = crate::sys::unix::write(writer.as_fd(), b"\n");
        true
    }
}

impl Wake for Kicker {
    /// After an event was queued (or could not be, the channel being full): kicks the caller
    /// if it sleeps in a blocking read, unless the event is the plugin's exit (`exit`: a
    /// response may still follow it, see [`Kicker::exited`]).
    fn notify(&self, exit: bool) {
        if !exit {
            self.kick();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;
    use crate::sys::unix::Interest;

    #[test]
    fn a_kick_wakes_a_blocking_read_and_is_reported_once() {
        let (reader, mut writer) = os_pipe::pipe().unwrap();
        let reader = OwnedFd::from(reader);
        let kicker = Kicker::open(reader.as_fd()).expect("/proc/self/fd");
        kicker.sleep(Instant::now() + Duration::from_secs(60));
        let sleeping = kicker.clone();
        let read = std::thread::spawn(move || {
            let mut file = std::fs::File::from(sleeping.blocking.try_clone().unwrap());
            let mut byte = [0u8; 1];
            file.read_exact(&mut byte).unwrap();
            (byte, sleeping.wake_up())
        });
        std::thread::sleep(Duration::from_millis(50));
        kicker.kick();
        let (byte, not_kicked) = read.join().unwrap();
        assert_eq!(&byte, b"\n");
        assert!(!not_kicked, "the caller learns it was kicked");
        // Not sleeping: a kick writes nothing.
        kicker.kick();
        writer.write_all(b"x").unwrap();
        let mut file = std::fs::File::from(kicker.blocking.try_clone().unwrap());
        let mut byte = [0u8; 1];
        file.read_exact(&mut byte).unwrap();
        assert_eq!(&byte, b"x");
    }

    #[test]
    fn the_watchdog_kicks_only_after_the_deadline() {
        let (reader, _writer) = os_pipe::pipe().unwrap();
        let reader = OwnedFd::from(reader);
        let kicker = Kicker::open(reader.as_fd()).expect("/proc/self/fd");
        assert_eq!(kicker.kick_if_due(), None, "nobody sleeps");
        kicker.sleep(Instant::now() + Duration::from_secs(60));
        let left = kicker.kick_if_due().expect("a sleeper with a deadline");
        assert!(left > Duration::from_secs(50));
        kicker.sleep(Instant::now());
        assert_eq!(kicker.kick_if_due(), None);
        assert!(!kicker.wake_up(), "kicked at its deadline");
    }

    #[test]
    fn a_kick_that_cannot_be_written_is_retried_by_the_watchdog() {
        let (reader, _writer) = os_pipe::pipe().unwrap();
        let reader = OwnedFd::from(reader);
        let kicker = Kicker::open(reader.as_fd()).expect("/proc/self/fd");
        let pending = || {
            let fd = kicker.blocking.as_fd();
            crate::sys::unix::poll([fd], Interest::Readable, Some(Duration::ZERO))[0]
        };
        // An event's kick fails twice (no descriptor free): the watchdog retries it.
        kicker.failing_opens.store(2, Ordering::SeqCst);
        kicker.sleep(Instant::now() + Duration::from_secs(60));
        kicker.kick();
        assert!(!pending(), "no byte written");
        assert_eq!(
            kicker.kick_if_due(),
            Some(KICK_RETRY),
            "the retry fails too"
        );
        assert!(!pending());
        assert_eq!(kicker.kick_if_due(), None, "the retry succeeds");
        assert!(pending(), "the kick's byte is in the pipe");
        assert!(!kicker.wake_up(), "the caller learns it was kicked");
        assert_eq!(kicker.kick_if_due(), None, "nothing left to retry");

        // The watchdog's own kick at the deadline fails: it asks to look again soon.
        let (reader, _writer) = os_pipe::pipe().unwrap();
        let reader = OwnedFd::from(reader);
        let kicker = Kicker::open(reader.as_fd()).expect("/proc/self/fd");
        kicker.failing_opens.store(1, Ordering::SeqCst);
        kicker.sleep(Instant::now());
        assert_eq!(kicker.kick_if_due(), Some(KICK_RETRY));
        assert_eq!(kicker.kick_if_due(), None);
        assert!(!kicker.wake_up());
        // A caller that wakes (its response came) ends the retries.
        kicker.failing_opens.store(1, Ordering::SeqCst);
        kicker.sleep(Instant::now());
        assert_eq!(kicker.kick_if_due(), Some(KICK_RETRY));
        assert!(!kicker.wake_up(), "kicked, even though no byte was written");
        assert_eq!(kicker.kick_if_due(), None, "no retry after the wake-up");
    }

    #[test]
    fn a_caller_that_wakes_first_is_not_kicked() {
        let (reader, _writer) = os_pipe::pipe().unwrap();
        let reader = OwnedFd::from(reader);
        let kicker = Kicker::open(reader.as_fd()).expect("/proc/self/fd");
        kicker.sleep(Instant::now() + Duration::from_secs(60));
        assert!(kicker.wake_up());
        kicker.kick();
        kicker.sleep(Instant::now() + Duration::from_secs(60));
        assert!(kicker.wake_up(), "a kick after the wake-up changes nothing");
    }
}
