//! `serve`'s `POST /mcp` in raw HTTP: authentication (401 with the Bearer challenge), the
//! Origin check, methods, notifications, routing headers of the stateless era, body bounds,
//! and scopes that hold exactly as on `POST /api/tools/call`.

use crate::mcp_support;

use serde_json::{json, Value};

use mcp_support::*;

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// POST /mcp with a token and extra headers; (status, headers, JSON body or Null).
fn post(
    server: &ServeProcess,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, Vec<(String, String)>, Value) {
    let auth = token.map(bearer);
    let mut all: Vec<(&str, &str)> = headers.to_vec();
    if let Some(auth) = &auth {
        all.push(("Authorization", auth));
    }
    let (status, headers, text) = http(server.addr(), "POST", "/mcp", &all, &body.to_string());
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    };
    (status, headers, json)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn stateless_headers(
    method: &'static str,
    name: Option<&'static str>,
) -> Vec<(&'static str, &'static str)> {
    let mut headers = vec![("MCP-Protocol-Version", STATELESS), ("Mcp-Method", method)];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    headers
}

fn call_body(id: i64, arguments: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
           "params":{"name":"plugin_tool","arguments":arguments,"_meta":meta()}})
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn authentication_origin_methods_and_notifications() {
    let dir = TempDir::new("http-edges");
    let config = dir.config(&[("alpha", "normal")]);
    let server = ServeProcess::start(&dir, &config, &["http://allowed.example"]);
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});

    // 401 with the Bearer challenge: no token, a wrong token.
    for token in [None, Some("wrong-token-wrong-token")] {
        let (status, headers, body) = post(&server, token, &[], &list);
        assert_eq!(status, 401);
        assert_eq!(header(&headers, "www-authenticate"), Some("Bearer"));
        assert_eq!(body["error"]["code"], -32600);
        assert_eq!(body["id"], Value::Null);
    }

    // Origin: absent or allowed → served; present and not allowed → 403.
    let (status, _, body) = post(&server, Some(TOKEN_INSPECT), &[], &list);
    assert_eq!(status, 200);
    assert_eq!(body["result"]["tools"][0]["name"], "plugin_tool");
    let (status, _, _) = post(
        &server,
        Some(TOKEN_INSPECT),
        &[("Origin", "http://allowed.example")],
        &list,
    );
    assert_eq!(status, 200);
    for origin in ["http://evil.example", "null", "http://allowed.example:8080"] {
        let (status, _, body) = post(&server, Some(TOKEN_INSPECT), &[("Origin", origin)], &list);
        assert_eq!(status, 403, "{origin}");
        assert_eq!(body["error"]["code"], -32600);
    }

    // GET and DELETE → 405 (no SSE stream, no sessions); another path → 404.
    for method in ["GET", "DELETE"] {
        let auth = bearer(TOKEN_INSPECT);
        let (status, headers, _) = http(
            server.addr(),
            method,
            "/mcp",
            &[("Authorization", &auth)],
            "",
        );
        assert_eq!(status, 405, "{method}");
        assert_eq!(header(&headers, "allow"), Some("POST"));
    }
    let (status, _, _) = http(server.addr(), "POST", "/mcp/x", &[], "{}");
    assert_eq!(status, 404);

    // Notifications and client responses → 202 without a body.
    for message in [
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}),
        json!({"jsonrpc":"2.0","id":5,"result":{}}),
    ] {
        let (status, _, body) = post(&server, Some(TOKEN_INSPECT), &[], &message);
        assert_eq!((status, body), (202, Value::Null), "{message}");
    }

    // A batch under a version other than 2025-03-26 and a body that is not JSON → 400; a body
    // over 1 MiB → 413. (Without the version header a batch is served: see the batch test.)
    let (status, _, body) = post(
        &server,
        Some(TOKEN_INSPECT),
        &[("MCP-Protocol-Version", "2025-06-18")],
        &json!([list]),
    );
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!(-32600))
    );
    let auth = bearer(TOKEN_INSPECT);
    let (status, _, text) = http(
        server.addr(),
        "POST",
        "/mcp",
        &[("Authorization", &auth)],
        "{nope",
    );
    assert_eq!(status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["error"]["code"],
        -32700
    );
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat((1 << 20) + 1)
    );
    let (status, _, _) = http(
        server.addr(),
        "POST",
        "/mcp",
        &[("Authorization", &auth)],
        &huge,
    );
    assert_eq!(status, 413);

    // The handshake era over HTTP: initialize is answered, nothing requires it.
    let (status, _, body) = post(
        &server,
        Some(TOKEN_INSPECT),
        &[],
        &json!({"jsonrpc":"2.0","id":2,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}),
    );
    assert_eq!(status, 200);
    assert_eq!(body["result"]["protocolVersion"], "2025-06-18");
    let (status, _, _) = post(
        &server,
        Some(TOKEN_INSPECT),
        &[("MCP-Protocol-Version", "1999-01-01")],
        &list,
    );
    assert_eq!(status, 400);

    server.stop_and_assert_plugins_gone();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn stateless_routing_headers_must_match_the_body() {
    let dir = TempDir::new("http-headers");
    let config = dir.config(&[("alpha", "normal")]);
    let server = ServeProcess::start(&dir, &config, &[]);
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":meta()}});
    let call = call_body(2, json!({"action":"list"}));

    let (status, _, body) = post(
        &server,
        Some(TOKEN_INSPECT),
        &stateless_headers("tools/list", None),
        &list,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "complete");
    assert_eq!(body["result"]["cacheScope"], "public");
    let (status, _, body) = post(
        &server,
        Some(TOKEN_INSPECT),
        &stateless_headers("tools/call", Some("plugin_tool")),
        &call,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["structuredContent"],
        json!({"runners":[{"runner":"local"}]})
    );
    // The Base64 sentinel form of Mcp-Name.
    let (status, _, _) = post(
        &server,
        Some(TOKEN_INSPECT),
        &stateless_headers("tools/call", Some("=?base64?cGx1Z2luX3Rvb2w=?=")),
        &call,
    );
    assert_eq!(status, 200);

    let mismatches: Vec<(Vec<(&str, &str)>, &Value)> = vec![
        (vec![("Mcp-Method", "tools/list")], &list),
        (vec![("MCP-Protocol-Version", STATELESS)], &list),
        (stateless_headers("tools/call", Some("plugin_tool")), &list),
        (
            vec![
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Mcp-Method", "tools/list"),
            ],
            &list,
        ),
        (stateless_headers("tools/call", None), &call),
        (stateless_headers("tools/call", Some("other_tool")), &call),
        (stateless_headers("tools/list", Some("plugin_tool")), &call),
    ];
    for (headers, body) in mismatches {
        let (status, _, answer) = post(&server, Some(TOKEN_INSPECT), &headers, body);
        assert_eq!(status, 400, "{headers:?}");
        assert_eq!(answer["error"]["code"], -32020, "{headers:?}: {answer}");
    }

    // Unsupported version (headers and body agree) → 400 with -32022; unknown method → 404.
    let mut old = meta();
    old["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let body = json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":old}});
    let (status, _, answer) = post(
        &server,
        Some(TOKEN_INSPECT),
        &[
            ("MCP-Protocol-Version", "2099-01-01"),
            ("Mcp-Method", "tools/list"),
        ],
        &body,
    );
    assert_eq!(status, 400);
    assert_eq!(answer["error"]["code"], -32022);
    assert_eq!(answer["error"]["data"]["supported"][0], STATELESS);
    let body = json!({"jsonrpc":"2.0","id":4,"method":"resources/list","params":{"_meta":meta()}});
    let (status, _, answer) = post(
        &server,
        Some(TOKEN_INSPECT),
        &stateless_headers("resources/list", None),
        &body,
    );
    assert_eq!(status, 404);
    assert_eq!(answer["error"]["code"], -32601);

    server.stop();
}

/// The same request over `/api/tools/call` and over `/mcp`, with one token: the failure object
/// (or success) is the same on both.
#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn scopes_hold_over_mcp_exactly_as_over_the_http_api() {
    let dir = TempDir::new("http-scopes");
    let config = dir.config(&[("alpha", "normal")]);
    let server = ServeProcess::start(&dir, &config, &[]);

    // A binding to call with (described with a token that may).
    let (_, _, described) = post(
        &server,
        Some(TOKEN_INVOKE),
        &stateless_headers("tools/call", Some("plugin_tool")),
        &call_body(
            1,
            json!({"action":"describe","runner":"local","plugin":"alpha","tool":"echo"}),
        ),
    );
    let binding = described["result"]["structuredContent"]["binding"].clone();
    assert!(binding.is_string(), "{described}");

    let requests = [
        json!({"action":"list","runner":"local"}),
        json!({"action":"describe","runner":"local","plugin":"alpha","tool":"echo"}),
        json!({"action":"call","binding":binding,"arguments":{"text":"x"}}),
        json!({"action":"check","runner":"local","plugin":"alpha"}),
        json!({"action":"reload","runner":"local"}),
    ];
    let mut denied = 0;
    for token in [TOKEN_INSPECT, TOKEN_INVOKE, TOKEN_MANAGE] {
        for (i, params) in requests.iter().enumerate() {
            if params["action"] == "reload" && token == TOKEN_MANAGE {
                continue; // a reload would replace the binding for the requests after it
            }
            let auth = bearer(token);
            let (api_status, _, api_text) = http(
                server.addr(),
                "POST",
                "/api/tools/call",
                &[("Authorization", &auth)],
                &json!({"tool":"plugin_tool","params":params}).to_string(),
            );
            let api: Value = serde_json::from_str(&api_text).unwrap();
            let (status, _, mcp) = post(
                &server,
                Some(token),
                &stateless_headers("tools/call", Some("plugin_tool")),
                &call_body(10 + i as i64, params.clone()),
            );
            assert_eq!(status, 200);
            let result = &mcp["result"];
            if api["success"] == true {
                assert_eq!(result["isError"], false, "{token} {params}: {result}");
                if params["action"] != "call" {
                    assert_eq!(
                        result["structuredContent"]["runner"],
                        api["output"]["runner"]
                    );
                }
            } else {
                assert_eq!(api_status, 403, "{token} {params}: {api}");
                assert_eq!(result["isError"], true, "{token} {params}: {result}");
                assert_eq!(result["structuredContent"], api["output"]);
                assert_eq!(
                    result["structuredContent"]["error"]["code"],
                    "insufficient_scope"
                );
                denied += 1;
            }
        }
    }
    // inspect: call, check, reload denied; invoke: check, reload; manage: list, describe, call.
    assert_eq!(denied, 3 + 2 + 3);
    // tools/list needs no particular scope: any valid token sees the manifest.
    let (status, _, body) = post(
        &server,
        Some(TOKEN_MANAGE),
        &[],
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
    );
    assert_eq!(status, 200);
    assert_eq!(body["result"]["tools"][0]["name"], "plugin_tool");

    server.stop_and_assert_plugins_gone();
}

/// One keep-alive HTTP/1.1 connection read the way a proxy reads it: a response to `HEAD`
/// ends with its head, whatever its `Content-Length` says.
struct KeepAlive {
    stream: std::net::TcpStream,
    buffered: Vec<u8>,
}

/// A response read from a [`KeepAlive`] connection: status, headers (lower-case), body.
type Answer = (u16, Vec<(String, String)>, Vec<u8>);

impl KeepAlive {
    fn connect(addr: &str) -> KeepAlive {
        let stream = std::net::TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(RESPONSE_LIMIT))
            .expect("read timeout");
        KeepAlive {
            stream,
            buffered: Vec::new(),
        }
    }

    fn fill(&mut self) {
        use std::io::Read;
        let mut chunk = [0u8; 4096];
        let n = self.stream.read(&mut chunk).expect("read a response");
        assert!(n > 0, "the server closed the keep-alive connection");
        self.buffered.extend_from_slice(&chunk[..n]);
    }

    /// Sends `method path` (with `headers` and `body`) and reads exactly one response.
    fn exchange(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        use std::io::Write;
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n",
            body.len()
        );
        if body.is_empty() {
            request = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        }
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        self.stream.write_all(request.as_bytes()).expect("send");
        let end = loop {
            if let Some(end) = self.buffered.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            self.fill();
        };
        let head = String::from_utf8_lossy(&self.buffered[..end]).into_owned();
        self.buffered.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        assert!(
            status_line.starts_with("HTTP/1.1 "),
            "the response does not start with a status line (bytes left over from the \
             previous answer?): {head:?}"
        );
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        if method == "HEAD" {
            return (status, headers, Vec::new());
        }
        let length: usize = header(&headers, "content-length")
            .and_then(|v| v.parse().ok())
            .expect("a Content-Length");
        while self.buffered.len() < length {
            self.fill();
        }
        let body = self.buffered.drain(..length).collect();
        (status, headers, body)
    }
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn head_answers_carry_no_body_on_a_keep_alive_connection() {
    let dir = TempDir::new("http-head");
    let config = dir.config(&[("alpha", "normal")]);
    let server = ServeProcess::start(&dir, &config, &[]);
    let auth = bearer(TOKEN_INSPECT);
    let mut conn = KeepAlive::connect(server.addr());
    // Every kind of route: MCP (405), the HTTP API (405), an inspector page (200), no route (404).
    for path in [
        "/mcp",
        "/api/tools/call",
        "/",
        "/inspector.js",
        "/no/such/path",
    ] {
        let (get_status, get_headers, get_body) =
            conn.exchange("GET", path, &[("Authorization", &auth)], "");
        let (status, headers, _) = conn.exchange("HEAD", path, &[("Authorization", &auth)], "");
        assert_eq!(status, get_status, "HEAD {path}");
        assert_eq!(
            header(&headers, "content-length"),
            Some(get_body.len().to_string().as_str()),
            "HEAD {path}: the Content-Length GET would send"
        );
        assert_eq!(
            header(&headers, "content-type"),
            header(&get_headers, "content-type"),
            "HEAD {path}"
        );
        assert_eq!(
            header(&headers, "allow"),
            header(&get_headers, "allow"),
            "HEAD {path}"
        );
        assert_eq!(
            header(&headers, "connection"),
            Some("keep-alive"),
            "HEAD {path}"
        );
    }
    // The connection is still framed right: a request after the HEAD answers parses.
    conn.exchange("HEAD", "/mcp", &[("Authorization", &auth)], "");
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}).to_string();
    let (status, _, body) = conn.exchange("POST", "/mcp", &[("Authorization", &auth)], &list);
    assert_eq!(status, 200);
    let body: Value = serde_json::from_slice(&body).expect("a JSON body");
    assert_eq!(body["result"]["tools"][0]["name"], "plugin_tool");
    drop(conn);
    server.stop_and_assert_plugins_gone();
}

/// Under 2026-07-28 (its `_meta`, or only its `MCP-Protocol-Version` header) the methods that
/// revision removed are unknown: 404 with -32601. The handshake era keeps them (200).
#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn methods_removed_by_the_stateless_revision_are_404_in_its_era() {
    let dir = TempDir::new("http-removed");
    let config = dir.config(&[("alpha", "normal")]);
    let server = ServeProcess::start(&dir, &config, &[]);
    for method in ["initialize", "ping", "logging/setLevel"] {
        let params = json!({"protocolVersion": STATELESS, "capabilities": {},
                            "clientInfo": {"name": "t", "version": "0"}, "level": "info"});
        let mut with_meta = params.clone();
        with_meta["_meta"] = meta();
        for (label, params) in [("_meta", with_meta), ("header only", params)] {
            let body = json!({"jsonrpc":"2.0","id":7,"method":method,"params":params});
            let (status, _, answer) = post(
                &server,
                Some(TOKEN_INSPECT),
                &stateless_headers(method, None),
                &body,
            );
            assert_eq!(status, 404, "{method} ({label}): {answer}");
            assert_eq!(answer["error"]["code"], -32601, "{method} ({label})");
            assert_eq!(answer["id"], 7, "{method} ({label})");
        }
    }
    // The handshake era keeps initialize and ping.
    let body = json!({"jsonrpc":"2.0","id":8,"method":"ping"});
    let (status, _, answer) = post(&server, Some(TOKEN_INSPECT), &[], &body);
    assert_eq!((status, answer["result"].clone()), (200, json!({})));
    let body = json!({"jsonrpc":"2.0","id":9,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}});
    let (status, _, answer) = post(
        &server,
        Some(TOKEN_INSPECT),
        &[("MCP-Protocol-Version", "2025-11-25")],
        &body,
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["protocolVersion"], "2025-11-25");
    server.stop_and_assert_plugins_gone();
}

/// `POST /mcp` and `POST /api/tools/call` echo every id byte for byte: results, errors, calls
/// and the 401 of the HTTP API.
#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn ids_come_back_byte_for_byte_over_http() {
    const IDS: [&str; 7] = [
        "18446744073709551616",
        "1e2",
        "-0",
        "1.50",
        "-1.5E-3",
        r#""caf\u00e9 \"id\"""#,
        "123456789012345678901234567890",
    ];
    let dir = TempDir::new("http-raw-ids");
    let config = dir.config(&[("alpha", "normal")]);
    let server = ServeProcess::start(&dir, &config, &[]);
    let auth = bearer(TOKEN_INSPECT);
    let with_auth = [("Authorization", auth.as_str())];
    for id in IDS {
        for (headers, body) in [
            (
                with_auth.to_vec(),
                format!(r#"{{"jsonrpc":"2.0","id": {id},"method":"tools/list"}}"#),
            ),
            (
                with_auth.to_vec(),
                format!(r#"{{"jsonrpc":"2.0","id": {id},"method":"nope"}}"#),
            ),
            (
                with_auth.to_vec(),
                format!(
                    r#"{{"jsonrpc":"2.0","id": {id},"method":"tools/call","params":{{"name":"plugin_tool","arguments":{{"action":"list"}}}}}}"#
                ),
            ),
            (
                vec![
                    ("Authorization", auth.as_str()),
                    ("MCP-Protocol-Version", STATELESS),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "plugin_tool"),
                ],
                format!(
                    r#"{{"jsonrpc":"2.0","id": {id},"method":"tools/call","params":{{"name":"plugin_tool","arguments":{{"action":"list"}},"_meta":{}}}}}"#,
                    meta()
                ),
            ),
        ] {
            let (status, _, text) = http(server.addr(), "POST", "/mcp", &headers, &body);
            assert!(echoes(&text, id), "{status} {body} -> {text}");
        }
        let prefix = format!(r#"{{"id":{id},"#);
        let body = format!(r#"{{"id": {id}, "tool":"plugin_tool","params":{{"action":"list"}}}}"#);
        let (status, _, text) = http(server.addr(), "POST", "/api/tools/call", &with_auth, &body);
        assert_eq!(status, 200);
        assert!(text.starts_with(&prefix), "{body} -> {text}");
        let body = format!(r#"{{"id": {id}, "tool":"plugin_tool","params":{{"action":"nope"}}}}"#);
        let (status, _, text) = http(server.addr(), "POST", "/api/tools/call", &with_auth, &body);
        assert_eq!(status, 400);
        assert!(text.starts_with(&prefix), "{body} -> {text}");
        let (status, _, text) = http(server.addr(), "POST", "/api/tools/call", &[], &body);
        assert_eq!(status, 401);
        assert!(text.starts_with(&prefix), "401: {body} -> {text}");
    }
    server.stop_and_assert_plugins_gone();
}

/// True when the JSON `text` carries the member `"id":ID` exactly as written.
fn echoes(text: &str, id: &str) -> bool {
    text.contains(&format!("\"id\":{id},")) || text.contains(&format!("\"id\":{id}}}"))
}

/// `POST /mcp` serves a batch when `MCP-Protocol-Version` is absent (a 2025-03-26 client sends
/// none) or names 2025-03-26: one array of answers (200), or 202 without a body for only
/// notifications; an empty array and a batch under any other version are 400 (-32600). The
/// calls of a batch run concurrently.
#[test]
#[cfg_attr(
    windows,
    ignore = "needs python3 and stops serve with a console control event (docs/PLATFORMS.md)"
)]
fn batches_are_served_under_2025_03_26_only() {
    let dir = TempDir::new("http-batch");
    let config = dir.rendezvous_config();
    let server = ServeProcess::start(&dir, &config, &[]);
    let batch = json!([
        {"jsonrpc":"2.0","id":1,"method":"tools/list"},
        {"jsonrpc":"2.0","method":"notifications/initialized"},
        tool_request(json!("c"), json!({"action":"list"})),
        {"jsonrpc":"2.0","id":2,"method":"nope"}
    ]);
    for headers in [vec![], vec![("MCP-Protocol-Version", "2025-03-26")]] {
        let (status, _, answers) = post(&server, Some(TOKEN_INVOKE), &headers, &batch);
        assert_eq!(status, 200, "{headers:?}: {answers}");
        let ids: Vec<Value> = answers
            .as_array()
            .expect("one array")
            .iter()
            .map(|a| a["id"].clone())
            .collect();
        assert_eq!(ids, [json!(1), json!("c"), json!(2)], "{headers:?}");
        assert_eq!(answers[1]["result"]["isError"], false);
        assert_eq!(answers[2]["error"]["code"], -32601);
    }
    for version in ["2024-11-05", "2025-06-18", "2025-11-25"] {
        let headers = [("MCP-Protocol-Version", version)];
        let (status, _, answer) = post(&server, Some(TOKEN_INVOKE), &headers, &batch);
        assert_eq!(
            (status, answer["error"]["code"].clone()),
            (400, json!(-32600)),
            "{version}"
        );
    }
    let (status, _, answer) = post(&server, Some(TOKEN_INVOKE), &[], &json!([]));
    assert_eq!(
        (status, answer["error"]["code"].clone()),
        (400, json!(-32600))
    );
    let notifications = json!([{"jsonrpc":"2.0","method":"notifications/initialized"}]);
    let (status, _, answer) = post(&server, Some(TOKEN_INVOKE), &[], &notifications);
    assert_eq!((status, answer), (202, Value::Null));

    // Two calls that can only finish together: both meet.
    let mut calls = Vec::new();
    for plugin in ["a", "b"] {
        let describe = tool_request(
            json!(0),
            json!({"action":"describe","runner":"local","plugin":plugin,"tool":"meet"}),
        );
        let (_, _, described) = post(&server, Some(TOKEN_INVOKE), &[], &describe);
        let binding = described["result"]["structuredContent"]["binding"].clone();
        calls.push(tool_request(
            json!(plugin),
            json!({"action":"call","binding":binding,"arguments":{}}),
        ));
    }
    let (status, _, answers) = post(&server, Some(TOKEN_INVOKE), &[], &Value::Array(calls));
    assert_eq!(status, 200);
    let met = json!({"content":[{"type":"text","text":"met"}],"isError":false});
    assert_eq!(answers[0]["result"], met, "{answers}");
    assert_eq!(answers[1]["result"], met, "{answers}");
    server.stop();
}
