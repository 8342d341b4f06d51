//! The request of [`Host::call_instance`](super::Host::call_instance), and what a binding keeps
//! to reach its instance again without looking it up ([`BoundInstance`]).

use std::sync::Weak;
use std::time::Duration;

use serde_json::Value;

use crate::provider::{InstanceId, Provider};

/// A call to one exact provider instance, as a binding recorded it.
///
/// ```
/// # use serde_json::json;
/// # use webcodex_plugin_host::InstanceCall;
/// # fn example(instance: webcodex_plugin_host::InstanceId) {
/// let arguments = json!({"text": "hi"});
/// let call = InstanceCall::new("notes", instance, "word_count", &arguments)
///     .observation("sha256:…")
///     .timeout(std::time::Duration::from_secs(5));
/// # let _ = call;
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct InstanceCall<'a> {
    /// The provider id.
    pub plugin: &'a str,
    /// The provider instance the call must reach; any other is `stale_plugin_provider`.
    pub instance: InstanceId,
    /// The tool name.
    pub tool: &'a str,
    /// The schema observation the caller saw; a differing tool is `plugin_schema_changed`.
    pub observation: Option<&'a str>,
    /// The call arguments (a JSON object).
    pub arguments: &'a Value,
    /// The request budget; `None` = the provider's configured timeout.
    pub timeout: Option<Duration>,
}

impl<'a> InstanceCall<'a> {
    /// A call of `tool` on `instance` of `plugin`, without an observation check and with the
    /// provider's configured timeout.
    pub fn new(
        plugin: &'a str,
        instance: InstanceId,
        tool: &'a str,
        arguments: &'a Value,
    ) -> InstanceCall<'a> {
        InstanceCall {
            plugin,
            instance,
            tool,
            observation: None,
            arguments,
            timeout: None,
        }
    }

    /// Requires the tool's schema observation to equal `observation`.
    pub fn observation(mut self, observation: &'a str) -> InstanceCall<'a> {
        self.observation = Some(observation);
        self
    }

    /// Uses `timeout` instead of the provider's configured timeout.
    pub fn timeout(mut self, timeout: Duration) -> InstanceCall<'a> {
        self.timeout = Some(timeout);
        self
    }
}

/// The instance and tool a `describe` found, kept by its binding: a call reaches them again
/// without looking the provider up in the committed set or the tool up in its catalog, while
/// the host still commits the set they were found in ([`Host::call_bound`](super::Host::call_bound)).
#[derive(Debug, Clone)]
pub(crate) struct BoundInstance {
    /// The generation of the committed set the instance was found in.
    pub(super) generation: u64,
    /// The instance (weak: a binding never keeps a provider alive).
    pub(super) provider: Weak<Provider>,
    /// The tool's place in the instance's frozen catalog.
    pub(super) tool: usize,
}
