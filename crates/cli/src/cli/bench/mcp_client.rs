//! The bench's MCP client: `tools/call` of `plugin_tool` on a `serve` endpoint's `/mcp`
//! (Streamable HTTP, stateless, protocol 2025-06-18), one keep-alive HTTP/1.1 connection per
//! client, `http://` only. Kept small so that what it adds to a call is the request's
//! formatting, two syscalls and the answer's parsing, as in any lean client.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use super::record::Outcome;

/// How long to connect, and to wait for an answer's head and body.
const TIMEOUT: Duration = Duration::from_secs(60);
/// The largest answer head and body read.
const MAX_HEAD: usize = 16 * 1024;
const MAX_BODY: usize = 16 * 1024 * 1024;
/// The MCP revision the client speaks (the handshake era: no `_meta` needed).
const PROTOCOL: &str = "2025-06-18";

/// A client of one `/mcp` endpoint.
pub(super) struct McpClient {
    /// `host:port`.
    authority: String,
    /// The request head up to `Content-Length`.
    head: String,
    conn: Mutex<Option<BufReader<TcpStream>>>,
    next_id: AtomicU64,
}

impl McpClient {
    /// A client of `URL/mcp` (`http://HOST[:PORT][/PREFIX]`) presenting `token`.
    pub fn new(url: &str, token: &str) -> Result<McpClient, String> {
        let rest = url.strip_prefix("http://").ok_or(
            "--mcp benches plain http:// endpoints (give the serve's http address, e.g. on \
             loopback); https is benched on /api/tools/call without --mcp",
        )?;
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') || prefix.contains(['?', '#', ' ']) {
            return Err("--server-url: give http://HOST[:PORT][/PREFIX]".into());
        }
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the token must be one line of printable ASCII without spaces".into());
        }
        let authority = if authority.contains(':') && !authority.ends_with(']') {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        let head = format!(
            "POST {}/mcp HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: {PROTOCOL}\r\n",
            prefix.trim_end_matches('/')
        );
        Ok(McpClient {
            authority,
            head,
            conn: Mutex::new(None),
            next_id: AtomicU64::new(1),
        })
    }

    /// A `describe` through `tools/call`; the binding of its output.
    pub fn describe(&self, params: &Value) -> Result<String, String> {
        let (outcome, reason, body) = self.call_tool(params)?;
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        match (
            outcome,
            value["result"]["structuredContent"]["binding"].as_str(),
        ) {
            (Outcome::Ok, Some(binding)) => Ok(binding.to_string()),
            _ => Err(format!(
                "describe over MCP: {}",
                reason.unwrap_or_else(|| "no binding in the answer".into())
            )),
        }
    }

    /// One `tools/call` of `plugin_tool` with `params`: how it ended (a result with `isError`
    /// whose structured content is a gateway failure object is a failure; any other `isError`
    /// result is the tool's), the failure's reason, and the answer's body.
    pub fn call_tool(&self, params: &Value) -> Result<(Outcome, Option<String>, Vec<u8>), String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"plugin_tool","arguments":{params}}}}}"#
        );
        let (status, answer) = self.post(body.as_bytes())?;
        let value: Value = serde_json::from_slice(&answer)
            .map_err(|_| format!("the server answered {status} without a JSON body"))?;
        if let Some(error) = value.get("error") {
            let message = error["message"].as_str().unwrap_or("");
            return Ok((
                Outcome::Failed,
                Some(format!("JSON-RPC error {}: {message}", error["code"])),
                answer,
            ));
        }
        let result = &value["result"];
        let is_error = result["isError"]
            .as_bool()
            .ok_or_else(|| format!("the server answered {status} without a tools/call result"))?;
        if !is_error {
            return Ok((Outcome::Ok, None, answer));
        }
        let failure = &result["structuredContent"];
        if failure.get("error").is_some() && failure.get("dispatch").is_some() {
            let reason = format!(
                "{}: {} ({})",
                failure["error"]["code"].as_str().unwrap_or("unknown"),
                failure["error"]["message"].as_str().unwrap_or(""),
                failure["dispatch"].as_str().unwrap_or("")
            );
            return Ok((Outcome::Failed, Some(reason), answer));
        }
        Ok((Outcome::ToolError, None, answer))
    }

    /// One POST on the kept connection (or a new one); the status and body. A connection that
    /// failed or that the server closes is dropped.
    fn post(&self, body: &[u8]) -> Result<(u16, Vec<u8>), String> {
        let mut guard = self.conn.lock();
        if guard.is_none() {
            *guard = Some(self.connect()?);
        }
        let conn = guard.as_mut().ok_or("no connection")?;
        let result = exchange(conn, &self.head, body);
        match result {
            Ok((status, body, keep)) => {
                if !keep {
                    *guard = None;
                }
                Ok((status, body))
            }
            Err(e) => {
                *guard = None;
                Err(e)
            }
        }
    }

    fn connect(&self) -> Result<BufReader<TcpStream>, String> {
        let addrs = self
            .authority
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", self.authority))?;
        let mut last = format!("{} has no address", self.authority);
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, TIMEOUT) {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    let _ = stream.set_read_timeout(Some(TIMEOUT));
                    let _ = stream.set_write_timeout(Some(TIMEOUT));
                    return Ok(BufReader::with_capacity(64 * 1024, stream));
                }
                Err(e) => last = format!("cannot connect to {}: {e}", self.authority),
            }
        }
        Err(last)
    }
}

/// Writes one request and reads its answer: (status, body, connection reusable).
fn exchange(
    conn: &mut BufReader<TcpStream>,
    head: &str,
    body: &[u8],
) -> Result<(u16, Vec<u8>, bool), String> {
    let mut request = Vec::with_capacity(head.len() + body.len() + 32);
    request.extend_from_slice(head.as_bytes());
    request.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    request.extend_from_slice(body);
    conn.get_mut()
        .write_all(&request)
        .map_err(|e| format!("the request could not be sent: {e}"))?;
    // The head: read until the blank line.
    let mut raw = Vec::with_capacity(512);
    loop {
        let n = conn
            .read_until(b'\n', &mut raw)
            .map_err(|e| format!("the answer was lost: {e}"))?;
        if n == 0 {
            return Err("the server closed the connection without an answer".into());
        }
        if raw.ends_with(b"\r\n\r\n") {
            break;
        }
        if raw.len() > MAX_HEAD {
            return Err("the answer's head is too large".into());
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    response
        .parse(&raw)
        .map_err(|e| format!("the answer's head is not HTTP: {e}"))?;
    let status = response.code.unwrap_or(0);
    let mut length = 0usize;
    let mut keep = response.version == Some(1);
    for h in response.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            length = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .ok_or("the answer's Content-Length is not a number")?;
        } else if h.name.eq_ignore_ascii_case("connection") {
            keep = !h.value.eq_ignore_ascii_case(b"close");
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err("the answer is chunked; the bench reads Content-Length bodies".into());
        }
    }
    if length > MAX_BODY {
        return Err("the answer's body is too large".into());
    }
    let mut body = vec![0; length];
    conn.read_exact(&mut body)
        .map_err(|e| format!("the answer's body was lost: {e}"))?;
    Ok((status, body, keep))
}
