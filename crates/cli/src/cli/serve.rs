//! The serving commands: `gateway` (JSON lines on stdin/stdout) and `serve` (HTTP).

use std::io::Write;
use std::path::Path;

use super::cluster::ClusterArgs;
use super::reload::{check_runner_ids, Reload};
use super::stop_signal::{SignalEvent, StopSignal};
use super::target::Front;

use webcodex_plugin_host::serve_lines;
use webcodex_plugin_host::{load_runners, Caller, Scopes};
use webcodex_plugin_http::cors::check_allowed_origin;
use webcodex_plugin_http::{readable_by_everyone, Tokens};

use super::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};

/// `gateway [--config F] [--runners F] [--scopes S]`: serves JSON lines on stdin/stdout until
/// EOF, then shuts the host down.
pub(super) fn gateway(front: &Front, scopes: &str) -> i32 {
    on_stdio(front, scopes, "gateway", serve_lines)
}

/// Starts the runners of `front`, runs the stdio transport `serve` (named `what` in errors) for
/// a caller with `scopes` until EOF, then shuts the host down: `gateway` and `mcp` alike.
pub(super) fn on_stdio(
    front: &Front,
    scopes: &str,
    what: &str,
    serve: impl FnOnce(
        std::sync::Arc<webcodex_plugin_host::Gateway>,
        Caller,
        std::io::StdinLock<'static>,
        std::io::Stdout,
    ) -> std::io::Result<()>,
) -> i32 {
    let scopes = match Scopes::parse(scopes) {
        Ok(scopes) => scopes,
        Err(e) => {
            eprintln!("error: --scopes: {e}");
            return EXIT_USAGE;
        }
    };
    let gateway = match front.start() {
        Ok(gateway) => gateway,
        Err(code) => return code,
    };
    let result = serve(
        gateway.clone(),
        Caller::new(scopes),
        std::io::stdin().lock(),
        std::io::stdout(),
    );
    gateway.shutdown();
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: the {what} transport failed: {e}");
            EXIT_FAILURE
        }
    }
}

/// Where `serve` listens and whom it admits.
pub(super) struct Listening<'a> {
    /// `--listen` (none under socket activation).
    pub(super) listen: Option<&'a str>,
    /// `--tokens`.
    pub(super) tokens: &'a Path,
    /// `--allow-origin`.
    pub(super) origins: Vec<String>,
    /// `--admin-listen`.
    pub(super) admin_listen: Option<&'a str>,
}

/// `serve --config F --listen ADDR --tokens F [--allow-origin O]… [--admin-listen ADDR]
/// [--cluster-keys F [--binding-ttl D]]`: prints `listening on http://ADDR` on stdout once
/// bound (then `admin listening on http://ADDR` with an admin listener), serves until
/// SIGINT/SIGTERM, then answers in-flight requests, shuts the hosts down and exits 0. SIGHUP
/// re-reads the tokens file, the runners file, runner.toml and the cluster keys (see
/// [`super::reload`]).
pub(super) fn serve(front: &Front, at: Listening<'_>, cluster: Option<ClusterArgs>) -> i32 {
    let Listening {
        listen,
        tokens,
        origins,
        admin_listen,
    } = at;
    if cluster.is_some() && front.config.is_some() {
        eprintln!("error: {}", super::cluster::CONFIG_REFUSED);
        return EXIT_USAGE;
    }
    for origin in &origins {
        if let Err(e) = check_allowed_origin(origin) {
            eprintln!("error: --allow-origin: {e}");
            return EXIT_USAGE;
        }
    }
    let tokens_path = tokens;
    let tokens = match Tokens::load(tokens_path) {
        Ok(tokens) => tokens,
        Err(e) => {
            eprintln!("error: --tokens {}: {e}", tokens_path.display());
            return EXIT_USAGE;
        }
    };
    if readable_by_everyone(tokens_path) {
        // A warning, not a refusal: mounted secrets (Kubernetes, Docker) are often 0644/0444
        // in a container where no other user exists (docs/DECISIONS.md, HTTP transport).
        // Through the log (so `--log-format json` keeps it one object), without the path
        // (log lines never carry one): the operator knows which file `--tokens` names.
        log::warn!(
            "--tokens: every user of this machine may read the tokens file; restrict it \
             (chmod 600) unless no other user can reach it"
        );
    }
    if let Err(message) = check_start_ids(front, &tokens) {
        eprintln!("error: --tokens {}: {message}", tokens_path.display());
        return EXIT_USAGE;
    }
    let sealer = match cluster.as_ref().map(super::cluster::start) {
        None => None,
        Some(Ok(sealer)) => Some(sealer),
        Some(Err(code)) => return code,
    };
    // Before any thread starts: it takes the service manager's variables out of the environment.
    let listener = match super::service::listener(listen) {
        Ok(listener) => listener,
        Err(code) => return code,
    };
    let dial_out: Vec<String> = tokens.runner_ids().map(str::to_string).collect();
    let (gateway, remotes) = match front.start_tracked() {
        Ok(started) => started,
        Err(code) => return code,
    };
    if let Some(sealer) = &sealer {
        gateway.seal_bindings(sealer.clone());
    }
    let server = match listener.serve(gateway.clone(), tokens, origins) {
        Ok(server) => server,
        Err(code) => {
            gateway.shutdown();
            return code;
        }
    };
    let awaiting = sealer
        .as_ref()
        .map(|_| super::cluster::AWAIT_RUNNERS_WITHIN);
    let admin =
        match admin_listen.map(|addr| super::admin::start(addr, &gateway, &dial_out, awaiting)) {
            None => None,
            Some(Ok(admin)) => Some(admin),
            Some(Err(code)) => {
                gateway.shutdown();
                return code;
            }
        };
    let stopper = server.stopper();
    let stopping = gateway.clone();
    let admin_stopper = admin.as_ref().map(super::admin::Admin::stopper);
    let dial_out_metrics = admin.as_ref().map(super::admin::Admin::dial_out_ids);
    let reload = Reload {
        tokens_path: tokens_path.to_path_buf(),
        tokens: server.tokens_swap(),
        gateway: gateway.clone(),
        runners: front
            .runners
            .clone()
            .map(|path| (path, front.config.is_some(), remotes)),
        has_runner: front.config.is_some() || front.runners.is_some(),
        dial_out,
        dial_out_metrics,
        cluster_keys: cluster.map(|c| c.keys).zip(sealer),
    };
    let watcher = StopSignal::install().and_then(|mut signal| {
        let reload = reload.spawn()?;
        std::thread::Builder::new()
            .name("wc-http-signal".into())
            .spawn(move || {
                while signal.wait() == SignalEvent::Reload {
                    reload.request();
                }
                drop(reload);
                log::info!("http: stopping on a signal");
                super::service::notify("STOPPING=1");
                if let Some(admin) = &admin_stopper {
                    admin.draining();
                }
                // Candidates of a running check or reload die now, not after their handshakes.
                stopping.begin_shutdown();
                stopper.stop();
            })
    });
    if let Err(e) = watcher {
        log::warn!("http: no signal watcher ({e}); stop the server by killing it");
    }
    {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "listening on http://{}", server.local_addr());
        if let Some(admin) = &admin {
            let _ = writeln!(stdout, "admin listening on http://{}", admin.local_addr());
        }
        let _ = stdout.flush();
    }
    super::service::notify("READY=1");
    let result = server.run();
    gateway.shutdown();
    if let Some(admin) = admin {
        admin.stop();
    }
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: the HTTP transport failed: {e}");
            EXIT_FAILURE
        }
    }
}

/// [`check_runner_ids`] at start: the runners file is read here (and again by the start, which
/// reports a bad file).
fn check_start_ids(front: &Front, tokens: &Tokens) -> Result<(), String> {
    let entries = match &front.runners {
        Some(path) => load_runners(path, front.config.is_some()).unwrap_or_default(),
        None => Vec::new(),
    };
    let static_ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
    let has_runner = front.config.is_some() || front.runners.is_some();
    check_runner_ids(has_runner, &static_ids, tokens)
}
