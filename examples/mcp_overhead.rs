//! What MCP adds to a `plugin_tool` call: sequential `call` round trips through
//! `webcodex-plugin mcp` (stdio, JSON-RPC) against the same through `webcodex-plugin gateway`
//! (stdio, JSON lines), in one run, alternating rounds.
//!
//! Both servers host the binary's own example plugin (`echo`). Each round starts both servers
//! side by side, describes `echo` once on each, then makes W warm-up and N timed calls on each,
//! one at a time (write one line, read one line), alternating between the two servers call by
//! call so that both see the same load, and reports p50 and p99 of each and the MCP/gateway
//! ratio.
//!
//!     cargo build --release --bin webcodex-plugin --example mcp_overhead
//!     nice -n 19 target/release/examples/mcp_overhead [-n 20000] [--warmup 2000] [--rounds 5]
//!         [--binary target/release/webcodex-plugin] [--json]
//!
//! The machine this runs on is shared and noisy: compare the ratio within a round, and the
//! median over rounds, never absolute microseconds across runs.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use serde_json::{json, Value};

struct Options {
    binary: PathBuf,
    n: usize,
    warmup: usize,
    rounds: usize,
    json: bool,
}

fn options() -> Options {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("examples/ is inside a profile directory");
    let mut o = Options {
        binary: profile_dir.join("webcodex-plugin"),
        n: 20_000,
        warmup: 2_000,
        rounds: 5,
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{arg} needs a value")))
        };
        match arg.as_str() {
            "-n" => o.n = value().parse().unwrap_or_else(|_| usage("-n N")),
            "--warmup" => o.warmup = value().parse().unwrap_or_else(|_| usage("--warmup W")),
            "--rounds" => o.rounds = value().parse().unwrap_or_else(|_| usage("--rounds R")),
            "--binary" => o.binary = PathBuf::from(value()),
            "--json" => o.json = true,
            other => usage(&format!("unknown argument {other}")),
        }
    }
    if o.n == 0 || o.rounds == 0 {
        usage("-n and --rounds must be positive");
    }
    o
}

fn usage(message: &str) -> ! {
    eprintln!("mcp_overhead: {message}");
    eprintln!("usage: mcp_overhead [-n N] [--warmup W] [--rounds R] [--binary PATH] [--json]");
    std::process::exit(2)
}

/// One server process spoken to line by line.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Server {
    fn start(binary: &Path, mode: &str, config: &Path) -> Server {
        let mut child = Command::new(binary)
            .arg(mode)
            .arg("--config")
            .arg(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Server {
            child,
            stdin,
            stdout,
            line: String::new(),
        }
    }

    /// Writes one line and reads one line back.
    fn round_trip(&mut self, request: &[u8]) -> &str {
        self.stdin.write_all(request).expect("write request");
        self.stdin.flush().expect("flush");
        self.line.clear();
        let n = self
            .stdout
            .read_line(&mut self.line)
            .expect("read response");
        assert!(n > 0, "the server closed its stdout");
        &self.line
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// A transport's framing of a `plugin_tool` request.
#[derive(Clone, Copy)]
enum Front {
    Gateway,
    Mcp,
}

impl Front {
    fn mode(self) -> &'static str {
        match self {
            Front::Gateway => "gateway",
            Front::Mcp => "mcp",
        }
    }

    fn line(self, id: u64, params: &Value) -> Vec<u8> {
        let message = match self {
            Front::Gateway => json!({"id": id, "tool": "plugin_tool", "params": params}),
            Front::Mcp => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                "params": {"name": "plugin_tool", "arguments": params}}),
        };
        let mut bytes = message.to_string().into_bytes();
        bytes.push(b'\n');
        bytes
    }

    /// The plugin_tool output inside a response line.
    fn output(self, line: &str) -> Value {
        let value: Value = serde_json::from_str(line).expect("a JSON response");
        match self {
            Front::Gateway => value["output"].clone(),
            Front::Mcp => {
                let result = &value["result"];
                result
                    .get("structuredContent")
                    .cloned()
                    .unwrap_or_else(|| result.clone())
            }
        }
    }
}

/// One started server with a binding to `echo`, ready to time calls.
struct Client {
    front: Front,
    server: Server,
    call: Value,
    next_id: u64,
}

impl Client {
    fn start(binary: &Path, config: &Path, front: Front) -> Client {
        let mut server = Server::start(binary, front.mode(), config);
        if let Front::Mcp = front {
            let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"mcp_overhead","version":"0"}}});
            server.round_trip(format!("{init}\n").as_bytes());
            let initialized = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
            server.stdin.write_all(initialized).expect("write");
        }
        let describe =
            json!({"action":"describe","runner":"local","plugin":"example","tool":"echo"});
        let described = front.output(server.round_trip(&front.line(1, &describe)));
        let binding = described["binding"]
            .as_str()
            .unwrap_or_else(|| panic!("describe failed: {described}"))
            .to_string();
        let call = json!({"action":"call","binding":binding,"arguments":{"text":"hello"}});
        let mut client = Client {
            front,
            server,
            call,
            next_id: 2,
        };
        let first = client.front.output(&client.round_trip_line().1);
        assert_eq!(
            first["structuredContent"]["text"]
                .as_str()
                .or(first["text"].as_str()),
            Some("hello"),
            "unexpected call result: {first}"
        );
        client
    }

    /// One timed call round trip (the request line is built before the clock starts).
    fn timed_call(&mut self) -> f64 {
        self.round_trip_line().0
    }

    fn round_trip_line(&mut self) -> (f64, String) {
        let request = self.front.line(self.next_id, &self.call);
        self.next_id += 1;
        let started = Instant::now();
        let response = self.server.round_trip(&request);
        let elapsed = started.elapsed().as_secs_f64() * 1e6;
        (elapsed, response.to_string())
    }
}

/// One round: both servers run at once and calls alternate between them (which one goes
/// first alternates too), so both see the same machine. Returns sorted latencies in µs.
fn round(binary: &Path, config: &Path, o: &Options) -> (Vec<f64>, Vec<f64>) {
    let mut gateway = Client::start(binary, config, Front::Gateway);
    let mut mcp = Client::start(binary, config, Front::Mcp);
    let (mut g, mut m) = (Vec::with_capacity(o.n), Vec::with_capacity(o.n));
    for i in 0..o.warmup + o.n {
        let (a, b) = if i % 2 == 0 {
            let a = gateway.timed_call();
            (a, mcp.timed_call())
        } else {
            let b = mcp.timed_call();
            (gateway.timed_call(), b)
        };
        if i >= o.warmup {
            g.push(a);
            m.push(b);
        }
    }
    gateway.server.stop();
    mcp.server.stop();
    g.sort_by(f64::total_cmp);
    m.sort_by(f64::total_cmp);
    (g, m)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    percentile(values, 0.5)
}

fn main() {
    let o = options();
    let dir = std::env::temp_dir().join(format!("wc-mcp-overhead-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let config = dir.join("runner.toml");
    let command = toml::Value::String(o.binary.display().to_string());
    std::fs::write(
        &config,
        format!(
            "[[plugins.providers]]\nid = \"example\"\nname = \"Example\"\ncommand = {command}\nargs = [\"example-plugin\"]\n"
        ),
    )
    .expect("write config");

    let (mut p50_ratios, mut p99_ratios) = (Vec::new(), Vec::new());
    let mut rounds = Vec::new();
    for round in 1..=o.rounds {
        let (gateway, mcp) = self::round(&o.binary, &config, &o);
        let (g50, g99) = (percentile(&gateway, 0.5), percentile(&gateway, 0.99));
        let (m50, m99) = (percentile(&mcp, 0.5), percentile(&mcp, 0.99));
        p50_ratios.push(m50 / g50);
        p99_ratios.push(m99 / g99);
        let line = json!({"round": round, "gateway_p50_us": g50, "gateway_p99_us": g99,
                          "mcp_p50_us": m50, "mcp_p99_us": m99,
                          "p50_ratio": m50 / g50, "p99_ratio": m99 / g99});
        if !o.json {
            println!(
                "round {round}: gateway p50 {g50:.1} µs p99 {g99:.1} µs | mcp p50 {m50:.1} µs \
                 p99 {m99:.1} µs | ratio p50 {:.3} p99 {:.3}",
                m50 / g50,
                m99 / g99
            );
        }
        rounds.push(line);
    }
    let (p50, p99) = (median(&mut p50_ratios), median(&mut p99_ratios));
    if o.json {
        let summary = json!({"n": o.n, "warmup": o.warmup, "rounds": rounds,
                             "median_p50_ratio": p50, "median_p99_ratio": p99});
        println!("{summary}");
    } else {
        println!(
            "median over {} rounds: p50 ratio {p50:.3}, p99 ratio {p99:.3} (mcp / gateway)",
            o.rounds
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
