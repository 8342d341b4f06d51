//! Operations: what a supervisor and a monitoring system read from a running `serve` through
//! its admin listener (feature `ops`, `serve --admin-listen ADDR`):
//! - [`readiness`]: which configured providers are not ready (`GET /readyz`), read from the
//!   committed sets when asked;
//! - [`Metrics`]: the Prometheus exposition (`GET /metrics`): counters and histograms fed by the
//!   front ends' [`Observer`](webcodex_plugin_host::transport::observe::Observer) hooks, and gauges read when
//!   scraped (provider status, retirements, remote runners: in flight, breaker, link up and
//!   reconnects, the process's memory, threads and descriptors), so an idle host wakes for
//!   nothing;
//!
//! - [`AdminServer`]: the listener that serves them;
//! - [`systemd`]: the service manager's readiness notification and socket activation.

#![forbid(unsafe_code)]

mod admin;
mod links;
mod metrics;
mod process;
pub mod readiness;
pub mod systemd;

pub use admin::{
    AdminServer, AdminStopper, ADMIN_HEAD_TIME, ADMIN_MAX_CONNECTIONS, ADMIN_MAX_PER_PEER,
    HEALTHZ_PATH, METRICS_PATH, READYZ_PATH,
};
pub use links::DialOutIds;
pub use metrics::{Metrics, METRICS_CONTENT_TYPE, METRIC_PREFIX};
