//! Streamable HTTP request metadata: the routing headers of a stateless request must match its
//! body (`MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for `tools/call`), else 400 with
//! -32020 (HeaderMismatch). `Mcp-Name` may carry the Base64 sentinel form `=?base64?…?=`.
//!
//! A handshake-era request carries no `_meta`; its `MCP-Protocol-Version` header, when present,
//! must name a supported handshake version (else 400: -32600 for an unknown version, -32602 for
//! the stateless version, whose requests must carry `_meta`); under the stateless version a
//! method that revision removed (`initialize`, `ping`, `logging/setLevel`) is 404 with -32601.

use serde_json::Value;

use super::jsonrpc::{
    Incoming, RequestId, RpcError, HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST,
    METHOD_NOT_FOUND,
};
use super::session::{Reply, META_PROTOCOL_VERSION};
use super::version;

/// The routing headers of one `POST /mcp` (each `None` when absent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoutingHeaders {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// `Mcp-Method`.
    pub method: Option<String>,
    /// `Mcp-Name`.
    pub name: Option<String>,
}

/// Checks the headers against the message; the 400 reply when they do not match.
pub fn check(message: &Incoming, headers: &RoutingHeaders) -> Result<(), Reply> {
    let Incoming::Request { id, method, params } = message else {
        // No header rules are defined for notification or response POSTs.
        return Ok(());
    };
    let meta_version = params
        .get("_meta")
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    let Some(meta_version) = meta_version else {
        return match headers.protocol_version.as_deref() {
            Some(v) if !version::is_supported(v) => Err(bad(
                id,
                INVALID_REQUEST,
                "unsupported MCP-Protocol-Version header".into(),
            )),
            // A method the stateless revision removed, under its version: unknown (404).
            Some(v) if version::is_stateless(v) && version::removed_in_stateless(method) => {
                Err(Reply {
                    message: RpcError::new(METHOD_NOT_FOUND, "method not found").response(id),
                    http_status: 404,
                })
            }
            // A stateless version in the header, but no per-request `_meta`: malformed.
            Some(v) if version::is_stateless(v) => Err(bad(
                id,
                INVALID_PARAMS,
                format!("a {v} request needs _meta with io.modelcontextprotocol/protocolVersion"),
            )),
            _ => Ok(()),
        };
    };
    if headers.protocol_version.as_deref() != Some(meta_version) {
        return Err(mismatch(
            id,
            "MCP-Protocol-Version",
            "_meta protocolVersion",
        ));
    }
    if headers.method.as_deref() != Some(method.as_str()) {
        return Err(mismatch(id, "Mcp-Method", "method"));
    }
    if method == "tools/call" {
        let body_name = params.get("name").and_then(Value::as_str);
        let header_name = headers.name.as_deref().and_then(decode_sentinel);
        if body_name.is_none() || header_name.as_deref() != body_name {
            return Err(mismatch(id, "Mcp-Name", "params.name"));
        }
    }
    Ok(())
}

fn mismatch(id: &RequestId, header: &str, field: &str) -> Reply {
    bad(
        id,
        HEADER_MISMATCH,
        format!("Header mismatch: the {header} header is missing or does not match {field}"),
    )
}

fn bad(id: &RequestId, code: i64, message: String) -> Reply {
    Reply {
        message: RpcError::new(code, message).response(id),
        http_status: 400,
    }
}

/// A header value in plain or `=?base64?…?=` form, decoded; `None` when the encoding is invalid.
fn decode_sentinel(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(base64_decode(encoded)?).ok(),
        None => Some(value.to_string()),
    }
}

/// Standard Base64 (with or without padding) to bytes.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::alphabet::STANDARD;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    use base64::Engine;
    const EITHER_PADDING: GeneralPurpose = GeneralPurpose::new(
        &STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    EITHER_PADDING.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::jsonrpc::parse;

    fn headers(v: Option<&str>, m: Option<&str>, n: Option<&str>) -> RoutingHeaders {
        RoutingHeaders {
            protocol_version: v.map(Into::into),
            method: m.map(Into::into),
            name: n.map(Into::into),
        }
    }

    fn call() -> Incoming {
        parse(
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
                "name":"plugin_tool","arguments":{},
                "_meta":{META_PROTOCOL_VERSION:"2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities":{}}}})
            .to_string()
            .as_bytes(),
        )
        .unwrap()
    }

    fn code(result: Result<(), Reply>) -> i64 {
        let reply = result.unwrap_err();
        assert_eq!(reply.http_status, 400);
        reply.message.to_value()["error"]["code"].as_i64().unwrap()
    }

    #[test]
    fn stateless_headers_must_match_the_body() {
        let ok = headers(Some("2026-07-28"), Some("tools/call"), Some("plugin_tool"));
        assert!(check(&call(), &ok).is_ok());
        let encoded = headers(
            Some("2026-07-28"),
            Some("tools/call"),
            Some("=?base64?cGx1Z2luX3Rvb2w=?="),
        );
        assert!(check(&call(), &encoded).is_ok());
        for bad in [
            headers(None, Some("tools/call"), Some("plugin_tool")),
            headers(Some("2025-11-25"), Some("tools/call"), Some("plugin_tool")),
            headers(Some("2026-07-28"), None, Some("plugin_tool")),
            headers(Some("2026-07-28"), Some("tools/list"), Some("plugin_tool")),
            headers(Some("2026-07-28"), Some("tools/call"), None),
            headers(Some("2026-07-28"), Some("tools/call"), Some("other")),
            headers(
                Some("2026-07-28"),
                Some("tools/call"),
                Some("=?base64?!!?="),
            ),
        ] {
            assert_eq!(code(check(&call(), &bad)), HEADER_MISMATCH, "{bad:?}");
        }
    }

    #[test]
    fn handshake_era_requests_need_a_supported_version_header_if_any() {
        let list = parse(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).unwrap();
        assert!(check(&list, &RoutingHeaders::default()).is_ok());
        assert!(check(&list, &headers(Some("2025-06-18"), None, None)).is_ok());
        assert_eq!(
            code(check(&list, &headers(Some("1999-01-01"), None, None))),
            INVALID_REQUEST
        );
        // A stateless version in the header needs the body's `_meta`.
        let stateless = headers(Some("2026-07-28"), Some("tools/list"), None);
        assert_eq!(code(check(&list, &stateless)), INVALID_PARAMS);
    }

    #[test]
    fn base64_decodes() {
        assert_eq!(
            base64_decode("SGVsbG8sIOS4lueVjA==").unwrap(),
            "Hello, 世界".as_bytes()
        );
        assert_eq!(base64_decode("").unwrap(), b"");
        assert!(base64_decode("a*b").is_none());
    }
}
