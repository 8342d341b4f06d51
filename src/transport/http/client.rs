//! The HTTP client of the `--server-url` mode: one POST per request on a fresh connection.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::{json, Value};

use super::{MAX_BODY_BYTES, TOOLS_CALL_PATH};
use crate::gateway::ToolOutput;
use crate::transport::TOOL_NAME;

/// How long the client waits for a TCP connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the client waits for a response: above the 120 s longest request timeout.
pub const READ_TIMEOUT: Duration = Duration::from_secs(130);
/// How long the client may take to write its request.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// The most bytes of status line and headers the client reads.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// A `serve` endpoint and the bearer token to present to it.
#[derive(Clone)]
pub struct HttpClient {
    authority: String,
    path: String,
    token: String,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("authority", &self.authority)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Why a client request produced no gateway output.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// No connection could be made: nothing was sent.
    Connect(String),
    /// The request may have reached the server but no complete response came back (reset,
    /// timeout, early close): the outcome is unknown.
    Lost(String),
    /// The server answered with something that is not a `plugin_tool` response.
    BadResponse(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Connect(m) | ClientError::Lost(m) | ClientError::BadResponse(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for ClientError {}

impl HttpClient {
    /// A client of `url` (`http://HOST[:PORT][/PREFIX]`; the request goes to
    /// `PREFIX/api/tools/call`) presenting `token`.
    pub fn new(url: &str, token: &str) -> Result<HttpClient, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or("the server URL must start with http:// (https is not supported)")?;
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err("the server URL needs a host (and no user info)".into());
        }
        if prefix.contains(['?', '#']) || !prefix.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the server URL path must be a plain path".into());
        }
        let authority = if authority.ends_with(']') || !authority.contains(':') {
            format!("{authority}:80")
        } else {
            authority.to_string()
        };
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the token must be one line of printable ASCII without spaces".into());
        }
        Ok(HttpClient {
            authority,
            path: format!("{}{TOOLS_CALL_PATH}", prefix.trim_end_matches('/')),
            token: token.to_string(),
        })
    }

    /// Sends one `plugin_tool` request and returns the server's output, whatever the status.
    pub fn plugin_tool(&self, params: &Value) -> Result<ToolOutput, ClientError> {
        let (status, body) = self.post(&json!({"tool": TOOL_NAME, "params": params}))?;
        let value: Value = serde_json::from_slice(&body).map_err(|_| {
            ClientError::BadResponse(format!("the server answered {status} without a JSON body"))
        })?;
        match (value.get("success"), value.get("output")) {
            (Some(Value::Bool(success)), Some(output)) => {
                Ok(ToolOutput::received(*success, output.clone()))
            }
            _ => Err(ClientError::BadResponse(format!(
                "the server answered {status} without a plugin_tool response"
            ))),
        }
    }

    /// One POST of `body`; the status and the response body.
    fn post(&self, body: &Value) -> Result<(u16, Vec<u8>), ClientError> {
        let addrs: Vec<SocketAddr> = self
            .authority
            .to_socket_addrs()
            .map_err(|e| ClientError::Connect(format!("cannot resolve {}: {e}", self.authority)))?
            .collect();
        let mut last = None;
        let mut stream = None;
        for addr in &addrs {
            match TcpStream::connect_timeout(addr, CONNECT_TIMEOUT) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let Some(mut stream) = stream else {
            let why = last.map_or("no address".to_string(), |e| e.to_string());
            return Err(ClientError::Connect(format!(
                "cannot connect to {}: {why}",
                self.authority
            )));
        };
        let lost = |what: &str, e: io::Error| ClientError::Lost(format!("{what}: {e}"));
        stream
            .set_read_timeout(Some(READ_TIMEOUT))
            .and_then(|()| stream.set_write_timeout(Some(WRITE_TIMEOUT)))
            .map_err(|e| ClientError::Connect(format!("cannot configure the connection: {e}")))?;
        let body = body.to_string();
        let mut request = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nAccept: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.path,
            self.authority,
            self.token,
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body.as_bytes());
        stream
            .write_all(&request)
            .and_then(|()| stream.flush())
            .map_err(|e| lost("sending the request failed", e))?;
        read_response(BufReader::new(stream))
    }
}

/// Reads one HTTP/1.x response: status, headers, and a body by Content-Length, chunked
/// encoding or connection close, each bounded by [`MAX_BODY_BYTES`].
fn read_response(mut reader: impl BufRead) -> Result<(u16, Vec<u8>), ClientError> {
    let lost = |e: io::Error| ClientError::Lost(format!("reading the response failed: {e}"));
    let early =
        || ClientError::Lost("the connection closed before the response was complete".into());
    let bad = |m: &str| ClientError::BadResponse(m.to_string());
    let mut budget = MAX_HEAD_BYTES;
    let status = loop {
        let line = read_line(&mut reader, &mut budget)
            .map_err(lost)?
            .ok_or_else(early)?;
        let mut parts = line.split(' ');
        let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
            return Err(bad("the server's status line is malformed"));
        };
        if !version.starts_with("HTTP/1.") {
            return Err(bad("the server does not speak HTTP/1.x"));
        }
        let code: u16 = code
            .parse()
            .map_err(|_| bad("the server's status code is malformed"))?;
        // Skip interim responses (100 Continue) with their headers.
        if (100..200).contains(&code) {
            while !read_line(&mut reader, &mut budget)
                .map_err(lost)?
                .ok_or_else(early)?
                .is_empty()
            {}
            continue;
        }
        break code;
    };
    let (mut length, mut chunked) = (None, false);
    loop {
        let line = read_line(&mut reader, &mut budget)
            .map_err(lost)?
            .ok_or_else(early)?;
        if line.is_empty() {
            break;
        }
        let Some((field, value)) = line.split_once(':') else {
            return Err(bad("a response header is malformed"));
        };
        let value = value.trim();
        if field.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| bad("the response Content-Length is malformed"))?,
            );
        } else if field.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    let too_large = || bad("the response body is larger than 1 MiB");
    let mut body = Vec::new();
    if chunked {
        let mut budget = MAX_HEAD_BYTES;
        loop {
            let line = read_line(&mut reader, &mut budget)
                .map_err(lost)?
                .ok_or_else(early)?;
            let size = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| bad("a response chunk size is malformed"))?;
            if size == 0 {
                break;
            }
            if body.len() + size > MAX_BODY_BYTES {
                return Err(too_large());
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader
                .read_exact(&mut body[start..])
                .map_err(|e| match e.kind() {
                    io::ErrorKind::UnexpectedEof => early(),
                    _ => lost(e),
                })?;
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf).map_err(lost)?;
        }
    } else if let Some(length) = length {
        if length > MAX_BODY_BYTES {
            return Err(too_large());
        }
        body.resize(length, 0);
        reader.read_exact(&mut body).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => early(),
            _ => lost(e),
        })?;
    } else {
        reader
            .take(MAX_BODY_BYTES as u64 + 1)
            .read_to_end(&mut body)
            .map_err(lost)?;
        if body.len() > MAX_BODY_BYTES {
            return Err(too_large());
        }
    }
    Ok((status, body))
}

/// One CRLF- (or LF-) terminated line, charged to `budget`; `None` at EOF before any byte.
fn read_line(reader: &mut impl BufRead, budget: &mut usize) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let limit = *budget as u64 + 1;
    reader.by_ref().take(limit).read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Ok(None);
    }
    if line.len() > *budget {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the response headers are too large",
        ));
    }
    *budget -= line.len();
    if line.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the connection closed inside the response headers",
        ));
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(String::from_utf8_lossy(&line).into_owned()))
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    const SECRET: &str = "0123456789abcdef-secret";

    #[test]
    fn client_url_parsing() {
        let c = HttpClient::new("http://127.0.0.1:8787", SECRET).unwrap();
        assert_eq!(
            (c.authority.as_str(), c.path.as_str()),
            ("127.0.0.1:8787", "/api/tools/call")
        );
        let c = HttpClient::new("http://example.test/base/", SECRET).unwrap();
        assert_eq!(
            (c.authority.as_str(), c.path.as_str()),
            ("example.test:80", "/base/api/tools/call")
        );
        let c = HttpClient::new("http://[::1]", SECRET).unwrap();
        assert_eq!(c.authority, "[::1]:80");
        assert!(HttpClient::new("https://h:1", SECRET).is_err());
        assert!(HttpClient::new("http://", SECRET).is_err());
        assert!(HttpClient::new("http://h:1", "two words").is_err());
        assert!(HttpClient::new("http://h:1", "line\r\nX: y").is_err());
        assert!(!format!("{c:?}").contains(SECRET));
    }

    #[test]
    fn client_reads_length_chunked_and_close_delimited_bodies() {
        let read = |raw: &str| read_response(Cursor::new(raw.as_bytes().to_vec()));
        let (status, body) =
            read("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                .unwrap();
        assert_eq!((status, body.as_slice()), (200, &b"{}"[..]));
        let (status, body) = read(
            "HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((status, body.as_slice()), (400, &b"abcde"[..]));
        let (_, body) = read("HTTP/1.0 200 OK\r\n\r\nuntil close").unwrap();
        assert_eq!(body, b"until close");
        assert!(matches!(read(""), Err(ClientError::Lost(_))));
        assert!(matches!(
            read("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"),
            Err(ClientError::Lost(_))
        ));
        assert!(matches!(
            read("HTTP/1.1 200 OK\r\nContent-"),
            Err(ClientError::Lost(_))
        ));
        assert!(matches!(
            read("HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n"),
            Err(ClientError::BadResponse(_))
        ));
        assert!(matches!(
            read("SSH-2.0 x\r\n\r\n"),
            Err(ClientError::BadResponse(_))
        ));
    }
}
