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
            Some(inner) if to_server => Some(Box::new(Marked::new(inner))),
            other => other,
        })
    }
}

/// A connection to the server whose writes mark the writing thread.
///
/// It also spares the hop's system calls (DECISIONS 6.33): the request's head and body go out
/// in one write (held until ureq first waits for the answer), the socket timeouts ureq derives
/// from each request's own deadline are rounded up to [`TIMEOUT_STEP`] (so the same value is not
/// set again on every request), and the probe ureq makes when a connection goes back to the
/// pool is left to the probe it makes before handing the connection out again.
#[derive(Debug)]
struct Marked {
    inner: Box<dyn Transport>,
    /// Request bytes handed over by ureq and not yet written.
    pending: Vec<u8>,
    /// The write timeout of the latest bytes in `pending`.
    write_timeout: NextTimeout,
    /// True from the first I/O of a request until the next probe: the connection is on its way
    /// back to the pool, and will be probed before it is used again.
    returning: bool,
}

/// The granularity of the socket timeouts: each is rounded up to a whole multiple, so a timeout
/// fires at most this much later than the request's deadline.
const TIMEOUT_STEP: std::time::Duration = std::time::Duration::from_millis(100);

/// Request bytes held back at most: beyond this they are written at once.
const MAX_PENDING: usize = 64 * 1024;

impl Marked {
    fn new(inner: Box<dyn Transport>) -> Marked {
        Marked {
            inner,
            pending: Vec::new(),
            write_timeout: NextTimeout::default(),
            returning: false,
        }
    }

    /// Writes the held request bytes through the inner transport's output buffer.
    fn flush(&mut self) -> Result<(), ureq::Error> {
        let mut done = 0;
        while done < self.pending.len() {
            let output = self.inner.buffers().output();
            let n = output.len().min(self.pending.len() - done);
            if n == 0 {
                self.pending.clear();
                return Err(ureq::Error::Io(std::io::Error::other(
                    "the connection has no output buffer",
                )));
            }
            output[..n].copy_from_slice(&self.pending[done..done + n]);
            let written = self.inner.transmit_output(n, self.write_timeout);
            done += n;
            if let Err(e) = written {
                self.pending.clear();
                return Err(e);
            }
        }
        self.pending.clear();
        Ok(())
    }
}

/// `timeout` with each exact duration rounded up to a multiple of [`TIMEOUT_STEP`] (zero, a
/// spent budget, stays zero).
fn coarse(timeout: NextTimeout) -> NextTimeout {
    use ureq::unversioned::transport::time::Duration as Budget;
    let round = |d: Budget| match d {
        Budget::Exact(exact) => {
            let step = TIMEOUT_STEP.as_nanos();
            let steps = exact.as_nanos().div_ceil(step);
            Budget::Exact(std::time::Duration::from_nanos(
                u64::try_from(steps * step).unwrap_or(u64::MAX),
            ))
        }
        other => other,
    };
    NextTimeout {
        after: round(timeout.after),
        per_read: timeout.per_read.map(round),
        per_write: timeout.per_write.map(round),
        ..timeout
    }
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
        self.returning = true;
        let output = &self.inner.buffers().output()[..amount];
        self.pending.extend_from_slice(output);
        self.write_timeout = coarse(timeout);
        if self.pending.len() >= MAX_PENDING {
            self.flush()?;
        }
        Ok(())
    }

    fn maybe_await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.flush()?;
        self.inner.maybe_await_input(coarse(timeout))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.flush()?;
        self.returning = true;
        self.inner.await_input(coarse(timeout))
    }

    fn is_open(&mut self) -> bool {
        if std::mem::take(&mut self.returning) {
            // Back to the pool after a request: the pool probes again before it hands the
            // connection out, and that probe is the one that counts.
            return self.pending.is_empty();
        }
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ureq::unversioned::transport::time::Duration as Budget;

    #[test]
    fn timeouts_are_rounded_up_to_whole_steps() {
        let exact = |ms| Budget::Exact(std::time::Duration::from_millis(ms));
        let timeout = NextTimeout {
            after: exact(129_999),
            per_read: Some(exact(1)),
            per_write: None,
            ..NextTimeout::default()
        };
        let rounded = coarse(timeout);
        assert_eq!(rounded.after, exact(130_000));
        assert_eq!(rounded.per_read, Some(exact(100)));
        assert_eq!(rounded.per_write, None);
        assert_eq!(rounded.reason, timeout.reason);
        assert_eq!(coarse(NextTimeout::default()).after, Budget::NotHappening);
        // A spent budget stays spent: ureq fails it as a timeout.
        let spent = NextTimeout {
            after: exact(0),
            ..NextTimeout::default()
        };
        assert_eq!(coarse(spent).after, exact(0));
    }
}
