//! Reading requests from arbitrary bytes as the listener does, for the fuzz targets in `fuzz/`
//! (not public API).

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::time::Instant;

use super::wire::{BodyError, Conn, REQUEST_DEADLINE};

/// One request read by [`fuzz_read_requests`] (fuzz targets only, not public API).
#[doc(hidden)]
#[derive(Debug)]
pub struct FuzzRequest {
    /// The request method.
    pub method: String,
    /// The request target without its query string.
    pub path: String,
    /// The declared `Content-Length`; `None` for a chunked body.
    pub declared_length: Option<u64>,
    /// Whether the connection would stay open after this request.
    pub keep_alive: bool,
    /// The body read (its length), or why it was not.
    pub body: Result<usize, BodyError>,
}

/// Feeds `input` to the server side of a loopback connection as the whole stream a client
/// sent, and reads requests from it as the listener does (head, then a body of at most
/// `max_body` bytes, or the body dropped when larger), until the stream ends or a request
/// fails. Returns the requests read and the status a failed head is answered with (after
/// writing that answer). For the fuzz targets in `fuzz/` (not public API).
#[doc(hidden)]
pub fn fuzz_read_requests(input: &[u8], max_body: usize) -> (Vec<FuzzRequest>, Option<u16>) {
    use std::net::TcpListener;
    use std::sync::OnceLock;
    static LISTENER: OnceLock<TcpListener> = OnceLock::new();
    let listener = LISTENER.get_or_init(|| {
        TcpListener::bind("127.0.0.1:0").expect("a loopback listener for the fuzz target")
    });
    let addr = listener.local_addr().expect("a bound address");
    let mut client = TcpStream::connect(addr).expect("a loopback connection");
    let (server, _) = listener
        .accept()
        .expect("the loopback connection is accepted");
    // The input fits in the loopback buffers: written whole before the server side reads.
    client.write_all(input).expect("the input is written");
    client
        .shutdown(Shutdown::Write)
        .expect("the client side ends");
    let mut conn = Conn::new(server);
    let mut requests = Vec::new();
    // Each head read consumes input, so the stream's end ends this loop.
    loop {
        let deadline = Instant::now() + REQUEST_DEADLINE;
        let head = match conn.read_head(deadline, deadline) {
            Ok(head) => head,
            Err(error) => {
                let status = error.status();
                if let Some(status) = status {
                    let _ = conn.write_response(status, &[], b"{}", false);
                }
                return (requests, status);
            }
        };
        let framing = head.framing();
        let body = if framing.exceeds(max_body) {
            if Conn::discardable(framing) && conn.discard_body(framing, deadline) {
                Err(BodyError::TooLarge)
            } else {
                Err(BodyError::Broken)
            }
        } else {
            conn.read_body(framing, max_body, deadline).map(|b| b.len())
        };
        let stop = (body.is_err() && body != Err(BodyError::TooLarge)) || !head.keep_alive();
        requests.push(FuzzRequest {
            method: head.method().to_string(),
            path: head.path().to_string(),
            declared_length: head.declared_length(),
            keep_alive: head.keep_alive(),
            body,
        });
        if stop {
            return (requests, None);
        }
    }
}
