//! The per-runner link families of the exposition, read when a scrape asks:
//! - `runner_link_up` (gauge, `runner`): for a runner that dials out (a `[[runner_tokens]]`
//!   id), 1 while it has a link to this front, 0 while it has none (configured and never
//!   connected, or its link ended); for a `--runners` runner, 1 unless its last request failed
//!   to reach it or its circuit is open (read from its breaker: nothing is probed);
//! - `runner_reconnects_total` (counter, `runner`, dial-out runners only): the links accepted
//!   for the id after its first since the process started (the runner came back, or replaced
//!   its link).
//!
//! The runner ids are those of the configuration (the runner tokens, the runners file); an id
//! whose token was removed by a reload keeps its series (0, and its count) until a restart, so
//! the series stay bounded by the ids ever configured.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use webcodex_plugin_host::RemoteRunner;

/// What the process knows of its dial-out runners.
#[derive(Debug, Default)]
pub(super) struct Links {
    /// The ids of the runner tokens in force.
    expected: BTreeSet<String>,
    /// Links accepted per id since the start.
    accepted: BTreeMap<String, u64>,
}

/// Sets the runner ids that may dial out to this front (those of its runner tokens): each has
/// a `runner_link_up` series, 0 until it connects. Give it at start and after each reload of
/// the tokens file.
#[derive(Clone)]
pub struct DialOutIds(pub(super) Arc<Mutex<Links>>);

impl std::fmt::Debug for DialOutIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DialOutIds")
    }
}

impl DialOutIds {
    /// The ids of the runner tokens now in force.
    pub fn set<'a>(&self, ids: impl IntoIterator<Item = &'a str>) {
        self.0.lock().expected = ids.into_iter().map(str::to_string).collect();
    }

    /// The ids last [`DialOutIds::set`], in order.
    pub fn expected(&self) -> Vec<String> {
        self.0.lock().expected.iter().cloned().collect()
    }
}

impl Links {
    /// One more link accepted for `runner`.
    pub(super) fn accepted(&mut self, runner: &str) {
        match self.accepted.get_mut(runner) {
            Some(count) => *count += 1,
            None => {
                self.accepted.insert(runner.to_string(), 1);
            }
        }
    }
}

/// Writes both families: `links` as they are now, `remotes` the gateway's remote runners
/// (a dial-out runner is among them exactly while it has a link).
pub(super) fn encode(
    links: &Mutex<Links>,
    remotes: &[Arc<RemoteRunner>],
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let (dial_out, accepted) = {
        let links = links.lock();
        let mut ids = links.expected.clone();
        ids.extend(links.accepted.keys().cloned());
        (ids, links.accepted.clone())
    };
    let mut up: BTreeMap<&str, bool> = BTreeMap::new();
    for id in &dial_out {
        up.insert(id, remotes.iter().any(|r| r.id() == id));
    }
    for remote in remotes.iter().filter(|r| !dial_out.contains(r.id())) {
        up.insert(remote.id(), remote.reached());
    }
    {
        let mut family = encoder.encode_descriptor(
            "runner_link_up",
            "Whether each remote runner is reachable: a runner that dials out, 1 while its link is connected; a --runners runner, 1 unless its last request failed to reach it or its circuit is open.",
            None,
            MetricType::Gauge,
        )?;
        for (id, up) in up {
            let labels = [("runner", id)];
            ConstGauge::new(i64::from(up)).encode(family.encode_family(&labels)?)?;
        }
    }
    let mut family = encoder.encode_descriptor(
        "runner_reconnects",
        "Links accepted for each runner that dials out after its first (it came back, or replaced its link).",
        None,
        MetricType::Counter,
    )?;
    for id in &dial_out {
        let again = accepted.get(id).map_or(0, |n| n.saturating_sub(1));
        let labels = [("runner", id.as_str())];
        ConstCounter::new(again).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_links_after_the_first() {
        let mut links = Links::default();
        links.accepted("edge");
        assert_eq!(links.accepted["edge"], 1);
        links.accepted("edge");
        links.accepted("edge");
        assert_eq!(links.accepted["edge"], 3);
    }
}
