//! The JSON-lines transport of `webcodex-plugin gateway` (DESIGN §10, §13.9, §13.10).
//!
//! One request per line, `{"id":…,"tool":"plugin_tool","params":{…}}`, answered by one line
//! `{"id":…,"success":bool,"output":{…}}`. Extra keys in the request object are ignored.
//!
//! # Concurrency
//! The calling thread reads lines; each well-formed request runs on its own named worker
//! thread (`wc-gateway-req`, [`WORKER_STACK`] bytes of stack), so a slow call never blocks a
//! list, a describe or another provider. At most [`MAX_IN_FLIGHT`] requests run at once: a
//! counter is taken before spawning and released after the response is written; a request
//! beyond the bound is answered at once with `gateway_saturated` (not started). A thread per
//! request was chosen over a pool because requests are few and long-lived (a call may take
//! its whole timeout) and a thread costs nothing while idle. Responses are written whole,
//! one at a time, through a mutex, and may come out of order: match them by `id`.
//!
//! # Bounds and faults
//! A line is read with a hard cap of 1 MiB + 1 byte (room for a trailing `\r`); a longer line is
//! answered with `invalid_request` and skipped up to its newline, and reading goes on. A line
//! that is not JSON, is not an object, lacks `tool` or `params`, or names another tool is
//! answered with `invalid_request` (`id` echoed when it could be read, else `null`); so is a
//! blank line. A last line without a newline still counts as a request. Should a request panic
//! (a bug), it is still answered: `gateway_internal_error` with dispatch `outcome_unknown`.
//!
//! # End of input
//! On EOF the transport stops accepting, waits for every in-flight request (each is bounded by
//! its deadline) and returns `Ok`; the caller then shuts the hosts down. If writing a response
//! fails, reading stops as at EOF and the write error is returned after the wait.

use std::io::{self, BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use serde_json::{json, Value};

use super::scope::Caller;
use super::service::{Gateway, ToolOutput};
use crate::error::{Dispatch, Error, ErrorCode};
use crate::frame::MAX_LINE_BYTES;

/// Most requests handled at once; beyond it a request gets `gateway_saturated`.
pub const MAX_IN_FLIGHT: usize = 64;
/// Stack size of one request worker thread.
pub const WORKER_STACK: usize = 512 * 1024;
/// The only tool name the transport serves.
pub const TOOL_NAME: &str = "plugin_tool";
/// The most bytes of one line kept: the line bound plus a trailing `\r`.
const MAX_BUFFERED: usize = MAX_LINE_BYTES + 1;

/// Serves JSON-lines requests from `input` until EOF, writing responses to `output`.
///
/// Returns `Ok` after EOF once every in-flight request was answered; an error when reading
/// `input` or writing `output` failed (also after waiting for in-flight requests).
pub fn serve_lines(
    gateway: Arc<Gateway>,
    caller: Caller,
    mut input: impl BufRead,
    output: impl Write + Send + 'static,
) -> io::Result<()> {
    let responder = Arc::new(Responder::new(Box::new(output)));
    let in_flight = Arc::new(InFlight::default());
    let mut line = Vec::new();
    let read_result = loop {
        if responder.failed() {
            break Ok(());
        }
        match read_bounded_line(&mut input, &mut line) {
            Ok(Line::Eof) => break Ok(()),
            Ok(Line::TooLarge) => responder.send(
                &Value::Null,
                &ToolOutput::failure(&invalid_request(
                    "the request line is longer than 1 MiB; it was skipped",
                )),
            ),
            Ok(Line::Complete) => {
                handle_line(&line, &gateway, caller, &responder, &in_flight);
            }
            Err(e) => break Err(e),
        }
    };
    in_flight.wait_idle();
    read_result?;
    match responder.take_error() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn handle_line(
    line: &[u8],
    gateway: &Arc<Gateway>,
    caller: Caller,
    responder: &Arc<Responder>,
    in_flight: &Arc<InFlight>,
) {
    let (id, params) = match parse_request(line) {
        Ok(request) => request,
        Err((id, message)) => {
            responder.send(&id, &ToolOutput::failure(&invalid_request(message)));
            return;
        }
    };
    let Some(slot) = in_flight.try_acquire() else {
        responder.send(&id, &ToolOutput::failure(&saturated()));
        return;
    };
    let (gateway, worker_responder) = (gateway.clone(), responder.clone());
    let worker_id = id.clone();
    let spawned = std::thread::Builder::new()
        .name("wc-gateway-req".into())
        .stack_size(WORKER_STACK)
        .spawn(move || {
            let output = catch_unwind(AssertUnwindSafe(|| gateway.plugin_tool(&caller, &params)))
                .unwrap_or_else(|_| {
                    log::error!("a plugin_tool request panicked");
                    ToolOutput::failure(&Error::new(
                        ErrorCode::Internal,
                        Dispatch::OutcomeUnknown,
                        "the gateway failed while handling this request; its outcome is unknown",
                    ))
                });
            worker_responder.send(&worker_id, &output);
            drop(slot);
        });
    if spawned.is_err() {
        // The closure (and with it the slot) was dropped: the counter is already released.
        responder.send(&id, &ToolOutput::failure(&saturated()));
    }
}

/// Splits a request line into its id and params, or says why it is not a request.
fn parse_request(line: &[u8]) -> Result<(Value, Value), (Value, &'static str)> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|_| (Value::Null, "the request line is not one JSON value"))?;
    let Value::Object(mut map) = value else {
        return Err((Value::Null, "the request must be a JSON object"));
    };
    let id = map.remove("id").unwrap_or(Value::Null);
    match map.get("tool") {
        None => return Err((id, "the request has no `tool`")),
        Some(Value::String(tool)) if tool == TOOL_NAME => {}
        Some(_) => return Err((id, "unknown tool; this transport serves only `plugin_tool`")),
    }
    match map.remove("params") {
        None => Err((id, "the request has no `params`")),
        Some(params) => Ok((id, params)),
    }
}

fn invalid_request(message: &str) -> Error {
    Error::not_started(ErrorCode::InvalidRequest, message)
}

fn saturated() -> Error {
    Error::not_started(
        ErrorCode::GatewaySaturated,
        "too many requests in flight; try again when one finishes",
    )
}

/// Serialized response writes; remembers the first write error.
struct Responder {
    out: Mutex<Box<dyn Write + Send>>,
    error: Mutex<Option<io::Error>>,
}

impl Responder {
    fn new(out: Box<dyn Write + Send>) -> Responder {
        Responder {
            out: Mutex::new(out),
            error: Mutex::new(None),
        }
    }

    fn send(&self, id: &Value, output: &ToolOutput) {
        let response = json!({"id": id, "success": output.success, "output": output.output});
        // Display of a Value is infallible (its keys are strings).
        let mut bytes = response.to_string().into_bytes();
        bytes.push(b'\n');
        let mut out = self.out.lock();
        if let Err(e) = out.write_all(&bytes).and_then(|()| out.flush()) {
            let mut error = self.error.lock();
            if error.is_none() {
                *error = Some(e);
            }
        }
    }

    fn failed(&self) -> bool {
        self.error.lock().is_some()
    }

    fn take_error(&self) -> Option<io::Error> {
        self.error.lock().take()
    }
}

/// The in-flight counter: a slot per running request; EOF waits for zero.
#[derive(Default)]
pub(crate) struct InFlight {
    count: Mutex<usize>,
    idle: Condvar,
}

pub(crate) struct Slot(Arc<InFlight>);

impl InFlight {
    pub(crate) fn try_acquire(self: &Arc<Self>) -> Option<Slot> {
        let mut count = self.count.lock();
        if *count >= MAX_IN_FLIGHT {
            return None;
        }
        *count += 1;
        Some(Slot(self.clone()))
    }

    pub(crate) fn wait_idle(&self) {
        let mut count = self.count.lock();
        while *count > 0 {
            self.idle.wait(&mut count);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut count = self.0.count.lock();
        *count -= 1;
        if *count == 0 {
            self.0.idle.notify_all();
        }
    }
}

/// What [`read_bounded_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line is in the buffer (without `\n` and a trailing `\r`).
    Complete,
    /// The line was longer than the bound; it was consumed up to its newline.
    TooLarge,
    /// No more input.
    Eof,
}

/// Reads one line into `line`, keeping at most [`MAX_BUFFERED`] bytes; an over-long line is
/// skipped to its newline without being buffered. A last line without a newline still counts.
pub(crate) fn read_bounded_line(input: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Line> {
    line.clear();
    let mut too_large = false;
    let mut saw_any = false;
    loop {
        let available = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            if !saw_any {
                return Ok(Line::Eof);
            }
            break;
        }
        saw_any = true;
        let (chunk, used, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], i + 1, true),
            None => (available, available.len(), false),
        };
        if !too_large {
            if line.len() + chunk.len() > MAX_BUFFERED {
                too_large = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        input.consume(used);
        if done {
            break;
        }
    }
    if too_large {
        return Ok(Line::TooLarge);
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.len() > MAX_LINE_BYTES {
        line.clear();
        return Ok(Line::TooLarge);
    }
    Ok(Line::Complete)
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    fn lines(input: &[u8]) -> Vec<Result<Vec<u8>, Line>> {
        let mut reader = io::BufReader::with_capacity(7, Cursor::new(input.to_vec()));
        let mut out = Vec::new();
        let mut line = Vec::new();
        loop {
            match read_bounded_line(&mut reader, &mut line).unwrap() {
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

    #[test]
    fn request_parsing() {
        let ok = parse_request(br#"{"id":7,"tool":"plugin_tool","params":{"action":"list"}}"#);
        assert_eq!(ok.unwrap(), (json!(7), json!({"action":"list"})));
        assert_eq!(parse_request(b"nope").unwrap_err().0, Value::Null);
        assert_eq!(parse_request(b"[1]").unwrap_err().0, Value::Null);
        assert_eq!(
            parse_request(br#"{"id":"a","params":{}}"#).unwrap_err().0,
            json!("a")
        );
        assert_eq!(
            parse_request(br#"{"id":1,"tool":"other","params":{}}"#)
                .unwrap_err()
                .0,
            json!(1)
        );
        assert!(parse_request(br#"{"id":1,"tool":"plugin_tool"}"#).is_err());
    }

    #[test]
    fn in_flight_counter_is_bounded_and_released() {
        let in_flight = Arc::new(InFlight::default());
        let slots: Vec<Slot> = (0..MAX_IN_FLIGHT)
            .map(|_| in_flight.try_acquire().unwrap())
            .collect();
        assert!(in_flight.try_acquire().is_none());
        drop(slots);
        assert_eq!(*in_flight.count.lock(), 0);
        in_flight.wait_idle();
        assert!(in_flight.try_acquire().is_some());
    }
}
