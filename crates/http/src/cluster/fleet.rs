//! A runner's links to every replica of its fronts (`connect --front-url URL`, repeatable).
//!
//! Each URL's host is resolved, and each address it resolves to gets a link of its own (a
//! [`Dialer`] pinned to it, with the usual backoff): a headless Service name gives one link per
//! replica. Only the addresses of one family are taken, IPv4 when the name has any (`preferred`):
//! a dual-stack name of one front (an A and an AAAA record) is one front, and two links of one
//! runner to one front would replace each other in turn. Every [`RESOLVE_EVERY`] the names are resolved again: a new address gets a link, a
//! link to an address that is gone is closed (1001). A name that does not resolve keeps the
//! links it had. Through a proxy, which resolves the host itself, a URL gets one link. Every
//! link says hello with the one runner instance of this process, so every replica sees the
//! same runner, and its bindings stay valid across them.
//!
//! A front that refuses the credential (401/403) ends the whole fleet: the token is wrong.

use std::collections::BTreeMap;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;

use crate::link::{wire, ConnectOptions, Dialer, DialerStop, LinkEnd};
use crate::SetupError;
use webcodex_plugin_host::Gateway;

/// How often each front URL's host is resolved again.
pub const RESOLVE_EVERY: Duration = Duration::from_secs(30);

/// The most links one URL gets (the addresses beyond are left out, and the log says so).
pub const MAX_LINKS_PER_URL: usize = 64;

/// Resolves a host and port to its addresses.
pub(crate) type Resolver = Arc<dyn Fn(&str, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync>;

/// One front URL: its options (as `connect` gives them) and its host.
struct Front {
    options: ConnectOptions,
    host: String,
    port: u16,
    proxied: bool,
}

/// What a link thread tells the fleet.
enum Event {
    Stop,
    Refused(u16),
}

/// One link thread and how to stop it.
struct Link {
    stop: DialerStop,
    thread: JoinHandle<()>,
}

/// Stops a [`Fleet`] from another thread: every link gets a close frame, the fleet's wait ends
/// at once.
#[derive(Clone)]
pub struct FleetStop {
    stopped: Arc<AtomicBool>,
    wake: Sender<Event>,
    links: Arc<Mutex<Vec<DialerStop>>>,
}

impl FleetStop {
    /// Requests the stop.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _ = self.wake.try_send(Event::Stop);
        for link in self.links.lock().iter() {
            link.stop();
        }
    }
}

/// A runner's links to its fronts: see the module text.
pub struct Fleet {
    fronts: Vec<Front>,
    instance: String,
    resolve: Resolver,
    every: Duration,
    stop: FleetStop,
    events: Receiver<Event>,
    events_in: Sender<Event>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("fronts", &self.fronts.len())
            .finish_non_exhaustive()
    }
}

fn system_resolve(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((host, port).to_socket_addrs()?.collect())
}

impl Fleet {
    /// Checks every URL's options (as [`Dialer::new`] does) and makes this process's runner
    /// instance. The error names the URL's index (0-based) with the problem.
    pub fn new(fronts: Vec<ConnectOptions>) -> Result<Fleet, (usize, SetupError)> {
        let mut checked = Vec::with_capacity(fronts.len());
        let mut instance = None;
        for (index, options) in fronts.into_iter().enumerate() {
            let dialer = Dialer::new(options.clone()).map_err(|e| (index, e))?;
            instance.get_or_insert_with(|| dialer.instance().to_string());
            let (host, port) = dialer.front_host_port();
            checked.push(Front {
                host: host.to_string(),
                port,
                proxied: dialer.proxied(),
                options,
            });
        }
        let instance = instance.or_else(wire::new_instance).unwrap_or_default();
        let (events_in, events) = bounded(16);
        Ok(Fleet {
            fronts: checked,
            instance,
            resolve: Arc::new(system_resolve),
            every: RESOLVE_EVERY,
            stop: FleetStop {
                stopped: Arc::new(AtomicBool::new(false)),
                wake: events_in.clone(),
                links: Arc::new(Mutex::new(Vec::new())),
            },
            events,
            events_in,
        })
    }

    /// This fleet with another resolver and period (tests).
    #[cfg(test)]
    pub(crate) fn with_resolver(mut self, resolve: Resolver, every: Duration) -> Fleet {
        self.resolve = resolve;
        self.every = every;
        self
    }

    /// The handle that stops [`Fleet::run`].
    pub fn stopper(&self) -> FleetStop {
        self.stop.clone()
    }

    /// This runner process's instance id, in the hello of every link.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Keeps a link to every address of every front until stopped or refused; returns
    /// [`LinkEnd::Stopped`] or [`LinkEnd::Refused`].
    pub fn run(&self, gateway: &Arc<Gateway>) -> LinkEnd {
        let mut links: BTreeMap<(usize, Option<SocketAddr>), Link> = BTreeMap::new();
        let mut retiring: Vec<JoinHandle<()>> = Vec::new();
        let mut unresolved = vec![false; self.fronts.len()];
        let end = loop {
            if self.stop.stopped.load(Ordering::SeqCst) {
                break LinkEnd::Stopped;
            }
            for (index, front) in self.fronts.iter().enumerate() {
                let Some(wanted) = self.addresses(index, front, &mut unresolved[index]) else {
                    continue;
                };
                let gone: Vec<_> = links
                    .keys()
                    .filter(|(i, addr)| *i == index && !wanted.contains(addr))
                    .copied()
                    .collect();
                for key in gone {
                    if let Some(link) = links.remove(&key) {
                        log::info!(
                            "connect: {} no longer resolves to {}; its link is closed",
                            front.host,
                            key.1.map_or_else(String::new, |a| a.to_string())
                        );
                        link.stop.stop();
                        retiring.push(link.thread);
                    }
                }
                for addr in wanted {
                    if let std::collections::btree_map::Entry::Vacant(slot) =
                        links.entry((index, addr))
                    {
                        if let Some(link) = self.start_link(front, addr, gateway) {
                            slot.insert(link);
                        }
                    }
                }
            }
            *self.stop.links.lock() = links.values().map(|l| l.stop.clone()).collect();
            // A stop that came while the links were being started reaches them now.
            if self.stop.stopped.load(Ordering::SeqCst) {
                break LinkEnd::Stopped;
            }
            retiring.retain(|thread| !thread.is_finished());
            match self.events.recv_timeout(self.every) {
                Ok(Event::Stop) | Err(RecvTimeoutError::Disconnected) => break LinkEnd::Stopped,
                Ok(Event::Refused(status)) => break LinkEnd::Refused(status),
                Err(RecvTimeoutError::Timeout) => {}
            }
        };
        for link in links.values() {
            link.stop.stop();
        }
        for link in links.into_values() {
            let _ = link.thread.join();
        }
        for thread in retiring {
            let _ = thread.join();
        }
        end
    }

    /// The addresses `front` should have links to now; `None` to keep its links as they are
    /// (its name did not resolve: said at warn the first time, at info while it lasts).
    fn addresses(
        &self,
        index: usize,
        front: &Front,
        unresolved: &mut bool,
    ) -> Option<Vec<Option<SocketAddr>>> {
        if front.proxied {
            return Some(vec![None]);
        }
        match (self.resolve)(&front.host, front.port) {
            Ok(addrs) if !addrs.is_empty() => {
                *unresolved = false;
                let mut addrs = preferred(addrs);
                if addrs.len() > MAX_LINKS_PER_URL {
                    log::warn!(
                        "connect: {} resolves to {} addresses; links go to the first {}",
                        front.host,
                        addrs.len(),
                        MAX_LINKS_PER_URL
                    );
                    addrs.truncate(MAX_LINKS_PER_URL);
                }
                Some(addrs.into_iter().map(Some).collect())
            }
            outcome => {
                let why = match outcome {
                    Err(e) => e.to_string(),
                    Ok(_) => "no address".into(),
                };
                let message = format!(
                    "connect: front URL {} ({}): its host does not resolve ({why}); its links \
                     stay as they are, trying again in {} s",
                    index + 1,
                    front.host,
                    self.every.as_secs()
                );
                if *unresolved {
                    log::info!("{message}");
                } else {
                    log::warn!("{message}");
                }
                *unresolved = true;
                None
            }
        }
    }

    /// Starts the link thread of `front` at `addr` (unpinned for `None`).
    fn start_link(
        &self,
        front: &Front,
        addr: Option<SocketAddr>,
        gateway: &Arc<Gateway>,
    ) -> Option<Link> {
        let dialer = match Dialer::new(front.options.clone()) {
            Ok(dialer) => dialer.with_instance(&self.instance),
            Err(e) => {
                log::warn!("connect: {}: {e}", front.host);
                return None;
            }
        };
        let dialer = match addr {
            Some(addr) => dialer.pinned(addr),
            None => dialer,
        };
        let stop = dialer.stopper();
        let events = self.events_in.clone();
        let gateway = gateway.clone();
        let thread = std::thread::Builder::new()
            .name("wc-link-dial".into())
            .spawn(move || {
                if let LinkEnd::Refused(status) = dialer.run(&gateway) {
                    let _ = events.try_send(Event::Refused(status));
                }
            });
        match thread {
            Ok(thread) => Some(Link { stop, thread }),
            Err(e) => {
                log::warn!("connect: no thread for a link to {}: {e}", front.host);
                None
            }
        }
    }
}

/// The addresses a name's links go to: its IPv4 addresses when it has any, else its IPv6 ones;
/// sorted, each once.
pub(crate) fn preferred(mut addrs: Vec<SocketAddr>) -> Vec<SocketAddr> {
    if addrs.iter().any(SocketAddr::is_ipv4) {
        addrs.retain(SocketAddr::is_ipv4);
    }
    addrs.sort();
    addrs.dedup();
    addrs
}

#[cfg(test)]
mod tests;
