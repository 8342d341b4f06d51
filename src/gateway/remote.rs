//! A remote runner: another machine's `webcodex-plugin serve`, reached through a
//! [`RunnerLink`] (the HTTP one is `transport::http::remote_runner`, feature `http-client`; the
//! gateway itself knows no transport).
//!
//! [`RemoteRunner::forward`] sends one `plugin_tool` request and classifies what came back
//! (docs/PROTOCOL.md, remote runners):
//! - no connection could be made (DNS, refused, TLS handshake), or the circuit is open →
//!   `plugin_runner_unavailable`, not started;
//! - the runner refused the gateway's credential (HTTP 401) → `plugin_runner_unavailable`, not
//!   started (it answers 401 before reading the body);
//! - the request may have been sent and no usable answer came back (reset, early close,
//!   timeout, not a `plugin_tool` response) → `plugin_gateway_timeout`: outcome unknown for
//!   `call`, `check` and `reload`; not started for the read-only `list`, `describe` and
//!   `catalog`, which change nothing (docs/DECISIONS.md, gateway);
//! - any `plugin_tool` answer, a failure object included, is the runner's own and is returned
//!   as it came.
//!
//! Nothing is ever retried. Messages name the runner by its id only: never its URL, token,
//! binding or instance; the link's own detail goes to the log.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::Value;

use super::breaker::Breaker;
use super::output::ToolOutput;
use super::params::ActionKind;
use crate::error::{Dispatch, Error, ErrorCode};

/// The runner name a front gateway addresses on a remote `serve`: the runner of its `--config`.
pub const REMOTE_RUNNER: &str = super::runners::LOCAL_RUNNER;

/// How a front gateway reaches one remote runner: one `plugin_tool` request per call, never
/// retried, with the runner's own credential.
pub trait RunnerLink: Send + Sync {
    /// Sends `params` (already addressed to the remote's own runner) and returns its answer.
    fn send(&self, params: &Value) -> Result<LinkAnswer, LinkFailure>;
}

/// A `plugin_tool` answer from a remote runner.
#[derive(Debug, Clone)]
pub struct LinkAnswer {
    /// The output as it came.
    pub output: ToolOutput,
    /// The runner instance that answered (`Webcodex-Runner-Instance`), when it names one.
    pub instance: Option<String>,
}

/// Why a remote request produced no `plugin_tool` answer. The text is for the log only.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum LinkFailure {
    /// No connection could be made: nothing was sent.
    NotSent(String),
    /// The runner refused the credential before reading the request: nothing was done.
    Refused,
    /// The request may have been sent; no usable answer came back.
    Lost(String),
}

/// One remote runner: its id and display name, its link, and its circuit breaker.
pub struct RemoteRunner {
    id: String,
    name: String,
    link: Box<dyn RunnerLink>,
    breaker: Breaker,
    /// Requests sent and not yet answered (for the metrics).
    in_flight: AtomicUsize,
}

impl std::fmt::Debug for RemoteRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteRunner")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl RemoteRunner {
    /// A runner `id` (routed by), shown as `name`, reached through `link`.
    pub fn new(id: &str, name: &str, link: Box<dyn RunnerLink>) -> RemoteRunner {
        RemoteRunner {
            id: id.to_string(),
            name: name.to_string(),
            link,
            breaker: Breaker::default(),
            in_flight: AtomicUsize::new(0),
        }
    }

    /// The id callers route by.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Requests sent to this runner and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// The circuit breaker's state: `closed`, `open` or `probing` (see [`BREAKER_STATES`]).
    ///
    /// [`BREAKER_STATES`]: super::BREAKER_STATES
    pub fn breaker_state(&self) -> &'static str {
        self.breaker.state_name()
    }

    /// Sends one `plugin_tool` request for an action of kind `kind`; see the module text for
    /// the classification.
    pub(crate) fn forward(&self, kind: ActionKind, params: &Value) -> Result<LinkAnswer, Error> {
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
        let sent = {
            let _counted = InFlight::enter(&self.in_flight);
            self.link.send(params)
        };
        match sent {
            Ok(answer) => {
                permit.answered();
                Ok(answer)
            }
            Err(LinkFailure::Refused) => {
                permit.answered();
                log::warn!(
                    "runner `{}` refused this gateway's token; fix the runners file",
                    self.id
                );
                Err(Error::not_started(
                    ErrorCode::RunnerUnavailable,
                    format!(
                        "runner `{}` refused this gateway's credential; nothing was done (the \
                         gateway's operator must fix it)",
                        self.id
                    ),
                ))
            }
            Err(failure) => {
                permit.failed(Instant::now());
                log::warn!(
                    "runner `{}`: {} failed: {failure:?}",
                    self.id,
                    kind.as_str()
                );
                Err(self.transport_failure(kind, &failure))
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
        self.transport_failure(kind, &LinkFailure::Lost(String::new()))
    }

    fn transport_failure(&self, kind: ActionKind, failure: &LinkFailure) -> Error {
        hop_failure(&self.id, kind, failure)
    }
}

/// One request counted in a runner's in-flight gauge while it lives (also when the link
/// panics).
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn enter(count: &'a AtomicUsize) -> InFlight<'a> {
        count.fetch_add(1, Ordering::Relaxed);
        InFlight(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The failure of an action of kind `kind` on runner `id` whose request got no answer.
fn hop_failure(id: &str, kind: ActionKind, failure: &LinkFailure) -> Error {
    {
        match failure {
            LinkFailure::NotSent(_) | LinkFailure::Refused => Error::not_started(
                ErrorCode::RunnerUnavailable,
                format!(
                    "runner `{id}` is unavailable: no connection could be made; nothing was sent"
                ),
            ),
            _ if changes_nothing(kind) => Error::not_started(
                ErrorCode::GatewayTimeout,
                format!(
                    "the answer of runner `{id}` was lost or timed out; `{}` changes nothing, so \
                     it may be sent again",
                    kind.as_str()
                ),
            ),
            _ => Error::new(
                ErrorCode::GatewayTimeout,
                Dispatch::OutcomeUnknown,
                format!(
                    "the answer of runner `{id}` was lost or timed out after the request was \
                     sent; the outcome is unknown and it was not retried"
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_across_the_hop() {
        let lost = LinkFailure::Lost("reset".into());
        let not_sent = LinkFailure::NotSent("refused".into());
        for kind in ActionKind::ALL {
            let e = hop_failure("edge", kind, &not_sent);
            assert_eq!(
                (e.code(), e.dispatch()),
                (ErrorCode::RunnerUnavailable, Dispatch::NotStarted)
            );
            let e = hop_failure("edge", kind, &LinkFailure::Refused);
            assert_eq!(e.code(), ErrorCode::RunnerUnavailable);
            let e = hop_failure("edge", kind, &lost);
            assert_eq!(e.code(), ErrorCode::GatewayTimeout);
            let want = match kind {
                ActionKind::Call | ActionKind::Check | ActionKind::Reload => {
                    Dispatch::OutcomeUnknown
                }
                _ => Dispatch::NotStarted,
            };
            assert_eq!(e.dispatch(), want, "{}", kind.as_str());
            // The link's own text (addresses, OS errors) is for the log only.
            assert!(!e.message().contains("reset"), "{}", e.message());
        }
    }
}
