//! The Linux response path: the caller reads its response from stdout itself.
//!
//! During a request the caller takes stdout over ([`port`]) and reads the response line, so the
//! plugin's write wakes the caller and no other thread. It sleeps in a blocking `read(2)` where
//! it can ([`kick`]), else in `poll(2)` on stdout and an eventfd the senders raise
//! ([`wait_direct`]). A request that cannot take stdout over, or that spins, waits on the event
//! channel as the portable path does (docs/DECISIONS.md 1.21, 1.24, 1.26).

mod kick;
mod port;

use std::io::{self, ErrorKind};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError, TrySendError};

use super::event::{self, Event, EventSender};
use super::fault::{Fault, Read, Sent};
use super::io::ResponseThreads;
use super::session::Session;
use super::stdout_buffer::{Stdout, StdoutLines, STDOUT_BUFFER};
use crate::frame::{Envelope, RequestEncoder};
use kick::Kicker;
use port::{Held, ReaderSleep, StdoutPort, WakeFd};

/// The name [`crate::provider::response_wait_mode`] reports for this path.
#[cfg(any(test, feature = "internals"))]
pub(crate) const NAME: &str = "direct";

/// The response path of one provider: its stdout, shared by the reader thread and requests,
/// and the senders' wake-up of a caller that sleeps on stdout.
#[derive(Debug)]
pub(crate) struct ResponsePath {
    port: Arc<StdoutPort>,
    wake: Arc<Wake>,
}

impl ResponsePath {
    /// Makes stdout shareable between the reader thread and requests; also returns the
    /// threads' part: the senders' wake-up, the reader's body and the exit watch's hook.
    pub(crate) fn open(stdout: Stdout) -> io::Result<(ResponsePath, ResponseThreads)> {
        let port = Arc::new(StdoutPort::new(stdout, STDOUT_BUFFER)?);
        let wake = Arc::new(Wake {
            armed: AtomicBool::new(false),
            signal: WakeFd::new()?,
            kicker: port.kicker(),
        });
        let (reader, exited) = (port.clone(), port.clone());
        let threads = ResponseThreads {
            wake: Some(wake.clone()),
            reader: Box::new(move |events, more_pending, spare_lines| {
                read_lines(&reader, events, more_pending, spare_lines)
            }),
            on_exit: Box::new(move || exited.plugin_exited()),
        };
        Ok((ResponsePath { port, wake }, threads))
    }
}

/// Sends one request and waits for its response: with stdout taken over where it can, else on
/// the event channel.
#[inline]
pub(crate) fn round_trip(
    path: &ResponsePath,
    session: &mut Session,
    deadline: Instant,
    spin: Duration,
    encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
) -> Result<Envelope, Fault> {
    let port = &path.port;
    if let Some(mut held) = spin.is_zero().then(|| port.take()).flatten() {
        let result = session.round_trip_direct(&mut held, &path.wake, deadline, encode);
        let pending = held.lines().is_some_and(|lines| has_pending(lines));
        session
            .channels
            .more_pending
            .store(pending, Ordering::Release);
        return result;
    }
    // The channel path needs the reader to watch stdout.
    port.arm_for_reader();
    session.round_trip_channel(deadline, spin, encode)
}

impl Session {
    /// [`Session::round_trip_channel`] with stdout taken over: the caller reads the response.
    fn round_trip_direct(
        &mut self,
        held: &mut Held<'_>,
        wake: &Wake,
        deadline: Instant,
        encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
    ) -> Result<Envelope, Fault> {
        self.ensure_nothing_queued()?;
        self.ensure_nothing_buffered(held)?;
        let id = self.encode_frame(encode)?;
        let written = self.write_frame(deadline)?;
        let may_block = written.queued.is_none();
        let next = |session: &mut Session, until| session.read_event(held, wake, until, may_block);
        self.await_response(deadline, next, id, written)
    }

    /// With stdout taken over: no byte the plugin wrote unasked is buffered (the rest of a
    /// line, or lines behind the last response); else a fault, nothing sent.
    #[inline]
    fn ensure_nothing_buffered(&mut self, held: &mut Held<'_>) -> Result<(), Fault> {
        let Some(lines) = held.lines().filter(|lines| has_pending(lines)) else {
            return Ok(());
        };
        let event = match lines.read_response_line_into(&mut self.spare) {
            Ok(line) => Event::Message(line),
            // The rest of an unfinished line.
            Err(fault) if fault.is_would_block() => {
                return Err(Fault::line(Sent::Nothing, Read::Unasked))
            }
            Err(fault) => {
                held.end();
                Event::ReadFault(fault.code())
            }
        };
        Err(self.event_fault(Sent::Nothing, event))
    }

    /// With stdout taken over: the next response line read from stdout, or an event from the
    /// other threads (exit, a write failure, `stop()`), or the timeout at `until`.
    ///
    /// It sleeps in a blocking read where it can and `may_block` (the whole frame was written
    /// by the caller: no writer job, whose failure or whose untouched frame at the deadline
    /// would end the request without retiring the connection), else in `poll(2)`.
    #[inline]
    fn read_event(
        &mut self,
        held: &mut Held<'_>,
        wake: &Wake,
        until: Instant,
        may_block: bool,
    ) -> Result<Event, RecvTimeoutError> {
        if held.lines().is_none() {
            // Reading ended after a fault or a kick: only the other threads' events are left.
            return self.channels.events.recv_deadline(until);
        }
        if let Some(kicker) = held.kicker().filter(|_| may_block) {
            return self.read_event_blocking(held, kicker, until);
        }
        // Nothing buffered: the response cannot be there before stdout is readable, so sleep
        // first rather than try a read that would fail.
        let mut readable = held.lines().is_some_and(|lines| has_pending(lines));
        loop {
            if let Some(lines) = held.lines().filter(|_| readable) {
                match lines.read_response_line_into(&mut self.spare) {
                    Ok(line) => return Ok(Event::Message(line)),
                    Err(fault) if fault.is_would_block() => {}
                    Err(fault) => return Ok(self.read_ended(held, fault.code())),
                }
            }
            match held.wait(&self.channels.events, wake, until)? {
                Some(event) => return Ok(event),
                None => readable = true,
            }
        }
    }

    /// [`Session::read_event`] sleeping in a blocking read of stdout ([`kick`]): the next
    /// response line, or an event that ended the sleep (the sender kicked it), or the timeout
    /// (the reader thread kicked it at `until`). A kicked read ends reading: the kick's byte
    /// may be in what was read or still in the pipe, and the request fails and retires the
    /// connection whatever it was.
    fn read_event_blocking(
        &mut self,
        held: &mut Held<'_>,
        kicker: &Kicker,
        until: Instant,
    ) -> Result<Event, RecvTimeoutError> {
        if Instant::now() >= until {
            return Err(RecvTimeoutError::Timeout);
        }
        held.sleep_in_read(kicker, until);
        let spare = &mut self.spare;
        let read = match self.channels.events.is_empty() {
            true => held.lines().map(|lines| {
                lines.get_mut().read_from(Some(kicker.blocking_fd()));
                let read = lines.read_response_line_into(spare);
                lines.get_mut().read_from(None);
                read
            }),
            // An event came first (the plugin's exit, a write failure, `stop()`).
            false => None,
        };
        if !kicker.wake_up() {
            if let Some(Ok(line)) = read {
                self.recycle(line);
            }
            held.end();
            return match self.channels.events.try_recv() {
                Ok(event) => Ok(event),
                Err(_) => Err(RecvTimeoutError::Timeout),
            };
        }
        match read {
            None => self
                .channels
                .events
                .try_recv()
                .map_err(|_| RecvTimeoutError::Disconnected),
            Some(Ok(line)) => Ok(Event::Message(line)),
            Some(Err(fault)) => Ok(self.read_ended(held, fault.code())),
        }
    }

    /// Reading stdout failed with `code`: ends reading. What ended stdout may have been
    /// announced first (`stop()` queues Stopping before it kills the group): that event
    /// explains it best.
    fn read_ended(&self, held: &mut Held<'_>, code: crate::error::ErrorCode) -> Event {
        held.end();
        let announced = self.channels.events.try_recv();
        announced.unwrap_or(Event::ReadFault(code))
    }
}

/// True when the line reader holds bytes not yet returned as a line: a partial line, or bytes
/// buffered behind the last line.
fn has_pending(lines: &StdoutLines) -> bool {
    lines.has_partial_line() || !lines.get_ref().buffer().is_empty()
}

/// The reader thread: sleeps until stdout is readable while no request holds it, then reads
/// every line there is under the port's lock and hands each over.
fn read_lines(
    port: &StdoutPort,
    events: EventSender,
    more_pending: Arc<AtomicBool>,
    spare_lines: Receiver<String>,
) {
    let mut buffer = String::new();
    let mut sleep = ReaderSleep::Armed;
    loop {
        port.reader_sleep(sleep);
        let mut state = match port.try_lock_for_look(sleep) {
            Ok(state) => state,
            Err(next) => {
                sleep = next;
                continue;
            }
        };
        loop {
            let Some(reader) = state.lines() else {
                // A request ended reading after a fault (and reported it).
                return;
            };
            if buffer.capacity() == 0 {
                buffer = spare_lines.try_recv().unwrap_or_default();
            }
            let line = match reader.read_response_line_into(&mut buffer) {
                Ok(line) => line,
                Err(fault) if fault.is_would_block() => break,
                Err(fault) => {
                    state.end();
                    let _ = events.send(Event::ReadFault(fault.code()));
                    return;
                }
            };
            let pending = !reader.get_ref().buffer().is_empty();
            more_pending.store(pending, Ordering::Release);
            match events.send_now(Event::Message(line)) {
                Ok(()) => {}
                Err(TrySendError::Full(event)) => {
                    // Never wait with the lock held: requests take the channel path (and
                    // drain it) while this line is in hand.
                    state.set_line_in_hand(true);
                    drop(state);
                    let sent = events.send(event);
                    state = port.lock();
                    state.set_line_in_hand(false);
                    if sent.is_err() {
                        state.end();
                        return;
                    }
                }
                Err(TrySendError::Disconnected(_)) => {
                    state.end();
                    return;
                }
            }
        }
        sleep = port.next_sleep(&mut state, sleep);
    }
}

/// How senders wake a caller that does not sleep on the event channel: a kick for one in a
/// blocking read, the wake descriptor for one in `poll(2)`.
#[derive(Debug)]
pub(crate) struct Wake {
    /// True while the caller is in (or about to enter) `poll(2)`.
    armed: AtomicBool,
    /// Makes the caller's `poll(2)` return.
    signal: WakeFd,
    /// Wakes a caller that sleeps in a blocking read of stdout; `None` where `/proc` could not
    /// reopen stdout.
    kicker: Option<Arc<Kicker>>,
}

impl event::Wake for Wake {
    /// After an event was queued (or could not be, the channel being full): wakes the caller if
    /// it sleeps in `poll(2)`, or in a blocking read unless the event is the plugin's exit
    /// (`exit`: a response may still follow it, see the exit grace of [`kick`]).
    fn notify(&self, exit: bool) {
        if let Some(kicker) = &self.kicker {
            if !exit {
                kicker.kick();
            }
        }
        // Pairs with the fence in `arm`: either the caller's `try_recv` sees the event just
        // queued, or this load sees it armed.
        fence(Ordering::SeqCst);
        if self.armed.load(Ordering::Relaxed) {
            self.signal.raise();
        }
    }
}

impl Wake {
    /// Arms the wake descriptor before a sleep in `poll(2)`, then checks the channel: an event
    /// queued before the arm (or a closed channel) is returned, disarmed; `None` means sleep.
    #[inline]
    fn arm(&self, events: &Receiver<Event>) -> Option<Result<Event, RecvTimeoutError>> {
        self.armed.store(true, Ordering::Relaxed);
        // Pairs with the fence in `notify`: either this `try_recv` sees an event just queued,
        // or its sender sees the flag and raises the descriptor.
        fence(Ordering::SeqCst);
        let queued = match events.try_recv() {
            Ok(event) => Ok(event),
            Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) => return None,
        };
        self.disarm();
        Some(queued)
    }

    /// After the sleep in `poll(2)`: senders stop raising the wake descriptor.
    #[inline]
    fn disarm(&self) {
        self.armed.store(false, Ordering::Relaxed);
    }
}

/// The caller's sleep in `poll(2)` while it holds stdout (descriptor `stdout`): returns a
/// queued event, or `Ok(None)` once stdout is readable (or hung up), or the timeout at `until`.
/// Arms the wake descriptor, so other threads' events wake it.
pub(crate) fn wait_direct(
    events: &Receiver<Event>,
    wake: &Wake,
    stdout: RawFd,
    until: Instant,
) -> Result<Option<Event>, RecvTimeoutError> {
    loop {
        if let Some(queued) = wake.arm(events) {
            return queued.map(Some);
        }
        let ready = poll_pair(stdout, &wake.signal, until);
        wake.disarm();
        match ready {
            Ready::Stdout => return Ok(None),
            Ready::Woken => continue,
            Ready::TimedOut if Instant::now() < until => continue,
            Ready::TimedOut => return Err(RecvTimeoutError::Timeout),
            // poll(2) itself failed: sleep on the channel; without the response the request
            // ends at its deadline, as a timeout.
            Ready::Failed => return events.recv_deadline(until).map(Some),
        }
    }
}

/// Why `poll(2)` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ready {
    /// Stdout has bytes (or hung up, or failed).
    Stdout,
    /// The wake descriptor was signalled (and drained), or a signal interrupted the wait.
    Woken,
    /// Nothing happened before the timeout.
    TimedOut,
    /// `poll(2)` itself failed.
    Failed,
}

/// Blocks in `poll(2)` until `stdout` or `wake` is readable, or `until`; drains `wake` when it
/// was that.
fn poll_pair(stdout: RawFd, wake: &WakeFd, until: Instant) -> Ready {
    let now = Instant::now();
    if now >= until {
        return Ready::TimedOut;
    }
    // Rounded up, so the wait never ends before `until`; far deadlines wait in steps.
    let nanos = (until - now).as_nanos();
    let millis = nanos.div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
    let mut fds = [
        libc::pollfd {
            fd: stdout,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: two valid pollfds over descriptors held open for this call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, millis) };
    if n < 0 {
        return match io::Error::last_os_error().kind() {
            ErrorKind::Interrupted => Ready::Woken,
            _ => Ready::Failed,
        };
    }
    if n == 0 {
        return Ready::TimedOut;
    }
    if fds[0].revents != 0 {
        // A wake signal raised at the same time is drained by the next wait.
        return Ready::Stdout;
    }
    wake.drain();
    Ready::Woken
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::provider::event::event_channel;

    const GENEROUS: Duration = Duration::from_secs(10);

    /// An event channel with this path's wake-up (no kicker: the caller sleeps in `poll(2)`),
    /// and a pipe standing in for the plugin's stdout.
    fn channel() -> (
        EventSender,
        Receiver<Event>,
        Arc<Wake>,
        os_pipe::PipeReader,
        os_pipe::PipeWriter,
    ) {
        let wake = Arc::new(Wake {
            armed: AtomicBool::new(false),
            signal: WakeFd::new().unwrap(),
            kicker: None,
        });
        let (tx, rx) = event_channel(4, Some(wake.clone()));
        let (reader, writer) = os_pipe::pipe().unwrap();
        (tx, rx, wake, reader, writer)
    }

    #[test]
    fn an_event_queued_before_the_wait_is_taken_at_once() {
        let (tx, rx, wake, stdout, _writer) = channel();
        tx.send(Event::Stopping).unwrap();
        let got = wait_direct(&rx, &wake, stdout.as_raw_fd(), Instant::now() + GENEROUS);
        assert!(matches!(got, Ok(Some(Event::Stopping))));
    }

    #[test]
    fn an_event_sent_while_the_caller_sleeps_in_poll_wakes_it() {
        let (tx, rx, wake, stdout, _writer) = channel();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            tx.send(Event::Stopping).unwrap();
            tx
        });
        let got = wait_direct(&rx, &wake, stdout.as_raw_fd(), Instant::now() + GENEROUS);
        assert!(matches!(got, Ok(Some(Event::Stopping))));
        drop(sender.join().unwrap());
    }

    #[test]
    fn readable_stdout_ends_the_wait_without_an_event() {
        let (_tx, rx, wake, stdout, mut writer) = channel();
        writer.write_all(b"{\"jsonrpc\":").unwrap();
        let got = wait_direct(&rx, &wake, stdout.as_raw_fd(), Instant::now() + GENEROUS);
        assert!(matches!(got, Ok(None)));
    }

    #[test]
    fn nothing_before_the_deadline_times_out_at_the_deadline() {
        let (_tx, rx, wake, stdout, _writer) = channel();
        let until = Instant::now() + Duration::from_millis(50);
        let got = wait_direct(&rx, &wake, stdout.as_raw_fd(), until);
        assert!(matches!(got, Err(RecvTimeoutError::Timeout)));
        assert!(Instant::now() >= until);
    }

    #[test]
    fn a_stale_wake_signal_costs_one_extra_round_and_no_event() {
        let (tx, rx, wake, stdout, _writer) = channel();
        // Raised while the caller is not waiting (as after a race with its disarm).
        wake.signal.raise();
        let until = Instant::now() + Duration::from_millis(50);
        let got = wait_direct(&rx, &wake, stdout.as_raw_fd(), until);
        assert!(matches!(got, Err(RecvTimeoutError::Timeout)));
        tx.send(Event::Stopping).unwrap();
        let got = wait_direct(&rx, &wake, stdout.as_raw_fd(), Instant::now() + GENEROUS);
        assert!(matches!(got, Ok(Some(Event::Stopping))));
    }
}
