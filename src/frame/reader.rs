//! Bounded line reader: reads at most `MAX_LINE_BYTES + 1` bytes before deciding.

use std::io::{self, BufRead};

use serde_json::Value;

use crate::error::ErrorCode;

/// Why no value could be read. Every fault is terminal for the connection.
#[derive(Debug)]
pub enum ReadFault {
    /// End of stream (also: a partial last line without newline).
    Eof,
    /// The line is longer than `MAX_LINE_BYTES` without its newline.
    TooLarge,
    /// Empty line, BOM, invalid UTF-8 or invalid JSON.
    Malformed,
    /// The read failed.
    Io(io::Error),
}

impl ReadFault {
    /// The stable error code for this fault.
    pub fn code(&self) -> ErrorCode {
        match self {
            ReadFault::Eof => ErrorCode::Eof,
            ReadFault::TooLarge => ErrorCode::MessageTooLarge,
            ReadFault::Malformed => ErrorCode::MalformedJson,
            ReadFault::Io(_) => ErrorCode::StdoutFailed,
        }
    }
}

/// Reads newline-terminated JSON values with a hard cap on line length.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    line: Vec<u8>,
}

impl<R: BufRead> LineReader<R> {
    /// Wraps a buffered reader.
    pub fn new(inner: R) -> LineReader<R> {
        LineReader {
            inner,
            line: Vec::new(),
        }
    }

    /// Reads the next line and parses it as one JSON value.
    pub fn read_value(&mut self) -> Result<Value, ReadFault> {
        let _ = (&mut self.inner, &mut self.line);
        todo!()
    }
}
