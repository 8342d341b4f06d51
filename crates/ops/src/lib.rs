//! Operations for `webcodex-plugin-host`: what a supervisor and a monitoring system read from a
//! running `serve` through its admin listener (`serve --admin-listen ADDR`).
//!
//! The problem: a host serving plugins runs for weeks under a service manager; an operator
//! must tell a live process from a ready one, see which provider is down, and scrape numbers
//! without the probes competing with real traffic or waking an idle host. The pieces:
//! - [`readiness`]: which configured providers are not ready (`GET /readyz`), read from the
//!   committed sets when asked;
//! - [`Metrics`]: the Prometheus exposition (`GET /metrics`): counters and histograms fed by the
//!   front ends' [`Observer`](webcodex_plugin_host::Observer) hooks, and
//!   gauges read when scraped (provider status, retirements, remote runners: in flight,
//!   breaker, link up and reconnects, the process's memory, threads and descriptors), so an
//!   idle host wakes for nothing;
//! - [`AdminServer`]: the listener that serves them, on its own port with its own bounds
//!   ([`ADMIN_MAX_CONNECTIONS`], [`ADMIN_MAX_PER_PEER`], [`ADMIN_HEAD_TIME`]) and a slot kept
//!   for `GET /healthz`, so a flood of scrapes cannot starve the health check;
//! - [`systemd`]: the service manager's readiness notification and socket activation.
//!
//! Caveats: the admin listener has no authentication; bind it to loopback or a private
//! network. The process gauges (memory, threads, descriptors) are read from `/proc` and are
//! absent on other systems.

#![deny(missing_docs)]
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
