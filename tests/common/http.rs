//! A test that plays an HTTP server: reading one raw HTTP/1.1 request from a connection.

use std::io::Read;

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
