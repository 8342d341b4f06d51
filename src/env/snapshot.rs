//! The prepared environment snapshot a plugin is started with.

use std::ffi::{OsStr, OsString};
use std::time::Duration;

use super::{ProviderConfig, ShellConfig};
use crate::error::Result;

/// How long a profile's init_script may run.
pub const INIT_SCRIPT_LIMIT: Duration = Duration::from_secs(30);

/// An exact environment: the plugin gets these variables and no others.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EnvSnapshot {
    vars: Vec<(OsString, OsString)>,
}

impl EnvSnapshot {
    /// A snapshot of exactly these variables (sensitive ones removed).
    pub fn from_vars(vars: impl IntoIterator<Item = (OsString, OsString)>) -> EnvSnapshot {
        let _ = vars;
        todo!()
    }
    /// The value of one variable.
    pub fn get(&self, key: &str) -> Option<&OsStr> {
        let _ = key;
        todo!()
    }
    /// Every variable, sorted by name.
    pub fn vars(&self) -> &[(OsString, OsString)] {
        &self.vars
    }
}

/// True for the variables that are always removed (`WEBCODEX_TOKEN`, `WEBCODEX_PAT`,
/// `WEBCODEX_AGENT_TOKEN`, `WEBCODEX_USER_TOKEN`, `AUTHORIZATION`).
pub fn is_sensitive_variable(name: &OsStr) -> bool {
    let _ = name;
    todo!()
}

/// Prepares the environment for `provider` from the host's own environment (`base`).
///
/// Profile: the provider's, else `shell.default_profile`, else none. Then PATH gets
/// `path_prepend`, `shell.env` and the profile's `env` are applied; with an init_script the
/// profile program runs once and its `env -0` output becomes the snapshot. Sensitive variables are
/// always removed. Failure: `plugin_environment_prepare_failed` (phase `environment`).
pub fn prepare_environment(
    shell: &ShellConfig,
    provider: &ProviderConfig,
    base: impl IntoIterator<Item = (OsString, OsString)>,
) -> Result<EnvSnapshot> {
    let _ = (shell, provider, base);
    todo!()
}
