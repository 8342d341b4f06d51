//! The request threads of a `connect` runner's link: they read the front's requests, run each
//! on the local gateway and write its reply, at most [`MAX_IN_FLIGHT`] at once, until the link
//! ends (a frame the link does not allow, the end of the stream, or no frame for
//! [`DEAD_AFTER`]). One crew on every platform: leader/follower.
//!
//! One request thread at a time reads the link (the leader): it waits for bytes on the link's
//! socket without its lock ([`LinkSocket::next`]: one `poll(2)` on Unix, a `peek` with a read
//! timeout elsewhere) until the dead-link bound, so an idle link costs no wake-up besides the
//! front's pings. A leader that reads a request passes the reading to a thread that waits for
//! it (a new thread when none waits) and runs the request itself, so no hand-off stands
//! between a request's arrival and its run; once it answered, it waits up to [`WORKER_IDLE`]
//! to lead again, then ends. A link has at most [`MAX_THREADS`] request threads: at that count
//! a leader waits for one of them (one holds no request and is on its way back) to take the
//! reading, or for one to end so that it may start one.
//!
//! Every request is answered exactly once: by the thread that runs it, or at once with a
//! `not_started` failure (unreadable, over the bound, no thread could start).
//!
//! [`MAX_IN_FLIGHT`]: webcodex_plugin_host::MAX_IN_FLIGHT

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, select, Receiver, Sender};

use tungstenite::protocol::frame::coding::CloseCode;

use super::socket::{LinkSocket, Next};
use super::wire::{self, LinkRequest};
use webcodex_plugin_host::TraceContext;
use webcodex_plugin_host::{Caller, Gateway};
use webcodex_plugin_host::{Dispatch, ErrorCode};
use webcodex_plugin_host::{Dispatcher, Slot, WORKER_STACK};

/// A runner link with no frame from the front for this long is dead (the front pings every
/// 15 s).
const DEAD_AFTER: Duration = Duration::from_secs(45);

/// How long a request thread that has nothing to do waits before it ends (so a busy link
/// starts no thread per request, and an idle one keeps none for long besides its reader).
const WORKER_IDLE: Duration = Duration::from_secs(30);

/// The most request threads a link has: one for each request in flight
/// ([`webcodex_plugin_host::MAX_IN_FLIGHT`]), and one to read. At that count one of them at
/// least holds no request and is on its way back to read, so none is started.
const MAX_THREADS: usize = webcodex_plugin_host::MAX_IN_FLIGHT + 1;

/// The request threads of a link alive, at most [`MAX_THREADS`].
#[derive(Debug, Default)]
struct ThreadCount(std::sync::atomic::AtomicUsize);

impl ThreadCount {
    /// Counts one more thread, about to start; false at [`MAX_THREADS`].
    fn reserve(&self) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        self.0
            .fetch_update(SeqCst, SeqCst, |n| (n < MAX_THREADS).then_some(n + 1))
            .is_ok()
    }

    /// A counted thread ended, or could not start.
    fn release(&self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Serves the front's requests on `socket` with `gateway` until the link ends; returns why
/// it ended. The calling thread runs no request: it waits for the thread that sees the end,
/// so a lost link is dialled again at once even while long requests run (their answers then
/// fail to write).
pub(super) fn serve<S>(gateway: &Arc<Gateway>, socket: &Arc<LinkSocket<S>>) -> String
where
    S: Read + Write + Send + 'static,
{
    let (pass, take) = bounded::<Lead>(0);
    let (ended_tx, ended) = bounded::<String>(1);
    // Dropped when this returns: the threads that wait to lead end at once.
    let (_gone_tx, gone) = bounded::<()>(0);
    let crew = Arc::new(Crew {
        dispatcher: Dispatcher::new(gateway.clone()),
        socket: socket.clone(),
        pass,
        take,
        ended: ended_tx,
        gone,
        threads: ThreadCount::default(),
        thread_ended: bounded(1),
    });
    let first = Lead {
        last_frame: Instant::now(),
    };
    let started = pass_lead(&crew, first);
    drop(crew);
    await_end(started, socket, &ended)
}

/// The reading of a link, passed from thread to thread: when the front's last frame came (a
/// link with none for [`DEAD_AFTER`] is dead). Exactly one thread holds it at a time.
#[derive(Clone, Copy)]
struct Lead {
    last_frame: Instant,
}

/// How a thread's turn as the link's reader ended.
enum Led {
    /// It read a request, passed the reading on and ran the request.
    Passed,
    /// The link ended (why, for the log); the reading goes to no one.
    Ended(String),
}

/// The threads of one link: the dispatcher they run requests on (its bound of 64 at once),
/// the link they read and answer, and the hand-off of the reading.
struct Crew<S: Read + Write> {
    dispatcher: Dispatcher,
    socket: Arc<LinkSocket<S>>,
    /// Passes the reading to a thread waiting in `take` (zero capacity: only to one that
    /// waits).
    pass: Sender<Lead>,
    take: Receiver<Lead>,
    /// Why the link ended, from the leader that saw it to `serve`'s thread.
    ended: Sender<String>,
    /// Disconnected once `serve` returned.
    gone: Receiver<()>,
    threads: ThreadCount,
    /// A thread ended (one unit, however many): a leader waiting at [`MAX_THREADS`] looks
    /// at the count again.
    thread_ended: (Sender<()>, Receiver<()>),
}

/// Reads the link as its leader until it reads a request it can run (it passes the reading on
/// and runs it: [`Led::Passed`]) or the link ends ([`Led::Ended`]). Requests that cannot run
/// (unreadable, over the bound of 64, no thread to pass the reading to) are answered at once
/// and the reading goes on.
fn lead_link<S>(crew: &Arc<Crew<S>>, mut lead: Lead) -> Led
where
    S: Read + Write + Send + 'static,
{
    let socket = &crew.socket;
    loop {
        let next = socket.next(lead.last_frame + DEAD_AFTER);
        if matches!(next, Next::Text(_) | Next::Heartbeat) {
            lead.last_frame = Instant::now();
        }
        match take(&crew.dispatcher, socket, next) {
            Taken::Request(request, slot) => {
                if pass_lead(crew, lead) {
                    answer(&crew.dispatcher, socket, request, slot);
                    return Led::Passed;
                }
                drop(slot);
                refuse_no_thread(socket, request.id);
            }
            Taken::Nothing => {}
            Taken::End(why) => return Led::Ended(why),
        }
    }
}

/// Passes the reading of the link to a thread waiting for it, else to a new thread (at
/// [`MAX_THREADS`]: to the first thread that comes back to wait, or a new one once a thread
/// ended); false when no thread could start (the caller keeps the reading).
fn pass_lead<S>(crew: &Arc<Crew<S>>, lead: Lead) -> bool
where
    S: Read + Write + Send + 'static,
{
    if crew.pass.try_send(lead).is_ok() {
        return true;
    }
    loop {
        if crew.threads.reserve() {
            return start_follower(crew, lead);
        }
        // A thread that ends after the count was read leaves its unit for this wait.
        select! {
            send(crew.pass, lead) -> sent => return sent.is_ok(),
            recv(crew.thread_ended.1) -> _ => {}
        }
    }
}

/// Starts a thread (already counted in `threads`) that leads with `lead`; false when none
/// could start.
fn start_follower<S>(crew: &Arc<Crew<S>>, lead: Lead) -> bool
where
    S: Read + Write + Send + 'static,
{
    let follower = crew.clone();
    let spawned = std::thread::Builder::new()
        .name("wc-link-req".into())
        .stack_size(WORKER_STACK)
        .spawn(move || {
            follow(&follower, lead);
            follower.threads.release();
            let _ = follower.thread_ended.0.try_send(());
        });
    match spawned {
        Ok(_) => true,
        Err(e) => {
            crew.threads.release();
            log::warn!("connect: no thread for a request: {e}");
            false
        }
    }
}

/// A request thread of the link: leads with `lead`, then, after each request it ran, waits up
/// to [`WORKER_IDLE`] to lead again; ends when the wait runs out or the link ended.
fn follow<S>(crew: &Arc<Crew<S>>, mut lead: Lead)
where
    S: Read + Write + Send + 'static,
{
    loop {
        if let Led::Ended(why) = lead_link(crew, lead) {
            let _ = crew.ended.try_send(why);
            return;
        }
        crossbeam_channel::select! {
            recv(crew.take) -> next => match next {
                Ok(next) => lead = next,
                Err(_) => return,
            },
            recv(crew.gone) -> _ => return,
            default(WORKER_IDLE) => return,
        }
    }
}

/// Waits for why the link ended, once the crew's first thread `started` (none could start: the
/// link is closed at once). The crew was dropped by the caller: only the link's threads hold
/// the sender, so should they all end without a word (a bug), the wait ends too.
fn await_end<S: Read + Write>(
    started: bool,
    socket: &LinkSocket<S>,
    ended: &crossbeam_channel::Receiver<String>,
) -> String {
    if !started {
        socket.close(CloseCode::Away, "the runner could not start a thread");
        return "no thread could start to read the link".into();
    }
    ended
        .recv()
        .unwrap_or_else(|_| "the link's threads ended".into())
}

/// What a reader makes of the link's next message.
enum Taken {
    /// A request to run, with its slot.
    Request(LinkRequest, Slot),
    /// Nothing to run: a heartbeat, or a frame answered at once.
    Nothing,
    /// The link ended (closed with the code that says why, when it was this side's call);
    /// why, for the log.
    End(String),
}

/// Takes `next`: a text is admitted as a request ([`admit`]); a frame the link does not allow
/// closes it with the code that says why; [`Next::Quiet`] means the dead-link bound passed.
fn take<S: Read + Write>(dispatcher: &Dispatcher, socket: &LinkSocket<S>, next: Next) -> Taken {
    match next {
        Next::Text(text) => match admit(dispatcher, socket, &text) {
            Some((request, slot)) => Taken::Request(request, slot),
            None => Taken::Nothing,
        },
        Next::Heartbeat => Taken::Nothing,
        Next::Quiet => {
            socket.close(CloseCode::Away, "no frame for 45 s");
            Taken::End("no frame from the front for 45 s".into())
        }
        Next::Binary => {
            socket.close(CloseCode::Unsupported, "the link carries text frames only");
            Taken::End("the front sent a binary frame".into())
        }
        Next::TooLarge => {
            socket.close(CloseCode::Size, "a frame over 1 MiB");
            Taken::End("the front sent a frame over 1 MiB".into())
        }
        Next::Broken(why) => {
            socket.close(CloseCode::Protocol, "not a valid WebSocket frame");
            Taken::End(why)
        }
        Next::Ended(why) => Taken::End(why),
    }
}

/// Parses one request of the front and takes its in-flight slot, at most
/// [`webcodex_plugin_host::MAX_IN_FLIGHT`] (64) at once; beyond it, or when the frame is not a
/// readable request, the front is answered at once (`None`).
fn admit<S: Read + Write>(
    dispatcher: &Dispatcher,
    socket: &LinkSocket<S>,
    text: &str,
) -> Option<(LinkRequest, Slot)> {
    let request = match wire::parse_request(text) {
        Ok(request) => request,
        Err((Some(id), e)) => {
            let message = format!("the runner could not read the request: {e}");
            refuse(socket, id, ErrorCode::InvalidRequest, &message);
            return None;
        }
        Err((None, e)) => {
            log::warn!("connect: the front sent a frame that is not a request: {e}");
            return None;
        }
    };
    let Some(slot) = dispatcher.try_admit() else {
        refuse(
            socket,
            request.id,
            ErrorCode::GatewaySaturated,
            "the runner already serves its limit of requests; try again when one finishes",
        );
        return None;
    };
    Some((request, slot))
}

/// Answers request `id` of the front with a `not_started` failure (`code`, `message`) at once.
fn refuse<S: Read + Write>(socket: &LinkSocket<S>, id: u64, code: ErrorCode, message: &str) {
    let reply = wire::encode_failure(id, code, Dispatch::NotStarted, message);
    let _ = socket.send_text(reply);
}

/// Answers `id` when no thread could start to go on reading the link while it ran.
fn refuse_no_thread<S: Read + Write>(socket: &LinkSocket<S>, id: u64) {
    refuse(
        socket,
        id,
        ErrorCode::GatewaySaturated,
        "the runner could not start a thread for the request; try again",
    );
}

/// Runs `request` on the gateway (the front has checked the caller's scopes) in the trace
/// context the front sent (a fresh one without), writes the reply and frees `slot`; a reply
/// that cannot be written is lost with the link. The trace context never reaches a plugin:
/// only `params` go to the gateway.
fn answer<S: Read + Write>(
    dispatcher: &Dispatcher,
    socket: &LinkSocket<S>,
    request: LinkRequest,
    slot: Slot,
) {
    let Some(kind) = request.operation.carries(&request.params) else {
        return;
    };
    let trace = request.trace.unwrap_or_else(TraceContext::fresh);
    let _scope = webcodex_plugin_host::begin_trace(Some(trace));
    let output = dispatcher.execute(&Caller::trusted(), &request.params);
    drop(slot);
    let outcome = match output.code() {
        None => "ok",
        Some(code) => code.as_str(),
    };
    log::info!(
        "connect: {} (link request {}) -> {outcome}",
        request.operation.as_str(),
        request.id
    );
    let mut reply = wire::encode_reply(request.id, kind, &output);
    if reply.len() > wire::MAX_FRAME_BYTES {
        reply = wire::encode_failure(
            request.id,
            ErrorCode::RpcError,
            Dispatch::Completed,
            "the answer is larger than a link frame (1 MiB)",
        );
    }
    if let Err(e) = socket.send_text(reply) {
        log::info!("connect: an answer could not be written (the link ended): {e}");
    }
}
