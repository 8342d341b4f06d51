//! The stdio transport of `webcodex-plugin mcp`: one JSON-RPC message per line on stdin, one per
//! line on stdout (and nothing else on stdout; logs go to stderr).
//!
//! The reading thread hands every line to the [`McpSession`] and writes its replies at once;
//! a `tools/call` runs on a worker thread of its own (at most `MAX_IN_FLIGHT` at once, beyond
//! which it is answered with an `isError` result carrying `gateway_saturated`), so responses may
//! come out of order. `notifications/cancelled` drops the response of a call in flight but never
//! interrupts it. A line over 1 MiB is answered with -32600 (`id: null`) and skipped; reading
//! goes on. A blank line is ignored. On EOF the transport stops reading and serves every request
//! already read, as the JSON-lines gateway does: the calls in flight (a `check` included) run to
//! their normal answers, each bounded by its deadline; only a running reload is cut short (its
//! candidates are killed at once and it never commits). Then it begins the hosts' shutdown and
//! returns.

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use super::jsonrpc::{RpcError, INVALID_REQUEST};
use super::{McpSession, PendingCalls, Step, ToolCall, Transport};
use crate::frame::{read_line, Line};
use crate::gateway::{Caller, Gateway};
use crate::transport::{saturated, Dispatcher, LineWriter, WORKER_STACK};

/// Serves MCP from `input` until EOF, writing messages to `output`.
///
/// Returns `Ok` after EOF once every call in flight was answered (or its response dropped);
/// an error when reading `input` or writing `output` failed (also after the wait).
pub fn serve_stdio(
    gateway: Arc<Gateway>,
    caller: Caller,
    mut input: impl BufRead,
    output: impl Write + Send + 'static,
) -> io::Result<()> {
    let dispatcher = Dispatcher::new(gateway);
    let writer = Arc::new(LineWriter::new(Box::new(output)));
    let pending = Arc::new(PendingCalls::default());
    let mut session = McpSession::new(Transport::Stdio);
    let mut line = Vec::new();
    let read_result = loop {
        if writer.failed() {
            break Ok(());
        }
        match read_line(&mut input, &mut line) {
            Ok(Line::Eof) => break Ok(()),
            Ok(Line::TooLarge) => writer.send(&McpSession::oversized().message),
            Ok(Line::Complete) if line.iter().all(u8::is_ascii_whitespace) => {}
            Ok(Line::Complete) => match session.handle_bytes(&line) {
                Step::Reply(reply) => writer.send(&reply.message),
                Step::Cancel(id) => {
                    pending.cancel(&id);
                }
                Step::Nothing => {}
                Step::Call(call) => {
                    start_call(call, &dispatcher, caller, &writer, &pending);
                }
            },
            Err(e) => break Err(e),
        }
    };
    // No request follows: every request already read is served (a check included), but a
    // reload must not hold the exit behind its candidates' handshakes.
    dispatcher.gateway().close_reloads();
    dispatcher.wait_idle();
    dispatcher.gateway().begin_shutdown();
    read_result?;
    match writer.take_error() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn start_call(
    call: ToolCall,
    dispatcher: &Dispatcher,
    caller: Caller,
    writer: &Arc<LineWriter>,
    pending: &Arc<PendingCalls>,
) {
    let Some(ticket) = pending.register(call.id()) else {
        let error = RpcError::new(
            INVALID_REQUEST,
            "a request with this id is still in flight; use a new id",
        );
        return writer.send(&error.response(call.id()));
    };
    let Some(slot) = dispatcher.try_admit() else {
        return writer.send(&call.respond(saturated()).message);
    };
    let (worker_dispatcher, worker_writer) = (dispatcher.clone(), writer.clone());
    let fallback = call.without_arguments();
    let spawned = std::thread::Builder::new()
        .name("wc-mcp-call".into())
        .stack_size(WORKER_STACK)
        .spawn(move || {
            let output = worker_dispatcher.execute(&caller, call.params());
            let reply = call.respond(output);
            if ticket.finish() {
                worker_writer.send(&reply.message);
            }
            drop(slot);
        });
    if spawned.is_err() {
        // The closure (with the ticket and the slot) was dropped: both are released.
        writer.send(&fallback.respond(saturated()).message);
    }
}
