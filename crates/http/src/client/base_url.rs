//! The base URL a client or a runner link is given (`--server-url`, `--front-url`): one parser
//! for both, on the `http` crate's `Uri` (the one ureq and tungstenite parse with), plus the
//! checks a base URL needs beyond a valid URI: a scheme this side speaks, a host without user
//! information, a numeric port, and a plain path (no query, no fragment, printable ASCII).

use ureq::http::Uri;

use super::{SetupError, SetupPart};

/// A checked base URL: where the server or front is, and the path its routes sit under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BaseUrl {
    /// `https://` or `wss://`.
    pub(crate) tls: bool,
    /// The host as the URL writes it (an IPv6 address in brackets).
    pub(crate) host: String,
    /// The port the URL names, else the scheme's (443 with TLS, 80 without).
    pub(crate) port: u16,
    /// `host[:port]` as the URL writes it.
    pub(crate) authority: String,
    /// The path before the route, without a trailing `/` (empty for none).
    pub(crate) prefix: String,
}

impl BaseUrl {
    /// Parses the base URL of a `what` ("server", "front"): `http://` or `https://`, and also
    /// `ws://` or `wss://` when `websocket`. The message of an error never quotes the URL.
    pub(crate) fn parse(url: &str, what: &str, websocket: bool) -> Result<BaseUrl, SetupError> {
        let error = |message: String| SetupError::new(SetupPart::Url, message);
        let schemes = if websocket {
            "http://, https://, ws:// or wss://"
        } else {
            "http:// or https://"
        };
        let uri: Uri = url
            .parse()
            .map_err(|_| error(format!("the {what} URL is not a valid URL")))?;
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            Some("wss") if websocket => true,
            Some("ws") if websocket => false,
            _ => return Err(error(format!("the {what} URL must start with {schemes}"))),
        };
        let authority = uri.authority().map_or("", |a| a.as_str());
        let host = uri.host().unwrap_or_default();
        if host.is_empty() || authority.contains('@') {
            return Err(error(format!(
                "the {what} URL needs a host (and no user info)"
            )));
        }
        // `Uri` takes `host:port` with any port text; a port must be a number here.
        let port = match uri.port_u16() {
            Some(port) => port,
            None if authority.len() > host.len() => {
                return Err(error(format!(
                    "the {what} URL's port is not a number from 0 to 65535"
                )))
            }
            None if tls => 443,
            None => 80,
        };
        let path = uri.path();
        if uri.query().is_some() || url.contains('#') || !path.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(error(format!("the {what} URL path must be a plain path")));
        }
        Ok(BaseUrl {
            tls,
            host: host.to_string(),
            port,
            authority: authority.to_string(),
            prefix: path.trim_end_matches('/').to_string(),
        })
    }

    /// The URL of `route` (a path from `/`) under this base, with `scheme`.
    pub(crate) fn url(&self, scheme: &str, route: &str) -> String {
        format!("{scheme}://{}{}{route}", self.authority, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_is_split_once() {
        let base = BaseUrl::parse("https://h.example:8443/base/", "server", false).unwrap();
        assert_eq!(
            base,
            BaseUrl {
                tls: true,
                host: "h.example".into(),
                port: 8443,
                authority: "h.example:8443".into(),
                prefix: "/base".into(),
            }
        );
        assert_eq!(base.url("https", "/x"), "https://h.example:8443/base/x");
        let base = BaseUrl::parse("ws://[::1]", "front", true).unwrap();
        assert_eq!((base.host.as_str(), base.port), ("[::1]", 80));
        assert!(BaseUrl::parse("ws://h", "server", false).is_err());
    }

    #[test]
    fn what_a_uri_allows_but_a_base_url_does_not() {
        for bad in [
            "http://h:port",
            "http://h:99999",
            "http://h:/x",
            "http://h/a#b",
            "http://h/é",
            "http://:80",
            "http://user@h",
            "h:80",
        ] {
            let e = BaseUrl::parse(bad, "server", true).unwrap_err();
            assert!(!e.message.contains(bad), "{e}");
        }
    }
}
