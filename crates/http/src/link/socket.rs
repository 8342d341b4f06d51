//! One WebSocket of a runner link, shared by the thread that reads it and the threads that
//! write to it.
//!
//! The WebSocket sits behind a lock that every writer takes for one whole message, so frames
//! never interleave. The reader never holds the lock while it waits: it waits for bytes on the
//! TCP socket (the time left until its next heartbeat duty as the timeout), then takes the lock
//! and reads what has arrived without waiting, one message at a time, until nothing complete is
//! left. So an idle link costs no wake-up besides its heartbeat, and a writer waits at most for
//! one read that does not wait. The same works under TLS: the wait sees the encrypted bytes
//! arrive on the TCP socket below. On Unix the wait is one `poll(2)` and the reads pass
//! `MSG_DONTWAIT` (three system calls a message); elsewhere the wait is a `peek` with a read
//! timeout and the socket is set non-blocking for the reads.
//!
//! A writer may also claim the reading (the front's caller that reads its own answer): the
//! claim is taken under the lock, before the request is written, and a reader that yields to
//! claims ([`LinkSocket::next_unless_claimed`]) checks it under the lock before each read, so
//! it reads nothing more until the claim is released.
//!
//! The reader's wait ends at a deadline, not after a duration: bytes that arrive without
//! completing a message (a peer that dribbles a frame, a TLS record split in two) do not start
//! the wait again, so they cannot postpone the heartbeat or the dead-link check.
//!
//! A link ends once, and a writer learns it under the lock: a write that fails (a peer that
//! does not read, after [`WRITE_TIMEOUT`]) ends the link before the lock is released, so a
//! writer queued behind it writes nothing and is told its message never started
//! ([`SendError::Closed`]). Closing never waits a second write bound: the close frame is
//! written only when the lock comes at once (a reader holds it for a moment at most), within
//! [`CLOSE_WRITE_TIMEOUT`]; a writer blocked on the peer is cut short instead.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::frame::CloseFrame;
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{Error as WsError, Message, WebSocket};

use super::wire::MAX_FRAME_BYTES;

/// How long one message may take to be written to a peer that does not read (the whole
/// message: a peer that takes a little now and then does not stretch it).
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long [`LinkSocket::close`] waits for the lock to write its close frame (a reader holds
/// it for one read that does not wait; a writer blocked on the peer, up to [`WRITE_TIMEOUT`]:
/// then no close frame is written and the connection is ended at once).
const CLOSE_LOCK_WAIT: Duration = Duration::from_millis(250);

/// How long the close frame may take to be written.
const CLOSE_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// Why a message was not written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SendError {
    /// The link had ended before any of the message was written.
    Closed,
    /// Writing failed; some of the message may have gone out. The link is ended.
    Failed(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Closed => f.write_str("the link is closed"),
            SendError::Failed(why) => f.write_str(why),
        }
    }
}

/// How much one read of a link takes at most, and the read buffer an idle link holds.
/// `tungstenite` zero-fills this much of its buffer before every read (two a request on each
/// side: the frame, and the read that finds nothing more), so it is kept small: a usual frame
/// (well under 4 KiB) is one read, a 1 MiB one 256.
const READ_SIZE: usize = 4 * 1024;

/// The WebSocket settings of both sides: frames and messages of at most 1 MiB, a small read
/// buffer (an idle link holds little memory), every message written at once.
pub(crate) fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_SIZE)
        .write_buffer_size(0)
        .max_write_buffer_size(MAX_FRAME_BYTES + 64 * 1024)
        .max_message_size(Some(MAX_FRAME_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES))
}

/// What the reader found next.
#[derive(Debug)]
pub(crate) enum Next {
    /// A text message.
    Text(String),
    /// A ping or pong (a pong to a ping is queued and written on the next read).
    Heartbeat,
    /// Nothing arrived within the wait.
    Quiet,
    /// A binary message (the link carries text only).
    Binary,
    /// A frame or message over [`MAX_FRAME_BYTES`].
    TooLarge,
    /// Not a WebSocket frame sequence the RFC allows (bad framing, bad UTF-8, unmasked, …).
    Broken(String),
    /// The peer closed, or the connection ended.
    Ended(String),
}

/// What one read without waiting found.
enum Step {
    /// A message, or the end of the link.
    Message(Next),
    /// A frame that is not a message yet (a close frame, a fragment): read again.
    Again,
    /// Nothing complete has arrived.
    WouldBlock,
    /// A writer holds the claim to read.
    Claimed,
}

/// A TCP socket shared by the WebSocket above it and the reader that waits on it: one file
/// descriptor, not a clone of it (a link costs the front as few descriptors as it can).
#[derive(Clone)]
pub(crate) struct SharedTcp(
    pub(crate) Arc<TcpStream>,
    Arc<AtomicBool>,
    Arc<MessageBound>,
);

/// The bound of the message being written. A blocking write returns part of its bytes only
/// once the socket's write timeout ran out (or a signal came): from then on each write of the
/// message gets what is left of the message's bound, and none once it is spent, so a peer that
/// takes a little now and then cannot stretch one message past its bound (the fast path, a
/// message written whole, costs one clock read).
struct MessageBound {
    /// What the times below count from.
    epoch: Instant,
    /// When the message being written must be out, in nanoseconds from `epoch`.
    deadline: AtomicU64,
    /// A write of the message returned part of its bytes.
    stalled: AtomicBool,
    /// The socket's write timeout was shortened for the message's rest.
    shortened: AtomicBool,
}

impl SharedTcp {
    /// Shares `tcp`.
    pub(crate) fn new(tcp: TcpStream) -> SharedTcp {
        let bound = MessageBound {
            epoch: Instant::now(),
            deadline: AtomicU64::new(0),
            stalled: AtomicBool::new(false),
            shortened: AtomicBool::new(false),
        };
        SharedTcp(
            Arc::new(tcp),
            Arc::new(AtomicBool::new(false)),
            Arc::new(bound),
        )
    }

    /// A message begins (under the WebSocket's lock): its writes must be done within `bound`
    /// (at most the socket's write timeout).
    fn begin_message(&self, bound: Duration) {
        let state = &self.2;
        let deadline = (state.epoch.elapsed() + bound).as_nanos() as u64;
        state.deadline.store(deadline, Ordering::Relaxed);
        state.stalled.store(false, Ordering::Relaxed);
    }

    /// The message's writes are over: later writes (a pong queued by a read) start afresh
    /// with the socket's write timeout.
    fn end_message(&self) {
        let state = &self.2;
        state.stalled.store(false, Ordering::Relaxed);
        if state.shortened.swap(false, Ordering::Relaxed) {
            let _ = self.0.set_write_timeout(Some(WRITE_TIMEOUT));
        }
    }

    /// What is left of the message's bound.
    fn message_time_left(&self) -> Duration {
        let state = &self.2;
        let deadline = Duration::from_nanos(state.deadline.load(Ordering::Relaxed));
        deadline.saturating_sub(state.epoch.elapsed())
    }

    /// Runs `read` (the WebSocket's read, under its lock) with the socket's reads not waiting:
    /// on Unix each read passes `MSG_DONTWAIT` (no `fcntl` before and after, so four system
    /// calls fewer per message), elsewhere the socket is set non-blocking for the call.
    fn reading_without_waiting<T>(&self, read: impl FnOnce() -> T) -> io::Result<T> {
        if cfg!(unix) {
            self.1.store(true, Ordering::Relaxed);
            let out = read();
            self.1.store(false, Ordering::Relaxed);
            return Ok(out);
        }
        self.0.set_nonblocking(true)?;
        let out = read();
        let _ = self.0.set_nonblocking(false);
        Ok(out)
    }
}

impl Read for SharedTcp {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        #[cfg(unix)]
        if self.1.load(Ordering::Relaxed) {
            use rustix::net::{recv, RecvFlags};
            return match recv(&*self.0, buf, RecvFlags::DONTWAIT) {
                Ok((n, _)) => Ok(n),
                Err(e) => Err(e.into()),
            };
        }
        (&*self.0).read(buf)
    }
}

impl Write for SharedTcp {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let state = &self.2;
        if state.stalled.load(Ordering::Relaxed) {
            let left = self.message_time_left();
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the peer took no message within the write bound",
                ));
            }
            self.0.set_write_timeout(Some(left))?;
            state.shortened.store(true, Ordering::Relaxed);
        }
        let written = (&*self.0).write(buf)?;
        if written < buf.len() {
            state.stalled.store(true, Ordering::Relaxed);
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&*self.0).flush()
    }
}

/// A WebSocket over a stream whose TCP socket is `tcp`.
pub(crate) struct LinkSocket<S: Read + Write> {
    ws: Mutex<WebSocket<S>>,
    tcp: SharedTcp,
    closed: AtomicBool,
    /// [`LinkSocket::close`] began: it ends the connection itself once its close frame is
    /// written (a reader that sees the link closed meanwhile must not cut the frame short).
    closing: AtomicBool,
    /// A writer claimed the reading (set only under the lock of `ws`).
    claimed: AtomicBool,
    /// The code and reason of the peer's close frame, once it came (for the log).
    peer_close: Mutex<Option<String>>,
}

impl<S: Read + Write> LinkSocket<S> {
    /// Wraps `ws`, whose bytes travel on `tcp` (the TCP socket below it).
    pub(crate) fn new(ws: WebSocket<S>, tcp: SharedTcp) -> io::Result<LinkSocket<S>> {
        tcp.0.set_write_timeout(Some(WRITE_TIMEOUT))?;
        tcp.0.set_nonblocking(false)?;
        Ok(LinkSocket {
            ws: Mutex::new(ws),
            tcp,
            closed: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            claimed: AtomicBool::new(false),
            peer_close: Mutex::new(None),
        })
    }

    /// Writes one text message. An error leaves the link ended.
    pub(crate) fn send_text(&self, text: String) -> Result<(), SendError> {
        self.send(Message::Text(text.into()))
    }

    /// Writes a ping (the front's heartbeat).
    pub(crate) fn ping(&self) -> Result<(), SendError> {
        self.send(Message::Ping(Vec::new().into()))
    }

    /// Claims the reading when no one holds the claim: true when this call took it (release
    /// it with [`LinkSocket::release_claim`]).
    pub(crate) fn claim(&self) -> bool {
        let _ws = self.ws.lock();
        !self.claimed.swap(true, Ordering::SeqCst)
    }

    /// Gives up the claim [`LinkSocket::claim`] took.
    pub(crate) fn release_claim(&self) {
        self.claimed.store(false, Ordering::SeqCst);
    }

    /// True while a writer holds the claim to read.
    pub(crate) fn is_claimed(&self) -> bool {
        self.claimed.load(Ordering::SeqCst)
    }

    /// Writes `message` unless the link ended, checked again under the lock (a writer that
    /// waited for it behind a failed write writes nothing). A failed write ends the link before
    /// the lock is released.
    fn send(&self, message: Message) -> Result<(), SendError> {
        if self.is_closed() {
            return Err(SendError::Closed);
        }
        let mut ws = self.ws.lock();
        if self.is_closed() {
            return Err(SendError::Closed);
        }
        self.tcp.begin_message(WRITE_TIMEOUT);
        let sent = ws.send(message);
        self.tcp.end_message();
        sent.map_err(|e| {
            self.shutdown();
            SendError::Failed(e.to_string())
        })
    }

    /// True once [`LinkSocket::close`] or [`LinkSocket::shutdown`] ran.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Sends a close frame with `code` and `reason` (best effort: only when the lock comes
    /// within [`CLOSE_LOCK_WAIT`], written within [`CLOSE_WRITE_TIMEOUT`]), then ends the
    /// connection. Nothing is written on the link after this begins.
    pub(crate) fn close(&self, code: CloseCode, reason: &str) {
        let first = !self.closing.swap(true, Ordering::SeqCst);
        if first && !self.closed.swap(true, Ordering::SeqCst) {
            let frame = CloseFrame {
                code,
                reason: reason.to_string().into(),
            };
            if let Some(mut ws) = self.ws.try_lock_for(CLOSE_LOCK_WAIT) {
                self.tcp.begin_message(CLOSE_WRITE_TIMEOUT);
                let _ = self.tcp.0.set_write_timeout(Some(CLOSE_WRITE_TIMEOUT));
                let _ = ws.close(Some(frame));
                let _ = ws.flush();
            }
        }
        let _ = self.tcp.0.shutdown(Shutdown::Both);
    }

    /// Ends the connection at once, without a close frame; a blocked reader wakes. While a
    /// [`LinkSocket::close`] writes its frame, that close ends the connection right after.
    pub(crate) fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if !self.closing.load(Ordering::SeqCst) {
            let _ = self.tcp.0.shutdown(Shutdown::Both);
        }
    }

    /// The next message, waiting for bytes until `until` at the latest ([`Next::Quiet`]
    /// then, whatever arrived meanwhile without completing a message). One thread reads at a
    /// time: the link's reader, or the writer that holds the claim.
    pub(crate) fn next(&self, until: Instant) -> Next {
        self.read_next(until, false)
            .expect("a read that does not yield always ends with a message")
    }

    /// [`LinkSocket::next`], except that it reads nothing while a writer holds the claim:
    /// `None` then (checked under the lock before every read).
    pub(crate) fn next_unless_claimed(&self, until: Instant) -> Option<Next> {
        self.read_next(until, true)
    }

    /// [`LinkSocket::next`] that waits for bytes before it reads: only right after a read
    /// found nothing complete (the claim holder's drain), when no message can be buffered.
    pub(crate) fn next_after_drain(&self, until: Instant) -> Next {
        match self.wait(until) {
            Some(next) => next,
            None => self.next(until),
        }
    }

    fn read_next(&self, until: Instant, yield_to_claim: bool) -> Option<Next> {
        // The peer's close frame came: the end that follows is its close, even when the reply
        // to it cannot be written any more (the peer already went).
        let mut peer_closed = false;
        loop {
            match self.read_once(yield_to_claim, &mut peer_closed) {
                Step::Message(next) => return Some(next),
                Step::Again => continue,
                Step::Claimed => return None,
                Step::WouldBlock => match self.wait(until) {
                    Some(next) => return Some(next),
                    None => continue,
                },
            }
        }
    }

    /// One read of the WebSocket under its lock, without waiting for bytes.
    fn read_once(&self, yield_to_claim: bool, peer_closed: &mut bool) -> Step {
        let read = {
            let mut ws = self.ws.lock();
            if yield_to_claim && self.claimed.load(Ordering::SeqCst) {
                return Step::Claimed;
            }
            match self.tcp.reading_without_waiting(|| ws.read()) {
                Ok(read) => read,
                Err(_) => return Step::Message(Next::Ended("the socket cannot be read".into())),
            }
        };
        Step::Message(match read {
            Ok(Message::Text(text)) => Next::Text(text.to_string()),
            Ok(Message::Binary(_)) => Next::Binary,
            Ok(Message::Ping(_) | Message::Pong(_)) => Next::Heartbeat,
            // The reply is queued; the next read writes it and then reports the end.
            Ok(Message::Close(frame)) => {
                *peer_closed = true;
                *self.peer_close.lock() = frame.map(|f| {
                    let reason: String = f.reason.as_str().escape_debug().take(200).collect();
                    format!("close code {}: {reason}", u16::from(f.code))
                });
                return Step::Again;
            }
            Ok(Message::Frame(_)) => return Step::Again,
            Err(WsError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                return Step::WouldBlock
            }
            Err(WsError::Io(_)) if *peer_closed => self.peer_closed(),
            Err(WsError::Io(e)) => Next::Ended(e.to_string()),
            Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => self.peer_closed(),
            Err(WsError::Capacity(_)) => Next::TooLarge,
            Err(e @ (WsError::Protocol(_) | WsError::Utf8(_))) => Next::Broken(e.to_string()),
            Err(e) => Next::Ended(e.to_string()),
        })
    }

    /// The end of a link the peer closed, with its close frame's code and reason if it sent one.
    fn peer_closed(&self) -> Next {
        Next::Ended(match self.peer_close.lock().as_deref() {
            Some(why) => format!("the peer closed the link ({why})"),
            None => "the peer closed the link".into(),
        })
    }

    /// Nothing complete is buffered: waits for more bytes without the lock, until `until`.
    /// `None` when bytes came (or the end of the stream: the next read reports it), else what
    /// ended the wait.
    fn wait(&self, until: Instant) -> Option<Next> {
        loop {
            if self.is_closed() {
                return Some(Next::Ended("the link is closed".into()));
            }
            let wait = until.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                return Some(Next::Quiet);
            }
            match wait_readable(&self.tcp.0, wait.min(CLOSED_RECHECK)) {
                Ok(true) => return None,
                Ok(false) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return None,
                Err(e) => return Some(Next::Ended(e.to_string())),
            }
        }
    }
}

/// How long one wait for bytes lasts before the closed flag is looked at again. On Unix a
/// shutdown from another thread wakes `poll(2)` at once, so one wait lasts until its
/// deadline (an idle link never wakes). Elsewhere a blocked `peek` is not woken by it (seen
/// under Wine), so a closed link is noticed within a second.
#[cfg(unix)]
const CLOSED_RECHECK: Duration = Duration::MAX;
#[cfg(not(unix))]
const CLOSED_RECHECK: Duration = Duration::from_secs(1);

/// Waits up to `wait` (at least 1 ms) for `tcp` to be readable (bytes, or the end of the
/// stream): true when it is, false when the wait ran out. Unix: one `poll(2)`.
#[cfg(unix)]
fn wait_readable(tcp: &TcpStream, wait: Duration) -> io::Result<bool> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let wait = wait.clamp(
        Duration::from_millis(1),
        Duration::from_secs(u32::MAX.into()),
    );
    let timeout = Timespec::try_from(wait).map_err(io::Error::other)?;
    let mut fds = [PollFd::new(tcp, PollFlags::IN)];
    Ok(poll(&mut fds, Some(&timeout))? > 0)
}

/// Waits up to `wait` (at least 1 ms) for `tcp` to be readable: a `peek` with a read timeout.
#[cfg(not(unix))]
fn wait_readable(tcp: &TcpStream, wait: Duration) -> io::Result<bool> {
    tcp.set_read_timeout(Some(wait.max(Duration::from_millis(1))))?;
    let mut byte = [0u8; 1];
    match tcp.peek(&mut byte) {
        Ok(_) => Ok(true),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}
