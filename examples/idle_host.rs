//! A minimal embedder: starts K copies of a plugin through the library, stays idle, and prints
//! its own resident memory. Measures what the library costs without the command-line tool.
//!
//! `idle_host PLUGIN [K] [SECONDS]`

use std::time::Duration;

use webcodex_plugin_host::{ConfigSource, Host, HostOptions};
use webcodex_plugin_host::{PluginsConfig, ProviderConfig, RunnerConfig};

fn main() {
    let mut args = std::env::args().skip(1);
    let command = args.next().expect("usage: idle_host PLUGIN [K] [SECONDS]");
    let k: usize = args.next().map_or(8, |v| v.parse().expect("K is a number"));
    let seconds: u64 = args
        .next()
        .map_or(10, |v| v.parse().expect("SECONDS is a number"));
    let providers = (0..k)
        .map(|i| ProviderConfig {
            id: format!("p{i}"),
            name: format!("provider {i}"),
            command: command.clone(),
            args: Vec::new(),
            cwd: None,
            profile: None,
            timeout: Duration::from_secs(30),
            restart: Default::default(),
        })
        .collect();
    let config = RunnerConfig {
        plugins: PluginsConfig {
            providers,
            ..PluginsConfig::default()
        },
        ..RunnerConfig::default()
    };
    let options = HostOptions {
        max_providers: k.max(8),
        ..HostOptions::default()
    };
    let host = Host::start(ConfigSource::Fixed(config), options).expect("valid config");
    std::thread::sleep(Duration::from_secs(seconds));
    let ready = host
        .providers()
        .entries()
        .iter()
        .filter(|e| e.error_code().is_none())
        .count();
    println!(
        "{{\"providers\":{k},\"ready\":{ready},\"rss_kb\":{}}}",
        current_rss_kb()
    );
}

/// This process's current resident set (`VmRSS`, KiB); 0 where unknown.
fn current_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}
