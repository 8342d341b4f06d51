//! `serve` and the HTTP client: routes, stalls, credentials, hostile servers, CORS, the inspector.
//!
//! One test binary; each module below was a test binary of its own and keeps its tests.

use webcodex_plugin_testkit as common;
use webcodex_plugin_testkit::gateway as gateway_support;
use webcodex_plugin_testkit::tempdir;
#[path = "../support/client.rs"]
mod client_support;
#[path = "../support/exchange.rs"]
mod exchange_support;
#[path = "../support/hostile.rs"]
mod hostile_support;
#[path = "../support/inspector.rs"]
mod inspector_support;

mod client_credentials;
mod client_exchange;
mod client_hostile;
mod client_transport;
mod cors;
mod gateway_canary;
mod inspector;
mod project_bound;
mod serve;
mod serve_stall;
