//! The HTTP client of the `--server-url` mode: one POST per request on a fresh connection, made
//! with `ureq` (rustls, no async runtime). See docs/PROTOCOL.md, client mode, and
//! docs/DECISIONS.md section 6 (HTTP transport).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig, TlsProvider};
use ureq::unversioned::resolver::DefaultResolver;
use ureq::unversioned::transport::{ConnectionDetails, Connector, DefaultConnector, Transport};
use ureq::{Agent, Proxy};

use super::{MAX_BODY_BYTES, RUNNER_INSTANCE_HEADER, TOOLS_CALL_PATH};
use crate::gateway::ToolOutput;
use crate::transport::TOOL_NAME;

/// Default time to resolve the host and set the connection up (TCP, proxy CONNECT, TLS).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time to wait for the response head, and again for its body: above the 120 s longest
/// request timeout.
pub const READ_TIMEOUT: Duration = Duration::from_secs(130);
/// How long the client may take to write its request.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// The most bytes of status line and headers the client reads.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Which proxy a client uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyChoice {
    /// The environment's: `HTTPS_PROXY` (for https URLs) or `HTTP_PROXY` (for http URLs), either
    /// case, then `ALL_PROXY`; none when the host matches `NO_PROXY`.
    #[default]
    System,
    /// No proxy, whatever the environment says.
    Direct,
    /// This proxy URL (`http://HOST:PORT`), for every request; the environment is not read.
    Url(String),
}

/// How a client reaches the server: trust, proxy and timeouts.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// PEM text of the CA certificates to trust instead of the built-in roots (for a private
    /// CA). `None`: the Mozilla roots compiled in (webpki-roots).
    pub ca_pem: Option<Vec<u8>>,
    /// The proxy.
    pub proxy: ProxyChoice,
    /// Time to resolve and connect (TCP, proxy, TLS handshake).
    pub connect_timeout: Duration,
    /// Time to wait for the response head, and again for its body.
    pub read_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            ca_pem: None,
            proxy: ProxyChoice::System,
            connect_timeout: CONNECT_TIMEOUT,
            read_timeout: READ_TIMEOUT,
        }
    }
}

/// A `serve` endpoint and the bearer token to present to it.
#[derive(Clone)]
pub struct HttpClient {
    url: String,
    authority: String,
    token: String,
    roots: RootCerts,
    proxy: Option<Proxy>,
    connect_timeout: Duration,
    read_timeout: Duration,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// A `plugin_tool` answer and what its HTTP response said besides.
#[derive(Debug, Clone)]
pub struct Received {
    /// The HTTP status.
    pub status: u16,
    /// The server's runner instance id (`Webcodex-Runner-Instance`), when it sent one.
    pub runner_instance: Option<String>,
    /// The output.
    pub output: ToolOutput,
}

/// Why a client request produced no gateway output.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// No connection could be made (DNS, connect, proxy, TLS handshake): nothing was sent.
    Connect(String),
    /// The TLS handshake failed because the server's certificate is not trusted: nothing was
    /// sent.
    Untrusted(String),
    /// The request may have reached the server but no complete response came back (reset,
    /// timeout, early close): the outcome is unknown.
    Lost(String),
    /// The server answered with something that is not a `plugin_tool` response.
    BadResponse(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Connect(m)
            | ClientError::Untrusted(m)
            | ClientError::Lost(m)
            | ClientError::BadResponse(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ClientError {}

impl HttpClient {
    /// A client of `url` (`http[s]://HOST[:PORT][/PREFIX]`; the request goes to
    /// `PREFIX/api/tools/call`) presenting `token`.
    pub fn new(url: &str, token: &str, options: ClientOptions) -> Result<HttpClient, String> {
        let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err("the server URL must start with http:// or https://".into());
        };
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err("the server URL needs a host (and no user info)".into());
        }
        if prefix.contains(['?', '#']) || !prefix.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the server URL path must be a plain path".into());
        }
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the token must be one line of printable ASCII without spaces".into());
        }
        let scheme = if https { "https" } else { "http" };
        let full = format!(
            "{scheme}://{authority}{}{TOOLS_CALL_PATH}",
            prefix.trim_end_matches('/')
        );
        let uri: ureq::http::Uri = full
            .parse()
            .map_err(|_| "the server URL is not a valid URL".to_string())?;
        let host = uri.host().unwrap_or_default().to_string();
        let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
        let roots = match &options.ca_pem {
            None => RootCerts::WebPki,
            Some(pem) => RootCerts::new_with_certs(&ca_certificates(pem)?),
        };
        let proxy = match &options.proxy {
            ProxyChoice::Direct => None,
            ProxyChoice::Url(p) => Some(
                Proxy::new(p).map_err(|_| "the proxy URL is not a valid proxy URL".to_string())?,
            ),
            ProxyChoice::System => system_proxy(https, &host, &|name| std::env::var(name).ok())?,
        };
        Ok(HttpClient {
            url: full,
            authority,
            token: token.to_string(),
            roots,
            proxy,
            connect_timeout: options.connect_timeout,
            read_timeout: options.read_timeout,
        })
    }

    /// Whether requests go through a proxy.
    pub fn uses_proxy(&self) -> bool {
        self.proxy.is_some()
    }

    /// Sends one `plugin_tool` request and returns the server's output, whatever the status.
    /// Never retried: a request that may have been sent fails with [`ClientError::Lost`].
    pub fn plugin_tool(&self, params: &Value) -> Result<ToolOutput, ClientError> {
        self.exchange(params).map(|received| received.output)
    }

    /// [`HttpClient::plugin_tool`] with what else the answer said: its HTTP status and the
    /// server's runner instance (the `Webcodex-Runner-Instance` header, when sent).
    pub fn exchange(&self, params: &Value) -> Result<Received, ClientError> {
        let (status, instance, body) = self.post(&json!({"tool": TOOL_NAME, "params": params}))?;
        let value: Value = serde_json::from_slice(&body).map_err(|_| {
            ClientError::BadResponse(format!("the server answered {status} without a JSON body"))
        })?;
        match (value.get("success"), value.get("output")) {
            (Some(Value::Bool(success)), Some(output)) if output.is_object() => Ok(Received {
                status,
                runner_instance: instance,
                output: ToolOutput::received(*success, output.clone()),
            }),
            _ => Err(ClientError::BadResponse(format!(
                "the server answered {status} without a plugin_tool response"
            ))),
        }
    }

    /// One POST of `body` on a fresh agent (no pooled connection, so nothing is ever resent);
    /// the status, the runner instance header and the response body.
    fn post(&self, body: &Value) -> Result<(u16, Option<String>, Vec<u8>), ClientError> {
        let connected = Arc::new(AtomicBool::new(false));
        let config = Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .max_response_header_size(MAX_HEAD_BYTES)
            .timeout_resolve(Some(self.connect_timeout))
            .timeout_connect(Some(self.connect_timeout))
            .timeout_send_request(Some(WRITE_TIMEOUT))
            .timeout_send_body(Some(WRITE_TIMEOUT))
            .timeout_recv_response(Some(self.read_timeout))
            .timeout_recv_body(Some(self.read_timeout))
            .proxy(self.proxy.clone())
            .tls_config(
                TlsConfig::builder()
                    .provider(TlsProvider::Rustls)
                    .root_certs(self.roots.clone())
                    .build(),
            )
            .build();
        let connector = RecordingConnector {
            inner: DefaultConnector::new(),
            connected: Arc::clone(&connected),
        };
        let agent = Agent::with_parts(config, connector, DefaultResolver::default());
        let failed = |e: ureq::Error| self.classify(e, connected.load(Ordering::SeqCst));
        let mut response = agent
            .post(&self.url)
            .header("Authorization", format!("Bearer {}", self.token))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .send(body.to_string())
            .map_err(failed)?;
        let status = response.status().as_u16();
        let instance = response
            .headers()
            .get(RUNNER_INSTANCE_HEADER)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty() && v.len() <= 64)
            .map(str::to_string);
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY_BYTES as u64)
            .read_to_vec()
            .map_err(failed)?;
        Ok((status, instance, body))
    }

    /// Sorts a ureq error: before a connection was made nothing was sent; after, the request
    /// may have reached the server.
    fn classify(&self, e: ureq::Error, connected: bool) -> ClientError {
        let target = if self.uses_proxy() {
            format!("{} (through the proxy)", self.authority)
        } else {
            self.authority.clone()
        };
        match e {
            ureq::Error::BodyExceedsLimit(_) => {
                ClientError::BadResponse("the response body is larger than 1 MiB".into())
            }
            ureq::Error::Protocol(p) => {
                ClientError::BadResponse(format!("the server's response is not HTTP/1.x: {p}"))
            }
            e if !connected => match untrusted(&e) {
                Some(why) => ClientError::Untrusted(format!(
                    "the TLS certificate of {target} is not trusted ({why})"
                )),
                None => ClientError::Connect(format!("cannot connect to {target}: {e}")),
            },
            e => ClientError::Lost(format!("{e}")),
        }
    }
}

/// Every certificate of a PEM text; an error when there is none.
fn ca_certificates(pem: &[u8]) -> Result<Vec<Certificate<'static>>, String> {
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
    Proxy::new(url.trim())
        .map(Some)
        .map_err(|_| format!("{name} is not a valid proxy URL"))
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

/// Why a failed TLS handshake did not trust the server, if that is why it failed.
fn untrusted(e: &ureq::Error) -> Option<String> {
    let tls = match e {
        ureq::Error::Rustls(t) => Some(t),
        ureq::Error::Io(io) => io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()),
        _ => None,
    }?;
    matches!(tls, rustls::Error::InvalidCertificate(_)).then(|| tls.to_string())
}

/// ureq's default connector chain (proxy, TCP, TLS) that records when a connection is ready:
/// until then nothing of the request was sent.
#[derive(Debug)]
struct RecordingConnector {
    inner: DefaultConnector,
    connected: Arc<AtomicBool>,
}

impl Connector<()> for RecordingConnector {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<()>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let out = self.inner.connect(details, chained)?;
        if out.is_some() {
            self.connected.store(true, Ordering::SeqCst);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef-secret";

    fn client(url: &str) -> Result<HttpClient, String> {
        let options = ClientOptions {
            proxy: ProxyChoice::Direct,
            ..ClientOptions::default()
        };
        HttpClient::new(url, SECRET, options)
    }

    #[test]
    fn client_url_parsing() {
        let c = client("http://127.0.0.1:8787").unwrap();
        assert_eq!(c.url, "http://127.0.0.1:8787/api/tools/call");
        let c = client("https://example.test/base/").unwrap();
        assert_eq!(c.url, "https://example.test/base/api/tools/call");
        let c = client("http://[::1]").unwrap();
        assert_eq!(c.url, "http://[::1]/api/tools/call");
        assert!(client("ftp://h:1").is_err());
        assert!(client("http://").is_err());
        assert!(client("http://u:p@h:1").is_err());
        assert!(client("http://h/a?b").is_err());
        let options = ClientOptions::default();
        assert!(HttpClient::new("http://h:1", "two words", options.clone()).is_err());
        assert!(HttpClient::new("http://h:1", "line\r\nX: y", options).is_err());
        assert!(!format!("{c:?}").contains(SECRET));
    }

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
    fn ca_file_must_hold_a_certificate() {
        assert!(ca_certificates(b"").is_err());
        assert!(ca_certificates(b"not pem").is_err());
    }
}
