//! An immutable committed provider set.

use std::path::PathBuf;
use std::sync::Arc;

use super::root::Pin;
use super::Started;
use crate::env::{ProviderConfig, RunnerConfig};
use crate::error::{Error, ErrorCode};
use crate::provider::{InstanceId, Provider};

/// The state of one configured provider in a committed set.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ProviderState {
    /// Admitted; may since have been retired (see [`Provider::is_retired`]).
    Ready(Arc<Provider>),
    /// Admission failed.
    Failed(Error),
}

/// One configured provider of a committed set.
#[derive(Debug, Clone)]
pub struct ProviderEntry {
    /// The provider id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The configured cwd (for the project catalog; never shown to callers).
    pub cwd: Option<PathBuf>,
    /// Ready or failed.
    pub state: ProviderState,
    /// The directory the ready instance was started in (its configured `cwd`), held open for
    /// project-bound bindings; `None` without a `cwd`, or when it could not be opened.
    pub(crate) root: Option<Arc<Pin>>,
}

impl ProviderEntry {
    pub(crate) fn new(cfg: &ProviderConfig, result: Result<Started, Error>) -> ProviderEntry {
        let (state, root) = match result {
            Ok(started) => (
                ProviderState::Ready(Arc::new(started.provider)),
                started.root,
            ),
            Err(error) => (ProviderState::Failed(error), None),
        };
        ProviderEntry {
            id: cfg.id.clone(),
            name: cfg.name.clone(),
            cwd: cfg.cwd.clone(),
            state,
            root,
        }
    }

    /// The live provider, if admitted.
    pub fn provider(&self) -> Option<&Arc<Provider>> {
        match &self.state {
            ProviderState::Ready(p) => Some(p),
            ProviderState::Failed(_) => None,
        }
    }

    /// The error code to list: the admission failure, or `plugin_provider_unavailable` for a
    /// retired instance; `None` when ready and live.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match &self.state {
            ProviderState::Ready(p) if p.is_retired() => Some(ErrorCode::ProviderUnavailable),
            ProviderState::Ready(_) => None,
            ProviderState::Failed(e) => Some(e.code()),
        }
    }
}

/// The providers of one runner, in configuration order. Never mutated: a reload builds a new one.
#[derive(Debug, Default)]
pub struct ProviderSet {
    entries: Vec<ProviderEntry>,
}

impl ProviderSet {
    pub(crate) fn new(entries: Vec<ProviderEntry>) -> ProviderSet {
        ProviderSet { entries }
    }

    /// The set of `config`'s providers with their preparation results, in config order.
    pub(crate) fn from_results(
        config: &RunnerConfig,
        results: Vec<Result<Started, Error>>,
    ) -> ProviderSet {
        let entries = config
            .plugins
            .providers
            .iter()
            .zip(results)
            .map(|(cfg, result)| ProviderEntry::new(cfg, result))
            .collect();
        ProviderSet::new(entries)
    }

    pub(crate) fn empty() -> ProviderSet {
        ProviderSet::default()
    }

    /// Logs one info line per provider (id, status, tool count or code) for the operator.
    pub(crate) fn log_started(&self) {
        for entry in &self.entries {
            match &entry.state {
                ProviderState::Ready(p) => log::info!(
                    "plugin provider {:?}: ready, {} tools",
                    entry.id,
                    p.catalog().tools().len()
                ),
                ProviderState::Failed(e) => log::info!(
                    "plugin provider {:?}: failed, code {}, 0 tools",
                    entry.id,
                    e.code().as_str()
                ),
            }
        }
    }

    /// Every entry, in configuration order.
    pub fn entries(&self) -> &[ProviderEntry] {
        &self.entries
    }

    /// The entry with this id.
    pub fn entry(&self, id: &str) -> Option<&ProviderEntry> {
        self.entries.iter().find(|e| e.id == id)
    }

    /// The ready, live provider with this id.
    pub fn ready(&self, id: &str) -> Result<Arc<Provider>, Error> {
        let entry = self.entry(id).ok_or_else(super::not_configured)?;
        match &entry.state {
            ProviderState::Ready(p) if p.is_retired() => Err(unavailable()),
            ProviderState::Ready(p) => Ok(p.clone()),
            ProviderState::Failed(e) => {
                let error = Error::not_started(
                    ErrorCode::ProviderUnavailable,
                    format!(
                        "the provider failed to start ({}); fix it and reload",
                        e.code()
                    ),
                );
                Err(match e.local_detail() {
                    Some(detail) => error.with_local_detail(detail),
                    None => error,
                })
            }
        }
    }

    /// The exact instance `instance` of provider `id`, if it is still committed.
    pub fn instance(&self, id: &str, instance: InstanceId) -> Result<Arc<Provider>, Error> {
        match self.entry(id).and_then(ProviderEntry::provider) {
            Some(p) if p.instance() == instance => {
                if p.is_retired() {
                    Err(unavailable())
                } else {
                    Ok(p.clone())
                }
            }
            _ => Err(Error::not_started(
                ErrorCode::StaleProvider,
                "that provider instance is no longer committed; list and describe again",
            )),
        }
    }

    /// Stops the providers of a set that is no longer committed and that no call holds. Such an
    /// instance can only be reached again through an old snapshot of the set, and a call made
    /// that way fails cleanly (`plugin_provider_unavailable`) instead of keeping it alive.
    pub(crate) fn stop_unused(&self) {
        for entry in &self.entries {
            if let Some(p) = entry.provider().filter(|p| Arc::strong_count(p) == 1) {
                p.stop();
            }
        }
    }

    /// Announces shutdown to every provider (kills their process groups, does not wait).
    pub(crate) fn stop_all(&self) {
        for entry in &self.entries {
            if let Some(p) = entry.provider() {
                p.stop();
            }
        }
    }
}

pub(super) fn unavailable() -> Error {
    Error::not_started(
        ErrorCode::ProviderUnavailable,
        "the provider was retired after a fault; reload to start it again",
    )
}
