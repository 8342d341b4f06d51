//! Readiness of the providers a process hosts: read from the committed sets when asked, never
//! by a periodic look. A provider is ready when it was admitted and its instance is live; a
//! provider that failed at start, or whose instance was retired (it crashed, timed out, broke
//! the protocol), is not. The exit watch retires an instance as soon as its plugin exits, so a
//! crash shows here at the next question. Remote runners never make a front unready.

use webcodex_plugin_host::Gateway;
use webcodex_plugin_host::ProviderState;

/// The status of one configured provider, as the readiness probe and the metrics see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderStatus {
    /// Admitted and live.
    Ready,
    /// Admission failed (at start or at the last committed reload).
    Failed,
    /// Admitted, then retired after a fault or its exit.
    Retired,
}

impl ProviderStatus {
    /// Every status, in label order.
    pub const ALL: [ProviderStatus; 3] = [
        ProviderStatus::Ready,
        ProviderStatus::Failed,
        ProviderStatus::Retired,
    ];

    /// The label value: `ready`, `failed` or `retired`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderStatus::Ready => "ready",
            ProviderStatus::Failed => "failed",
            ProviderStatus::Retired => "retired",
        }
    }
}

/// One configured provider of a local runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderReading {
    /// The runner id (`local` for `--config`).
    pub runner: String,
    /// The provider id.
    pub plugin: String,
    /// Its status now.
    pub status: ProviderStatus,
}

/// Every configured provider of every runner hosted in this process, in runner then
/// configuration order.
pub fn providers(gateway: &Gateway) -> Vec<ProviderReading> {
    let mut readings = Vec::new();
    for runner in gateway.runner_names() {
        let Some(host) = gateway.runner(&runner) else {
            continue;
        };
        for entry in host.providers().entries() {
            let status = match &entry.state {
                ProviderState::Ready(p) if p.is_retired() => ProviderStatus::Retired,
                ProviderState::Ready(_) => ProviderStatus::Ready,
                _ => ProviderStatus::Failed,
            };
            readings.push(ProviderReading {
                runner: runner.clone(),
                plugin: entry.id.clone(),
                status,
            });
        }
    }
    readings
}

/// The ids of the configured providers that are not ready (each once); empty when the
/// process is ready.
pub fn not_ready(gateway: &Gateway) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for reading in providers(gateway) {
        if reading.status != ProviderStatus::Ready && !ids.contains(&reading.plugin) {
            ids.push(reading.plugin);
        }
    }
    ids
}

/// The restarts of each provider under `restart = "on-failure"` in this process, by plugin id
/// (summed over the local runners that configure it), in id order.
pub fn restarts(gateway: &Gateway) -> Vec<(String, u64)> {
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    for runner in gateway.runner_names() {
        if let Some(host) = gateway.runner(&runner) {
            for (plugin, n) in host.restart_counts() {
                *counts.entry(plugin).or_default() += n;
            }
        }
    }
    counts.into_iter().collect()
}
