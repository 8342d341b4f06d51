//! The bytes and text of one protocol line, and why a line could not be read.
//!
//! Below the line reader ([`LineReader`](super::LineReader)) and the envelope decoder: they find
//! a line's end, buffer it under the one bound and turn its bytes into text here, and report the
//! same [`ReadFault`]s. The bound and the buffer's capped growth are the plugin SDK's, shared
//! with its reader that skips a bad line and reads on ([`read_line`](super::read_line)).

use std::io;

use super::{fast, MAX_LINE_BYTES};
use crate::error::ErrorCode;

/// The most bytes of one line that are ever buffered (the limit plus room for a trailing `\r`),
/// and the growth of a line buffer that never passes it.
pub(super) use webcodex_plugin_sdk::framing::{push_capped, MAX_BUFFERED};

/// The UTF-8 byte order mark, which the protocol forbids.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Why no value could be read. Every fault is terminal for the connection.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadFault {
    /// End of stream (also: a partial last line without newline).
    Eof,
    /// The line is longer than `MAX_LINE_BYTES` without its newline.
    TooLarge,
    /// Empty line, BOM, invalid UTF-8 or invalid JSON.
    Malformed,
    /// The read failed.
    #[cfg_attr(
        any(not(target_os = "linux"), webcodex_portable_wait),
        allow(dead_code)
    )]
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

    /// True for a non-blocking source that has no byte now: not a fault, try again once it is
    /// readable (see [`LineReader::read_line_with`](super::LineReader::read_line_with)).
    #[cfg_attr(
        any(not(target_os = "linux"), webcodex_portable_wait),
        allow(dead_code)
    )]
    pub fn is_would_block(&self) -> bool {
        matches!(self, ReadFault::Io(e) if e.kind() == io::ErrorKind::WouldBlock)
    }
}

/// The text of one line (given without its `\n`): one trailing `\r` stripped, then at most
/// `MAX_LINE_BYTES`, not empty, no BOM, valid UTF-8.
pub(super) fn line_text(raw: &[u8]) -> Result<&str, ReadFault> {
    line_text_of(raw, false)
}

/// [`line_text`] of bytes that are all ASCII when `ascii` (as
/// [`find_line`](super::fast::find_line) tells): they are not looked through again for UTF-8.
pub(super) fn line_text_of(raw: &[u8], ascii: bool) -> Result<&str, ReadFault> {
    let line = raw.strip_suffix(b"\r").unwrap_or(raw);
    if line.len() > MAX_LINE_BYTES {
        return Err(ReadFault::TooLarge);
    }
    if line.is_empty() || line.starts_with(BOM) {
        return Err(ReadFault::Malformed);
    }
    fast::utf8(line, ascii).ok_or(ReadFault::Malformed)
}
