//! Not API: the entry points of the fuzz targets in `fuzz/` — a read body answered as the
//! server answers it, arbitrary bytes read as requests as the listener reads them, and a
//! binding's text opened by a cluster key. Nothing
//! here is stable or covered by semver; it may change in any release. Always compiled (no
//! feature switches it on), and hidden from the docs.

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::time::Instant;

use serde_json::Value;
use webcodex_plugin_host::Caller;
use webcodex_plugin_host::Dispatcher;

pub use super::wire::BodyError;
use super::wire::{Conn, REQUEST_DEADLINE};

/// A request body answered as `POST /api/tools/call` answers a body it read: the status and the
/// response body.
pub fn fuzz_answer_body(dispatcher: &Dispatcher, caller: &Caller, body: &[u8]) -> (u16, Value) {
    let (status, response) = super::server::answer_body(dispatcher, caller, body);
    let response = webcodex_plugin_host::response_body(response.id, response.output);
    (status, response.to_value())
}

/// One request read by [`fuzz_read_requests`].
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
/// writing that answer).
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

/// The fuzz target `sealed_binding`: `data` as binding text opened by a fixed key, and as
/// contents sealed and opened again (the round trip must give them back), then read as a
/// binding's target. Never panics.
pub fn fuzz_sealed_binding(data: &[u8]) {
    use crate::cluster::{ClusterKeys, KeySet, DEFAULT_BINDING_TTL};
    use webcodex_plugin_host::SealedTarget;
    let set = KeySet::parse(
        "[[keys]]\nid = \"fuzz\"\nsecret = \"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\"\n",
    )
    .expect("the fuzz key");
    let keys = ClusterKeys::new(set, Some(DEFAULT_BINDING_TTL)).expect("randomness");
    if let Ok(text) = std::str::from_utf8(data) {
        if let Some(contents) = keys.open_at(text, 1) {
            let _ = SealedTarget::decode(&contents);
        }
    }
    if let Some(text) = keys.seal_at(data, 1) {
        assert_eq!(keys.open_at(&text, 2).as_deref(), Some(data));
    }
    if let Some(target) = SealedTarget::decode(data) {
        assert_eq!(target.encode().as_deref(), Some(data));
    }
}
