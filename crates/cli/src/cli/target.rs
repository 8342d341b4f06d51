//! Where a command sends its `plugin_tool` requests: a host started in this process from
//! `--config`, or a `serve` endpoint given by `--server-url`. Each action is written once against
//! a [`Target`]; the flags only pick which one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use webcodex_plugin_host::StderrLine;
use webcodex_plugin_host::{
    load_runners, valid_runner_id, Caller, Gateway, RemoteRunner, RunnerEntry, RunnersError,
    TokenSource, ToolOutput, LOCAL_RUNNER,
};
use webcodex_plugin_host::{ConfigSource, Host, HostOptions};
use webcodex_plugin_http::{
    remote_runner, ClientError, ClientOptions, HttpClient, ProxyChoice, SetupPart, CONNECT_TIMEOUT,
    READ_TIMEOUT,
};

use super::{EXIT_FAILURE, EXIT_USAGE};

/// The flags that pick a [`Target`]. Its `Debug` never shows `--token`.
#[derive(clap::Args)]
pub(super) struct Source {
    /// The runner.toml to host in-process.
    #[arg(
        long,
        required_unless_present = "server_url",
        conflicts_with = "server_url"
    )]
    config: Option<PathBuf>,
    /// A `webcodex-plugin serve` endpoint, e.g. `https://runner.example:8787` (instead of
    /// --config). Credentials, first found wins: --token, --token-file, --env-file, then the
    /// environment's WEBCODEX_TOKEN or WEBCODEX_PAT.
    #[arg(long)]
    server_url: Option<String>,
    /// The runner of the --server-url endpoint to address (default: `local`); a front lists
    /// its runners with `list --server-url URL`. With --config the only runner is `local`.
    #[arg(long, value_name = "ID")]
    runner: Option<String>,
    /// The bearer token for --server-url (visible in the process list: prefer --token-file).
    #[arg(long, requires = "server_url", value_name = "TOKEN")]
    token: Option<String>,
    /// A file holding the bearer token for --server-url, alone on one line.
    #[arg(long, requires = "server_url", value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// A dotenv file (KEY=VALUE lines, # comments, quotes, export) whose WEBCODEX_TOKEN, else
    /// WEBCODEX_PAT, is the token. Nothing in it enters the environment.
    #[arg(long, requires = "server_url", value_name = "FILE")]
    env_file: Option<PathBuf>,
    /// PEM file of the CA certificate(s) to trust for https, instead of the built-in roots.
    #[arg(long, requires = "server_url", value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// Send requests through this proxy (http://, https://, socks4://, socks5:// or
    /// socks5h://HOST:PORT), whatever the environment says.
    #[arg(long, requires = "server_url", value_name = "URL")]
    proxy: Option<String>,
    /// Ignore HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY (connect directly unless --proxy).
    #[arg(long, requires = "server_url")]
    no_system_proxy: bool,
    /// Seconds to resolve and connect (TCP, proxy, TLS handshake).
    #[arg(long, requires = "server_url", value_name = "SECONDS", default_value_t = CONNECT_TIMEOUT.as_secs())]
    connect_timeout: u64,
    /// Seconds to wait for the response head, and again for its body.
    #[arg(long, requires = "server_url", value_name = "SECONDS", default_value_t = READ_TIMEOUT.as_secs())]
    read_timeout: u64,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("config", &self.config)
            .field("server_url", &self.server_url)
            .field("runner", &self.runner)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("token_file", &self.token_file)
            .field("env_file", &self.env_file)
            .finish_non_exhaustive()
    }
}

/// A [`Source`] whose flags were checked (the credential found); nothing is started yet.
pub(super) enum Resolved {
    Config(PathBuf),
    Server(Box<HttpClient>),
}

/// The runner a one-shot command addresses: `--runner` when given.
#[derive(Debug, Clone, Default)]
pub(super) struct Runner(Option<String>);

impl Runner {
    /// The runner id to send: `--runner`, else `local`.
    pub(super) fn id(&self) -> &str {
        self.0.as_deref().unwrap_or(LOCAL_RUNNER)
    }

    /// True when `--runner` was given.
    pub(super) fn is_given(&self) -> bool {
        self.0.is_some()
    }
}

/// What an in-process target starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Startup<'a> {
    /// Every configured provider (list, reload, catalog).
    Providers,
    /// This provider alone, after the whole configuration was validated (list, describe and
    /// call of one provider): the others are neither started nor waited for.
    Provider(&'a str),
    /// Nothing: the configuration is only validated (check admits its own candidate).
    ConfigOnly,
}

/// A target that takes requests.
pub(super) enum Target {
    /// A host in this process; shut down by [`Target::close`].
    Local(Arc<Gateway>),
    /// A `serve` endpoint.
    Remote(Box<HttpClient>),
}

/// A request that produced no output. Already reported on stderr; carries the exit code.
#[derive(Debug)]
pub(super) struct TargetError(pub(super) i32);

/// One answer: the output, and for an in-process request what only a local operator may see
/// (a `check` candidate's stderr, the failure's local detail); a remote target never sends
/// them.
pub(super) struct Answer {
    pub(super) output: ToolOutput,
    pub(super) check_stderr: Vec<StderrLine>,
    pub(super) detail: Option<String>,
}

impl Source {
    /// Checks the flags and finds the credential, or returns the exit code after a message on
    /// stderr. Nothing is sent yet.
    pub(super) fn resolve(self) -> Result<(Resolved, Runner), i32> {
        let usage = |message: String| {
            eprintln!("error: {message}");
            EXIT_USAGE
        };
        let runner = Runner(self.runner);
        if let Some(id) = &runner.0 {
            if !valid_runner_id(id) {
                return Err(usage(format!(
                    "--runner: `{}` is not a runner id (1 to 64 characters of a-z, 0-9, `_`, \
                     `.` and `-`); `list --server-url URL` shows the runners",
                    id.escape_debug()
                )));
            }
        }
        if let Some(config) = self.config {
            if runner.id() != LOCAL_RUNNER {
                return Err(usage(format!(
                    "--runner {}: --config hosts one runner, `local`, in this process; to \
                     reach another runner give the front's --server-url URL instead",
                    runner.id()
                )));
            }
            return Ok((Resolved::Config(config), runner));
        }
        let Some(url) = self.server_url.as_deref() else {
            return Err(usage("give --config F, or --server-url URL".into()));
        };
        let credential = credential(
            CredentialFlags {
                token: self.token.as_deref(),
                token_file: self.token_file.as_deref(),
                env_file: self.env_file.as_deref(),
                needed_by: "--server-url",
            },
            &TOKEN_VARIABLES,
            &|name| std::env::var(name).ok(),
        )
        .map_err(usage)?;
        if !credential.token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(usage(format!(
                "{}: the token must be one line of printable ASCII without spaces",
                credential.source
            )));
        }
        super::redact::register(&credential.token);
        let ca_pem = match &self.ca_cert {
            None => None,
            Some(path) => Some(
                std::fs::read(path)
                    .map_err(|e| usage(format!("--ca-cert {}: {e}", path.display())))?,
            ),
        };
        if self.connect_timeout == 0 || self.read_timeout == 0 {
            return Err(usage("the timeouts must be at least 1 second".into()));
        }
        let proxy_flag = self.proxy.is_some();
        let proxy = match (self.proxy, self.no_system_proxy) {
            (Some(url), _) => ProxyChoice::Url(url),
            (None, true) => ProxyChoice::Direct,
            (None, false) => ProxyChoice::System,
        };
        let options = ClientOptions {
            ca_pem,
            proxy,
            connect_timeout: Duration::from_secs(self.connect_timeout),
            read_timeout: Duration::from_secs(self.read_timeout),
        };
        HttpClient::new(url, &credential.token, options)
            .map(|client| (Resolved::Server(Box::new(client)), runner))
            .map_err(|e| {
                let option = match e.part {
                    SetupPart::Proxy if proxy_flag => "--proxy",
                    // The message names the variable.
                    SetupPart::Proxy => return usage(e.message),
                    SetupPart::CaFile => "--ca-cert",
                    SetupPart::Token => credential.source.as_str(),
                    _ => "--server-url",
                };
                usage(format!("{option}: {e}"))
            })
    }
}

/// The names a credential is looked up under, in order, in an env file and in the environment.
const TOKEN_VARIABLES: [&str; 2] = ["WEBCODEX_TOKEN", "WEBCODEX_PAT"];

/// A token and the source it came from, as a message names it (`--token`, `--token-file F`,
/// `--env-file F`, or the variable).
pub(super) struct Credential {
    pub(super) token: String,
    pub(super) source: String,
}

/// The credential flags of a command that presents a token.
#[derive(Clone, Copy)]
pub(super) struct CredentialFlags<'a> {
    pub(super) token: Option<&'a str>,
    pub(super) token_file: Option<&'a Path>,
    pub(super) env_file: Option<&'a Path>,
    /// What needs it, for the message when none is found (e.g. `--server-url`).
    pub(super) needed_by: &'a str,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// The bearer token, first found wins: `--token`, `--token-file`, `--env-file` (the
/// variables `names` in order: `WEBCODEX_TOKEN`, then `WEBCODEX_PAT` for a client), the
/// environment (the same names). The error (a usage error) names the source and never holds a
/// value.
pub(super) fn credential(
    flags: CredentialFlags<'_>,
    names: &[&str],
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Credential, String> {
    let CredentialFlags {
        token,
        token_file,
        env_file,
        needed_by,
    } = flags;
    if let Some(token) = token {
        return Ok(Credential {
            token: token.trim().to_string(),
            source: "--token".into(),
        });
    }
    if let Some(path) = token_file {
        let source = format!("--token-file {}", path.display());
        return match read_token(path) {
            Ok(token) => Ok(Credential { token, source }),
            Err(m) => Err(format!("{source}: {m}")),
        };
    }
    if let Some(path) = env_file {
        let source = format!("--env-file {}", path.display());
        let values = dotenv_values(path).map_err(|m| format!("{source}: {m}"))?;
        let found = names.iter().find_map(|name| {
            values
                .iter()
                .find(|(key, value)| key == name && !value.trim().is_empty())
                .map(|(_, value)| value.trim().to_string())
        });
        return match found {
            Some(token) => Ok(Credential { token, source }),
            None => Err(format!("{source}: it sets neither {}", names.join(" nor "))),
        };
    }
    names
        .iter()
        .find_map(|name| {
            var(name)
                .filter(|v| !v.trim().is_empty())
                .map(|v| Credential {
                    token: v.trim().to_string(),
                    source: format!("the environment's {name}"),
                })
        })
        .ok_or_else(|| {
            format!(
                "{needed_by} needs a credential: --token, --token-file F, --env-file F, or {} \
                 in the environment",
                names.join(" / ")
            )
        })
}

/// The `KEY=VALUE` pairs of a dotenv file, read by `dotenvy` (blank lines and `#` comments
/// skipped, an inline ` # comment` after an unquoted value dropped, `export ` prefixes, single
/// and double quotes, `$NAME` expanded outside single quotes) into a list: the process
/// environment is never changed. A later line overrides an earlier one. The error says what
/// is wrong, never quoting a line.
fn dotenv_values(path: &Path) -> Result<Vec<(String, String)>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mut values: Vec<(String, String)> = Vec::new();
    for item in dotenvy::Iter::new(file) {
        let (key, value) = item.map_err(|e| match e {
            dotenvy::Error::LineParse(_, _) => {
                "a line is not KEY=VALUE in dotenv syntax (check its quotes)".to_string()
            }
            dotenvy::Error::Io(e) => format!("cannot read it: {e}"),
            _ => "it cannot be read as a dotenv file".to_string(),
        })?;
        let key = key.trim_start_matches('\u{feff}').to_string();
        values.retain(|(k, _)| *k != key);
        values.push((key, value));
    }
    Ok(values)
}

impl Resolved {
    /// Starts the in-process host (as `startup` says), or takes the endpoint as it is.
    pub(super) fn open(self, startup: Startup<'_>) -> Result<Target, i32> {
        match self {
            Resolved::Config(config) => match startup {
                Startup::Providers => start(&config).map(Target::Local),
                Startup::Provider(id) => start_one(&config, id).map(Target::Local),
                Startup::ConfigOnly => configured(&config).map(Target::Local),
            },
            Resolved::Server(client) => Ok(Target::Remote(client)),
        }
    }
}

impl Target {
    /// Sends one request with all scopes (in-process) or the token's scopes (remote).
    pub(super) fn plugin_tool(&self, params: &Value) -> Result<Answer, TargetError> {
        match self {
            Target::Local(gateway) => {
                let local = gateway.plugin_tool_local(&Caller::trusted(), params);
                Ok(Answer {
                    output: local.output,
                    check_stderr: local.check_stderr,
                    detail: local.detail,
                })
            }
            Target::Remote(client) => match client.plugin_tool(params) {
                Ok(output) => Ok(Answer {
                    output,
                    check_stderr: Vec::new(),
                    detail: None,
                }),
                Err(e) => Err(report_lost(params, e)),
            },
        }
    }

    /// Shuts the in-process host down; nothing to do for a remote target.
    pub(super) fn close(self) {
        if let Target::Local(gateway) = self {
            gateway.shutdown();
        }
    }
}

/// Says why a remote request produced no output. A request that may have reached the server
/// is never retried: its outcome may be unknown.
fn report_lost(params: &Value, e: ClientError) -> TargetError {
    let action = params["action"].as_str().unwrap_or("request");
    match e {
        ClientError::Connect(m) => {
            eprintln!("error: {m}; nothing was sent");
        }
        ClientError::Untrusted(m) => eprintln!(
            "error: {m}; nothing was sent (to trust a private CA, give --ca-cert FILE with its \
             PEM certificate)"
        ),
        ClientError::Lost(m) => eprintln!(
            "error: the response to `{action}` was lost after the request was sent ({m}); \
             the outcome may be unknown and the request was NOT retried"
        ),
        // A bad response, or a failure this binary does not know: the request may have been
        // handled.
        other => eprintln!(
            "error: {other}; the outcome of `{action}` may be unknown and it was NOT retried"
        ),
    }
    TargetError(EXIT_FAILURE)
}

/// The runners of a serving command (`gateway`, `mcp`, `serve`): the local runner of
/// `--config` and the remote runners of `--runners`, at least one of the two.
pub(super) struct Front {
    pub(super) config: Option<PathBuf>,
    pub(super) runners: Option<PathBuf>,
}

impl Front {
    /// Reads the runners file and every runner's token first (so a bad one starts no plugin),
    /// then starts the local host; any problem is reported on stderr with exit code 2.
    pub(super) fn start(&self) -> Result<Arc<Gateway>, i32> {
        self.start_tracked().map(|(gateway, _)| gateway)
    }

    /// [`Front::start`], also returning what a reload of the runners file compares against.
    pub(super) fn start_tracked(&self) -> Result<(Arc<Gateway>, RemoteSet), i32> {
        let mut remotes = Vec::new();
        let mut set = RemoteSet::default();
        if let Some(path) = &self.runners {
            let problem = |e: RunnersError| {
                eprintln!("error: --runners {}: {e}", path.display());
                EXIT_USAGE
            };
            for entry in load_runners(path, self.config.is_some()).map_err(problem)? {
                let (remote, known) = set.prepare(entry).map_err(problem)?;
                set.entries.push(known);
                remotes.push(remote);
            }
        }
        let gateway = match &self.config {
            Some(config) => host_gateway(Host::start(
                ConfigSource::File(config.to_path_buf()),
                HostOptions {
                    secret_variables: set.secret_variables.clone(),
                    ..HostOptions::default()
                },
            ))?,
            None => Arc::new(Gateway::new([])),
        };
        for remote in remotes {
            gateway.insert_remote(remote);
        }
        Ok((gateway, set))
    }
}

/// The remote runners a front started with, as their runners-file entries: what a reload of
/// the runners file compares against (an entry whose fields and token are unchanged keeps its
/// runner, so its bindings and breaker stay).
#[derive(Default)]
pub(super) struct RemoteSet {
    /// Each runner's entry and the token it was built with.
    entries: Vec<(RunnerEntry, String)>,
    /// Every runner token variable, filtered from the local plugins' environment (fixed when the
    /// local host starts).
    secret_variables: Vec<String>,
}

impl RemoteSet {
    /// Reads `entry`'s token and builds its runner; the token is registered for redaction.
    fn prepare(
        &mut self,
        entry: RunnerEntry,
    ) -> Result<(Arc<RemoteRunner>, (RunnerEntry, String)), RunnersError> {
        if let TokenSource::Env(name) = &entry.token {
            if !self.secret_variables.contains(name) {
                self.secret_variables.push(name.clone());
            }
        }
        let token = entry.token()?;
        // So no log line can show it, even one that quotes what the runner sent.
        super::redact::register(&token);
        let remote = Arc::new(remote_runner(&entry)?);
        Ok((remote, (entry, token)))
    }

    /// The ids of the runners in force.
    pub(super) fn ids(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(entry, _)| entry.id.as_str())
    }

    /// Re-reads the runners file at `path` and swaps the gateway's remote runners: unchanged
    /// entries keep their runner, changed and new ones get a new runner, removed ones leave.
    /// Any problem (the file, an id in `dial_out` (a runner token's), a token, a `token_env`
    /// the local plugins' environment was not filtered for) changes nothing and is the error.
    /// Returns (kept, replaced or added, removed).
    pub(super) fn reload(
        &mut self,
        path: &Path,
        with_local: bool,
        dial_out: &[String],
        gateway: &Gateway,
    ) -> Result<(usize, usize, usize), RunnersError> {
        let entries = load_runners(path, with_local)?;
        if let Some(entry) = entries.iter().find(|e| dial_out.contains(&e.id)) {
            return Err(RunnersError::new(format!(
                "runner `{}`: is also the runner of a runner token ([[runner_tokens]]); each \
                 runner id is either static or dial-out",
                entry.id
            )));
        }
        let mut next = Vec::with_capacity(entries.len());
        let mut fresh = Vec::new();
        for entry in entries {
            if let TokenSource::Env(name) = &entry.token {
                if with_local && !self.secret_variables.contains(name) {
                    return Err(RunnersError::new(format!(
                        "runner `{}`: token_env names a variable the local plugins' environment \
                         was not filtered for at start; restart serve to use it",
                        entry.id
                    )));
                }
            }
            let token = entry.token()?;
            let unchanged = self
                .entries
                .iter()
                .any(|(known, known_token)| *known == entry && *known_token == token);
            if unchanged {
                next.push((entry, token));
            } else {
                let (remote, known) = self.prepare(entry)?;
                next.push(known);
                fresh.push(remote);
            }
        }
        let removed: Vec<String> = self
            .entries
            .iter()
            .map(|(entry, _)| entry.id.clone())
            .filter(|id| !next.iter().any(|(entry, _)| entry.id == *id))
            .collect();
        let counts = (next.len() - fresh.len(), fresh.len(), removed.len());
        for id in &removed {
            gateway.remove_remote_by_id(id);
        }
        for remote in fresh {
            gateway.insert_remote(remote);
        }
        self.entries = next;
        Ok(counts)
    }
}

/// Starts the host of `config` with every provider; an invalid configuration is reported on
/// stderr.
pub(super) fn start(config: &Path) -> Result<Arc<Gateway>, i32> {
    host_gateway(Host::start(
        ConfigSource::File(config.to_path_buf()),
        HostOptions::default(),
    ))
}

/// Validates the whole of `config`, then starts provider `id` alone.
fn start_one(config: &Path, id: &str) -> Result<Arc<Gateway>, i32> {
    host_gateway(Host::start_one(
        ConfigSource::File(config.to_path_buf()),
        HostOptions::default(),
        id,
    ))
}

/// Validates `config` without starting a provider.
fn configured(config: &Path) -> Result<Arc<Gateway>, i32> {
    host_gateway(Host::configured(
        ConfigSource::File(config.to_path_buf()),
        HostOptions::default(),
    ))
}

fn host_gateway(host: webcodex_plugin_host::Result<Host>) -> Result<Arc<Gateway>, i32> {
    match host {
        Ok(host) => Ok(Arc::new(Gateway::single(Arc::new(host)))),
        Err(e) => {
            eprintln!("error: {}: {}", e.code(), e.message());
            Err(EXIT_USAGE)
        }
    }
}

/// The bare token of a token file: one line, surrounding whitespace ignored. Never echoed.
fn read_token(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    match (lines.next(), lines.next()) {
        (Some(token), None) => Ok(token.to_string()),
        (None, _) => Err("it is empty; put the token alone on one line".into()),
        (Some(_), Some(_)) => {
            Err("it has more than one line; put the token alone on one line".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_credential_is_a_usage_message_without_secrets() {
        let none = |_: &str| None;
        let flags = CredentialFlags {
            token: None,
            token_file: None,
            env_file: None,
            needed_by: "--server-url",
        };
        let e = credential(flags, &TOKEN_VARIABLES, &none).unwrap_err();
        assert!(e.contains("WEBCODEX_TOKEN"), "{e}");
        let pat = |n: &str| (n == "WEBCODEX_PAT").then(|| "pat-value".to_string());
        let found = credential(flags, &TOKEN_VARIABLES, &pat).unwrap();
        assert_eq!(found.token, "pat-value");
        assert_eq!(found.source, "the environment's WEBCODEX_PAT");
    }

    #[test]
    fn a_runners_reload_with_a_new_token_env_says_why_in_plain_words() {
        let path = std::env::temp_dir().join(format!("wc-runners-{}.toml", std::process::id()));
        std::fs::write(
            &path,
            "[[runners]]\nid = \"edge\"\nname = \"E\"\nurl = \"http://127.0.0.1:9\"\n\
             token_env = \"WC_NEW_RUNNER_TOKEN\"\n",
        )
        .unwrap();
        let gateway = Gateway::new([]);
        let refused = RemoteSet::default().reload(&path, true, &[], &gateway);
        let _ = std::fs::remove_file(&path);
        let message = refused.unwrap_err().to_string();
        assert!(
            message.contains("the local plugins' environment was not filtered for at start"),
            "{message}"
        );
        assert!(!message.contains("  "), "no run of spaces: {message:?}");
    }
}
