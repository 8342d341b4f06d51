//! Raw HTTP/1.1 for tests: reading one request (a test that plays a server) and parsing one
//! response (a test that plays a client).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::{json, Value};

/// A raw HTTP response: status, headers (lower-case names) and body.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    /// The one value of header `name` (case-insensitive); panics when absent or repeated.
    pub fn header(&self, name: &str) -> &str {
        let found: Vec<&str> = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(found.len(), 1, "header {name}: {:?}", self.headers);
        found[0]
    }

    /// The first value of header `name` (case-insensitive), if any.
    pub fn first_header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; panics with the body when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body not JSON ({e}): {:?}", self.text()))
    }
}

/// Parses a whole response (as read up to EOF): status line, headers, and the rest as body.
pub fn parse_response(bytes: &[u8]) -> RawResponse {
    let end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| {
            panic!(
                "no complete response head: {:?}",
                String::from_utf8_lossy(bytes)
            )
        });
    let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("bad status line: {head:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    RawResponse {
        status,
        headers,
        body: bytes[end + 4..].to_vec(),
    }
}

/// The bytes of one request (head and `Content-Length` body), or what came before EOF or a read
/// error (a read timeout set on the stream bounds the wait).
pub fn read_request(stream: &mut impl Read) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !request_complete(&buf) {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// True when `buf` holds a whole request: headers and `Content-Length` bytes of body.
pub fn request_complete(buf: &[u8]) -> bool {
    let text = String::from_utf8_lossy(buf);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    body.len() >= content_length(head)
}

/// The `Content-Length` of a request head (0 when absent).
fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// One raw HTTP/1.1 `POST /api/tools/call` of `plugin_tool` with `params` and bearer `token`
/// (`Connection: close`), its response read to the end within `read_timeout`.
pub fn post_tool(
    addr: SocketAddr,
    token: &str,
    params: &Value,
    read_timeout: Duration,
) -> RawResponse {
    let body = json!({"tool": "plugin_tool", "params": params}).to_string();
    let raw = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(read_timeout)).unwrap();
    stream.write_all(raw.as_bytes()).expect("write request");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read response");
    let _ = stream.shutdown(Shutdown::Both);
    parse_response(&response)
}
