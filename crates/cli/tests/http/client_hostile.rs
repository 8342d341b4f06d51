//! The `--server-url` client, and a front gateway's link to its runners, against hostile
//! peers (`tests/hostile_support/hostile.py`, Python stdlib): a server that echoes the bearer
//! token back in its bodies and headers (never printed or logged, in any mode), answers with a
//! status a `plugin_tool` answer never has (a redirect, a 500 or 299 whose body says success,
//! a 204: a lost answer, outcome unknown, not followed, not retried), and proxies: SOCKS4/5
//! that relay (supported, no panic) and proxies that refuse the tunnel (nothing was sent).

use crate::client_support;
use crate::common;
use crate::hostile_support;
use crate::tempdir;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;

use common::serve::{ServeProcess, TOKEN_ALL};
use hostile_support::Peer;
use serde_json::{json, Value};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");

/// The client's token in every run.
const TOKEN: &str = "hostile-test-client-token-0123456789";

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// Asserts that the token appears nowhere in what the run printed.
fn assert_no_token(what: &str, r: &client_support::Run, token: &str) {
    assert!(
        !r.stdout.contains(token) && !r.stderr.contains(token),
        "{what}: the token was printed: {r:?}"
    );
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn a_token_echoed_by_the_server_is_never_printed_or_logged() {
    let dir = TempDir::new("hostile", "echo");
    // (status, body kind, exit code of `list`)
    let cases = [
        (200, "success", 0),
        (401, "failure", 1),
        (400, "failure", 1),
        (500, "failure", 1),
    ];
    for (status, kind, code) in cases {
        let server = Peer::echo(&dir, status, kind);
        for json in [false, true] {
            let url = server.url();
            let mut args = vec!["list", "--server-url", &url, "--token", TOKEN];
            if json {
                args.push("--json");
            }
            // client_support::run logs at debug level: ureq's records show response headers.
            let r = client_support::run(&args, &[]);
            let what = format!("{status} {kind} json={json}");
            assert_eq!(r.code, Some(code), "{what}: {r:?}");
            assert_no_token(&what, &r, TOKEN);
            let printed = format!("{}{}", r.stdout, r.stderr);
            assert!(
                printed.contains("[redacted]"),
                "{what}: the echo was shown, without the token: {r:?}"
            );
            assert!(
                r.stderr.contains("DEBUG ureq"),
                "{what}: debug records pass: {r:?}"
            );
        }
        assert_eq!(server.log_lines().len(), 2, "one request per run");
    }
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn a_token_echoed_in_a_lost_answer_is_never_printed() {
    let dir = TempDir::new("hostile", "echo-lost");
    for (status, kind) in [(302, "success"), (299, "failure"), (502, "failure")] {
        let server = Peer::echo(&dir, status, kind);
        let url = server.url();
        let r = client_support::run(&["reload", "--server-url", &url, "--token", TOKEN], &[]);
        assert_eq!(r.code, Some(1), "{status}: {r:?}");
        assert_no_token(&format!("{status}"), &r, TOKEN);
    }
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn an_answer_without_its_status_is_lost_and_never_followed_or_retried() {
    let dir = TempDir::new("hostile", "status");
    // A success body under a status a success never has, a failure body under 200 or an
    // undocumented status, and a 204 without a body.
    let cases = [
        (302, "success"),
        (307, "success"),
        (500, "success"),
        (299, "success"),
        (201, "success"),
        (204, "empty"),
        (200, "failure"),
        (418, "failure"),
        (502, "failure"),
    ];
    for (status, kind) in cases {
        let server = Peer::echo(&dir, status, kind);
        let url = server.url();
        for action in [
            &["reload"][..],
            &["check", "--plugin", "fx"][..],
            &["list"][..],
        ] {
            server.clear_log();
            let mut args = action.to_vec();
            args.extend(["--json", "--server-url", &url, "--token", TOKEN]);
            let r = client_support::run(&args, &[]);
            let what = format!("{status} {kind} {action:?}");
            assert_eq!(r.code, Some(1), "{what}: {r:?}");
            assert!(r.stdout.is_empty(), "{what}: no output was taken: {r:?}");
            assert!(
                r.stderr.contains("may be unknown") && r.stderr.contains("NOT retried"),
                "{what}: {r:?}"
            );
            if (300..400).contains(&status) {
                assert!(r.stderr.contains("redirect"), "{what}: {r:?}");
            }
            // Sent once; a redirect's Location was not followed (it points elsewhere).
            assert_eq!(server.log_lines().len(), 1, "{what}: {r:?}");
        }
    }
    // The documented statuses are still taken: 200 with a success, 401 with a failure.
    let ok = Peer::echo(&dir, 200, "success");
    let r = client_support::run(
        &[
            "list",
            "--json",
            "--server-url",
            &ok.url(),
            "--token",
            TOKEN,
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    let refused = Peer::echo(&dir, 401, "failure");
    let r = client_support::run(
        &[
            "list",
            "--json",
            "--server-url",
            &refused.url(),
            "--token",
            TOKEN,
        ],
        &[],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    let out: Value = serde_json::from_str(&r.stdout).expect("the failure object is printed");
    assert_eq!(out["error"]["code"], "unauthorized", "{r:?}");
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn socks_proxies_carry_the_request() {
    let dir = TempDir::new("hostile", "socks");
    let server = Peer::echo(&dir, 200, "success");
    let socks = Peer::socks(&dir, "relay");
    let url = server.url();
    let list = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["list", "--json", "--server-url", &url, "--token", TOKEN];
        args.extend(extra);
        client_support::run(&args, env)
    };
    let socks5 = socks.proxy_url("socks5");
    let socks5h = socks.proxy_url("socks5h");
    let socks4 = socks.proxy_url("socks4");
    // (flags, environment, the SOCKS version the proxy saw)
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 5] = [
        (&["--proxy", &socks5], &[], "socks5"),
        (&["--proxy", &socks5h], &[], "socks5"),
        (&["--proxy", &socks4], &[], "socks4"),
        (&[], &[("ALL_PROXY", &socks5h)], "socks5"),
        (&[], &[("HTTP_PROXY", &socks5)], "socks5"),
    ];
    for (extra, env, protocol) in cases {
        let r = list(extra, env);
        assert_eq!(r.code, Some(0), "{r:?}");
        let out: Value = serde_json::from_str(&r.stdout).expect("JSON output");
        assert_eq!(out["providers"][0]["plugin"], "fx", "{r:?}");
        let tunnels = socks.log_lines();
        assert_eq!(tunnels.len(), 1, "{tunnels:?}");
        assert!(
            tunnels[0].starts_with(&format!("{protocol} relay CONNECT "))
                && tunnels[0].ends_with(&format!(":{}", server.port)),
            "{tunnels:?}"
        );
        socks.clear_log();
    }
    assert_eq!(server.log_lines().len(), 5);
    // https through socks5h: the proxy resolves the name, TLS runs end to end through it.
    let pki = client_support::TestPki::new();
    let tls = client_support::Origin::start(client_support::Reply::Answer, Some(pki.server));
    let ca = client_support::write(&dir, "ca.pem", &pki.ca_pem);
    let https = format!("https://localhost:{}", tls.addr.port());
    let r = client_support::run(
        &[
            "list",
            "--json",
            "--server-url",
            &https,
            "--token",
            TOKEN,
            "--ca-cert",
            &ca,
        ],
        &[("HTTPS_PROXY", &socks5h)],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("canned"), "{r:?}");
    assert_eq!(
        socks.log_lines(),
        [format!(
            "socks5 relay CONNECT localhost:{}",
            tls.addr.port()
        )]
    );
    socks.clear_log();
    // A scheme no proxy speaks is refused at start, before anything is sent.
    let r = list(&["--proxy", "ftp://127.0.0.1:1"], &[]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(
        r.stderr.contains("--proxy") && r.stderr.contains("socks5h://"),
        "{r:?}"
    );
    let r = list(&[], &[("ALL_PROXY", "gopher://127.0.0.1:1")]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("ALL_PROXY"), "{r:?}");
    assert_eq!(server.log_lines().len(), 5);
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn a_proxy_that_refuses_the_tunnel_sent_nothing() {
    let dir = TempDir::new("hostile", "refuse");
    let server = Peer::echo(&dir, 200, "success");
    let url = server.url();
    let socks = Peer::socks(&dir, "refuse");
    let forbidden = Peer::refusing_proxy(&dir, 403);
    let bad_gateway = Peer::refusing_proxy(&dir, 502);
    let proxies = [
        socks.proxy_url("socks5"),
        socks.proxy_url("socks4"),
        forbidden.proxy_url("http"),
        bad_gateway.proxy_url("http"),
    ];
    for proxy in &proxies {
        let r = client_support::run(
            &[
                "reload",
                "--server-url",
                &url,
                "--token",
                TOKEN,
                "--proxy",
                proxy,
            ],
            &[],
        );
        assert_eq!(r.code, Some(1), "{proxy}: {r:?}");
        assert!(r.stderr.contains("nothing was sent"), "{proxy}: {r:?}");
        assert!(!r.stderr.contains("may be unknown"), "{proxy}: {r:?}");
    }
    assert_eq!(socks.log_lines().len(), 2);
    assert_eq!(forbidden.log_lines().len(), 1);
    assert!(forbidden.log_lines()[0].starts_with("CONNECT 127.0.0.1:"));
    assert_eq!(bad_gateway.log_lines().len(), 1);
    assert!(server.log_lines().is_empty(), "nothing reached the server");
}

/// A front (`serve --runners`) with one runner `edge` at `url`, its own credential `token`,
/// and `env` (proxy variables) on top of an environment without any.
fn front(dir: &TempDir, url: &str, token: &str, env: &[(&str, &str)]) -> ServeProcess {
    let token_file = dir.write("edge.token", token);
    let runners = dir.write(
        "runners.toml",
        &format!(
            "[[runners]]\nid = \"edge\"\nname = \"Edge\"\nurl = \"{url}\"\ntoken_file = {}\n",
            serde_json::to_string(s(&token_file)).unwrap()
        ),
    );
    let tokens = common::serve::write_tokens_file(dir);
    let mut cmd: Command = common::cli_command(BIN);
    cmd.args([
        "serve",
        "--runners",
        s(&runners),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(&tokens),
    ]);
    for name in common::PROXY_VARIABLES {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied()).env("RUST_LOG", "debug");
    ServeProcess::start(cmd)
}

/// One POST to the front's `/api/tools/call`: the status and the body.
fn post(addr: SocketAddr, params: &Value) -> (u16, Value) {
    let body = json!({"tool": "plugin_tool", "params": params}).to_string();
    let raw = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN_ALL}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(client_support::LIMIT))
        .unwrap();
    stream.write_all(raw.as_bytes()).expect("write request");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read response");
    let _ = stream.shutdown(Shutdown::Both);
    let response = common::http::parse_response(&response);
    (response.status, response.json())
}

/// `list` of the runner `edge`, and `reload` of it, through the front.
fn list_and_reload(front: &ServeProcess) -> [(u16, Value); 2] {
    [
        post(front.addr, &json!({"action": "list", "runner": "edge"})),
        post(front.addr, &json!({"action": "reload", "runner": "edge"})),
    ]
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn a_front_takes_no_answer_without_its_status() {
    let dir = TempDir::new("hostile", "front-status");
    for (status, kind) in [
        (302, "success"),
        (500, "success"),
        (299, "success"),
        (204, "empty"),
    ] {
        let runner = Peer::echo(&dir, status, kind);
        let front = front(&dir, &runner.url(), TOKEN, &[]);
        let [(list_status, list), (reload_status, reload)] = list_and_reload(&front);
        let what = format!("{status} {kind}");
        assert_eq!(list_status, 504, "{what}: {list}");
        assert_eq!(
            list["output"]["error"]["code"], "plugin_gateway_timeout",
            "{what}: {list}"
        );
        assert_eq!(reload_status, 504, "{what}: {reload}");
        assert_eq!(
            reload["output"]["dispatch"], "outcome_unknown",
            "{what}: {reload}"
        );
        let stderr = front.stop();
        assert!(
            !stderr.contains(TOKEN),
            "{what}: the runner token was logged: {stderr}"
        );
        assert_eq!(
            runner.log_lines().len(),
            2,
            "{what}: sent once each, never followed"
        );
    }
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn a_front_relays_through_a_socks_proxy_and_hides_an_echoed_token() {
    let dir = TempDir::new("hostile", "front-socks");
    let runner = Peer::echo(&dir, 200, "success");
    let socks = Peer::socks(&dir, "relay");
    let front = front(
        &dir,
        &runner.url(),
        TOKEN,
        &[("ALL_PROXY", &socks.proxy_url("socks5h"))],
    );
    // The request went through the proxy, and the answer, which echoes the front's token for
    // that runner, is refused whole (nothing of it is shown, not even redacted).
    let (status, list) = post(front.addr, &json!({"action": "list", "runner": "edge"}));
    assert_eq!(status, 400, "{list}");
    assert_eq!(
        list["output"]["error"]["code"], "plugin_rpc_error",
        "{list}"
    );
    let text = list.to_string();
    assert!(
        !text.contains(TOKEN),
        "the runner's token reached the caller: {text}"
    );
    assert!(!text.contains("[redacted]"), "{text}");
    let stderr = front.stop();
    assert!(
        !stderr.contains(TOKEN),
        "the runner token was logged: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(socks.log_lines().len(), 1, "{:?}", socks.log_lines());
    assert_eq!(runner.log_lines().len(), 1);
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn a_front_refuses_a_call_result_that_holds_its_token_or_breaks_the_contract() {
    let dir = TempDir::new("hostile", "front-call-result");
    for (kind, code) in [
        ("token", Some("plugin_rpc_error")),
        ("token-escaped", Some("plugin_rpc_error")),
        ("invalid", Some("plugin_result_invalid")),
        ("ok", None),
    ] {
        let runner = Peer::runner(&dir, kind);
        let front = front(&dir, &runner.url(), TOKEN, &[]);
        let (status, described) = post(
            front.addr,
            &json!({"action": "describe", "runner": "edge", "plugin": "fx", "tool": "echo"}),
        );
        assert_eq!(status, 200, "{kind}: {described}");
        let binding = described["output"]["binding"].as_str().unwrap();
        let (status, called) = post(
            front.addr,
            &json!({"action": "call", "binding": binding, "arguments": {"text": "x"}}),
        );
        let text = called.to_string();
        match code {
            Some(code) => {
                assert_ne!(status, 200, "{kind}: {called}");
                assert_eq!(called["output"]["error"]["code"], code, "{kind}: {called}");
                assert_eq!(
                    called["output"]["dispatch"], "completed",
                    "{kind}: {called}"
                );
            }
            None => {
                assert_eq!(status, 200, "{kind}: {called}");
                assert_eq!(called["output"]["content"][0]["text"], "fine", "{called}");
            }
        }
        assert!(
            !text.contains(TOKEN),
            "{kind}: the token reached the caller: {text}"
        );
        let stderr = front.stop();
        assert!(
            !stderr.contains(TOKEN),
            "{kind}: the token was logged: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{kind}: {stderr}");
        assert_eq!(runner.log_lines(), ["POST describe", "POST call"], "{kind}");
    }
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn a_front_whose_proxy_refuses_the_tunnel_finds_the_runner_unavailable() {
    let dir = TempDir::new("hostile", "front-refuse");
    let runner = Peer::echo(&dir, 200, "success");
    let socks = Peer::socks(&dir, "refuse");
    let forbidden = Peer::refusing_proxy(&dir, 403);
    for proxy in [socks.proxy_url("socks5"), forbidden.proxy_url("http")] {
        let front = front(&dir, &runner.url(), TOKEN, &[("HTTP_PROXY", &proxy)]);
        for (status, body) in list_and_reload(&front) {
            assert_eq!(status, 503, "{proxy}: {body}");
            assert_eq!(
                body["output"]["error"]["code"], "plugin_runner_unavailable",
                "{body}"
            );
            assert_eq!(body["output"]["dispatch"], "not_started", "{proxy}: {body}");
        }
        let stderr = front.stop();
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(runner.log_lines().is_empty(), "nothing reached the runner");
    common::assert_no_zombie_children_of_self();
}
