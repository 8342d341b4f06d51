//! The protocol's line framing, for both ends: its version string, the bound on one line, and
//! bounded line reading that survives a bad line.
//!
//! A reader that serves requests (a plugin's [`Plugin::serve`](crate::Plugin::serve), the host's
//! stdio transport) keeps going after a bad line: [`read_line`] discards an oversized line up to
//! its newline and reads on. At most `MAX_LINE_BYTES + 1` bytes (room for a trailing `\r`) are
//! ever buffered, and the buffer's capacity never grows past that.

use std::io::{self, BufRead};

/// The protocol version string exchanged in `initialize`.
pub const PROTOCOL_VERSION: &str = "webcodex-plugin-v1";

/// The longest protocol line in either direction (1 MiB), without its newline.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The most bytes of one line that are ever buffered: the limit plus room for a trailing `\r`.
pub const MAX_BUFFERED: usize = MAX_LINE_BYTES + 1;

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// The line (without `\n` and one trailing `\r`) is in the buffer.
    Complete,
    /// The line exceeded `MAX_LINE_BYTES`; it was consumed up to and including its newline.
    TooLarge,
    /// End of input before any byte of a new line.
    Eof,
}

/// Reads the next line into `line`, replacing its contents.
///
/// A last line without a newline is still returned as [`Line::Complete`]. `Interrupted` reads are
/// retried; any other read error is returned.
///
/// ```
/// use std::io::Cursor;
/// use webcodex_plugin_sdk::{read_line, Line};
///
/// let mut input = Cursor::new("first\r\nsecond");
/// let mut line = Vec::new();
/// assert_eq!(read_line(&mut input, &mut line)?, Line::Complete);
/// assert_eq!(line, b"first");
/// assert_eq!(read_line(&mut input, &mut line)?, Line::Complete);
/// assert_eq!(line, b"second");
/// assert_eq!(read_line(&mut input, &mut line)?, Line::Eof);
/// Ok::<(), std::io::Error>(())
/// ```
pub fn read_line<R: BufRead>(input: &mut R, line: &mut Vec<u8>) -> io::Result<Line> {
    line.clear();
    let mut too_long = false;
    let mut started = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(match (started, too_long) {
                (false, _) => Line::Eof,
                (true, true) => Line::TooLarge,
                (true, false) => finish(line),
            });
        }
        started = true;
        let (chunk, used, done) = match memchr::memchr(b'\n', buf) {
            Some(pos) => (&buf[..pos], pos + 1, true),
            None => (buf, buf.len(), false),
        };
        if !too_long {
            if line.len() + chunk.len() > MAX_BUFFERED {
                too_long = true;
                line.clear();
            } else {
                push_capped(line, chunk);
            }
        }
        input.consume(used);
        if done {
            return Ok(if too_long {
                Line::TooLarge
            } else {
                finish(line)
            });
        }
    }
}

/// Appends `bytes` to `line`, growing its capacity geometrically but never past
/// `MAX_BUFFERED`. The caller guarantees the result fits.
#[inline]
pub fn push_capped(line: &mut Vec<u8>, bytes: &[u8]) {
    let needed = line.len() + bytes.len();
    debug_assert!(needed <= MAX_BUFFERED);
    if needed > line.capacity() {
        let target = needed.max(line.capacity() * 2).min(MAX_BUFFERED);
        line.reserve_exact(target - line.len());
    }
    line.extend_from_slice(bytes);
}

/// Strips one trailing `\r` and applies the exact limit.
fn finish(line: &mut Vec<u8>) -> Line {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.len() > MAX_LINE_BYTES {
        line.clear();
        Line::TooLarge
    } else {
        Line::Complete
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufReader, Cursor};

    use super::*;

    fn lines_of(input: &[u8], capacity: usize) -> Vec<(Line, Vec<u8>)> {
        let mut reader = BufReader::with_capacity(capacity, Cursor::new(input.to_vec()));
        let mut line = Vec::new();
        let mut found = Vec::new();
        loop {
            match read_line(&mut reader, &mut line).expect("in-memory read") {
                Line::Eof => return found,
                kind => found.push((kind, line.clone())),
            }
        }
    }

    #[test]
    fn splits_lines_across_small_chunks_and_strips_cr() {
        let found = lines_of(b"abc\r\ndefgh\n\nlast", 3);
        let expected: Vec<(Line, Vec<u8>)> = vec![
            (Line::Complete, b"abc".to_vec()),
            (Line::Complete, b"defgh".to_vec()),
            (Line::Complete, Vec::new()),
            (Line::Complete, b"last".to_vec()),
        ];
        assert_eq!(found, expected);
    }

    #[test]
    fn line_of_exactly_the_limit_is_ready() {
        let mut input = vec![b'x'; MAX_LINE_BYTES];
        input.extend_from_slice(b"\r\nok\n");
        let found = lines_of(&input, 8192);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].0, Line::Complete);
        assert_eq!(found[0].1.len(), MAX_LINE_BYTES);
        assert_eq!(found[1], (Line::Complete, b"ok".to_vec()));
    }

    #[test]
    fn oversized_line_is_skipped_to_its_newline() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 1];
        input.extend_from_slice(b"\nok\n");
        let found = lines_of(&input, 8192);
        assert_eq!(
            found,
            vec![
                (Line::TooLarge, Vec::new()),
                (Line::Complete, b"ok".to_vec())
            ]
        );
    }

    #[test]
    fn oversized_last_line_without_newline_is_too_long() {
        let input = vec![b'x'; MAX_LINE_BYTES + 2];
        assert_eq!(lines_of(&input, 8192), vec![(Line::TooLarge, Vec::new())]);
    }

    #[test]
    fn buffer_never_grows_past_the_cap() {
        let mut input = vec![b'x'; 3 * MAX_LINE_BYTES];
        input.push(b'\n');
        let mut reader = BufReader::with_capacity(8192, Cursor::new(input));
        let mut line = Vec::new();
        assert_eq!(
            read_line(&mut reader, &mut line).expect("read"),
            Line::TooLarge
        );
        assert!(line.capacity() <= MAX_BUFFERED);
    }

    // The stdio transport's cases (it read lines with its own copy of this reader before).

    fn lines(input: &[u8]) -> Vec<Result<Vec<u8>, Line>> {
        let mut reader = BufReader::with_capacity(7, Cursor::new(input.to_vec()));
        let mut out = Vec::new();
        let mut line = Vec::new();
        loop {
            match read_line(&mut reader, &mut line).unwrap() {
                Line::Eof => return out,
                Line::Complete => out.push(Ok(line.clone())),
                other => out.push(Err(other)),
            }
        }
    }

    #[test]
    fn reads_lines_across_small_buffers() {
        assert_eq!(
            lines(b"hello world\r\n\nlast"),
            vec![
                Ok(b"hello world".to_vec()),
                Ok(Vec::new()),
                Ok(b"last".to_vec())
            ]
        );
    }

    #[test]
    fn skips_an_oversized_line_and_goes_on() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 1];
        input.extend_from_slice(b"\nnext\n");
        let mut exact = vec![b'y'; MAX_LINE_BYTES];
        exact.extend_from_slice(b"\r\n");
        input.extend_from_slice(&exact);
        let got = lines(&input);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], Err(Line::TooLarge));
        assert_eq!(got[1], Ok(b"next".to_vec()));
        assert_eq!(got[2].as_ref().unwrap().len(), MAX_LINE_BYTES);
    }
}
