//! The HTTP client of the `--server-url` mode and of a front's remote runners: one POST per
//! request, never resent, made with `ureq` (rustls, no async runtime). The agent (TLS setup,
//! proxy, timeouts) is built once per client; a connection that answered may carry the next
//! request while it has been idle less than [`MAX_IDLE_AGE`] (the `sent` module says why a failure on
//! it is still classified honestly). See docs/PROTOCOL.md, client mode, and docs/DECISIONS.md
//! section 6 (HTTP transport).

use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::Value;
use ureq::http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use ureq::http::{HeaderValue, Uri};
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig, TlsProvider};
use ureq::unversioned::transport::DefaultConnector;
use ureq::{Agent, Proxy};

use self::resolve::LiteralFirst;
use self::sent::{Attempt, MarkingConnector};

use super::{MAX_BODY_BYTES, RUNNER_INSTANCE_HEADER, TOOLS_CALL_PATH};
use crate::gateway::ToolOutput;
use crate::trace::TRACEPARENT;
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
/// The longest a connection may wait idle in the pool and still carry a request: well under
/// the 5 s a `serve` keeps an idle connection open, so a `serve` never closes one for idleness
/// that the client may still pick.
pub(crate) const MAX_IDLE_AGE: Duration = Duration::from_secs(2);
/// The most idle connections a client keeps (all to its one server).
const MAX_IDLE_CONNECTIONS: usize = 8;

mod resolve;
mod sent;

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
    /// This proxy URL, for every request; the environment is not read. The schemes:
    /// `http://`, `https://` (a `CONNECT` tunnel), `socks4://`, `socks4a://`, `socks5://` (the
    /// client resolves the host) and `socks5h://` (the proxy resolves it); `socks://` is SOCKS5.
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
    /// `url`, parsed once.
    uri: Uri,
    authority: String,
    token: String,
    /// `Bearer` and the token, built once.
    authorization: HeaderValue,
    /// Built once: its TLS setup, proxy, timeouts and pool of idle connections.
    agent: Agent,
    uses_proxy: bool,
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
    /// True when the answer held the client's own token (in the output or the instance
    /// header): it was replaced by `[redacted]`, and a front refuses such an answer whole.
    pub echoed_token: bool,
}

/// A `call`'s answer: see [`HttpClient::exchange_call`].
#[derive(Debug)]
pub(crate) enum CallReply {
    /// A successful call's output as its JSON text.
    Result(String),
    /// Any other answer.
    Received(Received),
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

/// The part of a client's setup that [`HttpClient::new`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetupPart {
    /// The server URL.
    Url,
    /// The token.
    Token,
    /// The proxy: [`ProxyChoice::Url`], or a variable of the environment.
    Proxy,
    /// The CA certificates ([`ClientOptions::ca_pem`]).
    CaFile,
}

/// Why [`HttpClient::new`] refused its arguments. The message never quotes the token or a
/// proxy URL (which may hold a password).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError {
    /// What is wrong.
    pub part: SetupPart,
    /// What to fix.
    pub message: String,
}

impl SetupError {
    pub(crate) fn new(part: SetupPart, message: impl Into<String>) -> SetupError {
        SetupError {
            part,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SetupError {}

impl HttpClient {
    /// A client of `url` (`http[s]://HOST[:PORT][/PREFIX]`; the request goes to
    /// `PREFIX/api/tools/call`) presenting `token`.
    pub fn new(url: &str, token: &str, options: ClientOptions) -> Result<HttpClient, SetupError> {
        let url_error = |m: &str| SetupError::new(SetupPart::Url, m);
        let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err(url_error(
                "the server URL must start with http:// or https://",
            ));
        };
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(url_error("the server URL needs a host (and no user info)"));
        }
        if prefix.contains(['?', '#']) || !prefix.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(url_error("the server URL path must be a plain path"));
        }
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(SetupError::new(
                SetupPart::Token,
                "the token must be one line of printable ASCII without spaces",
            ));
        }
        let scheme = if https { "https" } else { "http" };
        let full = format!(
            "{scheme}://{authority}{}{TOOLS_CALL_PATH}",
            prefix.trim_end_matches('/')
        );
        let uri: Uri = full
            .parse()
            .map_err(|_| url_error("the server URL is not a valid URL"))?;
        let host = uri.host().unwrap_or_default().to_string();
        let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
        let roots = match &options.ca_pem {
            None => RootCerts::WebPki,
            Some(pem) => RootCerts::new_with_certs(
                &ca_certificates(pem).map_err(|m| SetupError::new(SetupPart::CaFile, m))?,
            ),
        };
        let proxy = match &options.proxy {
            ProxyChoice::Direct => None,
            ProxyChoice::Url(p) => Some(
                proxy_from_url(p)
                    .map_err(|why| SetupError::new(SetupPart::Proxy, format!("the proxy {why}")))?,
            ),
            ProxyChoice::System => system_proxy(https, &host, &|name| std::env::var(name).ok())
                .map_err(|m| SetupError::new(SetupPart::Proxy, m))?,
        };
        let uses_proxy = proxy.is_some();
        let config = Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .max_response_header_size(MAX_HEAD_BYTES)
            .timeout_resolve(Some(options.connect_timeout))
            .timeout_connect(Some(options.connect_timeout))
            .timeout_send_request(Some(WRITE_TIMEOUT))
            .timeout_send_body(Some(WRITE_TIMEOUT))
            .timeout_recv_response(Some(options.read_timeout))
            .timeout_recv_body(Some(options.read_timeout))
            .max_idle_connections(MAX_IDLE_CONNECTIONS)
            .max_idle_connections_per_host(MAX_IDLE_CONNECTIONS)
            .max_idle_age(MAX_IDLE_AGE)
            .proxy(proxy)
            .tls_config(
                TlsConfig::builder()
                    .provider(TlsProvider::Rustls)
                    .root_certs(roots)
                    .build(),
            )
            .build();
        let connector = MarkingConnector::new(DefaultConnector::new(), &authority);
        let agent = Agent::with_parts(config, connector, LiteralFirst::default());
        let mut authorization = HeaderValue::try_from(format!("Bearer {token}")).map_err(|_| {
            SetupError::new(SetupPart::Token, "the token is not a valid header value")
        })?;
        authorization.set_sensitive(true);
        Ok(HttpClient {
            url: full,
            uri,
            authority,
            token: token.to_string(),
            authorization,
            agent,
            uses_proxy,
        })
    }

    /// Whether requests go through a proxy.
    pub fn uses_proxy(&self) -> bool {
        self.uses_proxy
    }

    /// Sends one `plugin_tool` request and returns the server's output, whatever the status.
    /// Never retried: a request that may have been sent fails with [`ClientError::Lost`].
    pub fn plugin_tool(&self, params: &Value) -> Result<ToolOutput, ClientError> {
        self.exchange(params).map(|received| received.output)
    }

    /// [`HttpClient::plugin_tool`] with what else the answer said: its HTTP status and the
    /// server's runner instance (the `Webcodex-Runner-Instance` header, when sent).
    ///
    /// An answer is taken only with the status it must have: 200 with a success, one of
    /// [`FAILURE_STATUSES`] with a failure object. Anything else (a redirect, which is never
    /// followed; a 2xx other than 200; any other status, whatever its body says) may come from
    /// something between the client and the server, so it is [`ClientError::Lost`]: the
    /// request may have been handled and the outcome is unknown. Every string of the answer,
    /// and every message, has the client's own token replaced by `[redacted]`, so a server that
    /// echoes the `Authorization` header makes the client print no token.
    pub fn exchange(&self, params: &Value) -> Result<Received, ClientError> {
        let (status, instance, body) = self.post(params)?;
        self.received(status, instance, &body)
    }

    /// [`HttpClient::exchange`] for a `call`: a 200 answer that is a success with an object
    /// for its output, in a header without the token, comes back as that output's JSON text
    /// ([`CallReply::Result`], unchecked and not searched for the token: the caller does
    /// both); any other answer as `exchange` gives it.
    pub(crate) fn exchange_call(&self, params: &Value) -> Result<CallReply, ClientError> {
        /// The answer's two members, the output left as its text.
        #[derive(serde::Deserialize)]
        struct Answer<'a> {
            success: bool,
            #[serde(borrow)]
            output: &'a RawValue,
        }
        let (status, instance, body) = self.post(params)?;
        let clean_instance = !instance.as_deref().is_some_and(|i| i.contains(&self.token));
        if status == 200 && clean_instance {
            if let Ok(answer) = serde_json::from_slice::<Answer<'_>>(&body) {
                let text = answer.output.get();
                if answer.success && text.starts_with('{') {
                    return Ok(CallReply::Result(text.to_owned()));
                }
            }
        }
        self.received(status, instance, &body)
            .map(CallReply::Received)
    }

    /// The `plugin_tool` answer in a response of `status` with `body`; see
    /// [`HttpClient::exchange`].
    fn received(
        &self,
        status: u16,
        instance: Option<String>,
        body: &[u8],
    ) -> Result<Received, ClientError> {
        let redact = Redactor(&self.token);
        let expected = match status {
            200 => Some(true),
            s if FAILURE_STATUSES.contains(&s) => Some(false),
            _ => None,
        };
        let Some(expected) = expected else {
            return Err(ClientError::Lost(unexpected_status(status)));
        };
        let value: Value = serde_json::from_slice(body).map_err(|_| {
            ClientError::BadResponse(format!("the server answered {status} without a JSON body"))
        })?;
        match (value.get("success"), value.get("output")) {
            (Some(Value::Bool(success)), Some(output)) if output.is_object() => {
                if *success != expected {
                    return Err(ClientError::Lost(format!(
                        "the server answered {status} with a {} body, which that status never \
                         carries",
                        if *success { "success" } else { "failure" }
                    )));
                }
                let mut output = output.clone();
                let mut echoed_token = redact.value(&mut output);
                let runner_instance = instance.map(|i| {
                    let clean = redact.text(&i);
                    echoed_token |= clean != i;
                    clean
                });
                Ok(Received {
                    status,
                    runner_instance,
                    output: ToolOutput::received(*success, output),
                    echoed_token,
                })
            }
            _ => Err(ClientError::BadResponse(format!(
                "the server answered {status} without a plugin_tool response"
            ))),
        }
    }

    /// One POST of the `plugin_tool` request of `params` (never resent: ureq follows no
    /// redirect and retries nothing); the status, the runner instance header and the response
    /// body.
    fn post(&self, params: &Value) -> Result<(u16, Option<String>, Vec<u8>), ClientError> {
        // Written from the borrowed params (`TOOL_NAME` needs no escaping). Writing a `Value`
        // into a `Vec` cannot fail.
        let mut body = Vec::with_capacity(256);
        body.extend_from_slice(br#"{"tool":""#);
        body.extend_from_slice(TOOL_NAME.as_bytes());
        body.extend_from_slice(br#"","params":"#);
        let _ = serde_json::to_writer(&mut body, params);
        body.push(b'}');
        let attempt = Attempt::begin();
        let failed = |e: ureq::Error| self.classify(e, attempt.wrote());
        let json = HeaderValue::from_static("application/json");
        let mut request = self
            .agent
            .post(self.uri.clone())
            .header(AUTHORIZATION, self.authorization.clone())
            .header(CONTENT_TYPE, json.clone())
            .header(ACCEPT, json);
        // A front hop: the request's trace id goes on, under a new parent id.
        if let Some(trace) = crate::trace::current() {
            request = request.header(TRACEPARENT, trace.child().header_value());
        }
        let mut response = request.send(body).map_err(failed)?;
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

    /// Sorts a ureq error: before a byte of the request was written (`wrote` false) nothing was
    /// sent, whether the connection was fresh or pooled; after, the request may have reached
    /// the server.
    fn classify(&self, e: ureq::Error, wrote: bool) -> ClientError {
        match self.sort(e, wrote) {
            ClientError::Connect(m) => ClientError::Connect(Redactor(&self.token).text(&m)),
            ClientError::Untrusted(m) => ClientError::Untrusted(Redactor(&self.token).text(&m)),
            ClientError::Lost(m) => ClientError::Lost(Redactor(&self.token).text(&m)),
            ClientError::BadResponse(m) => ClientError::BadResponse(Redactor(&self.token).text(&m)),
        }
    }

    /// [`HttpClient::classify`] before the token is taken out of the message.
    fn sort(&self, e: ureq::Error, wrote: bool) -> ClientError {
        let target = if self.uses_proxy() {
            format!("{} (through the proxy)", self.authority)
        } else {
            self.authority.clone()
        };
        match e {
            ureq::Error::BodyExceedsLimit(_) => {
                ClientError::BadResponse("the response body is larger than 1 MiB".into())
            }
            // The proxy answered the CONNECT with another status: nothing reached the server.
            ureq::Error::ConnectProxyFailed(why) => {
                ClientError::Connect(format!("the proxy refused the tunnel to {target}: {why}"))
            }
            ureq::Error::Protocol(p) => {
                ClientError::BadResponse(format!("the server's response is not HTTP/1.x: {p}"))
            }
            e if !wrote => match untrusted(&e) {
                Some(why) => ClientError::Untrusted(format!(
                    "the TLS certificate of {target} is not trusted ({why})"
                )),
                None => ClientError::Connect(format!("cannot connect to {target}: {e}")),
            },
            e => ClientError::Lost(format!("{e}")),
        }
    }
}

/// The HTTP proxy of a runner link to `host` (`https`: a `wss://` front), chosen as for a
/// client: `Ok(None)` for a direct connection. A link speaks `CONNECT` through an `http://`
/// proxy only; any other scheme is an error that says so.
pub(crate) fn link_proxy(
    choice: &ProxyChoice,
    https: bool,
    host: &str,
) -> Result<Option<LinkProxy>, SetupError> {
    let proxy = match choice {
        ProxyChoice::Direct => None,
        ProxyChoice::Url(p) => Some(
            proxy_from_url(p)
                .map_err(|why| SetupError::new(SetupPart::Proxy, format!("the proxy {why}")))?,
        ),
        ProxyChoice::System => system_proxy(https, host, &|name| std::env::var(name).ok())
            .map_err(|m| SetupError::new(SetupPart::Proxy, m))?,
    };
    let Some(proxy) = proxy else {
        return Ok(None);
    };
    if proxy.protocol() != ureq::ProxyProtocol::Http {
        return Err(SetupError::new(
            SetupPart::Proxy,
            "a runner link goes through an http:// proxy (CONNECT) only; give --proxy \
             http://HOST:PORT or --no-system-proxy",
        ));
    }
    let credentials = proxy.username().map(|u| {
        (
            u.to_string(),
            proxy.password().unwrap_or_default().to_string(),
        )
    });
    Ok(Some(LinkProxy {
        host: proxy.host().to_string(),
        port: proxy.port(),
        credentials,
    }))
}

/// The HTTP proxy a runner link tunnels through.
#[derive(Debug, Clone)]
pub(crate) struct LinkProxy {
    pub(crate) host: String,
    pub(crate) port: u16,
    /// User and password for `Proxy-Authorization: Basic`.
    pub(crate) credentials: Option<(String, String)>,
}

/// The DER bytes of every certificate of a PEM text (a link's `--ca-cert`).
pub(crate) fn ca_der(pem: &[u8]) -> Result<Vec<Vec<u8>>, SetupError> {
    ca_certificates(pem)
        .map(|certs| certs.iter().map(|c| c.der().to_vec()).collect())
        .map_err(|m| SetupError::new(SetupPart::CaFile, m))
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

/// The statuses `serve` answers with a failure object (docs/PROTOCOL.md, HTTP): a failed
/// action, `unauthorized`, `insufficient_scope`, a bad route, method or body, a late or
/// oversized head, `gateway_internal_error`, a saturated gateway or unavailable runner, and a
/// front's timed-out hop.
pub const FAILURE_STATUSES: [u16; 11] = [400, 401, 403, 404, 405, 408, 413, 431, 500, 503, 504];

/// Why an answer with `status` is not taken.
fn unexpected_status(status: u16) -> String {
    match status {
        300..=399 => format!(
            "the server answered with a redirect ({status}), which the client does not follow"
        ),
        _ => format!("the server answered {status}, which is not a plugin_tool status"),
    }
}

/// Takes the client's own token out of what a server sent.
struct Redactor<'a>(&'a str);

impl Redactor<'_> {
    /// What replaces the token.
    const MARK: &'static str = "[redacted]";

    /// `text` with every occurrence of the token replaced.
    fn text(&self, text: &str) -> String {
        text.replace(self.0, Self::MARK)
    }

    /// Every string and key of `value` with the token replaced; true when one held it.
    fn value(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) if s.contains(self.0) => {
                *s = self.text(s);
                true
            }
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |found, v| self.value(v) | found),
            Value::Object(map) => {
                let in_keys = map.keys().any(|k| k.contains(self.0));
                if in_keys {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(k, v)| (self.text(&k), v))
                        .collect();
                }
                map.values_mut()
                    .fold(in_keys, |found, v| self.value(v) | found)
            }
            _ => false,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef-secret";

    fn client(url: &str) -> Result<HttpClient, SetupError> {
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
    fn the_token_is_taken_out_of_strings_and_keys() {
        let redact = Redactor(SECRET);
        let mut value = serde_json::json!({
            "a": format!("x {SECRET} y {SECRET}"),
            SECRET: [format!("Bearer {SECRET}"), 1, null],
            "nested": {"k": {"deep": SECRET}},
        });
        redact.value(&mut value);
        let text = value.to_string();
        assert!(!text.contains(SECRET), "{text}");
        assert_eq!(value["a"], "x [redacted] y [redacted]");
        assert_eq!(value["[redacted]"][0], "Bearer [redacted]");
        assert_eq!(value["nested"]["k"]["deep"], "[redacted]");
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
        assert!(unexpected_status(302).contains("redirect"));
    }

    #[test]
    fn ca_file_must_hold_a_certificate() {
        assert!(ca_certificates(b"").is_err());
        assert!(ca_certificates(b"not pem").is_err());
    }
}
