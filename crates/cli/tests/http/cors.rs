//! Browser access to `serve` (`/mcp` and `/api/tools/call`): the CORS preflight and headers for
//! an `--allow-origin` origin, the 403 of every other origin, the server's own origin on a
//! loopback host (allowed without `--allow-origin`), and `--allow-origin '*'` refused at start.
//!
//! The raw HTTP tests need nothing else. The browser test drives real headless Chromium through
//! `chromedriver` (as tests/inspector.rs does): a page served from another loopback port calls
//! `serve` with `fetch()`; it is ignored unless asked for:
//! `cargo test --test cors -- --include-ignored`.

use crate::common;
use crate::inspector_support;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use inspector_support::{example_provider, exchange, Browser, RawResponse, Serve, TempDir, ALL};
use serde_json::{json, Value};
use webcodex_plugin_http::cors::{ALLOW_HEADERS, EXPOSE_HEADERS, MAX_AGE_SECS};

/// The origin given with `--allow-origin` in the raw tests.
const APP: &str = "http://app.example:3000";

fn start(dir: &TempDir, args: &[&str]) -> Serve {
    Serve::start_with_args(dir, &example_provider("example", "Example"), args)
}

/// One request on a fresh connection, with `Host: host` and these extra headers.
fn request(
    serve: &Serve,
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> RawResponse {
    let mut raw = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        raw.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() {
        raw.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    raw.push_str("\r\n");
    raw.push_str(body);
    exchange(serve.addr, &raw)
}

fn own_host(serve: &Serve) -> String {
    serve.addr.to_string()
}

const MCP_LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
const API_LIST: &str = r#"{"id":7,"tool":"plugin_tool","params":{"action":"list"}}"#;

/// A POST of `body` to `path` with the all-scopes token and `Origin: origin`.
fn post(serve: &Serve, path: &str, host: &str, origin: &str, body: &str) -> RawResponse {
    let auth = format!("Bearer {ALL}");
    request(
        serve,
        "POST",
        path,
        host,
        &[("Origin", origin), ("Authorization", &auth)],
        body,
    )
}

/// A CORS preflight of a POST with the headers an MCP client sends.
fn preflight(serve: &Serve, path: &str, host: &str, origin: &str) -> RawResponse {
    request(
        serve,
        "OPTIONS",
        path,
        host,
        &[
            ("Origin", origin),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "authorization,content-type,mcp-protocol-version",
            ),
        ],
        "",
    )
}

fn access_control_headers(response: &RawResponse) -> Vec<&(String, String)> {
    response
        .headers
        .iter()
        .filter(|(name, _)| name.to_ascii_lowercase().starts_with("access-control-"))
        .collect()
}

fn assert_answer_headers(response: &RawResponse, origin: &str) {
    assert_eq!(response.header("Access-Control-Allow-Origin"), origin);
    assert_eq!(
        response.header("Access-Control-Expose-Headers"),
        EXPOSE_HEADERS
    );
    assert_eq!(response.header("Vary"), "Origin");
}

fn assert_preflight_allowed(response: &RawResponse, origin: &str) {
    assert_eq!(response.status, 204, "{}", response.text());
    assert!(response.body.is_empty());
    // RFC 9110 §8.6: a 204 carries no Content-Length.
    assert!(
        !response
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("content-length")),
        "a 204 with Content-Length: {:?}",
        response.headers
    );
    assert_eq!(response.header("Access-Control-Allow-Origin"), origin);
    assert_eq!(response.header("Access-Control-Allow-Methods"), "POST");
    let allowed: Vec<String> = response
        .header("Access-Control-Allow-Headers")
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    for needed in [
        "authorization",
        "content-type",
        "accept",
        "mcp-protocol-version",
        "mcp-session-id",
        "mcp-method",
        "mcp-name",
        "last-event-id",
    ] {
        assert!(allowed.iter().any(|h| h == needed), "{needed}: {allowed:?}");
    }
    assert_eq!(
        response.header("Access-Control-Max-Age"),
        MAX_AGE_SECS.to_string()
    );
    assert_eq!(response.header("Vary"), "Origin");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn an_allowed_origin_gets_the_preflight_and_the_cors_headers_on_both_routes() {
    let dir = TempDir::new("cors", "allowed");
    let serve = start(&dir, &["--allow-origin", APP]);
    let host = own_host(&serve);
    assert!(ALLOW_HEADERS.contains("Last-Event-ID"));

    for path in ["/mcp", "/api/tools/call"] {
        // The preflight: 204 with the CORS headers, no token needed; the origin is compared
        // without regard to ASCII case and echoed as the browser sent it.
        assert_preflight_allowed(&preflight(&serve, path, &host, APP), APP);
        let upper = "HTTP://APP.EXAMPLE:3000";
        assert_preflight_allowed(&preflight(&serve, path, &host, upper), upper);

        // A preflight from any other origin: 403 and none of the CORS headers.
        for refused in ["http://evil.example", "null", "http://app.example:3001"] {
            let answer = preflight(&serve, path, &host, refused);
            assert_eq!(answer.status, 403, "{path} {refused}");
            assert!(
                access_control_headers(&answer).is_empty(),
                "{path} {refused}: {:?}",
                answer.headers
            );
        }

        // OPTIONS without Origin is not a preflight: 204 with Allow, no CORS headers.
        let plain = request(&serve, "OPTIONS", path, &host, &[], "");
        assert_eq!(plain.status, 204);
        assert_eq!(plain.header("Allow"), "OPTIONS, POST");
        assert!(access_control_headers(&plain).is_empty());
    }

    // The answers to the allowed origin carry the CORS headers: a success on each route...
    let mcp = post(&serve, "/mcp", &host, APP, MCP_LIST);
    assert_eq!(mcp.status, 200, "{}", mcp.text());
    assert_eq!(mcp.json()["result"]["tools"][0]["name"], "plugin_tool");
    assert_answer_headers(&mcp, APP);
    let api = post(&serve, "/api/tools/call", &host, APP, API_LIST);
    assert_eq!(api.status, 200, "{}", api.text());
    assert_eq!(api.json()["id"], 7);
    assert_answer_headers(&api, APP);
    // ...and a failure the page must be able to read (401 with its challenge).
    let no_token = request(&serve, "POST", "/mcp", &host, &[("Origin", APP)], MCP_LIST);
    assert_eq!(no_token.status, 401);
    assert_eq!(no_token.header("WWW-Authenticate"), "Bearer");
    assert_answer_headers(&no_token, APP);

    // A refused origin: 403 on /mcp, and no CORS headers on either route (a browser cannot
    // read the answer of /api/tools/call, whose token check is its protection).
    let refused = post(&serve, "/mcp", &host, "http://evil.example", MCP_LIST);
    assert_eq!(refused.status, 403);
    assert_eq!(refused.json()["error"]["code"], -32600);
    assert!(access_control_headers(&refused).is_empty());
    let api = post(
        &serve,
        "/api/tools/call",
        &host,
        "http://evil.example",
        API_LIST,
    );
    assert!(access_control_headers(&api).is_empty(), "{:?}", api.headers);
    // Without Origin (not a browser): served, no CORS headers.
    let auth = format!("Bearer {ALL}");
    let plain = request(
        &serve,
        "POST",
        "/mcp",
        &host,
        &[("Authorization", &auth)],
        MCP_LIST,
    );
    assert_eq!(plain.status, 200);
    assert!(access_control_headers(&plain).is_empty());
    serve.stop();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn the_own_origin_on_a_loopback_host_needs_no_allow_origin_and_no_other_origin_passes() {
    let dir = TempDir::new("cors", "own-origin");
    let serve = start(&dir, &[]);
    let port = serve.addr.port();

    // `http://` + the Host, when the Host names a loopback address: allowed, on both routes.
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        format!("LocalHost:{port}"),
    ] {
        let origin = format!("http://{host}");
        let mcp = post(&serve, "/mcp", &host, &origin, MCP_LIST);
        assert_eq!(mcp.status, 200, "{host}: {}", mcp.text());
        assert_answer_headers(&mcp, &origin);
        assert_preflight_allowed(&preflight(&serve, "/mcp", &host, &origin), &origin);
        assert_preflight_allowed(
            &preflight(&serve, "/api/tools/call", &host, &origin),
            &origin,
        );
    }

    // Every other origin needs --allow-origin: 403 on /mcp and on the preflights.
    let loopback = format!("127.0.0.1:{port}");
    for (host, origin) in [
        // A name that is not loopback, even with a matching Origin (DNS rebinding).
        (
            format!("rebind.example:{port}"),
            format!("http://rebind.example:{port}"),
        ),
        (
            format!("localhost.evil.example:{port}"),
            format!("http://localhost.evil.example:{port}"),
        ),
        // Loopback Host, but another origin: another port, scheme or name.
        (loopback.clone(), format!("http://127.0.0.1:{}", port + 1)),
        (loopback.clone(), format!("https://127.0.0.1:{port}")),
        (loopback.clone(), format!("http://localhost:{port}")),
        (loopback.clone(), "null".to_string()),
    ] {
        let mcp = post(&serve, "/mcp", &host, &origin, MCP_LIST);
        assert_eq!(mcp.status, 403, "Host {host}, Origin {origin}");
        assert!(access_control_headers(&mcp).is_empty());
        for path in ["/mcp", "/api/tools/call"] {
            let answer = preflight(&serve, path, &host, &origin);
            assert_eq!(answer.status, 403, "{path}: Host {host}, Origin {origin}");
            assert!(access_control_headers(&answer).is_empty());
        }
    }
    serve.stop();
}

#[test]
fn allow_origin_star_and_malformed_origins_are_refused_at_start() {
    let dir = TempDir::new("cors", "refused-at-start");
    let config = dir.write("runner.toml", &example_provider("example", "Example"));
    let tokens = inspector_support::tokens_file(&dir);
    for (value, says) in [
        ("*", "list the origins"),
        ("http://localhost:3000/", "no trailing /"),
        ("localhost:3000", "not a browser origin"),
    ] {
        let mut cmd = common::cli_command(env!("CARGO_BIN_EXE_webcodex-plugin"));
        cmd.args(["serve", "--config"])
            .arg(&config)
            .args(["--listen", "127.0.0.1:0", "--tokens"])
            .arg(&tokens)
            .args([
                "--allow-origin",
                "http://fine.example",
                "--allow-origin",
                value,
            ]);
        let run = common::run_to_end(cmd, inspector_support::LIMIT);
        assert_eq!(run.code, Some(2), "{value}: {run:?}");
        assert!(run.stdout.is_empty(), "{value}: nothing listens: {run:?}");
        assert!(run.stderr.contains("--allow-origin"), "{value}: {run:?}");
        assert!(run.stderr.contains(says), "{value}: {run:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// In a real browser
// ---------------------------------------------------------------------------------------------

/// A blank HTML page on a loopback port of its own: the origin a test page runs on.
struct PageServer {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PageServer {
    fn start() -> PageServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the page server");
        let addr = listener.local_addr().expect("page server address");
        let stopping = Arc::new(AtomicBool::new(false));
        let stop = stopping.clone();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                if let Ok(stream) = stream {
                    answer_page(stream);
                }
            }
        });
        PageServer {
            addr,
            stopping,
            thread: Some(thread),
        }
    }
}

/// Reads one request head (bounded in size and time) and answers it with the blank page.
fn answer_page(mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    let page =
        "<!doctype html><html><head><title>cors test page</title></head><body></body></html>";
    let (status, body) = if head.starts_with(b"GET / ") {
        ("200 OK", page)
    } else {
        ("404 Not Found", "")
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.shutdown(Shutdown::Both);
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts `fetch(url, init)` in the page and waits for its outcome: `{status, body, instance}`
/// or `{error}` (a network error, which is how a refused CORS request ends).
fn browser_fetch(browser: &Browser, url: &str, init: Value) -> Value {
    browser.exec(
        "window.__outcome = undefined;
         fetch(arguments[0], arguments[1]).then(
           async (r) => { window.__outcome = {status: r.status, body: await r.text(),
                            instance: r.headers.get('Webcodex-Runner-Instance')}; },
           (e) => { window.__outcome = {error: String(e)}; });
         return true;",
        vec![json!(url), init],
    );
    let outcome = browser.wait_for(
        "return window.__outcome === undefined ? null : JSON.stringify(window.__outcome);",
        "the fetch to end",
    );
    serde_json::from_str(outcome.as_str().expect("a JSON string")).expect("the outcome")
}

/// The `fetch()` init of a stateless MCP `tools/call` of `list`.
fn mcp_call_init() -> Value {
    let body = json!({"jsonrpc":"2.0","id":"page-1","method":"tools/call","params":{
        "name":"plugin_tool","arguments":{"action":"list","runner":"local"},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                 "io.modelcontextprotocol/clientCapabilities":{}}}});
    json!({"method":"POST","headers":{
        "Authorization": format!("Bearer {ALL}"),
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "plugin_tool",
    },"body": body.to_string()})
}

/// The `fetch()` init of a `POST /api/tools/call` of `list`.
fn api_call_init() -> Value {
    let body =
        json!({"id":"page-2","tool":"plugin_tool","params":{"action":"list","runner":"local"}});
    json!({"method":"POST","headers":{
        "Authorization": format!("Bearer {ALL}"),
        "Content-Type": "application/json",
    },"body": body.to_string()})
}

#[test]
#[ignore = "needs chromium and chromedriver"]
fn a_page_on_an_allowed_origin_calls_both_routes_and_a_page_on_another_cannot() {
    let pages = PageServer::start();
    // One page server, two origins: 127.0.0.1 is allowed, localhost (same port) is not.
    let allowed = format!("http://127.0.0.1:{}", pages.addr.port());
    let refused = format!("http://localhost:{}", pages.addr.port());
    let dir = TempDir::new("cors", "browser");
    let serve = start(&dir, &["--allow-origin", &allowed]);
    let mcp_url = format!("http://127.0.0.1:{}/mcp", serve.addr.port());
    let api_url = format!("http://127.0.0.1:{}/api/tools/call", serve.addr.port());
    let browser = Browser::start();

    browser.goto(&format!("{allowed}/"));
    let mcp = browser_fetch(&browser, &mcp_url, mcp_call_init());
    assert_eq!(mcp["status"], 200, "{mcp}");
    let answer: Value = serde_json::from_str(mcp["body"].as_str().unwrap()).expect("JSON-RPC");
    assert_eq!(answer["id"], "page-1");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["plugins"][0]["plugin"],
        "example"
    );
    let api = browser_fetch(&browser, &api_url, api_call_init());
    assert_eq!(api["status"], 200, "{api}");
    let answer: Value = serde_json::from_str(api["body"].as_str().unwrap()).expect("JSON");
    assert_eq!(answer["id"], "page-2");
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["output"]["plugins"][0]["plugin"], "example");
    // An exposed header is readable from the page.
    assert!(
        api["instance"].as_str().is_some_and(|i| !i.is_empty()),
        "{api}"
    );

    browser.goto(&format!("{refused}/"));
    for (url, init) in [(&mcp_url, mcp_call_init()), (&api_url, api_call_init())] {
        let outcome = browser_fetch(&browser, url, init);
        assert!(
            outcome["error"]
                .as_str()
                .is_some_and(|e| e.contains("TypeError")),
            "{url} from {refused}: {outcome}"
        );
    }
    drop(browser);
    let stderr = serve.stop();
    // The refused page got as far as the preflights, and no further.
    assert!(stderr.contains("http: OPTIONS /mcp -> 403"), "{stderr}");
    assert!(
        stderr.contains("http: OPTIONS /api/tools/call -> 403"),
        "{stderr}"
    );
}
