//! The JSON-lines transport of `webcodex-plugin gateway` (docs/PROTOCOL.md §9.2, stdio gateway).
//!
//! One request per line, `{"id":…,"tool":"plugin_tool","params":{…}}`, answered by one line
//! `{"id":…,"success":bool,"output":{…}}`. Extra keys in the request object are ignored.
//!
//! # Concurrency
//! The calling thread reads lines; each well-formed request runs on its own named worker
//! thread (`wc-gateway-req`, [`WORKER_STACK`] bytes of stack), so a slow call never blocks a
//! list, a describe or another provider. At most [`MAX_IN_FLIGHT`](super::MAX_IN_FLIGHT)
//! requests run at once: a [`Dispatcher`] slot is taken before spawning and dropped after the
//! response is written; a request
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
//! On EOF the transport stops accepting and serves every request already read: each is answered
//! normally (a `check` included), bounded by its deadline. Only a running reload is cut short (its
//! candidates are killed at once and it never commits; see
//! [`Gateway::close_reloads`](crate::gateway::Gateway::close_reloads)). Once every in-flight
//! request was answered it begins the hosts' shutdown and returns `Ok`; the caller then shuts
//! the hosts down. If writing a response fails, reading stops as at EOF and the write error is returned after the wait.

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use super::dispatcher::{invalid_request, saturated, Dispatcher, WORKER_STACK};
use super::id::RequestId;
use super::line_writer::{drive_lines, Input, LineWriter};
use super::request::{parse_request, Framing, TypedResponseBody};
use crate::gateway::{Caller, Gateway, ToolOutput};

/// Serves JSON-lines requests from `input` until EOF, writing responses to `output`.
///
/// Returns `Ok` after EOF once every in-flight request was answered; an error when reading
/// `input` or writing `output` failed (also after waiting for in-flight requests).
pub fn serve_lines(
    gateway: Arc<Gateway>,
    caller: Caller,
    input: impl BufRead,
    output: impl Write + Send + 'static,
) -> io::Result<()> {
    drive_lines(
        gateway,
        input,
        output,
        |input, dispatcher, writer| match input {
            Input::TooLarge => send(
                writer,
                RequestId::null(),
                invalid_request("the request line is longer than 1 MiB; it was skipped"),
            ),
            Input::Line(line) => handle_line(line, dispatcher, caller, writer),
        },
    )
}

fn handle_line(line: &[u8], dispatcher: &Dispatcher, caller: Caller, writer: &Arc<LineWriter>) {
    let request = match parse_request(line, Framing::Line) {
        Ok(request) => request,
        Err(rejection) => {
            let id = rejection.id.unwrap_or_else(RequestId::null);
            send(writer, id, invalid_request(rejection.message));
            return;
        }
    };
    let id = request.id.unwrap_or_else(RequestId::null);
    let Some(slot) = dispatcher.try_admit() else {
        send(writer, id, saturated());
        return;
    };
    let (worker, worker_writer) = (dispatcher.clone(), writer.clone());
    let (worker_id, params) = (id.clone(), request.params);
    let spawned = std::thread::Builder::new()
        .name("wc-gateway-req".into())
        .stack_size(WORKER_STACK)
        .spawn(move || {
            let output = worker.execute(&caller, &params);
            send(&worker_writer, worker_id, output);
            drop(slot);
        });
    if spawned.is_err() {
        // The closure (and with it the slot) was dropped: the counter is already released.
        send(writer, id, saturated());
    }
}

/// Writes the JSON-lines response to request `id`, whole.
fn send(writer: &LineWriter, id: RequestId, output: ToolOutput) {
    writer.send(&TypedResponseBody::new(Some(id), output));
}
