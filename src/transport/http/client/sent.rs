//! Whether a request wrote anything toward the server: the line between "nothing was sent"
//! (`not_started`) and "it may have been handled" (`outcome_unknown`), for a fresh connection
//! and a pooled one alike.
//!
//! The connection to the server (not the one to a proxy before its `CONNECT`) is wrapped in
//! [`Marked`], whose every write first marks the calling thread. ureq runs a request on the
//! thread that sends it, start to end, so a request that sees no mark wrote no byte of its
//! head or body: whatever failed (resolve, connect, proxy, TLS handshake, or a pooled
//! connection found closed and a fresh dial that failed), nothing reached the server. Once the
//! mark is set, a failure is a lost request, even when the write went only into the kernel's
//! buffer of a connection the server had already closed.
//!
//! ureq itself never resends: it retries no request (its only loop follows redirects, and the
//! client follows none), and before it hands out a pooled connection it probes it without
//! blocking and drops it when the server closed it or sent anything unasked.

use std::cell::Cell;

use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, NextTimeout, Transport};

thread_local! {
    /// Set by the first write of the request running on this thread.
    static WROTE: Cell<bool> = const { Cell::new(false) };
}

/// One request's view of the mark: begun clear, read after a failure.
pub(super) struct Attempt(());

impl Attempt {
    /// Clears the mark for the request this thread is about to send.
    pub(super) fn begin() -> Attempt {
        WROTE.with(|w| w.set(false));
        Attempt(())
    }

    /// Whether a byte of this request may have been written toward the server.
    pub(super) fn wrote(&self) -> bool {
        WROTE.with(Cell::get)
    }
}

/// A connector chain (proxy, TCP, TLS) whose connections to the server are [`Marked`]. ureq
/// runs the same chain for the connection to an HTTP proxy before it asks for the `CONNECT`
/// tunnel; that one (to another authority) is not marked, so a proxy that refuses the tunnel
/// sent nothing of the request.
#[derive(Debug)]
pub(super) struct MarkingConnector<C> {
    inner: C,
    /// The server's `host:port` as the request URI names it.
    server: String,
}

impl<C> MarkingConnector<C> {
    /// Marks the connections `inner` makes to `server` (`host:port`).
    pub(super) fn new(inner: C, server: &str) -> MarkingConnector<C> {
        MarkingConnector {
            inner,
            server: server.to_string(),
        }
    }
}

impl<C: Connector<(), Out = Box<dyn Transport>>> Connector<()> for MarkingConnector<C> {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<()>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let out = self.inner.connect(details, chained)?;
        let to_server = details.uri.authority().map(|a| a.as_str()) == Some(self.server.as_str());
        Ok(match out {
            Some(inner) if to_server => Some(Box::new(Marked { inner })),
            other => other,
        })
    }
}

/// A connection to the server whose writes mark the writing thread.
#[derive(Debug)]
struct Marked {
    inner: Box<dyn Transport>,
}

impl Transport for Marked {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        // Before the write: a write that fails may still have sent part of the request.
        if amount > 0 {
            WROTE.with(|w| w.set(true));
        }
        self.inner.transmit_output(amount, timeout)
    }

    fn maybe_await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.inner.maybe_await_input(timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}
