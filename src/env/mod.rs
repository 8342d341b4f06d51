//! runner.toml, the prepared environment snapshot and executable resolution.
//!
//! [`parse_runner_config`] validates the whole plugin part of a runner.toml before any provider
//! starts; [`prepare_environment`] builds the exact environment a plugin is started with;
//! [`resolve_executable`] finds the program on the snapshot's PATH (never the host's).

mod config;
mod resolve;
mod secrets;
mod snapshot;

pub use config::{
    load_runner_config, parse_runner_config, PluginsConfig, ProfileConfig, ProviderConfig, Restart,
    RestartPolicy, RunnerConfig, ShellConfig, DEFAULT_MAX_PROVIDERS, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_RESTART_MAX, RESTART_MAX_RANGE,
};
pub use resolve::resolve_executable;
pub use secrets::{is_sensitive_variable, SecretNames, MAX_SECRET_NAMES};
pub(crate) use snapshot::prepare_candidate_environment;
pub use snapshot::{prepare_environment, EnvSnapshot, INIT_SCRIPT_LIMIT};
