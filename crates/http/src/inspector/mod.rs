//! The plugin inspector: one self-contained page that `serve` answers at `GET /`.
//!
//! The page, its script and its style sheet are embedded in the binary (no build step, nothing
//! fetched from elsewhere). They carry no data: the page asks for a bearer token, keeps it for
//! the tab only, and then calls the same `POST /api/tools/call` as every other client.
//! To show only the controls a token may use, it asks `GET /api/whoami` (authenticated), which
//! answers the token's scopes and nothing else (see docs/DECISIONS.md, HTTP transport).
//!
//! Every inspector response carries [`SECURITY_HEADERS`]: a strict Content-Security-Policy (no
//! inline script or style, connections only to this origin, no framing), `nosniff`,
//! `X-Frame-Options: DENY` and `Referrer-Policy: no-referrer`. The script renders everything a
//! plugin supplies as text (`textContent`, `createElement`), never as HTML.

use serde_json::{json, Value};

use super::listener::Exchange;
use webcodex_plugin_host::{Scope, Scopes};

/// The page itself.
pub const PAGE_PATH: &str = "/";
/// The page's script (a separate file: the policy forbids inline script).
pub const SCRIPT_PATH: &str = "/inspector.js";
/// The page's style sheet.
pub const STYLE_PATH: &str = "/inspector.css";
/// The scopes of the presented bearer token: `{"scopes":[…]}`.
pub const WHOAMI_PATH: &str = "/api/whoami";

/// The Content-Security-Policy of every inspector response.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'none'";

/// Headers sent with the page, its assets and the whoami answer.
pub const SECURITY_HEADERS: [(&str, &str); 7] = [
    ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
];

const PAGE_HTML: &str = include_str!("index.html");
const SCRIPT_JS: &str = include_str!("inspector.js");
const STYLE_CSS: &str = include_str!("inspector.css");

/// An inspector path, as routed by the HTTP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InspectorRoute {
    /// A static asset: the page, its script or its style sheet.
    Asset {
        /// The `Content-Type` to answer with.
        content_type: &'static str,
        /// The embedded body.
        body: &'static str,
    },
    /// `GET /api/whoami`.
    WhoAmI,
}

impl InspectorRoute {
    /// The inspector route of `path` (query string already removed), if it is one.
    pub(crate) fn of(path: &str) -> Option<InspectorRoute> {
        let asset = |content_type, body| Some(InspectorRoute::Asset { content_type, body });
        match path {
            PAGE_PATH | "/index.html" => asset("text/html; charset=utf-8", PAGE_HTML),
            SCRIPT_PATH => asset("text/javascript; charset=utf-8", SCRIPT_JS),
            STYLE_PATH => asset("text/css; charset=utf-8", STYLE_CSS),
            WHOAMI_PATH => Some(InspectorRoute::WhoAmI),
            _ => None,
        }
    }
}

/// Whether `path` (query string already removed) is one of the inspector's routes.
pub fn is_route(path: &str) -> bool {
    InspectorRoute::of(path).is_some()
}

/// The whoami body for a token holding `scopes`: the scope names in wire order, nothing else.
pub(crate) fn whoami_body(scopes: Scopes) -> Value {
    let names: Vec<&str> = Scope::ALL
        .into_iter()
        .filter(|s| scopes.contains(*s))
        .map(Scope::as_str)
        .collect();
    json!({ "scopes": names })
}

/// Answers `request` with `status`, `body` and the [`SECURITY_HEADERS`] plus `extra` headers.
/// The connection's own thread writes it, within the write deadline, so a client that does
/// not read holds only its connection.
pub(crate) fn respond(
    request: &mut Exchange<'_>,
    status: u16,
    content_type: &str,
    body: &[u8],
    extra: &[(&str, &str)],
) {
    let headers: Vec<(&str, &str)> = std::iter::once(("Content-Type", content_type))
        .chain(SECURITY_HEADERS)
        .chain(extra.iter().copied())
        .collect();
    request.respond(status, &headers, body);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert!(matches!(
            InspectorRoute::of("/"),
            Some(InspectorRoute::Asset { content_type, .. }) if content_type.starts_with("text/html")
        ));
        assert!(matches!(
            InspectorRoute::of("/inspector.js"),
            Some(InspectorRoute::Asset { content_type, .. }) if content_type.starts_with("text/javascript")
        ));
        assert_eq!(
            InspectorRoute::of("/api/whoami"),
            Some(InspectorRoute::WhoAmI)
        );
        assert_eq!(InspectorRoute::of("/api/tools/call"), None);
        assert_eq!(InspectorRoute::of("/inspector.js/"), None);
    }

    #[test]
    fn whoami_lists_only_the_scopes() {
        let scopes = Scopes::none().with(Scope::Manage).with(Scope::Inspect);
        assert_eq!(
            whoami_body(scopes),
            json!({"scopes": ["plugin:inspect", "plugin:manage"]})
        );
        assert_eq!(whoami_body(Scopes::none()), json!({"scopes": []}));
    }

    #[test]
    fn the_page_has_no_inline_script_or_style() {
        // The policy would block them; the page must not depend on them.
        assert!(!PAGE_HTML.contains("<script>"));
        assert!(!PAGE_HTML.contains("<style"));
        assert!(!PAGE_HTML.contains(" style="));
        let inline_handler = PAGE_HTML.split(" on").skip(1).any(|rest| {
            let name: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
            !name.is_empty() && rest[name.len()..].starts_with('=')
        });
        assert!(!inline_handler, "no inline event handlers");
        assert!(PAGE_HTML.contains("src=\"/inspector.js\""));
        assert!(PAGE_HTML.contains("href=\"/inspector.css\""));
    }

    #[test]
    fn the_script_never_parses_html() {
        for forbidden in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
        ] {
            assert!(
                !SCRIPT_JS.contains(forbidden),
                "{forbidden} in inspector.js"
            );
        }
    }
}
