//! Test fixture: a webcodex-plugin-v1 plugin with misbehaviour modes.
//!
//! Its grandchildren are left running on purpose: the host must kill them.
//!
//! `fixture_plugin [MODE]` where MODE changes the handshake:
//! `normal` (default), `stray-stdout` (a line before the handshake), `silent-init` (never answers
//! initialize), `bad-version`, `bad-tools` (an unsupported schema keyword), `exit-at-start`,
//! `stop-reading` (after the handshake it never reads stdin again), `noisy` (a background thread
//! writes `FIXTURE_NOISE_BYTES` bytes of stderr lines, default 100 MB, spread over
//! `FIXTURE_NOISE_SECONDS`, default 0 = as fast as the host drains, while it serves calls),
//! `stuck-init` (reads initialize, then never reads stdin again nor answers: it cannot notice
//! that the host is gone), `exit-after-handshake` (answers tools/list, starts a grandchild in
//! its group, then exits by itself 100 ms later, with no request in flight), `slow-read` (after
//! the handshake it waits `FIXTURE_PAUSE_MS`, default 50, before it reads each request, so a
//! frame larger than the pipe buffer cannot be written at once).
//! Modes that shape how every tools/call response leaves (for the coordinator's wait, after a
//! normal handshake; the pause is `FIXTURE_PAUSE_MS`, default 50): `split` (each response in two
//! writes, split mid-line, with the pause between them), `half-line` (half of the response line,
//! then it hangs), `notify-first` (a notification line, the pause, then the response),
//! `unsolicited-later` (the response, the pause, then `FIXTURE_UNASKED_LINES` notifications,
//! default 1; it records `unsolicited 0` in `FIXTURE_PIDS` once they are written), `exit-later` (the pause, then it exits without
//! answering; with `FIXTURE_KEEP_STDOUT=1` it first starts a grandchild that inherits stdout).
//! `chaos SEED` (for the soak: at start and on every tools/call it draws, from SEED mixed with
//! its PID, whether to behave or to crash, hang, write garbage, flood stderr, exit leaving a
//! grandchild, answer a wrong id, send an unsolicited message… — see `Chaos::call`;
//! grandchildren inherit the plugin's environment, so a soak can mark them with a variable).
//!
//! Tools exercise call-time faults (see `TOOLS`). When `FIXTURE_LOG` is set, every line read from
//! stdin is appended to that file, so tests can prove what reached the plugin. When
//! `FIXTURE_STDERR` is set, its value is written to stderr at start and before each tools/call,
//! so tests can prove stderr never leaks. When `FIXTURE_PIDS` is set, the plugin appends
//! `self PID` to that file at start and `grandchild PID` for every grandchild it spawns, so tests
//! can prove those processes are gone. Arguments after MODE are ignored. Mode `sleep-forever`
//! only sleeps: it is the grandchild on Windows, which has no `sleep` program.

#![allow(clippy::zombie_processes)]

use std::io::{self, BufRead, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const TOOLS: &str = r#"[
 {"name":"echo","title":"Echo","description":"Returns the text.",
  "inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false},
  "outputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},
  "annotations":{"readOnlyHint":true}},
 {"name":"add","inputSchema":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]},
  "outputSchema":{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}},
 {"name":"env","inputSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}},
 {"name":"cwd","inputSchema":{"type":"object"}},
 {"name":"sleep","inputSchema":{"type":"object","properties":{"ms":{"type":"integer"}},"required":["ms"]}},
 {"name":"stderr","inputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}},"required":["bytes"]}},
 {"name":"grandchild","inputSchema":{"type":"object"}},
 {"name":"big_args","inputSchema":{"type":"object"}},
 {"name":"crash","inputSchema":{"type":"object"}},
 {"name":"hang","inputSchema":{"type":"object"}},
 {"name":"garbage","inputSchema":{"type":"object"}},
 {"name":"huge_line","inputSchema":{"type":"object"}},
 {"name":"wrong_id","inputSchema":{"type":"object","properties":{"delta":{"type":"integer"}},"required":["delta"]}},
 {"name":"rpc_error","inputSchema":{"type":"object"}},
 {"name":"bad_error","inputSchema":{"type":"object"}},
 {"name":"invalid_result","inputSchema":{"type":"object"}},
 {"name":"bad_output","inputSchema":{"type":"object"},
  "outputSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}},
 {"name":"then_unsolicited","inputSchema":{"type":"object"}},
 {"name":"exit_keep_stdout","inputSchema":{"type":"object"}},
 {"name":"is_error","inputSchema":{"type":"object"}}
]"#;

/// The command of a long-lived grandchild: `sleep 1000` on Unix; on Windows, which has no
/// `sleep` program, this fixture itself in mode `sleep-forever`.
fn sleeper() -> Command {
    if cfg!(windows) {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command.arg("sleep-forever");
        command
    } else {
        let mut command = Command::new("sleep");
        command.arg("1000");
        command
    }
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "normal".into());
    if mode == "sleep-forever" {
        // A grandchild (see `sleeper`): not a plugin, records nothing.
        std::thread::sleep(std::time::Duration::from_secs(1000));
        return;
    }
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let log_path = std::env::var_os("FIXTURE_LOG");
    let stderr_text = std::env::var("FIXTURE_STDERR").ok();
    if let Some(text) = &stderr_text {
        eprintln!("{text}");
    }
    record_pid("self", std::process::id());
    let mut chaos = (mode == "chaos").then(|| Chaos::new(std::env::args().nth(2)));
    if let Some(chaos) = &mut chaos {
        chaos.at_start(&mut out);
    }

    match mode.as_str() {
        "stray-stdout" => {
            writeln!(out, "starting up...").unwrap();
            out.flush().unwrap();
        }
        "exit-at-start" => std::process::exit(7),
        "noisy" => {
            let env_number = |name: &str, default: u64| {
                std::env::var(name)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(default)
            };
            let total = env_number("FIXTURE_NOISE_BYTES", 100_000_000) as usize;
            let seconds = env_number("FIXTURE_NOISE_SECONDS", 0);
            std::thread::spawn(move || {
                let line =
                    "noise from a busy plugin: 0123456789abcdefghijklmnopqrstuvwxyz\n".repeat(4096);
                let chunks = total.div_ceil(line.len()).max(1) as u32;
                let pause = std::time::Duration::from_secs(seconds) / chunks;
                let mut err = io::stderr().lock();
                let mut left = total;
                while left > 0 {
                    let k = left.min(line.len());
                    if err.write_all(&line.as_bytes()[..k]).is_err() {
                        return;
                    }
                    left -= k;
                    std::thread::sleep(pause);
                }
            });
        }
        _ => {}
    }

    let mut line = String::new();
    let mut requests = 0u64;
    loop {
        line.clear();
        requests += 1;
        if mode == "slow-read" && requests > 2 {
            std::thread::sleep(pause_from_env());
        }
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if let Some(path) = &log_path {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap();
            f.write_all(line.as_bytes()).unwrap();
        }
        let request: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(_) => continue,
        };
        let id = request["id"].as_u64().unwrap_or(0);
        let method = request["method"].as_str().unwrap_or("");
        let reply = match method {
            "initialize" => match mode.as_str() {
                "silent-init" => continue,
                "stuck-init" => loop {
                    std::thread::park();
                },
                "bad-version" => json!({"protocolVersion": "2024-11-05"}),
                _ => {
                    json!({"protocolVersion": "webcodex-plugin-v1", "serverInfo": {"name": "fixture"}})
                }
            },
            "tools/list" => {
                let mut tools: Value = serde_json::from_str(TOOLS).unwrap();
                if mode == "bad-tools" {
                    tools[1]["inputSchema"]["properties"]["a"]["minimum"] = json!(0);
                }
                let reply = json!({"tools": tools});
                if mode == "exit-after-handshake" {
                    send(&mut out, id, reply);
                    let child = sleeper()
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap();
                    record_pid("grandchild", child.id());
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    std::process::exit(4);
                }
                if mode == "stop-reading" {
                    send(&mut out, id, reply);
                    loop {
                        std::thread::park();
                    }
                }
                reply
            }
            "tools/call" => {
                if let Some(text) = &stderr_text {
                    eprintln!("{text}");
                }
                let mut name = request["params"]["name"].as_str().unwrap_or("").to_string();
                let mut args = request["params"]["arguments"].clone();
                if let Some(chaos) = &mut chaos {
                    (name, args) = chaos.call(name, args);
                }
                match call(&name, &args, id, &mut out) {
                    Some(reply) => reply,
                    None => continue,
                }
            }
            _ => {
                write_line(
                    &mut out,
                    &json!({"jsonrpc":"2.0","id":id,"error":{"code":-32601,"message":"method not found"}}),
                );
                continue;
            }
        };
        if method == "tools/call" && answer_by_mode(&mode, &mut out, id, &reply) {
            continue;
        }
        send(&mut out, id, reply);
    }
}

fn text(s: &str) -> Value {
    json!({"content":[{"type":"text","text":s}]})
}

/// Answers one tools/call; `None` when the tool already wrote its own reply (or none).
fn call(name: &str, args: &Value, id: u64, out: &mut impl Write) -> Option<Value> {
    Some(match name {
        "echo" => {
            let t = args["text"].as_str().unwrap_or("");
            json!({"content":[{"type":"text","text":t}],"structuredContent":{"text":t}})
        }
        "add" => {
            let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
            json!({"content":[{"type":"text","text":sum.to_string()}],"structuredContent":{"sum":sum}})
        }
        "env" => {
            let v = std::env::var(args["name"].as_str().unwrap_or("")).ok();
            json!({"content":[{"type":"text","text":v.clone().unwrap_or_default()}],"structuredContent":{"value":v}})
        }
        "cwd" => text(&std::env::current_dir().unwrap().display().to_string()),
        "sleep" => {
            let ms = args["ms"].as_u64().unwrap_or(0);
            std::thread::sleep(std::time::Duration::from_millis(ms));
            text("slept")
        }
        "stderr" => {
            // Writes `bytes` bytes of lines. `"newlines": false` makes it one endless line;
            // `"line_bytes": N` makes every line N bytes of `e` (plus its newline).
            let n = args["bytes"].as_u64().unwrap_or(0) as usize;
            let line = if args["newlines"] == json!(false) {
                "0123456789abcdefghijklmnopqrstuvwxyz noise from the plugin on stderr ".to_string()
            } else if let Some(len) = args["line_bytes"].as_u64() {
                format!("{}\n", "e".repeat(len as usize))
            } else {
                "0123456789abcdefghijklmnopqrstuvwxyz noise from the plugin on stderr\n".to_string()
            };
            let chunk = line.repeat((64 * 1024 / line.len()).max(1));
            let mut err = io::stderr().lock();
            let mut left = n;
            while left > 0 {
                let k = left.min(chunk.len());
                err.write_all(&chunk.as_bytes()[..k]).unwrap();
                left -= k;
            }
            err.flush().unwrap();
            text("wrote stderr")
        }
        "grandchild" => {
            // Deliberately never waited for: it must outlive this call (and the plugin).
            let child = sleeper()
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            record_pid("grandchild", child.id());
            text(&child.id().to_string())
        }
        "big_args" => text("ok"),
        "crash" => std::process::exit(3),
        "hang" => loop {
            std::thread::park();
        },
        "garbage" => {
            out.write_all(b"this is not json\n").unwrap();
            out.flush().unwrap();
            return None;
        }
        "huge_line" => {
            let mut s = vec![b' '; (1 << 20) + 10];
            s.push(b'\n');
            out.write_all(&s).unwrap();
            out.flush().unwrap();
            return None;
        }
        "wrong_id" => {
            // `"id": VALUE` answers with that literal id instead of `id + delta`.
            let delta = args["delta"].as_i64().unwrap_or(1);
            let rid = match args.get("id") {
                Some(literal) => literal.clone(),
                None => json!(id as i64 + delta),
            };
            write_line(out, &json!({"jsonrpc":"2.0","id":rid,"result":text("x")}));
            return None;
        }
        "rpc_error" => {
            write_line(
                out,
                &json!({"jsonrpc":"2.0","id":id,"error":{"code":-32000,"message":"tool failed on purpose","data":{"secret":"x"}}}),
            );
            return None;
        }
        "bad_error" => {
            write_line(
                out,
                &json!({"jsonrpc":"2.0","id":id,"error":{"code":"nope"}}),
            );
            return None;
        }
        "invalid_result" => json!({"content":[{"type":"image","data":"x"}]}),
        "bad_output" => json!({"content":[],"structuredContent":{"n":"not a number"}}),
        "then_unsolicited" => {
            // The response and the unsolicited notification leave in one write(2).
            let mut both =
                serde_json::to_vec(&json!({"jsonrpc":"2.0","id":id,"result":text("first")}))
                    .unwrap();
            both.push(b'\n');
            serde_json::to_writer(
                &mut both,
                &json!({"jsonrpc":"2.0","method":"notifications/progress","params":{}}),
            )
            .unwrap();
            both.push(b'\n');
            out.write_all(&both).unwrap();
            out.flush().unwrap();
            return None;
        }
        "exit_keep_stdout" => {
            // A grandchild inherits stdout and outlives the plugin.
            let child = sleeper().stdin(Stdio::null()).spawn().unwrap();
            record_pid("grandchild", child.id());
            std::process::exit(0);
        }
        "chaos_orphan" => {
            // Exits at once, leaving a grandchild with stdout closed (only the group kill of
            // the host can reach it).
            let child = sleeper()
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            record_pid("grandchild", child.id());
            std::process::exit(0);
        }
        "is_error" => json!({"content":[{"type":"text","text":"bad input"}],"isError":true}),
        _ => {
            write_line(
                out,
                &json!({"jsonrpc":"2.0","id":id,"error":{"code":-32602,"message":"unknown tool"}}),
            );
            return None;
        }
    })
}

/// The random misbehaviour of mode `chaos` (xorshift64*, seeded from SEED and the PID).
struct Chaos {
    state: u64,
}

impl Chaos {
    fn new(seed: Option<String>) -> Chaos {
        let seed: u64 = seed.and_then(|s| s.parse().ok()).unwrap_or(1);
        let state =
            (seed ^ (u64::from(std::process::id()) << 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Chaos { state: state | 1 }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Sometimes fails the handshake, or is slow to start.
    fn at_start(&mut self, out: &mut impl Write) {
        match self.below(100) {
            0..=1 => std::process::exit(9),
            2..=3 => {
                writeln!(out, "chaos: a stray line before the handshake").unwrap();
                out.flush().unwrap();
            }
            4..=13 => std::thread::sleep(std::time::Duration::from_millis(self.below(300))),
            _ => {}
        }
    }

    /// The tool that actually runs for a call of `name`: usually `name` itself.
    fn call(&mut self, name: String, args: Value) -> (String, Value) {
        let pick = |tool: &str, args: Value| (tool.to_string(), args);
        match self.below(100) {
            0..=3 => pick("crash", json!({})),
            4..=6 => pick("hang", json!({})),
            7..=10 => pick("garbage", json!({})),
            11..=15 => {
                let bytes = 64 * 1024 + self.below(2 * 1024 * 1024);
                // Floods stderr, then answers the call as asked.
                let _ = call("stderr", &json!({ "bytes": bytes }), 0, &mut io::sink());
                (name, args)
            }
            16..=18 => pick("chaos_orphan", json!({})),
            19..=20 => pick("exit_keep_stdout", json!({})),
            21..=23 => pick("wrong_id", json!({"delta": 1})),
            24..=25 => pick("then_unsolicited", json!({})),
            26..=28 => pick("rpc_error", json!({})),
            29..=30 => pick("invalid_result", json!({})),
            31..=38 => {
                let ms = self.below(400);
                std::thread::sleep(std::time::Duration::from_millis(ms));
                (name, args)
            }
            _ => (name, args),
        }
    }
}

/// `FIXTURE_PAUSE_MS` (default 50 ms).
fn pause_from_env() -> std::time::Duration {
    std::time::Duration::from_millis(
        std::env::var("FIXTURE_PAUSE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(50),
    )
}

/// Answers a tools/call the way the response-shaping modes ask (see the module docs); false when
/// `mode` is none of them and the caller answers normally.
fn answer_by_mode(mode: &str, out: &mut impl Write, id: u64, result: &Value) -> bool {
    let pause = pause_from_env();
    let mut line = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":id,"result":result})).unwrap();
    line.push(b'\n');
    let notification = json!({"jsonrpc":"2.0","method":"notifications/progress","params":{}});
    let half = line.len() / 2;
    match mode {
        "split" => {
            out.write_all(&line[..half]).unwrap();
            out.flush().unwrap();
            std::thread::sleep(pause);
            out.write_all(&line[half..]).unwrap();
            out.flush().unwrap();
        }
        "half-line" => {
            out.write_all(&line[..half]).unwrap();
            out.flush().unwrap();
            loop {
                std::thread::park();
            }
        }
        "notify-first" => {
            write_line(out, &notification);
            std::thread::sleep(pause);
            out.write_all(&line).unwrap();
            out.flush().unwrap();
        }
        "unsolicited-later" => {
            out.write_all(&line).unwrap();
            out.flush().unwrap();
            std::thread::sleep(pause);
            let count: usize = std::env::var("FIXTURE_UNASKED_LINES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1);
            for _ in 0..count {
                write_line(out, &notification);
            }
            record_pid("unsolicited", 0);
        }
        "exit-later" => {
            std::thread::sleep(pause);
            if std::env::var_os("FIXTURE_KEEP_STDOUT").is_some_and(|v| v == "1") {
                let child = Command::new("sleep")
                    .arg("1000")
                    .stdin(Stdio::null())
                    .spawn()
                    .unwrap();
                record_pid("grandchild", child.id());
            }
            std::process::exit(4);
        }
        _ => return false,
    }
    true
}

fn send(out: &mut impl Write, id: u64, result: Value) {
    write_line(out, &json!({"jsonrpc":"2.0","id":id,"result":result}));
}

fn write_line(out: &mut impl Write, v: &Value) {
    let mut s = serde_json::to_vec(v).unwrap();
    s.push(b'\n');
    out.write_all(&s).unwrap();
    out.flush().unwrap();
}

/// Appends `KIND PID` to the file named by `FIXTURE_PIDS`, if set.
///
/// The line goes out in one `write` on an `O_APPEND` file, so plugins recording at the same time
/// never interleave (a `writeln!` on a `File` is several writes).
fn record_pid(kind: &str, pid: u32) {
    if let Some(path) = std::env::var_os("FIXTURE_PIDS") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(format!("{kind} {pid}\n").as_bytes()).unwrap();
    }
}
