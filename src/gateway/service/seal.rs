//! The gateway's sealed bindings ([`super::super::sealed`]): what `describe` seals instead of
//! storing, and how `call` opens a binding back into what it stands for, on any gateway that
//! holds the keys.
//!
//! - A local tool's binding holds the runner name and host instance, the provider id and
//!   instance, the tool and its observation; it opens while the same host serves that runner
//!   name and the same provider instance is committed (else `plugin_replaced`).
//! - A remote tool's binding holds the runner id and instance, the remote's own binding, the
//!   provider id, the tool and its observation. It opens while a runner of that id is
//!   registered and, when its link names its instance, it is the same one (else
//!   `plugin_replaced`). The tool definition (for the output-schema check of the result) comes
//!   from this gateway's cache of described tools, keyed by observation; a gateway that never
//!   described it (another replica did) describes it once on the runner and keeps it, when
//!   its observation is the binding's (else `plugin_replaced`).
//! - A project-bound binding also holds its project target: a local one what the host needs to
//!   bind it again to the instance's pinned directory (`host::unseal_project`: its id is keyed
//!   per process, so it opens only in the process that made it, a `connect` runner's own
//!   sealer), a remote one the runner's target id; a call checks it as a stored binding's.
//! - A binding that does not open (not sealed by these keys, tampered, expired), or whose
//!   contents do not read back, is `describe_required`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde_json::json;

use super::super::relay;
use super::super::sealed::{observation_bytes, observation_text, BindingSealer, SealedTarget};
use super::{replaced, Bound, Gateway, RemoteBinding, Runner};
use crate::catalog::Tool;
use crate::error::{Error, ErrorCode};
use crate::gateway::binding::BindingTarget;
use crate::gateway::output::Failure;
use crate::gateway::params::ActionKind;
use crate::gateway::remote::{RemoteRunner, REMOTE_RUNNER};
use crate::host::{sealed_project, unseal_project, valid_project_target, ProviderState};

/// How many described tools a sealing gateway keeps for the output-schema check of calls
/// (oldest dropped first; a dropped one is described again on its next call).
pub const SEALED_TOOL_CACHE: usize = 512;

/// A gateway's sealing: its sealer, once given, and the tools its remote bindings name.
#[derive(Default)]
pub(super) struct Sealing {
    sealer: OnceLock<Arc<dyn BindingSealer>>,
    tools: Mutex<ToolCache>,
}

/// Described tools by observation, the oldest dropped first beyond [`SEALED_TOOL_CACHE`].
#[derive(Default)]
struct ToolCache {
    order: VecDeque<[u8; 32]>,
    tools: HashMap<[u8; 32], Tool>,
}

impl ToolCache {
    fn insert(&mut self, key: [u8; 32], tool: Tool) {
        if self.tools.insert(key, tool).is_some() {
            return;
        }
        self.order.push_back(key);
        while self.order.len() > SEALED_TOOL_CACHE {
            if let Some(oldest) = self.order.pop_front() {
                self.tools.remove(&oldest);
            }
        }
    }
}

fn describe_required() -> Error {
    Error::not_started(
        ErrorCode::DescribeRequired,
        "the binding is unknown or expired; describe the tool again",
    )
}

fn cannot_seal() -> Error {
    Error::not_started(
        ErrorCode::Internal,
        "the gateway could not seal a binding (no system randomness, or a field over its \
         length); try again",
    )
}

impl Gateway {
    /// Seals every binding this gateway makes from now on with `sealer`, and opens only
    /// bindings it opens (docs/PROTOCOL.md, sealed bindings): call it once, before serving.
    /// False (and nothing changes) when the gateway already seals.
    pub fn seal_bindings(&self, sealer: Arc<dyn BindingSealer>) -> bool {
        self.sealing.sealer.set(sealer).is_ok()
    }

    /// True once [`Gateway::seal_bindings`] was called.
    pub fn seals_bindings(&self) -> bool {
        self.sealing.sealer.get().is_some()
    }

    /// The sealed form of `bound`, when this gateway seals; `None` when it stores bindings.
    pub(super) fn seal(&self, bound: &Bound) -> Option<Result<String, Error>> {
        let sealer = self.sealing.sealer.get()?;
        // An observation is always `sha256:` and 64 hex digits (`Tool::observation`).
        let observation = match bound {
            Bound::Local(t, _) => observation_bytes(&t.observation),
            Bound::Remote(t) => observation_bytes(t.tool.observation()),
        };
        let Some(observation) = observation else {
            return Some(Err(cannot_seal()));
        };
        // A local binding's project target as the host can bind it again; a remote one's as
        // its runner gave it.
        let project = match bound {
            Bound::Local(t, _) => t.project.as_ref().map(sealed_project),
            Bound::Remote(t) => t
                .project_target
                .as_ref()
                .map(|p| Some(p.as_bytes().to_vec())),
        };
        let project = match project {
            Some(None) => return Some(Err(cannot_seal())),
            Some(Some(bytes)) => Some(bytes),
            None => None,
        };
        let target = match bound {
            Bound::Local(t, _) => SealedTarget::Local {
                runner: t.runner.clone(),
                runner_id: t.runner_id.get(),
                plugin: t.plugin.clone(),
                instance: t.instance.get(),
                tool: t.tool.clone(),
                observation,
                project,
            },
            Bound::Remote(t) => {
                self.sealing
                    .tools
                    .lock()
                    .insert(observation, t.tool.clone());
                SealedTarget::Remote {
                    runner: t.runner.id().to_string(),
                    instance: t.instance.clone(),
                    binding: t.binding.clone(),
                    plugin: t.plugin.clone(),
                    tool: t.tool.name().to_string(),
                    observation,
                    project,
                }
            }
        };
        let sealed = target.encode().and_then(|contents| sealer.seal(&contents));
        Some(sealed.ok_or_else(cannot_seal))
    }

    /// What `binding` stands for: opened, when this gateway seals; else looked up in its store.
    /// Unknown, evicted, or a box that does not open: `describe_required`.
    pub(super) fn bound(&self, binding: &str) -> Result<Arc<Bound>, Failure> {
        match self.sealing.sealer.get() {
            Some(sealer) => self.open(sealer.as_ref(), binding),
            None => Ok(self
                .bindings
                .resolve(binding)
                .ok_or_else(describe_required)?),
        }
    }

    /// What the sealed `binding` stands for.
    fn open(&self, sealer: &dyn BindingSealer, binding: &str) -> Result<Arc<Bound>, Failure> {
        let target = sealer
            .open(binding)
            .and_then(|contents| SealedTarget::decode(&contents));
        match target {
            Some(target) => self.reach(target).map(Arc::new),
            None => Err(describe_required().into()),
        }
    }

    /// The binding of an opened `target`, as a stored binding would have it.
    fn reach(&self, target: SealedTarget) -> Result<Bound, Failure> {
        match target {
            SealedTarget::Local {
                runner,
                runner_id,
                plugin,
                instance,
                tool,
                observation,
                project,
            } => {
                let host = self
                    .runner(&runner)
                    .filter(|host| host.runner_id().get() == runner_id)
                    .ok_or_else(replaced)?;
                let set = host.providers();
                let entry = set.entry(&plugin);
                let instance = match entry.map(|e| &e.state) {
                    Some(ProviderState::Ready(p)) if p.instance().get() == instance => p.instance(),
                    _ => return Err(replaced().into()),
                };
                // The provider instance is the one bound: its pinned directory is the project's.
                let project = match (project, entry) {
                    (None, _) => None,
                    (Some(sealed), Some(entry)) => {
                        Some(unseal_project(entry, &sealed).ok_or_else(describe_required)?)
                    }
                    (Some(_), None) => return Err(replaced().into()),
                };
                let target = BindingTarget {
                    runner,
                    runner_id: host.runner_id(),
                    plugin,
                    instance,
                    tool,
                    observation: observation_text(&observation),
                    project,
                };
                Ok(Bound::Local(target, None))
            }
            SealedTarget::Remote {
                runner,
                instance,
                binding,
                plugin,
                tool,
                observation,
                project,
            } => {
                let project_target = match project {
                    None => None,
                    Some(sealed) => Some(
                        String::from_utf8(sealed)
                            .ok()
                            .filter(|t| valid_project_target(t))
                            .ok_or_else(describe_required)?,
                    ),
                };
                let remote = match self.runners.read().get(&runner) {
                    Some(Runner::Remote(remote)) => remote.clone(),
                    _ => return Err(replaced().into()),
                };
                if let Some(now) = remote.link_instance() {
                    if instance.as_deref() != Some(now.as_str()) {
                        return Err(replaced().into());
                    }
                }
                let cached = self.sealing.tools.lock().tools.get(&observation).cloned();
                let tool = match cached {
                    Some(cached) if cached.name() == tool => cached,
                    _ => self.describe_again(&remote, &plugin, &tool, &observation, &instance)?,
                };
                Ok(Bound::Remote(Box::new(RemoteBinding {
                    runner: remote,
                    binding,
                    instance,
                    plugin,
                    tool,
                    project_target,
                })))
            }
        }
    }

    /// The tool a remote binding names, described again on its runner (this gateway did not
    /// describe it, or no longer keeps it): kept when its observation is the binding's, else
    /// the binding's tool was replaced.
    fn describe_again(
        &self,
        remote: &Arc<RemoteRunner>,
        plugin: &str,
        tool: &str,
        observation: &[u8; 32],
        instance: &Option<String>,
    ) -> Result<Tool, Failure> {
        let params = json!({
            "action": "describe", "runner": REMOTE_RUNNER, "plugin": plugin, "tool": tool,
        });
        let answer = remote.forward(&self.remote_slots, ActionKind::Describe, &params)?;
        if instance.is_some() && answer.instance != *instance {
            return Err(replaced().into());
        }
        let (success, json) = answer.output.into_parts();
        if !success {
            return Err(replaced().into());
        }
        let described = relay::describe(&json, plugin, tool, remote.id())
            .ok_or_else(|| remote.unusable_answer(ActionKind::Describe))?;
        if observation_bytes(described.tool.observation()).as_ref() != Some(observation) {
            return Err(replaced().into());
        }
        self.sealing
            .tools
            .lock()
            .insert(*observation, described.tool.clone());
        Ok(described.tool)
    }
}
