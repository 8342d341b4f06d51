//! Remote runners: the `--runners` front, the hop, and runners that dial out (the link).
//!
//! One test binary; each module below was a test binary of its own and keeps its tests.

use webcodex_plugin_testkit as common;
use webcodex_plugin_testkit::tempdir;
#[path = "../support/client.rs"]
mod client_support;
#[path = "../support/inspector.rs"]
mod inspector_support;

mod runners_front;
mod runners_hardening;
mod runners_hop;
mod runners_link;
mod runners_project;
