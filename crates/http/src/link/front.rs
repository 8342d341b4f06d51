//! The front's side of runner links: the links that `serve` accepted on
//! `GET /api/runners/connect`, each one a [`RunnerLink`] of a [`RemoteRunner`] in the gateway,
//! so the relay rules and the per-runner in-flight cap apply to it as to a `--runners` runner.
//!
//! One link = the connection thread that accepted it, which reads the link for its whole life
//! (answers are handed to the waiting callers by id through bounded channels) and sends the
//! heartbeat pings; callers write their requests under the socket's lock. A caller that finds
//! no other caller reading claims the reading before it writes its request and reads the link
//! itself until its answer comes (routing the others' answers meanwhile), so no thread hands
//! it its answer. The connection thread reads nothing while the claim is held; it reads again
//! at once when a released claim leaves answers owed to other callers, else once no caller
//! claimed the reading for [`READ_AGAIN_AFTER`], or at its next heartbeat duty. A link lives in the
//! [`LinkRegistry`] under its runner id:
//! - a new link for a connected id replaces the old one, which is closed at once;
//! - a link of the same runner instance (the same `instance` in its hello) keeps the runner's
//!   bindings; a new instance is a new runner, so old bindings fail with `plugin_replaced`;
//! - a link that ends takes its runner out of `list` (`plugin_runner_not_found` after);
//! - a link whose token no longer authenticates as its runner id after the tokens were
//!   replaced (SIGHUP) is closed at once ([`LinkRegistry::revoke`], in `evict`);
//! - a stopping front drains its links: nothing new is sent, the answers owed are awaited
//!   within their own deadlines, then each link is closed ([`LinkRegistry::drain`]).

use std::collections::HashMap;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender, TryRecvError};
use parking_lot::{Condvar, Mutex, RwLock};
use serde_json::Value;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::{Role, WebSocket};

use super::socket::{config, LinkSocket, Next, SendError, SharedTcp};
use super::wire::{self, Operation};
use crate::tokens::Tokens;
use webcodex_plugin_host::{
    ActionKind, CallAnswer, Gateway, LinkAnswer, LinkFailure, RemoteRunner, RunnerLink, ToolOutput,
};

mod evict;

/// How often the front pings a link.
pub const PING_EVERY: Duration = Duration::from_secs(15);
/// A link with no frame for this long is dead.
pub const DEAD_AFTER: Duration = Duration::from_secs(45);

/// The heartbeat of the front's links: [`PING_EVERY`] and [`DEAD_AFTER`] (shorter ones only in
/// this module's tests).
#[derive(Debug, Clone, Copy)]
struct Heartbeat {
    ping_every: Duration,
    dead_after: Duration,
}

impl Heartbeat {
    const LINK: Heartbeat = Heartbeat {
        ping_every: PING_EVERY,
        dead_after: DEAD_AFTER,
    };
}
/// How long a runner has for its hello.
pub const HELLO_WITHIN: Duration = Duration::from_secs(10);
/// How long a request waits for its answer (above the longest plugin request timeout).
pub const ANSWER_WITHIN: Duration = Duration::from_secs(130);
/// How long after a caller released its claim to read, with no answer owed to anyone, the
/// connection thread reads the link again (a caller that comes sooner claims the reading and
/// the connection thread is not woken between sequential requests).
pub const READ_AGAIN_AFTER: Duration = Duration::from_millis(50);

/// The runner links of a front.
pub(crate) struct LinkRegistry {
    gateway: Arc<Gateway>,
    /// The server's tokens in force (a link is attached only while its token authenticates
    /// as its runner id). Lock order: `runners`, then `tokens`.
    tokens: Arc<RwLock<Tokens>>,
    runners: Mutex<HashMap<String, Entry>>,
    serial: AtomicU64,
    heartbeat: Heartbeat,
    /// The front is stopping: no link is attached any more.
    draining: AtomicBool,
}

/// A runner id's current runner instance and its link.
struct Entry {
    instance: String,
    remote: Arc<RemoteRunner>,
    link: Arc<DialLink>,
}

/// The [`RunnerLink`] of one dial-out runner: whichever connection is current.
struct DialLink {
    current: RwLock<Option<Arc<Connection>>>,
}

/// One accepted WebSocket of a runner.
struct Connection {
    /// The runner id it links (for the log).
    runner: String,
    serial: u64,
    /// The runner's address as this front sees it, for the log.
    peer: String,
    socket: LinkSocket<SharedTcp>,
    instance: String,
    /// The runner token the link was authenticated with.
    token: String,
    /// The front is stopping: no request is sent any more, and the link is closed once no
    /// answer is owed.
    draining: AtomicBool,
    pending: Mutex<HashMap<u64, Sender<Routed>>>,
    next_id: AtomicU64,
    /// When the runner's last frame came, whoever read it.
    last_frame: Mutex<Instant>,
    /// When a caller last released its claim to read; the connection thread waits on
    /// `claim_released` under it.
    released: Mutex<Instant>,
    /// Signalled when a released claim leaves answers owed, when the link ended, and when
    /// the connection thread waits for a claim to be released (`waits_on_claim`).
    claim_released: Condvar,
    /// The connection thread waits while a claim is held (set and read under `released`).
    waits_on_claim: AtomicBool,
    /// Why the link ended, when a caller that read the link saw it end.
    ended: Mutex<Option<String>>,
}

impl Connection {
    /// Ends the link and fails every request waiting on it (their senders are dropped); the
    /// connection thread, should it wait for claims, sees it at once.
    fn end(&self) {
        self.socket.shutdown();
        self.pending.lock().clear();
        self.wake_connection_thread();
    }

    /// Sends a close frame and ends the connection; the connection thread, should it wait for
    /// claims, sees it at once.
    fn close(&self, code: CloseCode, reason: &str) {
        self.socket.close(code, reason);
        self.wake_connection_thread();
    }

    /// Closes the link (1001) when the front is stopping and no answer is owed on it.
    fn close_if_drained(&self) {
        let drained = self.draining.load(Ordering::SeqCst) && self.pending.lock().is_empty();
        if drained && !self.socket.is_closed() {
            log::info!(
                "runner link `{}`: closed (1001): the front is stopping and no answer is owed",
                self.runner
            );
            self.close(CloseCode::Away, "the front is stopping");
        }
    }

    /// Wakes the connection thread should it wait in [`Connection::wait_for_claims`].
    fn wake_connection_thread(&self) {
        let _released = self.released.lock();
        self.claim_released.notify_one();
    }

    /// Takes in one thing the reader found: routes an answer, notes a frame's time, closes the
    /// link on a breach. `Err(why)` when the link is over.
    fn take(&self, next: Next) -> Result<(), String> {
        let socket = &self.socket;
        match next {
            Next::Text(text) => {
                *self.last_frame.lock() = Instant::now();
                route_answer(self, &text).inspect_err(|why| {
                    socket.close(CloseCode::Policy, why);
                })
            }
            Next::Heartbeat => {
                *self.last_frame.lock() = Instant::now();
                Ok(())
            }
            Next::Quiet => Ok(()),
            Next::Binary => {
                socket.close(CloseCode::Unsupported, "the link carries text frames only");
                Err("a binary frame".into())
            }
            Next::TooLarge => {
                socket.close(CloseCode::Size, "a frame over 1 MiB");
                Err("a frame over 1 MiB".into())
            }
            Next::Broken(why) => {
                socket.close(CloseCode::Protocol, "not a valid WebSocket frame");
                Err(why)
            }
            Next::Ended(why) => Err(why),
        }
    }

    /// Reads what the link holds already, without waiting (this caller holds the claim and is
    /// about to write): a late answer, a pong, the end of the link. `Err(why)` when the link
    /// is over, so the request is not written.
    fn drain(&self) -> Result<(), String> {
        loop {
            match self.socket.next(Instant::now()) {
                Next::Quiet => return Ok(()),
                next => {
                    if let Err(why) = self.take(next) {
                        *self.ended.lock() = Some(why.clone());
                        self.end();
                        return Err(why);
                    }
                }
            }
        }
    }

    /// Reads the link (this caller holds the claim and drained it before it wrote) until the
    /// answer for `id` is in `rx`, the link ends, or `deadline` passes.
    fn read_own_answer(
        &self,
        id: u64,
        rx: &Receiver<Routed>,
        deadline: Instant,
    ) -> Result<Routed, LinkFailure> {
        let mut first = true;
        loop {
            match rx.try_recv() {
                Ok(reply) => return Ok(reply),
                Err(TryRecvError::Disconnected) => {
                    return Err(LinkFailure::Lost("the link ended before the answer".into()))
                }
                Err(TryRecvError::Empty) => {}
            }
            if Instant::now() >= deadline {
                self.pending.lock().remove(&id);
                return Err(LinkFailure::Lost("no answer in time".into()));
            }
            let next = match first {
                true => self.socket.next_after_drain(deadline),
                false => self.socket.next(deadline),
            };
            first = false;
            if let Err(why) = self.take(next) {
                // The connection thread sees the end once the claim is released, and logs
                // this.
                *self.ended.lock() = Some(why);
                self.end();
                return Err(LinkFailure::Lost("the link ended before the answer".into()));
            }
        }
    }

    /// Gives up the claim to read; wakes the connection thread when it has to read at once
    /// (answers owed to other callers, or the link ended), or when it waits while the claim
    /// was held: it then waits [`READ_AGAIN_AFTER`] from now (left alone it would wait for its
    /// next heartbeat duty, and a runner that went after its last answer would stay routed
    /// until then). A thread that already waits out [`READ_AGAIN_AFTER`] is not woken, so
    /// sequential requests wake it about once per [`READ_AGAIN_AFTER`], not once each.
    fn release_claim(&self) {
        self.socket.release_claim();
        let mut released = self.released.lock();
        *released = Instant::now();
        if self.waits_on_claim.load(Ordering::SeqCst)
            || !self.pending.lock().is_empty()
            || self.ended.lock().is_some()
        {
            self.claim_released.notify_one();
        }
    }

    /// The connection thread found the claim held: waits while it is held, and after its
    /// release for up to [`READ_AGAIN_AFTER`] while no answer is owed, never past `until`
    /// (its next heartbeat duty).
    fn wait_for_claims(&self, until: Instant) {
        let mut released = self.released.lock();
        loop {
            if self.socket.is_closed() {
                return;
            }
            let claimed = self.socket.is_claimed();
            let resume_at = match claimed {
                true => until,
                false => {
                    if !self.pending.lock().is_empty() || self.ended.lock().is_some() {
                        return;
                    }
                    (*released + READ_AGAIN_AFTER).min(until)
                }
            };
            if Instant::now() >= resume_at {
                return;
            }
            self.waits_on_claim.store(claimed, Ordering::SeqCst);
            self.claim_released.wait_until(&mut released, resume_at);
            self.waits_on_claim.store(false, Ordering::SeqCst);
        }
    }
}

/// Releases a caller's claim to read when dropped (also if the caller unwinds).
struct Claim<'a>(&'a Connection);

/// Closes a draining link once its last answer is in, when a request leaves it (also if the
/// caller unwinds).
struct Leaving<'a>(&'a Connection);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.0.close_if_drained();
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.0.release_claim();
    }
}

/// A reply as routed to its caller.
#[derive(Debug)]
enum Routed {
    /// A call's result as its JSON text ([`wire::parse_call_result`]).
    CallResult(String),
    /// Any other reply, read by [`wire::parse_reply`].
    Reply(wire::LinkReply),
}

impl RunnerLink for DialLink {
    fn send(&self, params: &Value) -> Result<LinkAnswer, LinkFailure> {
        let (routed, instance) = self.exchange(params)?;
        let output = match routed {
            Routed::Reply(reply) => reply.output,
            Routed::CallResult(text) => ToolOutput::received(
                true,
                serde_json::from_str(&text).map_err(|_| lost_answer())?,
            ),
        };
        Ok(LinkAnswer {
            output,
            instance: Some(instance),
            held_link_secret: false,
        })
    }

    fn send_call(&self, params: &Value) -> Result<CallAnswer, LinkFailure> {
        Ok(match self.exchange(params)? {
            (Routed::CallResult(text), _) => CallAnswer::Result(text),
            (Routed::Reply(reply), instance) => CallAnswer::Output(LinkAnswer {
                output: reply.output,
                instance: Some(instance),
                held_link_secret: false,
            }),
        })
    }
}

/// The failure of an answer that is not the request's (outcome unknown).
fn lost_answer() -> LinkFailure {
    LinkFailure::Lost("the answer is of another action's kind".into())
}

impl DialLink {
    /// Sends one request on the current link and waits for its reply, checked to be of the
    /// request's action kind; the reply and the runner instance of the link.
    fn exchange(&self, params: &Value) -> Result<(Routed, String), LinkFailure> {
        let Some(connection) = self.current.read().clone() else {
            return Err(LinkFailure::NotSent("the runner is not connected".into()));
        };
        let Some(operation) = Operation::of_params(params) else {
            return Err(LinkFailure::NotSent("not an action a link carries".into()));
        };
        let kind = operation.carries(params);
        if connection.socket.is_closed() {
            return Err(LinkFailure::NotSent("the link is closed".into()));
        }
        if connection.draining.load(Ordering::SeqCst) {
            return Err(LinkFailure::NotSent("the front is stopping".into()));
        }
        let _leaving = Leaving(&connection);
        // No other caller reads: this one reads its own answer. What the link holds already
        // is read first, so a link the runner closed is found before anything is written.
        let claim = connection.socket.claim().then(|| Claim(&connection));
        if claim.is_some() {
            if let Err(why) = connection.drain() {
                return Err(LinkFailure::NotSent(format!("the link ended: {why}")));
            }
        }
        let id = connection.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = bounded(1);
        connection.pending.lock().insert(id, tx);
        // Owed from here: a drain that began meanwhile either sees this request or is seen.
        if connection.draining.load(Ordering::SeqCst) {
            connection.pending.lock().remove(&id);
            return Err(LinkFailure::NotSent("the front is stopping".into()));
        }
        // The request's trace id goes on to the runner, under a new parent id.
        let trace = webcodex_plugin_host::current_trace().map(|trace| trace.child());
        let frame = wire::encode_request(id, operation, params, trace.as_ref());
        let deadline = Instant::now() + ANSWER_WITHIN;
        match connection.socket.send_text(frame) {
            Ok(()) => {}
            // The link ended before this frame started (it waited behind a write that
            // failed, or the link was closed meanwhile): nothing was sent.
            Err(SendError::Closed) => {
                connection.pending.lock().remove(&id);
                connection.end();
                return Err(LinkFailure::NotSent(
                    "the link ended before the request was written".into(),
                ));
            }
            Err(SendError::Failed(e)) => {
                connection.pending.lock().remove(&id);
                connection.end();
                // Some of the frame may have gone out: the outcome is unknown.
                return Err(LinkFailure::Lost(format!(
                    "writing the request failed: {e}"
                )));
            }
        }
        let reply = if claim.is_some() {
            connection.read_own_answer(id, &rx, deadline)?
        } else {
            match rx.recv_deadline(deadline) {
                Ok(reply) => reply,
                Err(RecvTimeoutError::Timeout) => {
                    connection.pending.lock().remove(&id);
                    return Err(LinkFailure::Lost("no answer in time".into()));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(LinkFailure::Lost("the link ended before the answer".into()))
                }
            }
        };
        let replied = match &reply {
            Routed::CallResult(_) => Some(ActionKind::Call),
            Routed::Reply(reply) => reply.kind,
        };
        if replied.is_some() && replied != kind {
            return Err(lost_answer());
        }
        Ok((reply, connection.instance.clone()))
    }
}

impl LinkRegistry {
    /// The links of `gateway`'s dial-out runners (none yet), authenticated by the runner
    /// tokens of `tokens` (the server's, replaced in place on a reload).
    pub(crate) fn new(gateway: Arc<Gateway>, tokens: Arc<RwLock<Tokens>>) -> LinkRegistry {
        LinkRegistry {
            gateway,
            tokens,
            runners: Mutex::new(HashMap::new()),
            serial: AtomicU64::new(1),
            heartbeat: Heartbeat::LINK,
            draining: AtomicBool::new(false),
        }
    }

    /// This registry with another heartbeat (tests only: the link's is fixed).
    #[cfg(test)]
    fn with_heartbeat(mut self, heartbeat: Heartbeat) -> LinkRegistry {
        self.heartbeat = heartbeat;
        self
    }

    /// Serves one upgraded connection of runner `runner` (authenticated with `token`) until
    /// the link ends: the hello, the welcome, then the answers and the heartbeat.
    pub(crate) fn serve(&self, runner: &str, token: &str, stream: TcpStream, leftover: Vec<u8>) {
        let peer = stream
            .peer_addr()
            .map_or_else(|_| "an unknown address".into(), |a| a.to_string());
        let tcp = SharedTcp::new(stream);
        let ws =
            WebSocket::from_partially_read(tcp.clone(), leftover, Role::Server, Some(config()));
        let Ok(socket) = LinkSocket::new(ws, tcp) else {
            return;
        };
        let hello = match socket.next(Instant::now() + HELLO_WITHIN) {
            Next::Text(text) => wire::parse_hello(&text),
            Next::Quiet => Err(wire::FrameError("no hello in time".into())),
            _ => Err(wire::FrameError("the first frame is not a hello".into())),
        };
        let hello = match hello.and_then(|hello| evict::check_hello_name(hello, token)) {
            Ok(hello) => hello,
            Err(e) => {
                log::warn!("runner link `{runner}`: refused: {e}");
                return socket.close(CloseCode::Policy, &e.0);
            }
        };
        let Some(connection) = self.attach(runner, token, hello, socket, peer) else {
            return;
        };
        if let Some(observer) = webcodex_plugin_host::installed_observer() {
            observer.link_accepted(runner);
        }
        log::info!("runner link `{runner}`: connected from {}", connection.peer);
        let why = read_answers(&connection, self.heartbeat);
        log::info!("runner link `{runner}`: ended ({why})");
        connection.end();
        self.detach(runner, &connection);
    }

    /// Welcomes `runner` on `socket` (from `peer`) and makes it the runner's current link;
    /// closes the link it replaces, saying so in the log and in the close frame the replaced
    /// runner reads. `None`, with the link closed, when `token` no longer authenticates as
    /// `runner` (the tokens were replaced during the hello), the front is stopping, or the
    /// welcome could not be written.
    ///
    /// The welcome is written under the registry's lock, before the link can carry a request:
    /// a runner that has read its welcome is listed, and reads no request before it. A fresh
    /// connection's send buffer is empty, so the small frame does not wait on the peer.
    fn attach(
        &self,
        runner: &str,
        token: &str,
        hello: wire::Hello,
        socket: LinkSocket<SharedTcp>,
        peer: String,
    ) -> Option<Arc<Connection>> {
        let mut runners = self.runners.lock();
        if self.draining.load(Ordering::SeqCst) {
            drop(runners);
            socket.close(CloseCode::Away, "the front is stopping");
            return None;
        }
        let Some(max_in_flight) = evict::runner_cap(&self.tokens.read(), runner, token) else {
            drop(runners);
            log::warn!("runner link `{runner}`: closed: {}", evict::REVOKED);
            socket.close(CloseCode::Policy, evict::REVOKED);
            return None;
        };
        if let Err(e) = socket.send_text(wire::welcome(runner)) {
            drop(runners);
            log::info!("runner link `{runner}`: the welcome could not be written: {e}");
            socket.shutdown();
            return None;
        }
        let connection = Arc::new(Connection {
            runner: runner.to_string(),
            serial: self.serial.fetch_add(1, Ordering::SeqCst),
            peer,
            socket,
            instance: hello.instance.clone(),
            token: token.to_string(),
            draining: AtomicBool::new(false),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            last_frame: Mutex::new(Instant::now()),
            released: Mutex::new(Instant::now()),
            claim_released: Condvar::new(),
            waits_on_claim: AtomicBool::new(false),
            ended: Mutex::new(None),
        });
        let same_instance = runners
            .get(runner)
            .is_some_and(|entry| entry.instance == hello.instance);
        let mut replaced_link = None;
        if !same_instance {
            let link = Arc::new(DialLink {
                current: RwLock::new(None),
            });
            let name = hello.name.clone().unwrap_or_else(|| runner.to_string());
            let remote = RemoteRunner::new(runner, &name, Box::new(ArcLink(link.clone())))
                .with_link_secret(token)
                .with_max_in_flight(max_in_flight);
            let replaced = runners.insert(
                runner.to_string(),
                Entry {
                    instance: hello.instance,
                    remote: Arc::new(remote),
                    link,
                },
            );
            replaced_link = replaced.and_then(|old| old.link.current.write().take());
        }
        let entry = runners.get(runner).expect("inserted above");
        // The same instance keeps its runner; its token entry's cap may have changed.
        entry.remote.set_max_in_flight(max_in_flight);
        if let Some(old) = entry.link.current.write().replace(connection.clone()) {
            replaced_link = Some(old);
        }
        // The same runner (same instance) keeps its place, so its bindings stay valid.
        self.gateway.insert_remote(entry.remote.clone());
        drop(runners);
        if let Some(old) = replaced_link {
            replace(runner, &old, &connection, same_instance);
        }
        Some(connection)
    }

    /// Takes `runner` out of the gateway when `connection` is still its current link.
    fn detach(&self, runner: &str, connection: &Arc<Connection>) {
        let runners = self.runners.lock();
        let Some(entry) = runners.get(runner) else {
            return;
        };
        let mut current = entry.link.current.write();
        if current
            .as_ref()
            .is_some_and(|c| c.serial == connection.serial)
        {
            *current = None;
            self.gateway.remove_remote(runner, &entry.remote);
        }
    }
}

/// Ends `old`, the link of `runner` that `new` replaced: logged (at warn when another runner
/// process took the id: two runners that share one runner token take it from each other in
/// turn), and the close frame tells the replaced runner why.
fn replace(runner: &str, old: &Connection, new: &Connection, same_instance: bool) {
    if same_instance {
        log::info!(
            "runner link `{runner}`: the runner dialled again from {}; its link from {} was \
             replaced",
            new.peer,
            old.peer
        );
    } else {
        log::warn!(
            "runner link `{runner}`: runner `{runner}` replaced its link from {} by a new \
             runner process from {}; if two runners use one runner token they take the link \
             from each other in turn: give each runner a token and runner id of its own",
            old.peer,
            new.peer
        );
    }
    let mut reason = format!(
        "replaced by a newer link of this runner token from {}",
        new.peer
    );
    // A close frame's reason is at most 123 bytes.
    while reason.len() > 123 {
        reason.pop();
    }
    old.close(CloseCode::Policy, &reason);
    old.end();
}

/// A shared [`DialLink`] as the box a [`RemoteRunner`] owns.
struct ArcLink(Arc<DialLink>);

impl RunnerLink for ArcLink {
    fn send(&self, params: &Value) -> Result<LinkAnswer, LinkFailure> {
        self.0.send(params)
    }

    fn send_call(&self, params: &Value) -> Result<CallAnswer, LinkFailure> {
        self.0.send_call(params)
    }

    fn instance(&self) -> Option<String> {
        let current = self.0.current.read();
        current.as_ref().map(|c| c.instance.clone())
    }
}

/// Reads the link until it ends: routes each answer to its caller and keeps the heartbeat.
/// While a caller holds the claim to read, it only keeps the heartbeat. Returns why it ended,
/// for the log.
fn read_answers(connection: &Connection, heartbeat: Heartbeat) -> String {
    let socket = &connection.socket;
    let mut last_ping = Instant::now();
    loop {
        if let Some(why) = connection.ended.lock().take() {
            return why;
        }
        let now = Instant::now();
        let dead_at = *connection.last_frame.lock() + heartbeat.dead_after;
        if now >= dead_at {
            let why = format!("no frame for {} s", heartbeat.dead_after.as_secs());
            socket.close(CloseCode::Away, &why);
            return why;
        }
        let ping_at = last_ping + heartbeat.ping_every;
        if now >= ping_at {
            if let Err(e) = socket.ping() {
                return format!("the ping could not be written: {e}");
            }
            last_ping = now;
            continue;
        }
        let until = ping_at.min(dead_at);
        match socket.next_unless_claimed(until) {
            Some(next) => {
                if let Err(why) = connection.take(next) {
                    return why;
                }
            }
            // A caller reads.
            None => connection.wait_for_claims(until),
        }
    }
}

/// Hands one answer to the request waiting for it. An answer that is not a reply, or names an
/// id this link never sent, breaks the protocol (`Err`: close the link); one whose caller
/// stopped waiting is dropped.
fn route_answer(connection: &Connection, text: &str) -> Result<(), String> {
    let (id, routed) = match wire::parse_call_result(text) {
        Some((id, result)) => (id, Routed::CallResult(result.to_owned())),
        None => {
            let reply = wire::parse_reply(text).map_err(|e| e.0)?;
            (reply.id, Routed::Reply(reply))
        }
    };
    let waiting = connection.pending.lock().remove(&id);
    match waiting {
        Some(tx) => {
            let _ = tx.try_send(routed);
            Ok(())
        }
        None if id >= connection.next_id.load(Ordering::SeqCst) || id == 0 => {
            Err("an answer for a request that was never sent".into())
        }
        None => {
            log::debug!("runner link: a late answer was dropped");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
