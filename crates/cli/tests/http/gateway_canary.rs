//! Containment: a unique canary placed in a provider's args, cwd, environment and stderr (and a
//! command path), and the plugins' process ids, never appear in any plugin_tool output, success
//! or failure: library outputs, check reports (ready and not ready), reload failures, the stdio
//! transport's lines and the HTTP transport's responses (headers and bodies). Every output goes
//! through `common::Canary`, which a new transport reuses.
//!
//! Excluded by design: the fixture's `env` and `cwd` tools, whose *own result* is the value of a
//! variable or the working directory: what a plugin chooses to return is its output.

use crate::common;
use crate::gateway_support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use webcodex_plugin_host::serve_lines;
use webcodex_plugin_host::ProviderConfig;
use webcodex_plugin_host::{Caller, Gateway};
use webcodex_plugin_http::{HttpServer, Tokens};

use common::Canary;
use gateway_support::*;

struct Audit {
    canary: Canary,
    /// Every audited output, checked again for the plugins' pids once they are all known.
    outputs: Vec<(String, String)>,
    seen: usize,
}

impl Audit {
    fn check(&mut self, what: &str, output: &Value) {
        self.check_text(what, &output.to_string());
    }

    fn check_text(&mut self, what: &str, text: &str) {
        self.canary.assert_absent(what, text);
        self.outputs.push((what.to_string(), text.to_string()));
        self.seen += 1;
    }

    /// Runs a request and audits its output, whatever the outcome.
    fn run(&mut self, gw: &Gateway, params: Value) -> Value {
        let out = run(gw, params.clone());
        self.check(&params.to_string(), &out.to_json());
        out.into_json()
    }
}

fn with_canary(id: &str, mode: &str, canary: &str, cwd: &std::path::Path) -> ProviderConfig {
    let mut p = provider(id, &[mode, &format!("--token={canary}"), canary]);
    p.cwd = Some(cwd.to_path_buf());
    p.timeout = Duration::from_secs(2);
    p
}

#[test]
fn the_canary_never_appears_in_any_output() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let canary = format!("wcCANARY{}x{nanos}", std::process::id());
    let cwd = temp_dir(&canary);
    let pid_file = cwd.join("pids");
    let env = [
        ("FIXTURE_STDERR", format!("stderr says {canary}")),
        ("CANARY_SECRET", canary.clone()),
        ("FIXTURE_PIDS", pid_file.display().to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let mut missing = with_canary("missing", "normal", &canary, &cwd);
    missing.command = format!("/nonexistent/{canary}/plugin");
    let mixed = config(
        vec![
            with_canary("good", "normal", &canary, &cwd),
            with_canary("bad", "bad-tools", &canary, &cwd),
            with_canary("stray", "stray-stdout", &canary, &cwd),
            with_canary("exit", "exit-at-start", &canary, &cwd),
            with_canary("version", "bad-version", &canary, &cwd),
            with_canary("silent", "silent-init", &canary, &cwd),
            missing,
        ],
        &env,
    );
    let clean = config(vec![with_canary("good", "normal", &canary, &cwd)], &env);
    let gw = Arc::new(Gateway::new([
        ("local".to_string(), host(mixed)),
        ("clean".to_string(), host(clean)),
    ]));
    let mut audit = Audit {
        canary: Canary::new([
            canary.clone(),
            fixture().display().to_string(),
            "fixture_plugin".to_string(),
        ]),
        outputs: Vec::new(),
        seen: 0,
    };

    // list, in every form.
    audit.run(&gw, json!({"action":"list"}));
    for runner in ["local", "clean"] {
        let out = audit.run(&gw, json!({"action":"list","runner":runner}));
        assert!(out["plugins"].is_array());
    }
    for plugin in [
        "good", "bad", "stray", "exit", "version", "silent", "missing", "nope",
    ] {
        audit.run(
            &gw,
            json!({"action":"list","runner":"local","plugin":plugin}),
        );
    }

    // describe every tool, plus failures.
    let tools = audit.run(
        &gw,
        json!({"action":"list","runner":"clean","plugin":"good"}),
    );
    for tool in tools["tools"].as_array().unwrap() {
        audit.run(
            &gw,
            json!({"action":"describe","runner":"clean","plugin":"good","tool":tool["name"]}),
        );
    }
    for plugin in ["bad", "missing", "nope"] {
        audit.run(
            &gw,
            json!({"action":"describe","runner":"local","plugin":plugin,"tool":"echo"}),
        );
    }

    let describe = |audit: &mut Audit, tool: &str| -> String {
        let out = audit.run(
            &gw,
            json!({"action":"describe","runner":"clean","plugin":"good","tool":tool}),
        );
        out["binding"]
            .as_str()
            .unwrap_or_else(|| panic!("describe {tool}: {out}"))
            .to_string()
    };
    let call = |audit: &mut Audit, binding: &str, arguments: Value| -> Value {
        audit.run(
            &gw,
            json!({"action":"call","binding":binding,"arguments":arguments}),
        )
    };

    // Calls that succeed (the plugin writes the canary to stderr before each).
    let echo = describe(&mut audit, "echo");
    call(&mut audit, &echo, json!({"text":"hello"}));
    let stderr = describe(&mut audit, "stderr");
    let out = call(&mut audit, &stderr, json!({"bytes": 70000}));
    assert_eq!(out["content"][0]["text"], "wrote stderr");
    for (tool, args) in [
        ("is_error", json!({})),
        ("rpc_error", json!({})),
        ("add", json!({"a":"x","b":1})),
        ("sleep", json!({"ms":1})),
    ] {
        let b = describe(&mut audit, tool);
        call(&mut audit, &b, args);
    }
    call(&mut audit, "wc_pbind_AAAAAAAAAAAAAAAAAAAAAA", json!({}));

    // Calls that retire the provider: one per fresh instance, then an old binding.
    for (tool, args) in [
        ("crash", json!({})),
        ("garbage", json!({})),
        ("huge_line", json!({})),
        ("wrong_id", json!({"delta": 1})),
        ("bad_error", json!({})),
        ("invalid_result", json!({})),
        ("bad_output", json!({})),
        ("then_unsolicited", json!({})),
        ("hang", json!({})),
        ("exit_keep_stdout", json!({})),
    ] {
        let reload = audit.run(&gw, json!({"action":"reload","runner":"clean"}));
        assert_eq!(reload["failures"], json!([]));
        let b = describe(&mut audit, tool);
        let echo = describe(&mut audit, "echo");
        let out = call(&mut audit, &b, args);
        if tool == "then_unsolicited" {
            // The stray message fails the next request.
            call(&mut audit, &echo, json!({"text":"x"}));
        }
        assert!(out.get("content").is_some() || out.get("error").is_some());
        call(&mut audit, &echo, json!({"text":"x"}));
        audit.run(&gw, json!({"action":"list","runner":"clean"}));
        audit.run(
            &gw,
            json!({"action":"list","runner":"clean","plugin":"good"}),
        );
    }
    // A binding from before a reload.
    audit.run(&gw, json!({"action":"reload","runner":"clean"}));
    let old = describe(&mut audit, "echo");
    audit.run(&gw, json!({"action":"reload","runner":"clean"}));
    call(&mut audit, &old, json!({"text":"x"}));

    // check: ready and every kind of not ready.
    for plugin in [
        "good", "bad", "stray", "exit", "version", "silent", "missing", "nope",
    ] {
        audit.run(
            &gw,
            json!({"action":"check","runner":"local","plugin":plugin}),
        );
    }
    // reload with failures.
    let out = audit.run(&gw, json!({"action":"reload","runner":"local"}));
    assert!(!out["failures"].as_array().unwrap().is_empty());

    // catalog of the canary project (the caller names the path; the output must not echo it).
    let out = audit.run(
        &gw,
        json!({"action":"catalog","runner":"clean","project":cwd.display().to_string()}),
    );
    assert!(out["totalCount"].as_u64().unwrap() > 0);
    audit.run(
        &gw,
        json!({"action":"catalog","runner":"local","project":cwd.display().to_string()}),
    );

    // The HTTP transport: every response, status line and headers included.
    http_audit(&mut audit, &gw);

    // Positive controls: the canary really is in the plugin's environment, cwd and stderr.
    audit.run(&gw, json!({"action":"reload","runner":"clean"}));
    let env_tool = describe(&mut audit, "env");
    let out = run(
        &gw,
        json!({"action":"call","binding":env_tool,"arguments":{"name":"CANARY_SECRET"}}),
    );
    assert_eq!(out.to_json()["content"][0]["text"], canary.as_str());
    let cwd_tool = describe(&mut audit, "cwd");
    let out = run(
        &gw,
        json!({"action":"call","binding":cwd_tool,"arguments":{}}),
    );
    assert!(out.to_json().to_string().contains(&canary));
    // The stderr drain thread reads the plugin's stderr beside the call: the line written
    // before the reply may reach the ring a moment after the reply reaches the caller.
    let provider = gw.runner("clean").unwrap().provider("good").unwrap();
    let stderr_deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !provider
        .stderr_lines()
        .iter()
        .any(|l| l.text.contains(&canary))
    {
        assert!(
            std::time::Instant::now() < stderr_deadline,
            "the canary never reached the provider's stderr ring"
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    // Last: at EOF the stdio transport begins the hosts' shutdown.
    // The stdio transport's envelopes, including invalid lines.
    let (tx, rx) = crossbeam_channel::unbounded::<Vec<u8>>();
    struct Sink(crossbeam_channel::Sender<Vec<u8>>);
    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.send(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let input = [
        json!({"id":1,"tool":"plugin_tool","params":{"action":"list","runner":"local"}})
            .to_string(),
        json!({"id":2,"tool":"plugin_tool","params":{"action":"check","runner":"local","plugin":"stray"}})
            .to_string(),
        "garbage".to_string(),
    ]
    .join("\n");
    serve_lines(
        gw.clone(),
        Caller::trusted(),
        std::io::Cursor::new(input.into_bytes()),
        Sink(tx),
    )
    .unwrap();
    let written: Vec<u8> = rx.try_iter().flatten().collect();
    let text = String::from_utf8(written).unwrap();
    assert_eq!(text.lines().count(), 3);
    for line in text.lines() {
        audit.check_text("a stdio transport line", line);
    }

    assert!(audit.seen > 80, "audited {} outputs", audit.seen);
    gw.shutdown();

    // No output named any plugin's process id (known only now that every plugin ran).
    let pids: Vec<i32> = std::fs::read_to_string(&pid_file)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect();
    assert!(pids.len() > 20, "recorded pids: {pids:?}");
    let by_pid = Canary {
        strings: Vec::new(),
        pids,
    };
    for (what, text) in &audit.outputs {
        by_pid.assert_absent(what, text);
    }
}

const HTTP_TOKEN: &str = "canary-http-token-0123456789";

/// One raw HTTP/1.1 exchange with the server; the whole response as text.
fn http_exchange(addr: std::net::SocketAddr, request: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    String::from_utf8_lossy(&response).into_owned()
}

fn http_post(addr: std::net::SocketAddr, body: &str, token: &str) -> String {
    http_exchange(
        addr,
        &format!(
            "POST /api/tools/call HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// Audits one whole HTTP response and returns its body. The head is checked for every canary
/// string; process ids are looked for in the body only, where a small pid (under Wine) cannot
/// collide with a status code, a length or the date.
fn check_response<'r>(audit: &mut Audit, what: &str, response: &'r str) -> &'r str {
    let (head, body) = response.split_at(response.find("\r\n\r\n").map_or(0, |i| i + 4));
    for needle in &audit.canary.strings {
        assert!(
            !head.contains(needle.as_str()),
            "{what}: the HTTP head leaked {needle:?}: {head}"
        );
    }
    audit.check_text(what, body);
    body
}

/// Serves the gateway over HTTP on loopback and audits responses of every kind: check reports
/// (ready and not ready), reload failures, calls that fail and retire, and rejected requests.
fn http_audit(audit: &mut Audit, gw: &Arc<Gateway>) {
    let tokens = Tokens::parse(&format!(
        "[[tokens]]\nname = \"all\"\ntoken = \"{HTTP_TOKEN}\"\n\
         scopes = [\"plugin:inspect\", \"plugin:invoke\", \"plugin:manage\"]\n"
    ))
    .unwrap();
    let server = HttpServer::bind("127.0.0.1:0", gw.clone(), tokens).unwrap();
    let addr = server.local_addr();
    let stopper = server.stopper();
    let serving = std::thread::spawn(move || server.run());
    let post = |audit: &mut Audit, params: Value| -> Value {
        let body = json!({"tool": "plugin_tool", "params": params}).to_string();
        let response = http_post(addr, &body, HTTP_TOKEN);
        let json = check_response(audit, &format!("HTTP {params}"), &response);
        serde_json::from_str(json).unwrap_or(Value::Null)
    };
    for plugin in [
        "good", "bad", "stray", "exit", "version", "silent", "missing", "nope",
    ] {
        let out = post(
            audit,
            json!({"action":"check","runner":"local","plugin":plugin}),
        );
        assert_eq!(out["success"], true, "check {plugin}: {out}");
    }
    let out = post(audit, json!({"action":"reload","runner":"local"}));
    assert!(!out["output"]["failures"].as_array().unwrap().is_empty());
    post(audit, json!({"action":"list","runner":"local"}));
    for tool in ["garbage", "crash", "echo"] {
        post(audit, json!({"action":"reload","runner":"clean"}));
        let described = post(
            audit,
            json!({"action":"describe","runner":"clean","plugin":"good","tool":tool}),
        );
        let binding = described["output"]["binding"].clone();
        post(
            audit,
            json!({"action":"call","binding":binding,"arguments":{"text":"x"}}),
        );
    }
    // Rejected requests: bad token, bad JSON, wrong path, wrong method, and the answers of the
    // HTTP/1.1 reader itself: a body over 1 MiB (413), a head over 16 KiB (431), a transfer
    // coding other than chunked (501), a head that is not HTTP (400).
    let body = json!({"tool":"plugin_tool","params":{"action":"list"}}).to_string();
    let big_head = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: {addr}\r\nX-Pad: {}\r\n\r\n",
        "p".repeat(20 * 1024)
    );
    for (raw, status) in [
        (
            format!(
                "POST /api/tools/call HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {HTTP_TOKEN}\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                2 << 20
            ),
            "413",
        ),
        (big_head, "431"),
        (
            "POST /api/tools/call HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n".to_string(),
            "501",
        ),
        ("NOT HTTP AT ALL\r\n\r\n".to_string(), "400"),
    ] {
        let response = http_exchange(addr, &raw);
        assert!(
            response.starts_with(&format!("HTTP/1.1 {status} ")),
            "{status}: {response}"
        );
        check_response(audit, &format!("an HTTP {status} answer"), &response);
    }
    for response in [
        http_post(addr, &body, "wrong-token-0123456789abcdef"),
        http_post(addr, "not json", HTTP_TOKEN),
        http_exchange(
            addr,
            &format!("GET /api/tools/call HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
        ),
        http_exchange(
            addr,
            &format!("POST /elsewhere HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
        ),
    ] {
        assert!(response.starts_with("HTTP/1.1 4"), "{response}");
        check_response(audit, "a rejected HTTP request", &response);
    }
    stopper.stop();
    serving.join().unwrap().unwrap();
}
