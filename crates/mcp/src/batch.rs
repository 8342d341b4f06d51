//! JSON-RPC batches: a JSON array of messages, served only under protocol version 2025-03-26
//! (the one revision that requires them). Each member is handled like a message of its own;
//! the answers come back as one array (notifications and responses get none, a member whose
//! response was cancelled gets none), in the members' order.
//!
//! The transport decides each member on its reading thread ([`Member`]): an answer at once, a
//! `tools/call` admitted under the shared in-flight bound (a slot of its own, exactly as a
//! separate request; none free → a `gateway_saturated` result), or nothing. [`run`] then runs
//! the admitted calls concurrently, one worker thread each, and gathers the answers.

use super::jsonrpc::{Outgoing, Response};

/// The most members a batch may have; a longer one is -32600 as a whole (its answer array
/// would otherwise grow with the count of tiny members a 1 MiB message can hold).
pub const MAX_BATCH_MEMBERS: usize = 256;
use super::{Step, Ticket, ToolCall};
use webcodex_plugin_host::Caller;
use webcodex_plugin_host::{saturated_output, Dispatcher, Slot, WORKER_STACK};

/// One member of a batch, decided on the reading thread.
#[derive(Debug)]
pub(crate) enum Member {
    /// Answered at once.
    Answer(Response),
    /// A call holding its in-flight slot (and, on stdio, its cancellation ticket).
    Call {
        /// The call to run.
        call: ToolCall,
        /// Its in-flight slot, freed once the batch's answer was written.
        slot: Slot,
        /// Its cancellation ticket; a cancelled call's answer is left out.
        ticket: Option<Ticket>,
    },
    /// No answer (a notification or a client's response).
    Silent,
}

impl Member {
    /// The member for a step that is not a call (a call goes through [`Member::admit`]).
    pub(crate) fn of_step(step: Step) -> Option<Member> {
        match step {
            Step::Reply(reply) => Some(Member::Answer(reply.message)),
            Step::Call(_) => None,
            Step::Cancel(_) | Step::Nothing => Some(Member::Silent),
        }
    }

    /// Admits `call` under the in-flight bound: a slot of its own, or `gateway_saturated`.
    pub(crate) fn admit(call: ToolCall, ticket: Option<Ticket>, dispatcher: &Dispatcher) -> Member {
        match dispatcher.try_admit() {
            Some(slot) => Member::Call { call, slot, ticket },
            None => Member::Answer(call.respond(saturated_output()).message),
        }
    }

    /// The answer this member gets without running a call: its own answer, or for a call
    /// `gateway_saturated` (not started; no worker thread could be started).
    fn answer_without_running(&self) -> Option<Response> {
        match self {
            Member::Answer(response) => Some(response.clone()),
            Member::Call { call, .. } => {
                Some(call.without_arguments().respond(saturated_output()).message)
            }
            Member::Silent => None,
        }
    }
}

/// The answers of `members` as a batch, or `None` when not one member gets an answer.
fn gather(answers: Vec<Option<Response>>) -> Option<Outgoing> {
    let answers: Vec<Response> = answers.into_iter().flatten().collect();
    (!answers.is_empty()).then_some(Outgoing::Batch(answers))
}

/// The batch's answer without running any call (see [`Member`]'s own answers): the whole
/// answer when no member is a call, the fallback when no worker thread could be started.
pub(crate) fn answer_without_running(members: &[Member]) -> Option<Outgoing> {
    gather(members.iter().map(Member::answer_without_running).collect())
}

/// The -32600 message for a batch that is refused as a whole (empty or too long), if it is.
pub(crate) fn refusal(members: usize) -> Option<&'static str> {
    match members {
        0 => Some("the batch is empty"),
        n if n > MAX_BATCH_MEMBERS => Some("a batch has at most 256 members; split it"),
        _ => None,
    }
}

/// True when some member is a call to run.
pub(crate) fn has_calls(members: &[Member]) -> bool {
    members.iter().any(|m| matches!(m, Member::Call { .. }))
}

/// A member's answer, known or being computed.
enum Answer<'scope> {
    Known(Option<Response>),
    Running(std::thread::ScopedJoinHandle<'scope, Option<Response>>),
}

/// Runs the calls among `members` concurrently (one worker thread each) and returns the batch's
/// answer with the slots the calls held: drop them once the answer is written.
pub(crate) fn run(
    members: Vec<Member>,
    dispatcher: &Dispatcher,
    caller: Caller,
) -> (Option<Outgoing>, Vec<Slot>) {
    let mut slots = Vec::new();
    // The exchange's context (its `traceparent` header), for members that name none.
    let parent = webcodex_plugin_host::current_trace();
    let answers = std::thread::scope(|scope| {
        let answers: Vec<Answer<'_>> = members
            .into_iter()
            .map(|member| match member {
                Member::Answer(response) => Answer::Known(Some(response)),
                Member::Silent => Answer::Known(None),
                Member::Call { call, slot, ticket } => {
                    slots.push(slot);
                    let fallback = call.without_arguments();
                    let worker = std::thread::Builder::new()
                        .name("wc-mcp-batch".into())
                        .stack_size(WORKER_STACK)
                        .spawn_scoped(scope, move || {
                            let trace = call.trace().or(parent);
                            let output = dispatcher.execute_traced(&caller, call.params(), trace);
                            let reply = call.respond(output);
                            ticket.is_none_or(Ticket::finish).then_some(reply.message)
                        });
                    match worker {
                        Ok(worker) => Answer::Running(worker),
                        Err(_) => Answer::Known(Some(fallback.respond(saturated_output()).message)),
                    }
                }
            })
            .collect();
        answers
            .into_iter()
            .map(|answer| match answer {
                Answer::Known(answer) => answer,
                // `execute` catches a panic of the request; a worker cannot fail otherwise.
                Answer::Running(worker) => worker.join().ok().flatten(),
            })
            .collect()
    });
    (gather(answers), slots)
}
