//! The `webcodex-plugin` command line: one-shot commands, bench, init, tokens, the operator's log.
//!
//! One test binary; each module below was a test binary of its own and keeps its tests.

use webcodex_plugin_testkit as common;
use webcodex_plugin_testkit::tempdir;
#[path = "../support/bench.rs"]
mod bench_support;

mod cli;
mod cli_bench;
mod first_hour;
mod node;
mod operator_log;
mod provider_host_process;
mod sdk_example;
mod tokens_file;
