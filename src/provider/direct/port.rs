//! The plugin's stdout, handed between the stdout reader thread and the caller.
//!
//! stdout is non-blocking and its line reader sits behind one mutex: whoever reads holds it.
//! Between requests the reader thread sleeps in `epoll_wait` on stdout (while armed) and a wake
//! descriptor; a request takes the mutex ([`StdoutPort::take`]), disarms stdout in the reader's
//! set and lets go on [`Held`]'s drop. stdout is re-armed lazily, a [`REARM_AFTER`] period after
//! the last request (docs/DECISIONS.md D-PROV-9).

use std::io;
use std::os::fd::AsFd;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

use super::kick::Kicker;
use crate::provider::stdout_buffer::{stdout_lines, Stdout, StdoutLines};
use crate::sys::linux::{Epoll, EventFd};
use crate::sys::unix::set_nonblocking;

const STDOUT_TOKEN: u64 = 0;
const WAKE_TOKEN: u64 = 1;

/// While requests keep coming, how often the reader looks at stdout (and whether the
/// requests have stopped, so it may re-arm stdout and sleep for good).
pub(crate) const REARM_AFTER: std::time::Duration = std::time::Duration::from_millis(10);

/// How the reader thread sleeps next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReaderSleep {
    /// stdout is armed: sleep until it is readable or the wake descriptor is raised.
    Armed,
    /// stdout is disarmed (requests read it): look again after [`REARM_AFTER`].
    Watching,
    /// A request holds stdout: sleep until it ends (it raises the wake descriptor), or
    /// until it is due to be kicked (a blocking read past its deadline).
    RequestHeld,
}

/// What the reader thread and the requests share, behind the port's mutex.
#[derive(Debug)]
pub(crate) struct PortState {
    /// The line reader; `None` once reading has ended (after a fault).
    lines: Option<StdoutLines>,
    /// stdout is armed in the reader's wait set.
    armed: bool,
    /// The reader sleeps (or is about to) without timeout: a request that disarms stdout
    /// must wake it as it ends.
    reader_sleeps_armed: bool,
    /// The reader holds a line it could not queue yet (the channel is full): requests
    /// must take the channel path until it is queued.
    line_in_hand: bool,
    /// Requests that took stdout over, and the count the reader saw at its last look.
    requests: u64,
    requests_seen: u64,
}

impl PortState {
    /// The line reader; `None` once reading has ended.
    pub(crate) fn lines(&mut self) -> Option<&mut StdoutLines> {
        self.lines.as_mut()
    }

    /// Ends reading (after a fault, or once nobody listens): closes stdout.
    pub(crate) fn end(&mut self) {
        self.lines = None;
    }

    /// Marks that the reader holds a line it could not queue (requests take the channel
    /// path meanwhile), or that it has queued it.
    pub(crate) fn set_line_in_hand(&mut self, in_hand: bool) {
        self.line_in_hand = in_hand;
    }
}

/// The plugin's stdout, shared by the reader thread and the caller.
#[derive(Debug)]
pub(crate) struct StdoutPort {
    state: Mutex<PortState>,
    /// The reader thread's wait set: stdout (while armed) and `wake`.
    epoll: Epoll,
    /// Wakes the reader thread (to look, or to end).
    wake: EventFd,
    /// Wakes a caller that sleeps in a blocking read of stdout (`super::kick`); `None` where
    /// `/proc` could not reopen stdout (requests then take the event channel).
    kicker: Option<Arc<Kicker>>,
    /// True while the reader sleeps until the running request ends (which then raises `wake`).
    reader_waits: AtomicBool,
}

impl StdoutPort {
    /// Makes `stdout` non-blocking and builds the reader's wait set, with stdout armed.
    pub(crate) fn new(stdout: Stdout, buffer: usize) -> io::Result<StdoutPort> {
        set_nonblocking(stdout.as_fd())?;
        let epoll = Epoll::new()?;
        let wake = EventFd::new()?;
        epoll.add(stdout.as_fd(), STDOUT_TOKEN, true)?;
        epoll.add(wake.as_fd(), WAKE_TOKEN, true)?;
        let kicker = Kicker::open(stdout.as_fd());
        let mut lines = stdout_lines(stdout, buffer);
        if let Some(kicker) = &kicker {
            lines.get_mut().set_blocking(kicker.blocking());
        }
        Ok(StdoutPort {
            state: Mutex::new(PortState {
                lines: Some(lines),
                armed: true,
                reader_sleeps_armed: true,
                line_in_hand: false,
                requests: 0,
                requests_seen: 0,
            }),
            epoll,
            wake,
            kicker,
            reader_waits: AtomicBool::new(false),
        })
    }

    /// The caller's take-over for one request (waiting while the reader reads what is
    /// there): `None` when the reader holds a line it could not queue, reading has ended, or
    /// there is no kicker, so the request takes the event channel instead.
    #[inline]
    pub(crate) fn take(&self) -> Option<Held<'_>> {
        let kicker = self.kicker.as_deref()?;
        let mut state = self.state.lock();
        if state.line_in_hand {
            return None;
        }
        state.lines.as_ref()?;
        if state.armed {
            // Disarmed, stdout stays in the set but wakes nobody (a hang-up still would:
            // the reader then waits for the mutex and reads the end after this request).
            self.arm_stdout(&state, false).ok()?;
            state.armed = false;
        }
        if state.reader_sleeps_armed && !state.armed {
            // stdout is disarmed under a reader that sleeps without timeout: wake it, so it
            // watches (kicks this request at its deadline, re-arms stdout once requests
            // stop).
            state.reader_sleeps_armed = false;
            self.wake.raise();
        }
        state.requests = state.requests.wrapping_add(1);
        Some(Held {
            state,
            kicker,
            release: Release(self),
        })
    }

    /// Before a request takes the channel path: makes sure the reader watches stdout.
    pub(crate) fn arm_for_reader(&self) {
        let mut state = self.state.lock();
        if state.lines.is_some() && !state.armed {
            match self.arm_stdout(&state, true) {
                Ok(()) => state.armed = true,
                // The reader still looks every period.
                Err(e) => log::warn!("arming the plugin's stdout for its reader failed: {e}"),
            }
        }
    }

    /// The reader thread's sleep: blocks in `epoll_wait` until stdout is readable (while
    /// armed) or the wake descriptor is raised, and for at most [`REARM_AFTER`] when
    /// `Watching`, or until a request sleeping in a blocking read is due to be kicked
    /// (which it then is). Drains the wake descriptor.
    pub(crate) fn reader_sleep(&self, sleep: ReaderSleep) {
        const PERIOD: i32 = REARM_AFTER.as_millis() as i32;
        let mut timeout = match sleep {
            // Until stdout is readable, or the running request ends (it raises the wake
            // descriptor as it lets go of stdout; one that sleeps in a blocking read with
            // a deadline before this thread's next look raises it too).
            ReaderSleep::Armed | ReaderSleep::RequestHeld => -1,
            ReaderSleep::Watching => PERIOD,
        };
        if let Some(kicker) = &self.kicker {
            // Publish the next look, then read the sleeping request's deadline (the fence
            // pairs with the one in `Kicker::sleep`): either this thread sees the deadline,
            // or the request sees a look too late for it and raises the wake descriptor.
            loop {
                kicker.set_watch(timeout);
                fence(Ordering::SeqCst);
                let Some(left) = kicker.kick_if_due() else {
                    break;
                };
                let millis = left.as_millis().saturating_add(1);
                let due = i32::try_from(millis).unwrap_or(i32::MAX);
                if timeout >= 0 && timeout <= due {
                    break;
                }
                timeout = due;
            }
        }
        // No bound, one re-arm period, or until a sleeping request is due: never a busy loop.
        let timeout = u64::try_from(timeout).ok().map(Duration::from_millis);
        let ready: [Option<u64>; 2] = self.epoll.wait(timeout);
        if ready.contains(&Some(WAKE_TOKEN)) {
            self.wake.drain();
        }
        if let Some(kicker) = &self.kicker {
            kicker.kick_if_due();
        }
    }

    /// The kicker of a caller that sleeps in a blocking read, if requests can read that way.
    pub(crate) fn kicker(&self) -> Option<Arc<Kicker>> {
        self.kicker.clone()
    }

    /// The plugin exited: a request still sleeping in a blocking read after the exit
    /// grace is kicked then by the reader thread, woken here to look at that moment.
    pub(crate) fn plugin_exited(&self) {
        if self.kicker.as_ref().is_some_and(|kicker| kicker.exited()) {
            self.wake.raise();
        }
    }

    /// The shared state, for the reader thread (blocks while a request holds it).
    pub(crate) fn lock(&self) -> MutexGuard<'_, PortState> {
        self.state.lock()
    }

    /// The shared state for the reader's look, unless a request holds it; then the
    /// reader's next sleep (`last`: how it slept before). A reader that finds a request
    /// running asks to be woken when it ends and sleeps until then (no look while the
    /// plugin computes); one that finds a request again right after that (requests come
    /// back to back) looks again next period instead, so the requests do not wake it one by
    /// one.
    pub(crate) fn try_lock_for_look(
        &self,
        last: ReaderSleep,
    ) -> Result<MutexGuard<'_, PortState>, ReaderSleep> {
        if let Some(state) = self.state.try_lock() {
            return Ok(state);
        }
        if last == ReaderSleep::RequestHeld {
            return Err(ReaderSleep::Watching);
        }
        self.reader_waits.store(true, Ordering::SeqCst);
        // The request may have ended just before the flag was up: look now.
        match self.state.try_lock() {
            Some(state) => {
                self.reader_waits.store(false, Ordering::SeqCst);
                Ok(state)
            }
            None => Err(ReaderSleep::RequestHeld),
        }
    }

    /// The reader's next sleep, decided after it has read what there was (`last`: how it
    /// slept before): stays armed; or, a whole period after the last request, re-arms
    /// stdout; or watches for another period.
    pub(crate) fn next_sleep(&self, state: &mut PortState, last: ReaderSleep) -> ReaderSleep {
        let quiet = last == ReaderSleep::Watching && state.requests == state.requests_seen;
        if !state.armed && quiet && self.arm_stdout(state, true).is_ok() {
            state.armed = true;
        }
        state.requests_seen = state.requests;
        state.reader_sleeps_armed = state.armed;
        if state.armed {
            ReaderSleep::Armed
        } else {
            ReaderSleep::Watching
        }
    }

    /// Arms stdout in the reader's wait set, or disarms it (it stays in the set, waking nobody).
    /// Fails once reading has ended (stdout is closed).
    fn arm_stdout(&self, state: &PortState, armed: bool) -> io::Result<()> {
        let Some(lines) = &state.lines else {
            return Err(io::ErrorKind::NotConnected.into());
        };
        self.epoll
            .modify(lines.get_ref().stdout(), STDOUT_TOKEN, armed)
    }
}

/// Stdout taken over by the caller for one request; handed back on drop.
pub(crate) struct Held<'a> {
    /// Let go of first (a struct's fields drop in the order declared), before `release` wakes
    /// the reader: it must find stdout free.
    state: MutexGuard<'a, PortState>,
    kicker: &'a Kicker,
    release: Release<'a>,
}

/// The last of [`Held`] to drop: wakes a reader that waits for the request to end.
struct Release<'a>(&'a StdoutPort);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        if self.0.reader_waits.swap(false, Ordering::SeqCst) {
            self.0.wake.raise();
        }
    }
}

impl<'a> Held<'a> {
    /// Before a blocking read until `until`: registers with the kicker, which it returns (then
    /// the caller must check the event channel), and wakes the reader thread if it would look
    /// too late to kick this request at its deadline.
    #[inline]
    pub(crate) fn sleep_in_read(&self, until: Instant) -> &'a Kicker {
        if self.kicker.sleep(until) {
            self.release.0.wake.raise();
        }
        self.kicker
    }

    /// The line reader; `None` after [`Held::end`].
    #[inline]
    pub(crate) fn lines(&mut self) -> Option<&mut StdoutLines> {
        self.state.lines.as_mut()
    }

    /// Ends reading after a fault (the reader must not be used again): closes stdout and
    /// wakes the reader thread, which ends.
    pub(crate) fn end(&mut self) {
        self.state.end();
        self.release.0.wake.raise();
    }
}
