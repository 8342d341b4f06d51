//! The runtime against real plugin processes: providers, the host, the gateway and its stdio front.
//!
//! One test binary; each module below was a test binary of its own and keeps its tests.

use webcodex_plugin_testkit as common;
use webcodex_plugin_testkit::gateway as gateway_support;
use webcodex_plugin_testkit::tempdir;

mod gateway_actions;
mod gateway_project;
mod gateway_stdio;
mod host_lifecycle;
mod provider_kick_fds;
mod provider_reaping;
mod provider_runtime;
mod provider_wait;
mod python_example;
mod readme;
mod schema_differential;
