//! Operations: the admin listener, metrics, logs, reloads, systemd, traces, deploy recipes.
//!
//! One test binary; each module below was a test binary of its own and keeps its tests.

use webcodex_plugin_testkit as common;
use webcodex_plugin_testkit::tempdir;
#[path = "../support/ops.rs"]
mod ops_support;

mod deploy;
mod ops_admin;
mod ops_links;
mod ops_logging;
mod ops_reload;
mod ops_systemd;
mod ops_trace;
