//! What a front gateway adds to a call: `plugin_tool` `call` round trips over HTTP through a
//! front (`serve --runners`) to a runner (`serve --config`), against the same calls made to the
//! runner directly; then calls per second with 3 runners × 8 providers under concurrent load,
//! through the front and directly.
//!
//! Every runner hosts 8 providers of the binary's own example plugin (`echo`). The client opens a
//! fresh loopback connection per request in both paths (as the CLI's client and the front's link
//! do), so the difference between the two is the hop: the front's parsing, scope check, binding
//! lookup and its own POST to the runner.
//!
//! - latency: W warm-up and N timed sequential calls per path, alternating direct and front call
//!   by call, over R rounds; p50/p99 of each and the front/direct ratio per round;
//! - throughput: for S seconds, one client thread per (runner, provider) pair (24 threads, so no
//!   provider is ever busy), each calling its own provider in a loop; calls/s through the front,
//!   then directly.
//!
//! Run:
//!
//!     cargo build --release --bin webcodex-plugin --example front_overhead
//!     nice -n 19 target/release/examples/front_overhead [-n 2000] [--warmup 200] [--rounds 3]
//!         [--seconds 10] [--binary target/release/webcodex-plugin]
//!
//! The machine this runs on is shared and noisy: compare within a round, never absolute
//! microseconds across runs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const RUNNERS: usize = 3;
const PROVIDERS: usize = 8;
const TOKEN: &str = "bench-token-all-scopes-0123456789";

struct Options {
    binary: PathBuf,
    n: usize,
    warmup: usize,
    rounds: usize,
    seconds: u64,
}

fn options() -> Options {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("examples/ is inside a profile directory");
    let mut o = Options {
        binary: profile_dir.join("webcodex-plugin"),
        n: 2_000,
        warmup: 200,
        rounds: 3,
        seconds: 10,
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
            "--seconds" => o.seconds = value().parse().unwrap_or_else(|_| usage("--seconds S")),
            "--binary" => o.binary = PathBuf::from(value()),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    o
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "front_overhead: {problem}\nusage: front_overhead [-n N] [--warmup W] [--rounds R] \
         [--seconds S] [--binary PATH]"
    );
    std::process::exit(2)
}

/// A `serve` process, killed on drop.
struct Serve {
    child: Child,
    addr: SocketAddr,
}

impl Serve {
    fn start(binary: &Path, args: &[&str]) -> Serve {
        let mut child = Command::new(binary)
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .env_remove("RUST_LOG")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("read the address");
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .expect("an address");
        Serve { child, addr }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One POST on a fresh connection; the response body.
fn post(addr: SocketAddr, params: &Value) -> Value {
    let body = json!({"tool": "plugin_tool", "params": params}).to_string();
    let raw = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).ok();
    stream.write_all(raw.as_bytes()).expect("write");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read");
    let text = String::from_utf8_lossy(&response);
    let (_, body) = text.split_once("\r\n\r\n").expect("a response");
    serde_json::from_str(body).expect("a JSON body")
}

fn describe(addr: SocketAddr, runner: &str, plugin: &str) -> String {
    let answer = post(
        addr,
        &json!({"action": "describe", "runner": runner, "plugin": plugin, "tool": "echo"}),
    );
    answer["output"]["binding"]
        .as_str()
        .unwrap_or_else(|| panic!("describe failed: {answer}"))
        .to_string()
}

fn call(addr: SocketAddr, binding: &str) {
    let answer = post(
        addr,
        &json!({"action": "call", "binding": binding, "arguments": {"text": "hello"}}),
    );
    assert_eq!(answer["success"], json!(true), "{answer}");
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Calls/s of one thread per (address, binding) for `seconds`.
fn throughput(targets: &[(SocketAddr, String)], seconds: u64) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = targets
        .iter()
        .cloned()
        .map(|(addr, binding)| {
            let (stop, count) = (stop.clone(), count.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    call(addr, &binding);
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let done = count.load(Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    for t in threads {
        t.join().expect("a client thread");
    }
    done as f64 / elapsed
}

fn main() {
    let o = options();
    let dir = std::env::temp_dir().join(format!("wc-front-overhead-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let binary = serde_json::to_string(&o.binary.display().to_string()).unwrap();
    let mut config = String::from("[plugins]\n");
    for p in 0..PROVIDERS {
        config.push_str(&format!(
            "[[plugins.providers]]\nid = \"p{p}\"\nname = \"P{p}\"\ncommand = {binary}\n\
             args = [\"example-plugin\"]\n"
        ));
    }
    std::fs::write(dir.join("runner.toml"), config).unwrap();
    std::fs::write(
        dir.join("tokens.toml"),
        format!(
            "[[tokens]]\nname = \"bench\"\ntoken = \"{TOKEN}\"\n\
             scopes = [\"plugin:inspect\", \"plugin:invoke\"]\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("runner.tok"), TOKEN).unwrap();
    let s = |p: &Path| p.display().to_string();
    let (config, tokens) = (s(&dir.join("runner.toml")), s(&dir.join("tokens.toml")));
    let runners: Vec<Serve> = (0..RUNNERS)
        .map(|_| Serve::start(&o.binary, &["--config", &config, "--tokens", &tokens]))
        .collect();
    let mut file = String::new();
    for (i, r) in runners.iter().enumerate() {
        file.push_str(&format!(
            "[[runners]]\nid = \"r{i}\"\nname = \"R{i}\"\nurl = \"http://{}\"\n\
             token_file = \"runner.tok\"\n",
            r.addr
        ));
    }
    std::fs::write(dir.join("runners.toml"), file).unwrap();
    let front = Serve::start(
        &o.binary,
        &[
            "--runners",
            &s(&dir.join("runners.toml")),
            "--tokens",
            &tokens,
        ],
    );

    println!(
        "latency: sequential echo calls, fresh connection each, {} timed per path per round",
        o.n
    );
    let direct_binding = describe(runners[0].addr, "local", "p0");
    let front_binding = describe(front.addr, "r0", "p0");
    let mut ratios = Vec::new();
    for round in 1..=o.rounds {
        for _ in 0..o.warmup {
            call(runners[0].addr, &direct_binding);
            call(front.addr, &front_binding);
        }
        let (mut direct, mut via) = (Vec::with_capacity(o.n), Vec::with_capacity(o.n));
        for _ in 0..o.n {
            let t = Instant::now();
            call(runners[0].addr, &direct_binding);
            direct.push(t.elapsed().as_secs_f64() * 1e6);
            let t = Instant::now();
            call(front.addr, &front_binding);
            via.push(t.elapsed().as_secs_f64() * 1e6);
        }
        direct.sort_by(f64::total_cmp);
        via.sort_by(f64::total_cmp);
        let ratio = percentile(&via, 50.0) / percentile(&direct, 50.0);
        ratios.push(ratio);
        println!(
            "round {round}: direct p50 {:.0} µs p99 {:.0} µs | via front p50 {:.0} µs p99 {:.0} µs \
             | hop +{:.0} µs at p50, ratio {ratio:.2}",
            percentile(&direct, 50.0),
            percentile(&direct, 99.0),
            percentile(&via, 50.0),
            percentile(&via, 99.0),
            percentile(&via, 50.0) - percentile(&direct, 50.0),
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "median p50 ratio front/direct: {:.2}",
        ratios[ratios.len() / 2]
    );

    let mut via_front = Vec::new();
    let mut direct = Vec::new();
    for (i, r) in runners.iter().enumerate() {
        for p in 0..PROVIDERS {
            let plugin = format!("p{p}");
            via_front.push((front.addr, describe(front.addr, &format!("r{i}"), &plugin)));
            direct.push((r.addr, describe(r.addr, "local", &plugin)));
        }
    }
    println!(
        "throughput: {} client threads (one per runner × provider), {} s each",
        via_front.len(),
        o.seconds
    );
    println!(
        "via front: {:.0} calls/s",
        throughput(&via_front, o.seconds)
    );
    println!("direct:    {:.0} calls/s", throughput(&direct, o.seconds));
    drop(front);
    drop(runners);
    let _ = std::fs::remove_dir_all(&dir);
}
