//! The portable response path (every system but Linux, and Linux under the test-only
//! `webcodex_portable_wait` cfg): the reader thread reads and checks each stdout line and hands it
//! over on the bounded event channel; the caller blocks in `recv_deadline` on that channel,
//! where every event reaches it, so senders need no wake-up of their own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::Receiver;

use super::event::{Event, EventSender};
use super::fault::{Fault, Read};
use super::io::ResponseThreads;
use super::session::Session;
use super::stdout_buffer::{stdout_lines, Stdout, STDOUT_BUFFER};
use crate::frame::{RequestEncoder, ResponseLine};

/// The name [`crate::provider::response_wait_mode`] reports for this path.
pub(crate) const NAME: &str = "portable";

/// The response path of one provider: nothing to share, the reader thread owns stdout.
#[derive(Debug)]
pub(crate) struct ResponsePath;

impl ResponsePath {
    /// Hands stdout to the reader thread. Senders need no wake-up of their own (queueing the
    /// event is the wake-up), nor does the exit watch (its `Exited` event says everything).
    pub(crate) fn open(stdout: Stdout) -> std::io::Result<(ResponsePath, ResponseThreads)> {
        let threads = ResponseThreads {
            wake: None,
            reader: Box::new(move |events, more_pending, spare_lines| {
                read_lines(stdout, events, more_pending, spare_lines)
            }),
            on_exit: Box::new(|| {}),
        };
        Ok((ResponsePath, threads))
    }
}

/// Sends one request and waits for its response on the event channel.
#[inline]
pub(crate) fn round_trip<T>(
    _path: &ResponsePath,
    session: &mut Session,
    deadline: Instant,
    encode: impl FnOnce(&mut RequestEncoder, &mut Vec<u8>) -> u64,
    read: impl FnMut(&ResponseLine, u64) -> Result<T, Read>,
) -> Result<T, Fault> {
    session.round_trip_channel(deadline, encode, read)
}

/// The reader thread: reads and checks each stdout line and hands it over, until stdout ends
/// or breaks (reported) or the coordinator is gone.
fn read_lines(
    stdout: Stdout,
    events: EventSender,
    more_pending: Arc<AtomicBool>,
    spare_lines: Receiver<String>,
) {
    let mut reader = stdout_lines(stdout, STDOUT_BUFFER);
    loop {
        // The buffer of the line before last, by now decoded and handed back (or a new one).
        let buffer = spare_lines.try_recv().unwrap_or_default();
        match reader.read_response_line(buffer) {
            Ok(value) => {
                // Published before the hand-over, so the coordinator that receives this
                // message knows whether more was already written behind it.
                let pending = !reader.get_ref().buffer().is_empty();
                more_pending.store(pending, Ordering::Release);
                if events.send(Event::Message(value)).is_err() {
                    return;
                }
            }
            Err(fault) => {
                let _ = events.send(Event::ReadFault(fault.code()));
                return;
            }
        }
    }
}
