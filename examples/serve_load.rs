//! A keep-alive HTTP load client for `serve` and for a byte relay beside it: one connection per
//! thread, sequential POSTs, every answer checked, one JSON result line (p50, p99, calls/s).
//!
//!     serve_load --url http://127.0.0.1:PORT/mcp [--token T] [--kind KIND] [--plugin echo1]
//!         [--conc C] [--n N] [--warmup W] [--name NAME]
//!
//! KIND is what each request is:
//! - `relay-call`: an MCP `tools/call` of the tool `echo` (for a relay in front of a plain MCP
//!   child, after the `initialize` handshake);
//! - `mcp-call`, `mcp-list`, `mcp-describe`: `plugin_tool` over `POST /mcp` (a describe first
//!   gives the call its binding);
//! - `api-call`, `api-list`, `api-describe`: the same over `POST /api/tools/call`.
//!
//! With C threads, thread t calls provider `echo{t+1}` when `--plugin` ends in `1` (calls are
//! never queued on one provider). Used by `scripts/perf-serve.sh`; see docs/PERFORMANCE.md.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use serde_json::Value;

fn die(message: &str) -> ! {
    eprintln!("serve_load: {message}");
    std::process::exit(2)
}

struct Conn {
    host: String,
    path: String,
    token: Option<String>,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    line: String,
}

impl Conn {
    fn open(url: &str, token: Option<String>) -> Conn {
        let rest = url
            .strip_prefix("http://")
            .unwrap_or_else(|| die("the url must be http://"));
        let (host, path) = match rest.find('/') {
            Some(i) => (rest[..i].to_string(), rest[i..].to_string()),
            None => (rest.to_string(), "/".to_string()),
        };
        let stream = TcpStream::connect(&host).unwrap_or_else(|e| die(&format!("connect: {e}")));
        stream.set_nodelay(true).ok();
        let writer = stream.try_clone().unwrap();
        Conn {
            host,
            path,
            token,
            reader: BufReader::new(stream),
            writer,
            line: String::new(),
        }
    }

    fn post(&mut self, body: &str) -> (u16, String) {
        let mut request = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: \
             application/json, text/event-stream\r\nContent-Length: {}\r\nMCP-Protocol-Version: \
             2025-06-18\r\n",
            self.path,
            self.host,
            body.len()
        );
        if let Some(token) = &self.token {
            request.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        self.writer
            .write_all(request.as_bytes())
            .unwrap_or_else(|e| die(&format!("write: {e}")));
        self.line.clear();
        self.reader
            .read_line(&mut self.line)
            .unwrap_or_else(|e| die(&format!("read: {e}")));
        let status: u16 = self
            .line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| die(&format!("bad status line {:?}", self.line)));
        let mut length = 0;
        loop {
            self.line.clear();
            self.reader.read_line(&mut self.line).unwrap();
            let line = self.line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut out = vec![0; length];
        self.reader.read_exact(&mut out).unwrap();
        (status, String::from_utf8_lossy(&out).into_owned())
    }
}

fn binding_of(answer: &str) -> String {
    let v: Value = serde_json::from_str(answer).unwrap_or_else(|e| die(&format!("{e}: {answer}")));
    let found = v["result"]["structuredContent"]["binding"]
        .as_str()
        .or(v["output"]["binding"].as_str());
    found
        .map(str::to_string)
        .unwrap_or_else(|| die(&format!("no binding in {answer}")))
}

fn mcp(params: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":%ID%,"method":"tools/call","params":{{"name":"plugin_tool","arguments":{params}}}}}"#
    )
}

/// The request id's place in a body. Not `ID`, which a binding (base64url) may contain.
const ID: &str = "%ID%";

fn api(params: &str) -> String {
    format!(r#"{{"id":%ID%,"tool":"plugin_tool","params":{params}}}"#)
}

/// The request body (with [`ID`] for the request id) and a string its answer must contain.
fn request_for(conn: &mut Conn, kind: &str, plugin: &str) -> (String, &'static str) {
    let describe =
        format!(r#"{{"action":"describe","runner":"local","plugin":"{plugin}","tool":"echo"}}"#);
    let call = |binding: String| {
        format!(r#"{{"action":"call","binding":"{binding}","arguments":{{"text":"hello"}}}}"#)
    };
    match kind {
        "relay-call" => {
            let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"serve_load","version":"0"}}}"#;
            conn.post(init);
            conn.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
            let body = r#"{"jsonrpc":"2.0","id":%ID%,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;
            (body.to_string(), "hello")
        }
        "mcp-list" => (mcp(r#"{"action":"list","runner":"local"}"#), "echo"),
        "mcp-describe" => (mcp(&describe), "binding"),
        "mcp-call" => {
            let (_, answer) = conn.post(&mcp(&describe).replace(ID, "1"));
            (mcp(&call(binding_of(&answer))), "hello")
        }
        "api-list" => (api(r#"{"action":"list","runner":"local"}"#), "echo"),
        "api-describe" => (api(&describe), "binding"),
        "api-call" => {
            let (_, answer) = conn.post(&api(&describe).replace(ID, "1"));
            (api(&call(binding_of(&answer))), "hello")
        }
        other => die(&format!("unknown kind {other}")),
    }
}

fn main() {
    let mut flags = std::collections::HashMap::new();
    let mut args = std::env::args().skip(1);
    while let Some(k) = args.next() {
        let v = args.next().unwrap_or_else(|| die("a flag without a value"));
        flags.insert(k.trim_start_matches("--").to_string(), v);
    }
    let get = |k: &str, d: &str| flags.get(k).cloned().unwrap_or_else(|| d.to_string());
    let url = get("url", "");
    let token = flags.get("token").cloned();
    let kind = get("kind", "mcp-call");
    let plugin = get("plugin", "echo1");
    let conc: usize = get("conc", "1").parse().unwrap();
    let n: usize = get("n", "5000").parse().unwrap();
    let warmup: usize = get("warmup", "500").parse().unwrap();
    let name = get("name", &format!("{kind}-c{conc}"));
    let barrier = Arc::new(Barrier::new(conc + 1));
    let threads: Vec<_> = (0..conc)
        .map(|t| {
            let (url, token, kind, barrier) =
                (url.clone(), token.clone(), kind.clone(), barrier.clone());
            let plugin = match plugin.strip_suffix('1') {
                Some(stem) if conc > 1 => format!("{stem}{}", t + 1),
                _ => plugin.clone(),
            };
            std::thread::spawn(move || {
                let mut conn = Conn::open(&url, token);
                let (body, expect) = request_for(&mut conn, &kind, &plugin);
                let one = |conn: &mut Conn, i: usize| {
                    let (status, answer) = conn.post(&body.replace(ID, &(i + 2).to_string()));
                    let failed =
                        answer.contains("\"isError\":true") || answer.contains("\"success\":false");
                    if status != 200 || !answer.contains(expect) || failed {
                        die(&format!("thread {t} request {i}: {status} {answer}"));
                    }
                };
                for i in 0..warmup / conc {
                    one(&mut conn, i);
                }
                barrier.wait();
                let mut latencies = Vec::with_capacity(n / conc);
                for i in 0..n / conc {
                    let started = Instant::now();
                    one(&mut conn, i);
                    latencies.push(started.elapsed().as_nanos() as u64);
                }
                latencies
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    let mut all: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap_or_else(|_| die("a thread failed")))
        .collect();
    let wall = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let rank = |p: f64| all[((p * all.len() as f64).ceil() as usize).clamp(1, all.len()) - 1];
    println!(
        r#"{{"name":"{name}","n":{},"p50_us":{:.1},"p99_us":{:.1},"calls_per_s":{:.0}}}"#,
        all.len(),
        rank(0.50) as f64 / 1000.0,
        rank(0.99) as f64 / 1000.0,
        all.len() as f64 / wall
    );
}
