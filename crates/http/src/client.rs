//! The HTTP client of the `--server-url` mode and of a front's remote runners: one POST per
//! request, never resent (no async runtime). ureq sets connections up (resolution, proxy, TCP,
//! rustls: `dial`); the request and its answer are HTTP/1.1 written and read here
//! (`exchange`), on a connection kept for the next request while that is provably safe
//! (`pool`). See docs/PROTOCOL.md, client mode, and docs/DECISIONS.md, D-CLIENT (D-CLIENT-2
//! on the exchange).

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::Value;
use ureq::http::Uri;
use ureq::tls::{RootCerts, TlsConfig, TlsProvider};
use ureq::Agent;

use self::dial::{dial_failed, Conn, Dialer};
use self::pool::Pool;
use self::setup::{ca_certificates, client_proxy};
pub(crate) use self::setup::{ca_der, link_proxy};
pub(crate) use self::tunnel::tunnel;

use crate::TOOLS_CALL_PATH;
pub(crate) use base_url::BaseUrl;
use webcodex_plugin_host::ToolOutput;
use webcodex_plugin_host::TOOL_NAME;
use webcodex_plugin_host::TRACEPARENT;
use webcodex_plugin_mcp::http::MCP_PATH;

/// Default time to resolve the host and set the connection up (TCP, proxy CONNECT, TLS).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time to wait for the response head, and again for its body: above the 120 s longest
/// request timeout.
pub const READ_TIMEOUT: Duration = Duration::from_secs(130);
/// How long the client may take to write its request.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// The most bytes of status line and headers the client reads.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The largest request-body buffer an idle connection keeps for its next request.
const MAX_KEPT_BODY_BUFFER: usize = 64 * 1024;
/// The longest a connection may wait idle in the pool and still carry a request: well under
/// the 5 s a `serve` keeps an idle connection open, so a `serve` never closes one for idleness
/// that the client may still pick.
pub(crate) const MAX_IDLE_AGE: Duration = Duration::from_secs(2);

mod base_url;
mod dial;
mod exchange;
mod framing;
mod pool;
mod resolve;
mod setup;
mod tunnel;

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

/// A `serve` endpoint and the bearer token to present to it. Clones share their connections.
#[derive(Clone)]
pub struct HttpClient {
    url: String,
    /// The server's `host:port` as the URL names it, and whether through a proxy (for
    /// messages).
    target: String,
    token: String,
    uses_proxy: bool,
    /// Built once: the set-up of connections, the idle ones, the request head.
    shared: Arc<Shared>,
}

/// What the clones of a client share.
struct Shared {
    /// Sets connections up (TLS, proxy, connect timeout).
    dialer: Dialer,
    /// The idle connections.
    pool: Pool<Conn>,
    /// Every request's head but its `traceparent` and `Content-Length`: the request line,
    /// `Host`, `User-Agent`, `Authorization`, `Content-Type` and `Accept`.
    head: Vec<u8>,
    /// The wait for the answer's head, and again for its body.
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

/// Which of `serve`'s endpoints a client posts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    /// `PREFIX/api/tools/call`: a `plugin_tool` request, a `{success, output}` answer.
    ToolsCall,
    /// `PREFIX/mcp`: a JSON-RPC message of the Model Context Protocol (stateless, no session).
    Mcp,
}

/// The MCP revision a client of `/mcp` names in `MCP-Protocol-Version`.
const MCP_PROTOCOL_VERSION: &str = "2025-06-18";

impl HttpClient {
    /// A client of `url` (`http[s]://HOST[:PORT][/PREFIX]`; the request goes to
    /// `PREFIX/api/tools/call`) presenting `token`.
    pub fn new(url: &str, token: &str, options: ClientOptions) -> Result<HttpClient, SetupError> {
        HttpClient::to_endpoint(url, token, options, Endpoint::ToolsCall)
    }

    /// A client of `url`'s MCP endpoint (`PREFIX/mcp`, protocol revision 2025-06-18, no
    /// session) presenting `token`: its requests are JSON-RPC messages sent as they are by
    /// [`HttpClient::post_json`]; the connections, proxy, TLS and token handling are those of
    /// [`HttpClient::new`].
    pub fn mcp(url: &str, token: &str, options: ClientOptions) -> Result<HttpClient, SetupError> {
        HttpClient::to_endpoint(url, token, options, Endpoint::Mcp)
    }

    fn to_endpoint(
        url: &str,
        token: &str,
        options: ClientOptions,
        endpoint: Endpoint,
    ) -> Result<HttpClient, SetupError> {
        let base = BaseUrl::parse(url, "server", false)?;
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(SetupError::new(
                SetupPart::Token,
                "the token must be one line of printable ASCII without spaces",
            ));
        }
        let https = base.tls;
        let path = match endpoint {
            Endpoint::ToolsCall => TOOLS_CALL_PATH,
            Endpoint::Mcp => MCP_PATH,
        };
        let full = base.url(if https { "https" } else { "http" }, path);
        let uri: Uri = full
            .parse()
            .map_err(|_| SetupError::new(SetupPart::Url, "the server URL is not a valid URL"))?;
        let host = base.host;
        let authority = base.authority;
        let roots = match &options.ca_pem {
            None => RootCerts::WebPki,
            Some(pem) => RootCerts::new_with_certs(
                &ca_certificates(pem).map_err(|m| SetupError::new(SetupPart::CaFile, m))?,
            ),
        };
        let proxy = client_proxy(&options.proxy, https, &host)?;
        let uses_proxy = proxy.is_some();
        // What ureq's connectors read: the proxy and the TLS set-up (buffers and
        // `TCP_NODELAY` as ureq's defaults).
        let config = Agent::config_builder()
            .proxy(proxy)
            .tls_config(
                TlsConfig::builder()
                    .provider(TlsProvider::Rustls)
                    .root_certs(roots)
                    .build(),
            )
            .build();
        let head = request_head(&uri, https, token, endpoint);
        let target = if uses_proxy {
            format!("{authority} (through the proxy)")
        } else {
            authority
        };
        Ok(HttpClient {
            url: full,
            target,
            token: token.to_string(),
            uses_proxy,
            shared: Arc::new(Shared {
                dialer: Dialer::new(config, uri, options.connect_timeout),
                pool: Pool::new(),
                head,
                read_timeout: options.read_timeout,
            }),
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
        self.post(params, |status, instance, body| {
            self.received(status, instance.map(str::to_string), body)
        })?
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
        self.post(params, |status, instance, body| {
            let clean_instance = !instance.is_some_and(|i| i.contains(&self.token));
            if status == 200 && clean_instance {
                if let Ok(answer) = serde_json::from_slice::<Answer<'_>>(body) {
                    let text = answer.output.get();
                    if answer.success && text.starts_with('{') {
                        return Ok(CallReply::Result(text.to_owned()));
                    }
                }
            }
            self.received(status, instance.map(str::to_string), body)
                .map(CallReply::Received)
        })?
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

    /// One POST of `body` as it is (a client made by [`HttpClient::mcp`] sends JSON-RPC
    /// messages this way), never resent: the answer's status and body, whatever they are, read
    /// and framed as every answer ([`HttpClient::exchange`]'s errors but its status and body
    /// checks; the token is not searched for).
    pub fn post_json(&self, body: &[u8]) -> Result<(u16, Vec<u8>), ClientError> {
        self.post_body(
            |buffer| buffer.extend_from_slice(body),
            |status, _, answer| (status, answer.to_vec()),
        )
    }

    /// One POST of the `plugin_tool` request of `params`: see [`HttpClient::post_body`].
    fn post<R>(
        &self,
        params: &Value,
        take: impl FnOnce(u16, Option<&str>, &[u8]) -> R,
    ) -> Result<R, ClientError> {
        // Written from the borrowed params (`TOOL_NAME` needs no escaping). Writing a `Value`
        // into a `Vec` cannot fail.
        let write = |body: &mut Vec<u8>| {
            body.extend_from_slice(br#"{"tool":""#);
            body.extend_from_slice(TOOL_NAME.as_bytes());
            body.extend_from_slice(br#"","params":"#);
            let _ = serde_json::to_writer(&mut *body, params);
            body.push(b'}');
        };
        self.post_body(write, take)
    }

    /// One POST of the body `write` puts in the connection's buffer, never resent: `take` gets
    /// the answer's status, runner instance header and body (where they lie in the
    /// connection's buffer, when they can).
    ///
    /// The connection is a kept one that passed the pool's probe, or a new one; until the
    /// request is handed to it, nothing was sent (a failure to set one up is
    /// [`ClientError::Connect`] or [`ClientError::Untrusted`]). From then on every failure is
    /// [`ClientError::Lost`] or [`ClientError::BadResponse`]: the request may have reached the
    /// server. The connection goes back to the pool only when the answer was read to its end
    /// and may be followed by another request.
    fn post_body<R>(
        &self,
        write: impl FnOnce(&mut Vec<u8>),
        take: impl FnOnce(u16, Option<&str>, &[u8]) -> R,
    ) -> Result<R, ClientError> {
        let shared = &*self.shared;
        let mut conn = match shared.pool.take() {
            Some(conn) => conn,
            None => shared
                .dialer
                .dial()
                .map_err(|e| self.redacted(dial_failed(e, &self.target)))?,
        };
        let body = &mut conn.body;
        body.clear();
        write(body);
        let mut fields = HeadFields::new();
        // A front hop: the request's trace id goes on, under a new parent id.
        if let Some(trace) = webcodex_plugin_host::current_trace() {
            fields.push(TRACEPARENT.as_bytes());
            fields.push(b": ");
            fields.push(&trace.child().header_bytes());
            fields.push(b"\r\n");
        }
        fields.push(b"Content-Length: ");
        fields.push_decimal(body.len());
        fields.push(b"\r\n\r\n");
        let parts = [&shared.head[..], fields.as_bytes(), &conn.body[..]];
        exchange::send(&mut *conn.transport, &parts, WRITE_TIMEOUT)
            .map_err(|e| self.redacted(e))?;
        let (result, reusable) = exchange::receive(
            &mut *conn.transport,
            shared.read_timeout,
            |status, instance, body| {
                log::debug!("POST {}: {status}", self.url);
                take(status, instance, body)
            },
        )
        .map_err(|e| self.redacted(e))?;
        if reusable {
            // A rare large request's buffer is not kept with an idle connection.
            if conn.body.capacity() > MAX_KEPT_BODY_BUFFER {
                conn.body = Vec::new();
            }
            shared.pool.put(conn);
        }
        Ok(result)
    }

    /// `e` with the client's own token taken out of its message.
    fn redacted(&self, e: ClientError) -> ClientError {
        let redact = |m: String| Redactor(&self.token).text(&m);
        match e {
            ClientError::Connect(m) => ClientError::Connect(redact(m)),
            ClientError::Untrusted(m) => ClientError::Untrusted(redact(m)),
            ClientError::Lost(m) => ClientError::Lost(redact(m)),
            ClientError::BadResponse(m) => ClientError::BadResponse(redact(m)),
        }
    }
}

/// A request's head fields that change from request to request (`traceparent`,
/// `Content-Length`), written on the stack.
struct HeadFields {
    bytes: [u8; 128],
    len: usize,
}

impl HeadFields {
    fn new() -> HeadFields {
        HeadFields {
            bytes: [0; 128],
            len: 0,
        }
    }

    /// Appends `bytes` (the fields written here fit: at most 110 bytes).
    fn push(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// Appends `n` in decimal.
    fn push_decimal(&mut self, n: usize) {
        self.push(itoa::Buffer::new().format(n).as_bytes());
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The fixed part of every request's head to the server of `uri` (`https`: its scheme)
/// presenting `token` (printable ASCII, checked): the request line, `Host` (the port only when
/// it is not the scheme's default), `User-Agent`, `Authorization`, `Content-Type` and `Accept`
/// (for `/mcp`, both JSON and an event stream, and `MCP-Protocol-Version`, as MCP asks).
fn request_head(uri: &Uri, https: bool, token: &str, endpoint: Endpoint) -> Vec<u8> {
    let host = uri.host().unwrap_or_default();
    let default_port = if https { 443 } else { 80 };
    let host = match uri.port_u16() {
        Some(port) if port != default_port => format!("{host}:{port}"),
        _ => host.to_string(),
    };
    format!(
        "POST {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: webcodex-plugin/{}\r\n\
         Authorization: Bearer {token}\r\nContent-Type: application/json\r\n{}",
        uri.path(),
        env!("CARGO_PKG_VERSION"),
        match endpoint {
            Endpoint::ToolsCall => "Accept: application/json\r\n".to_string(),
            Endpoint::Mcp => format!(
                "Accept: application/json, text/event-stream\r\n\
                 MCP-Protocol-Version: {MCP_PROTOCOL_VERSION}\r\n"
            ),
        },
    )
    .into_bytes()
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
    fn the_request_head_is_built_once_with_its_fixed_fields() {
        let head = |url: &str| {
            let c = client(url).unwrap();
            String::from_utf8(c.shared.head.clone()).unwrap()
        };
        assert_eq!(
            head("http://127.0.0.1:8787/base/"),
            format!(
                "POST /base/api/tools/call HTTP/1.1\r\nHost: 127.0.0.1:8787\r\n\
                 User-Agent: webcodex-plugin/{}\r\nAuthorization: Bearer {SECRET}\r\n\
                 Content-Type: application/json\r\nAccept: application/json\r\n",
                env!("CARGO_PKG_VERSION")
            )
        );
        // The scheme's own port is left out of Host, as ureq did.
        assert!(head("https://example.test:443").contains("\r\nHost: example.test\r\n"));
        assert!(head("http://example.test:80").contains("\r\nHost: example.test\r\n"));
        assert!(head("https://example.test:80").contains("\r\nHost: example.test:80\r\n"));
        assert!(head("http://[::1]:9").contains("\r\nHost: [::1]:9\r\n"));
    }

    #[test]
    fn the_varying_fields_are_written_on_the_stack() {
        let mut fields = HeadFields::new();
        fields.push(b"Content-Length: ");
        fields.push_decimal(0);
        fields.push(b",");
        fields.push_decimal(1_048_576);
        fields.push(b",");
        fields.push_decimal(usize::MAX);
        assert_eq!(
            fields.as_bytes(),
            format!("Content-Length: 0,1048576,{}", usize::MAX).as_bytes()
        );
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
    fn statuses_that_are_not_taken_say_why() {
        assert!(unexpected_status(302).contains("redirect"));
        assert!(unexpected_status(101).contains("not a plugin_tool status"));
    }
}
