//! `connect`: a runner behind NAT dials out to a front (`serve`) and serves its providers over
//! the runner link until SIGINT/SIGTERM (docs/PROTOCOL.md, runner links). Several
//! `--front-url`s, and a host that resolves to several addresses (the replicas of a front in
//! cluster mode), get a link each, all of one runner instance (`cluster::Fleet`). Its bindings
//! are sealed with a key of this process's own, so no count evicts one and every link (every
//! replica) reaches them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use webcodex_plugin_http::cluster::{ClusterKeys, Fleet};
use webcodex_plugin_http::link::{ConnectOptions, LinkEnd};
use webcodex_plugin_http::{ProxyChoice, SetupPart, CONNECT_TIMEOUT};

use super::stop_signal::{SignalEvent, StopSignal};
use super::target::{credential, CredentialFlags};
use super::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};

/// The environment variable (and `--env-file` key) of a runner token.
const RUNNER_TOKEN_VARIABLES: [&str; 1] = ["WEBCODEX_RUNNER_TOKEN"];

/// The options of `connect`.
#[derive(clap::Args)]
pub(super) struct ConnectArgs {
    /// The front's base URL, e.g. `https://front.example:8787` (http, https, ws or wss); the
    /// link goes to /api/runners/connect under it. Repeatable; a host that resolves to
    /// several addresses (the headless Service of a cluster) gets a link to each, resolved
    /// again every 30 s.
    #[arg(long, value_name = "URL", required = true)]
    front_url: Vec<String>,
    /// The runner.toml to host.
    #[arg(long, value_name = "FILE")]
    pub(super) config: PathBuf,
    /// The runner token (visible in the process list: prefer --token-file). Credentials,
    /// first found wins: --token, --token-file, --env-file, then WEBCODEX_RUNNER_TOKEN.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// A file holding the runner token, alone on one line.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// A dotenv file whose WEBCODEX_RUNNER_TOKEN is the token (nothing in it enters the
    /// environment).
    #[arg(long, value_name = "FILE")]
    env_file: Option<PathBuf>,
    /// PEM file of the CA certificate(s) to trust for wss://, instead of the built-in roots.
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// Dial through this HTTP proxy (http://HOST:PORT, CONNECT), whatever the environment
    /// says.
    #[arg(long, value_name = "URL")]
    proxy: Option<String>,
    /// Ignore HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY (connect directly unless --proxy).
    #[arg(long)]
    no_system_proxy: bool,
    /// The display name the front shows in `list` (default: the runner id).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Seconds to resolve, connect (proxy, TLS) and upgrade.
    #[arg(long, value_name = "SECONDS", default_value_t = CONNECT_TIMEOUT.as_secs())]
    connect_timeout: u64,
    #[command(flatten)]
    pub(super) log: super::logging::LogArgs,
}

impl std::fmt::Debug for ConnectArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectArgs")
            .field("front_url", &self.front_url)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Runs `connect`: exit 0 after a stop signal, 2 for a usage error or a refused credential.
pub(super) fn run(args: ConnectArgs) -> i32 {
    let usage = |message: String| {
        eprintln!("error: {message}");
        EXIT_USAGE
    };
    let found = credential(
        CredentialFlags {
            token: args.token.as_deref(),
            token_file: args.token_file.as_deref(),
            env_file: args.env_file.as_deref(),
            needed_by: "connect",
        },
        &RUNNER_TOKEN_VARIABLES,
        &|name| std::env::var(name).ok(),
    );
    let found = match found {
        Ok(found) => found,
        Err(message) => return usage(message),
    };
    super::redact::register(&found.token);
    let ca_pem = match &args.ca_cert {
        None => None,
        Some(path) => match std::fs::read(path) {
            Ok(pem) => Some(pem),
            Err(e) => return usage(format!("--ca-cert {}: {e}", path.display())),
        },
    };
    if args.connect_timeout == 0 {
        return usage("--connect-timeout must be at least 1 second".into());
    }
    let proxy_flag = args.proxy.is_some();
    let proxy = match (args.proxy, args.no_system_proxy) {
        (Some(url), _) => ProxyChoice::Url(url),
        (None, true) => ProxyChoice::Direct,
        (None, false) => ProxyChoice::System,
    };
    let options = args
        .front_url
        .iter()
        .map(|url| ConnectOptions {
            front_url: url.clone(),
            token: found.token.clone(),
            ca_pem: ca_pem.clone(),
            proxy: proxy.clone(),
            name: args.name.clone(),
            connect_timeout: Duration::from_secs(args.connect_timeout),
        })
        .collect();
    let fleet = match Fleet::new(options) {
        Ok(fleet) => fleet,
        Err((index, e)) => {
            let url;
            let option = match e.part {
                SetupPart::Proxy if proxy_flag => "--proxy",
                SetupPart::Proxy => return usage(e.message),
                SetupPart::CaFile => "--ca-cert",
                SetupPart::Token => found.source.as_str(),
                _ if args.front_url.len() > 1 => {
                    url = format!("--front-url {}", args.front_url[index]);
                    url.as_str()
                }
                _ => "--front-url",
            };
            return usage(format!("{option}: {e}"));
        }
    };
    let gateway = match super::target::start(&args.config) {
        Ok(gateway) => gateway,
        Err(code) => return code,
    };
    let Some(sealer) = ClusterKeys::ephemeral() else {
        gateway.shutdown();
        eprintln!("error: the system's random source failed");
        return EXIT_FAILURE;
    };
    gateway.seal_bindings(Arc::new(sealer));
    let stopper = fleet.stopper();
    let stopping = gateway.clone();
    let watcher = StopSignal::install().and_then(|mut signal| {
        std::thread::Builder::new()
            .name("wc-link-signal".into())
            .spawn(move || {
                // SIGHUP asks `serve` to re-read its files; `connect` keeps its link and
                // providers as they are (restart it to change them).
                while signal.wait() == SignalEvent::Reload {
                    log::info!("connect: SIGHUP ignored; restart connect to re-read its files");
                }
                log::info!("connect: stopping on a signal");
                stopping.begin_shutdown();
                stopper.stop();
            })
    });
    if let Err(e) = watcher {
        log::warn!("connect: no signal watcher ({e}); stop the runner by killing it");
    }
    let end = fleet.run(&gateway);
    gateway.shutdown();
    match end {
        LinkEnd::Stopped => EXIT_OK,
        LinkEnd::Refused(status) => {
            eprintln!(
                "error: the front refused this runner's credential ({status}): {} is not a \
                 runner token of the front's tokens file ([[runner_tokens]]); fix the token",
                found.source
            );
            EXIT_USAGE
        }
        other => {
            eprintln!("error: the runner link ended: {other:?}");
            EXIT_FAILURE
        }
    }
}
