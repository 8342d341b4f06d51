//! The failure bodies `{"id"?,"success":false,"output"}` of `/api/tools/call` that both the
//! router ([`super::server`]) and the connection layer ([`super::listener`]) answer with.

use serde_json::{Map, Value};

use crate::transport::dispatcher::{invalid_request, saturated};

/// The 503 body of `/api/tools/call` for a connection beyond the connection limit.
pub(super) fn saturated_body() -> Value {
    failure_body(None, &saturated().output)
}

/// The failure body `{"id"?,"success":false,"output":output}` of `/api/tools/call`.
pub(super) fn failure_body(id: Option<&Value>, output: &Value) -> Value {
    let mut body = Map::new();
    if let Some(id) = id {
        body.insert("id".into(), id.clone());
    }
    body.insert("success".into(), false.into());
    body.insert("output".into(), output.clone());
    Value::Object(body)
}

/// The `invalid_request` failure body of `/api/tools/call`, without an id.
pub(super) fn transport_failure_body(message: &str) -> Value {
    failure_body(None, &transport_failure(message))
}

/// The `invalid_request` failure output for `message`.
pub(super) fn transport_failure(message: &str) -> Value {
    invalid_request(message).output
}
