//! One request and its answer on a connection, HTTP/1.1 written and read here rather than by
//! ureq (which only sets connections up, `dial`): the request goes out in one write (its head
//! prebuilt but for `Content-Length` and `traceparent`), the answer's head is read up to
//! 64 KiB and parsed by `httparse`, its body by `Content-Length`, chunked or until the close,
//! up to 1 MiB. Interim answers (1xx: `100 Continue`, `103 Early Hints`, …) are skipped, as
//! RFC 9110 asks of every client; `101` (a protocol switch nobody asked for) is not an answer. Redirects are not
//! followed (a 3xx is an answer like any other, which the client does not take).
//!
//! Every failure here comes after the request was handed to the connection, so it is a lost
//! answer (outcome unknown), never "not sent"; nothing is ever written twice.

use std::time::{Duration, Instant};

use ureq::unversioned::transport::time::Duration as Budget;
use ureq::unversioned::transport::{NextTimeout, Transport};
use ureq::Timeout;

use super::framing::{head_end, parse_head, ChunkError, Dechunker, Framing};
use super::{unexpected_status, ClientError, MAX_HEAD_BYTES};
use crate::MAX_BODY_BYTES;

/// The granularity of the socket timeouts: each wait's time left is rounded up to a whole
/// multiple, so the requests of a kept connection (each with deadlines of its own) find the
/// socket's timeout already set (docs/DECISIONS.md D-CLIENT-2). A wait can end up to this much
/// after its deadline; the deadline itself is checked before every wait.
const TIMEOUT_STEP: Duration = Duration::from_millis(100);

/// Hands `parts` (the request's head and body, in order) to the connection: one write when
/// they fit its output buffer (128 KiB), else one per buffer-full, all within `timeout`.
pub(super) fn send(
    t: &mut dyn Transport,
    parts: &[&[u8]],
    timeout: Duration,
) -> Result<(), ClientError> {
    // Set at the first of several writes (a request larger than the buffer); one write needs
    // no clock.
    let mut deadline = None;
    let mut filled = 0;
    for part in parts {
        let mut part = *part;
        while !part.is_empty() {
            let out = t.buffers().output();
            let n = part.len().min(out.len() - filled);
            out[filled..filled + n].copy_from_slice(&part[..n]);
            filled += n;
            part = &part[n..];
            if filled == out.len() {
                let by = *deadline.get_or_insert_with(|| Instant::now() + timeout);
                transmit(t, filled, Some(by), timeout)?;
                filled = 0;
            }
        }
    }
    if filled > 0 {
        transmit(t, filled, deadline, timeout)?;
    }
    Ok(())
}

/// Writes the first `amount` bytes of the output buffer within `timeout`, or by `deadline`.
fn transmit(
    t: &mut dyn Transport,
    amount: usize,
    deadline: Option<Instant>,
    timeout: Duration,
) -> Result<(), ClientError> {
    let left = match deadline {
        Some(deadline) => time_left(deadline).ok_or_else(|| write_timeout(timeout))?,
        None => timeout,
    };
    t.transmit_output(amount, budget(left, Timeout::SendRequest))
        .map_err(|e| match e {
            ureq::Error::Timeout(_) => write_timeout(timeout),
            e => ClientError::Lost(format!("the request could not be written: {e}")),
        })
}

fn write_timeout(timeout: Duration) -> ClientError {
    ClientError::Lost(format!(
        "the request could not be written within {} s",
        timeout.as_secs()
    ))
}

/// Reads the answer to the request just sent: `take` gets its status, its runner instance
/// (`Webcodex-Runner-Instance`, when usable) and its body. Also says whether the connection
/// may carry another request (the answer read to its end, nothing after it, no close).
pub(super) fn receive<R>(
    t: &mut dyn Transport,
    read_timeout: Duration,
    take: impl FnOnce(u16, Option<&str>, &[u8]) -> R,
) -> Result<(R, bool), ClientError> {
    let (status, framing, keep_alive, instance) = read_head(t, read_timeout)?;
    let instance = instance.as_ref().map(Instance::as_str);
    let (result, ended) = match framing {
        Framing::Empty => (take(status, instance, &[]), true),
        Framing::Length(n) => {
            let n = usize::try_from(n)
                .ok()
                .filter(|&n| n <= MAX_BODY_BYTES)
                .ok_or_else(too_large)?;
            if t.buffers().input().len() >= n {
                // The whole body arrived with the head: taken where it lies.
                let result = take(status, instance, &t.buffers().input()[..n]);
                t.buffers().input_consume(n);
                (result, true)
            } else {
                let body = read_length(t, n, read_timeout)?;
                (take(status, instance, &body), true)
            }
        }
        Framing::Chunked => {
            let body = read_chunked(t, read_timeout)?;
            (take(status, instance, &body), true)
        }
        Framing::UntilClose => {
            let body = read_until_close(t, read_timeout)?;
            (take(status, instance, &body), false)
        }
    };
    let reusable = ended && keep_alive && t.buffers().input().is_empty();
    Ok((result, reusable))
}

/// A runner instance id copied out of the head (at most 64 bytes of visible ASCII).
struct Instance {
    bytes: [u8; 64],
    len: usize,
}

impl Instance {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

/// Reads the answer's head (after any interim 1xx answers) and consumes it from the input: its
/// status, framing, whether it lets the connection be kept, and its runner instance.
fn read_head(
    t: &mut dyn Transport,
    read_timeout: Duration,
) -> Result<(u16, Framing, bool, Option<Instance>), ClientError> {
    let mut deadline = None;
    // Bytes of this answer's heads consumed so far (skipped interim heads count).
    let mut consumed = 0;
    // Bytes of the input known to hold no complete head; `None` before the first look.
    let mut searched: Option<usize> = None;
    loop {
        let input = t.buffers().input();
        // The first look parses at once (a whole head usually comes in one read); after that,
        // the parser runs again only once a blank line has come, so a head that trickles in
        // is scanned once, not once per read.
        let ready = match searched {
            None => !input.is_empty(),
            Some(from) => head_end(input, from).is_some(),
        };
        let parsed = if ready {
            parse_head(input).map_err(|m| {
                ClientError::BadResponse(format!("the server's response is not HTTP/1.x: {}", m.0))
            })?
        } else {
            None
        };
        if let Some(head) = parsed {
            if consumed + head.len > MAX_HEAD_BYTES {
                return Err(head_too_large());
            }
            if (100..200).contains(&head.status) && head.status != 101 {
                t.buffers().input_consume(head.len);
                consumed += head.len;
                searched = None;
                continue;
            }
            if head.status == 101 {
                return Err(ClientError::Lost(unexpected_status(head.status)));
            }
            let instance = head.instance.map(|range| {
                let mut bytes = [0u8; 64];
                bytes[..range.len()].copy_from_slice(&input[range.clone()]);
                Instance {
                    bytes,
                    len: range.len(),
                }
            });
            t.buffers().input_consume(head.len);
            return Ok((head.status, head.framing, head.keep_alive, instance));
        }
        if consumed + input.len() > MAX_HEAD_BYTES {
            return Err(head_too_large());
        }
        let started = !input.is_empty() || consumed > 0;
        // Nothing searched when nothing is in: the next look parses at once.
        searched = (!input.is_empty()).then_some(input.len());
        if !wait(t, &mut deadline, read_timeout)? {
            return Err(ClientError::Lost(if started {
                "the server closed the connection in the middle of the answer's head".into()
            } else {
                "the server closed the connection without answering".into()
            }));
        }
    }
}

/// Reads a body of `n` bytes, more than the input holds yet.
fn read_length(
    t: &mut dyn Transport,
    n: usize,
    read_timeout: Duration,
) -> Result<Vec<u8>, ClientError> {
    let mut body = Vec::with_capacity(n);
    let mut deadline = None;
    loop {
        let input = t.buffers().input();
        let k = input.len().min(n - body.len());
        body.extend_from_slice(&input[..k]);
        t.buffers().input_consume(k);
        if body.len() == n {
            return Ok(body);
        }
        if !wait(t, &mut deadline, read_timeout)? {
            return Err(cut_short());
        }
    }
}

/// Reads a chunked body (at most 1 MiB decoded).
fn read_chunked(t: &mut dyn Transport, read_timeout: Duration) -> Result<Vec<u8>, ClientError> {
    let mut body = Vec::new();
    let mut dechunker = Dechunker::new();
    let mut deadline = None;
    loop {
        let used = dechunker
            .feed(t.buffers().input(), &mut body, MAX_BODY_BYTES)
            .map_err(|e| match e {
                ChunkError::TooLarge => too_large(),
                ChunkError::Broken(why) => ClientError::BadResponse(format!(
                    "the server's response is not HTTP/1.x: {why}"
                )),
            })?;
        t.buffers().input_consume(used);
        if dechunker.done() {
            return Ok(body);
        }
        if !wait(t, &mut deadline, read_timeout)? {
            return Err(cut_short());
        }
    }
}

/// Reads a body that ends when the server closes the connection (at most 1 MiB).
fn read_until_close(t: &mut dyn Transport, read_timeout: Duration) -> Result<Vec<u8>, ClientError> {
    let mut body = Vec::new();
    let mut deadline = None;
    loop {
        let input = t.buffers().input();
        if body.len() + input.len() > MAX_BODY_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(input);
        let k = input.len();
        t.buffers().input_consume(k);
        if !wait(t, &mut deadline, read_timeout)? {
            return Ok(body);
        }
    }
}

/// Waits for more input until the phase's deadline (set on its first wait, `phase` from
/// then): true when bytes came, false when the server closed the connection.
fn wait(
    t: &mut dyn Transport,
    deadline: &mut Option<Instant>,
    phase: Duration,
) -> Result<bool, ClientError> {
    let left = match *deadline {
        None => {
            *deadline = Some(Instant::now() + phase);
            phase
        }
        Some(deadline) => time_left(deadline).ok_or_else(|| read_timeout(phase))?,
    };
    t.await_input(budget(left, Timeout::RecvResponse))
        .map_err(|e| match e {
            ureq::Error::Timeout(_) => read_timeout(phase),
            e => ClientError::Lost(format!("the answer could not be read: {e}")),
        })
}

fn read_timeout(phase: Duration) -> ClientError {
    ClientError::Lost(format!(
        "no answer came within the read timeout ({} s)",
        phase.as_secs()
    ))
}

fn head_too_large() -> ClientError {
    ClientError::Lost(format!(
        "the response head is larger than {} KiB",
        MAX_HEAD_BYTES / 1024
    ))
}

fn too_large() -> ClientError {
    ClientError::BadResponse("the response body is larger than 1 MiB".into())
}

fn cut_short() -> ClientError {
    ClientError::Lost("the server closed the connection in the middle of the answer".into())
}

/// The time left before `deadline`; `None` once it has passed.
fn time_left(deadline: Instant) -> Option<Duration> {
    Some(deadline.saturating_duration_since(Instant::now())).filter(|d| !d.is_zero())
}

/// A socket wait of `left` (rounded up to a whole [`TIMEOUT_STEP`]) for `reason`.
fn budget(left: Duration, reason: Timeout) -> NextTimeout {
    let step = TIMEOUT_STEP.as_nanos();
    let rounded = left.as_nanos().div_ceil(step) * step;
    let rounded = Duration::from_nanos(u64::try_from(rounded).unwrap_or(u64::MAX));
    NextTimeout {
        after: Budget::Exact(rounded),
        reason,
        per_read: None,
        per_write: None,
    }
}

#[cfg(test)]
#[path = "exchange_tests.rs"]
mod tests;
