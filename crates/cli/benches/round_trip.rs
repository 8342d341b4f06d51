//! The call round trip against this crate's built-in example plugin, side by side with its
//! in-run floor (docs/PROTOCOL.md §9.5; docs/PERFORMANCE.md):
//!
//! - `provider_call_echo`: a warm `Provider::call("echo", {"text":"hello"})` through the full
//!   call path (argument validation → frame → writer thread → pipe → plugin → reader thread →
//!   envelope → result validation);
//! - `raw_pipe_floor`: the same child binary, driven by hand like a raw pipe ping-pong: after
//!   an untimed initialize + tools/list handshake, each iteration writes a pre-serialized
//!   tools/call line, flushes and `read_line`s the reply, with no JSON work on the host side;
//! - `raw_pipe_floor_decode`: the same, plus parsing each reply into a `serde_json::Value`: the
//!   least any client that decodes its reply pays.
//!
//! The difference between the two is what the host adds on top of the pipe and the plugin.
//! Throughput is reported in calls per second. Run with `cargo bench --bench round_trip`.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;
use webcodex_plugin_host::EnvSnapshot;
use webcodex_plugin_host::{LaunchSpec, Provider, ProviderSpec};

/// This crate's binary, built by cargo for benches; it serves the example plugin as
/// `webcodex-plugin example-plugin`.
const PLUGIN_BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
const PLUGIN_ARG: &str = "example-plugin";

const INITIALIZE: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"webcodex-plugin-v1\"}}\n";
const TOOLS_LIST: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}\n";
/// The same frame for every iteration, as in the floor client (the plugin echoes any id).
const CALL: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}}}\n";

fn plugin_env() -> EnvSnapshot {
    let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    EnvSnapshot::from_vars(vars)
}

fn start_provider() -> Provider {
    let spec = ProviderSpec {
        id: "example".into(),
        name: "Example".into(),
        launch: LaunchSpec {
            program: PathBuf::from(PLUGIN_BIN),
            args: vec![PLUGIN_ARG.into()],
            cwd: None,
            env: plugin_env(),
        },
        timeout: Duration::from_secs(30),
    };
    Provider::start(spec).expect("the example plugin starts and is admitted")
}

/// The example plugin spawned directly, handshake done by hand.
struct RawPlugin {
    child: Child,
    tx: Option<ChildStdin>,
    rx: BufReader<ChildStdout>,
    line: String,
}

impl RawPlugin {
    fn start() -> RawPlugin {
        let mut child = Command::new(PLUGIN_BIN)
            .arg(PLUGIN_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the example plugin");
        let tx = child.stdin.take().expect("piped stdin");
        let rx = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut raw = RawPlugin {
            child,
            tx: Some(tx),
            rx,
            line: String::with_capacity(256),
        };
        // Validated, untimed: a broken plugin must not produce a fast "floor".
        raw.send(INITIALIZE);
        assert!(
            raw.line
                .contains("\"protocolVersion\":\"webcodex-plugin-v1\""),
            "bad initialize reply: {:?}",
            raw.line
        );
        raw.send(TOOLS_LIST);
        assert!(
            raw.line.contains("\"name\":\"echo\""),
            "bad tools/list reply: {:?}",
            raw.line
        );
        raw.send(CALL);
        assert!(
            raw.line
                .contains("\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]")
                && !raw.line.contains("\"isError\":true"),
            "bad tools/call reply: {:?}",
            raw.line
        );
        raw
    }

    /// One ping-pong: write the line, flush, read one reply line.
    fn send(&mut self, frame: &[u8]) {
        self.line.clear();
        let tx = self.tx.as_mut().expect("stdin open");
        tx.write_all(frame).expect("write");
        tx.flush().expect("flush");
        let n = self.rx.read_line(&mut self.line).expect("read");
        assert!(n != 0, "the plugin closed stdout");
    }
}

impl Drop for RawPlugin {
    fn drop(&mut self) {
        // EOF on stdin ends the plugin's serve loop.
        drop(self.tx.take());
        let _ = self.child.wait();
    }
}

fn round_trip(c: &mut Criterion) {
    let mut group = c.benchmark_group("round_trip");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
        .throughput(Throughput::Elements(1));

    let provider = start_provider();
    let arguments = json!({"text": "hello"});
    let first = provider.call("echo", &arguments).expect("echo succeeds");
    assert_eq!(first.texts()[0], "hello");
    group.bench_function("provider_call_echo", |b| {
        b.iter(|| provider.call("echo", &arguments).expect("echo succeeds"))
    });
    drop(provider);

    let mut raw = RawPlugin::start();
    group.bench_function("raw_pipe_floor", |b| b.iter(|| raw.send(CALL)));
    group.bench_function("raw_pipe_floor_decode", |b| {
        b.iter(|| {
            raw.send(CALL);
            serde_json::from_str::<serde_json::Value>(&raw.line).expect("a JSON reply")
        })
    });
    drop(raw);

    group.finish();
}

criterion_group!(benches, round_trip);
criterion_main!(benches);
