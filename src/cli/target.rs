//! Where a command sends its `plugin_tool` requests: a host started in this process from
//! `--config`, or a `serve` endpoint given by `--server-url`. Each action is written once against
//! a [`Target`]; the flags only pick which one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use webcodex_plugin_host::gateway::{Caller, Gateway, ToolOutput};
use webcodex_plugin_host::host::{ConfigSource, Host, HostOptions};
use webcodex_plugin_host::provider::StderrLine;
use webcodex_plugin_host::transport::http::{ClientError, HttpClient};

use super::{EXIT_FAILURE, EXIT_USAGE};

/// The flags that pick a [`Target`].
#[derive(Debug, clap::Args)]
pub(super) struct Source {
    /// The runner.toml to host in-process.
    #[arg(
        long,
        required_unless_present = "server_url",
        conflicts_with = "server_url"
    )]
    config: Option<PathBuf>,
    /// A `webcodex-plugin serve` endpoint, e.g. http://127.0.0.1:8787 (instead of --config).
    #[arg(long, requires = "token_file")]
    server_url: Option<String>,
    /// A file holding the bearer token for --server-url, alone on one line.
    #[arg(long, requires = "server_url")]
    token_file: Option<PathBuf>,
}

/// A [`Source`] whose flags were checked (the token file read); nothing is started yet.
pub(super) enum Resolved {
    Config(PathBuf),
    Server(HttpClient),
}

/// What an in-process target starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Startup {
    /// Every configured provider (list, describe, call, reload, catalog).
    Providers,
    /// Nothing: the configuration is only validated (check admits its own candidate).
    ConfigOnly,
}

/// A target that takes requests.
pub(super) enum Target {
    /// A host in this process; shut down by [`Target::close`].
    Local(Arc<Gateway>),
    /// A `serve` endpoint.
    Remote(HttpClient),
}

/// A request that produced no output. Already reported on stderr; carries the exit code.
#[derive(Debug)]
pub(super) struct TargetError(pub(super) i32);

/// One answer: the output, and for an in-process `check` the candidate's stderr (local
/// operators may see it; a remote target never sends it).
pub(super) struct Answer {
    pub(super) output: ToolOutput,
    pub(super) check_stderr: Vec<StderrLine>,
}

impl Source {
    /// Checks the flags and reads the token file, or returns the exit code after a message on
    /// stderr.
    pub(super) fn resolve(self) -> Result<Resolved, i32> {
        match (self.config, self.server_url, self.token_file) {
            (Some(config), _, _) => Ok(Resolved::Config(config)),
            (None, Some(url), Some(token_file)) => {
                let token = read_token(&token_file).map_err(|message| {
                    eprintln!("error: --token-file {}: {message}", token_file.display());
                    EXIT_USAGE
                })?;
                HttpClient::new(&url, &token)
                    .map(Resolved::Server)
                    .map_err(|message| {
                        eprintln!("error: --server-url: {message}");
                        EXIT_USAGE
                    })
            }
            _ => {
                eprintln!("error: give --config F, or --server-url URL with --token-file F");
                Err(EXIT_USAGE)
            }
        }
    }
}

impl Resolved {
    /// Starts the in-process host (as `startup` says), or takes the endpoint as it is.
    pub(super) fn open(self, startup: Startup) -> Result<Target, i32> {
        match self {
            Resolved::Config(config) => match startup {
                Startup::Providers => start(&config).map(Target::Local),
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
                })
            }
            Target::Remote(client) => match client.plugin_tool(params) {
                Ok(output) => Ok(Answer {
                    output,
                    check_stderr: Vec::new(),
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

/// Starts the host of `config` with every provider; an invalid configuration is reported on
/// stderr.
pub(super) fn start(config: &Path) -> Result<Arc<Gateway>, i32> {
    host_gateway(Host::start(
        ConfigSource::File(config.to_path_buf()),
        HostOptions::default(),
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
