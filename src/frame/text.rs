//! The bytes and text of one protocol line, and why a line could not be read.
//!
//! Below the line reader ([`LineReader`](super::LineReader)) and the envelope decoder: they find
//! a line's end, buffer it under the one bound and turn its bytes into text here, and report the
//! same [`ReadFault`]s. The bound and the buffer's capped growth are the plugin SDK's, shared
//! with its reader that skips a bad line and reads on ([`read_line`](super::read_line)).

use std::io;

use super::MAX_LINE_BYTES;
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

/// [`line_text`] of bytes that are all ASCII when `ascii` (as [`find_line`] tells): they are
/// not looked through again for UTF-8.
pub(super) fn line_text_of(raw: &[u8], ascii: bool) -> Result<&str, ReadFault> {
    let line = raw.strip_suffix(b"\r").unwrap_or(raw);
    if line.len() > MAX_LINE_BYTES {
        return Err(ReadFault::TooLarge);
    }
    if line.is_empty() || line.starts_with(BOM) {
        return Err(ReadFault::Malformed);
    }
    if ascii {
        debug_assert!(line.is_ascii());
        // SAFETY: ASCII bytes are UTF-8.
        return Ok(unsafe { std::str::from_utf8_unchecked(line) });
    }
    std::str::from_utf8(line).map_err(|_| ReadFault::Malformed)
}

/// How far [`find_line`] looks with its own compares before it leaves the rest to
/// [`find_newline`].
#[cfg(target_arch = "x86_64")]
const SHORT_LINE: usize = 256;

/// The index of the first `\n` in `bytes`, and whether every byte before it is ASCII (`false`
/// when not known). A short line is looked through in one pass of 16-byte compares (SSE2, part
/// of every x86-64), two a step while no `\n` is among them, which tells both at once; a longer
/// one is left to [`find_newline`].
#[cfg(target_arch = "x86_64")]
pub(super) fn find_line(bytes: &[u8]) -> Option<(usize, bool)> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        _mm_setzero_si128,
    };
    let short = bytes.len().min(SHORT_LINE);
    if short < 16 {
        return find_newline(bytes).map(|at| (at, false));
    }
    let mut at = 0;
    // SAFETY: SSE2 is always there on x86-64; every load reads the 16 bytes at its offset, and
    // that offset plus 16 is at most `short <= bytes.len()`.
    unsafe {
        let load = |at: usize| _mm_loadu_si128(bytes.as_ptr().add(at).cast::<__m128i>());
        let (newline, mut seen) = (_mm_set1_epi8(b'\n' as i8), _mm_setzero_si128());
        while at + 32 <= short {
            let (a, b) = (load(at), load(at + 16));
            let hits = _mm_or_si128(_mm_cmpeq_epi8(a, newline), _mm_cmpeq_epi8(b, newline));
            if _mm_movemask_epi8(hits) != 0 {
                break;
            }
            seen = _mm_or_si128(seen, _mm_or_si128(a, b));
            at += 32;
        }
        loop {
            // The last step may look again at bytes already seen: none of them is a `\n`.
            let from = at.min(short - 16);
            let x = load(from);
            let hits = _mm_movemask_epi8(_mm_cmpeq_epi8(x, newline)) as u32;
            if hits != 0 {
                let n = hits.trailing_zeros();
                let high_before = _mm_movemask_epi8(x) as u32 & ((1 << n) - 1);
                let ascii = _mm_movemask_epi8(seen) == 0 && high_before == 0;
                return Some((from + n as usize, ascii));
            }
            if from + 16 == short {
                break;
            }
            seen = _mm_or_si128(seen, x);
            at += 16;
        }
    }
    find_newline(&bytes[short..]).map(|at| (short + at, false))
}

/// The index of the first `\n` in `bytes`; never a claim of ASCII.
#[cfg(not(target_arch = "x86_64"))]
pub(super) fn find_line(bytes: &[u8]) -> Option<(usize, bool)> {
    find_newline(bytes).map(|at| (at, false))
}

/// The index of the first `\n` in `bytes` (the `memchr` crate: vector compares of 16 or 32
/// bytes a step, chosen for the CPU at run time; already in the tree through serde_json).
#[inline]
pub(super) fn find_newline(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `find_line` finds what a byte search finds, and claims ASCII only for ASCII.
    #[test]
    fn find_line_matches_a_byte_search() {
        for len in 0..300usize {
            for newline in [None, Some(0), Some(len / 2), Some(len.saturating_sub(1))] {
                for high in [None, Some(len / 3), Some(len.saturating_sub(2))] {
                    let mut bytes = vec![b'a'; len];
                    if let Some(at) = high.filter(|&at| at < len) {
                        bytes[at] = 0xC3;
                    }
                    if let Some(at) = newline.filter(|&at| at < len) {
                        bytes[at] = b'\n';
                    }
                    let first = bytes.iter().position(|&b| b == b'\n');
                    let found = find_line(&bytes);
                    assert_eq!(found.map(|(at, _)| at), first, "len {len}");
                    if let Some((at, true)) = found {
                        assert!(bytes[..at].is_ascii(), "len {len}");
                    }
                }
            }
        }
    }
}
