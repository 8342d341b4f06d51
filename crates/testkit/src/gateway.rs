//! Shared helpers of the gateway integration tests: fixture hosts built in code, and a line
//! transport served in process over a pipe.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde_json::Value;
use webcodex_plugin_host::{Caller, Gateway, ToolOutput};
use webcodex_plugin_host::{ConfigSource, Host, HostOptions};
use webcodex_plugin_host::{PluginsConfig, ProviderConfig, RunnerConfig, ShellConfig};

/// The fixture plugin, built on first use by the same cargo (see [`crate::fixture_path`]),
/// so `cargo test --test NAME` works on a fresh target too.
pub fn fixture() -> PathBuf {
    crate::fixture_path()
}

/// A fresh temp dir whose name contains `tag`, removed on drop.
pub fn temp_dir(tag: &str) -> crate::tempdir::TempDir {
    crate::tempdir::TempDir::new("gw", tag)
}

/// A provider running the fixture with `args` (the first is the mode).
pub fn provider(id: &str, args: &[&str]) -> ProviderConfig {
    ProviderConfig {
        id: id.to_string(),
        name: format!("Provider {id}"),
        command: fixture().display().to_string(),
        args: args.iter().map(|a| a.to_string()).collect(),
        cwd: None,
        profile: None,
        timeout: Duration::from_secs(5),
        restart: Default::default(),
    }
}

/// A runner config with these providers and `shell.env`.
pub fn config(providers: Vec<ProviderConfig>, env: &[(&str, &str)]) -> RunnerConfig {
    RunnerConfig {
        shell: ShellConfig {
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            ..ShellConfig::default()
        },
        plugins: PluginsConfig {
            providers,
            ..PluginsConfig::default()
        },
    }
}

/// Starts a host on a fixed config.
pub fn host(config: RunnerConfig) -> Arc<Host> {
    Arc::new(Host::start(ConfigSource::Fixed(config), HostOptions::default()).unwrap())
}

/// A gateway whose `local` runner runs these providers.
pub fn gateway(providers: Vec<ProviderConfig>) -> Gateway {
    Gateway::single(host(config(providers, &[])))
}

/// One request with every scope.
pub fn run(gateway: &Gateway, params: Value) -> ToolOutput {
    gateway.plugin_tool(&Caller::trusted(), &params)
}

/// One request that must succeed; its output.
pub fn ok(gateway: &Gateway, params: Value) -> Value {
    let out = run(gateway, params.clone());
    assert!(out.is_success(), "{params} failed: {}", out.to_json());
    out.into_json()
}

/// One request that must fail; its output.
pub fn fail(gateway: &Gateway, params: Value) -> Value {
    let out = run(gateway, params.clone());
    assert!(!out.is_success(), "{params} succeeded: {}", out.to_json());
    out.into_json()
}

/// The error code of a failure output.
pub fn code(output: &Value) -> &str {
    output["error"]["code"].as_str().unwrap()
}

/// The sorted keys of an object.
pub fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    keys
}

/// Describes `tool` of `plugin` on `local` and returns its binding.
pub fn bind(gateway: &Gateway, plugin: &str, tool: &str) -> String {
    let out = ok(
        gateway,
        serde_json::json!({"action":"describe","runner":"local","plugin":plugin,"tool":tool}),
    );
    out["binding"].as_str().unwrap().to_string()
}

/// True when `s` matches `^wc_pbind_[A-Za-z0-9_-]{22}$`.
pub fn is_binding(s: &str) -> bool {
    match s.strip_prefix("wc_pbind_") {
        Some(rest) => {
            rest.len() == 22
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        }
        None => false,
    }
}

/// A writer that parses each complete line written to it as JSON and forwards it: the output
/// side of a line transport served in process.
pub struct JsonLineSink {
    partial: Vec<u8>,
    lines: Sender<Value>,
}

impl JsonLineSink {
    /// A sink and the receiver of the lines written to it.
    pub fn new() -> (JsonLineSink, Receiver<Value>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let sink = JsonLineSink {
            partial: Vec::new(),
            lines: tx,
        };
        (sink, rx)
    }
}

impl Write for JsonLineSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(i) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=i).collect();
            let value: Value = serde_json::from_slice(&line[..i]).expect("an output line is JSON");
            let _ = self.lines.send(value);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A line transport (`serve_lines`, `mcp::serve_stdio`) served on a thread of its own, its
/// input a pipe the test writes lines to, its output lines parsed as JSON.
pub struct PipedTransport {
    input: Option<os_pipe::PipeWriter>,
    output: Receiver<Value>,
    handle: JoinHandle<std::io::Result<()>>,
}

impl PipedTransport {
    /// Starts `serve` on a new pipe and a [`JsonLineSink`].
    pub fn start<F>(serve: F) -> PipedTransport
    where
        F: FnOnce(BufReader<os_pipe::PipeReader>, JsonLineSink) -> std::io::Result<()>
            + Send
            + 'static,
    {
        let (reader, writer) = os_pipe::pipe().expect("a pipe");
        let (sink, output) = JsonLineSink::new();
        let handle = std::thread::spawn(move || serve(BufReader::new(reader), sink));
        PipedTransport {
            input: Some(writer),
            output,
            handle,
        }
    }

    /// Writes `line` and a newline.
    pub fn send_line(&mut self, line: &str) {
        let input = self.input.as_mut().expect("input still open");
        input.write_all(line.as_bytes()).unwrap();
        input.write_all(b"\n").unwrap();
    }

    /// The next output line, waiting at most `limit` (a hang, never a timing).
    pub fn next_within(&self, limit: Duration) -> Value {
        self.output.recv_timeout(limit).expect("an output line")
    }

    /// Closes the input, waits for the transport to return `Ok`, and returns the output lines
    /// not read yet.
    pub fn finish(mut self) -> Vec<Value> {
        drop(self.input.take());
        self.handle.join().unwrap().unwrap();
        self.output.try_iter().collect()
    }
}
