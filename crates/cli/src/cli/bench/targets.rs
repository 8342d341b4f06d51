//! The targets of one bench: what the flags name (in the order given), how each is opened, and
//! its lanes: one per concurrent caller, each making one call at a time.
//!
//! - `--command PROG [--arg A]…`: an ad-hoc provider in a host in this process (each `--arg`
//!   belongs to the `--command` before it);
//! - `--config F --plugin P` (each `--plugin` after a `--config` is a target of that file), in
//!   this process or with `--gateway` through a `webcodex-plugin gateway` child;
//! - `--server-url URL [--runner ID] [--mcp] --plugin P`: a `serve` endpoint, on
//!   `/api/tools/call` (this binary's HTTP client) or MCP `/mcp` (a plain keep-alive HTTP/1.1
//!   client), calling plugin P of runner ID (default `local`; another id goes through that
//!   front to its runner);
//! - none of these: the built-in example plugin.

use std::path::PathBuf;
use std::sync::Arc;

use clap::ArgMatches;
use serde_json::{json, Value};
use webcodex_plugin_host::{
    load_runner_config, PluginsConfig, ProviderConfig, RunnerConfig, DEFAULT_MAX_PROVIDERS,
    DEFAULT_REQUEST_TIMEOUT,
};
use webcodex_plugin_host::{Caller, Gateway, ToolOutput};
use webcodex_plugin_http::{ClientOptions, HttpClient};

use super::gateway_client::GatewayClient;
use super::host::start_host;
use super::mcp_client::McpClient;
pub(super) use super::record::Outcome;

/// Where a target's calls go.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Source {
    /// The built-in example plugin, in this process.
    Builtin,
    /// An ad-hoc provider, in this process.
    Command { program: String, args: Vec<String> },
    /// Provider `plugin` of a runner.toml, in this process, or with `gateway` through a
    /// `webcodex-plugin gateway --config` child (stdio JSON lines).
    Config {
        path: PathBuf,
        plugin: String,
        gateway: bool,
    },
    /// Plugin `plugin` of runner `runner` behind a `serve` endpoint.
    Server {
        url: String,
        runner: Option<String>,
        mcp: bool,
        plugin: String,
    },
}

/// One target: its name in the report and its source.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TargetSpec {
    pub name: String,
    pub source: Source,
}

impl TargetSpec {
    /// True for a target served in this process.
    pub fn in_process(&self) -> bool {
        !matches!(
            self.source,
            Source::Server { .. } | Source::Config { gateway: true, .. }
        )
    }

    /// True for a target that presents a token.
    pub fn needs_token(&self) -> bool {
        matches!(self.source, Source::Server { .. })
    }
}

/// One occurrence of a target flag, at its position on the command line.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Flag {
    Command(String),
    Arg(String),
    Config(PathBuf),
    Plugin(String),
    ServerUrl(String),
    Runner(String),
    Mcp,
    Gateway,
    Name(String),
}

/// The target flags of `matches` in command-line order.
pub(super) fn flags_in_order(matches: &ArgMatches) -> Vec<Flag> {
    let mut flags: Vec<(usize, Flag)> = Vec::new();
    let mut strings = |id: &str, make: fn(String) -> Flag| {
        if let (Some(indices), Some(values)) = (
            matches.indices_of(id),
            matches.get_many::<String>(id).map(|v| v.cloned()),
        ) {
            flags.extend(indices.zip(values.map(make)));
        }
    };
    strings("command", Flag::Command);
    strings("args", Flag::Arg);
    strings("plugin", Flag::Plugin);
    strings("server_url", Flag::ServerUrl);
    strings("runner", Flag::Runner);
    strings("name", Flag::Name);
    if let (Some(indices), Some(values)) = (
        matches.indices_of("config"),
        matches.get_many::<PathBuf>("config"),
    ) {
        flags.extend(indices.zip(values.cloned().map(Flag::Config)));
    }
    // A count flag has a default (0) with an index of its own: take only the occurrences.
    for (id, flag) in [("mcp", Flag::Mcp), ("gateway", Flag::Gateway)] {
        let count = usize::from(matches.get_count(id));
        if let Some(indices) = matches.indices_of(id).filter(|_| count > 0) {
            let indices: Vec<usize> = indices.collect();
            let occurrences = &indices[indices.len().saturating_sub(count)..];
            flags.extend(occurrences.iter().map(|&i| (i, flag.clone())));
        }
    }
    flags.sort_by_key(|(i, _)| *i);
    flags.into_iter().map(|(_, f)| f).collect()
}

/// The source flags a `--plugin` belongs to.
enum Current {
    None,
    Config(PathBuf),
    /// Index into `servers`.
    Server(usize),
}

/// The targets the flags name, in order, with their names: `--name` names the target before it
/// (or the first when it comes first); unnamed targets are named after their program, plugin and
/// path, and a single target is `webcodex-plugin-host` as the side-by-side result line has it.
pub(super) fn targets(flags: &[Flag]) -> Result<Vec<TargetSpec>, String> {
    struct Server {
        url: String,
        runner: Option<String>,
        mcp: bool,
    }
    /// A target found so far; a server target's fields are filled in at the end, so
    /// `--runner` and `--mcp` may come before or after the `--plugin` of their `--server-url`.
    struct Found {
        source: Source,
        server: Option<usize>,
        name: Option<String>,
    }
    let mut servers: Vec<Server> = Vec::new();
    let mut found: Vec<Found> = Vec::new();
    let mut current = Current::None;
    let mut leading_name = None;
    let mut pending: Vec<String> = Vec::new();
    // Where the current --config's targets start in `found`, and whether --gateway was given.
    let (mut config_start, mut via_gateway) = (0, false);
    for flag in flags {
        match flag {
            Flag::Command(program) => {
                found.push(Found {
                    source: Source::Command {
                        program: program.clone(),
                        args: Vec::new(),
                    },
                    server: None,
                    name: None,
                });
                current = Current::None;
            }
            Flag::Arg(arg) => match found.last_mut().map(|f| &mut f.source) {
                Some(Source::Command { args, .. }) if matches!(current, Current::None) => {
                    args.push(arg.clone())
                }
                _ => {
                    return Err(format!(
                        "--arg {arg} must follow the --command it belongs to"
                    ))
                }
            },
            Flag::Config(path) => {
                current = Current::Config(path.clone());
                (config_start, via_gateway) = (found.len(), false);
                found.extend(pending.drain(..).map(|plugin| Found {
                    source: Source::Config {
                        path: path.clone(),
                        plugin,
                        gateway: false,
                    },
                    server: None,
                    name: None,
                }));
            }
            Flag::ServerUrl(url) => {
                servers.push(Server {
                    url: url.clone(),
                    runner: None,
                    mcp: false,
                });
                current = Current::Server(servers.len() - 1);
                found.extend(pending.drain(..).map(|plugin| Found {
                    source: Source::Server {
                        url: String::new(),
                        runner: None,
                        mcp: false,
                        plugin,
                    },
                    server: Some(servers.len() - 1),
                    name: None,
                }));
            }
            Flag::Runner(id) => match current {
                Current::Server(s) if servers[s].runner.is_none() => {
                    servers[s].runner = Some(id.clone())
                }
                Current::Server(_) => return Err("one --runner per --server-url".into()),
                _ => return Err(format!("--runner {id} must follow a --server-url")),
            },
            Flag::Gateway => match current {
                Current::Config(_) => {
                    via_gateway = true;
                    for target in &mut found[config_start..] {
                        if let Source::Config { gateway, .. } = &mut target.source {
                            *gateway = true;
                        }
                    }
                }
                _ => return Err("--gateway must follow a --config".into()),
            },
            Flag::Mcp => match current {
                Current::Server(s) => servers[s].mcp = true,
                _ => return Err("--mcp must follow a --server-url".into()),
            },
            Flag::Plugin(plugin) if matches!(current, Current::None) => {
                // Before its source (`--plugin P --config F`, as the flags were once taken in
                // any order): it waits for the next --config or --server-url.
                pending.push(plugin.clone());
            }
            Flag::Plugin(plugin) => {
                let (source, server) = match &current {
                    Current::Config(path) => (
                        Source::Config {
                            path: path.clone(),
                            plugin: plugin.clone(),
                            gateway: via_gateway,
                        },
                        None,
                    ),
                    Current::Server(s) => (
                        Source::Server {
                            url: String::new(),
                            runner: None,
                            mcp: false,
                            plugin: plugin.clone(),
                        },
                        Some(*s),
                    ),
                    Current::None => {
                        return Err(format!(
                            "--plugin {plugin} needs a --config F or --server-url URL before it"
                        ))
                    }
                };
                found.push(Found {
                    source,
                    server,
                    name: None,
                });
            }
            Flag::Name(name) => match found.last_mut() {
                Some(target) if target.name.is_none() => target.name = Some(name.clone()),
                None if leading_name.is_none() => leading_name = Some(name.clone()),
                _ => return Err("one --name per target".into()),
            },
        }
    }
    if let Some(plugin) = pending.first() {
        return Err(format!(
            "--plugin {plugin} needs a --config F or --server-url URL with it"
        ));
    }
    for (s, server) in servers.iter().enumerate() {
        if !found.iter().any(|t| t.server == Some(s)) {
            return Err(format!(
                "--server-url {} needs --plugin P: the plugin to call there",
                server.url
            ));
        }
    }
    if let Current::Config(path) = &current {
        let used = found
            .iter()
            .any(|t| matches!(&t.source, Source::Config { path: p, .. } if p == path));
        if !used {
            return Err(format!(
                "--config {} needs --plugin P: the provider to bench",
                path.display()
            ));
        }
    }
    let mut named: Vec<(Source, Option<String>)> = Vec::new();
    for mut target in found {
        if let (
            Some(s),
            Source::Server {
                url, runner, mcp, ..
            },
        ) = (target.server, &mut target.source)
        {
            url.clone_from(&servers[s].url);
            runner.clone_from(&servers[s].runner);
            *mcp = servers[s].mcp;
        }
        named.push((target.source, target.name));
    }
    if named.is_empty() {
        named.push((Source::Builtin, None));
    }
    if let Some(name) = leading_name {
        match named[0].1 {
            None => named[0].1 = Some(name),
            Some(_) => return Err("one --name per target".into()),
        }
    }
    let single = named.len() == 1;
    let mut specs: Vec<TargetSpec> = Vec::new();
    for (source, name) in named {
        let name = name.unwrap_or_else(|| {
            if single {
                "webcodex-plugin-host".to_string()
            } else {
                default_name(&source)
            }
        });
        let taken = |n: &str| specs.iter().any(|s| s.name == n);
        let mut unique = name.clone();
        let mut k = 2;
        while taken(&unique) {
            unique = format!("{name}-{k}");
            k += 1;
        }
        specs.push(TargetSpec {
            name: unique,
            source,
        });
    }
    Ok(specs)
}

/// A target's name when none is given: its program's file stem, its plugin id, or for a server
/// `PLUGIN@http`, `PLUGIN@mcp`, with `.RUNNER` for a runner behind a front.
fn default_name(source: &Source) -> String {
    match source {
        Source::Builtin => "example".into(),
        Source::Command { program, .. } => std::path::Path::new(program)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("command")
            .to_string(),
        Source::Config {
            plugin,
            gateway: true,
            ..
        } => format!("{plugin}@gateway"),
        Source::Config { plugin, .. } => plugin.clone(),
        Source::Server {
            runner,
            mcp,
            plugin,
            ..
        } => {
            let path = if *mcp { "mcp" } else { "http" };
            match runner {
                Some(r) => format!("{plugin}@{path}.{r}"),
                None => format!("{plugin}@{path}"),
            }
        }
    }
}

/// What a call returned: read for its outcome, and dropped, after the call's clock stopped.
pub(super) enum Reply {
    /// A gateway output (in-process, or decoded by the HTTP client).
    Output(ToolOutput),
    /// An answer the MCP client already read (its body held to be dropped after the clock
    /// stops), or a request that got none.
    Decided(Outcome, Option<String>, #[allow(dead_code)] Vec<u8>),
}

impl Reply {
    /// How the call ended, and a failure's one-line reason.
    pub fn outcome(&self) -> (Outcome, Option<String>) {
        match self {
            Reply::Output(output) if output.is_success() => {
                if output.is_tool_error() {
                    (Outcome::ToolError, None)
                } else {
                    (Outcome::Ok, None)
                }
            }
            Reply::Output(output) => (Outcome::Failed, Some(output_error(output))),
            Reply::Decided(outcome, reason, _) => (*outcome, reason.clone()),
        }
    }
}

/// One caller's way to a target: makes one call at a time.
pub(super) enum Lane {
    Local {
        gateway: Arc<Gateway>,
        params: Value,
    },
    Http {
        client: HttpClient,
        params: Value,
    },
    Mcp {
        client: McpClient,
        params: Value,
    },
    Gateway {
        client: GatewayClient,
        params: Value,
    },
}

impl Lane {
    /// One call, to its reply.
    pub fn call(&self) -> Reply {
        match self {
            Lane::Local { gateway, params } => {
                Reply::Output(gateway.plugin_tool(&Caller::trusted(), params))
            }
            Lane::Http { client, params } => match client.plugin_tool(params) {
                Ok(output) => Reply::Output(output),
                Err(e) => Reply::Decided(Outcome::Failed, Some(format!("transport: {e}")), vec![]),
            },
            Lane::Gateway { client, params } => match client.plugin_tool(params) {
                Ok(output) => Reply::Output(output),
                Err(e) => Reply::Decided(Outcome::Failed, Some(format!("transport: {e}")), vec![]),
            },
            Lane::Mcp { client, params } => match client.call_tool(params) {
                Ok((outcome, reason, body)) => Reply::Decided(outcome, reason, body),
                Err(e) => Reply::Decided(Outcome::Failed, Some(format!("transport: {e}")), vec![]),
            },
        }
    }
}

/// A failed plugin_tool output as one line: `code: message (dispatch)`.
pub(super) fn output_error(output: &ToolOutput) -> String {
    if let Some(f) = output.failure_info() {
        return format!("{}: {} ({})", f.code, f.message, f.dispatch);
    }
    let json = output.to_json();
    format!(
        "{}: {} ({})",
        json["error"]["code"].as_str().unwrap_or("unknown"),
        json["error"]["message"].as_str().unwrap_or(""),
        json["dispatch"].as_str().unwrap_or("")
    )
}

/// What the calls send: the tool, its arguments, and the credential of server targets.
pub(super) struct CallSpec<'a> {
    pub tool: &'a str,
    pub arguments: &'a Value,
    pub token: Option<&'a str>,
}

/// An opened target: `lanes` callers, and what to shut down after.
pub(super) struct Opened {
    pub lanes: Vec<Lane>,
    gateway: Option<Arc<Gateway>>,
}

impl Opened {
    /// Shuts an in-process host down (its providers exit).
    pub fn close(self) {
        drop(self.lanes);
        if let Some(gateway) = self.gateway {
            gateway.shutdown();
        }
    }
}

/// The runner config and provider of an in-process source.
pub(super) fn provider_of(source: &Source) -> Result<(RunnerConfig, ProviderConfig), String> {
    let mut config = match source {
        Source::Config { path, plugin, .. } => {
            let config = load_runner_config(path, DEFAULT_MAX_PROVIDERS).map_err(|e| {
                format!("--config {}: {}: {}", path.display(), e.code(), e.message())
            })?;
            let provider = config.provider(plugin).cloned().ok_or_else(|| {
                format!(
                    "--config {}: no provider with id `{plugin}`",
                    path.display()
                )
            })?;
            return Ok((config, provider));
        }
        Source::Command { program, args } => RunnerConfig {
            plugins: PluginsConfig {
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
                providers: vec![ProviderConfig {
                    id: "bench".into(),
                    name: "bench".into(),
                    command: program.clone(),
                    args: args.clone(),
                    cwd: None,
                    profile: None,
                    timeout: DEFAULT_REQUEST_TIMEOUT,
                    restart: Default::default(),
                }],
            },
            ..RunnerConfig::default()
        },
        Source::Builtin => super::super::demo::example_runner()?,
        Source::Server { .. } => return Err("a server target has no local provider".into()),
    };
    let provider = config.plugins.providers.remove(0);
    Ok((config, provider))
}

/// Opens `spec` with `lanes` callers: an in-process target starts that many providers (one per
/// caller, since a provider takes one call at a time); a server target gets that many
/// connections to the same plugin. Each lane's call is bound by one `describe` first.
pub(super) fn open(spec: &TargetSpec, lanes: usize, call: &CallSpec<'_>) -> Result<Opened, String> {
    let lanes = lanes.max(1);
    let fail = |m: String| format!("{}: {m}", spec.name);
    match &spec.source {
        Source::Server {
            url,
            runner,
            mcp,
            plugin,
        } => {
            let token = call
                .token
                .ok_or_else(|| fail("--server-url needs a credential".into()))?;
            let describe = json!({
                "action": "describe",
                "runner": runner.as_deref().unwrap_or("local"),
                "plugin": plugin,
                "tool": call.tool,
            });
            let mut out = Vec::with_capacity(lanes);
            if *mcp {
                for _ in 0..lanes {
                    let client = McpClient::new(url, token).map_err(&fail)?;
                    let binding = client.describe(&describe).map_err(&fail)?;
                    let params = call_params(&binding, call.arguments);
                    out.push(Lane::Mcp { client, params });
                }
            } else {
                let client = HttpClient::new(url, token, ClientOptions::default())
                    .map_err(|e| fail(format!("--server-url: {e}")))?;
                let described = client
                    .plugin_tool(&describe)
                    .map_err(|e| fail(format!("describe: {e}")))?;
                let binding = described_binding(&described).map_err(&fail)?;
                let params = call_params(&binding, call.arguments);
                for _ in 0..lanes {
                    out.push(Lane::Http {
                        client: client.clone(),
                        params: params.clone(),
                    });
                }
            }
            Ok(Opened {
                lanes: out,
                gateway: None,
            })
        }
        Source::Config {
            path,
            plugin,
            gateway: true,
        } => {
            // One gateway (with its own providers) per lane: a provider takes one call at a
            // time.
            let describe = json!({
                "action": "describe", "runner": "local", "plugin": plugin, "tool": call.tool,
            });
            let mut out = Vec::with_capacity(lanes);
            for _ in 0..lanes {
                let client = GatewayClient::start(path).map_err(&fail)?;
                let described = client
                    .plugin_tool(&describe)
                    .map_err(|e| fail(format!("describe: {e}")))?;
                let binding = described_binding(&described).map_err(&fail)?;
                let params = call_params(&binding, call.arguments);
                out.push(Lane::Gateway { client, params });
            }
            Ok(Opened {
                lanes: out,
                gateway: None,
            })
        }
        source => {
            let (config, provider) = provider_of(source).map_err(&fail)?;
            let host = start_host(config, &provider, lanes).map_err(&fail)?;
            let ids: Vec<String> = host
                .providers()
                .entries()
                .iter()
                .map(|e| e.id.clone())
                .collect();
            let gateway = Arc::new(Gateway::single(Arc::new(host)));
            let mut out = Vec::with_capacity(lanes);
            for id in &ids {
                let described = gateway.plugin_tool(
                    &Caller::trusted(),
                    &json!({"action": "describe", "runner": "local", "plugin": id, "tool": call.tool}),
                );
                match described_binding(&described) {
                    Ok(binding) => out.push(Lane::Local {
                        gateway: Arc::clone(&gateway),
                        params: call_params(&binding, call.arguments),
                    }),
                    Err(e) => {
                        drop(out);
                        gateway.shutdown();
                        return Err(fail(e));
                    }
                }
            }
            Ok(Opened {
                lanes: out,
                gateway: Some(gateway),
            })
        }
    }
}

fn described_binding(described: &ToolOutput) -> Result<String, String> {
    if let Some(binding) = described.binding() {
        return Ok(binding.to_string());
    }
    if described.is_success() {
        if let Some(binding) = described.to_json()["binding"].as_str() {
            return Ok(binding.to_string());
        }
    }
    Err(format!("describe: {}", output_error(described)))
}

fn call_params(binding: &str, arguments: &Value) -> Value {
    json!({"action": "call", "binding": binding, "arguments": arguments})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(flags: &[Flag]) -> Vec<(String, Source)> {
        targets(flags)
            .unwrap()
            .into_iter()
            .map(|t| (t.name, t.source))
            .collect()
    }

    #[test]
    fn each_command_takes_the_args_after_it() {
        let flags = [
            Flag::Command("/bin/a".into()),
            Flag::Arg("-x".into()),
            Flag::Command("/opt/b.py".into()),
            Flag::Arg("1".into()),
            Flag::Arg("2".into()),
        ];
        let got = names(&flags);
        assert_eq!(got[0].0, "a");
        assert_eq!(
            got[1],
            (
                "b".into(),
                Source::Command {
                    program: "/opt/b.py".into(),
                    args: vec!["1".into(), "2".into()]
                }
            )
        );
    }

    #[test]
    fn one_target_keeps_the_result_line_name_and_a_name_flag_names_it() {
        assert_eq!(names(&[])[0].0, "webcodex-plugin-host");
        let flags = [Flag::Command("/bin/a".into()), Flag::Name("mine".into())];
        assert_eq!(names(&flags)[0].0, "mine");
        let flags = [Flag::Name("first".into()), Flag::Command("/bin/a".into())];
        assert_eq!(names(&flags)[0].0, "first");
    }

    #[test]
    fn plugins_follow_their_config_or_server_and_names_stay_unique() {
        let flags = [
            Flag::Config("r.toml".into()),
            Flag::Plugin("py".into()),
            Flag::Plugin("py".into()),
            Flag::ServerUrl("http://h:1".into()),
            Flag::Plugin("py".into()),
            Flag::Name("remote".into()),
            Flag::Mcp,
            Flag::Runner("edge".into()),
        ];
        let got = names(&flags);
        let got: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(got, ["py", "py-2", "remote"]);
        let specs = targets(&flags).unwrap();
        assert_eq!(
            specs[2].source,
            Source::Server {
                url: "http://h:1".into(),
                runner: Some("edge".into()),
                mcp: true,
                plugin: "py".into()
            }
        );
        let unnamed = [
            Flag::ServerUrl("http://h:1".into()),
            Flag::Plugin("p".into()),
        ];
        let two = [unnamed.to_vec(), vec![Flag::Mcp]].concat();
        assert_eq!(names(&unnamed)[0].0, "webcodex-plugin-host");
        let both = [
            unnamed.to_vec(),
            vec![
                Flag::ServerUrl("http://h:1".into()),
                Flag::Mcp,
                Flag::Plugin("p".into()),
            ],
        ]
        .concat();
        let got: Vec<String> = names(&both).into_iter().map(|(n, _)| n).collect();
        assert_eq!(got, ["p@http", "p@mcp"]);
        assert!(targets(&two).is_ok());
    }

    #[test]
    fn a_plugin_before_its_config_still_belongs_to_it() {
        let flags = [Flag::Plugin("p".into()), Flag::Config("r.toml".into())];
        let got = names(&flags);
        assert_eq!(
            got[0].1,
            Source::Config {
                path: "r.toml".into(),
                plugin: "p".into(),
                gateway: false
            }
        );
    }

    #[test]
    fn gateway_marks_the_plugins_of_its_config_before_and_after_it() {
        let flags = [
            Flag::Config("a.toml".into()),
            Flag::Plugin("p".into()),
            Flag::Gateway,
            Flag::Plugin("q".into()),
            Flag::Config("a.toml".into()),
            Flag::Plugin("p".into()),
        ];
        let got: Vec<(String, bool)> = targets(&flags)
            .unwrap()
            .into_iter()
            .map(|t| match t.source {
                Source::Config { gateway, .. } => (t.name, gateway),
                other => panic!("{other:?}"),
            })
            .collect();
        let want = [("p@gateway", true), ("q@gateway", true), ("p", false)];
        let want: Vec<(String, bool)> = want.iter().map(|(n, g)| (n.to_string(), *g)).collect();
        assert_eq!(got, want);
        let e = targets(&[Flag::Gateway]).unwrap_err();
        assert!(e.contains("--gateway must follow a --config"), "{e}");
    }

    #[test]
    fn misplaced_flags_are_refused_with_what_to_change() {
        let cases: [(&[Flag], &str); 6] = [
            (&[Flag::Arg("x".into())], "--arg x must follow"),
            (
                &[Flag::Plugin("p".into())],
                "needs a --config F or --server-url",
            ),
            (&[Flag::ServerUrl("http://h".into())], "needs --plugin P"),
            (&[Flag::Config("r.toml".into())], "needs --plugin P"),
            (&[Flag::Mcp], "--mcp must follow a --server-url"),
            (
                &[Flag::Command("c".into()), Flag::Plugin("p".into())],
                "--plugin p needs",
            ),
        ];
        for (flags, needle) in cases {
            let e = targets(flags).unwrap_err();
            assert!(e.contains(needle), "{e}");
        }
    }
}
