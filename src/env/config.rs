//! The runner.toml model of DESIGN §7.
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
    for warning in near_misses(&root) {
        log::warn!("{warning}");
    }
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
const PLUGINS_KEYS: &[&str] = &["request_timeout_secs", "providers"];
const PROVIDER_KEYS: &[&str] = &[
    "id",
    "name",
    "command",
    "args",
    "cwd",
    "profile",
    "timeout_secs",
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
        let provider = parse_provider(table(entry, &path)?, &path, shell, plugins.request_timeout)?;
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
    default_timeout: Duration,
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

    Ok(ProviderConfig {
        id: id.to_string(),
        name: name.to_string(),
        command: command.to_string(),
        args,
        cwd,
        profile,
        timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
[[plugins.providers]]
id = "repo-tools"
name = "Repo Tools"
command = "node"
"#;

    fn parse(text: &str) -> Result<RunnerConfig> {
        parse_runner_config(text, DEFAULT_MAX_PROVIDERS)
    }

    /// A config with one provider whose extra lines are `provider_lines`.
    fn with_provider(provider_lines: &str) -> String {
        format!(
            "[shell.profiles.node]\nprogram = \"bash\"\n\n[[plugins.providers]]\nid = \"p\"\nname = \"P\"\ncommand = \"node\"\n{provider_lines}\n"
        )
    }

    /// Asserts `plugin_config_invalid` in phase config whose message contains `needle`.
    fn assert_invalid(text: &str, needle: &str) -> String {
        let err = parse(text).expect_err("config must be rejected");
        assert_eq!(err.code(), ErrorCode::ConfigInvalid, "{}", err.message());
        assert_eq!(err.phase(), Some(Phase::Config));
        assert!(
            err.message().contains(needle),
            "message {:?} should contain {:?}",
            err.message(),
            needle
        );
        err.message().to_string()
    }

    #[test]
    fn full_example_parses() {
        let text = r#"
[shell]
default_profile = "node"
path_prepend = ["/opt/bin"]
env = { FOO = "1" }
[shell.profiles.node]
program = "bash"
args = ["-lc"]
init_script = "source ~/.nvm/nvm.sh\nnvm use 22"
env = { BAR = "2" }
[plugins]
request_timeout_secs = 20
[[plugins.providers]]
id = "repo-tools"
name = "Repo Tools"
command = "node"
args = ["tools/plugin.mjs"]
cwd = "/root/git/example"
profile = "node"
timeout_secs = 45
"#;
        let config = parse(text).unwrap();
        assert_eq!(config.shell.default_profile.as_deref(), Some("node"));
        assert_eq!(config.shell.path_prepend, vec!["/opt/bin"]);
        assert_eq!(config.shell.env["FOO"], "1");
        let node = &config.shell.profiles["node"];
        assert_eq!(node.program, "bash");
        assert_eq!(node.args, vec!["-lc"]);
        assert!(node.init_script.as_deref().unwrap().contains("nvm use 22"));
        assert_eq!(node.env["BAR"], "2");
        assert_eq!(config.plugins.request_timeout, Duration::from_secs(20));
        let p = config.provider("repo-tools").unwrap();
        assert_eq!(p.name, "Repo Tools");
        assert_eq!(p.command, "node");
        assert_eq!(p.args, vec!["tools/plugin.mjs"]);
        assert_eq!(p.cwd.as_deref(), Some(Path::new("/root/git/example")));
        assert_eq!(p.profile.as_deref(), Some("node"));
        assert_eq!(p.timeout, Duration::from_secs(45));
    }

    #[test]
    fn empty_file_gives_defaults() {
        let config = parse("").unwrap();
        assert_eq!(config, RunnerConfig::default());
        assert_eq!(config.plugins.request_timeout, DEFAULT_REQUEST_TIMEOUT);
    }

    #[test]
    fn provider_defaults() {
        let config = parse(MINIMAL).unwrap();
        let p = &config.plugins.providers[0];
        assert!(p.args.is_empty());
        assert_eq!(p.cwd, None);
        assert_eq!(p.profile, None);
        assert_eq!(p.timeout, DEFAULT_REQUEST_TIMEOUT);
    }

    #[test]
    fn provider_timeout_defaults_to_request_timeout() {
        let text = format!("[plugins]\nrequest_timeout_secs = 7\n{MINIMAL}");
        let config = parse(&text).unwrap();
        assert_eq!(config.plugins.providers[0].timeout, Duration::from_secs(7));
    }

    #[test]
    fn providers_keep_file_order() {
        let text = "[[plugins.providers]]\nid = \"b\"\nname = \"B\"\ncommand = \"x\"\n\
                    [[plugins.providers]]\nid = \"a\"\nname = \"A\"\ncommand = \"x\"\n";
        let ids: Vec<_> = parse(text)
            .unwrap()
            .plugins
            .providers
            .into_iter()
            .map(|p| p.id)
            .collect();
        assert_eq!(ids, vec!["b", "a"]);
    }

    #[test]
    fn other_top_level_tables_are_tolerated() {
        let text = format!("[server]\nport = 8080\n[agent.things]\nx = [1, 2]\n{MINIMAL}");
        assert_eq!(parse(&text).unwrap().plugins.providers.len(), 1);
    }

    #[test]
    fn unknown_shell_keys_are_tolerated() {
        let text =
            "[shell]\ncolor = true\n[shell.profiles.node]\nprogram = \"bash\"\nlogin = true\n";
        let config = parse(text).unwrap();
        assert_eq!(config.shell.profiles["node"].program, "bash");
    }

    #[test]
    fn syntax_error_is_parse_failed_with_position_and_no_content() {
        let text = "[plugins]\nrequest_timeout_secs = 30\nsecret-command = \"hunter2\n";
        let err = parse(text).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ConfigParseFailed);
        assert_eq!(err.phase(), Some(Phase::Config));
        assert!(err.message().starts_with("runner.toml is not valid TOML"));
        assert!(err.message().contains("line 3"), "{}", err.message());
        assert!(
            err.message().contains("invalid basic string"),
            "{}",
            err.message()
        );
        assert!(!err.message().contains("hunter2"));
    }

    #[test]
    fn syntax_error_reason_is_one_bounded_line_without_values() {
        let err = parse("[plugins]\nrequest_timeout_secs = \"s3cr\\qet\"\n").unwrap_err();
        let message = err.message();
        assert!(message.contains("(line 2, column"), "{message}");
        assert!(
            message.contains("invalid escape sequence; expected"),
            "{message}"
        );
        assert!(
            !message.contains('\n') && !message.contains("s3cr"),
            "{message}"
        );
        assert!(parser_reason(&"x".repeat(1000)).chars().count() <= MAX_REASON_CHARS + 1);
    }

    #[test]
    fn near_miss_tables_get_a_did_you_mean_warning() {
        let root: Table = "request_timeout_secs = 5\n[[plugin.providers]]\nid = \"a\"\n[Plugins]\n[shell]\n[other]\n"
            .parse()
            .unwrap();
        let warnings = near_misses(&root);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        for warning in &warnings {
            assert!(warning.contains("did you mean [plugins]"), "{warning}");
        }
        assert!(
            warnings.iter().any(|w| w.contains("`plugin`")),
            "{warnings:?}"
        );
        assert!(warnings
            .iter()
            .any(|w| w.contains("`request_timeout_secs`")));
        let fine: Table = "[plugins]\n[shell]\n[other]\n".parse().unwrap();
        assert!(near_misses(&fine).is_empty());
    }

    #[test]
    fn line_column_counts_from_one() {
        assert_eq!(line_column("ab\ncd", 0), (1, 1));
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
        assert_eq!(line_column("ab", 99), (1, 3));
    }

    #[test]
    fn unknown_plugins_key_is_invalid() {
        assert_invalid(
            "[plugins]\ntimeout = 3\n",
            "unknown key plugins.timeout (allowed: request_timeout_secs, providers)",
        );
    }

    #[test]
    fn unknown_provider_key_is_invalid() {
        assert_invalid(
            "[[plugins.providers]]\nid = \"p\"\nname = \"P\"\ncomand = \"x\"\n",
            "unknown key plugins.providers[0].comand (allowed: id, name, command, args, cwd, profile, timeout_secs)",
        );
    }

    #[test]
    fn plugins_must_be_a_table() {
        assert_invalid("plugins = 3\n", "plugins must be a table");
    }

    #[test]
    fn providers_must_be_an_array_of_tables() {
        assert_invalid(
            "[plugins]\nproviders = 3\n",
            "plugins.providers must be an array",
        );
        assert_invalid(
            "[plugins]\nproviders = [1]\n",
            "plugins.providers[0] must be a table",
        );
    }

    #[test]
    fn missing_required_keys_are_invalid() {
        assert_invalid(
            "[[plugins.providers]]\nname = \"P\"\ncommand = \"x\"\n",
            "plugins.providers[0].id is required",
        );
        assert_invalid(
            "[[plugins.providers]]\nid = \"p\"\ncommand = \"x\"\n",
            "plugins.providers[0].name is required",
        );
        assert_invalid(
            "[[plugins.providers]]\nid = \"p\"\nname = \"P\"\n",
            "plugins.providers[0].command is required",
        );
    }

    #[test]
    fn wrong_type_is_invalid() {
        assert_invalid(
            "[[plugins.providers]]\nid = 5\nname = \"P\"\ncommand = \"x\"\n",
            "plugins.providers[0].id must be a string, not an integer",
        );
    }

    #[test]
    fn id_must_match_pattern() {
        for id in ["", "Repo", "a b", "ü", &"a".repeat(65)] {
            let text =
                format!("[[plugins.providers]]\nid = \"{id}\"\nname = \"P\"\ncommand = \"x\"\n");
            assert_invalid(
                &text,
                "plugins.providers[0].id must match ^[a-z0-9_.-]{1,64}$",
            );
        }
        let ok = format!(
            "[[plugins.providers]]\nid = \"{}\"\nname = \"P\"\ncommand = \"x\"\n",
            "a_.-9".repeat(12)
        );
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn duplicate_id_is_invalid() {
        let text = format!("{MINIMAL}{MINIMAL}");
        let msg = assert_invalid(
            &text,
            "plugins.providers[1].id 'repo-tools' is already used by plugins.providers[0]",
        );
        assert!(msg.contains("unique"));
    }

    #[test]
    fn name_must_be_nonblank_and_short() {
        for name in ["", "   ", &"n".repeat(129)] {
            let text =
                format!("[[plugins.providers]]\nid = \"p\"\nname = \"{name}\"\ncommand = \"x\"\n");
            assert_invalid(
                &text,
                "plugins.providers[0].name must be 1..=128 bytes and not blank",
            );
        }
    }

    #[test]
    fn command_must_be_nonempty_bounded_without_nul() {
        for command in ["", &"c".repeat(1025)] {
            let text = format!(
                "[[plugins.providers]]\nid = \"p\"\nname = \"P\"\ncommand = \"{command}\"\n"
            );
            assert_invalid(&text, "plugins.providers[0].command must be 1..=1024 bytes");
        }
        let msg = assert_invalid(
            "[[plugins.providers]]\nid = \"p\"\nname = \"P\"\ncommand = \"se\\u0000cret\"\n",
            "plugins.providers[0].command must not contain NUL",
        );
        assert!(!msg.contains("se"));
    }

    #[test]
    fn too_many_args_is_invalid() {
        let args = vec!["\"a\""; 65].join(", ");
        assert_invalid(
            &with_provider(&format!("args = [{args}]")),
            "plugins.providers[0].args has 65 entries; at most 64",
        );
    }

    #[test]
    fn long_arg_is_invalid() {
        let arg = "a".repeat(4097);
        assert_invalid(
            &with_provider(&format!("args = [\"x\", \"{arg}\"]")),
            "plugins.providers[0].args[1] must be at most 4096 bytes",
        );
    }

    #[test]
    fn args_total_is_bounded() {
        let args = vec![format!("\"{}\"", "a".repeat(4096)); 5].join(", ");
        assert_invalid(
            &with_provider(&format!("args = [{args}]")),
            "plugins.providers[0].args must total at most 16384 bytes",
        );
    }

    #[test]
    fn arg_with_nul_is_invalid() {
        assert_invalid(
            &with_provider("args = [\"a\\u0000b\"]"),
            "plugins.providers[0].args[0] must not contain NUL",
        );
    }

    #[test]
    fn args_must_be_strings() {
        assert_invalid(
            &with_provider("args = [1]"),
            "plugins.providers[0].args[0] must be a string",
        );
    }

    #[test]
    fn cwd_must_be_absolute() {
        let msg = assert_invalid(
            &with_provider("cwd = \"relative/secret\""),
            "plugins.providers[0].cwd must be an absolute path",
        );
        assert!(!msg.contains("secret"));
    }

    #[test]
    fn cwd_is_bounded_and_without_nul() {
        let long = format!("/{}", "d".repeat(4096));
        assert_invalid(
            &with_provider(&format!("cwd = \"{long}\"")),
            "plugins.providers[0].cwd must be at most 4096 bytes",
        );
        assert_invalid(
            &with_provider("cwd = \"/a\\u0000b\""),
            "plugins.providers[0].cwd must not contain NUL",
        );
    }

    #[test]
    fn cwd_existence_is_not_checked() {
        let config = parse(&with_provider("cwd = \"/does/not/exist/anywhere\"")).unwrap();
        assert!(config.plugins.providers[0].cwd.is_some());
    }

    #[test]
    fn unknown_profile_is_invalid() {
        assert_invalid(
            &with_provider("profile = \"python\""),
            "plugins.providers[0].profile names the profile python, which is not defined",
        );
    }

    #[test]
    fn unknown_default_profile_is_invalid() {
        assert_invalid(
            "[shell]\ndefault_profile = \"python\"\n",
            "shell.default_profile names the profile python",
        );
    }

    #[test]
    fn timeouts_must_be_integers_in_range() {
        for v in ["0", "121", "-1", "1.5", "\"30\""] {
            assert_invalid(
                &with_provider(&format!("timeout_secs = {v}")),
                "plugins.providers[0].timeout_secs must be an integer number of seconds in 1..=120",
            );
            assert_invalid(
                &format!("[plugins]\nrequest_timeout_secs = {v}\n"),
                "plugins.request_timeout_secs must be an integer number of seconds in 1..=120",
            );
        }
        for v in [1, 120] {
            let c = parse(&with_provider(&format!("timeout_secs = {v}"))).unwrap();
            assert_eq!(c.plugins.providers[0].timeout, Duration::from_secs(v));
        }
    }

    #[test]
    fn too_many_providers_is_invalid() {
        let text = (0..3)
            .map(|i| {
                format!("[[plugins.providers]]\nid = \"p{i}\"\nname = \"P\"\ncommand = \"x\"\n")
            })
            .collect::<String>();
        let err = parse_runner_config(&text, 2).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ConfigInvalid);
        assert!(err
            .message()
            .contains("plugins.providers has 3 entries; at most 2"));
        assert!(parse_runner_config(&text, 3).is_ok());
    }

    #[test]
    fn profile_program_is_required_and_nonempty() {
        assert_invalid(
            "[shell.profiles.node]\nargs = []\n",
            "shell.profiles.node.program is required",
        );
        assert_invalid(
            "[shell.profiles.node]\nprogram = \"\"\n",
            "shell.profiles.node.program must not be empty",
        );
    }

    #[test]
    fn shell_known_keys_are_type_checked() {
        assert_invalid(
            "[shell]\npath_prepend = \"/opt/bin\"\n",
            "shell.path_prepend must be an array of strings",
        );
        assert_invalid("[shell]\nenv = 1\n", "shell.env must be a table");
        assert_invalid(
            "[shell.profiles.node]\nprogram = \"bash\"\ninit_script = 1\n",
            "shell.profiles.node.init_script must be a string",
        );
        assert_invalid(
            "[shell.profiles.node]\nprogram = \"bash\"\nargs = \"-lc\"\n",
            "shell.profiles.node.args must be an array of strings",
        );
    }

    #[test]
    fn env_keys_must_be_nonempty_without_equals_or_nul() {
        assert_invalid(
            "[shell]\nenv = { \"\" = \"x\" }\n",
            "shell.env has the key \"\"",
        );
        assert_invalid(
            "[shell]\nenv = { \"A=B\" = \"x\" }\n",
            "variable names must be non-empty without '=' or NUL",
        );
        assert_invalid(
            "[shell.profiles.n]\nprogram = \"sh\"\nenv = { \"A\\u0000\" = \"x\" }\n",
            "shell.profiles.n.env has the key",
        );
    }

    #[test]
    fn env_values_must_be_strings_without_nul() {
        let msg = assert_invalid(
            "[shell]\nenv = { TOKEN = \"sec\\u0000ret\" }\n",
            "shell.env.TOKEN must not contain NUL",
        );
        assert!(!msg.contains("sec"));
        assert_invalid("[shell]\nenv = { N = 1 }\n", "shell.env.N must be a string");
    }

    #[test]
    fn path_prepend_entries_must_be_nonempty_without_nul() {
        assert_invalid(
            "[shell]\npath_prepend = [\"/a\", \"\"]\n",
            "shell.path_prepend[1] must not be empty",
        );
        assert_invalid(
            "[shell]\npath_prepend = [\"/a\\u0000\"]\n",
            "shell.path_prepend[0] must not contain NUL",
        );
    }

    #[test]
    fn load_reports_unreadable_file_without_path() {
        let path =
            std::env::temp_dir().join(format!("webcodex-missing-{}.toml", std::process::id()));
        let err = load_runner_config(&path, DEFAULT_MAX_PROVIDERS).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ConfigReadFailed);
        assert_eq!(err.phase(), Some(Phase::Config));
        assert!(err.message().starts_with("cannot read runner.toml"));
        assert!(!err.message().contains("webcodex-missing"));
    }

    #[test]
    fn load_parses_a_file() {
        let path = std::env::temp_dir().join(format!(
            "webcodex-runner-{}-{:?}.toml",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&path, MINIMAL).unwrap();
        let result = load_runner_config(&path, DEFAULT_MAX_PROVIDERS);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(result.unwrap().plugins.providers[0].id, "repo-tools");
    }
}
