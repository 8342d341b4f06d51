//! Bounded line reading for the plugin side: a line that is too long is skipped, not fatal.
//!
//! Unlike the host's `frame::LineReader`, where every fault ends the connection, a plugin keeps
//! serving after a bad line: it discards the oversized line up to its newline and reads on. At
//! most `MAX_LINE_BYTES + 1` bytes (room for a trailing `\r`) are ever buffered.

use std::io::{self, BufRead};

use crate::frame::MAX_LINE_BYTES;

/// The most bytes of one line that are ever buffered: the limit plus room for a trailing `\r`.
const MAX_BUFFERED: usize = MAX_LINE_BYTES + 1;

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line {
    /// The line (without `\n` and one trailing `\r`) is in the buffer.
    Ready,
    /// The line exceeded `MAX_LINE_BYTES`; it was consumed up to and including its newline.
    TooLong,
    /// End of input before any byte of a new line.
    Eof,
}

/// Reads the next line into `line`, replacing its contents.
///
/// A last line without a newline is still returned as [`Line::Ready`]. `Interrupted` reads are
/// retried; any other read error is returned.
pub(super) fn read_line<R: BufRead>(input: &mut R, line: &mut Vec<u8>) -> io::Result<Line> {
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
                (true, true) => Line::TooLong,
                (true, false) => finish(line),
            });
        }
        started = true;
        let (chunk, used, done) = match buf.iter().position(|&b| b == b'\n') {
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
                Line::TooLong
            } else {
                finish(line)
            });
        }
    }
}

/// Strips one trailing `\r` and applies the exact limit.
fn finish(line: &mut Vec<u8>) -> Line {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.len() > MAX_LINE_BYTES {
        line.clear();
        Line::TooLong
    } else {
        Line::Ready
    }
}

/// Appends `bytes`, growing the capacity geometrically but never past `MAX_BUFFERED`. The
/// caller guarantees the result fits.
fn push_capped(line: &mut Vec<u8>, bytes: &[u8]) {
    let needed = line.len() + bytes.len();
    if needed > line.capacity() {
        let target = needed.max(line.capacity() * 2).min(MAX_BUFFERED);
        line.reserve_exact(target - line.len());
    }
    line.extend_from_slice(bytes);
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
            (Line::Ready, b"abc".to_vec()),
            (Line::Ready, b"defgh".to_vec()),
            (Line::Ready, Vec::new()),
            (Line::Ready, b"last".to_vec()),
        ];
        assert_eq!(found, expected);
    }

    #[test]
    fn line_of_exactly_the_limit_is_ready() {
        let mut input = vec![b'x'; MAX_LINE_BYTES];
        input.extend_from_slice(b"\r\nok\n");
        let found = lines_of(&input, 8192);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].0, Line::Ready);
        assert_eq!(found[0].1.len(), MAX_LINE_BYTES);
        assert_eq!(found[1], (Line::Ready, b"ok".to_vec()));
    }

    #[test]
    fn oversized_line_is_skipped_to_its_newline() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 1];
        input.extend_from_slice(b"\nok\n");
        let found = lines_of(&input, 8192);
        assert_eq!(
            found,
            vec![(Line::TooLong, Vec::new()), (Line::Ready, b"ok".to_vec())]
        );
    }

    #[test]
    fn oversized_last_line_without_newline_is_too_long() {
        let input = vec![b'x'; MAX_LINE_BYTES + 2];
        assert_eq!(lines_of(&input, 8192), vec![(Line::TooLong, Vec::new())]);
    }

    #[test]
    fn buffer_never_grows_past_the_cap() {
        let mut input = vec![b'x'; 3 * MAX_LINE_BYTES];
        input.push(b'\n');
        let mut reader = BufReader::with_capacity(8192, Cursor::new(input));
        let mut line = Vec::new();
        assert_eq!(
            read_line(&mut reader, &mut line).expect("read"),
            Line::TooLong
        );
        assert!(line.capacity() <= MAX_BUFFERED);
    }
}
