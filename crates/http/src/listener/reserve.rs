//! The waiting room of a listener whose bounds keep a health slot (the admin listener): a
//! connection beyond the bounds waits here, without a thread of its own, until its first bytes
//! show what it asks. A `GET /healthz` or `GET /readyz` is then served in the one reserved slot
//! (beside the bounded connections, so a probe is answered however many others are open);
//! anything else is answered 503 and closed, as it would have been at once.
//!
//! One thread waits for every connection of the room in one `mio` poll (epoll, kqueue or the
//! Windows equivalent, without an unsafe line here), with a waker for new arrivals and for the
//! end of the reserved slot's request. The room holds at most [`MAX_WAITING`] connections, each
//! for at most the bounds' head time from its accept; when it is full the one that has waited
//! longest is closed, so a flood of idle connections cannot keep a probe out: it would have to
//! open that many connections in the time the probe takes to send its request line. An idle
//! room blocks without a timeout (no wake-up).

use std::io::{self, Read};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use mio::{Events, Interest, Poll, Token, Waker};

use super::{refuse, Handler, Listener};
use crate::wire::Conn;
use webcodex_plugin_host::WORKER_STACK;

/// The most connections waiting for their first bytes.
pub(super) const MAX_WAITING: usize = 64;
/// The most connections accepted and not yet seated (the acceptor refuses more).
const MAX_ARRIVING: usize = 256;
/// The most bytes read and dropped from a connection before it is refused (so that closing it
/// after the 503 sends no reset that would destroy the answer).
const MAX_DRAIN: usize = 16 * 1024;
/// The poll token of the waker.
const WAKE: Token = Token(usize::MAX);
/// The first bytes of a health request, each followed by a space or a `?`.
const HEALTH_REQUESTS: [&[u8]; 2] = [b"GET /healthz", b"GET /readyz"];

/// The acceptor's side of the room: hands connections beyond the bounds to its thread. Dropping
/// it ends the thread (the connections still waiting are closed).
pub(super) struct Reserve {
    arrivals: Sender<Waiting>,
    waker: Arc<Waker>,
}

impl Reserve {
    /// Starts the room's thread for `listener`, serving health requests with `handler`; each
    /// served connection holds a clone of `alive`, as every connection of the listener does.
    pub(super) fn start(
        listener: Arc<Listener>,
        handler: Arc<dyn Handler>,
        alive: Sender<()>,
    ) -> io::Result<Reserve> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        let (arrivals, arrived) = crossbeam_channel::bounded(MAX_ARRIVING);
        let room = Room {
            poll,
            waker: waker.clone(),
            arrived,
            listener,
            handler,
            alive,
            slots: (0..MAX_WAITING).map(|_| None).collect(),
        };
        std::thread::Builder::new()
            .name("wc-http-reserve".into())
            .stack_size(WORKER_STACK)
            .spawn(move || room.run())?;
        Ok(Reserve { arrivals, waker })
    }

    /// Lets `stream`, accepted at `accepted` beyond the bounds, wait for its first bytes; when
    /// the room cannot take it, it is answered 503 and closed.
    pub(super) fn offer(&self, stream: TcpStream, accepted: Instant) {
        match self.arrivals.try_send(Waiting { stream, accepted }) {
            Ok(()) => {
                let _ = self.waker.wake();
            }
            Err(refused) => refuse(refused.into_inner().stream),
        }
    }
}

impl Drop for Reserve {
    fn drop(&mut self) {
        // The thread finds the channel closed when it wakes.
        let _ = self.waker.wake();
    }
}

/// A connection handed to the room.
struct Waiting {
    stream: TcpStream,
    accepted: Instant,
}

/// A connection in the room.
struct Seated {
    stream: mio::net::TcpStream,
    accepted: Instant,
    /// Its first bytes are a health request: it waits for the reserved slot.
    health: bool,
}

/// What the first bytes of a connection ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FirstBytes {
    Health,
    Other,
    /// Too few bytes to tell.
    Undecided,
}

/// Whether `bytes`, the first of a connection, are a health request.
fn first_bytes(bytes: &[u8]) -> FirstBytes {
    let mut undecided = false;
    for request in HEALTH_REQUESTS {
        let common = bytes.len().min(request.len());
        if bytes[..common] != request[..common] {
            continue;
        }
        match bytes.get(request.len()) {
            Some(b' ' | b'?') => return FirstBytes::Health,
            Some(_) => {}
            None => undecided = true,
        }
    }
    if undecided {
        FirstBytes::Undecided
    } else {
        FirstBytes::Other
    }
}

/// The room's thread and what it holds.
struct Room {
    poll: Poll,
    waker: Arc<Waker>,
    arrived: Receiver<Waiting>,
    listener: Arc<Listener>,
    handler: Arc<dyn Handler>,
    alive: Sender<()>,
    /// The connections waiting, by poll token (the slot's index).
    slots: Vec<Option<Seated>>,
}

impl Room {
    fn run(mut self) {
        let mut events = Events::with_capacity(MAX_WAITING);
        loop {
            let timeout = self
                .next_deadline()
                .map(|at| at.saturating_duration_since(Instant::now()));
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    log::warn!("http: the reserved health slot stops waiting: {e}");
                    return;
                }
            }
            // The seated connections' bytes first: a probe that sent its request is never
            // taken for idle by the arrivals seated after it.
            for event in events.iter() {
                if event.token() != WAKE {
                    self.look(event.token().0);
                }
            }
            if !self.seat_arrivals() {
                return;
            }
            self.serve_health();
            self.expire(Instant::now());
        }
    }

    /// The head time a connection of the room has from its accept.
    fn head_time(&self) -> Duration {
        self.listener.bounds.head
    }

    /// The earliest instant a waiting connection runs out of time.
    fn next_deadline(&self) -> Option<Instant> {
        let head = self.head_time();
        self.slots.iter().flatten().map(|s| s.accepted + head).min()
    }

    /// Seats every connection handed over since the last look; false once the acceptor is
    /// gone or the listener stops (the room then closes).
    fn seat_arrivals(&mut self) -> bool {
        loop {
            match self.arrived.try_recv() {
                Ok(waiting) => self.seat(waiting),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
        !self
            .listener
            .stopping
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    fn seat(&mut self, waiting: Waiting) {
        let Some(slot) = self.free_slot() else {
            // Every seat holds a health request waiting for the slot.
            return refuse(waiting.stream);
        };
        if waiting.stream.set_nonblocking(true).is_err() {
            return;
        }
        let mut stream = mio::net::TcpStream::from_std(waiting.stream);
        let registered =
            self.poll
                .registry()
                .register(&mut stream, Token(slot), Interest::READABLE);
        if registered.is_err() {
            return;
        }
        self.slots[slot] = Some(Seated {
            stream,
            accepted: waiting.accepted,
            health: false,
        });
        // Bytes that came before the registration raise no event: look now.
        self.look(slot);
    }

    /// A free seat: an empty one, else the one of the connection that has waited longest
    /// without a byte (closed quietly, as an idle connection is). Each candidate is looked at
    /// once more first: one whose request came meanwhile is decided instead of closed.
    fn free_slot(&mut self) -> Option<usize> {
        loop {
            if let Some(free) = self.slots.iter().position(Option::is_none) {
                return Some(free);
            }
            let oldest = (0..self.slots.len())
                .filter(|&i| self.slots[i].as_ref().is_some_and(|s| !s.health))
                .min_by_key(|&i| self.slots[i].as_ref().map(|s| s.accepted))?;
            if self.look(oldest) == FirstBytes::Undecided {
                drop(self.take(oldest));
                return Some(oldest);
            }
        }
    }

    /// Takes the connection of `slot` out of the room, as a blocking stream again.
    fn take(&mut self, slot: usize) -> Option<(TcpStream, Instant)> {
        let mut seated = self.slots.get_mut(slot)?.take()?;
        let _ = self.poll.registry().deregister(&mut seated.stream);
        let stream = TcpStream::from(seated.stream);
        stream.set_nonblocking(false).ok()?;
        Some((stream, seated.accepted))
    }

    /// Refuses the connection of `slot` (503), once the bytes it sent are read and dropped.
    fn refuse(&mut self, slot: usize) {
        if let Some(seated) = self.slots.get(slot).and_then(Option::as_ref) {
            let mut scratch = [0u8; 4096];
            let mut drained = 0;
            while drained < MAX_DRAIN {
                match (&seated.stream).read(&mut scratch) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => drained += n,
                }
            }
        }
        if let Some((stream, _)) = self.take(slot) {
            refuse(stream);
        }
    }

    /// Reads (without consuming) the first bytes of the connection in `slot` and decides: a
    /// health request waits for the slot, anything else is refused, a closed connection leaves.
    /// Returns what the bytes showed (`Other` for a connection that left or was not there).
    fn look(&mut self, slot: usize) -> FirstBytes {
        let Some(seated) = self.slots.get(slot).and_then(Option::as_ref) else {
            return FirstBytes::Other;
        };
        if seated.health {
            return FirstBytes::Health;
        }
        let mut bytes = [0u8; 16];
        let verdict = match seated.stream.peek(&mut bytes) {
            Ok(0) => None,
            Ok(n) => Some(first_bytes(&bytes[..n])),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Some(FirstBytes::Undecided),
            Err(_) => None,
        };
        match verdict {
            Some(FirstBytes::Undecided) => FirstBytes::Undecided,
            Some(FirstBytes::Health) => {
                if let Some(seated) = self.slots[slot].as_mut() {
                    seated.health = true;
                }
                FirstBytes::Health
            }
            Some(FirstBytes::Other) => {
                self.refuse(slot);
                FirstBytes::Other
            }
            // Closed by the client, or broken.
            None => {
                drop(self.take(slot));
                FirstBytes::Other
            }
        }
    }

    /// Serves the health request that has waited longest in the reserved slot, if it is free.
    fn serve_health(&mut self) {
        let next = (0..self.slots.len())
            .filter(|&i| self.slots[i].as_ref().is_some_and(|s| s.health))
            .min_by_key(|&i| self.slots[i].as_ref().map(|s| s.accepted));
        // Only this thread takes the slot: free now, it is still free below. When it is taken,
        // the end of its request wakes this thread again.
        let Some(slot) = next.filter(|_| self.listener.reserved_free()) else {
            return;
        };
        let Some((stream, accepted)) = self.take(slot) else {
            return;
        };
        let Some(connection) = self
            .listener
            .reserved_connection(&stream, accepted, &self.alive)
        else {
            return refuse(stream);
        };
        let handler = self.handler.clone();
        let waker = self.waker.clone();
        let spawned = std::thread::Builder::new()
            .name("wc-http-conn".into())
            .stack_size(WORKER_STACK)
            .spawn(move || {
                connection.serve(Conn::new(stream), &*handler);
                let _ = waker.wake();
            });
        if let Err(e) = spawned {
            log::warn!("http: no thread for a health request: {e}");
        }
    }

    /// Closes the connections whose head time has passed: quietly when they sent nothing, 503
    /// when a health request found the reserved slot taken all that time.
    fn expire(&mut self, now: Instant) {
        let head = self.head_time();
        for slot in 0..self.slots.len() {
            let due = self.slots[slot]
                .as_ref()
                .is_some_and(|s| s.accepted + head <= now);
            if !due {
                continue;
            }
            if self.slots[slot].as_ref().is_some_and(|s| s.health) {
                self.refuse(slot);
            } else {
                drop(self.take(slot));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_get_of_a_health_route_is_a_health_request() {
        for health in [
            &b"GET /healthz HTTP/1.1\r\n"[..],
            b"GET /readyz HTTP/1.1\r\n",
            b"GET /healthz?x=1 HTTP/1.1",
            b"GET /readyz ",
        ] {
            assert_eq!(first_bytes(health), FirstBytes::Health, "{health:?}");
        }
        for other in [
            &b"GET /metrics HTTP/1.1\r\n"[..],
            b"POST /healthz HTTP/1.1",
            b"GET /healthzz HTTP/1.1",
            b"GET /readyz/x HTTP/1.1",
            b"HEAD /healthz HTTP/1.1",
            b"\x16\x03\x01",
            b"get /healthz ",
        ] {
            assert_eq!(first_bytes(other), FirstBytes::Other, "{other:?}");
        }
        for undecided in [&b""[..], b"G", b"GET /", b"GET /health", b"GET /readyz"] {
            assert_eq!(
                first_bytes(undecided),
                FirstBytes::Undecided,
                "{undecided:?}"
            );
        }
    }
}
