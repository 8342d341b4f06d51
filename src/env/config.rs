//! The runner.toml model (docs/PROTOCOL.md §6, environment and runner.toml).
//!
//! The file is parsed into a [`toml::Table`] and validated by hand, so every message is ours:
//! it names the key and says what is allowed, and never echoes a value from the file other than
//! key names, provider ids and profile names (commands, arguments, paths and environment values
//! may be secret).
//!
//! Strictness differs by table:
//! - `[plugins]` and `[[plugins.providers]]` belong to this crate alone; an unknown key there is
//!   `plugin_config_invalid`.
//! - `[shell]` and `[shell.profiles.NAME]` may be shared with the runner's other features, so
//!   their known keys are type-checked strictly but unknown keys are only logged with
//!   `log::warn!`.
//! - Every other top-level table is ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

use crate::error::{Dispatch, Error, ErrorCode, Phase, Result};

mod restart;
pub use restart::{Restart, RestartPolicy, DEFAULT_RESTART_MAX, RESTART_MAX_RANGE};

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
    /// The effective restart policy: the entry's `restart` and `restart_max`, else those of
    /// `[plugins]`, else `never` (and 5).
    pub restart: RestartPolicy,
}

/// Parses and validates runner.toml text. `max_providers` is normally [`DEFAULT_MAX_PROVIDERS`].
///
/// Errors: `plugin_config_parse_failed` for TOML syntax, `plugin_config_invalid` for a model
/// violation (message names the key and says what is allowed).
pub fn parse_runner_config(text: &str, max_providers: usize) -> Result<RunnerConfig> {
    let root: Table = text.parse().map_err(|e: toml::de::Error| {
        let reason = parser_reason(e.message());
        let message = match e.span() {
            Some(span) => {
                let (line, column) = line_column(text, span.start);
                format!("runner.toml is not valid TOML (line {line}, column {column}): {reason}")
            }
            None => format!("runner.toml is not valid TOML: {reason}"),
        };
        Error::new(ErrorCode::ConfigParseFailed, Dispatch::NotStarted, message)
            .in_phase(Phase::Config)
    })?;
    warn_once(near_misses(&root));
    let shell = match root.get("shell") {
        None => ShellConfig::default(),
        Some(v) => parse_shell(table(v, "shell")?)?,
    };
    let plugins = match root.get("plugins") {
        None => PluginsConfig::default(),
        Some(v) => parse_plugins(table(v, "plugins")?, &shell, max_providers)?,
    };
    Ok(RunnerConfig { shell, plugins })
}

/// Reads and parses a runner.toml file (`plugin_config_read_failed` when unreadable).
pub fn load_runner_config(path: &Path, max_providers: usize) -> Result<RunnerConfig> {
    // The path is the caller's business; the message only names the failure kind.
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::new(
            ErrorCode::ConfigReadFailed,
            Dispatch::NotStarted,
            format!("cannot read runner.toml: {}", e.kind()),
        )
        .in_phase(Phase::Config)
    })?;
    parse_runner_config(&text, max_providers)
}

const SHELL_KEYS: &[&str] = &["default_profile", "path_prepend", "env", "profiles"];
const PROFILE_KEYS: &[&str] = &["program", "args", "init_script", "env"];
const PLUGINS_KEYS: &[&str] = &[
    "request_timeout_secs",
    "providers",
    restart::KEYS[0],
    restart::KEYS[1],
];
const PROVIDER_KEYS: &[&str] = &[
    "id",
    "name",
    "command",
    "args",
    "cwd",
    "profile",
    "timeout_secs",
    restart::KEYS[0],
    restart::KEYS[1],
];

const MAX_NAME: usize = 128;
const MAX_COMMAND: usize = 1024;
const MAX_ARGS: usize = 64;
const MAX_ARG: usize = 4096;
const MAX_ARGS_TOTAL: usize = 16 * 1024;
const MAX_CWD: usize = 4096;
const TIMEOUT_RANGE: std::ops::RangeInclusive<i64> = 1..=120;

/// Longest parser reason carried in a `plugin_config_parse_failed` message.
const MAX_REASON_CHARS: usize = 200;

/// The TOML parser's reason ("invalid escape sequence; expected …"): it names what was
/// expected and at most a key, never a value. One line, control characters dropped, bounded.
fn parser_reason(message: &str) -> String {
    let joined = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let mut reason: String = joined
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_REASON_CHARS)
        .collect();
    if joined.chars().count() > MAX_REASON_CHARS {
        reason.push('…');
    }
    reason
}

/// Warnings for top-level keys that look like a misspelt `[plugins]` table (they are ignored
/// like every other top-level table, which would otherwise leave a newcomer with no providers
/// and no clue): `[plugin]`, `[[plugin.providers]]`, `[[providers]]`, a bare
/// `request_timeout_secs`.
fn near_misses(root: &Table) -> Vec<String> {
    let mut warnings = Vec::new();
    for key in root.keys() {
        let lower = key.to_ascii_lowercase();
        let hint = match lower.as_str() {
            "plugins" if key != "plugins" => "[plugins] (lower case)",
            "plugin" | "plugin_host" | "plugins_host" => "[plugins]",
            "providers" | "provider" => "[plugins] with [[plugins.providers]] entries",
            "request_timeout_secs" | "timeout_secs" => "[plugins] (put the key under it)",
            _ => continue,
        };
        warnings.push(format!(
            "runner.toml: the top-level key `{}` is ignored; did you mean {hint}?",
            key_name(key)
        ));
    }
    warnings
}

/// The warnings of the last parse, so that reading one file twice (a `check` reads the config
/// at start and again for its candidate; a reload of an unchanged file) warns once. Bounded:
/// one set, replaced by the next parse's.
static LAST_WARNINGS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Logs `warnings` unless the previous parse logged exactly these.
fn warn_once(warnings: Vec<String>) {
    let mut last = LAST_WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    if *last != warnings {
        for warning in &warnings {
            log::warn!("{warning}");
        }
        *last = warnings;
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::ConfigInvalid, Dispatch::NotStarted, message).in_phase(Phase::Config)
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// A key name as it may appear in a message: plain keys as they are, anything else escaped and
/// shortened so a message never carries control characters or a long blob.
fn key_name(key: &str) -> String {
    let plain = !key.is_empty()
        && key.len() <= 64
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if plain {
        key.to_string()
    } else {
        let short: String = key.chars().take(32).collect();
        format!("{short:?}")
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a datetime",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

fn table<'a>(v: &'a Value, key: &str) -> Result<&'a Table> {
    v.as_table()
        .ok_or_else(|| invalid(format!("{key} must be a table, not {}", type_name(v))))
}

fn string<'a>(v: &'a Value, key: &str) -> Result<&'a str> {
    v.as_str()
        .ok_or_else(|| invalid(format!("{key} must be a string, not {}", type_name(v))))
}

fn no_nul(s: &str, key: &str) -> Result<()> {
    if s.contains('\0') {
        return Err(invalid(format!("{key} must not contain NUL")));
    }
    Ok(())
}

fn string_array<'a>(v: &'a Value, key: &str) -> Result<Vec<&'a str>> {
    let items = v.as_array().ok_or_else(|| {
        invalid(format!(
            "{key} must be an array of strings, not {}",
            type_name(v)
        ))
    })?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| string(item, &format!("{key}[{i}]")))
        .collect()
}

fn timeout(v: &Value, key: &str) -> Result<Duration> {
    match v.as_integer() {
        Some(secs) if TIMEOUT_RANGE.contains(&secs) => Ok(Duration::from_secs(secs as u64)),
        _ => Err(invalid(format!(
            "{key} must be an integer number of seconds in 1..=120"
        ))),
    }
}

/// Rejects keys outside `allowed` (the strict `[plugins]` tables).
fn strict_keys(t: &Table, allowed: &[&str], path: &str) -> Result<()> {
    match t.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(invalid(format!(
            "unknown key {path}.{} (allowed: {})",
            key_name(k),
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

/// Warns about keys outside `known` (the tolerant `[shell]` tables).
fn tolerant_keys(t: &Table, known: &[&str], path: &str) {
    for k in t.keys().filter(|k| !known.contains(&k.as_str())) {
        log::warn!(
            "runner.toml: ignoring unknown key {path}.{} (known: {})",
            key_name(k),
            known.join(", ")
        );
    }
}

fn env_table(v: &Value, path: &str) -> Result<BTreeMap<String, String>> {
    let t = table(v, path)?;
    let mut env = BTreeMap::new();
    for (k, v) in t {
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            return Err(invalid(format!(
                "{path} has the key {}: variable names must be non-empty without '=' or NUL",
                key_name(k)
            )));
        }
        let key = format!("{path}.{}", key_name(k));
        let value = string(v, &key)?;
        no_nul(value, &key)?;
        env.insert(k.clone(), value.to_string());
    }
    Ok(env)
}

fn parse_shell(t: &Table) -> Result<ShellConfig> {
    tolerant_keys(t, SHELL_KEYS, "shell");
    let mut shell = ShellConfig::default();
    if let Some(v) = t.get("path_prepend") {
        for (i, entry) in string_array(v, "shell.path_prepend")?
            .into_iter()
            .enumerate()
        {
            let key = format!("shell.path_prepend[{i}]");
            if entry.is_empty() {
                return Err(invalid(format!("{key} must not be empty")));
            }
            no_nul(entry, &key)?;
            shell.path_prepend.push(entry.to_string());
        }
    }
    if let Some(v) = t.get("env") {
        shell.env = env_table(v, "shell.env")?;
    }
    if let Some(v) = t.get("profiles") {
        for (name, pv) in table(v, "shell.profiles")? {
            let path = format!("shell.profiles.{}", key_name(name));
            let profile = parse_profile(table(pv, &path)?, &path)?;
            shell.profiles.insert(name.clone(), profile);
        }
    }
    if let Some(v) = t.get("default_profile") {
        let name = string(v, "shell.default_profile")?;
        if !shell.profiles.contains_key(name) {
            return Err(invalid(format!(
                "shell.default_profile names the profile {}, which is not defined in shell.profiles",
                key_name(name)
            )));
        }
        shell.default_profile = Some(name.to_string());
    }
    Ok(shell)
}

fn parse_profile(t: &Table, path: &str) -> Result<ProfileConfig> {
    tolerant_keys(t, PROFILE_KEYS, path);
    let mut profile = ProfileConfig::default();
    let key = format!("{path}.program");
    let program = string(
        t.get("program")
            .ok_or_else(|| invalid(format!("{key} is required")))?,
        &key,
    )?;
    if program.is_empty() {
        return Err(invalid(format!("{key} must not be empty")));
    }
    no_nul(program, &key)?;
    profile.program = program.to_string();
    if let Some(v) = t.get("args") {
        let key = format!("{path}.args");
        for (i, arg) in string_array(v, &key)?.into_iter().enumerate() {
            no_nul(arg, &format!("{key}[{i}]"))?;
            profile.args.push(arg.to_string());
        }
    }
    if let Some(v) = t.get("init_script") {
        let key = format!("{path}.init_script");
        let script = string(v, &key)?;
        no_nul(script, &key)?;
        profile.init_script = Some(script.to_string());
    }
    if let Some(v) = t.get("env") {
        profile.env = env_table(v, &format!("{path}.env"))?;
    }
    Ok(profile)
}

fn parse_plugins(t: &Table, shell: &ShellConfig, max_providers: usize) -> Result<PluginsConfig> {
    strict_keys(t, PLUGINS_KEYS, "plugins")?;
    let mut plugins = PluginsConfig::default();
    if let Some(v) = t.get("request_timeout_secs") {
        plugins.request_timeout = timeout(v, "plugins.request_timeout_secs")?;
    }
    let restart = restart::policy(t, "plugins", RestartPolicy::default())?;
    let Some(v) = t.get("providers") else {
        return Ok(plugins);
    };
    let entries = v.as_array().ok_or_else(|| {
        invalid(format!(
            "plugins.providers must be an array of tables ([[plugins.providers]]), not {}",
            type_name(v)
        ))
    })?;
    if entries.len() > max_providers {
        return Err(invalid(format!(
            "plugins.providers has {} entries; at most {max_providers} are allowed",
            entries.len()
        )));
    }
    for (i, entry) in entries.iter().enumerate() {
        let path = format!("plugins.providers[{i}]");
        let defaults = (plugins.request_timeout, restart);
        let provider = parse_provider(table(entry, &path)?, &path, shell, defaults)?;
        if let Some(j) = plugins.providers.iter().position(|p| p.id == provider.id) {
            return Err(invalid(format!(
                "{path}.id '{}' is already used by plugins.providers[{j}]; ids must be unique",
                provider.id
            )));
        }
        plugins.providers.push(provider);
    }
    Ok(plugins)
}

fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-'))
}

fn required<'a>(t: &'a Table, name: &str, path: &str) -> Result<&'a str> {
    let key = format!("{path}.{name}");
    let v = t
        .get(name)
        .ok_or_else(|| invalid(format!("{key} is required")))?;
    string(v, &key)
}

fn parse_provider(
    t: &Table,
    path: &str,
    shell: &ShellConfig,
    (default_timeout, default_restart): (Duration, RestartPolicy),
) -> Result<ProviderConfig> {
    strict_keys(t, PROVIDER_KEYS, path)?;

    let id = required(t, "id", path)?;
    if !valid_id(id) {
        return Err(invalid(format!(
            "{path}.id must match ^[a-z0-9_.-]{{1,64}}$"
        )));
    }

    let name = required(t, "name", path)?;
    if name.is_empty() || name.len() > MAX_NAME || name.trim().is_empty() {
        return Err(invalid(format!(
            "{path}.name must be 1..=128 bytes and not blank"
        )));
    }

    let command = required(t, "command", path)?;
    if command.is_empty() || command.len() > MAX_COMMAND {
        return Err(invalid(format!("{path}.command must be 1..=1024 bytes")));
    }
    no_nul(command, &format!("{path}.command"))?;

    let mut args = Vec::new();
    if let Some(v) = t.get("args") {
        let key = format!("{path}.args");
        let items = string_array(v, &key)?;
        if items.len() > MAX_ARGS {
            return Err(invalid(format!(
                "{key} has {} entries; at most {MAX_ARGS} are allowed",
                items.len()
            )));
        }
        let mut total = 0;
        for (i, arg) in items.into_iter().enumerate() {
            let key = format!("{key}[{i}]");
            if arg.len() > MAX_ARG {
                return Err(invalid(format!("{key} must be at most {MAX_ARG} bytes")));
            }
            no_nul(arg, &key)?;
            total += arg.len();
            args.push(arg.to_string());
        }
        if total > MAX_ARGS_TOTAL {
            return Err(invalid(format!(
                "{key} must total at most {MAX_ARGS_TOTAL} bytes"
            )));
        }
    }

    let cwd = match t.get("cwd") {
        None => None,
        Some(v) => {
            let key = format!("{path}.cwd");
            let cwd = string(v, &key)?;
            if cwd.len() > MAX_CWD {
                return Err(invalid(format!("{key} must be at most {MAX_CWD} bytes")));
            }
            no_nul(cwd, &key)?;
            if !Path::new(cwd).is_absolute() {
                return Err(invalid(format!("{key} must be an absolute path")));
            }
            Some(PathBuf::from(cwd))
        }
    };

    let profile = match t.get("profile") {
        None => None,
        Some(v) => {
            let name = string(v, &format!("{path}.profile"))?;
            if !shell.profiles.contains_key(name) {
                return Err(invalid(format!(
                    "{path}.profile names the profile {}, which is not defined in shell.profiles",
                    key_name(name)
                )));
            }
            Some(name.to_string())
        }
    };

    let timeout = match t.get("timeout_secs") {
        None => default_timeout,
        Some(v) => timeout(v, &format!("{path}.timeout_secs"))?,
    };
    let restart = restart::policy(t, path, default_restart)?;

    Ok(ProviderConfig {
        id: id.to_string(),
        name: name.to_string(),
        command: command.to_string(),
        args,
        cwd,
        profile,
        timeout,
        restart,
    })
}

#[cfg(test)]
mod tests;
