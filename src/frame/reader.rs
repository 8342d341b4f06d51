//! Bounded line reader: reads at most `MAX_LINE_BYTES + 1` bytes before deciding.
//!
//! The common case — a short line that lies entirely inside the underlying reader's buffer — is
//! parsed straight from that buffer without copying. Only lines split across `fill_buf` chunks
//! are assembled in the reader's own line buffer, which is reused across calls and never grows
//! past `MAX_LINE_BYTES + 1` bytes.

use std::io::{self, BufRead};

use super::envelope::ResponseLine;
#[cfg(test)]
use super::envelope::{decode_response_text, RawEnvelope};
use super::fast::find_line;
use super::text::{line_text, line_text_of, push_capped, ReadFault, MAX_BUFFERED};

/// Reads newline-terminated JSON values with a hard cap on line length.
///
/// A line is its bytes before `\n`, with one trailing `\r` stripped; it may be at most
/// [`MAX_LINE_BYTES`](super::MAX_LINE_BYTES) long. After any [`ReadFault`] the stream position is unspecified and the
/// reader must not be used again.
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

    /// The underlying reader, mutably (its buffered bytes must stay as they are).
    #[cfg_attr(
        any(not(target_os = "linux"), webcodex_portable_wait),
        allow(dead_code)
    )]
    pub(crate) fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The wrapped reader (e.g. to see whether more bytes are already buffered).
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// True while the start of a line is held here, its end not read yet (a non-blocking
    /// source ran dry in the middle of it).
    #[cfg_attr(
        any(not(target_os = "linux"), webcodex_portable_wait),
        allow(dead_code)
    )]
    pub fn has_partial_line(&self) -> bool {
        !self.line.is_empty()
    }

    /// Reads the next line and parses it as one JSON value.
    ///
    /// Fails with [`ReadFault::TooLarge`] as soon as the line is known to exceed
    /// [`MAX_LINE_BYTES`](super::MAX_LINE_BYTES) (the rest of it is not consumed), [`ReadFault::Malformed`] for an empty
    /// line, a BOM, invalid UTF-8 or anything but exactly one JSON value, [`ReadFault::Eof`] at
    /// end of stream (even in the middle of a line) and [`ReadFault::Io`] for a read error other
    /// than `Interrupted`, which is retried.
    ///
    /// The tests' oracle: the host reads responses with
    /// [`read_response_line_into`](Self::read_response_line_into), then decodes them.
    #[cfg(test)]
    pub fn read_value(&mut self) -> Result<serde_json::Value, ReadFault> {
        self.read_line_with(parse_json)
    }

    /// Reads the next line as a response envelope, decoded straight into a [`RawEnvelope`]
    /// (see [`decode_response`](super::decode_response)). Fails with [`ReadFault::TooLarge`] as
    /// soon as the line is known to exceed [`MAX_LINE_BYTES`](super::MAX_LINE_BYTES) (the rest of it is not consumed),
    /// [`ReadFault::Malformed`] for an empty line, a BOM, invalid UTF-8 or anything but exactly
    /// one JSON value, [`ReadFault::Eof`] at end of stream (even in the middle of a line) and
    /// [`ReadFault::Io`] for a read error other than `Interrupted`, which is retried. A valid
    /// JSON line that is no well-formed envelope is not a read fault but a [`RawEnvelope`] that
    /// [`validate_raw`](super::validate_raw) rejects. (The tests': the host reads the line,
    /// then decodes it.)
    #[cfg(test)]
    pub fn read_response(&mut self) -> Result<RawEnvelope, ReadFault> {
        self.read_line_with(decode_response_text)
    }

    /// Reads the next line into `buffer` (cleared first) with every line check of a response:
    /// fails with [`ReadFault::TooLarge`] as soon as the line is known to exceed
    /// [`MAX_LINE_BYTES`](super::MAX_LINE_BYTES) (the rest of it is not consumed),
    /// [`ReadFault::Malformed`] for an empty line, a BOM or invalid UTF-8, [`ReadFault::Eof`] at
    /// end of stream (even in the middle of a line) and [`ReadFault::Io`] for a read error other
    /// than `Interrupted`, which is retried. The JSON parse is left to [`ResponseLine::decode`],
    /// possibly on another thread: the thread that decodes then allocates the decoded value and,
    /// usually, frees it too. `buffer` is the text buffer of an earlier line handed back
    /// ([`ResponseLine::into_buffer`]), or a new one.
    pub fn read_response_line(&mut self, buffer: String) -> Result<ResponseLine, ReadFault> {
        let mut buffer = buffer;
        self.read_response_line_into(&mut buffer)
    }

    /// [`read_response_line`](Self::read_response_line) that takes `buffer` only when a line
    /// was read: on a fault (in particular a non-blocking source's
    /// [`ReadFault::is_would_block`]) it stays with the caller for the next attempt.
    pub fn read_response_line_into(
        &mut self,
        buffer: &mut String,
    ) -> Result<ResponseLine, ReadFault> {
        buffer.clear();
        self.read_line_with(|text| {
            buffer.push_str(text);
            Ok(())
        })?;
        Ok(ResponseLine::new(std::mem::take(buffer)))
    }

    /// Reads the next line and hands its text to `decode`, with every fault of
    /// [`read_response_line`](Self::read_response_line).
    ///
    /// `decode` sees the line without its `\n` and without one trailing `\r`: valid UTF-8, not
    /// empty, no BOM, at most [`MAX_LINE_BYTES`](super::MAX_LINE_BYTES) long. It is called only when a whole line was
    /// read, and in the common case straight from the underlying buffer (no copy). Whatever it
    /// returns is returned; it should fail with [`ReadFault::Malformed`] for text that is not
    /// exactly one JSON value, like [`ResponseLine::decode`] does.
    ///
    /// On a non-blocking source a `WouldBlock` read is returned as [`ReadFault::Io`] (see
    /// [`ReadFault::is_would_block`]) and is not terminal: the bytes of a line read so far are
    /// kept, and the next call goes on with that line.
    pub fn read_line_with<T>(
        &mut self,
        decode: impl FnOnce(&str) -> Result<T, ReadFault>,
    ) -> Result<T, ReadFault> {
        loop {
            let buf = match self.inner.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ReadFault::Io(e)),
            };
            if buf.is_empty() {
                return Err(ReadFault::Eof);
            }
            match find_line(buf) {
                Some((pos, ascii)) if self.line.is_empty() => {
                    // Fast path: the whole line is in the first chunk; parse it in place.
                    let parsed = line_text_of(&buf[..pos], ascii).and_then(decode);
                    self.inner.consume(pos + 1);
                    return parsed;
                }
                Some((pos, _)) => {
                    if self.line.len() + pos > MAX_BUFFERED {
                        return Err(ReadFault::TooLarge);
                    }
                    push_capped(&mut self.line, &buf[..pos]);
                    self.inner.consume(pos + 1);
                    let decoded = line_text(&self.line).and_then(decode);
                    self.line.clear();
                    return decoded;
                }
                None => {
                    let n = buf.len();
                    if self.line.len() + n > MAX_BUFFERED {
                        return Err(ReadFault::TooLarge);
                    }
                    push_capped(&mut self.line, buf);
                    self.inner.consume(n);
                    // A full buffer can only still be valid if its last byte is the `\r` of `\r\n`.
                    if self.line.len() == MAX_BUFFERED && self.line.last() != Some(&b'\r') {
                        return Err(ReadFault::TooLarge);
                    }
                }
            }
        }
    }
}

/// Parses the text of one line as exactly one JSON value.
#[cfg(test)]
fn parse_json(text: &str) -> Result<serde_json::Value, ReadFault> {
    // `from_str` rejects trailing non-whitespace, so a second value on the line is malformed.
    serde_json::from_str(text).map_err(|_| ReadFault::Malformed)
}

#[cfg(test)]
mod tests {
    use std::io::{BufReader, Cursor, Read};

    use serde_json::json;

    use super::*;
    use crate::error::ErrorCode;
    use crate::frame::MAX_LINE_BYTES;

    /// A `BufRead` that hands out its data at most `chunk` bytes per `fill_buf`.
    struct Chunked {
        data: Vec<u8>,
        pos: usize,
        chunk: usize,
    }

    impl Chunked {
        fn new(data: impl Into<Vec<u8>>, chunk: usize) -> Chunked {
            Chunked {
                data: data.into(),
                pos: 0,
                chunk,
            }
        }
    }

    impl Read for Chunked {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.fill_buf()?.len().min(out.len());
            out[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.consume(n);
            Ok(n)
        }
    }

    impl BufRead for Chunked {
        fn fill_buf(&mut self) -> io::Result<&[u8]> {
            let end = (self.pos + self.chunk).min(self.data.len());
            Ok(&self.data[self.pos..end])
        }

        fn consume(&mut self, n: usize) {
            self.pos += n;
        }
    }

    /// A reader that never ends and never writes a newline.
    struct Endless;

    impl Read for Endless {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            out.fill(b'a');
            Ok(out.len())
        }
    }

    /// A reader that fails with `kind` `failures` times, then yields `data`.
    struct Failing {
        kind: io::ErrorKind,
        failures: usize,
        data: Cursor<Vec<u8>>,
    }

    impl Read for Failing {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.failures > 0 {
                self.failures -= 1;
                return Err(io::Error::new(self.kind, "test failure"));
            }
            self.data.read(out)
        }
    }

    fn reader(data: &[u8]) -> LineReader<Cursor<Vec<u8>>> {
        LineReader::new(Cursor::new(data.to_vec()))
    }

    /// A line holding one JSON string, exactly `len` bytes long.
    fn string_line(len: usize) -> Vec<u8> {
        let mut line = vec![b'"'];
        line.resize(len - 1, b'a');
        line.push(b'"');
        line
    }

    #[test]
    fn reads_consecutive_values() {
        let mut r = reader(b"{\"a\":1}\n[2]\n");
        assert_eq!(r.read_value().unwrap(), json!({"a": 1}));
        assert_eq!(r.read_value().unwrap(), json!([2]));
        assert!(matches!(r.read_value(), Err(ReadFault::Eof)));
    }

    #[test]
    fn line_split_across_chunks_is_assembled() {
        let mut r = LineReader::new(Chunked::new(&b"{\"key\":\"value\"}\n7\n"[..], 3));
        assert_eq!(r.read_value().unwrap(), json!({"key": "value"}));
        assert_eq!(r.read_value().unwrap(), json!(7));
        assert!(matches!(r.read_value(), Err(ReadFault::Eof)));
    }

    #[test]
    fn crlf_is_tolerated() {
        let mut r = reader(b"{\"a\":1}\r\n2\r\n");
        assert_eq!(r.read_value().unwrap(), json!({"a": 1}));
        assert_eq!(r.read_value().unwrap(), json!(2));
    }

    #[test]
    fn crlf_split_across_chunks_is_tolerated() {
        let mut r = LineReader::new(Chunked::new(&b"[1,2]\r\n"[..], 1));
        assert_eq!(r.read_value().unwrap(), json!([1, 2]));
    }

    #[test]
    fn empty_line_is_malformed() {
        assert!(matches!(
            reader(b"\n").read_value(),
            Err(ReadFault::Malformed)
        ));
    }

    #[test]
    fn bare_cr_line_is_malformed() {
        assert!(matches!(
            reader(b"\r\n").read_value(),
            Err(ReadFault::Malformed)
        ));
    }

    #[test]
    fn whitespace_only_line_is_malformed() {
        assert!(matches!(
            reader(b"   \n").read_value(),
            Err(ReadFault::Malformed)
        ));
    }

    #[test]
    fn bom_is_malformed() {
        let r = reader(b"\xEF\xBB\xBF{}\n").read_value();
        assert!(matches!(r, Err(ReadFault::Malformed)));
    }

    #[test]
    fn invalid_utf8_is_malformed() {
        let r = reader(b"\"\xFF\"\n").read_value();
        assert!(matches!(r, Err(ReadFault::Malformed)));
    }

    #[test]
    fn invalid_json_is_malformed() {
        assert!(matches!(
            reader(b"{\"a\":}\n").read_value(),
            Err(ReadFault::Malformed)
        ));
    }

    #[test]
    fn trailing_garbage_is_malformed() {
        assert!(matches!(
            reader(b"{} x\n").read_value(),
            Err(ReadFault::Malformed)
        ));
    }

    #[test]
    fn two_values_on_one_line_are_malformed() {
        assert!(matches!(
            reader(b"{} {}\n").read_value(),
            Err(ReadFault::Malformed)
        ));
    }

    #[test]
    fn eof_at_line_start_is_eof() {
        assert!(matches!(reader(b"").read_value(), Err(ReadFault::Eof)));
    }

    #[test]
    fn partial_last_line_is_eof() {
        let mut r = reader(b"1\n{\"a\":1}");
        assert_eq!(r.read_value().unwrap(), json!(1));
        assert!(matches!(r.read_value(), Err(ReadFault::Eof)));
    }

    #[test]
    fn partial_line_split_across_chunks_is_eof() {
        let mut r = LineReader::new(Chunked::new(&b"{\"a\":1}"[..], 2));
        assert!(matches!(r.read_value(), Err(ReadFault::Eof)));
    }

    #[test]
    fn exactly_one_mib_line_is_accepted() {
        let mut data = string_line(MAX_LINE_BYTES);
        data.push(b'\n');
        let v = reader(&data).read_value().unwrap();
        assert_eq!(v.as_str().unwrap().len(), MAX_LINE_BYTES - 2);
    }

    #[test]
    fn exactly_one_mib_line_across_chunks_is_accepted() {
        let mut data = string_line(MAX_LINE_BYTES);
        data.push(b'\n');
        let mut r = LineReader::new(BufReader::with_capacity(4096, Cursor::new(data)));
        assert_eq!(
            r.read_value().unwrap().as_str().unwrap().len(),
            MAX_LINE_BYTES - 2
        );
        assert!(r.line.capacity() <= MAX_BUFFERED);
    }

    #[test]
    fn exactly_one_mib_line_with_crlf_is_accepted() {
        let mut data = string_line(MAX_LINE_BYTES);
        data.extend_from_slice(b"\r\n");
        let mut r = LineReader::new(BufReader::with_capacity(4096, Cursor::new(data.clone())));
        assert!(r.read_value().is_ok());
        assert!(reader(&data).read_value().is_ok());
    }

    #[test]
    fn line_longer_than_one_mib_is_too_large() {
        let mut data = string_line(MAX_LINE_BYTES + 1);
        data.push(b'\n');
        assert!(matches!(
            reader(&data).read_value(),
            Err(ReadFault::TooLarge)
        ));
    }

    #[test]
    fn line_longer_than_one_mib_across_chunks_is_too_large() {
        let mut data = string_line(MAX_LINE_BYTES + 1);
        data.push(b'\n');
        let mut r = LineReader::new(BufReader::with_capacity(4096, Cursor::new(data)));
        assert!(matches!(r.read_value(), Err(ReadFault::TooLarge)));
    }

    #[test]
    fn line_longer_than_one_mib_with_crlf_is_too_large() {
        let mut data = string_line(MAX_LINE_BYTES + 1);
        data.extend_from_slice(b"\r\n");
        let mut r = LineReader::new(BufReader::with_capacity(4096, Cursor::new(data.clone())));
        assert!(matches!(r.read_value(), Err(ReadFault::TooLarge)));
        assert!(matches!(
            reader(&data).read_value(),
            Err(ReadFault::TooLarge)
        ));
    }

    #[test]
    fn endless_line_is_too_large_without_growing_past_the_cap() {
        let mut r = LineReader::new(BufReader::with_capacity(4096, Endless));
        assert!(matches!(r.read_value(), Err(ReadFault::TooLarge)));
        assert!(r.line.capacity() <= MAX_BUFFERED);
    }

    #[test]
    fn interrupted_read_is_retried() {
        let failing = Failing {
            kind: io::ErrorKind::Interrupted,
            failures: 2,
            data: Cursor::new(b"[true]\n".to_vec()),
        };
        let mut r = LineReader::new(BufReader::new(failing));
        assert_eq!(r.read_value().unwrap(), json!([true]));
    }

    #[test]
    fn read_error_is_io() {
        let failing = Failing {
            kind: io::ErrorKind::BrokenPipe,
            failures: 1,
            data: Cursor::new(Vec::new()),
        };
        let mut r = LineReader::new(BufReader::new(failing));
        let fault = r.read_value().unwrap_err();
        assert!(matches!(&fault, ReadFault::Io(e) if e.kind() == io::ErrorKind::BrokenPipe));
        assert_eq!(fault.code(), ErrorCode::StdoutFailed);
    }

    #[test]
    fn faults_map_to_stable_codes() {
        assert_eq!(ReadFault::Eof.code(), ErrorCode::Eof);
        assert_eq!(ReadFault::TooLarge.code(), ErrorCode::MessageTooLarge);
        assert_eq!(ReadFault::Malformed.code(), ErrorCode::MalformedJson);
    }

    #[test]
    fn read_line_with_hands_over_the_checked_text() {
        let mut r = LineReader::new(Chunked::new(&b"abc\r\n\xC3\xA9\n{}\n"[..], 2));
        assert_eq!(r.read_line_with(|t| Ok(t.to_string())).unwrap(), "abc");
        assert_eq!(r.read_line_with(|t| Ok(t.to_string())).unwrap(), "é");
        // Whatever the decoder says is returned, and the line is consumed either way.
        assert!(matches!(
            r.read_line_with(|_| Err::<(), _>(ReadFault::Malformed)),
            Err(ReadFault::Malformed)
        ));
        assert!(matches!(
            r.read_line_with(|t| Ok(t.len())),
            Err(ReadFault::Eof)
        ));
    }

    #[test]
    fn read_line_with_keeps_the_line_faults() {
        for data in [&b"\n"[..], b"\r\n", b"\xEF\xBB\xBF{}\n", b"\"\xFF\"\n"] {
            let mut called = false;
            let fault = reader(data).read_line_with(|_| {
                called = true;
                Ok(())
            });
            assert!(matches!(fault, Err(ReadFault::Malformed)), "{data:?}");
            assert!(!called);
        }
        let mut data = string_line(MAX_LINE_BYTES + 1);
        data.push(b'\n');
        assert!(matches!(
            reader(&data).read_line_with(|_| Ok(())),
            Err(ReadFault::TooLarge)
        ));
    }

    #[test]
    fn read_response_decodes_consecutive_envelopes() {
        use crate::frame::{validate_raw, Envelope, EnvelopeFault};

        let data = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1}}\n[1]\r\n{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":2,\"message\":\"m\"}}\n{\"a\":}\n";
        for chunk in [1, 3, 7, 4096] {
            let mut r = LineReader::new(Chunked::new(&data[..], chunk));
            let first = r.read_response().unwrap();
            assert_eq!(
                validate_raw(first, 1),
                Ok(Envelope::Result(json!({"a": 1})))
            );
            let second = r.read_response().unwrap();
            assert_eq!(validate_raw(second, 2), Err(EnvelopeFault::Protocol));
            let third = r.read_response().unwrap();
            let expected = Envelope::Error {
                code: 2,
                message: "m".into(),
            };
            assert_eq!(validate_raw(third, 3), Ok(expected));
            assert!(matches!(r.read_response(), Err(ReadFault::Malformed)));
        }
        assert!(matches!(reader(b"").read_response(), Err(ReadFault::Eof)));
    }

    #[test]
    fn response_lines_decode_like_read_response_and_reuse_their_buffer() {
        use crate::frame::validate_raw;

        let data = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1}}\r\n[1]\n{\"a\":}\n\xEF\xBB\xBF{}\n";
        for chunk in [1, 3, 7, 4096] {
            let mut lines = LineReader::new(Chunked::new(&data[..], chunk));
            let mut values = LineReader::new(Chunked::new(&data[..], chunk));
            let mut buffer = String::with_capacity(64);
            for expected_id in 1..=3 {
                let line = lines.read_response_line(buffer).unwrap();
                assert!(!line.text().ends_with('\r'));
                match (line.decode(), values.read_response()) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(validate_raw(a, expected_id), validate_raw(b, expected_id))
                    }
                    (Err(a), Err(b)) => assert_eq!(a.code(), b.code()),
                    (a, b) => panic!("line {expected_id}: {a:?} against {b:?}"),
                }
                buffer = line.into_buffer();
                assert!(
                    buffer.capacity() >= 64,
                    "the buffer handed in is the one reused"
                );
            }
            // A BOM is a line fault, found before any parse.
            assert!(matches!(
                lines.read_response_line(buffer),
                Err(ReadFault::Malformed)
            ));
        }
    }
}
