//! The deadline-driven coordinator: one request at a time, one total budget per request.
//!
//! The budget's clock starts before encoding and covers the unsolicited-output check, queue
//! admission, write + flush and the response wait. How the response is waited for is the
//! response path's (`super::imp`, chosen at compile time): on Linux the caller reads it from
//! stdout itself (`super::direct`), elsewhere it blocks on the event channel
//! (`super::portable`). No polling loop, no sleeps.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_channel::{RecvTimeoutError, SendTimeoutError, TryRecvError};
use serde_json::Value;

use super::event::EXIT_GRACE;
use super::io::{write_nonblocking, Channels, Event, WriteJob, WriteOutcome, RECYCLED_LINE_MAX};
use super::process::PluginProcess;
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
    pub(super) channels: Channels,
    seq: u64,
    /// The text buffer the next response line is read into when the caller reads stdout itself
    /// (a decoded line's buffer comes back here).
    pub(super) spare: String,
    /// The JSON bounds of the last response's result, checked while it was parsed.
    result_bounds: Option<BoundsVerdict>,
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
    /// `deadline`, on this system's response path. Every failure that may leave the connection
    /// out of step retires `process`.
    #[inline]
    pub(crate) fn round_trip(
        &mut self,
        process: &PluginProcess,
        kind: RequestKind,
        deadline: Instant,
        spin: Duration,
        encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
    ) -> Result<Envelope, Error> {
        super::imp::round_trip(self, process, kind, deadline, spin, encode)
    }

    /// [`Session::round_trip`] with every event taken from the event channel (the reader
    /// thread reads stdout), after the opt-in spin when `spin` is not zero.
    ///
    /// Four phases, each its own function: [`Session::ensure_in_step`] (nothing unasked is
    /// waiting), [`Session::encode_frame`] (encode and bound the line), [`Session::write_frame`]
    /// (write it here, or hand the rest to the writer) and [`Session::await_response`].
    pub(super) fn round_trip_channel(
        &mut self,
        process: &PluginProcess,
        kind: RequestKind,
        deadline: Instant,
        spin: Duration,
        encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
    ) -> Result<Envelope, Error> {
        self.ensure_in_step(process, deadline)?;
        let id = self.encode_frame(process, encode)?;
        let written = self.write_frame(process, kind, deadline)?;
        let mut spin_until = (!spin.is_zero()).then(|| deadline.min(Instant::now() + spin));
        let next = |session: &mut Session, until| match spin_until.take() {
            Some(spin_until) => session.spin_for_event(spin_until, until),
            None => session.channels.events.recv_deadline(until),
        };
        self.await_response(process, kind, deadline, next, id, written)
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
    pub(super) fn ensure_nothing_queued(&self, process: &PluginProcess) -> Result<(), Error> {
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

    /// Encodes the request into the reused frame buffer; returns its id. A frame longer than
    /// one protocol line is not sent (not started).
    #[inline]
    pub(super) fn encode_frame(
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
    pub(super) fn write_frame(
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
    /// `deadline`, taking each event from `next` (called with the time to wait until).
    #[inline]
    pub(super) fn await_response(
        &mut self,
        process: &PluginProcess,
        kind: RequestKind,
        deadline: Instant,
        mut next: impl FnMut(&mut Session, Instant) -> Result<Event, RecvTimeoutError>,
        id: u64,
        written: Written,
    ) -> Result<Envelope, Error> {
        let after = kind.after_queue();
        let Written { direct, queued } = written;
        let mut wait_until = deadline;
        let mut exited = false;
        loop {
            match next(self, wait_until) {
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
pub(super) struct Written {
    /// Bytes written directly by the calling thread.
    direct: usize,
    /// The sequence number of the writer job holding the rest, if any.
    pub(super) queued: Option<u64>,
}

/// Retires `process` and returns the retiring error: the connection may be out of step.
#[inline]
pub(super) fn fail<T>(
    process: &PluginProcess,
    code: ErrorCode,
    dispatch: Dispatch,
    message: &str,
) -> Result<T, Error> {
    process.retire();
    Err(Error::new(code, dispatch, message).retiring())
}

impl Session {
    /// Keeps a decoded line's buffer for the next line read here, or hands it back to the
    /// reader thread (see [`Channels::recycle`]).
    #[inline]
    pub(super) fn recycle(&mut self, line: ResponseLine) {
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
    pub(super) fn unasked(&self, line: ResponseLine) -> (ErrorCode, &'static str) {
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
                Err(TryRecvError::Empty) => return self.channels.events.recv_deadline(until),
            }
        }
    }
}

/// Code and message for an event that ends the connection.
pub(super) fn describe_dead_connection(event: &Event) -> (ErrorCode, &'static str) {
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
