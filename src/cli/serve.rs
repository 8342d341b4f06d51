//! `serve` (the HTTP transport) and the `--server-url` client mode of list, describe, call,
//! check, reload and catalog: one authenticated POST per request, printed and mapped to exit
//! codes exactly like the in-process commands.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{json, Value};
use webcodex_plugin_host::gateway::ToolOutput;
use webcodex_plugin_host::transport::http::{ClientError, HttpClient, HttpServer, Tokens};

use super::{human, oneshot};
use super::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};

const RUNNER: &str = "local";

/// Where a command sends its request: a host started in-process, or a `serve` endpoint.
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

/// A resolved [`Source`].
pub(super) enum Target {
    Config(PathBuf),
    Server(HttpClient),
}

impl Source {
    /// The target, or the exit code after a message on stderr.
    pub(super) fn resolve(self) -> Result<Target, i32> {
        match (self.config, self.server_url, self.token_file) {
            (Some(config), _, _) => Ok(Target::Config(config)),
            (None, Some(url), Some(token_file)) => {
                let token = read_token(&token_file).map_err(|message| {
                    eprintln!("error: --token-file {}: {message}", token_file.display());
                    EXIT_USAGE
                })?;
                HttpClient::new(&url, &token)
                    .map(Target::Server)
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

/// Sends one request; on a transport failure prints why and returns the exit code.
fn request(client: &HttpClient, params: Value) -> Result<ToolOutput, i32> {
    let action = params["action"].as_str().unwrap_or("request").to_string();
    client.plugin_tool(&params).map_err(|e| {
        match e {
            ClientError::Connect(m) => {
                eprintln!("error: {m}; nothing was sent");
            }
            ClientError::Lost(m) => eprintln!(
                "error: the response to `{action}` was lost after the request was sent ({m}); \
                 the outcome may be unknown and the request was NOT retried"
            ),
            ClientError::BadResponse(m) => eprintln!(
                "error: {m}; the outcome of `{action}` may be unknown and it was NOT retried"
            ),
        }
        EXIT_FAILURE
    })
}

pub(super) fn list(client: &HttpClient, plugin: Option<&str>, json: bool) -> i32 {
    let params = match plugin {
        Some(plugin) => json!({"action": "list", "runner": RUNNER, "plugin": plugin}),
        None => json!({"action": "list", "runner": RUNNER}),
    };
    let output = match request(client, params) {
        Ok(output) => output,
        Err(code) => return code,
    };
    match plugin {
        Some(_) => oneshot::finish(&output, json, human::provider_detail),
        None => oneshot::finish(&output, json, human::providers),
    }
}

pub(super) fn describe(client: &HttpClient, plugin: &str, tool: &str, json: bool) -> i32 {
    let params = json!({"action": "describe", "runner": RUNNER, "plugin": plugin, "tool": tool});
    match request(client, params) {
        Ok(output) => oneshot::finish(&output, json, human::describe),
        Err(code) => code,
    }
}

pub(super) fn call(
    client: &HttpClient,
    plugin: &str,
    tool: &str,
    arguments: &str,
    json: bool,
) -> i32 {
    let arguments: Value = match serde_json::from_str(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            eprintln!("error: --arguments must be a JSON object, e.g. '{{\"text\":\"hi\"}}'");
            return EXIT_USAGE;
        }
    };
    let params = json!({"action": "describe", "runner": RUNNER, "plugin": plugin, "tool": tool});
    let described = match request(client, params) {
        Ok(output) => output,
        Err(code) => return code,
    };
    let output = match described.output.get("binding").and_then(Value::as_str) {
        Some(binding) if described.success => {
            let params = json!({"action": "call", "binding": binding, "arguments": arguments});
            match request(client, params) {
                Ok(output) => output,
                Err(code) => return code,
            }
        }
        _ => described,
    };
    oneshot::finish(&output, json, human::call)
}

pub(super) fn check(client: &HttpClient, plugin: &str, json: bool) -> i32 {
    let params = json!({"action": "check", "runner": RUNNER, "plugin": plugin});
    let output = match request(client, params) {
        Ok(output) => output,
        Err(code) => return code,
    };
    match (
        oneshot::finish(&output, json, human::check),
        output.output.get("ready"),
    ) {
        (EXIT_OK, Some(Value::Bool(false))) => EXIT_USAGE,
        (code, _) => code,
    }
}

pub(super) fn reload(client: &HttpClient, json: bool) -> i32 {
    let output = match request(client, json!({"action": "reload", "runner": RUNNER})) {
        Ok(output) => output,
        Err(code) => return code,
    };
    let code = oneshot::finish(&output, json, human::reload);
    let failed = output.output["failures"]
        .as_array()
        .is_some_and(|f| !f.is_empty());
    if code == EXIT_OK && failed {
        EXIT_USAGE
    } else {
        code
    }
}

pub(super) fn catalog(client: &HttpClient, project: &Path, json: bool) -> i32 {
    let Some(project) = project.to_str() else {
        eprintln!("error: --project must be valid UTF-8");
        return EXIT_USAGE;
    };
    let params = json!({"action": "catalog", "runner": RUNNER, "project": project});
    match request(client, params) {
        Ok(output) => oneshot::finish(&output, json, human::catalog),
        Err(code) => code,
    }
}

/// Set by SIGINT/SIGTERM.
static STOP: AtomicBool = AtomicBool::new(false);

/// `serve --config F --listen ADDR --tokens F`: prints `listening on http://ADDR` on stdout
/// once bound, serves until SIGINT/SIGTERM, then answers in-flight requests, shuts the hosts
/// down and exits 0.
pub(super) fn serve(config: &Path, listen: &str, tokens: &Path) -> i32 {
    let tokens = match Tokens::load(tokens) {
        Ok(tokens) => tokens,
        Err(e) => {
            eprintln!("error: --tokens {}: {e}", tokens.display());
            return EXIT_USAGE;
        }
    };
    if std::net::ToSocketAddrs::to_socket_addrs(listen).is_err() {
        eprintln!("error: --listen {listen:?} is not an address such as 127.0.0.1:8787");
        return EXIT_USAGE;
    }
    let gateway = match oneshot::start(config) {
        Ok(gateway) => gateway,
        Err(code) => return code,
    };
    let server = match HttpServer::bind(listen, gateway.clone(), tokens) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("error: cannot listen on {listen}: {e}");
            gateway.shutdown();
            return EXIT_FAILURE;
        }
    };
    install_signal_handlers();
    let stopper = server.stopper();
    let watcher = std::thread::Builder::new()
        .name("wc-http-signal".into())
        .spawn(move || {
            while !STOP.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(100));
            }
            log::info!("http: stopping on a signal");
            stopper.stop();
        });
    if let Err(e) = watcher {
        log::warn!("http: no signal watcher ({e}); stop the server by killing it");
    }
    {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "listening on http://{}", server.local_addr());
        let _ = stdout.flush();
    }
    let result = server.run();
    gateway.shutdown();
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: the HTTP transport failed: {e}");
            EXIT_FAILURE
        }
    }
}

#[cfg(unix)]
fn install_signal_handlers() {
    extern "C" fn on_signal(_: libc::c_int) {
        STOP.store(true, Ordering::SeqCst);
    }
    // SAFETY: the handler only stores to an atomic (async-signal-safe). SA_RESETHAND restores
    // the default action, so a second signal ends the process at once.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut action.sa_mask);
        for signal in [libc::SIGINT, libc::SIGTERM] {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

#[cfg(not(unix))]
fn install_signal_handlers() {}
