//! The runner's side of a link (`webcodex-plugin connect`): dial the front (directly or
//! through an HTTP `CONNECT` proxy; `wss://` with rustls), say hello, serve each request of
//! the front with the local gateway (the thread that reads a request runs it and passes the
//! reading on: leader/follower), and dial again when the link ends (exponential backoff with
//! full jitter: 1 s base, 30 s cap, reset after a link that lived 60 s). A refused credential
//! (401/403 to the upgrade) ends it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use tungstenite::client::ClientRequestBuilder;
use tungstenite::handshake::HandshakeError;
use tungstenite::protocol::frame::coding::CloseCode;
use ureq::Proxy;

use super::socket::{config, LinkSocket, Next, SharedTcp};
use super::wire;
use super::{LINK_LOG_TARGET, RUNNERS_CONNECT_PATH};
use crate::client::BaseUrl;
use crate::client::{ca_der, link_proxy, tunnel, ProxyChoice, SetupError, SetupPart};
use webcodex_plugin_host::Gateway;

/// How long the front has to welcome the runner.
const WELCOME_WITHIN: Duration = Duration::from_secs(10);

/// Where and how a runner dials its front.
#[derive(Clone)]
pub struct ConnectOptions {
    /// The front's base URL: `http://`, `https://`, `ws://` or `wss://HOST[:PORT][/PREFIX]`.
    pub front_url: String,
    /// The runner token (a `[[runner_tokens]]` entry of the front).
    pub token: String,
    /// PEM CA certificates to trust for `wss://` instead of the built-in roots.
    pub ca_pem: Option<Vec<u8>>,
    /// The proxy (an `http://` proxy, `CONNECT`).
    pub proxy: ProxyChoice,
    /// The display name the hello gives.
    pub name: Option<String>,
    /// Time to resolve, connect (proxy and TLS included) and upgrade.
    pub connect_timeout: Duration,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("front_url", &self.front_url)
            .finish_non_exhaustive()
    }
}

/// How one link ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkEnd {
    /// [`DialerStop::stop`] was called.
    Stopped,
    /// The front refused the credential (the upgrade's status, 401 or 403): fatal.
    Refused(u16),
    /// No link was made (connect, proxy, TLS, upgrade, welcome); the text is for the log.
    Failed(String),
    /// A link was up for `lived` and then ended.
    Lost {
        /// How long it was up.
        lived: Duration,
        /// Why it ended, for the log.
        why: String,
    },
}

/// Stops a [`Dialer`] from another thread: the current link gets a close frame, a backoff
/// wait ends at once.
#[derive(Clone)]
pub struct DialerStop {
    stopped: Arc<AtomicBool>,
    wake: Sender<()>,
    current: Arc<Mutex<Option<Arc<LinkSocket<LinkStream>>>>>,
}

impl DialerStop {
    /// Requests the stop.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _ = self.wake.try_send(());
        if let Some(socket) = self.current.lock().as_ref() {
            socket.close(CloseCode::Away, "the runner is stopping");
        }
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }
}

/// Reconnect delays: exponential with full jitter.
#[derive(Debug, Clone)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    /// The first delay's bound.
    pub const BASE: Duration = Duration::from_secs(1);
    /// No delay is longer.
    pub const CAP: Duration = Duration::from_secs(30);
    /// A link that lived this long resets the delays.
    pub const RESET_AFTER: Duration = Duration::from_secs(60);

    /// No failure yet.
    pub fn new() -> Backoff {
        Backoff { failures: 0 }
    }

    /// The wait after one more failure: uniform in `[0, min(CAP, BASE·2^n)]`.
    pub fn next_delay(&mut self) -> Duration {
        let exp = self.failures.min(16);
        self.failures = self.failures.saturating_add(1);
        let bound = Self::BASE
            .saturating_mul(1u32 << exp)
            .min(Self::CAP)
            .as_millis() as u64;
        let random = webcodex_plugin_host::random_bytes().map_or(bound / 2, u64::from_le_bytes);
        Duration::from_millis(random % (bound + 1))
    }

    /// Forgets the failures (after a link that lived long enough).
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// The failures since the last reset.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

/// A stream to the front: plain TCP or TLS over it.
pub(crate) enum LinkStream {
    Plain(SharedTcp),
    Tls(Box<StreamOwned<ClientConnection, SharedTcp>>),
}

impl Read for LinkStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            LinkStream::Plain(s) => s.read(buf),
            LinkStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for LinkStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            LinkStream::Plain(s) => s.write(buf),
            LinkStream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            LinkStream::Plain(s) => s.flush(),
            LinkStream::Tls(s) => s.flush(),
        }
    }
}

/// The front's address as a link dials it.
struct Front {
    tls: bool,
    host: String,
    port: u16,
    url: String,
}

/// A runner's dialer: its front, its credential, its instance id, the gateway it serves.
pub struct Dialer {
    front: Front,
    token: String,
    tls: Option<Arc<ClientConfig>>,
    proxy: Option<Proxy>,
    name: Option<String>,
    instance: String,
    /// The one address to dial instead of resolving the host (one link per replica).
    pinned: Option<SocketAddr>,
    connect_timeout: Duration,
    stop: DialerStop,
    woken: Receiver<()>,
    /// The links made so far, and when the last one ended (for the log).
    links: Mutex<(u64, Option<Instant>)>,
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dialer")
            .field("front", &self.front.url)
            .finish_non_exhaustive()
    }
}

impl Dialer {
    /// Checks `options` (URL, token, proxy, CA file) and makes this process's instance id.
    pub fn new(options: ConnectOptions) -> Result<Dialer, SetupError> {
        let front = parse_front(&options.front_url)?;
        if options.token.is_empty() || !options.token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(SetupError::new(
                SetupPart::Token,
                "the token must be one line of printable ASCII without spaces",
            ));
        }
        let proxy = link_proxy(&options.proxy, front.tls, &front.host)?;
        let tls = match front.tls {
            false => None,
            true => Some(Arc::new(tls_config(options.ca_pem.as_deref())?)),
        };
        let instance = wire::new_instance().ok_or_else(|| {
            SetupError::new(SetupPart::Token, "the system's random source failed")
        })?;
        let (wake, woken) = bounded(1);
        Ok(Dialer {
            front,
            token: options.token,
            tls,
            proxy,
            name: options.name,
            instance,
            pinned: None,
            connect_timeout: options.connect_timeout,
            stop: DialerStop {
                stopped: Arc::new(AtomicBool::new(false)),
                wake,
                current: Arc::new(Mutex::new(None)),
            },
            woken,
            links: Mutex::new((0, None)),
        })
    }

    /// The handle that stops [`Dialer::run`].
    pub fn stopper(&self) -> DialerStop {
        self.stop.clone()
    }

    /// This runner process's instance id (in every hello).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// This dialer with the runner instance `instance` (a runner's links to several fronts
    /// share its one instance); ignored unless well-formed.
    pub fn with_instance(mut self, instance: &str) -> Dialer {
        if wire::valid_instance(instance) {
            self.instance = instance.to_string();
        }
        self
    }

    /// This dialer dialling `addr` instead of resolving the front's host (the URL's host
    /// still names the front to TLS and in the upgrade). Ignored through a proxy, which
    /// resolves the host itself.
    pub fn pinned(mut self, addr: SocketAddr) -> Dialer {
        self.pinned = Some(addr);
        self
    }

    /// The front's host and port, as the URL gives them.
    pub fn front_host_port(&self) -> (&str, u16) {
        (&self.front.host, self.front.port)
    }

    /// True when the links go through a proxy (the proxy resolves the front's host).
    pub fn proxied(&self) -> bool {
        self.proxy.is_some()
    }

    /// Keeps the link until stopped or refused: dials, serves, and after each failure or
    /// lost link waits the backoff's delay. The first failure of a series is logged at warn,
    /// the next ones at info. Returns [`LinkEnd::Stopped`] or [`LinkEnd::Refused`].
    pub fn run(&self, gateway: &Arc<Gateway>) -> LinkEnd {
        let mut backoff = Backoff::new();
        loop {
            if self.stop.is_stopped() {
                return LinkEnd::Stopped;
            }
            let end = self.once(gateway);
            let why = match &end {
                LinkEnd::Stopped | LinkEnd::Refused(_) => return end,
                LinkEnd::Failed(why) => format!("cannot connect to the front: {why}"),
                LinkEnd::Lost { lived, why } => {
                    if *lived >= Backoff::RESET_AFTER {
                        backoff.reset();
                    }
                    format!(
                        "the link to the front ended after {} s: {why}",
                        lived.as_secs()
                    )
                }
            };
            if self.stop.is_stopped() {
                return LinkEnd::Stopped;
            }
            let first = backoff.failures() == 0;
            let delay = backoff.next_delay();
            let lost = matches!(end, LinkEnd::Lost { .. });
            if first {
                log::warn!("connect: {why}; trying again in {} ms", delay.as_millis());
            } else if lost {
                // Each end of a link is said at the default level, why included (a front that
                // closed it says why: e.g. another runner took the id).
                let delay = delay.as_millis();
                log::info!(target: LINK_LOG_TARGET, "connect: {why}; trying again in {delay} ms");
            } else {
                log::info!("connect: {why}; trying again in {} ms", delay.as_millis());
            }
            // A stop wakes this wait at once.
            let _ = self.woken.recv_timeout(delay);
        }
    }

    /// One link: dial, upgrade, hello, welcome, then serve until it ends.
    pub fn once(&self, gateway: &Arc<Gateway>) -> LinkEnd {
        let socket = match self.open() {
            Ok(socket) => Arc::new(socket),
            Err(end) => return end,
        };
        *self.stop.current.lock() = Some(socket.clone());
        if self.stop.is_stopped() {
            socket.close(CloseCode::Away, "the runner is stopping");
            return LinkEnd::Stopped;
        }
        let up = Instant::now();
        self.log_linked(up);
        let why = super::crew::serve(gateway, &socket);
        *self.stop.current.lock() = None;
        socket.shutdown();
        if self.stop.is_stopped() {
            return LinkEnd::Stopped;
        }
        self.links.lock().1 = Some(Instant::now());
        LinkEnd::Lost {
            lived: up.elapsed(),
            why,
        }
    }

    /// Says that a link is up: the first, or a relink after one ended (shown at the default
    /// log level: [`LINK_LOG_TARGET`]).
    fn log_linked(&self, up: Instant) {
        let mut links = self.links.lock();
        links.0 += 1;
        // A pinned address other than the URL's own host is said too (one replica of several).
        let at = match self.pinned.filter(|_| self.proxy.is_none()) {
            Some(addr)
                if addr.to_string() != format!("{}:{}", self.front.host, self.front.port) =>
            {
                format!(" ({addr})")
            }
            _ => String::new(),
        };
        match links.1 {
            None => log::info!(
                target: LINK_LOG_TARGET,
                "connect: linked to the front at {}:{}{at}",
                self.front.host,
                self.front.port
            ),
            Some(ended) => log::info!(
                target: LINK_LOG_TARGET,
                "connect: relinked to the front at {}:{}{at} (link {}, {} s after the last one \
                 ended)",
                self.front.host,
                self.front.port,
                links.0,
                up.saturating_duration_since(ended).as_secs()
            ),
        }
    }

    /// Dials and upgrades, says hello and reads the welcome.
    fn open(&self) -> Result<LinkSocket<LinkStream>, LinkEnd> {
        let failed =
            |what: &str, e: &dyn std::fmt::Display| LinkEnd::Failed(format!("{what}: {e}"));
        let tcp = self.dial().map_err(|e| failed("connecting", &e))?;
        let deadline = Some(self.connect_timeout);
        let _ = tcp.set_read_timeout(deadline);
        let _ = tcp.set_write_timeout(deadline);
        let tcp = SharedTcp::new(tcp);
        let raw = tcp.clone();
        let stream = match &self.tls {
            None => LinkStream::Plain(tcp),
            Some(config) => {
                let host = self
                    .front
                    .host
                    .trim_start_matches('[')
                    .trim_end_matches(']');
                let name = ServerName::try_from(host.to_string())
                    .map_err(|e| failed("the front's host name", &e))?;
                let conn =
                    ClientConnection::new(config.clone(), name).map_err(|e| failed("TLS", &e))?;
                let mut tls = StreamOwned::new(conn, tcp);
                // The handshake now, so a certificate problem says so.
                while tls.conn.is_handshaking() {
                    tls.conn
                        .complete_io(&mut tls.sock)
                        .map_err(|e| failed("the TLS handshake", &e))?;
                }
                LinkStream::Tls(Box::new(tls))
            }
        };
        let uri: tungstenite::http::Uri = self
            .front
            .url
            .parse()
            .map_err(|e| failed("the front URL", &e))?;
        let request = ClientRequestBuilder::new(uri)
            .with_header("Authorization", format!("Bearer {}", self.token))
            .with_sub_protocol(wire::PROTOCOL);
        let ws = match tungstenite::client::client_with_config(request, stream, Some(config())) {
            Ok((ws, _)) => ws,
            Err(HandshakeError::Failure(tungstenite::Error::Http(response))) => {
                let status = response.status().as_u16();
                if matches!(status, 401 | 403) {
                    return Err(LinkEnd::Refused(status));
                }
                return Err(LinkEnd::Failed(format!(
                    "the front answered the upgrade with {status}"
                )));
            }
            Err(HandshakeError::Failure(e)) => return Err(failed("the upgrade", &e)),
            Err(HandshakeError::Interrupted(_)) => {
                return Err(LinkEnd::Failed("the upgrade timed out".into()))
            }
        };
        let socket = LinkSocket::new(ws, raw).map_err(|e| failed("the link", &e))?;
        let hello = wire::encode_hello(&self.instance, self.name.as_deref());
        socket
            .send_text(hello)
            .map_err(|e| failed("the hello", &e))?;
        match socket.next(Instant::now() + WELCOME_WITHIN) {
            Next::Text(text) => match wire::parse_welcome(&text) {
                Ok(runner) => {
                    log::info!("connect: the front admitted this runner as `{runner}`");
                    Ok(socket)
                }
                Err(e) => {
                    socket.close(CloseCode::Policy, &e.0);
                    Err(LinkEnd::Failed(e.0))
                }
            },
            Next::Quiet => Err(LinkEnd::Failed("no welcome in time".into())),
            other => Err(LinkEnd::Failed(format!("no welcome: {other:?}"))),
        }
    }

    /// The TCP connection to the front, or to the proxy with a `CONNECT` tunnel through it.
    fn dial(&self) -> io::Result<TcpStream> {
        let front = &self.front;
        if let Some(proxy) = &self.proxy {
            return tunnel(
                proxy,
                &front.host,
                front.port,
                front.tls,
                self.connect_timeout,
            );
        }
        let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
        let addrs: Vec<SocketAddr> = match self.pinned {
            Some(addr) => vec![addr],
            None => {
                let host = front.host.trim_start_matches('[').trim_end_matches(']');
                (host, front.port).to_socket_addrs()?.collect()
            }
        };
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, self.connect_timeout) {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(stream);
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

/// The front's address and link URL from its base URL.
fn parse_front(url: &str) -> Result<Front, SetupError> {
    let base = BaseUrl::parse(url, "front", true)?;
    let url = base.url(if base.tls { "wss" } else { "ws" }, RUNNERS_CONNECT_PATH);
    Ok(Front {
        tls: base.tls,
        host: base.host,
        port: base.port,
        url,
    })
}

/// The rustls client configuration of a `wss://` link: `ca_pem`'s certificates, else the
/// Mozilla roots.
fn tls_config(ca_pem: Option<&[u8]>) -> Result<ClientConfig, SetupError> {
    let mut roots = RootCertStore::empty();
    match ca_pem {
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Some(pem) => {
            for der in ca_der(pem)? {
                roots.add(CertificateDer::from(der)).map_err(|e| {
                    SetupError::new(
                        SetupPart::CaFile,
                        format!("a CA certificate is unusable: {e}"),
                    )
                })?;
            }
        }
    }
    // The process's default crypto provider, as rustls asks of a library: the one the crate
    // features name (ring, in this workspace) unless the application installed another.
    Ok(ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_urls() {
        let f = parse_front("https://front.example/base/").unwrap();
        assert_eq!(
            (f.tls, f.host.as_str(), f.port),
            (true, "front.example", 443)
        );
        assert_eq!(f.url, "wss://front.example/base/api/runners/connect");
        let f = parse_front("http://127.0.0.1:8787").unwrap();
        assert_eq!((f.tls, f.port), (false, 8787));
        assert_eq!(f.url, "ws://127.0.0.1:8787/api/runners/connect");
        let f = parse_front("ws://[::1]:9000").unwrap();
        assert_eq!((f.host.as_str(), f.port), ("[::1]", 9000));
        for bad in [
            "ftp://x",
            "http://",
            "http://u@h",
            "http://h/?q",
            "http://h:port",
        ] {
            assert!(parse_front(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn backoff_is_full_jitter_under_the_cap() {
        let mut backoff = Backoff::new();
        for n in 0..20u32 {
            let bound = Backoff::BASE
                .saturating_mul(1 << n.min(16))
                .min(Backoff::CAP);
            assert!(backoff.next_delay() <= bound);
        }
        backoff.reset();
        assert!(backoff.next_delay() <= Backoff::BASE);
    }
}
