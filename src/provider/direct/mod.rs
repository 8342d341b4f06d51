//! The Linux response path: the caller reads its response from stdout itself.
//!
//! During a request the caller takes stdout over ([`port`]) and reads the response line in a
//! blocking `read(2)`, so the plugin's write wakes the caller and no other thread; the other
//! reasons to stop waiting wake it with a kick ([`kick`]). A request that cannot take stdout
//! over (no `/proc` to reopen it, a line the reader holds), or whose frame the
//! writer thread finishes, waits on the event channel as the portable path does
//! (docs/DECISIONS.md D-PROV-9, D-PROV-10, D-PROV-8).

mod kick;
mod port;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, TrySendError};

use super::event::{Event, EventSender, Wake};
use super::fault::{Fault, Read, Sent};
use super::io::ResponseThreads;
use super::session::{Session, Written};
use super::stdout_buffer::{Stdout, StdoutLines, STDOUT_BUFFER};
use crate::frame::{RequestEncoder, ResponseLine};
use port::{Held, ReaderSleep, StdoutPort};

/// The name [`crate::provider::response_wait_mode`] reports for this path.
pub(crate) const NAME: &str = "direct";

/// The response path of one provider: its stdout, shared by the reader thread and requests.
#[derive(Debug)]
pub(crate) struct ResponsePath {
    port: Arc<StdoutPort>,
}

impl ResponsePath {
    /// Makes stdout shareable between the reader thread and requests; also returns the
    /// threads' part: the senders' wake-up (the kick), the reader's body and the exit watch's
    /// hook.
    pub(crate) fn open(stdout: Stdout) -> io::Result<(ResponsePath, ResponseThreads)> {
        let port = Arc::new(StdoutPort::new(stdout, STDOUT_BUFFER)?);
        let (reader, exited) = (port.clone(), port.clone());
        let threads = ResponseThreads {
            wake: port.kicker().map(|kicker| kicker as Arc<dyn Wake>),
            reader: Box::new(move |events, more_pending, spare_lines| {
                read_lines(&reader, events, more_pending, spare_lines)
            }),
            on_exit: Box::new(move || exited.plugin_exited()),
        };
        Ok((ResponsePath { port }, threads))
    }
}

/// Sends one request and waits for its response: with stdout taken over where it can, else on
/// the event channel.
#[inline]
pub(crate) fn round_trip<T>(
    path: &ResponsePath,
    session: &mut Session,
    deadline: Instant,
    encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
    read: impl FnMut(&ResponseLine, u64) -> Result<T, Read>,
) -> Result<T, Fault> {
    let port = &path.port;
    let Some(mut held) = port.take() else {
        // The channel path needs the reader to watch stdout.
        port.arm_for_reader();
        return session.round_trip_channel(deadline, encode, read);
    };
    let result = match session.send_direct(&mut held, deadline, encode) {
        Ok((id, written)) if written.queued.is_none() => {
            let next = |session: &mut Session, until| session.read_event(&mut held, until);
            session.await_response(deadline, next, id, written, read)
        }
        Ok((id, written)) => {
            // The writer thread finishes the frame. Its failure, or a frame it never touched
            // by the deadline, can end the request without retiring the connection, which a
            // kick must never do: the reader thread reads the response, as on the channel
            // path. Nothing was read here since the check before the write.
            session
                .channels
                .more_pending
                .store(false, Ordering::Release);
            drop(held);
            port.arm_for_reader();
            let next = |session: &mut Session, until| session.channels.events.recv_deadline(until);
            return session.await_response(deadline, next, id, written, read);
        }
        Err(fault) => Err(fault),
    };
    let pending = held.lines().is_some_and(|lines| has_pending(lines));
    session
        .channels
        .more_pending
        .store(pending, Ordering::Release);
    result
}

impl Session {
    /// With stdout taken over: checks that the connection is in step, then encodes and writes
    /// the frame; its id and how it left.
    #[inline]
    fn send_direct(
        &mut self,
        held: &mut Held<'_>,
        deadline: Instant,
        encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
    ) -> Result<(u64, Written), Fault> {
        self.ensure_nothing_queued()?;
        self.ensure_nothing_buffered(held)?;
        let id = self.encode_frame(encode)?;
        Ok((id, self.write_frame(deadline)?))
    }

    /// With stdout taken over: no byte the plugin wrote unasked is buffered (the rest of a
    /// line, or lines behind the last response); else a fault, nothing sent.
    #[inline(always)]
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

    /// With stdout taken over: the next response line, read in a blocking read of stdout
    /// ([`kick`]), or an event that ended the sleep (its sender kicked it), or the timeout at
    /// `until` (the reader thread kicked it then). A kicked read ends reading: the kick's byte
    /// may be in what was read or still in the pipe, and the request fails and retires the
    /// connection whatever it was.
    fn read_event(
        &mut self,
        held: &mut Held<'_>,
        until: Instant,
    ) -> Result<Event, RecvTimeoutError> {
        if held.lines().is_none() {
            // Reading ended after a fault or a kick: only the other threads' events are left.
            return self.channels.events.recv_deadline(until);
        }
        if Instant::now() >= until {
            return Err(RecvTimeoutError::Timeout);
        }
        let kicker = held.sleep_in_read(until);
        let spare = &mut self.spare;
        let read = match self.channels.events.is_empty() {
            true => held.lines().map(|lines| {
                lines.get_mut().read_blocking(true);
                let read = lines.read_response_line_into(spare);
                lines.get_mut().read_blocking(false);
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
            // A full channel's wake-up finds no caller asleep in a read: this thread holds
            // stdout.
            match events.try_send(Event::Message(line)) {
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
