//! Accepting connections and serving each on a thread of its own, at most
//! [`MAX_CONNECTIONS`] at once, every phase bounded by the deadlines of [`super::wire`].
//!
//! A listener's [`Bounds`] say how many connections it serves at once (in all and per peer
//! address), how long a request head may take and whether connections are kept alive: the
//! serving port's are [`Bounds::SERVING`], the admin listener's the much smaller
//! [`Bounds::ADMIN`]. With the admin bounds a connection beyond them is not refused at once: it
//! waits, without a thread, for its first bytes (`reserve`), and one whose first bytes are a
//! `GET` of `/healthz` or `/readyz` is served in the one slot kept for it.

mod reserve;

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use super::tokens::TokenMemo;
use super::wire::{BodyError, Conn, Framing, Head, HeadError, KEEP_ALIVE_IDLE, REQUEST_DEADLINE};
use webcodex_plugin_host::WORKER_STACK;
use webcodex_plugin_host::{installed_observer, Observer};

/// The most connections served at once (each on its own thread); beyond it a new connection is
/// answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 256;
/// The pause after a failed `accept` (e.g. out of file descriptors) before the next one.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

use reserve::Reserve;

/// The bounds of one listener's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The most connections served at once (the reserved health slot aside).
    pub max_connections: usize,
    /// The most connections served at once for one peer address, if bounded.
    pub per_peer: Option<usize>,
    /// The time for a request's first byte, from the accept or the end of the last request.
    pub idle: Duration,
    /// The time for the whole request head, counted from the same instant.
    pub head: Duration,
    /// The time for the whole request, its answer included, counted from the same instant.
    pub request: Duration,
    /// Whether a connection may carry more than one request.
    pub keep_alive: bool,
    /// Whether a connection beyond the bounds whose first bytes are a health request (`GET
    /// /healthz` or `GET /readyz`) is still served, in one slot kept for it.
    pub health_reserve: bool,
}

impl Bounds {
    /// The serving port's: [`MAX_CONNECTIONS`], [`KEEP_ALIVE_IDLE`] for a first byte,
    /// [`REQUEST_DEADLINE`] for the head and the request, keep-alive.
    pub const SERVING: Bounds = Bounds {
        max_connections: MAX_CONNECTIONS,
        per_peer: None,
        idle: KEEP_ALIVE_IDLE,
        head: REQUEST_DEADLINE,
        request: REQUEST_DEADLINE,
        keep_alive: true,
        health_reserve: false,
    };

    /// The admin listener's: at most 32 connections, 4 per peer address, 1 s from the accept to
    /// the end of the request head, the answer written within 2 s of the accept, one request a
    /// connection, and the health slot.
    pub const ADMIN: Bounds = Bounds {
        max_connections: 32,
        per_peer: Some(4),
        idle: Duration::from_secs(1),
        head: Duration::from_secs(1),
        request: Duration::from_secs(2),
        keep_alive: false,
        health_reserve: true,
    };
}

/// One request on a connection: its head, its body (read on demand) and its one response.
pub struct Exchange<'c> {
    conn: &'c mut Conn,
    head: Head,
    deadline: Instant,
    body: BodyState,
    /// Set once the response is written; `Some(true)` when the connection stays open.
    responded: Option<bool>,
    stopping: &'c AtomicBool,
    /// Headers added to the response, whatever answers (e.g. the CORS headers of an origin).
    extra_headers: Vec<(&'static str, String)>,
    /// Whether the process's observer hears of this listener's answers.
    observed: bool,
    /// Whether the connection may stay open for another request.
    keep_alive: bool,
    /// Marks this connection as upgraded (a runner link, which its handler ends on a stop).
    on_upgrade: &'c dyn Fn(),
    /// The token this connection was last accepted with (kept from request to request).
    token_memo: &'c mut TokenMemo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyState {
    Unread,
    Read,
    Failed,
}

impl Exchange<'_> {
    /// The request line and header fields.
    pub(crate) fn head(&self) -> &Head {
        &self.head
    }

    /// The request's method.
    pub fn method(&self) -> &str {
        self.head.method()
    }

    /// The request target's path (a query string cut off).
    pub fn path(&self) -> &str {
        self.head.path()
    }

    /// The head, and the connection's memory of the token it was last accepted with.
    pub(crate) fn head_and_token_memo(&mut self) -> (&Head, &mut TokenMemo) {
        (&self.head, self.token_memo)
    }

    /// Reads the whole body (at most `max` bytes) before the request's deadline, first writing
    /// `100 Continue` when the client waits for it. Call at most once.
    pub fn read_body(&mut self, max: usize) -> Result<Vec<u8>, BodyError> {
        if self.body != BodyState::Unread {
            return Err(BodyError::Broken);
        }
        let framing = self.framing();
        if self.head.expect_continue() && framing != Framing::Length(0) {
            if framing.exceeds(max) {
                return Err(BodyError::TooLarge);
            }
            if self.conn.write_continue().is_err() {
                self.body = BodyState::Failed;
                return Err(BodyError::Broken);
            }
        }
        let read = self.conn.read_body(framing, max, self.deadline);
        self.body = match read {
            Ok(_) => BodyState::Read,
            // Nothing of a body declared too large was read: it may still be dropped unread.
            Err(BodyError::TooLarge) if matches!(framing, Framing::Length(_)) => BodyState::Unread,
            Err(_) => BodyState::Failed,
        };
        read
    }

    /// Answers `101 Switching Protocols` with `headers` and hands the connection over (a clone
    /// of its stream and the bytes read past the head): it closes when the handler returns.
    /// A stop of the server leaves it to the handler, as a request being handled (a runner
    /// link is drained and closed by the front's link registry).
    pub(crate) fn upgrade(
        &mut self,
        headers: &[(&str, &str)],
    ) -> std::io::Result<(TcpStream, Vec<u8>)> {
        self.responded = Some(false);
        let upgraded = self.conn.upgrade(headers)?;
        (self.on_upgrade)();
        Ok(upgraded)
    }

    /// Adds `headers` to the response this request gets, whichever route writes it.
    pub fn add_response_headers(&mut self, headers: Vec<(&'static str, String)>) {
        self.extra_headers.extend(headers);
    }

    /// Writes the response (once; later calls are ignored). The connection stays open for the
    /// next request when the client wants that, the server is not stopping, and the body was
    /// read or can be read and dropped. The answer to `HEAD` has the same head (its
    /// `Content-Length` is that of `body`) and no body.
    pub fn respond(&mut self, status: u16, headers: &[(&str, &str)], body: &[u8]) {
        if self.responded.is_some() {
            return;
        }
        let body_done = match self.body {
            BodyState::Read => true,
            BodyState::Failed => false,
            BodyState::Unread => {
                !self.head.has_body()
                    || (!self.head.expect_continue() && Conn::discardable(self.framing()))
            }
        };
        let stopping = self.stopping.load(Ordering::SeqCst);
        if let Some(observer) = self.observer() {
            observer.http_answered(self.head.path(), status);
        }
        let keep_alive = self.keep_alive && self.head.keep_alive() && !stopping && body_done;
        let mut all = headers.to_vec();
        all.extend(self.extra_headers.iter().map(|(k, v)| (*k, v.as_str())));
        let send_body = self.head.method() != "HEAD";
        let written = self
            .conn
            .write_answer(status, &all, body, keep_alive, send_body);
        if let Err(e) = &written {
            log::debug!("http: writing a response failed: {e}");
        }
        self.responded = Some(keep_alive && written.is_ok());
    }

    fn framing(&self) -> Framing {
        self.head.framing()
    }

    fn observer(&self) -> Option<&'static dyn Observer> {
        self.observed.then(installed_observer).flatten()
    }
}

/// What a server does with each request: route it and respond.
pub trait Handler: Send + Sync + 'static {
    /// Answers one request (through [`Exchange::respond`]).
    fn handle(&self, exchange: &mut Exchange<'_>);
}

/// The listening socket and the connections being served.
pub struct Listener {
    socket: TcpListener,
    local_addr: SocketAddr,
    stopping: AtomicBool,
    open: Mutex<Open>,
    /// Whether the process's observer hears of this listener's connections and answers (the
    /// serving port: yes; the admin port: no, a scrape is not traffic).
    observed: bool,
    /// The socket was passed by a service manager, which keeps it for the next start: stopping
    /// must not shut it down.
    shared: bool,
    bounds: Bounds,
}

/// The open connections, each with a clone of its stream (to end it on stop) and whether it
/// is handling a request (then it is left to finish).
#[derive(Default)]
struct Open {
    next: u64,
    streams: HashMap<u64, (TcpStream, bool)>,
    stopping: bool,
    /// The connections of each peer address, when [`Bounds::per_peer`] bounds them.
    peers: HashMap<IpAddr, usize>,
    /// The connection in the reserved health slot, if any (not counted in the bounds).
    reserved: Option<u64>,
}

impl Open {
    /// True when a connection from `peer` is beyond `bounds`.
    fn full(&self, bounds: &Bounds, peer: Option<IpAddr>) -> bool {
        let served = self.streams.len() - usize::from(self.reserved.is_some());
        let peer_full = match (bounds.per_peer, peer) {
            (Some(max), Some(peer)) => self.peers.get(&peer).is_some_and(|n| *n >= max),
            _ => false,
        };
        served >= bounds.max_connections || peer_full
    }
}

impl Listener {
    /// Binds `addr`.
    pub fn bind(addr: impl std::net::ToSocketAddrs) -> io::Result<Listener> {
        Listener::from_socket(TcpListener::bind(addr)?)
    }

    /// Serves on a socket bound (and listening) already, e.g. one inherited from a service
    /// manager.
    pub fn from_socket(socket: TcpListener) -> io::Result<Listener> {
        let local_addr = socket.local_addr()?;
        Ok(Listener {
            socket,
            local_addr,
            stopping: AtomicBool::new(false),
            open: Mutex::default(),
            observed: true,
            shared: false,
            bounds: Bounds::SERVING,
        })
    }

    /// Serves on a socket a service manager passed: like [`Listener::from_socket`], but
    /// stopping wakes the acceptor with a connection instead of shutting the socket down
    /// (the manager holds it too, for the next start). The socket is made blocking.
    pub fn inherited(socket: TcpListener) -> io::Result<Listener> {
        socket.set_nonblocking(false)?;
        let mut listener = Listener::from_socket(socket)?;
        listener.shared = true;
        Ok(listener)
    }

    /// This listener's connections and answers are not reported to the process's observer.
    pub fn unobserved(mut self) -> Listener {
        self.observed = false;
        self
    }

    /// Serves with `bounds` instead of [`Bounds::SERVING`].
    pub fn bounded(mut self, bounds: Bounds) -> Listener {
        self.bounds = bounds;
        self
    }

    fn observer(&self) -> Option<&'static dyn Observer> {
        self.observed.then(installed_observer).flatten()
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting, closes every connection that is not handling a request (idle, or
    /// reading a head) and lets the others finish their request and close.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        {
            let mut open = self.open.lock();
            open.stopping = true;
            for (stream, busy) in open.streams.values() {
                if !*busy {
                    let _ = stream.shutdown(Shutdown::Read);
                }
            }
        }
        self.wake_acceptor();
    }

    /// Ends a blocked `accept`: on Linux, shutting a listening socket down makes `accept` fail
    /// at once; elsewhere a connection to ourselves does it.
    fn wake_acceptor(&self) {
        #[cfg(target_os = "linux")]
        if !self.shared && rustix::net::shutdown(&self.socket, rustix::net::Shutdown::Both).is_ok()
        {
            return;
        }
        let mut addr = self.local_addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
    }

    /// Accepts until [`Listener::stop`], serving each connection with `handler` on a thread of
    /// its own, then waits for every connection to end.
    pub fn run(self: &Arc<Self>, handler: Arc<dyn Handler>) {
        let (alive, all_ended) = crossbeam_channel::bounded::<()>(0);
        let reserve = self.start_reserve(&handler, &alive);
        while !self.stopping.load(Ordering::SeqCst) {
            match self.socket.accept() {
                Ok((stream, peer)) => self.admit(stream, peer, &handler, &alive, reserve.as_ref()),
                Err(e) => {
                    if self.stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    log::warn!("http: accepting a connection failed: {e}");
                    std::thread::sleep(ACCEPT_BACKOFF);
                }
            }
        }
        // The reserve's thread ends, closing the connections that wait in it.
        drop(reserve);
        drop(alive);
        wait_all_ended(&all_ended);
    }

    /// The waiting room of connections beyond the bounds, when the bounds keep a health slot.
    fn start_reserve(
        self: &Arc<Self>,
        handler: &Arc<dyn Handler>,
        alive: &Sender<()>,
    ) -> Option<Reserve> {
        if !self.bounds.health_reserve {
            return None;
        }
        Reserve::start(self.clone(), handler.clone(), alive.clone())
            .map_err(|e| log::warn!("http: no reserved health slot on this listener: {e}"))
            .ok()
    }

    /// True while the reserved health slot is free (and the listener serves).
    fn reserved_free(&self) -> bool {
        let open = self.open.lock();
        !open.stopping && open.reserved.is_none()
    }

    /// A connection for `stream` in the reserved health slot; `None` while the slot is taken
    /// or when the listener stops.
    fn reserved_connection(
        self: &Arc<Self>,
        stream: &TcpStream,
        accepted: Instant,
        alive: &Sender<()>,
    ) -> Option<Connection> {
        let mut open = self.open.lock();
        if open.stopping || open.reserved.is_some() {
            return None;
        }
        let clone = stream.try_clone().ok()?;
        open.next += 1;
        let id = open.next;
        open.streams.insert(id, (clone, false));
        open.reserved = Some(id);
        drop(open);
        if let Some(observer) = self.observer() {
            observer.connection_opened();
        }
        Some(Connection {
            listener: self.clone(),
            id,
            peer: None,
            accepted,
            _alive: alive.clone(),
        })
    }

    /// Starts serving `stream`; beyond the bounds, hands it to the reserve (when there is one)
    /// or answers 503 and closes it.
    fn admit(
        self: &Arc<Self>,
        stream: TcpStream,
        peer: SocketAddr,
        handler: &Arc<dyn Handler>,
        alive: &Sender<()>,
        reserve: Option<&Reserve>,
    ) {
        let accepted = Instant::now();
        let peer = self.bounds.per_peer.map(|_| peer.ip().to_canonical());
        let id = {
            let mut open = self.open.lock();
            if open.stopping {
                drop(open);
                return refuse(stream);
            }
            if open.full(&self.bounds, peer) {
                drop(open);
                return match reserve {
                    Some(reserve) => reserve.offer(stream, accepted),
                    None => refuse(stream),
                };
            }
            let Ok(clone) = stream.try_clone() else {
                drop(open);
                return refuse(stream);
            };
            open.next += 1;
            let id = open.next;
            open.streams.insert(id, (clone, false));
            if let Some(peer) = peer {
                *open.peers.entry(peer).or_default() += 1;
            }
            id
        };
        if let Some(observer) = self.observer() {
            observer.connection_opened();
        }
        let connection = Connection {
            listener: self.clone(),
            id,
            peer,
            accepted,
            _alive: alive.clone(),
        };
        self.spawn_connection(connection, stream, handler);
    }

    /// Serves `stream` on a thread of its own as `connection` (refused when no thread starts).
    fn spawn_connection(
        &self,
        connection: Connection,
        stream: TcpStream,
        handler: &Arc<dyn Handler>,
    ) {
        let handler = handler.clone();
        // The stream comes back when no thread can be started.
        let slot = Arc::new(Mutex::new(Some(stream)));
        let moved = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("wc-http-conn".into())
            .stack_size(WORKER_STACK)
            .spawn(move || {
                if let Some(stream) = moved.lock().take() {
                    connection.serve(Conn::new(stream), &*handler);
                }
            });
        if let Err(e) = spawned {
            log::warn!("http: no thread for a connection: {e}");
            if let Some(stream) = slot.lock().take() {
                refuse(stream);
            }
        }
    }

    /// Marks connection `id` as handling a request; false when the server is stopping.
    fn begin_request(&self, id: u64) -> bool {
        let mut open = self.open.lock();
        if open.stopping {
            return false;
        }
        if let Some(entry) = open.streams.get_mut(&id) {
            entry.1 = true;
        }
        true
    }

    /// Marks connection `id` as upgraded (a runner link): it stays counted as handling a
    /// request, so a stop leaves it to its handler (which drains the link and closes it).
    fn mark_upgraded(&self, id: u64) {
        if let Some(entry) = self.open.lock().streams.get_mut(&id) {
            entry.1 = true;
        }
    }

    /// Marks connection `id` as idle again; false when the server is stopping.
    fn end_request(&self, id: u64) -> bool {
        let mut open = self.open.lock();
        if let Some(entry) = open.streams.get_mut(&id) {
            entry.1 = false;
        }
        !open.stopping
    }
}

/// Waits until every connection thread has dropped its [`Connection`] (and so its sender).
fn wait_all_ended(all_ended: &Receiver<()>) {
    // Nothing is ever sent: this returns when the last sender is gone.
    let _ = all_ended.recv();
}

/// The answer to a connection beyond [`MAX_CONNECTIONS`]: 503 `gateway_saturated`, then close.
fn refuse(stream: TcpStream) {
    // A new connection's send buffer is empty: this small write does not wait for the client.
    let body = super::bodies::json_bytes(&super::bodies::saturated_body());
    let mut conn = Conn::new(stream);
    let headers = [("Content-Type", "application/json"), ("Retry-After", "1")];
    let _ = conn.write_response(503, &headers, &body, false);
    // Not on the acceptor's time: close at once (a client that already sent its request may
    // see a reset instead of the answer).
    drop(conn);
}

/// One served connection: removed from the open set when dropped (also on a panic).
struct Connection {
    listener: Arc<Listener>,
    id: u64,
    /// The peer address it counts for, when the bounds count them.
    peer: Option<IpAddr>,
    /// When it was accepted: the first request's deadlines count from there.
    accepted: Instant,
    _alive: Sender<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        let mut open = self.listener.open.lock();
        open.streams.remove(&self.id);
        if open.reserved == Some(self.id) {
            open.reserved = None;
        }
        if let Some(peer) = self.peer {
            if let Some(n) = open.peers.get_mut(&peer) {
                *n -= 1;
                if *n == 0 {
                    open.peers.remove(&peer);
                }
            }
        }
        drop(open);
        if let Some(observer) = self.listener.observer() {
            observer.connection_closed();
        }
    }
}

impl Connection {
    /// Serves requests on `conn` until the client closes, stalls past a deadline, asks to
    /// close, or the server stops.
    fn serve(self, mut conn: Conn, handler: &dyn Handler) {
        let mut token_memo = TokenMemo::default();
        let bounds = self.listener.bounds;
        let mut ready = self.accepted;
        loop {
            let deadline = ready + bounds.request;
            let head = match conn.read_head(ready + bounds.idle, ready + bounds.head) {
                Ok(head) => head,
                Err(error) => return answer_bad_head(conn, error, deadline),
            };
            if !self.listener.begin_request(self.id) {
                return;
            }
            let mut exchange = Exchange {
                conn: &mut conn,
                head,
                deadline,
                body: BodyState::Unread,
                responded: None,
                stopping: &self.listener.stopping,
                extra_headers: Vec::new(),
                observed: self.listener.observed,
                keep_alive: bounds.keep_alive,
                on_upgrade: &|| self.listener.mark_upgraded(self.id),
                token_memo: &mut token_memo,
            };
            let handled = catch_unwind(AssertUnwindSafe(|| handler.handle(&mut exchange)));
            if handled.is_err() {
                log::error!("http: a request handler panicked");
            }
            // A handler that did not answer (a bug): 500.
            exchange.respond(500, &[], b"");
            let keep_alive = self.listener.end_request(self.id) && exchange.responded == Some(true);
            let unread = exchange.body == BodyState::Unread && exchange.head.has_body();
            let framing = exchange.framing();
            if !keep_alive {
                return conn.close(deadline);
            }
            if unread && !conn.discard_body(framing, deadline) {
                return conn.close(deadline);
            }
            ready = Instant::now();
        }
    }
}

/// Answers a head that could not be read (when it deserves an answer), then closes.
fn answer_bad_head(mut conn: Conn, error: HeadError, deadline: Instant) {
    // Closed by the client, or idle: nothing to answer, nothing to linger for.
    let Some(status) = error.status() else {
        return;
    };
    let body = super::bodies::json_bytes(&super::bodies::transport_failure_body(match error {
        HeadError::TimedOut => "the request head did not arrive in time",
        HeadError::TooLarge => "the request head is too large",
        HeadError::Unsupported => "only the chunked transfer coding is supported",
        _ => "not an HTTP/1.1 request",
    }));
    let headers = [("Content-Type", "application/json")];
    let _ = conn.write_response(status, &headers, &body, false);
    conn.close(deadline);
}
