//! The deadline-driven coordinator: one request at a time, one total budget per request.
//!
//! The budget's clock starts before encoding and covers the unsolicited-output check, queue
//! admission, write + flush and the response wait. Waiting is one wait for the next event on
//! the event channel (see `super::wait`: `poll(2)` on stdout and a wake descriptor where
//! several CPUs are usable, else `recv_deadline`): no polling loop, no sleeps.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_channel::{RecvTimeoutError, SendTimeoutError, TryRecvError};
use serde_json::Value;

use super::event::EXIT_GRACE;
use super::io::{write_nonblocking, Channels, Event, WriteJob, WriteOutcome, RECYCLED_LINE_MAX};
use super::port::Held;
use super::process::PluginProcess;
use super::stdout_buffer::has_pending;
use crate::error::{Dispatch, Error, ErrorCode};
use crate::frame::{
    validate_raw_bounded, BoundsVerdict, Envelope, RequestEncoder, ResponseLine, MAX_LINE_BYTES,
};

/// How long an unasked message already buffered by the reader may take to be handed over.
const PENDING_GRACE: Duration = Duration::from_millis(100);

/// Which request is in flight: it decides what "the frame may have been written" means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestKind {
    /// initialize and tools/list have no effect: a failure after queueing is still not_started.
    Admission,
    /// tools/call: a failure after queueing is outcome_unknown.
    Call,
}

impl RequestKind {
    fn after_queue(self) -> Dispatch {
        match self {
            RequestKind::Admission => Dispatch::NotStarted,
            RequestKind::Call => Dispatch::OutcomeUnknown,
        }
    }
}

/// The coordinator state of one provider connection. Owned behind the provider's try-lock.
#[derive(Debug)]
pub(crate) struct Session {
    encoder: RequestEncoder,
    /// The frame buffer, reused by every request (the encoder clears it).
    frame: Vec<u8>,
    channels: Channels,
    seq: u64,
    /// The text buffer the next response line is read into when the caller reads stdout itself
    /// (a decoded line's buffer comes back here).
    spare: String,
    /// The JSON bounds of the last response's result, checked while it was parsed.
    result_bounds: Option<BoundsVerdict>,
}

/// Where the coordinator takes the events of one request from.
enum Source<'a, 'p> {
    /// The event channel (the reader thread reads stdout), after an optional opt-in spin.
    Channel { spin_until: Option<Instant> },
    /// stdout, taken over for this request (`super::port`), and the channel for the rest.
    Direct(&'a mut Held<'p>),
}

impl Session {
    pub(crate) fn new(channels: Channels) -> Session {
        Session {
            encoder: RequestEncoder::new(),
            frame: Vec::with_capacity(256),
            channels,
            seq: 0,
            spare: String::new(),
            result_bounds: None,
        }
    }

    /// The JSON bounds verdict of the last response's result, found while it was parsed
    /// (`None` when only a walk over the result can tell).
    pub(crate) fn take_result_bounds(&mut self) -> Option<BoundsVerdict> {
        self.result_bounds.take()
    }

    /// Sends one request built by `encode` and waits for its response envelope until
    /// `deadline`. Every failure that may leave the connection out of step retires `process`.
    ///
    /// Four phases, each its own function: [`Session::ensure_in_step`] (nothing unasked is
    /// waiting), [`Session::encode_frame`] (encode and bound the line), [`Session::write_frame`]
    /// (write it here, or hand the rest to the writer) and [`Session::await_response`].
    pub(crate) fn round_trip(
        &mut self,
        process: &PluginProcess,
        kind: RequestKind,
        deadline: Instant,
        spin: Duration,
        encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
    ) -> Result<Envelope, Error> {
        if let Some(port) = self.channels.port.clone() {
            if let Some(mut held) = spin.is_zero().then(|| port.take()).flatten() {
                let result = self.round_trip_direct(&mut held, process, kind, deadline, encode);
                let pending = held.lines().is_some_and(|lines| has_pending(lines));
                self.channels.more_pending.store(pending, Ordering::Release);
                return result;
            }
            // The channel path needs the reader to watch stdout.
            port.arm_for_reader();
        }
        self.ensure_in_step(process, deadline)?;
        let id = self.encode_frame(process, encode)?;
        let written = self.write_frame(process, kind, deadline)?;
        let spin_until = (!spin.is_zero()).then(|| deadline.min(Instant::now() + spin));
        let source = Source::Channel { spin_until };
        self.await_response(process, kind, deadline, source, id, written)
    }

    /// [`Session::round_trip`] with stdout taken over: the caller reads the response itself.
    fn round_trip_direct(
        &mut self,
        held: &mut Held<'_>,
        process: &PluginProcess,
        kind: RequestKind,
        deadline: Instant,
        encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
    ) -> Result<Envelope, Error> {
        self.ensure_nothing_queued(process)?;
        self.ensure_nothing_buffered(process, held)?;
        let id = self.encode_frame(process, encode)?;
        let written = self.write_frame(process, kind, deadline)?;
        self.await_response(process, kind, deadline, Source::Direct(held), id, written)
    }

    /// Anything already waiting means the connection is out of step: fails (not started) and
    /// retires `process`.
    #[inline]
    fn ensure_in_step(&self, process: &PluginProcess, deadline: Instant) -> Result<(), Error> {
        self.ensure_nothing_queued(process)?;
        if self.channels.more_pending.load(Ordering::Acquire) {
            // The plugin wrote more behind its last response; it is still being parsed.
            let until = deadline.min(Instant::now() + PENDING_GRACE);
            let (code, message) = match self.channels.events.recv_deadline(until) {
                Ok(Event::ReadFault(code)) => (code, read_fault_message(code)),
                Ok(Event::Message(line)) => self.unasked(line),
                _ => (
                    ErrorCode::UnexpectedMessage,
                    "the plugin wrote to stdout without being asked",
                ),
            };
            return fail(process, code, Dispatch::NotStarted, message);
        }
        Ok(())
    }

    /// No event is queued (an unasked line, a fault, the plugin's exit): else fails (not
    /// started) and retires `process`.
    #[inline]
    fn ensure_nothing_queued(&self, process: &PluginProcess) -> Result<(), Error> {
        if self.channels.events.is_empty() {
            // The connection keeps a sender (`stop()`'s) as long as this session, so an empty
            // channel is never a disconnected one here.
            return Ok(());
        }
        match self.channels.events.try_recv() {
            Ok(Event::Message(line)) => {
                let (code, message) = self.unasked(line);
                fail(process, code, Dispatch::NotStarted, message)
            }
            Ok(event) => {
                let (code, message) = describe_dead_connection(&event);
                fail(process, code, Dispatch::NotStarted, message)
            }
            Err(TryRecvError::Disconnected) => fail(
                process,
                ErrorCode::Eof,
                Dispatch::NotStarted,
                "the plugin connection is closed",
            ),
            Err(TryRecvError::Empty) => Ok(()),
        }
    }

    /// With stdout taken over: no byte the plugin wrote unasked is buffered (the rest of a
    /// line, or lines behind the last response); else fails (not started) and retires
    /// `process`.
    #[inline]
    fn ensure_nothing_buffered(
        &mut self,
        process: &PluginProcess,
        held: &mut Held<'_>,
    ) -> Result<(), Error> {
        let Some(lines) = held.lines() else {
            return Ok(());
        };
        if !has_pending(lines) {
            return Ok(());
        }
        let (code, message) = match lines.read_response_line_into(&mut self.spare) {
            Ok(line) => self.unasked(line),
            Err(fault) if fault.is_would_block() => (
                ErrorCode::UnexpectedMessage,
                "the plugin wrote to stdout without being asked",
            ),
            Err(fault) => {
                held.end();
                (fault.code(), read_fault_message(fault.code()))
            }
        };
        fail(process, code, Dispatch::NotStarted, message)
    }

    /// Encodes the request into the reused frame buffer; returns its id. A frame longer than
    /// one protocol line is not sent (not started).
    #[inline]
    fn encode_frame(
        &mut self,
        process: &PluginProcess,
        encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
    ) -> Result<u64, Error> {
        let frame = &mut self.frame;
        let id = encode(&mut self.encoder, frame);
        if frame.len() - 1 > MAX_LINE_BYTES {
            self.encoder.unsend_last();
            return fail(
                process,
                ErrorCode::RequestTooLarge,
                Dispatch::NotStarted,
                "the request is larger than one protocol line (1 MiB)",
            );
        }
        Ok(id)
    }

    /// Writes the frame: in the common case the pipe has room and it is written right here;
    /// otherwise the rest goes to the writer thread, which waits for the pipe.
    #[inline]
    fn write_frame(
        &mut self,
        process: &PluginProcess,
        kind: RequestKind,
        deadline: Instant,
    ) -> Result<Written, Error> {
        let frame = &self.frame;
        let after = kind.after_queue();
        match write_nonblocking(&self.channels.stdin, frame) {
            WriteOutcome::Done => Ok(Written {
                direct: frame.len(),
                queued: None,
            }),
            WriteOutcome::Failed { written: 0 } => {
                self.encoder.unsend_last();
                fail(
                    process,
                    ErrorCode::StdinFailed,
                    Dispatch::NotStarted,
                    "the plugin's stdin is closed",
                )
            }
            WriteOutcome::Failed { .. } => fail(
                process,
                ErrorCode::StdinFailed,
                after,
                "writing the request to the plugin's stdin failed",
            ),
            WriteOutcome::WouldBlock { written } => {
                // The rest goes to the writer, which waits for the pipe.
                self.seq += 1;
                let seq = self.seq;
                self.channels.gate.queue(seq);
                let job = WriteJob {
                    seq,
                    frame: frame[written..].to_vec(),
                };
                match self.channels.jobs.send_deadline(job, deadline) {
                    Ok(()) => Ok(Written {
                        direct: written,
                        queued: Some(seq),
                    }),
                    Err(SendTimeoutError::Disconnected(_)) if written > 0 => fail(
                        process,
                        ErrorCode::StdinFailed,
                        after,
                        "writing the request to the plugin's stdin failed",
                    ),
                    Err(SendTimeoutError::Timeout(_)) if written > 0 => fail(
                        process,
                        ErrorCode::Timeout,
                        after,
                        "the request timed out while it was being written",
                    ),
                    Err(SendTimeoutError::Timeout(_)) => {
                        self.encoder.unsend_last();
                        Err(Error::not_started(
                            ErrorCode::Timeout,
                            "the request timed out before it could be queued for writing",
                        ))
                    }
                    Err(SendTimeoutError::Disconnected(_)) => {
                        self.encoder.unsend_last();
                        fail(
                            process,
                            ErrorCode::StdinFailed,
                            Dispatch::NotStarted,
                            "the plugin's stdin is closed",
                        )
                    }
                }
            }
        }
    }

    /// Waits for the response with id `id` (or the event that ends the connection) until
    /// `deadline`, taking events from `source`.
    #[inline]
    fn await_response(
        &mut self,
        process: &PluginProcess,
        kind: RequestKind,
        deadline: Instant,
        mut source: Source<'_, '_>,
        id: u64,
        written: Written,
    ) -> Result<Envelope, Error> {
        let after = kind.after_queue();
        let Written { direct, queued } = written;
        let mut wait_until = deadline;
        let mut exited = false;
        loop {
            let event = match &mut source {
                Source::Channel { spin_until } => match spin_until.take() {
                    Some(until) => self.spin_for_event(until, wait_until),
                    None => self.channels.events.next(wait_until),
                },
                Source::Direct(held) => self.read_event(held, wait_until, queued.is_none()),
            };
            match event {
                Ok(Event::Message(line)) => {
                    let decoded = line.decode();
                    self.recycle(line);
                    return match decoded.map(|raw| validate_raw_bounded(raw, id)) {
                        Ok(Ok((envelope, bounds))) => {
                            self.result_bounds = bounds;
                            Ok(envelope)
                        }
                        Ok(Err(fault)) => fail(
                            process,
                            fault.code(),
                            after,
                            "the plugin's response broke the JSON-RPC 2.0 envelope",
                        ),
                        // Not one JSON value: the same fault the reader reports for a bad line.
                        Err(fault) => fail(
                            process,
                            fault.code(),
                            after,
                            read_fault_message(fault.code()),
                        ),
                    };
                }
                Ok(Event::WriteFailed { wrote_any }) => {
                    // Bytes the caller wrote itself count too: only "no byte at all" is safe.
                    let dispatch = if wrote_any || direct > 0 {
                        after
                    } else {
                        Dispatch::NotStarted
                    };
                    return fail(
                        process,
                        ErrorCode::StdinFailed,
                        dispatch,
                        "writing the request to the plugin's stdin failed",
                    );
                }
                Ok(Event::Exited) => {
                    // A response may still be in the pipe: give the reader a short grace.
                    exited = true;
                    wait_until = deadline.min(Instant::now() + EXIT_GRACE);
                }
                Ok(event) => {
                    let (code, message) = describe_dead_connection(&event);
                    return fail(process, code, after, message);
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return fail(
                        process,
                        ErrorCode::Eof,
                        after,
                        "the plugin connection is closed",
                    )
                }
                Err(RecvTimeoutError::Timeout) if exited && Instant::now() < deadline => {
                    return fail(
                        process,
                        ErrorCode::Eof,
                        after,
                        "the plugin exited before answering",
                    );
                }
                Err(RecvTimeoutError::Timeout) => {
                    let unclaimed = queued.is_some_and(|seq| self.channels.gate.cancel(seq));
                    if unclaimed && direct == 0 {
                        // The writer never claimed the frame: provably no byte left.
                        self.encoder.unsend_last();
                        return Err(Error::not_started(
                            ErrorCode::Timeout,
                            "the request timed out before any byte of it was written",
                        ));
                    }
                    return fail(
                        process,
                        ErrorCode::Timeout,
                        after,
                        "the plugin did not answer within the request timeout",
                    );
                }
            }
        }
    }
}

/// How the frame left: bytes the caller wrote itself, and the writer job for the rest.
#[derive(Debug, Clone, Copy)]
struct Written {
    /// Bytes written directly by the calling thread.
    direct: usize,
    /// The sequence number of the writer job holding the rest, if any.
    queued: Option<u64>,
}

/// Retires `process` and returns the retiring error: the connection may be out of step.
#[inline]
fn fail<T>(
    process: &PluginProcess,
    code: ErrorCode,
    dispatch: Dispatch,
    message: &str,
) -> Result<T, Error> {
    process.retire_on_fault(code);
    Err(Error::new(code, dispatch, message).retiring())
}

impl Session {
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
        until: Instant,
        may_block: bool,
    ) -> Result<Event, RecvTimeoutError> {
        #[cfg(target_os = "linux")]
        if let Some(kicker) = held.kicker().filter(|_| may_block) {
            return self.read_event_blocking(held, kicker, until);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = may_block;
        // Nothing buffered: the response cannot be there before stdout is readable, so sleep
        // first rather than try a read that would fail.
        let mut readable = held.lines().is_some_and(|lines| has_pending(lines));
        loop {
            let Some(lines) = held.lines() else {
                // Reading ended after a fault: only the other threads' events are left.
                return self.channels.events.recv_deadline(until);
            };
            if readable {
                match lines.read_response_line_into(&mut self.spare) {
                    Ok(line) => return Ok(Event::Message(line)),
                    Err(fault) if fault.is_would_block() => {}
                    Err(fault) => {
                        held.end();
                        // What ended stdout may have been announced first (`stop()` queues
                        // Stopping before it kills the group): that event explains it best.
                        return Ok(self
                            .channels
                            .events
                            .try_recv()
                            .unwrap_or(Event::ReadFault(fault.code())));
                    }
                }
            }
            match held.wait(&self.channels.events, until)? {
                Some(event) => return Ok(event),
                None => readable = true,
            }
        }
    }

    /// [`Session::read_event`] sleeping in a blocking read of stdout (`super::kick`): the next
    /// response line, or an event that ended the sleep (the sender kicked it), or the timeout
    /// (the reader thread kicked it at `until`). A kicked read ends reading: the kick's byte
    /// may be in what was read or still in the pipe, and the request fails and retires the
    /// connection whatever it was.
    #[cfg(target_os = "linux")]
    fn read_event_blocking(
        &mut self,
        held: &mut Held<'_>,
        kicker: &super::kick::Kicker,
        until: Instant,
    ) -> Result<Event, RecvTimeoutError> {
        if held.lines().is_none() {
            // Reading ended after a fault or a kick: only the other threads' events are left.
            return self.channels.events.recv_deadline(until);
        }
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
            Some(Err(fault)) => {
                held.end();
                // What ended stdout may have been announced first (`stop()` queues Stopping
                // before it kills the group): that event explains it best.
                Ok(self
                    .channels
                    .events
                    .try_recv()
                    .unwrap_or(Event::ReadFault(fault.code())))
            }
        }
    }

    /// Keeps a decoded line's buffer for the next line read here, or hands it back to the
    /// reader thread (see [`Channels::recycle`]).
    #[inline]
    fn recycle(&mut self, line: ResponseLine) {
        if self.spare.capacity() == 0 {
            let buffer = line.into_buffer();
            if buffer.capacity() <= RECYCLED_LINE_MAX {
                self.spare = buffer;
            }
        } else {
            self.channels.recycle(line);
        }
    }

    /// Code and message for a line that arrived while no request was waiting for it: a line
    /// that is not one JSON value is `malformed_json`, as if the reader had parsed it; any other
    /// is an unexpected message.
    fn unasked(&self, line: ResponseLine) -> (ErrorCode, &'static str) {
        let decoded = line.decode();
        self.channels.recycle(line);
        match decoded {
            Ok(_) => (
                ErrorCode::UnexpectedMessage,
                "the plugin wrote to stdout without being asked",
            ),
            Err(fault) => (fault.code(), read_fault_message(fault.code())),
        }
    }

    /// The embedder's opt-in active wait: `try_recv` + `yield_now` until `spin_until`, then a
    /// normal blocking wait until `until`. Only used while a request is in flight.
    fn spin_for_event(
        &self,
        spin_until: Instant,
        until: Instant,
    ) -> Result<Event, RecvTimeoutError> {
        loop {
            match self.channels.events.try_recv() {
                Ok(event) => return Ok(event),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) if Instant::now() < spin_until => std::thread::yield_now(),
                Err(TryRecvError::Empty) => return self.channels.events.next(until),
            }
        }
    }
}

/// Code and message for an event that ends the connection.
fn describe_dead_connection(event: &Event) -> (ErrorCode, &'static str) {
    match event {
        Event::Message(_) => (
            ErrorCode::UnexpectedMessage,
            "the plugin wrote to stdout without being asked",
        ),
        Event::ReadFault(code) => (*code, read_fault_message(*code)),
        Event::WriteFailed { .. } => (ErrorCode::StdinFailed, "the plugin's stdin is closed"),
        Event::Exited => (ErrorCode::Eof, "the plugin process exited"),
        Event::Stopping => (ErrorCode::HostStopping, "the plugin host is stopping"),
    }
}

/// The message for a stdout read fault.
pub(crate) fn read_fault_message(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::Eof => "the plugin closed its stdout",
        ErrorCode::MessageTooLarge => "the plugin wrote a line longer than 1 MiB",
        ErrorCode::MalformedJson => "the plugin wrote a line that is not one JSON value",
        _ => "reading the plugin's stdout failed",
    }
}

/// The caller-facing message of a plugin's JSON-RPC error (control characters replaced).
pub(crate) fn rpc_error_message(code: i64, message: &str) -> String {
    let clean: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("the plugin answered with JSON-RPC error {code}: {clean}")
}

/// Turns an envelope into its result value, or a completed `plugin_rpc_error`.
pub(crate) fn into_result(envelope: Envelope) -> Result<Value, Error> {
    match envelope {
        Envelope::Result(value) => Ok(value),
        Envelope::Error { code, message } => Err(Error::new(
            ErrorCode::RpcError,
            Dispatch::Completed,
            rpc_error_message(code, &message),
        )),
    }
}
