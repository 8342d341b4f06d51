//! Whole-line, serialized writes of JSON messages for the stdio front ends.

use std::io::{self, Write};

use parking_lot::Mutex;
use serde::Serialize;

/// Writes one JSON message per line, one writer at a time; remembers the first write error.
///
/// Each message goes out whole (`write_all` then `flush` under one lock), so concurrent workers
/// never interleave their lines. After a failed write, [`LineWriter::failed`] is true and the
/// reading loop stops as at end of input.
pub(crate) struct LineWriter {
    out: Mutex<Box<dyn Write + Send>>,
    error: Mutex<Option<io::Error>>,
}

impl LineWriter {
    pub(crate) fn new(out: Box<dyn Write + Send>) -> LineWriter {
        LineWriter {
            out: Mutex::new(out),
            error: Mutex::new(None),
        }
    }

    /// Writes `message` (serialized by serde_json, so raw ids stay as received) and a newline;
    /// a failure is kept, not returned.
    pub(crate) fn send<T: Serialize + ?Sized>(&self, message: &T) {
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
    pub(crate) fn failed(&self) -> bool {
        self.error.lock().is_some()
    }

    /// The first write error, if any (taken).
    pub(crate) fn take_error(&self) -> Option<io::Error> {
        self.error.lock().take()
    }
}
