//! Browser access to the API routes (`/mcp`, `/api/tools/call`): which `Origin` is allowed, and
//! the CORS headers that let a page on an allowed origin call them.
//!
//! An origin is allowed when it is one of the `--allow-origin` values (compared ASCII
//! case-insensitively), or when it is the server's own origin on a loopback host: `http://` +
//! the request's `Host`, where that host is `localhost`, `127.0.0.1` or `[::1]` (with its port,
//! if any). A DNS-rebinding page has the attacker's host name in both `Host` and `Origin`, so
//! only the loopback names qualify. A request without `Origin` is not from a browser page and
//! is not judged here.

use super::wire::Head;

/// The methods a preflight allows.
pub const ALLOW_METHODS: &str = "POST";
/// The request headers a preflight allows: the bearer token, the JSON body, and MCP's own.
pub const ALLOW_HEADERS: &str = "Authorization, Content-Type, Accept, MCP-Protocol-Version, \
                                 Mcp-Session-Id, Mcp-Method, Mcp-Name, Last-Event-ID";
/// The response headers a page may read: MCP's own, the challenge of a 401, the pause of a
/// 503, and the runner instance of `/api/tools/call`.
pub const EXPOSE_HEADERS: &str = "MCP-Protocol-Version, Mcp-Session-Id, WWW-Authenticate, \
                                  Retry-After, Webcodex-Runner-Instance";
/// How long (seconds) a browser may cache a preflight's answer.
pub const MAX_AGE_SECS: u32 = 600;

/// What the `Origin` header of a request says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OriginVerdict {
    /// No `Origin` header: not a browser page's request.
    Absent,
    /// One `Origin` header, allowed: its value, echoed in `Access-Control-Allow-Origin`.
    Allowed(String),
    /// An origin that is not allowed, or `Origin` given more than once.
    Refused,
}

impl OriginVerdict {
    /// Judges the `Origin` of `head` against the `--allow-origin` values.
    pub(crate) fn of(head: &Head, allowed: &[String]) -> OriginVerdict {
        let mut origins = head.values("Origin");
        let origin = match (origins.next(), origins.next()) {
            (None, _) => return OriginVerdict::Absent,
            (Some(origin), None) => origin,
            (Some(_), Some(_)) => return OriginVerdict::Refused,
        };
        let listed = allowed.iter().any(|a| a.eq_ignore_ascii_case(origin));
        if listed || is_own_loopback_origin(origin, head.unique("Host")) {
            OriginVerdict::Allowed(origin.to_string())
        } else {
            OriginVerdict::Refused
        }
    }

    /// The headers of a preflight's 204 for an allowed origin; `None` otherwise.
    pub(crate) fn preflight_headers(&self) -> Option<Vec<(&'static str, String)>> {
        let OriginVerdict::Allowed(origin) = self else {
            return None;
        };
        Some(vec![
            ("Access-Control-Allow-Origin", origin.clone()),
            ("Access-Control-Allow-Methods", ALLOW_METHODS.to_string()),
            ("Access-Control-Allow-Headers", ALLOW_HEADERS.to_string()),
            ("Access-Control-Max-Age", MAX_AGE_SECS.to_string()),
            ("Vary", "Origin".to_string()),
        ])
    }

    /// The headers of every other answer to an allowed origin; `None` otherwise.
    pub(crate) fn answer_headers(&self) -> Option<Vec<(&'static str, String)>> {
        let OriginVerdict::Allowed(origin) = self else {
            return None;
        };
        Some(vec![
            ("Access-Control-Allow-Origin", origin.clone()),
            ("Access-Control-Expose-Headers", EXPOSE_HEADERS.to_string()),
            ("Vary", "Origin".to_string()),
        ])
    }
}

/// True when `origin` is `http://` + `host` and `host` names a loopback address (`localhost`,
/// `127.0.0.1` or `[::1]`, each with an optional port).
fn is_own_loopback_origin(origin: &str, host: Option<&str>) -> bool {
    let Some(host) = host else {
        return false;
    };
    let Some(scheme) = origin.get(..7) else {
        return false;
    };
    scheme.eq_ignore_ascii_case("http://")
        && origin[7..].eq_ignore_ascii_case(host)
        && is_loopback_host(host)
}

/// True for `localhost`, `127.0.0.1` or `[::1]`, optionally followed by `:PORT` (digits).
fn is_loopback_host(host: &str) -> bool {
    let (name, port) = match host.rfind(':') {
        // A `:` inside `[::1]` is not a port separator.
        Some(at) if !host[at..].contains(']') => (&host[..at], Some(&host[at + 1..])),
        _ => (host, None),
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    port_ok
        && ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name))
}

/// Checks one `--allow-origin` value: a browser origin, `http://` or `https://` + a host and
/// an optional port, with no path. `*` and `null` are refused: each origin must be named.
pub fn check_allowed_origin(value: &str) -> Result<(), String> {
    if value == "*" {
        return Err(
            "`*` would let every web page call this server; list the origins instead, one \
             --allow-origin each (e.g. --allow-origin http://localhost:3000)"
                .into(),
        );
    }
    let lower = value.to_ascii_lowercase();
    let host = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"));
    let well_formed = host.is_some_and(|h| {
        !h.is_empty()
            && h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-.:[]_".contains(&b))
    });
    if !well_formed {
        return Err(format!(
            "{value:?} is not a browser origin; write the scheme, host and port only, as the \
             browser sends them (e.g. http://localhost:3000, with no path and no trailing /)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_origin_counts_only_on_loopback_hosts() {
        for (origin, host) in [
            ("http://localhost:8787", "localhost:8787"),
            ("http://127.0.0.1:8787", "127.0.0.1:8787"),
            ("http://[::1]:8787", "[::1]:8787"),
            ("http://LOCALHOST:1", "localhost:1"),
            ("http://localhost", "localhost"),
            ("http://[::1]", "[::1]"),
        ] {
            assert!(
                is_own_loopback_origin(origin, Some(host)),
                "{origin} {host}"
            );
        }
        for (origin, host) in [
            ("http://evil.example:8787", "evil.example:8787"),
            ("http://localhost:8788", "localhost:8787"),
            ("https://localhost:8787", "localhost:8787"),
            ("http://127.0.0.1:8787", "localhost:8787"),
            ("http://localhost.evil.example", "localhost.evil.example"),
            ("http://127.0.0.1:", "127.0.0.1:"),
            ("http://127.0.0.1:x", "127.0.0.1:x"),
            ("http://[::2]:1", "[::2]:1"),
            ("null", "localhost"),
            ("http://", ""),
        ] {
            assert!(
                !is_own_loopback_origin(origin, Some(host)),
                "{origin} {host}"
            );
        }
        assert!(!is_own_loopback_origin("http://localhost", None));
    }

    #[test]
    fn allow_origin_values_are_origins() {
        for ok in [
            "http://localhost:3000",
            "https://app.example.com",
            "http://[::1]:8080",
        ] {
            assert_eq!(check_allowed_origin(ok), Ok(()), "{ok}");
        }
        for bad in [
            "*",
            "null",
            "localhost:3000",
            "http://",
            "http://localhost:3000/",
            "https://app.example.com/path",
            "http://a b",
            "",
        ] {
            assert!(check_allowed_origin(bad).is_err(), "{bad}");
        }
        assert!(check_allowed_origin("*")
            .unwrap_err()
            .contains("list the origins"));
    }
}
