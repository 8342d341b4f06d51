//! HTTP/1.1 on one accepted connection: the request head (parsed by `httparse`), the body
//! (`Content-Length` or chunked) and the response, each bounded in size and in time.
//!
//! Every read and write on the socket is given the time left before a deadline as its socket
//! timeout, so a client that stops sending (or reading) holds the connection until that
//! deadline and no longer; see the limits in [`super`].

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::ops::Range;
use std::time::{Duration, Instant};

use super::answer_head::{push_date, push_decimal, reason};

/// The most bytes of a request line and headers; a larger head is answered 431.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most header fields of a request; more are answered 431.
pub const MAX_HEADERS: usize = 64;
/// From the moment a connection is ready for a request (accepted, or its previous response
/// written) until that request's head and body have been read.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(10);
/// How long a connection may wait for the first byte of a request (an idle keep-alive
/// connection, or a new connection that sends nothing) before the server closes it.
pub const KEEP_ALIVE_IDLE: Duration = Duration::from_secs(5);
/// How long writing one response may take (a client that does not read is cut off).
pub const WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// The most bytes of an unread request body the server reads and throws away to keep the
/// connection open after answering without it; a larger body closes the connection.
const MAX_DISCARD_BYTES: u64 = 4 << 20;
/// The longest chunk-size or trailer line of a chunked body.
const MAX_LINE_BYTES: usize = 1024;
/// The largest response-head buffer a connection keeps between responses.
const MAX_HEAD_OUT_KEPT: usize = 4 * 1024;
/// How long a connection closed with unread input keeps reading (and dropping) it, so the
/// client receives the response instead of a reset.
const LINGER: Duration = Duration::from_secs(2);

/// How a request's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `Content-Length` (0 when absent).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

impl Framing {
    /// True when the body is known to be larger than `max` bytes before reading it.
    pub(crate) fn exceeds(self, max: usize) -> bool {
        matches!(self, Framing::Length(n) if n > max as u64)
    }
}

/// A parsed request line and header fields.
#[derive(Debug, Clone)]
pub(crate) struct Head {
    /// The method, the target and every field name and value, one after the other: one
    /// allocation for the whole head instead of two for each field.
    text: String,
    method: Range<usize>,
    target: Range<usize>,
    /// The name and the (trimmed) value of each field, as ranges of `text`.
    headers: Vec<(Range<usize>, Range<usize>)>,
    framing: Framing,
    keep_alive: bool,
    expect_continue: bool,
}

/// A head's text and the ranges of its method, target and fields in it.
type HeadParts = (
    String,
    Range<usize>,
    Range<usize>,
    Vec<(Range<usize>, Range<usize>)>,
);

/// Why no request head was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeadError {
    /// The client closed, or sent nothing within [`KEEP_ALIVE_IDLE`]: close quietly.
    Idle,
    /// The head did not arrive within [`REQUEST_DEADLINE`] (408).
    TimedOut,
    /// Over [`MAX_HEAD_BYTES`] or [`MAX_HEADERS`] (431).
    TooLarge,
    /// Not an HTTP/1.x request head, or an ambiguous body framing (400).
    Malformed,
    /// A transfer coding other than `chunked` (501).
    Unsupported,
}

impl HeadError {
    /// The status to answer with before closing; `None` to close without answering.
    pub(crate) fn status(self) -> Option<u16> {
        match self {
            HeadError::Idle => None,
            HeadError::TimedOut => Some(408),
            HeadError::TooLarge => Some(431),
            HeadError::Malformed => Some(400),
            HeadError::Unsupported => Some(501),
        }
    }
}

/// Why a request body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    /// Larger than the limit asked for.
    TooLarge,
    /// Not complete before the request's deadline.
    TimedOut,
    /// The connection ended, or the chunked framing is broken.
    Broken,
}

impl Head {
    /// The request method, e.g. `POST`.
    pub(crate) fn method(&self) -> &str {
        &self.text[self.method.clone()]
    }

    /// The request target without its query string.
    pub(crate) fn path(&self) -> &str {
        self.text[self.target.clone()]
            .split('?')
            .next()
            .unwrap_or_default()
    }

    /// The values of every header field named `name` (ASCII case-insensitive), in order.
    pub(crate) fn values<'h>(&'h self, name: &'h str) -> impl Iterator<Item = &'h str> + 'h {
        let text = self.text.as_bytes();
        self.headers
            .iter()
            .filter(move |(field, _)| {
                field.len() == name.len()
                    && text[field.clone()].eq_ignore_ascii_case(name.as_bytes())
            })
            .map(|(_, value)| &self.text[value.clone()])
    }

    /// The value of header `name` when it is given exactly once; absent or repeated → `None`.
    pub(crate) fn unique<'h>(&'h self, name: &'h str) -> Option<&'h str> {
        let mut values = self.values(name);
        match (values.next(), values.next()) {
            (Some(value), None) => Some(value),
            _ => None,
        }
    }

    /// True when the request declares a non-empty body (or a chunked one).
    pub(crate) fn has_body(&self) -> bool {
        self.framing != Framing::Length(0)
    }

    /// The declared body length; `None` for a chunked body.
    pub(crate) fn declared_length(&self) -> Option<u64> {
        match self.framing {
            Framing::Length(n) => Some(n),
            Framing::Chunked => None,
        }
    }

    /// How the body is delimited.
    pub(crate) fn framing(&self) -> Framing {
        self.framing
    }

    /// True when the connection may stay open after this request (HTTP/1.1 without
    /// `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`).
    pub(crate) fn keep_alive(&self) -> bool {
        self.keep_alive
    }

    /// True when the client waits for `100 Continue` before it sends the body.
    pub(crate) fn expect_continue(&self) -> bool {
        self.expect_continue
    }

    /// The head of `request`, parsed from `raw` (the head's bytes, which every slice of
    /// `request` points into).
    fn from_parsed(request: &httparse::Request<'_, '_>, raw: &[u8]) -> Result<Head, HeadError> {
        let (text, method, target, headers) = match std::str::from_utf8(raw) {
            Ok(raw) => Head::ranges_of(request, raw),
            Err(_) => Head::copied_from(request),
        };
        let mut head = Head {
            text,
            method,
            target,
            headers,
            framing: Framing::Length(0),
            keep_alive: false,
            expect_continue: false,
        };
        head.framing = head.parse_framing()?;
        let has_token = |token: &str| {
            head.values("Connection")
                .flat_map(|v| v.split(','))
                .any(|t| t.trim().eq_ignore_ascii_case(token))
        };
        let keep_alive = match request.version {
            Some(1) => !has_token("close"),
            _ => has_token("keep-alive"),
        };
        let expect_continue = head
            .values("Expect")
            .any(|v| v.eq_ignore_ascii_case("100-continue"));
        head.keep_alive = keep_alive;
        head.expect_continue = expect_continue;
        Ok(head)
    }

    /// A head that is valid UTF-8 (the usual case), kept whole: its parts are ranges into one
    /// copy, checked once.
    fn ranges_of(request: &httparse::Request<'_, '_>, raw: &str) -> HeadParts {
        let range = |part: &[u8]| {
            let start = part.as_ptr() as usize - raw.as_ptr() as usize;
            start..start + part.len()
        };
        let trimmed = |value: &[u8]| {
            let whole = range(value);
            let trimmed = raw[whole.clone()].trim();
            let start = whole.start + (trimmed.as_ptr() as usize - raw[whole].as_ptr() as usize);
            start..start + trimmed.len()
        };
        let method = request.method.map_or(0..0, |m| range(m.as_bytes()));
        let target = request.path.map_or(0..0, |t| range(t.as_bytes()));
        let headers = request
            .headers
            .iter()
            .map(|h| (range(h.name.as_bytes()), trimmed(h.value)))
            .collect();
        (raw.to_owned(), method, target, headers)
    }

    /// A head with bytes that are not UTF-8 (in a field value): its parts copied one by one,
    /// each such value lossily.
    fn copied_from(request: &httparse::Request<'_, '_>) -> HeadParts {
        let method = request.method.unwrap_or_default();
        let target = request.path.unwrap_or_default();
        let size = request
            .headers
            .iter()
            .fold(method.len() + target.len(), |n, h| {
                n + h.name.len() + h.value.len()
            });
        let mut text = String::with_capacity(size);
        let mut push = |part: &str| {
            let start = text.len();
            text.push_str(part);
            start..text.len()
        };
        let method = push(method);
        let target = push(target);
        let headers = request
            .headers
            .iter()
            .map(|h| {
                let name = push(h.name);
                let value = match std::str::from_utf8(h.value) {
                    Ok(value) => push(value.trim()),
                    Err(_) => push(String::from_utf8_lossy(h.value).trim()),
                };
                (name, value)
            })
            .collect();
        (text, method, target, headers)
    }

    /// The body framing (RFC 9112 §6.3): chunked only as the one transfer coding, never beside
    /// a `Content-Length`; one `Content-Length` of digits only.
    fn parse_framing(&self) -> Result<Framing, HeadError> {
        let codings: Vec<&str> = self
            .values("Transfer-Encoding")
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        let mut lengths = self.values("Content-Length");
        if !codings.is_empty() {
            if lengths.next().is_some() {
                return Err(HeadError::Malformed);
            }
            return match codings.as_slice() {
                [coding] if coding.eq_ignore_ascii_case("chunked") => Ok(Framing::Chunked),
                _ => Err(HeadError::Unsupported),
            };
        }
        match (lengths.next(), lengths.next()) {
            (None, _) => Ok(Framing::Length(0)),
            (Some(value), None)
                if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) =>
            {
                value
                    .parse()
                    .map(Framing::Length)
                    .map_err(|_| HeadError::Malformed)
            }
            _ => Err(HeadError::Malformed),
        }
    }
}

/// One accepted connection and the bytes read from it but not yet consumed.
pub(crate) struct Conn {
    stream: TcpStream,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// The head of the last response written, kept to write the next one without allocating.
    head_out: Vec<u8>,
    /// The socket's read and write timeouts as last set (see [`socket_timeout`]).
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

impl Conn {
    /// Wraps an accepted stream.
    pub(crate) fn new(stream: TcpStream) -> Conn {
        let _ = stream.set_nodelay(true);
        Conn {
            stream,
            buf: vec![0; MAX_HEAD_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            head_out: Vec::new(),
            read_timeout: None,
            write_timeout: None,
        }
    }

    /// Sets the socket's read timeout for a wait until `deadline`, unless it is set already.
    fn read_by(&mut self, deadline: Instant) -> io::Result<()> {
        set_once(&mut self.read_timeout, deadline, |t| {
            self.stream.set_read_timeout(t)
        })
    }

    /// Sets the socket's write timeout for a write until `deadline`, unless it is set already.
    fn write_by(&mut self, deadline: Instant) -> io::Result<()> {
        set_once(&mut self.write_timeout, deadline, |t| {
            self.stream.set_write_timeout(t)
        })
    }

    /// Reads the next request head. The first byte must come before `idle`, the whole head
    /// before `deadline`.
    pub(crate) fn read_head(
        &mut self,
        idle: Instant,
        deadline: Instant,
    ) -> Result<Head, HeadError> {
        loop {
            // Empty lines before a request line are ignored (RFC 9112 §2.2).
            while self.start < self.end && matches!(self.buf[self.start], b'\r' | b'\n') {
                self.start += 1;
            }
            if self.start < self.end {
                let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut request = httparse::Request::new(&mut fields);
                match request.parse(&self.buf[self.start..self.end]) {
                    Ok(httparse::Status::Complete(n)) => {
                        let raw = &self.buf[self.start..self.start + n];
                        let head = Head::from_parsed(&request, raw);
                        self.start += n;
                        return head;
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
                    Err(_) => return Err(HeadError::Malformed),
                }
                if self.end - self.start >= MAX_HEAD_BYTES {
                    return Err(HeadError::TooLarge);
                }
            }
            let started = self.start < self.end;
            match self.fill(if started {
                deadline
            } else {
                idle.min(deadline)
            }) {
                Ok(0) => return Err(HeadError::Idle),
                Ok(_) => {}
                Err(e) if is_timeout(&e) && started => return Err(HeadError::TimedOut),
                Err(_) => return Err(HeadError::Idle),
            }
        }
    }

    /// Reads a whole body of at most `max` bytes before `deadline`.
    pub(crate) fn read_body(
        &mut self,
        framing: Framing,
        max: usize,
        deadline: Instant,
    ) -> Result<Vec<u8>, BodyError> {
        let mut body = Vec::new();
        self.each_body_part(framing, max as u64, deadline, |part| {
            body.extend_from_slice(part)
        })?;
        Ok(body)
    }

    /// Reads and drops a body of at most [`MAX_DISCARD_BYTES`] before `deadline`.
    pub(crate) fn discard_body(&mut self, framing: Framing, deadline: Instant) -> bool {
        self.each_body_part(framing, MAX_DISCARD_BYTES, deadline, |_| {})
            .is_ok()
    }

    /// True when a body framed so is small enough for [`Conn::discard_body`].
    pub(crate) fn discardable(framing: Framing) -> bool {
        match framing {
            Framing::Length(n) => n <= MAX_DISCARD_BYTES,
            Framing::Chunked => true,
        }
    }

    fn each_body_part(
        &mut self,
        framing: Framing,
        max: u64,
        deadline: Instant,
        mut sink: impl FnMut(&[u8]),
    ) -> Result<(), BodyError> {
        match framing {
            Framing::Length(n) if n > max => Err(BodyError::TooLarge),
            Framing::Length(n) => self.take(n, deadline, &mut sink),
            Framing::Chunked => {
                let mut total = 0u64;
                loop {
                    let line = self.line(deadline)?;
                    let size = line.split(|&b| b == b';').next().unwrap_or_default();
                    let size = std::str::from_utf8(size)
                        .ok()
                        .and_then(|s| u64::from_str_radix(s.trim(), 16).ok())
                        .ok_or(BodyError::Broken)?;
                    if size == 0 {
                        break;
                    }
                    total = total.saturating_add(size);
                    if total > max {
                        return Err(BodyError::TooLarge);
                    }
                    self.take(size, deadline, &mut sink)?;
                    if !self.line(deadline)?.is_empty() {
                        return Err(BodyError::Broken);
                    }
                }
                // Trailer fields, dropped, up to the empty line.
                let mut trailers = 0;
                loop {
                    let line = self.line(deadline)?;
                    if line.is_empty() {
                        return Ok(());
                    }
                    trailers += line.len();
                    if trailers > MAX_HEAD_BYTES {
                        return Err(BodyError::TooLarge);
                    }
                }
            }
        }
    }

    /// Passes the next `n` bytes to `sink`.
    fn take(
        &mut self,
        mut n: u64,
        deadline: Instant,
        sink: &mut impl FnMut(&[u8]),
    ) -> Result<(), BodyError> {
        while n > 0 {
            if self.start == self.end {
                match self.fill(deadline) {
                    Ok(0) => return Err(BodyError::Broken),
                    Ok(_) => {}
                    Err(e) if is_timeout(&e) => return Err(BodyError::TimedOut),
                    Err(_) => return Err(BodyError::Broken),
                }
            }
            let available = (self.end - self.start) as u64;
            let count = available.min(n) as usize;
            sink(&self.buf[self.start..self.start + count]);
            self.start += count;
            n -= count as u64;
        }
        Ok(())
    }

    /// The next line (without its CR LF) of at most [`MAX_LINE_BYTES`].
    fn line(&mut self, deadline: Instant) -> Result<Vec<u8>, BodyError> {
        loop {
            let pending = &self.buf[self.start..self.end];
            if let Some(at) = pending.iter().position(|&b| b == b'\n') {
                let mut line = pending[..at].to_vec();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.start += at + 1;
                return Ok(line);
            }
            if pending.len() > MAX_LINE_BYTES {
                return Err(BodyError::Broken);
            }
            match self.fill(deadline) {
                Ok(0) => return Err(BodyError::Broken),
                Ok(_) => {}
                Err(e) if is_timeout(&e) => return Err(BodyError::TimedOut),
                Err(_) => return Err(BodyError::Broken),
            }
        }
    }

    /// Reads more bytes into the buffer, waiting until `deadline` at most; `Ok(0)` at the end
    /// of the stream.
    fn fill(&mut self, deadline: Instant) -> io::Result<usize> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            return Err(io::Error::other("the read buffer is full"));
        }
        self.read_by(deadline)?;
        let read = loop {
            match self.stream.read(&mut self.buf[self.end..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        self.end += read;
        Ok(read)
    }

    /// Writes `101 Switching Protocols` with `headers` and hands the connection over: a clone
    /// of the stream and the bytes already read past the request head.
    pub(crate) fn upgrade(&mut self, headers: &[(&str, &str)]) -> io::Result<(TcpStream, Vec<u8>)> {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(b"HTTP/1.1 101 Switching Protocols\r\n");
        for (field, value) in headers {
            let clean = |s: &str| !s.bytes().any(|b| b == b'\r' || b == b'\n');
            if clean(field) && clean(value) && !field.is_empty() {
                let _ = write!(out, "{field}: {value}\r\n");
            }
        }
        out.extend_from_slice(b"\r\n");
        self.write_all_by(&out, Instant::now() + WRITE_DEADLINE)?;
        let leftover = self.buf[self.start..self.end].to_vec();
        self.start = self.end;
        Ok((self.stream.try_clone()?, leftover))
    }

    /// Writes `100 Continue` (for a request that expects it, before its body is read).
    pub(crate) fn write_continue(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + WRITE_DEADLINE;
        self.write_all_by(b"HTTP/1.1 100 Continue\r\n\r\n", deadline)
    }

    /// Writes one response with `Content-Length`, `Date` and `Connection` headers, then
    /// `headers` (fields or values with CR or LF are skipped), then `body`.
    pub(crate) fn write_response(
        &mut self,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
        keep_alive: bool,
    ) -> io::Result<()> {
        self.write_answer(status, headers, body, keep_alive, true)
    }

    /// [`Conn::write_response`]; with `send_body` false (the answer to `HEAD`) the head is the
    /// same, `Content-Length` included, and no body byte follows it.
    pub(crate) fn write_answer(
        &mut self,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
        keep_alive: bool,
        send_body: bool,
    ) -> io::Result<()> {
        let mut out = std::mem::take(&mut self.head_out);
        out.clear();
        out.extend_from_slice(b"HTTP/1.1 ");
        push_decimal(&mut out, u64::from(status));
        out.push(b' ');
        out.extend_from_slice(reason(status).as_bytes());
        out.extend_from_slice(b"\r\nDate: ");
        push_date(&mut out);
        out.extend_from_slice(b"\r\n");
        // RFC 9110 §8.6: a 1xx or 204 carries no Content-Length, and never a body.
        let bodiless = status == 204 || (100..200).contains(&status);
        if !bodiless {
            out.extend_from_slice(b"Content-Length: ");
            push_decimal(&mut out, body.len() as u64);
            out.extend_from_slice(b"\r\n");
        }
        if keep_alive {
            out.extend_from_slice(b"Connection: keep-alive\r\nKeep-Alive: timeout=");
            push_decimal(&mut out, KEEP_ALIVE_IDLE.as_secs());
            out.extend_from_slice(b"\r\n");
        } else {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        for (field, value) in headers {
            let clean = |s: &str| !s.bytes().any(|b| b == b'\r' || b == b'\n');
            if clean(field) && clean(value) && !field.is_empty() {
                out.extend_from_slice(field.as_bytes());
                out.extend_from_slice(b": ");
                out.extend_from_slice(value.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
        }
        out.extend_from_slice(b"\r\n");
        let body = if send_body && !bodiless { body } else { b"" };
        // The head and the body in one write (no copy of the body).
        let written = self.write_two_by(&out, body, Instant::now() + WRITE_DEADLINE);
        // Kept for the next response unless a rare large head made it big.
        if out.capacity() <= MAX_HEAD_OUT_KEPT {
            self.head_out = out;
        }
        written
    }

    /// Writes `first` then `second`, vectored, before `deadline`.
    fn write_two_by(&mut self, first: &[u8], second: &[u8], deadline: Instant) -> io::Result<()> {
        let (mut first, mut second) = (first, second);
        while !first.is_empty() {
            self.write_by(deadline)?;
            let parts = [io::IoSlice::new(first), io::IoSlice::new(second)];
            match self.stream.write_vectored(&parts) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) if n < first.len() => first = &first[n..],
                Ok(n) => {
                    second = &second[n - first.len()..];
                    first = b"";
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.write_all_by(second, deadline)
    }

    fn write_all_by(&mut self, mut bytes: &[u8], deadline: Instant) -> io::Result<()> {
        while !bytes.is_empty() {
            self.write_by(deadline)?;
            match self.stream.write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Closes after a final response: stops sending, then reads and drops what the client
    /// still sends for up to [`LINGER`] (never past `deadline`) so that unread input does not
    /// turn into a reset that destroys the response on its way.
    pub(crate) fn close(mut self, deadline: Instant) {
        let _ = self.stream.shutdown(Shutdown::Write);
        let deadline = deadline.min(Instant::now() + LINGER);
        let mut dropped = 0u64;
        while dropped <= MAX_DISCARD_BYTES {
            self.start = 0;
            self.end = 0;
            match self.fill(deadline) {
                Ok(0) | Err(_) => break,
                Ok(n) => dropped += n as u64,
            }
        }
    }
}

/// The time left before `deadline`; a timeout error when none is.
/// The granularity of a connection's socket timeouts (DECISIONS D-CLIENT-2).
const TIMEOUT_STEP: Duration = Duration::from_millis(100);

/// The socket timeout for a wait until `deadline`: the time left rounded up to a whole
/// [`TIMEOUT_STEP`], so that the requests of a keep-alive connection, each with a deadline of
/// its own, find the timeout already set instead of setting it again (two system calls fewer
/// per request). A socket wait can end up to one step after its deadline; the deadline itself
/// is checked before every wait. Fails with `TimedOut` once the deadline has passed.
fn socket_timeout(deadline: Instant) -> io::Result<Duration> {
    let left = remaining(deadline)?;
    let step = TIMEOUT_STEP.as_nanos();
    let steps = left.as_nanos().div_ceil(step);
    Ok(Duration::from_nanos(
        u64::try_from(steps * step).unwrap_or(u64::MAX),
    ))
}

/// Sets a socket timeout (through `set`) for a wait until `deadline` when it differs from
/// `current`, the value last set.
fn set_once(
    current: &mut Option<Duration>,
    deadline: Instant,
    set: impl FnOnce(Option<Duration>) -> io::Result<()>,
) -> io::Result<()> {
    let timeout = Some(socket_timeout(deadline)?);
    if *current != timeout {
        set(timeout)?;
        *current = timeout;
    }
    Ok(())
}

fn remaining(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    Ok(left)
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests;
