//! The runner.toml model of DESIGN §7.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::Result;

/// Providers per runner unless an embedder raises it.
pub const DEFAULT_MAX_PROVIDERS: usize = 8;
/// `[plugins].request_timeout_secs` when absent.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A validated runner configuration (the parts this crate reads).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunnerConfig {
    /// The `[shell]` table.
    pub shell: ShellConfig,
    /// The `[plugins]` table.
    pub plugins: PluginsConfig,
}

impl RunnerConfig {
    /// The provider with this id.
    pub fn provider(&self, id: &str) -> Option<&ProviderConfig> {
        self.plugins.providers.iter().find(|p| p.id == id)
    }
}

/// The `[shell]` table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShellConfig {
    /// `default_profile`, validated to exist.
    pub default_profile: Option<String>,
    /// `path_prepend`, prepended to PATH in order.
    pub path_prepend: Vec<String>,
    /// `env`, applied after path_prepend.
    pub env: BTreeMap<String, String>,
    /// `[shell.profiles.NAME]`.
    pub profiles: BTreeMap<String, ProfileConfig>,
}

/// One `[shell.profiles.NAME]` table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProfileConfig {
    /// The program that runs init_script (e.g. `bash`).
    pub program: String,
    /// Its arguments before the generated script (e.g. `["-lc"]`).
    pub args: Vec<String>,
    /// Script whose resulting environment becomes the snapshot.
    pub init_script: Option<String>,
    /// Variables applied after `shell.env`.
    pub env: BTreeMap<String, String>,
}

/// The `[plugins]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginsConfig {
    /// `request_timeout_secs` (1..=120, default 30).
    pub request_timeout: Duration,
    /// `[[plugins.providers]]`, in file order.
    pub providers: Vec<ProviderConfig>,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        PluginsConfig {
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            providers: Vec::new(),
        }
    }
}

/// One `[[plugins.providers]]` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// `^[a-z0-9_.-]{1,64}$`, unique in the runner.
    pub id: String,
    /// Display name, 1..=128 bytes, not blank.
    pub name: String,
    /// Program to run (bare name resolved on the snapshot's PATH, or a path).
    pub command: String,
    /// Arguments (≤64, each ≤4096 bytes, total ≤16 KiB).
    pub args: Vec<String>,
    /// Absolute working directory.
    pub cwd: Option<PathBuf>,
    /// Profile name, validated to exist.
    pub profile: Option<String>,
    /// The effective request timeout: `timeout_secs`, else `[plugins].request_timeout_secs`.
    pub timeout: Duration,
}

/// Parses and validates runner.toml text. `max_providers` is normally [`DEFAULT_MAX_PROVIDERS`].
///
/// Errors: `plugin_config_parse_failed` for TOML syntax, `plugin_config_invalid` for a model
/// violation (message names the key and says what is allowed).
pub fn parse_runner_config(text: &str, max_providers: usize) -> Result<RunnerConfig> {
    let _ = (text, max_providers);
    todo!()
}

/// Reads and parses a runner.toml file (`plugin_config_read_failed` when unreadable).
pub fn load_runner_config(path: &Path, max_providers: usize) -> Result<RunnerConfig> {
    let _ = (path, max_providers);
    todo!()
}
