//! The bytes of an HTTP/1.1 connection, as the server reads them: request heads (httparse),
//! `Content-Length` and chunked bodies, pipelined requests.
//!
//! The input is everything a client sent before closing its side. Reading never panics nor
//! loops; a failed head is answered 400, 431 or 501 (never 408: the input is all there); a
//! body read whole has its declared length and at most the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use webcodex_plugin_http::__private::{fuzz_read_requests, BodyError};

/// Small, so that bodies over the limit (413, dropped or not) are reached too.
const MAX_BODY: usize = 256;

fuzz_target!(|data: &[u8]| {
    let (requests, status) = fuzz_read_requests(data, MAX_BODY);
    assert!(
        matches!(status, None | Some(400 | 431 | 501)),
        "unexpected status {status:?}"
    );
    for (i, request) in requests.iter().enumerate() {
        assert!(!request.method.is_empty());
        assert!(!request.path.contains('?'));
        if let Ok(len) = request.body {
            assert!(len <= MAX_BODY);
            if let Some(declared) = request.declared_length {
                assert_eq!(len as u64, declared);
            }
        }
        // Only the last request may have ended the connection.
        if i + 1 < requests.len() {
            assert!(request.keep_alive);
            assert!(matches!(request.body, Ok(_) | Err(BodyError::TooLarge)));
        }
    }
});
