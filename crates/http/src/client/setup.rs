//! What a client is set up with besides its URL and token: the proxy (chosen from the flags
//! or the environment, its scheme checked before ureq sees it) and the CA certificates of
//! `--ca-cert`; and the same choices for a runner link (`link_proxy`, `ca_der`).

use ureq::tls::{Certificate, PemItem};
use ureq::Proxy;

use super::{ProxyChoice, SetupError, SetupPart};

/// The proxy of a client of a server on `host` (`https`: its scheme), as `choice` says:
/// `Ok(None)` for a direct connection. The error names `--proxy` or the variable, and never
/// quotes the URL.
pub(super) fn client_proxy(
    choice: &ProxyChoice,
    https: bool,
    host: &str,
) -> Result<Option<Proxy>, SetupError> {
    Ok(match choice {
        ProxyChoice::Direct => None,
        ProxyChoice::Url(p) => Some(
            proxy_from_url(p)
                .map_err(|why| SetupError::new(SetupPart::Proxy, format!("the proxy {why}")))?,
        ),
        ProxyChoice::System => system_proxy(https, host, &|name| std::env::var(name).ok())
            .map_err(|m| SetupError::new(SetupPart::Proxy, m))?,
    })
}

/// The HTTP proxy of a runner link to `host` (`https`: a `wss://` front), chosen as for a
/// client: `Ok(None)` for a direct connection. A link speaks `CONNECT` through an `http://`
/// proxy only; any other scheme is an error that says so.
pub(crate) fn link_proxy(
    choice: &ProxyChoice,
    https: bool,
    host: &str,
) -> Result<Option<Proxy>, SetupError> {
    let Some(proxy) = client_proxy(choice, https, host)? else {
        return Ok(None);
    };
    if proxy.protocol() != ureq::ProxyProtocol::Http {
        return Err(SetupError::new(
            SetupPart::Proxy,
            "a runner link goes through an http:// proxy (CONNECT) only; give --proxy \
             http://HOST:PORT or --no-system-proxy",
        ));
    }
    Ok(Some(proxy))
}

/// The DER bytes of every certificate of a PEM text (a link's `--ca-cert`).
pub(crate) fn ca_der(pem: &[u8]) -> Result<Vec<Vec<u8>>, SetupError> {
    ca_certificates(pem)
        .map(|certs| certs.iter().map(|c| c.der().to_vec()).collect())
        .map_err(|m| SetupError::new(SetupPart::CaFile, m))
}

/// Every certificate of a PEM text; an error when there is none.
pub(super) fn ca_certificates(pem: &[u8]) -> Result<Vec<Certificate<'static>>, String> {
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(pem) {
        match item {
            Ok(PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => return Err(format!("the CA file is not valid PEM: {e}")),
        }
    }
    if certs.is_empty() {
        return Err("the CA file holds no PEM certificate".into());
    }
    Ok(certs)
}

/// The proxy the environment names for a request to `host`, if any (see [`ProxyChoice::System`]).
fn system_proxy(
    https: bool,
    host: &str,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Proxy>, String> {
    let names: &[&str] = if https {
        &["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]
    } else {
        &["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
    };
    let Some((name, url)) = names
        .iter()
        .find_map(|n| var(n).filter(|v| !v.trim().is_empty()).map(|v| (*n, v)))
    else {
        return Ok(None);
    };
    let no_proxy = var("NO_PROXY").or_else(|| var("no_proxy"));
    if no_proxy.is_some_and(|list| bypasses(&list, host)) {
        return Ok(None);
    }
    proxy_from_url(url.trim())
        .map(Some)
        .map_err(|why| format!("the proxy of {name} {why}"))
}

/// The proxy schemes ureq speaks (with its `socks-proxy` feature): `CONNECT` tunnels and
/// SOCKS.
const PROXY_SCHEMES: [&str; 7] = [
    "http", "https", "socks4", "socks4a", "socks5", "socks5h", "socks",
];

/// A proxy from its URL. The scheme is checked first (ureq takes a URL without one as
/// `http://`); the message never quotes the URL, which may hold a password.
fn proxy_from_url(url: &str) -> Result<Proxy, String> {
    if let Some((scheme, _)) = url.split_once("://") {
        if !PROXY_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "has a scheme that is not supported (use one of {}://)",
                PROXY_SCHEMES.join("://, ")
            ));
        }
    }
    Proxy::new(url).map_err(|_| {
        "is not a valid proxy URL (e.g. http://HOST:PORT or socks5h://HOST:PORT)".to_string()
    })
}
/// Whether `host` matches a `NO_PROXY` list: `*`, or an entry equal to the host or to one of its
/// parent domains (a leading `.` and a `:port` on an entry are ignored).
fn bypasses(list: &str, host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    list.split(',').map(str::trim).any(|entry| {
        if entry == "*" {
            return true;
        }
        let entry = entry.trim_start_matches('.');
        let entry = match entry.rsplit_once(':') {
            Some((name, port))
                if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) =>
            {
                name
            }
            _ => entry,
        };
        let entry = entry.trim_start_matches('[').trim_end_matches(']');
        !entry.is_empty()
            && (host.eq_ignore_ascii_case(entry)
                || host
                    .to_ascii_lowercase()
                    .ends_with(&format!(".{}", entry.to_ascii_lowercase())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_proxy_follows_scheme_and_no_proxy() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let vars = env(&[
            ("HTTP_PROXY", "http://plain:1"),
            ("HTTPS_PROXY", "http://secure:2"),
            ("NO_PROXY", "localhost, .internal.test,10.0.0.1:8080"),
        ]);
        let host = |https, h| {
            system_proxy(https, h, &vars)
                .unwrap()
                .map(|p| p.host().to_string())
        };
        assert_eq!(host(false, "a.example").as_deref(), Some("plain"));
        assert_eq!(host(true, "a.example").as_deref(), Some("secure"));
        assert_eq!(host(true, "localhost"), None);
        assert_eq!(host(true, "x.internal.test"), None);
        assert_eq!(host(true, "internal.test"), None);
        assert_eq!(host(true, "10.0.0.1"), None);
        assert_eq!(host(true, "notinternal.test").as_deref(), Some("secure"));
        let all = env(&[("all_proxy", "http://every:3")]);
        assert_eq!(
            system_proxy(false, "h", &all).unwrap().map(|p| p.port()),
            Some(3)
        );
        assert!(bypasses("*", "anything"));
        assert!(system_proxy(false, "h", &env(&[])).unwrap().is_none());
    }

    #[test]
    fn proxy_schemes_are_checked_before_ureq_sees_them() {
        for ok in [
            "http://p:1",
            "https://p:1",
            "socks4://p:1",
            "socks5://p:1",
            "socks5h://p:1",
        ] {
            assert!(proxy_from_url(ok).is_ok(), "{ok}");
        }
        let e = proxy_from_url("ftp://user:pw@p:1").unwrap_err();
        assert!(e.contains("socks5h://") && !e.contains("pw"), "{e}");
    }

    #[test]
    fn ca_file_must_hold_a_certificate() {
        assert!(ca_certificates(b"").is_err());
        assert!(ca_certificates(b"not pem").is_err());
    }
}
