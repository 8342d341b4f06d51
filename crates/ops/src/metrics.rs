//! The Prometheus exposition of `GET /metrics` (text format 0.0.4, `prometheus-client`).
//!
//! Every name starts with [`METRIC_PREFIX`]; counters end in `_total`, durations are seconds,
//! sizes bytes. Labels take values from closed sets only: action names, outcomes, error codes,
//! dispatch states, route names, HTTP statuses, and the runner and plugin ids of the
//! configuration (never a caller's string), so the number of series is bounded.
//!
//! Counters and histograms are fed by the front ends ([`Observer`]); gauges are read when a
//! scrape asks (no collector thread: an idle host stays idle).

use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::links::{self, DialOutIds, Links};
use super::process;
use super::readiness::{self, ProviderStatus};
use webcodex_plugin_host::ErrorCode;
use webcodex_plugin_host::Gateway;
use webcodex_plugin_host::{Finished, Observer};
use webcodex_plugin_http::TOOLS_CALL_PATH;
use webcodex_plugin_mcp::http::MCP_PATH;

/// The prefix of every metric name.
pub const METRIC_PREFIX: &str = "webcodex_plugin";
/// The `Content-Type` of the exposition.
pub const METRICS_CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The upper bounds of the request duration histogram, in seconds: 0.5 ms to 60 s.
const DURATION_BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

type Pair = [(&'static str, &'static str); 2];
type Single = [(&'static str, &'static str); 1];
type HttpLabels = ([(&'static str, &'static str); 1], [(&'static str, u16); 1]);

/// The metrics of one process: its registry and the live families the front ends feed.
pub struct Metrics {
    registry: Registry,
    live: Arc<Live>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// The families updated as requests happen (clones share their values with the registry's).
#[derive(Debug)]
struct Live {
    requests: Family<Pair, Counter>,
    durations: Family<Pair, Histogram>,
    busy: Family<Single, Counter>,
    timeouts: Family<Pair, Counter>,
    project: Family<Pair, Counter>,
    http: Family<HttpLabels, Counter>,
    open_connections: Gauge,
    /// The dial-out runners' ids and links accepted (read by the scrape).
    links: Arc<Mutex<Links>>,
}

impl Metrics {
    /// The metrics of a process serving `gateway`. Install [`Metrics::observer`] so the front
    /// ends feed them.
    pub fn new(gateway: Arc<Gateway>) -> Metrics {
        let live = Arc::new(Live {
            requests: Family::default(),
            durations: Family::new_with_constructor(|| Histogram::new(DURATION_BUCKETS)),
            busy: Family::default(),
            timeouts: Family::default(),
            project: Family::default(),
            http: Family::default(),
            open_connections: Gauge::default(),
            links: Arc::default(),
        });
        let mut registry = Registry::with_prefix(METRIC_PREFIX);
        registry.register(
            "requests",
            "plugin_tool requests answered, by action and outcome",
            live.requests.clone(),
        );
        registry.register_with_unit(
            "request_duration",
            "Time the gateway took to answer a plugin_tool request, by action and outcome",
            Unit::Seconds,
            live.durations.clone(),
        );
        registry.register(
            "busy_rejections",
            "Requests refused because something was busy (a provider, a check or reload, the in-flight bound), by code",
            live.busy.clone(),
        );
        registry.register(
            "timeouts",
            "Requests that ran out of time (a plugin or a remote runner), by code and dispatch state",
            live.timeouts.clone(),
        );
        registry.register(
            "project_refusals",
            "Describes and calls refused because of their project root (changed, unavailable, mismatch), by action and code; nothing reached a plugin",
            live.project.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests answered on the serving port, by route and status",
            live.http.clone(),
        );
        registry.register(
            "http_open_connections",
            "HTTP connections being served on the serving port",
            live.open_connections.clone(),
        );
        registry.register_collector(Box::new(Scraped {
            gateway,
            links: live.links.clone(),
        }));
        Metrics { registry, live }
    }

    /// The hooks to install with [`webcodex_plugin_host::install_observer`].
    pub fn observer(&self) -> Arc<dyn Observer> {
        Arc::new(Feed(self.live.clone()))
    }

    /// The handle that tells these metrics the runner ids that may dial out (the runner
    /// tokens'), so each shows in `runner_link_up` before it first connects.
    pub fn dial_out_ids(&self) -> DialOutIds {
        DialOutIds(self.live.links.clone())
    }

    /// The exposition now: the live families and the gauges read at this moment.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry).is_err()
        {
            // Writing to a String cannot fail; an encoder bug leaves a partial page.
            log::error!("metrics: the exposition could not be encoded");
        }
        text
    }
}

/// The front ends' hooks, writing into the live families.
struct Feed(Arc<Live>);

impl Observer for Feed {
    fn request_finished(&self, finished: &Finished) {
        let action = finished.action.map_or("unknown", |a| a.as_str());
        let labels = [("action", action), ("outcome", finished.outcome.as_str())];
        self.0.requests.get_or_create(&labels).inc();
        self.0
            .durations
            .get_or_create(&labels)
            .observe(finished.elapsed.as_secs_f64());
        match finished.code {
            Some(
                code @ (ErrorCode::ProviderBusy
                | ErrorCode::CheckBusy
                | ErrorCode::ReloadBusy
                | ErrorCode::GatewaySaturated),
            ) => {
                self.0.busy.get_or_create(&[("code", code.as_str())]).inc();
            }
            Some(code @ (ErrorCode::Timeout | ErrorCode::GatewayTimeout)) => {
                let dispatch = finished.dispatch.map_or("unknown", |d| d.as_str());
                let labels = [("code", code.as_str()), ("dispatch", dispatch)];
                self.0.timeouts.get_or_create(&labels).inc();
            }
            Some(
                code @ (ErrorCode::ProjectChanged
                | ErrorCode::ProjectUnavailable
                | ErrorCode::ProjectMismatch),
            ) => {
                let labels = [("action", action), ("code", code.as_str())];
                self.0.project.get_or_create(&labels).inc();
            }
            _ => {}
        }
    }

    fn saturated(&self) {
        let code = ErrorCode::GatewaySaturated.as_str();
        self.0.busy.get_or_create(&[("code", code)]).inc();
    }

    fn http_answered(&self, path: &str, status: u16) {
        let labels = ([("route", route_of(path))], [("status", status)]);
        self.0.http.get_or_create(&labels).inc();
    }

    fn connection_opened(&self) {
        self.0.open_connections.inc();
    }

    fn connection_closed(&self) {
        self.0.open_connections.dec();
    }

    fn link_accepted(&self, runner: &str) {
        self.0.links.lock().accepted(runner);
    }
}

/// The route label of a request path: one of the server's routes, or `other`.
fn route_of(path: &str) -> &'static str {
    match path {
        TOOLS_CALL_PATH => TOOLS_CALL_PATH,
        MCP_PATH => MCP_PATH,
        _ if webcodex_plugin_http::inspector::is_route(path) => "inspector",
        _ => "other",
    }
}

/// The gauges read when a scrape asks.
#[derive(Debug)]
struct Scraped {
    gateway: Arc<Gateway>,
    links: Arc<Mutex<Links>>,
}

impl Collector for Scraped {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let providers = readiness::providers(&self.gateway);
        {
            let mut family = encoder.encode_descriptor(
                "provider_status",
                "Configured providers by status (1 for the provider's current status).",
                None,
                MetricType::Gauge,
            )?;
            for reading in &providers {
                for status in ProviderStatus::ALL {
                    let labels = [
                        ("runner", reading.runner.as_str()),
                        ("plugin", reading.plugin.as_str()),
                        ("status", status.as_str()),
                    ];
                    let value = i64::from(reading.status == status);
                    ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
                }
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "provider_retirements",
                "Plugin instances retired, by reason (exited, stopped, or the error code of the fault).",
                None,
                MetricType::Counter,
            )?;
            for (reason, count) in webcodex_plugin_host::retirement_counts() {
                let labels = [("reason", reason)];
                ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "restarts",
                "Restarts started by the restart policy (restart = \"on-failure\"), by plugin: each a new process, admitted or not.",
                None,
                MetricType::Counter,
            )?;
            for (plugin, count) in readiness::restarts(&self.gateway) {
                let labels = [("plugin", plugin.as_str())];
                ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
            }
        }
        let remotes = self.gateway.remote_runners();
        {
            let mut family = encoder.encode_descriptor(
                "runner_in_flight",
                "Requests in flight to each remote runner (a --runners runner, or one that dials out while its link is connected).",
                None,
                MetricType::Gauge,
            )?;
            for remote in &remotes {
                let labels = [("runner", remote.id())];
                let in_flight = i64::try_from(remote.in_flight()).unwrap_or(i64::MAX);
                ConstGauge::new(in_flight).encode(family.encode_family(&labels)?)?;
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "runner_breaker_state",
                "Circuit breaker of each remote runner (1 for its current state: closed, open or probing), as runner_in_flight.",
                None,
                MetricType::Gauge,
            )?;
            for remote in &remotes {
                let current = remote.breaker_state();
                for state in webcodex_plugin_host::BREAKER_STATES {
                    let labels = [("runner", remote.id()), ("state", state)];
                    let value = i64::from(current == state);
                    ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
                }
            }
        }
        links::encode(&self.links, &remotes, &mut encoder)?;
        let stats = process::read();
        let gauges = [
            (
                "process_resident_memory",
                "Resident memory of this process.",
                Some(Unit::Bytes),
                stats.resident_bytes,
            ),
            (
                "process_threads",
                "Threads of this process.",
                None,
                stats.threads,
            ),
            (
                "process_open_fds",
                "Open file descriptors of this process.",
                None,
                stats.open_fds,
            ),
        ];
        for (name, help, unit, value) in gauges {
            let Some(value) = value else { continue };
            let gauge = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
            let metric = encoder.encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
            gauge.encode(metric)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_a_closed_set() {
        assert_eq!(route_of("/api/tools/call"), "/api/tools/call");
        assert_eq!(route_of("/mcp"), "/mcp");
        assert_eq!(route_of("/anything/a-caller/wrote"), "other");
    }

    #[test]
    fn exposition_names_carry_the_prefix_and_units() {
        let metrics = Metrics::new(Arc::new(Gateway::new([])));
        let feed = metrics.observer();
        feed.http_answered("/mcp", 200);
        feed.saturated();
        let text = metrics.encode();
        assert!(
            text.contains("webcodex_plugin_http_requests_total{route=\"/mcp\",status=\"200\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("webcodex_plugin_busy_rejections_total{code=\"gateway_saturated\"} 1"),
            "{text}"
        );
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            assert!(line.starts_with("webcodex_plugin_"), "{line}");
        }
    }

    #[test]
    fn project_refusals_are_counted_by_action_and_code() {
        use std::time::Duration;
        use webcodex_plugin_host::Error;
        use webcodex_plugin_host::ToolOutput;

        let metrics = Metrics::new(Arc::new(Gateway::new([])));
        let feed = metrics.observer();
        for (action, code) in [
            ("call", ErrorCode::ProjectChanged),
            ("call", ErrorCode::ProjectChanged),
            ("describe", ErrorCode::ProjectMismatch),
            ("call", ErrorCode::ProjectUnavailable),
        ] {
            let output = ToolOutput::failure(&Error::not_started(code, "refused"));
            let params = serde_json::json!({ "action": action });
            feed.request_finished(&Finished::of(&params, &output, Duration::ZERO));
        }
        let text = metrics.encode();
        for line in [
            r#"webcodex_plugin_project_refusals_total{action="call",code="plugin_project_changed"} 2"#,
            r#"webcodex_plugin_project_refusals_total{action="describe",code="plugin_project_mismatch"} 1"#,
            r#"webcodex_plugin_project_refusals_total{action="call",code="plugin_project_unavailable"} 1"#,
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
    }
}
