//! Command-line parsing and dispatch. Exit codes: 0 ok; 1 tool failure; 2 usage error, invalid
//! configuration, check not ready, reload with failures.

mod admin;
mod bench;
mod cluster;
mod connect;
mod demo;
mod human;
mod init;
pub(crate) mod logging;
mod mcp;
mod oneshot;
pub(crate) mod redact;
mod reload;
mod scaffold;
mod serve;
mod service;
mod stop_signal;
mod target;
mod token;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Exit code for success.
pub const EXIT_OK: i32 = 0;
/// Exit code for a tool failure.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code for usage errors, invalid configs, a check that is not ready, a reload with failures.
pub const EXIT_USAGE: i32 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "webcodex-plugin",
    version,
    about = "Host Native Tool Plugins (webcodex-plugin-v1) behind the plugin_tool gateway"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a built-in runner (this binary's example plugin) through check → list → describe → call.
    Demo,
    /// Serve plugin_tool as JSON lines on stdin/stdout.
    Gateway {
        /// The runner.toml to host (the runner `local`).
        #[arg(long, required_unless_present = "runners")]
        config: Option<PathBuf>,
        /// A runners file: remote `serve` runners to route to, beside or instead of --config.
        #[arg(long, value_name = "FILE")]
        runners: Option<PathBuf>,
        /// Scopes of the stdio caller (default: every scope).
        #[arg(
            long,
            default_value = "plugin:inspect,plugin:invoke,plugin:manage,project:read,project:write"
        )]
        scopes: String,
        #[command(flatten)]
        log: logging::LogArgs,
    },
    /// Print a shell completion script, e.g. `webcodex-plugin completions bash > …`.
    Completions {
        /// The shell: bash, elvish, fish, powershell or zsh.
        shell: clap_complete::Shell,
    },
    /// Serve plugin_tool as an MCP server on stdin/stdout (both MCP eras).
    Mcp {
        /// The runner.toml to host (the runner `local`).
        #[arg(long, required_unless_present = "runners")]
        config: Option<PathBuf>,
        /// A runners file: remote `serve` runners to route to, beside or instead of --config.
        #[arg(long, value_name = "FILE")]
        runners: Option<PathBuf>,
        /// Scopes of the stdio caller (default: every scope).
        #[arg(
            long,
            default_value = "plugin:inspect,plugin:invoke,plugin:manage,project:read,project:write"
        )]
        scopes: String,
        #[command(flatten)]
        log: logging::LogArgs,
    },
    /// Print the static MCP ToolSpec of plugin_tool (independent of any config).
    Manifest {
        /// Print the canonical JSON of the ToolSpec.
        #[arg(long)]
        json: bool,
    },
    /// Serve plugin_tool over HTTP (POST /api/tools/call, bearer tokens from a tokens file);
    /// runners behind NAT dial in on GET /api/runners/connect with a runner token.
    Serve {
        /// The runner.toml to host (the runner `local`). A front with only dial-out runners
        /// (runner tokens in --tokens) needs none.
        #[arg(long)]
        config: Option<PathBuf>,
        /// A runners file: remote `serve` runners to route to, beside or instead of --config.
        #[arg(long, value_name = "FILE")]
        runners: Option<PathBuf>,
        /// The address to listen on, e.g. 127.0.0.1:8787 (port 0 picks a free port). May be
        /// omitted under systemd socket activation (LISTEN_FDS), which passes the listener.
        #[arg(long)]
        listen: Option<String>,
        /// The tokens file (TOML `[[tokens]]` entries with name, token, scopes; `token new`
        /// prints one).
        #[arg(long)]
        tokens: PathBuf,
        /// A browser origin allowed on /mcp and /api/tools/call (CORS), e.g.
        /// http://localhost:3000 (repeatable; `*` is refused). A /mcp request whose Origin
        /// header is present and not allowed gets 403; the server's own origin on a loopback
        /// host (localhost, 127.0.0.1 or IPv6 ::1) is always allowed.
        #[arg(long = "allow-origin", value_name = "ORIGIN")]
        allow_origin: Vec<String>,
        /// Also serve GET /healthz, /readyz and /metrics, without credentials, on this address
        /// (e.g. 127.0.0.1:9464; keep it on loopback or a private network). Off unless given.
        #[arg(long = "admin-listen", value_name = "ADDR")]
        admin_listen: Option<String>,
        /// Cluster mode: several replicas behind a load balancer, no affinity. FILE holds
        /// `[[keys]]` entries {id, secret} (`token new --cluster-key` prints one): the first
        /// seals every binding, all open them, SIGHUP re-reads it. No --config: runners
        /// connect to every replica, or come from --runners.
        #[arg(long = "cluster-keys", value_name = "FILE")]
        cluster_keys: Option<PathBuf>,
        /// In cluster mode, how long a binding opens after its describe: a whole number with
        /// s, m, h or d (default 24h).
        #[arg(
            long = "binding-ttl",
            value_name = "DURATION",
            requires = "cluster_keys"
        )]
        binding_ttl: Option<String>,
        #[command(flatten)]
        log: logging::LogArgs,
    },
    /// Run a runner behind NAT: host --config and dial out to a front (`serve`) with a runner
    /// token, reconnecting until SIGINT/SIGTERM.
    Connect(connect::ConnectArgs),
    /// List the providers of a runner, or one provider's tools (without --plugin and --runner,
    /// a --server-url endpoint lists its runners).
    List {
        #[command(flatten)]
        source: target::Source,
        /// A provider id: list its tools.
        #[arg(long)]
        plugin: Option<String>,
        /// Print the canonical output object.
        #[arg(long)]
        json: bool,
    },
    /// Describe one tool (its full definition) and print the binding a `call --binding` takes.
    Describe {
        #[command(flatten)]
        source: target::Source,
        /// The provider id.
        #[arg(long)]
        plugin: String,
        /// The tool name.
        #[arg(long)]
        tool: String,
        /// Bind the tool to this project root (an absolute path on the runner): its calls then
        /// run only while the root is the directory the plugin was started in.
        #[arg(long, value_name = "DIR")]
        project: Option<String>,
        /// Print the canonical output object.
        #[arg(long)]
        json: bool,
    },
    /// Describe and call one tool, or call a binding an earlier `describe` gave.
    Call {
        #[command(flatten)]
        source: target::Source,
        /// The provider id.
        #[arg(long, required_unless_present = "binding")]
        plugin: Option<String>,
        /// The tool name.
        #[arg(long, required_unless_present = "binding")]
        tool: Option<String>,
        /// A binding from an earlier `describe --server-url URL` of the same endpoint, instead
        /// of --plugin and --tool (a binding names its runner: no --runner).
        #[arg(long, value_name = "BINDING", conflicts_with_all = ["plugin", "tool", "runner"])]
        binding: Option<String>,
        /// Describe the tool bound to this project root (an absolute path on the runner) before
        /// the call (a binding of `--binding` carries its project already).
        #[arg(long, value_name = "DIR", conflicts_with = "binding")]
        project: Option<String>,
        /// The arguments, a JSON object.
        #[arg(long, default_value = "{}")]
        arguments: String,
        /// Print the canonical output object.
        #[arg(long)]
        json: bool,
    },
    /// Admit a provider (or, without --plugin, each configured one in turn) as a disposable
    /// candidate and report what a plugin author should fix.
    Check {
        #[command(flatten)]
        source: target::Source,
        /// The provider id; without it every configured provider is checked.
        #[arg(long)]
        plugin: Option<String>,
        /// Print the canonical output object.
        #[arg(long)]
        json: bool,
    },
    /// Restart every provider from the configuration, all or nothing.
    Reload {
        #[command(flatten)]
        source: target::Source,
        /// Print the canonical output object.
        #[arg(long)]
        json: bool,
    },
    /// The tools of providers whose cwd is a project root.
    Catalog {
        #[command(flatten)]
        source: target::Source,
        /// The absolute project root.
        #[arg(long)]
        project: PathBuf,
        /// Print the canonical output object.
        #[arg(long)]
        json: bool,
    },
    /// Measure plugin RPC latency through the full call path.
    Bench(bench::BenchArgs),
    /// Scaffold a new plugin in an empty directory (local only) and print its provider block.
    Init {
        /// The target directory (created when missing; must be empty).
        dir: PathBuf,
        /// The provider id (default: derived from the directory name).
        #[arg(long)]
        id: Option<String>,
        /// The plugin's language.
        #[arg(long, default_value = "python", value_parser = ["ts", "python", "rust"])]
        lang: String,
    },
    /// Make credentials: `token new` prints a fresh token in a `[[tokens]]` entry for `serve
    /// --tokens`.
    Token {
        #[command(subcommand)]
        command: token::TokenCommand,
    },
    /// The built-in example plugin (speaks webcodex-plugin-v1 on stdin/stdout).
    #[command(hide = true)]
    ExamplePlugin,
}

/// Parses the command line, runs the command and returns the process exit code.
pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    match cli.command {
        Command::Demo => demo::run(),
        Command::Gateway {
            config,
            runners,
            scopes,
            log,
        } => match with_log(&log, front(config, runners)) {
            Ok(front) => serve::gateway(&front, &scopes),
            Err(code) => code,
        },
        Command::Mcp {
            config,
            runners,
            scopes,
            log,
        } => match with_log(&log, front(config, runners)) {
            Ok(front) => mcp::mcp(&front, &scopes),
            Err(code) => code,
        },
        Command::Manifest { json } => mcp::manifest(json),
        Command::Serve {
            config,
            runners,
            listen,
            tokens,
            allow_origin,
            admin_listen,
            cluster_keys,
            binding_ttl,
            log,
        } => match with_log(&log, front(config, runners)) {
            Ok(front) => serve::serve(
                &front,
                serve::Listening {
                    listen: listen.as_deref(),
                    tokens: &tokens,
                    origins: allow_origin,
                    admin_listen: admin_listen.as_deref(),
                },
                cluster_keys.map(|keys| cluster::ClusterArgs {
                    keys,
                    ttl: binding_ttl,
                }),
            ),
            Err(code) => code,
        },
        Command::Connect(args) => {
            args.log.apply();
            match config_file(&args.config) {
                Ok(()) => connect::run(args),
                Err(code) => code,
            }
        }
        Command::List {
            source,
            plugin,
            json,
        } => with(source, |s, r| oneshot::list(s, r, plugin.as_deref(), json)),
        Command::Describe {
            source,
            plugin,
            tool,
            project,
            json,
        } => with(source, |s, r| {
            oneshot::describe(s, r, (&plugin, &tool), project.as_deref(), json)
        }),
        Command::Call {
            source,
            plugin,
            tool,
            binding,
            project,
            arguments,
            json,
        } => with(source, |s, r| {
            let callee = match (&binding, &plugin, &tool) {
                (Some(binding), _, _) => oneshot::Callee::Binding(binding),
                (None, Some(plugin), Some(tool)) => oneshot::Callee::Tool {
                    plugin,
                    tool,
                    project: project.as_deref(),
                },
                // clap requires --plugin and --tool without --binding.
                _ => return EXIT_USAGE,
            };
            oneshot::call(s, r, callee, &arguments, json)
        }),
        Command::Check {
            source,
            plugin,
            json,
        } => with(source, |s, r| match plugin {
            Some(plugin) => oneshot::check(s, r, &plugin, json),
            None => oneshot::check_all(s, r, json),
        }),
        Command::Reload { source, json } => with(source, |s, r| oneshot::reload(s, r, json)),
        Command::Catalog {
            source,
            project,
            json,
        } => with(source, |s, r| oneshot::catalog(s, r, &project, json)),
        Command::Bench(args) => bench::run(args),
        Command::Init { dir, id, lang } => init::run(&dir, id.as_deref(), &lang),
        Command::Completions { shell } => completions(shell),
        Command::Token { command } => token::run(command),
        Command::ExamplePlugin => match webcodex_plugin_sdk::example_plugin().serve_stdio() {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("example-plugin: {e}");
                EXIT_FAILURE
            }
        },
    }
}

/// Applies `--log-format` for a long-running command, then passes its runners on.
fn with_log(
    log: &logging::LogArgs,
    front: Result<target::Front, i32>,
) -> Result<target::Front, i32> {
    log.apply();
    front
}

/// The runners of a serving command: `--config` (checked by [`config_file`]) and/or `--runners`.
fn front(config: Option<PathBuf>, runners: Option<PathBuf>) -> Result<target::Front, i32> {
    if let Some(config) = &config {
        config_file(config)?;
    }
    Ok(target::Front { config, runners })
}

/// Resolves `--config` / `--server-url` (reading the token file; a `--config` file checked
/// first by [`config_file`]) and `--runner` before the action runs.
fn with(
    source: target::Source,
    action: impl FnOnce(target::Resolved, &target::Runner) -> i32,
) -> i32 {
    let (resolved, runner) = match source.resolve() {
        Ok(resolved) => resolved,
        Err(code) => return code,
    };
    if let target::Resolved::Config(config) = &resolved {
        if let Err(code) = config_file(config) {
            return code;
        }
    }
    action(resolved, &runner)
}

/// The exit code of `call` after its output was printed with exit code `printed`: a completed
/// call whose tool reported `isError: true` exits [`EXIT_FAILURE`] like any failed call, so a
/// script can tell a refused operation from a done one (human and `--json` alike).
fn call_exit_code(output: &webcodex_plugin_host::ToolOutput, printed: i32) -> i32 {
    let tool_error = output.is_tool_error();
    if printed == EXIT_OK && tool_error {
        EXIT_FAILURE
    } else {
        printed
    }
}

/// Parses `--arguments`: a JSON object, or the exit code after a message on stderr that says
/// what is wrong (the parser's reason and position, or the type that was given instead).
fn parse_arguments(text: &str) -> Result<serde_json::Value, i32> {
    use serde_json::Value;
    let problem = match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => return Ok(value),
        Ok(other) => format!("it is {}, not an object", json_kind(&other)),
        Err(e) => format!("it is not valid JSON: {e}"),
    };
    eprintln!("error: --arguments must be a JSON object, e.g. '{{\"text\":\"hi\"}}'; {problem}");
    Err(EXIT_USAGE)
}

/// `a string`, `an array`, …: the JSON type of `value` for a message.
fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Checks that `--config` names a readable file, naming the path as given when it does not
/// (the library's own message never carries a path).
fn config_file(path: &std::path::Path) -> Result<(), i32> {
    use std::io::ErrorKind;
    let problem = match std::fs::File::open(path).and_then(|f| f.metadata()) {
        Ok(meta) if meta.is_dir() => "is a directory; give the path of a runner.toml file".into(),
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => "does not exist".into(),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            "cannot be read: permission denied".into()
        }
        Err(e) => format!("cannot be read: {e}"),
    };
    eprintln!(
        "error: plugin_config_read_failed: --config {}: {problem}",
        path.display()
    );
    Err(EXIT_USAGE)
}

/// Prints the completion script for `shell` (generated into memory first, so a closed pipe
/// such as `| head` ends the output quietly instead of panicking).
fn completions(shell: clap_complete::Shell) -> i32 {
    use std::io::Write;
    let mut command = <Cli as clap::CommandFactory>::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "webcodex-plugin", &mut script);
    match std::io::stdout().lock().write_all(&script) {
        Ok(()) => EXIT_OK,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(e) => {
            eprintln!("error: cannot write the completion script: {e}");
            EXIT_FAILURE
        }
    }
}
