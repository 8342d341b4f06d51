//! The stdio transport of `webcodex-plugin mcp`: one JSON-RPC message per line on stdin, one per
//! line on stdout (and nothing else on stdout; logs go to stderr).
//!
//! The reading thread hands every line to the [`McpSession`] and writes its replies at once;
//! a `tools/call` runs on a worker thread of its own (at most `MAX_IN_FLIGHT` at once, beyond
//! which it is answered with an `isError` result carrying `gateway_saturated`), so responses may
//! come out of order. `notifications/cancelled` drops the response of a call in flight but never
//! interrupts it. A batch (a JSON array) is served once `initialize` negotiated 2025-03-26
//! (see [`super::batch`]), else it is -32600. A line over 1 MiB is answered with -32600
//! (`id: null`) and skipped; reading goes on. A blank line is ignored. On EOF the transport stops reading and serves every request
//! already read, as the JSON-lines gateway does: the calls in flight (a `check` included) run to
//! their normal answers, each bounded by its deadline; only a running reload is cut short (its
//! candidates are killed at once and it never commits). Then it begins the hosts' shutdown and
//! returns.

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use serde_json::value::RawValue;

use super::batch::{self, Member};
use super::jsonrpc::{self, Body, RequestId, RpcError, INVALID_REQUEST};
use super::{McpSession, PendingCalls, Step, ToolCall, Transport};
use webcodex_plugin_host::{
    drive_lines, saturated_output, Dispatcher, Input, LineWriter, WORKER_STACK,
};
use webcodex_plugin_host::{Caller, Gateway};

/// Serves MCP from `input` until EOF, writing messages to `output`.
///
/// Returns `Ok` after EOF once every call in flight was answered (or its response dropped);
/// an error when reading `input` or writing `output` failed (also after the wait).
pub fn serve_stdio(
    gateway: Arc<Gateway>,
    caller: Caller,
    input: impl BufRead,
    output: impl Write + Send + 'static,
) -> io::Result<()> {
    let pending = Arc::new(PendingCalls::default());
    let mut session = McpSession::new(Transport::Stdio);
    drive_lines(gateway, input, output, |input, dispatcher, writer| {
        let line = match input {
            Input::TooLarge => return writer.send(&McpSession::oversized().message),
            Input::Line(line) if line.iter().all(u8::is_ascii_whitespace) => return,
            Input::Line(line) => line,
        };
        match jsonrpc::parse_body(line) {
            Body::Single(parsed) => match session.handle_parsed(parsed) {
                Step::Reply(reply) => writer.send(&reply.message),
                Step::Cancel(id) => {
                    pending.cancel(&id);
                }
                Step::Nothing => {}
                Step::Call(call) => start_call(call, dispatcher, caller, writer, &pending),
            },
            Body::Batch(members) => {
                let streams = Streams {
                    dispatcher,
                    writer,
                    pending: &pending,
                };
                start_batch(&members, &mut session, &streams, caller);
            }
        }
    })
}

fn start_call(
    call: ToolCall,
    dispatcher: &Dispatcher,
    caller: Caller,
    writer: &Arc<LineWriter>,
    pending: &Arc<PendingCalls>,
) {
    let Some(ticket) = pending.register(call.id()) else {
        return writer.send(&id_in_flight(call.id()));
    };
    let Some(slot) = dispatcher.try_admit() else {
        return writer.send(&call.respond(saturated_output()).message);
    };
    let (worker_dispatcher, worker_writer) = (dispatcher.clone(), writer.clone());
    let fallback = call.without_arguments();
    let spawned = std::thread::Builder::new()
        .name("wc-mcp-call".into())
        .stack_size(WORKER_STACK)
        .spawn(move || {
            let output = worker_dispatcher.execute_traced(&caller, call.params(), call.trace());
            let reply = call.respond(output);
            if ticket.finish() {
                worker_writer.send(&reply.message);
            }
            drop(slot);
        });
    if spawned.is_err() {
        // The closure (with the ticket and the slot) was dropped: both are released.
        writer.send(&fallback.respond(saturated_output()).message);
    }
}

fn id_in_flight(id: &RequestId) -> jsonrpc::Response {
    RpcError::new(
        INVALID_REQUEST,
        "a request with this id is still in flight; use a new id",
    )
    .response(id)
}

/// What a batch needs of the stream.
struct Streams<'a> {
    dispatcher: &'a Dispatcher,
    writer: &'a Arc<LineWriter>,
    pending: &'a Arc<PendingCalls>,
}

/// Serves a batch (see [`batch`]): only once `initialize` negotiated 2025-03-26, else -32600.
/// Its members are decided here, in order (a cancellation among them applies at once); its
/// calls run on a thread of their own so that reading goes on, and the answers are written as
/// one array once every call finished.
fn start_batch(
    members: &[Box<RawValue>],
    session: &mut McpSession,
    streams: &Streams<'_>,
    caller: Caller,
) {
    let refuse = |message: &str| {
        let error = RpcError::new(INVALID_REQUEST, message).response(&RequestId::null());
        streams.writer.send(&error);
    };
    if !session.serves_batches() {
        return refuse(
            "batches are served only under protocol version 2025-03-26 (negotiated by \
             initialize); send one JSON-RPC message per line",
        );
    }
    if let Some(message) = batch::refusal(members.len()) {
        return refuse(message);
    }
    let members: Vec<Member> = members
        .iter()
        .map(
            |member| match session.handle_bytes(member.get().as_bytes()) {
                Step::Call(call) => match streams.pending.register(call.id()) {
                    Some(ticket) => Member::admit(call, Some(ticket), streams.dispatcher),
                    None => Member::Answer(id_in_flight(call.id())),
                },
                Step::Cancel(id) => {
                    streams.pending.cancel(&id);
                    Member::Silent
                }
                other => Member::of_step(other).unwrap_or(Member::Silent),
            },
        )
        .collect();
    if !batch::has_calls(&members) {
        if let Some(answer) = batch::answer_without_running(&members) {
            streams.writer.send(&answer);
        }
        return;
    }
    // Should no thread start, every call is answered `gateway_saturated` (not started).
    let fallback = batch::answer_without_running(&members);
    let (dispatcher, writer) = (streams.dispatcher.clone(), streams.writer.clone());
    let spawned = std::thread::Builder::new()
        .name("wc-mcp-batch".into())
        .stack_size(WORKER_STACK)
        .spawn(move || {
            let (answer, slots) = batch::run(members, &dispatcher, caller);
            if let Some(answer) = answer {
                writer.send(&answer);
            }
            // Freed only now, so EOF's wait covers the write of this answer.
            drop(slots);
        });
    if spawned.is_err() {
        // The closure (with the slots and tickets) was dropped: all are released.
        if let Some(answer) = fallback {
            streams.writer.send(&answer);
        }
    }
}
