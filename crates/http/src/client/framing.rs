//! The pure parts of reading an answer, without I/O: where its head ends, what the head says
//! (status, body framing, whether the connection may carry another request, the runner
//! instance), and the decoding of a chunked body. `exchange` feeds them the bytes it reads.

use std::mem::MaybeUninit;
use std::ops::Range;

use super::super::RUNNER_INSTANCE_HEADER;

/// The most header fields of an answer (as ureq allowed); more is not a `serve` answer.
const MAX_FIELDS: usize = 128;
/// The longest chunk-size line (extensions included) or trailer line of a chunked body.
pub(super) const MAX_LINE_BYTES: usize = 4096;
/// The most bytes of trailer fields after a chunked body.
const MAX_TRAILER_BYTES: usize = 16 * 1024;
/// The longest runner instance id taken from an answer.
const MAX_INSTANCE_BYTES: usize = 64;

/// How an answer's body is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// No body (204, 304).
    Empty,
    /// `Content-Length`.
    Length(u64),
    /// `Transfer-Encoding` ending in `chunked`.
    Chunked,
    /// Neither: the body ends when the server closes the connection.
    UntilClose,
}

/// What an answer's head says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Head {
    /// The status code.
    pub(super) status: u16,
    /// The body's framing.
    pub(super) framing: Framing,
    /// Whether the connection may carry another request once the body is read to its end:
    /// HTTP/1.1 without `Connection: close` (HTTP/1.0 only with `keep-alive`), a body with a
    /// known end, and not both `Content-Length` and `Transfer-Encoding`.
    pub(super) keep_alive: bool,
    /// Where the first `Webcodex-Runner-Instance` value lies in the head, when it is usable
    /// (1 to 64 bytes of visible ASCII or tab).
    pub(super) instance: Option<Range<usize>>,
    /// The head's length in bytes, its blank line included.
    pub(super) len: usize,
}

/// Why a head (or a chunked body) is not HTTP/1.x.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Malformed(pub(super) String);

/// Where the head in `input` ends (after its blank line), when the blank line has arrived.
/// Searching starts at `from` (bytes already searched, less the last 3), so a head that comes
/// in many reads is searched once, and parsed again only once it may be complete. A bare LF
/// ends a line too, as `httparse` reads it.
pub(super) fn head_end(input: &[u8], from: usize) -> Option<usize> {
    let start = from.saturating_sub(3);
    let mut i = start;
    while let Some(at) = input[i..].iter().position(|&b| b == b'\n') {
        let nl = i + at;
        match input.get(nl + 1..) {
            Some([b'\n', ..]) => return Some(nl + 2),
            Some([b'\r', b'\n', ..]) => return Some(nl + 3),
            _ => i = nl + 1,
        }
    }
    None
}

/// Parses the head at the start of `input` (bytes after it are left alone): `None` while it is
/// not complete.
pub(super) fn parse_head(input: &[u8]) -> Result<Option<Head>, Malformed> {
    // Uninitialised: the parser writes the fields it finds (an initialised array of 128
    // would cost more than the parse of a short head).
    let mut fields = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_FIELDS];
    let mut response = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        input,
        &mut fields,
    );
    let len = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(Malformed(e.to_string())),
    };
    let status = response.code.unwrap_or_default();
    let http11 = response.version == Some(1);
    let mut chunked_last = false;
    let mut codings = false;
    let mut length: Option<u64> = None;
    let mut close = false;
    let mut keep_alive = false;
    let mut instance = None;
    let mut instance_seen = false;
    for field in response.headers.iter() {
        let name = field.name;
        if name.eq_ignore_ascii_case("content-length") {
            for part in field.value.split(|&b| b == b',') {
                let n = digits(trim(part)).ok_or_else(bad_length)?;
                if length.is_some_and(|l| l != n) {
                    return Err(bad_length());
                }
                length = Some(n);
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            for coding in field.value.split(|&b| b == b',').map(trim) {
                if !coding.is_empty() {
                    codings = true;
                    chunked_last = coding.eq_ignore_ascii_case(b"chunked");
                }
            }
        } else if name.eq_ignore_ascii_case("connection") {
            for token in field.value.split(|&b| b == b',').map(trim) {
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if !instance_seen && name.eq_ignore_ascii_case(RUNNER_INSTANCE_HEADER) {
            instance_seen = true;
            let value = field.value;
            let usable = !value.is_empty()
                && value.len() <= MAX_INSTANCE_BYTES
                && value
                    .iter()
                    .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b));
            if usable {
                let start = value.as_ptr() as usize - input.as_ptr() as usize;
                instance = Some(start..start + value.len());
            }
        }
    }
    let framing = if matches!(status, 204 | 304) || (100..200).contains(&status) {
        Framing::Empty
    } else if codings {
        if chunked_last {
            Framing::Chunked
        } else {
            Framing::UntilClose
        }
    } else {
        length.map_or(Framing::UntilClose, Framing::Length)
    };
    let persistent = if http11 { !close } else { keep_alive && !close };
    let keep_alive = persistent && framing != Framing::UntilClose && !(codings && length.is_some());
    Ok(Some(Head {
        status,
        framing,
        keep_alive,
        instance,
        len,
    }))
}

fn bad_length() -> Malformed {
    Malformed("an invalid Content-Length".into())
}

/// `bytes` without the spaces and tabs around it.
fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !matches!(b, b' ' | b'\t'));
    let end = bytes.iter().rposition(|b| !matches!(b, b' ' | b'\t'));
    match (start, end) {
        (Some(s), Some(e)) => &bytes[s..=e],
        _ => &[],
    }
}

/// The number `bytes` spells in decimal digits only (no sign, no space).
fn digits(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 19 {
        return None;
    }
    bytes.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0'))
    })
}

/// Where a chunked body's decoding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before a chunk-size line.
    Size,
    /// Inside a chunk's data, this many bytes left.
    Data(u64),
    /// After a chunk's data, before its CRLF.
    DataEnd,
    /// After the last chunk: trailer lines until a blank one; this many trailer bytes so far.
    Trailers(usize),
    /// The body has ended.
    Done,
}

/// Why a chunked body was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ChunkError {
    /// The decoded body would be larger than the bound.
    TooLarge,
    /// The chunked framing is broken.
    Broken(&'static str),
}

/// Decodes a chunked body as its bytes arrive.
#[derive(Debug)]
pub(super) struct Dechunker {
    state: State,
}

impl Dechunker {
    pub(super) fn new() -> Dechunker {
        Dechunker { state: State::Size }
    }

    /// Whether the body has ended (the last chunk and the trailers are read).
    pub(super) fn done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes what it can of `input` onto `out` (which may not grow beyond `max` bytes) and
    /// says how many bytes of `input` it used. Less than all of `input` is used when a line is
    /// not complete yet (more input is needed) or when the body has ended (the rest is not
    /// part of it).
    pub(super) fn feed(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        max: usize,
    ) -> Result<usize, ChunkError> {
        let mut used = 0;
        loop {
            let rest = &input[used..];
            match self.state {
                State::Done => return Ok(used),
                State::Size => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((n, size))) => {
                        used += n;
                        self.state = if size == 0 {
                            State::Trailers(0)
                        } else {
                            State::Data(size)
                        };
                    }
                    Ok(httparse::Status::Partial) if rest.len() < MAX_LINE_BYTES => {
                        return Ok(used)
                    }
                    _ => return Err(ChunkError::Broken("an invalid chunk size")),
                },
                State::Data(left) => {
                    if rest.is_empty() {
                        return Ok(used);
                    }
                    let n = rest.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    if out.len() + n > max {
                        return Err(ChunkError::TooLarge);
                    }
                    out.extend_from_slice(&rest[..n]);
                    used += n;
                    let left = left - n as u64;
                    self.state = if left == 0 {
                        State::DataEnd
                    } else {
                        State::Data(left)
                    };
                }
                State::DataEnd => match rest {
                    [b'\r', b'\n', ..] => {
                        used += 2;
                        self.state = State::Size;
                    }
                    [] | [b'\r'] => return Ok(used),
                    _ => return Err(ChunkError::Broken("a chunk without its CRLF")),
                },
                State::Trailers(seen) => {
                    let Some(at) = rest.iter().position(|&b| b == b'\n') else {
                        if rest.len() >= MAX_LINE_BYTES {
                            return Err(ChunkError::Broken("a trailer line too long"));
                        }
                        return Ok(used);
                    };
                    let line = &rest[..at];
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    used += at + 1;
                    if line.is_empty() {
                        self.state = State::Done;
                    } else if seen + at + 1 > MAX_TRAILER_BYTES {
                        return Err(ChunkError::Broken("trailers too large"));
                    } else {
                        self.state = State::Trailers(seen + at + 1);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Head {
        let end = head_end(text.as_bytes(), 0).expect("a complete head");
        let head = parse_head(text.as_bytes()).unwrap().expect("complete");
        assert_eq!(head.len, end);
        head
    }

    #[test]
    fn the_end_of_a_head_is_found_once_and_with_bare_line_feeds() {
        let text = b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody";
        assert_eq!(head_end(text, 0), Some(text.len() - 4));
        // Searching again from where the last search stopped finds the same end.
        for from in 0..text.len() {
            assert_eq!(head_end(text, from.min(20)), Some(text.len() - 4), "{from}");
        }
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n", 0), None);
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n\r", 0), None);
        assert_eq!(head_end(b"HTTP/1.1 200 OK\nA: b\n\nx", 0), Some(22));
        assert_eq!(head_end(b"", 0), None);
    }

    #[test]
    fn heads_and_their_framing() {
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n");
        assert_eq!(
            (h.status, h.framing, h.keep_alive),
            (200, Framing::Length(12), true)
        );
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, true));
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
        assert_eq!(h.framing, Framing::Chunked);
        // A coding other than chunked last: the body runs until the close.
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::UntilClose, false));
        // Both: chunked wins, and the connection is not kept.
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, false));
        let h = head("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::UntilClose, false));
        let h = head("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Empty, true));
        let h = head("HTTP/1.1 100 Continue\r\n\r\n");
        assert_eq!((h.status, h.framing), (100, Framing::Empty));
        // Repeated equal lengths are one length; different ones are not HTTP.
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: 4, 4\r\nContent-Length: 4\r\n\r\n");
        assert_eq!(h.framing, Framing::Length(4));
        for bad in ["5, 6", "-1", "", "1 2", "0x10", "99999999999999999999"] {
            let text = format!("HTTP/1.1 200 OK\r\nContent-Length: {bad}\r\n\r\n");
            assert!(parse_head(text.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn which_answers_keep_the_connection() {
        let keeps = |text: &str| head(text).keep_alive;
        assert!(keeps("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
        assert!(!keeps(
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        ));
        assert!(!keeps(
            "HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE\r\nContent-Length: 0\r\n\r\n"
        ));
        assert!(!keeps("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"));
        assert!(keeps(
            "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"
        ));
    }

    #[test]
    fn the_runner_instance_is_the_first_usable_value() {
        let text = "HTTP/1.1 200 OK\r\nwebcodex-runner-instance:  abc-1 \r\nWebcodex-Runner-Instance: x\r\n\r\n";
        let h = head(text);
        assert_eq!(&text[h.instance.unwrap()], "abc-1");
        let long = format!(
            "HTTP/1.1 200 OK\r\nWebcodex-Runner-Instance: {}\r\n\r\n",
            "a".repeat(65)
        );
        assert_eq!(head(&long).instance, None);
        let text = b"HTTP/1.1 200 OK\r\nWebcodex-Runner-Instance: \xc3\xa9\r\n\r\n";
        assert_eq!(parse_head(text).unwrap().unwrap().instance, None);
        assert_eq!(head("HTTP/1.1 200 OK\r\n\r\n").instance, None);
    }

    #[test]
    fn garbage_is_not_a_head() {
        for garbage in [
            &b"SSH-2.0-OpenSSH_9.6\r\n\r\n"[..],
            b"HTTP/2 200\r\n\r\n",
            b"HTTP/1.1 abc OK\r\n\r\n",
            b"\x16\x03\x01\x00\x05hello\r\n\r\n",
        ] {
            assert!(parse_head(garbage).is_err(), "{garbage:?}");
        }
        let many: String = (0..200).map(|i| format!("X-{i}: y\r\n")).collect();
        let text = format!("HTTP/1.1 200 OK\r\n{many}\r\n");
        assert!(parse_head(text.as_bytes()).is_err());
    }

    /// Decodes `body` fed in pieces of `step` bytes (unused bytes are fed again, as the
    /// exchange keeps them in its buffer).
    fn dechunk(body: &[u8], step: usize, max: usize) -> Result<(Vec<u8>, usize), ChunkError> {
        let mut d = Dechunker::new();
        let mut out = Vec::new();
        let (mut start, mut end) = (0, 0);
        while !d.done() {
            assert!(
                end < body.len(),
                "no end: {:?}",
                String::from_utf8_lossy(body)
            );
            end = (end + step).min(body.len());
            start += d.feed(&body[start..end], &mut out, max)?;
        }
        Ok((out, start))
    }

    #[test]
    fn chunked_bodies_decode_whatever_the_pieces() {
        let body =
            b"5\r\nhello\r\n1;ext=\"x\"\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: t\r\n\r\nNEXT";
        for step in [1, 2, 3, 7, body.len()] {
            let (out, used) = dechunk(body, step, 1 << 20).unwrap();
            assert_eq!(out, b"hello 0123456789", "{step}");
            assert_eq!(
                used,
                body.len() - 4,
                "the bytes after the body are left: {step}"
            );
        }
        let (out, _) = dechunk(b"0\r\n\r\n", 1, 10).unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn chunked_bodies_are_bounded_and_checked() {
        let over = b"6\r\n123456\r\n0\r\n\r\n";
        assert_eq!(dechunk(over, 100, 5).unwrap_err(), ChunkError::TooLarge);
        assert!(dechunk(over, 100, 6).is_ok());
        for broken in [
            &b"x\r\n"[..],
            b"5\r\nhelloXX0\r\n\r\n",
            b"fffffffffffffffff\r\n",
        ] {
            let mut d = Dechunker::new();
            let r = d.feed(broken, &mut Vec::new(), 1 << 20);
            assert!(matches!(r, Err(ChunkError::Broken(_))), "{broken:?}: {r:?}");
        }
        // A size line that never ends is refused once it is too long.
        let long = vec![b'1'; 3]
            .into_iter()
            .chain([b';'])
            .chain(vec![b'x'; MAX_LINE_BYTES]);
        let long: Vec<u8> = long.collect();
        let mut d = Dechunker::new();
        assert!(d.feed(&long, &mut Vec::new(), 1 << 20).is_err());
        // Trailers are bounded too.
        let mut body = b"0\r\n".to_vec();
        for _ in 0..1000 {
            body.extend_from_slice(b"X-Trailer: 0123456789abcdef\r\n");
        }
        body.extend_from_slice(b"\r\n");
        let mut d = Dechunker::new();
        assert!(d.feed(&body, &mut Vec::new(), 1 << 20).is_err());
    }
}
