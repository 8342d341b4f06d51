//! A remote runner: another machine's `webcodex-plugin serve`, reached over HTTP with this
//! runner's own credential (feature `http-client`).
//!
//! [`RemoteRunner::forward`] sends one `plugin_tool` request and classifies what came back
//! (docs/PROTOCOL.md, remote runners):
//! - no connection could be made (DNS, refused, TLS handshake), or the circuit is open →
//!   `plugin_runner_unavailable`, not started;
//! - the runner refused the gateway's credential (401) → `plugin_runner_unavailable`, not
//!   started (it answers 401 before reading the body);
//! - the request may have been sent and no usable answer came back (reset, early close,
//!   timeout, not a `plugin_tool` response) → `plugin_gateway_timeout`: outcome unknown for
//!   `call`, `check` and `reload`; not started for the read-only `list`, `describe` and
//!   `catalog`, which change nothing (docs/DECISIONS.md, gateway);
//! - any `plugin_tool` answer, a failure object included, is the runner's own and is returned
//!   as it came.
//!
//! Nothing is ever retried. Messages name the runner by its id only: never its URL, token,
//! binding or instance; the transport's own detail goes to the log.

use std::time::Instant;

use serde_json::Value;

use super::breaker::Breaker;
use super::params::ActionKind;
use super::runners::{RunnerEntry, RunnersError};
use super::service::ToolOutput;
use crate::error::{Dispatch, Error, ErrorCode};
use crate::transport::http::{ClientError, ClientOptions, HttpClient, ProxyChoice};

/// The runner name a front gateway addresses on a remote `serve`: the runner of its `--config`.
pub const REMOTE_RUNNER: &str = super::service::LOCAL_RUNNER;

/// One remote runner: its id and display name, a client with its credential, and its circuit
/// breaker.
pub struct RemoteRunner {
    id: String,
    name: String,
    client: HttpClient,
    breaker: Breaker,
}

impl std::fmt::Debug for RemoteRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteRunner")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A remote runner's answer: the output as it came and the runner instance that gave it.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) output: ToolOutput,
    pub(crate) instance: Option<String>,
}

impl RemoteRunner {
    /// A runner from a runners-file entry: reads its token and CA file now. The proxy
    /// environment applies as for the CLI's client mode (`NO_PROXY` exempts a host).
    pub fn from_entry(entry: &RunnerEntry) -> Result<RemoteRunner, RunnersError> {
        let token = entry.token()?;
        let ca_pem = match &entry.ca_file {
            None => None,
            Some(path) => Some(std::fs::read(path).map_err(|e| {
                RunnersError::new(format!(
                    "runner `{}`: cannot read ca_file {}: {e}",
                    entry.id,
                    path.display()
                ))
            })?),
        };
        let options = ClientOptions {
            ca_pem,
            proxy: ProxyChoice::System,
            ..ClientOptions::default()
        };
        RemoteRunner::new(&entry.id, &entry.name, &entry.url, &token, options)
    }

    /// A runner `id` named `name` at `url`, presenting `token`.
    pub fn new(
        id: &str,
        name: &str,
        url: &str,
        token: &str,
        options: ClientOptions,
    ) -> Result<RemoteRunner, RunnersError> {
        let client = HttpClient::new(url, token, options)
            .map_err(|m| RunnersError::new(format!("runner `{id}`: {m}")))?;
        Ok(RemoteRunner {
            id: id.to_string(),
            name: name.to_string(),
            client,
            breaker: Breaker::default(),
        })
    }

    /// The id callers route by.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sends one `plugin_tool` request for an action of kind `kind`; see the module text for
    /// the classification.
    pub(crate) fn forward(&self, kind: ActionKind, params: &Value) -> Result<Answer, Error> {
        let Some(permit) = self.breaker.admit(Instant::now()) else {
            return Err(Error::not_started(
                ErrorCode::RunnerUnavailable,
                format!(
                    "runner `{}` is unavailable: after repeated connection failures its requests \
                     fail fast for a while; nothing was sent, try again later",
                    self.id
                ),
            ));
        };
        match self.client.exchange(params) {
            Ok(received) => {
                permit.answered();
                if received.status == 401 {
                    log::warn!(
                        "runner `{}` refused this gateway's token (401); fix the runners file",
                        self.id
                    );
                    return Err(Error::not_started(
                        ErrorCode::RunnerUnavailable,
                        format!(
                            "runner `{}` refused this gateway's credential; nothing was done \
                             (the gateway's operator must fix it)",
                            self.id
                        ),
                    ));
                }
                Ok(Answer {
                    output: received.output,
                    instance: received.runner_instance,
                })
            }
            Err(e) => {
                permit.failed(Instant::now());
                log::warn!("runner `{}`: {} failed: {e}", self.id, kind.as_str());
                Err(self.transport_failure(kind, &e))
            }
        }
    }

    /// The failure for an answer that is a `plugin_tool` success but not the output the action
    /// gives (classified like a lost answer: the runner's state is unknown).
    pub(crate) fn unusable_answer(&self, kind: ActionKind) -> Error {
        log::warn!(
            "runner `{}` answered `{}` with an output that is not the action's",
            self.id,
            kind.as_str()
        );
        self.transport_failure(kind, &ClientError::BadResponse(String::new()))
    }

    fn transport_failure(&self, kind: ActionKind, e: &ClientError) -> Error {
        match e {
            ClientError::Connect(_) | ClientError::Untrusted(_) => Error::not_started(
                ErrorCode::RunnerUnavailable,
                format!(
                    "runner `{}` is unavailable: no connection could be made; nothing was sent",
                    self.id
                ),
            ),
            _ if changes_nothing(kind) => Error::not_started(
                ErrorCode::GatewayTimeout,
                format!(
                    "the answer of runner `{}` was lost or timed out; `{}` changes nothing, so \
                     it may be sent again",
                    self.id,
                    kind.as_str()
                ),
            ),
            _ => Error::new(
                ErrorCode::GatewayTimeout,
                Dispatch::OutcomeUnknown,
                format!(
                    "the answer of runner `{}` was lost or timed out after the request was \
                     sent; the outcome is unknown and it was not retried",
                    self.id
                ),
            ),
        }
    }
}

/// The actions whose lost answer leaves nothing changed: a retry is safe.
fn changes_nothing(kind: ActionKind) -> bool {
    matches!(
        kind,
        ActionKind::List | ActionKind::Describe | ActionKind::Catalog
    )
}
