//! The stdio front ends' one line driver ([`drive_lines`]: read a line, hand it over, and at
//! the end of input serve what was read and begin the shutdown) and their whole-line,
//! serialized writes of JSON messages ([`LineWriter`]).

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use parking_lot::Mutex;
use serde::Serialize;

use super::dispatcher::Dispatcher;
use crate::frame::{read_line, Line};
use crate::gateway::Gateway;

/// Writes one JSON message per line, one writer at a time; remembers the first write error.
///
/// Each message goes out whole (`write_all` then `flush` under one lock), so concurrent workers
/// never interleave their lines. After a failed write, [`LineWriter::failed`] is true and the
/// reading loop stops as at end of input.
pub struct LineWriter {
    out: Mutex<Box<dyn Write + Send>>,
    error: Mutex<Option<io::Error>>,
}

impl LineWriter {
    /// A writer of whole lines to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> LineWriter {
        LineWriter {
            out: Mutex::new(out),
            error: Mutex::new(None),
        }
    }

    /// Writes `message` (serialized by serde_json, so raw ids stay as received) and a newline;
    /// a failure is kept, not returned.
    pub fn send<T: Serialize + ?Sized>(&self, message: &T) {
        let mut bytes = match serde_json::to_vec(message) {
            Ok(bytes) => bytes,
            // Not reachable for this crate's messages (string keys, no custom errors).
            Err(e) => {
                log::error!("a response could not be serialized: {e}");
                return;
            }
        };
        bytes.push(b'\n');
        let mut out = self.out.lock();
        if let Err(e) = out.write_all(&bytes).and_then(|()| out.flush()) {
            let mut error = self.error.lock();
            if error.is_none() {
                *error = Some(e);
            }
        }
    }

    /// True once a write has failed.
    pub fn failed(&self) -> bool {
        self.error.lock().is_some()
    }

    /// The first write error, if any (taken).
    pub fn take_error(&self) -> Option<io::Error> {
        self.error.lock().take()
    }
}

/// One input line for a stdio front end.
pub enum Input<'a> {
    /// A whole line (without its newline; a last line without one counts too).
    Line(&'a [u8]),
    /// A line longer than 1 MiB, skipped up to its newline; reading goes on.
    TooLarge,
}

/// Reads `input` line by line until EOF (or a failed write to `output`), handing each line to
/// `handle` with the front end's dispatcher and writer. Then no request follows: every request
/// already read is served (a check included), but a running reload is cut short so it does
/// not hold the exit behind its candidates' handshakes; once they are all answered the hosts'
/// shutdown begins.
///
/// Returns the read error, else the first write error, else `Ok`, after that wait.
pub fn drive_lines(
    gateway: Arc<Gateway>,
    mut input: impl BufRead,
    output: impl Write + Send + 'static,
    mut handle: impl FnMut(Input<'_>, &Dispatcher, &Arc<LineWriter>),
) -> io::Result<()> {
    let dispatcher = Dispatcher::new(gateway);
    let writer = Arc::new(LineWriter::new(Box::new(output)));
    let mut line = Vec::new();
    let read_result = loop {
        if writer.failed() {
            break Ok(());
        }
        match read_line(&mut input, &mut line) {
            Ok(Line::Eof) => break Ok(()),
            Ok(Line::TooLarge) => handle(Input::TooLarge, &dispatcher, &writer),
            Ok(Line::Complete) => handle(Input::Line(&line), &dispatcher, &writer),
            Err(e) => break Err(e),
        }
    };
    dispatcher.gateway().close_reloads();
    dispatcher.wait_idle();
    dispatcher.gateway().begin_shutdown();
    read_result?;
    match writer.take_error() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
