//! The admin listener of `serve --admin-listen ADDR` (feature `ops`): health, readiness and
//! metrics for supervisors and Prometheus, without credentials. Keep it on loopback or a
//! private port: it reveals runner and plugin ids and counts, never a token, argument, path
//! or process id.
//!
//! | route | answer |
//! |---|---|
//! | `GET /healthz` | 200 `{"status":"ok"}` while the process serves |
//! | `GET /readyz` | 200 `{"status":"ready"}` when every configured provider is ready, else 503 `{"notReady":[plugin ids]}`; once the process is stopping ([`AdminStopper::draining`]) 503 `{"notReady":[every id],"stopping":true}`; while it awaits its dial-out runners ([`AdminStopper::await_runners`]) 503 `{"notReady":[],"awaitingRunners":[runner ids]}` |
//! | `GET /metrics` | 200, the Prometheus text exposition ([`Metrics`]) |
//!
//! Another path is 404, another method 405. The connections have bounds of their own, apart
//! from the serving port's and much smaller, and are not counted in its metrics: at most
//! [`ADMIN_MAX_CONNECTIONS`] at once and [`ADMIN_MAX_PER_PEER`] from one peer address, the
//! request head within [`ADMIN_HEAD_TIME`] of the accept, the answer within 2 s, one request a
//! connection (no keep-alive). A health probe is answered even when those are full: a
//! connection beyond them waits, without a thread, for its first bytes, and one that starts
//! with `GET /healthz` or `GET /readyz` is served in one slot kept for it; any other is answered
//! 503 and closed. So no flood of idle connections makes a supervisor see a dead process.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use serde_json::json;

use super::{readiness, Metrics, METRICS_CONTENT_TYPE};
use webcodex_plugin_host::Gateway;
use webcodex_plugin_http::{Bounds, Exchange, Handler, Listener};

/// The liveness route.
pub const HEALTHZ_PATH: &str = "/healthz";
/// The readiness route.
pub const READYZ_PATH: &str = "/readyz";
/// The metrics route.
pub const METRICS_PATH: &str = "/metrics";
/// The most admin connections served at once (a probe beyond them still gets the health slot).
pub const ADMIN_MAX_CONNECTIONS: usize = Bounds::ADMIN.max_connections;
/// The most admin connections from one peer address at once.
pub const ADMIN_MAX_PER_PEER: usize = match Bounds::ADMIN.per_peer {
    Some(max) => max,
    None => usize::MAX,
};
/// The time from an admin connection's accept to the end of its request head.
pub const ADMIN_HEAD_TIME: std::time::Duration = Bounds::ADMIN.head;

/// The admin listener, bound and not yet serving.
pub struct AdminServer {
    listener: Arc<Listener>,
    routes: Arc<AdminRoutes>,
}

impl std::fmt::Debug for AdminServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminServer")
            .field("local_addr", &self.listener.local_addr())
            .finish_non_exhaustive()
    }
}

/// Stops an [`AdminServer`] from another thread.
#[derive(Clone)]
pub struct AdminStopper {
    listener: Arc<Listener>,
    routes: Arc<AdminRoutes>,
}

impl std::fmt::Debug for AdminStopper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminStopper")
    }
}

impl AdminStopper {
    /// The process began to stop (it drains its requests): from now on `/readyz` answers 503
    /// with every configured provider and `"stopping": true`, so a load balancer sends nothing
    /// new; `/healthz` and `/metrics` still answer.
    pub fn draining(&self) {
        self.routes.stopping.store(true, Ordering::Release);
    }

    /// A replica in cluster mode just started: `/readyz` answers 503 with the runner ids still
    /// missing (`awaitingRunners`) until every runner of a runner token has linked to it, or
    /// `within` has passed, whichever comes first; from then on readiness is the providers'
    /// as usual (a runner whose link ends later does not make it unready). So a load balancer
    /// sends a restarted replica nothing before the runners dialled it again.
    pub fn await_runners(&self, within: Duration) {
        *self.routes.awaiting.lock() = Some(Instant::now() + within);
    }

    /// Stops accepting and closes idle connections; [`AdminServer::run`] returns once the
    /// others have answered.
    pub fn stop(&self) {
        self.draining();
        self.listener.stop();
    }
}

struct AdminRoutes {
    gateway: Arc<Gateway>,
    metrics: Metrics,
    stopping: AtomicBool,
    /// Until when `/readyz` awaits the dial-out runners ([`AdminStopper::await_runners`]).
    awaiting: Mutex<Option<Instant>>,
}

impl AdminRoutes {
    /// The dial-out runner ids not linked yet while the process awaits them; `None` once it
    /// no longer does (every one linked once, or the time is up).
    fn awaited_runners(&self) -> Option<Vec<String>> {
        let mut awaiting = self.awaiting.lock();
        let until = (*awaiting)?;
        let linked: Vec<String> = self
            .gateway
            .remote_runners()
            .iter()
            .map(|r| r.id().to_string())
            .collect();
        let missing: Vec<String> = self
            .metrics
            .dial_out_ids()
            .expected()
            .into_iter()
            .filter(|id| !linked.contains(id))
            .collect();
        if missing.is_empty() || Instant::now() >= until {
            *awaiting = None;
            return None;
        }
        Some(missing)
    }
}

impl AdminServer {
    /// Binds `addr` to answer for `gateway`, with `metrics` on `/metrics`.
    pub fn bind(
        addr: impl ToSocketAddrs,
        gateway: Arc<Gateway>,
        metrics: Metrics,
    ) -> io::Result<AdminServer> {
        Ok(AdminServer {
            listener: Arc::new(Listener::bind(addr)?.unobserved().bounded(Bounds::ADMIN)),
            routes: Arc::new(AdminRoutes {
                gateway,
                metrics,
                stopping: AtomicBool::new(false),
                awaiting: Mutex::new(None),
            }),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr()
    }

    /// A handle that stops this listener.
    pub fn stopper(&self) -> AdminStopper {
        AdminStopper {
            listener: self.listener.clone(),
            routes: self.routes.clone(),
        }
    }

    /// Serves until stopped.
    pub fn run(self) {
        self.listener.run(self.routes);
    }
}

impl Handler for AdminRoutes {
    fn handle(&self, exchange: &mut Exchange<'_>) {
        let json = [("Content-Type", "application/json")];
        let path = exchange.path().to_string();
        let known = matches!(path.as_str(), HEALTHZ_PATH | READYZ_PATH | METRICS_PATH);
        if !known {
            let body =
                json!({"error": "no such path; the routes are GET /healthz, /readyz and /metrics"});
            return exchange.respond(404, &json, body.to_string().as_bytes());
        }
        if exchange.method() != "GET" {
            let body = json!({"error": "only GET is allowed"});
            let headers = [("Content-Type", "application/json"), ("Allow", "GET")];
            return exchange.respond(405, &headers, body.to_string().as_bytes());
        }
        match path.as_str() {
            HEALTHZ_PATH => {
                exchange.respond(200, &json, br#"{"status":"ok"}"#);
            }
            READYZ_PATH if self.stopping.load(Ordering::Acquire) => {
                let all: Vec<String> = readiness::providers(&self.gateway)
                    .into_iter()
                    .map(|reading| reading.plugin)
                    .collect();
                let body = json!({ "notReady": all, "stopping": true }).to_string();
                exchange.respond(503, &json, body.as_bytes());
            }
            READYZ_PATH => {
                if let Some(missing) = self.awaited_runners() {
                    let body = json!({ "notReady": [], "awaitingRunners": missing }).to_string();
                    return exchange.respond(503, &json, body.as_bytes());
                }
                let not_ready = readiness::not_ready(&self.gateway);
                if not_ready.is_empty() {
                    exchange.respond(200, &json, br#"{"status":"ready"}"#);
                } else {
                    let body = json!({ "notReady": not_ready }).to_string();
                    exchange.respond(503, &json, body.as_bytes());
                }
            }
            _ => {
                let text = self.metrics.encode();
                let headers = [("Content-Type", METRICS_CONTENT_TYPE)];
                exchange.respond(200, &headers, text.as_bytes());
            }
        }
    }
}
