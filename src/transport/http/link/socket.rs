//! One WebSocket of a runner link, shared by the thread that reads it and the threads that
//! write to it.
//!
//! The WebSocket sits behind a lock that every writer takes for one whole message, so frames
//! never interleave. The reader never holds the lock while it waits: it waits for bytes with
//! `peek` on the TCP socket (blocking, with the time left until its next heartbeat duty as the
//! timeout), then takes the lock and reads what has arrived with the socket set non-blocking,
//! one message at a time, until nothing complete is left. So an idle link costs no wake-up
//! besides its heartbeat, and a writer waits at most for one non-blocking read. The same works
//! under TLS: `peek` sees the encrypted bytes arrive on the TCP socket below.
//!
//! The reader's wait ends at a deadline, not after a duration: bytes that arrive without
//! completing a message (a peer that dribbles a frame, a TLS record split in two) do not start
//! the wait again, so they cannot postpone the heartbeat or the dead-link check.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::frame::CloseFrame;
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{Error as WsError, Message, WebSocket};

use super::wire::MAX_FRAME_BYTES;

/// How long one message may take to be written to a peer that does not read.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// The WebSocket settings of both sides: frames and messages of at most 1 MiB, a small read
/// buffer (an idle link holds little memory), every message written at once.
pub(crate) fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(16 * 1024)
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

/// A TCP socket shared by the WebSocket above it and the reader that peeks at it: one file
/// descriptor, not a clone of it (a link costs the front as few descriptors as it can).
#[derive(Clone)]
pub(crate) struct SharedTcp(pub(crate) Arc<TcpStream>);

impl Read for SharedTcp {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self.0).read(buf)
    }
}

impl Write for SharedTcp {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self.0).write(buf)
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
        })
    }

    /// Writes one text message. An error leaves the link unusable: close it.
    pub(crate) fn send_text(&self, text: String) -> Result<(), String> {
        self.send(Message::Text(text.into()))
    }

    /// Writes a ping (the front's heartbeat).
    #[cfg(feature = "http-server")]
    pub(crate) fn ping(&self) -> Result<(), String> {
        self.send(Message::Ping(Vec::new().into()))
    }

    fn send(&self, message: Message) -> Result<(), String> {
        if self.is_closed() {
            return Err("the link is closed".into());
        }
        self.ws.lock().send(message).map_err(|e| e.to_string())
    }

    /// True once [`LinkSocket::close`] or [`LinkSocket::shutdown`] ran.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Sends a close frame with `code` and `reason` (best effort, bounded by the write
    /// timeout), then ends the connection.
    pub(crate) fn close(&self, code: CloseCode, reason: &str) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            let frame = CloseFrame {
                code,
                reason: reason.to_string().into(),
            };
            let mut ws = self.ws.lock();
            let _ = ws.close(Some(frame));
            let _ = ws.flush();
        }
        let _ = self.tcp.0.shutdown(Shutdown::Both);
    }

    /// Ends the connection at once, without a close frame; a blocked reader wakes.
    pub(crate) fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _ = self.tcp.0.shutdown(Shutdown::Both);
    }

    /// The next message, waiting for bytes until `until` at the latest ([`Next::Quiet`]
    /// then, whatever arrived meanwhile without completing a message). Only one thread reads.
    pub(crate) fn next(&self, until: Instant) -> Next {
        loop {
            let read = {
                let mut ws = self.ws.lock();
                if self.tcp.0.set_nonblocking(true).is_err() {
                    return Next::Ended("the socket cannot be read".into());
                }
                let read = ws.read();
                let _ = self.tcp.0.set_nonblocking(false);
                read
            };
            match read {
                Ok(Message::Text(text)) => return Next::Text(text.to_string()),
                Ok(Message::Binary(_)) => return Next::Binary,
                Ok(Message::Ping(_) | Message::Pong(_)) => return Next::Heartbeat,
                // The reply is queued; the next read writes it and then reports the end.
                Ok(Message::Close(_)) | Ok(Message::Frame(_)) => continue,
                Err(WsError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(WsError::Io(e)) => return Next::Ended(e.to_string()),
                Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => {
                    return Next::Ended("the peer closed the link".into())
                }
                Err(WsError::Capacity(_)) => return Next::TooLarge,
                Err(e @ (WsError::Protocol(_) | WsError::Utf8(_))) => {
                    return Next::Broken(e.to_string())
                }
                Err(e) => return Next::Ended(e.to_string()),
            }
            // Nothing complete is buffered: wait for more bytes without the lock.
            if self.is_closed() {
                return Next::Ended("the link is closed".into());
            }
            let wait = until.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                return Next::Quiet;
            }
            let _ = self
                .tcp
                .0
                .set_read_timeout(Some(wait.max(Duration::from_millis(1))));
            let mut byte = [0u8; 1];
            match self.tcp.0.peek(&mut byte) {
                // At the end of the stream the next read reports it.
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Next::Quiet
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Next::Ended(e.to_string()),
            }
        }
    }
}
