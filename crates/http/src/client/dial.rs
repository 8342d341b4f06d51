//! Connections to the server, set up by ureq's connector chain (`DefaultConnector`): name
//! resolution within the connect timeout ([`LiteralFirst`]: none for an address), a SOCKS
//! proxy, an HTTP proxy's `CONNECT` tunnel, TCP, and rustls with the client's roots. The chain
//! runs once per connection; what goes over the connection is `exchange`'s.
//!
//! Nothing of a request is written while a connection is set up (the proxy's `CONNECT` and
//! the TLS handshake are not the request), so every failure here is "nothing was sent":
//! [`ClientError::Connect`], or [`ClientError::Untrusted`] for a certificate not trusted.

use std::sync::{Arc, Weak};
use std::time::Duration;

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::Resolver;
use ureq::unversioned::transport::time::{Duration as Budget, Instant};
use ureq::unversioned::transport::{
    ConnectionDetails, Connector, DefaultConnector, NextTimeout, ShutdownHandle, Transport,
};
use ureq::Timeout;

use super::pool::Probe;
use super::resolve::LiteralFirst;
use super::ClientError;

/// What the chain runs to reach an HTTP proxy before its `CONNECT` (the same chain).
type RunConnector =
    dyn Fn(&ConnectionDetails) -> Result<Box<dyn Transport>, ureq::Error> + Send + Sync;
/// Where the chain registers each socket it opens (for ureq's `Agent::shutdown`; unused here).
type RegisterShutdown = dyn Fn(Weak<dyn ShutdownHandle>) -> Result<(), ureq::Error> + Send + Sync;
/// The chain's clock.
type Clock = dyn Fn() -> Instant + Send + Sync;

/// Sets up connections to one server.
pub(super) struct Dialer {
    /// ureq's configuration: the proxy, the TLS roots, the buffer sizes.
    config: Config,
    /// The request URI (its scheme and authority name the server).
    uri: Uri,
    resolver: LiteralFirst,
    connector: Arc<DefaultConnector>,
    run_connector: Arc<RunConnector>,
    register_shutdown: Arc<RegisterShutdown>,
    clock: Arc<Clock>,
    /// Bounds the name resolution, and again the connection's set-up.
    connect_timeout: Duration,
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dialer").field("uri", &self.uri).finish()
    }
}

impl Dialer {
    /// A dialer of the server of `uri` with `config` (proxy, TLS).
    pub(super) fn new(config: Config, uri: Uri, connect_timeout: Duration) -> Dialer {
        let connector = Arc::new(DefaultConnector::new());
        let chain = Arc::clone(&connector);
        let run_connector: Arc<RunConnector> = Arc::new(move |details: &ConnectionDetails| {
            chain
                .connect(details, None)?
                .ok_or(ureq::Error::ConnectionFailed)
        });
        Dialer {
            config,
            uri,
            resolver: LiteralFirst::default(),
            connector,
            run_connector,
            register_shutdown: Arc::new(|_| Ok(())),
            clock: Arc::new(Instant::now),
            connect_timeout,
        }
    }

    /// A new connection to the server, as ureq's own request path would make it: the name is
    /// resolved here unless a proxy resolves it (SOCKS5h, an HTTP proxy).
    pub(super) fn dial(&self) -> Result<Conn, ureq::Error> {
        let proxy = self.config.proxy();
        let direct = proxy.is_none_or(|p| p.is_no_proxy(&self.uri));
        let addrs = if direct || proxy.is_some_and(|p| p.resolve_target()) {
            let budget = timeout(self.connect_timeout, Timeout::Resolve);
            self.resolver.resolve(&self.uri, &self.config, budget)?
        } else {
            self.resolver.empty()
        };
        let details = ConnectionDetails {
            uri: &self.uri,
            addrs,
            config: &self.config,
            request_level: false,
            resolver: &self.resolver,
            now: Instant::now(),
            timeout: timeout(self.connect_timeout, Timeout::Connect),
            current_time: Arc::clone(&self.clock),
            run_connector: Arc::clone(&self.run_connector),
            register_shutdown: Arc::clone(&self.register_shutdown),
        };
        let transport = self
            .connector
            .connect(&details, None)?
            .ok_or(ureq::Error::ConnectionFailed)?;
        if details.needs_tls() && !transport.is_tls() {
            return Err(ureq::Error::TlsRequired);
        }
        Ok(Conn {
            transport,
            body: Vec::new(),
        })
    }
}

/// A budget of `limit` for `reason`.
pub(super) fn timeout(limit: Duration, reason: Timeout) -> NextTimeout {
    NextTimeout {
        after: Budget::Exact(limit),
        reason,
        per_read: None,
        per_write: None,
    }
}

/// A connection to the server, and the buffer its requests' bodies are written into (kept with
/// the connection, so a kept connection's request allocates nothing).
#[derive(Debug)]
pub(super) struct Conn {
    /// The connection (TCP, a tunnel, TLS) with its input and output buffers.
    pub(super) transport: Box<dyn Transport>,
    /// The latest request body.
    pub(super) body: Vec<u8>,
}

impl Probe for Conn {
    /// ureq's probe: one read without blocking (TCP), which finds the connection closed, reset
    /// or holding bytes nobody asked for; through TLS, the socket beneath is probed.
    fn is_open(&mut self) -> bool {
        self.transport.buffers().input().is_empty() && self.transport.is_open()
    }
}

/// The client error of a connection that could not be set up (`target`: the server's
/// authority, and whether through a proxy): nothing was sent.
pub(super) fn dial_failed(e: ureq::Error, target: &str) -> ClientError {
    match e {
        // The proxy answered the CONNECT with another status: nothing reached the server.
        ureq::Error::ConnectProxyFailed(why) => {
            ClientError::Connect(format!("the proxy refused the tunnel to {target}: {why}"))
        }
        e => match untrusted(&e) {
            Some(why) => ClientError::Untrusted(format!(
                "the TLS certificate of {target} is not trusted ({why})"
            )),
            None => ClientError::Connect(format!("cannot connect to {target}: {e}")),
        },
    }
}

/// Why a failed TLS handshake did not trust the server, if that is why it failed.
fn untrusted(e: &ureq::Error) -> Option<String> {
    let tls = match e {
        ureq::Error::Rustls(t) => Some(t),
        ureq::Error::Io(io) => io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()),
        _ => None,
    }?;
    matches!(tls, rustls::Error::InvalidCertificate(_)).then(|| tls.to_string())
}
