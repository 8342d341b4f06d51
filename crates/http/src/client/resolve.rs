//! Name resolution without a thread for an address literal. ureq resolves the server's host
//! before every request, pooled connection or not, and its default resolver runs each lookup on
//! a new thread to bound it by the resolve timeout; for `127.0.0.1` or `[::1]` there is nothing
//! to look up, so [`LiteralFirst`] answers at once and leaves names to that resolver.

use std::net::{IpAddr, SocketAddr};

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// An `http`/`https` URI whose host is an IP address resolves to it; any other goes to ureq's
/// default resolver.
#[derive(Debug, Default)]
pub(super) struct LiteralFirst {
    names: DefaultResolver,
}

impl Resolver for LiteralFirst {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        match literal(uri) {
            Some(addr) => {
                let mut out = self.empty();
                out.push(addr);
                Ok(out)
            }
            None => self.names.resolve(uri, config, timeout),
        }
    }
}

/// The socket address of `uri` when its host is an IP address and its scheme http or https.
fn literal(uri: &Uri) -> Option<SocketAddr> {
    let default_port = match uri.scheme_str()? {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let host = uri.host()?;
    let ip: IpAddr = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .parse()
        .ok()?;
    Some(SocketAddr::new(ip, uri.port_u16().unwrap_or(default_port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_literals_skip_the_lookup() {
        let at = |u: &str| literal(&u.parse().unwrap());
        assert_eq!(
            at("http://127.0.0.1:8787/x"),
            Some("127.0.0.1:8787".parse().unwrap())
        );
        assert_eq!(at("https://[::1]/x"), Some("[::1]:443".parse().unwrap()));
        assert_eq!(
            at("http://10.0.0.5/x"),
            Some("10.0.0.5:80".parse().unwrap())
        );
        assert_eq!(at("http://localhost:1/x"), None);
        assert_eq!(at("socks5://127.0.0.1:1"), None);
    }
}
