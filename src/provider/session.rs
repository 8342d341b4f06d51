//! The deadline-driven coordinator: one request at a time, one total budget per request.
//!
//! The budget's clock starts before encoding and covers the unsolicited-output check, queue
//! admission, write and the response wait, which the response path (`super::imp`) drives. The
//! I/O here never picks an error code: a request that ends without a response envelope returns
//! a typed [`Fault`] for `super::fault::classify`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_channel::{RecvTimeoutError, SendTimeoutError, TryRecvError};

use super::event::EXIT_GRACE;
use super::fault::{End, Fault, Read, Sent};
use super::io::{write_nonblocking, Channels, Event, WriteJob, WriteOutcome, RECYCLED_LINE_MAX};
use crate::frame::{
    validate_raw_bounded, BoundsVerdict, Envelope, RequestEncoder, ResponseLine, MAX_LINE_BYTES,
};

/// How long an unasked message already buffered by the reader may take to be handed over.
const PENDING_GRACE: Duration = Duration::from_millis(100);

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
}

/// Reads any response to the request `id`: its envelope, and the result's JSON bounds verdict
/// found while it was parsed (`None` when only a walk over the result can tell).
#[inline]
pub(super) fn any_response(
    line: &ResponseLine,
    id: u64,
) -> Result<(Envelope, Option<BoundsVerdict>), Read> {
    match line.decode().map(|raw| validate_raw_bounded(raw, id)) {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(fault)) => Err(Read::BadEnvelope(fault.code())),
        // Not one JSON value: the same fault the reader reports for a bad line.
        Err(fault) => Err(Read::Garbage(fault.code())),
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

impl Written {
    /// What may have reached the plugin while the request waits: all of it, unless the writer
    /// holds the rest.
    fn sent(self) -> Sent {
        match self.queued {
            None => Sent::All,
            Some(_) => Sent::Part,
        }
    }
}

impl Session {
    pub(crate) fn new(channels: Channels) -> Session {
        Session {
            encoder: RequestEncoder::new(),
            frame: Vec::with_capacity(256),
            channels,
            seq: 0,
            spare: String::new(),
        }
    }

    /// One request with every event taken from the event channel (the reader thread reads
    /// stdout); its four phases are the four functions below.
    pub(super) fn round_trip_channel<T>(
        &mut self,
        deadline: Instant,
        encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
        read: impl FnMut(&ResponseLine, u64) -> Result<T, Read>,
    ) -> Result<T, Fault> {
        self.ensure_in_step(deadline)?;
        let id = self.encode_frame(encode)?;
        let written = self.write_frame(deadline)?;
        let next = |session: &mut Session, until| session.channels.events.recv_deadline(until);
        self.await_response(deadline, next, id, written, read)
    }

    /// Anything already waiting means the connection is out of step: a fault, nothing sent.
    #[inline]
    fn ensure_in_step(&self, deadline: Instant) -> Result<(), Fault> {
        self.ensure_nothing_queued()?;
        if self.channels.more_pending.load(Ordering::Acquire) {
            // The plugin wrote more behind its last response; it is still being parsed.
            let until = deadline.min(Instant::now() + PENDING_GRACE);
            let read = match self.channels.events.recv_deadline(until) {
                Ok(Event::ReadFault(code)) => {
                    return Err(Fault::new(Sent::Nothing, End::Stdout(code)))
                }
                Ok(Event::Message(line)) => self.unasked(line),
                _ => Read::Unasked,
            };
            return Err(Fault::line(Sent::Nothing, read));
        }
        Ok(())
    }

    /// No event is queued (an unasked line, a fault, the plugin's exit): else a fault, nothing
    /// sent.
    #[inline]
    pub(super) fn ensure_nothing_queued(&self) -> Result<(), Fault> {
        // `is_empty` is two loads, where a failed `try_recv` costs more than a hundred
        // instructions (this check runs before every request).
        if self.channels.events.is_empty() {
            // The connection keeps a sender (`stop()`'s) as long as this session, so an empty
            // channel is never a disconnected one here.
            return Ok(());
        }
        match self.channels.events.try_recv() {
            Ok(event) => Err(self.event_fault(Sent::Nothing, event)),
            Err(TryRecvError::Disconnected) => Err(Fault::new(Sent::Nothing, End::Disconnected)),
            Err(TryRecvError::Empty) => Ok(()),
        }
    }

    /// Encodes the request into the reused frame buffer; returns its id. A frame longer than
    /// one protocol line is not sent.
    #[inline]
    pub(super) fn encode_frame(
        &mut self,
        encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
    ) -> Result<u64, Fault> {
        let frame = &mut self.frame;
        let id = encode(&mut self.encoder, frame);
        if frame.len() - 1 > MAX_LINE_BYTES {
            self.encoder.unsend_last();
            return Err(Fault::new(Sent::Nothing, End::FrameTooLarge));
        }
        Ok(id)
    }

    /// Writes the frame: in the common case the pipe has room and it is written right here;
    /// otherwise the rest goes to the writer thread, which waits for the pipe.
    #[inline(always)]
    pub(super) fn write_frame(&mut self, deadline: Instant) -> Result<Written, Fault> {
        let frame = &self.frame;
        let (written, end) = match write_nonblocking(&self.channels.stdin, frame) {
            WriteOutcome::Done => {
                return Ok(Written {
                    direct: frame.len(),
                    queued: None,
                })
            }
            WriteOutcome::Failed { written } => (written, End::WriterFailed),
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
                    Ok(()) => {
                        return Ok(Written {
                            direct: written,
                            queued: Some(seq),
                        })
                    }
                    Err(SendTimeoutError::Timeout(_)) => (written, End::Deadline),
                    Err(SendTimeoutError::Disconnected(_)) => (written, End::WriterFailed),
                }
            }
        };
        if written > 0 {
            return Err(Fault::new(Sent::Part, end));
        }
        self.encoder.unsend_last();
        Err(Fault::new(Sent::Nothing, end))
    }

    /// Waits for the response with id `id` (or the event that ends the connection) until
    /// `deadline`, taking each event from `next` (called with the time to wait until), and
    /// reads the line that answers with `read`.
    #[inline]
    pub(super) fn await_response<T>(
        &mut self,
        deadline: Instant,
        mut next: impl FnMut(&mut Session, Instant) -> Result<Event, RecvTimeoutError>,
        id: u64,
        written: Written,
        mut read: impl FnMut(&ResponseLine, u64) -> Result<T, Read>,
    ) -> Result<T, Fault> {
        let sent = written.sent();
        let mut wait_until = deadline;
        let mut exited = false;
        loop {
            match next(self, wait_until) {
                Ok(Event::Message(line)) => {
                    let answer = read(&line, id);
                    self.recycle(line);
                    return answer.map_err(|read| Fault::line(sent, read));
                }
                Ok(Event::WriteFailed { wrote_any }) => {
                    // Bytes the caller wrote itself count too: only "no byte at all" is safe.
                    let sent = match wrote_any || written.direct > 0 {
                        true => Sent::Part,
                        false => Sent::Nothing,
                    };
                    return Err(Fault::new(sent, End::WriterFailed));
                }
                Ok(Event::Exited) => {
                    // A response may still be in the pipe: give the reader a short grace.
                    exited = true;
                    wait_until = deadline.min(Instant::now() + EXIT_GRACE);
                }
                Ok(event) => return Err(self.event_fault(sent, event)),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Fault::new(sent, End::Disconnected))
                }
                Err(RecvTimeoutError::Timeout) if exited && Instant::now() < deadline => {
                    return Err(Fault::new(sent, End::PluginExited));
                }
                Err(RecvTimeoutError::Timeout) => {
                    let unclaimed = written
                        .queued
                        .is_some_and(|seq| self.channels.gate.cancel(seq));
                    if unclaimed && written.direct == 0 {
                        // The writer never claimed the frame: provably no byte left.
                        self.encoder.unsend_last();
                        return Err(Fault::new(Sent::Nothing, End::Deadline));
                    }
                    return Err(Fault::new(sent, End::Deadline));
                }
            }
        }
    }

    /// The fault of a request ended by `event` with `sent` of its frame written.
    pub(super) fn event_fault(&self, sent: Sent, event: Event) -> Fault {
        let end = match event {
            Event::Message(line) => return Fault::line(sent, self.unasked(line)),
            Event::ReadFault(code) => End::Stdout(code),
            Event::WriteFailed { .. } => End::WriterFailed,
            Event::Exited => End::PluginExited,
            Event::Stopping => End::Stopping,
        };
        Fault::new(sent, end)
    }

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

    /// What a line that arrived while no request was waiting for it was: one that is not one
    /// JSON value is garbage (`malformed_json`, as if the reader had parsed it); any other is
    /// an unasked message.
    pub(super) fn unasked(&self, line: ResponseLine) -> Read {
        let decoded = line.decode();
        self.channels.recycle(line);
        match decoded {
            Ok(_) => Read::Unasked,
            Err(fault) => Read::Garbage(fault.code()),
        }
    }
}
