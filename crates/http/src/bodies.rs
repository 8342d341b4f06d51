//! The failure bodies `{"id"?,"success":false,"output"}` of `/api/tools/call` that both the
//! router ([`super::server`]) and the connection layer ([`super::listener`]) answer with.

use serde::Serialize;
use serde_json::Value;

use webcodex_plugin_host::{invalid_request_output, saturated_output};
use webcodex_plugin_host::{RequestId, ResponseBody};

/// The 503 body of `/api/tools/call` for a connection beyond the connection limit.
pub(super) fn saturated_body() -> ResponseBody {
    failure_body(None, saturated_output().into_json())
}

/// The failure body `{"id"?,"success":false,"output":output}` of `/api/tools/call`.
pub(super) fn failure_body(id: Option<RequestId>, output: Value) -> ResponseBody {
    ResponseBody {
        id,
        success: false,
        output,
    }
}

/// The `invalid_request` failure body of `/api/tools/call`, without an id.
pub(super) fn transport_failure_body(message: &str) -> ResponseBody {
    failure_body(None, transport_failure(message))
}

/// A body serialized by serde_json (ids stay as received).
pub(super) fn json_bytes<T: Serialize + ?Sized>(body: &T) -> Vec<u8> {
    // Not reachable for this crate's bodies (string keys, no custom errors).
    serde_json::to_vec(body).unwrap_or_else(|e| {
        log::error!("http: a response body could not be serialized: {e}");
        b"{}".to_vec()
    })
}

/// The `invalid_request` failure output for `message`.
pub(super) fn transport_failure(message: &str) -> Value {
    invalid_request_output(message).into_json()
}
