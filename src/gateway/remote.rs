//! A remote runner: another machine's `webcodex-plugin serve`, reached through a
//! [`RunnerLink`] (the HTTP one is `transport::http::remote_runner`, feature `http-client`; the
//! gateway itself knows no transport).
//!
//! [`RemoteRunner::forward`] sends one `plugin_tool` request and classifies what came back
//! (docs/PROTOCOL.md, remote runners):
//! - the runner already has its cap of requests in flight ([`RemoteRunner::with_max_in_flight`],
//!   default 16), or it may not take another of the slots remote runners share
//!   ([`RemoteSlots`]: 48 of the front's 64, at most half of those still free per runner) →
//!   `plugin_runner_saturated`, not started, nothing sent: one slow runner holds at most its
//!   cap of the front's shared slots, and no set of slow runners holds them all;
//! - no connection could be made (DNS, refused, TLS handshake), or the circuit is open →
//!   `plugin_runner_unavailable`, not started;
//! - the runner refused the gateway's credential (HTTP 401) → `plugin_runner_unavailable`, not
//!   started (it answers 401 before reading the body);
//! - the request may have been sent and no usable answer came back (reset, early close,
//!   timeout, not a `plugin_tool` response) → `plugin_gateway_timeout`: outcome unknown for
//!   `call`, `check` and `reload`; not started for the read-only `list`, `describe` and
//!   `catalog`, which change nothing (docs/DECISIONS.md D-LINK-3);
//! - an answer that contains the link's own credential anywhere → `plugin_rpc_error`,
//!   completed: it is refused whole, so the token is never shown;
//! - any other `plugin_tool` answer is returned, to be validated and rebuilt by the gateway
//!   (`relay`) before the caller sees any of it.
//!
//! Nothing is ever retried. Messages name the runner by its id only: never its URL, token,
//! binding or instance; the link's own detail goes to the log.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::Value;

use super::breaker::Breaker;
use super::output::ToolOutput;
use super::params::ActionKind;
use super::runners::{DEFAULT_RUNNER_IN_FLIGHT, REMOTE_IN_FLIGHT};
use crate::error::{Dispatch, Error, ErrorCode};

/// The runner name a front gateway addresses on a remote `serve`: the runner of its `--config`.
pub const REMOTE_RUNNER: &str = super::runners::LOCAL_RUNNER;

/// How a front gateway reaches one remote runner: one `plugin_tool` request per call, never
/// retried, with the runner's own credential.
pub trait RunnerLink: Send + Sync {
    /// Sends `params` (already addressed to the remote's own runner) and returns its answer.
    fn send(&self, params: &Value) -> Result<LinkAnswer, LinkFailure>;

    /// Sends the `call` in `params` as [`RunnerLink::send`] does; a link may hand a successful
    /// call's result on as the JSON text it came as ([`CallAnswer::Result`]), for the gateway
    /// to check without decoding it into a `Value` first. By default, the answer of `send`.
    fn send_call(&self, params: &Value) -> Result<CallAnswer, LinkFailure> {
        self.send(params).map(CallAnswer::Output)
    }
}

/// A remote runner's answer to a `call`.
#[derive(Debug, Clone)]
pub enum CallAnswer {
    /// A successful call's output, the tool result, as its JSON text (unchecked: the gateway
    /// validates it as it validates a local provider's result).
    Result(String),
    /// Any other answer, as [`RunnerLink::send`] gives it.
    Output(LinkAnswer),
}

/// A `plugin_tool` answer from a remote runner.
#[derive(Debug, Clone)]
pub struct LinkAnswer {
    /// The output as it came.
    pub output: ToolOutput,
    /// The runner instance that answered (`Webcodex-Runner-Instance`), when it names one.
    pub instance: Option<String>,
    /// True when the link itself found its own credential in the answer (and took it out
    /// before handing the answer on): the answer is refused as one that holds it.
    pub held_link_secret: bool,
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

/// One remote runner: its id and display name, its link, its circuit breaker and its own
/// in-flight cap.
pub struct RemoteRunner {
    id: String,
    name: String,
    link: Box<dyn RunnerLink>,
    breaker: Breaker,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// The credential the link presents, never to be seen in an answer.
    secret: Option<Secret>,
}

/// A link credential and its byte searcher, built once (a call's result text is searched for
/// it on every answer).
struct Secret {
    text: String,
    finder: memchr::memmem::Finder<'static>,
}

impl Secret {
    fn new(text: &str) -> Secret {
        Secret {
            text: text.to_string(),
            finder: memchr::memmem::Finder::new(text.as_bytes()).into_owned(),
        }
    }

    /// [`text_holds_secret`] with the searcher built once.
    fn held_in(&self, text: &str) -> bool {
        holds_secret_with(text, &self.text, |t| {
            self.finder.find(t.as_bytes()).is_some()
        })
    }
}

/// One request in flight to a runner (or one of the remote runners' shared slots); frees its
/// place when dropped.
struct InFlight<'r>(&'r AtomicUsize);

/// The slots of the front's in-flight bound that its remote runners share: at most
/// [`REMOTE_IN_FLIGHT`] (48 of the 64) requests to remote runners at once, so 16 always stay
/// for the local runner. A runner takes one only while it holds fewer than are still free:
/// one runner never holds more than half of the free slots, so runners that hang one after
/// another leave room for the others (four hung runners with the default cap of 16 hold
/// 16 + 16 + 8 + 4 at most, and the next runner still gets its requests through).
#[derive(Debug, Default)]
pub struct RemoteSlots {
    taken: AtomicUsize,
}

impl RemoteSlots {
    /// Shared slots taken now.
    pub fn taken(&self) -> usize {
        self.taken.load(Ordering::Relaxed)
    }

    /// Takes a slot for a runner that holds `held` already; `None` when it may not.
    fn enter(&self, held: usize) -> Option<InFlight<'_>> {
        self.taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |taken| {
                (held < REMOTE_IN_FLIGHT.saturating_sub(taken)).then_some(taken + 1)
            })
            .ok()
            .map(|_| InFlight(&self.taken))
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
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
            max_in_flight: AtomicUsize::new(DEFAULT_RUNNER_IN_FLIGHT),
            secret: None,
        }
    }

    /// This runner with the credential its link presents: an answer that contains it anywhere
    /// is refused (`plugin_rpc_error`), so the front never shows its own token to a caller.
    pub fn with_link_secret(mut self, secret: &str) -> RemoteRunner {
        self.secret = (!secret.is_empty()).then(|| Secret::new(secret));
        self
    }

    /// This runner with its own in-flight cap (at least 1): beyond `max` requests at once,
    /// the next fails with `plugin_runner_saturated` without being sent.
    pub fn with_max_in_flight(self, max: usize) -> RemoteRunner {
        self.set_max_in_flight(max);
        self
    }

    /// Changes this runner's in-flight cap (at least 1), e.g. after its entry changed on a
    /// reload; requests in flight beyond a lower cap finish, the next waits for room.
    pub fn set_max_in_flight(&self, max: usize) {
        self.max_in_flight.store(max.max(1), Ordering::Relaxed);
    }

    /// This runner's in-flight cap.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::Relaxed)
    }

    /// Takes a place among this runner's requests in flight, with the number it held before;
    /// `None` when all are taken.
    fn enter(&self) -> Option<(InFlight<'_>, usize)> {
        let max = self.max_in_flight();
        self.in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|held| (InFlight(&self.in_flight), held))
    }

    /// The id callers route by.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Requests to this runner in flight (admitted under its cap and not yet answered).
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// The circuit breaker's state: `closed`, `open` or `probing` (see [`BREAKER_STATES`]).
    ///
    /// [`BREAKER_STATES`]: super::BREAKER_STATES
    pub fn breaker_state(&self) -> &'static str {
        self.breaker.state_name()
    }

    /// True unless the last request to this runner failed to reach it (no connection, or its
    /// answer lost) or its circuit is open; a runner nothing was sent to yet counts as reached.
    /// Read, never probed: the metrics' `runner_link_up` of a `--runners` runner.
    pub fn reached(&self) -> bool {
        self.breaker.last_answered()
    }

    /// Sends one `plugin_tool` request for an action of kind `kind`, under this runner's cap
    /// and a slot of `shared`; see the module text for the classification.
    pub(crate) fn forward(
        &self,
        shared: &RemoteSlots,
        kind: ActionKind,
        params: &Value,
    ) -> Result<LinkAnswer, Error> {
        self.exchange(
            shared,
            kind,
            || self.link.send(params),
            |answer| self.holds_secret(answer),
        )
    }

    /// [`RemoteRunner::forward`] for a `call`, whose successful result the link may hand on as
    /// text ([`RunnerLink::send_call`]).
    pub(crate) fn forward_call(
        &self,
        shared: &RemoteSlots,
        params: &Value,
    ) -> Result<CallAnswer, Error> {
        self.exchange(
            shared,
            ActionKind::Call,
            || self.link.send_call(params),
            |answer| match answer {
                CallAnswer::Result(text) => self
                    .secret
                    .as_ref()
                    .is_some_and(|secret| secret.held_in(text)),
                CallAnswer::Output(answer) => self.holds_secret(answer),
            },
        )
    }

    /// True when `answer` holds this runner's link credential anywhere.
    fn holds_secret(&self, answer: &LinkAnswer) -> bool {
        answer.held_link_secret
            || self
                .secret
                .as_ref()
                .map(|secret| secret.text.as_str())
                .is_some_and(|secret| match answer.output.received_json() {
                    Some(json) => super::relay::contains_secret(json, secret),
                    None => super::relay::contains_secret(&answer.output.to_json(), secret),
                })
    }

    /// One request under this runner's in-flight cap and circuit breaker: `send` sends it, and
    /// an answer for which `held_secret` is true is refused whole.
    fn exchange<A>(
        &self,
        shared: &RemoteSlots,
        kind: ActionKind,
        send: impl FnOnce() -> Result<A, LinkFailure>,
        held_secret: impl FnOnce(&A) -> bool,
    ) -> Result<A, Error> {
        let Some((_in_flight, held)) = self.enter() else {
            return Err(Error::not_started(
                ErrorCode::RunnerSaturated,
                format!(
                    "runner `{}` already has {} requests in flight, its limit; nothing was \
                     sent, try again when one finishes",
                    self.id,
                    self.max_in_flight()
                ),
            ));
        };
        let Some(_shared) = shared.enter(held) else {
            return Err(Error::not_started(
                ErrorCode::RunnerSaturated,
                format!(
                    "runner `{}` may not take more of the front's slots shared by remote runners \
                     now (it holds {held}; a runner holds at most half of those still free); \
                     nothing was sent, try again when one finishes",
                    self.id
                ),
            ));
        };
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
        match send() {
            Ok(answer) => {
                permit.answered();
                if held_secret(&answer) {
                    log::warn!(
                        "runner `{}` answered `{}` with this gateway's own credential in \
                         the answer; the answer was refused",
                        self.id,
                        kind.as_str()
                    );
                    return Err(Error::new(
                        ErrorCode::RpcError,
                        Dispatch::Completed,
                        format!(
                            "runner `{}` answered with something this gateway may not show \
                             (its own credential); the answer was refused",
                            self.id
                        ),
                    ));
                }
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

/// True when the JSON `text` holds `secret` in a string or key. Text with no backslash reads
/// as it decodes, so a byte search decides it; text with an escape is decoded and walked (an
/// escape could spell the secret out). A number spelling the secret counts too: refusing such
/// an answer is safe.
#[cfg(test)]
pub(crate) fn text_holds_secret(text: &str, secret: &str) -> bool {
    !secret.is_empty() && holds_secret_with(text, secret, |t| t.contains(secret))
}

/// [`text_holds_secret`] with `search`, a byte search for the secret.
fn holds_secret_with(text: &str, secret: &str, search: impl Fn(&str) -> bool) -> bool {
    if !text.as_bytes().contains(&b'\\') {
        return search(text);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value) => super::relay::contains_secret(&value, secret),
        // Not JSON: refused by the result check anyway; a byte search is all there is.
        Err(_) => search(text),
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
    use std::sync::mpsc;
    use std::sync::Mutex;

    /// A link whose answers wait until the test releases them, one per message.
    struct Held {
        entered: mpsc::Sender<()>,
        release: Mutex<mpsc::Receiver<()>>,
        echo: Option<String>,
    }

    impl RunnerLink for Held {
        fn send(&self, _: &Value) -> Result<LinkAnswer, LinkFailure> {
            let _ = self.entered.send(());
            let _ = self.release.lock().unwrap().recv();
            let text = self.echo.clone().unwrap_or_default();
            Ok(LinkAnswer {
                output: ToolOutput::received(
                    true,
                    serde_json::json!({"runner": "local", "note": text}),
                ),
                instance: None,
                held_link_secret: false,
            })
        }
    }

    #[test]
    fn a_secret_is_found_in_result_text_however_it_is_spelled() {
        let secret = "s3cret/token";
        for (text, holds) in [
            (
                r#"{"content":[{"type":"text","text":"s3cret/token"}]}"#,
                true,
            ),
            (
                r#"{"content":[{"type":"text","text":"s3cret\/token"}]}"#,
                true,
            ),
            (
                r#"{"content":[{"type":"text","text":"\u0073\u0033cret/token"}]}"#,
                true,
            ),
            (r#"{"s3cret/token":1}"#, true),
            (
                r#"{"content":[{"type":"text","text":"s3cret\ntoken"}]}"#,
                false,
            ),
            (r#"{"content":[{"type":"text","text":"s3cret"}]}"#, false),
            (r#"{"content":"#, false),
            (r#"{"content":"\"s3cret/token"#, true),
        ] {
            assert_eq!(text_holds_secret(text, secret), holds, "{text}");
            assert_eq!(Secret::new(secret).held_in(text), holds, "{text}");
            if let Ok(value) = serde_json::from_str::<Value>(text) {
                assert_eq!(
                    super::super::relay::contains_secret(&value, secret),
                    holds,
                    "{text}"
                );
            }
        }
        assert!(!text_holds_secret("{}", ""));
    }

    #[test]
    fn the_in_flight_cap_refuses_without_sending_and_frees_its_places() {
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        let link = Held {
            entered: entered_tx,
            release: Mutex::new(release_rx),
            echo: None,
        };
        let runner = std::sync::Arc::new(
            RemoteRunner::new("edge", "Edge", Box::new(link)).with_max_in_flight(2),
        );
        let params = serde_json::json!({"action": "list", "runner": "local"});
        let held: Vec<_> = (0..2)
            .map(|_| {
                let (runner, params) = (runner.clone(), params.clone());
                std::thread::spawn(move || {
                    runner
                        .forward(&RemoteSlots::default(), ActionKind::List, &params)
                        .is_ok()
                })
            })
            .collect();
        for _ in 0..2 {
            entered.recv().unwrap();
        }
        let e = runner
            .forward(&RemoteSlots::default(), ActionKind::List, &params)
            .unwrap_err();
        assert_eq!(
            (e.code(), e.dispatch()),
            (ErrorCode::RunnerSaturated, Dispatch::NotStarted)
        );
        assert!(entered.try_recv().is_err(), "a saturated request was sent");
        release.send(()).unwrap();
        release.send(()).unwrap();
        for h in held {
            assert!(h.join().unwrap());
        }
        // Both places are free again.
        release.send(()).unwrap();
        assert!(runner
            .forward(&RemoteSlots::default(), ActionKind::List, &params)
            .is_ok());
    }

    #[test]
    fn hung_runners_leave_shared_slots_for_the_next_one() {
        let shared = RemoteSlots::default();
        // Four runners with the default cap of 16 that never give a slot back, one after
        // another, then interleaved: they never hold all 48, and a fresh runner gets one.
        let mut held = Vec::new();
        let mut per_runner = [0usize; 4];
        for (runner, n) in per_runner.iter_mut().enumerate() {
            while *n < DEFAULT_RUNNER_IN_FLIGHT {
                let Some(slot) = shared.enter(*n) else { break };
                held.push(slot);
                *n += 1;
            }
            assert!(*n > 0, "runner {runner} got nothing");
        }
        assert_eq!(per_runner, [16, 16, 8, 4]);
        assert_eq!(shared.taken(), 44);
        let fresh = shared.enter(0).expect("a fresh runner gets a slot");
        let second = shared.enter(1).expect("and a second one");
        assert!(
            shared.enter(2).is_none(),
            "a third would be half of what is free"
        );
        drop((fresh, second));
        drop(held);
        assert_eq!(shared.taken(), 0);
        // One runner alone takes at most half of what is free, and never more than 48 in all.
        let shared = RemoteSlots::default();
        let alone: Vec<_> = (0..64).map_while(|n| shared.enter(n)).collect();
        assert_eq!(alone.len(), 24);
        let others: Vec<_> = (0..64).filter_map(|_| shared.enter(0)).collect();
        assert_eq!(alone.len() + others.len(), REMOTE_IN_FLIGHT);
    }

    #[test]
    fn a_runner_refused_a_shared_slot_is_saturated_and_nothing_is_sent() {
        let (entered_tx, entered) = mpsc::channel();
        let (_release, release_rx) = mpsc::channel();
        let link = Held {
            entered: entered_tx,
            release: Mutex::new(release_rx),
            echo: None,
        };
        let runner = RemoteRunner::new("edge", "Edge", Box::new(link));
        let shared = RemoteSlots::default();
        let taken: Vec<_> = (0..REMOTE_IN_FLIGHT)
            .map(|_| shared.enter(0).unwrap())
            .collect();
        let params = serde_json::json!({"action": "list", "runner": "local"});
        let e = runner
            .forward(&shared, ActionKind::List, &params)
            .unwrap_err();
        assert_eq!(
            (e.code(), e.dispatch()),
            (ErrorCode::RunnerSaturated, Dispatch::NotStarted)
        );
        assert!(entered.try_recv().is_err(), "a refused request was sent");
        assert_eq!(runner.in_flight(), 0);
        drop(taken);
    }

    #[test]
    fn an_answer_holding_the_link_secret_is_refused() {
        let (entered_tx, _entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        let link = Held {
            entered: entered_tx,
            release: Mutex::new(release_rx),
            echo: Some("see s3cret-link-token here".into()),
        };
        let runner =
            RemoteRunner::new("edge", "Edge", Box::new(link)).with_link_secret("s3cret-link-token");
        release.send(()).unwrap();
        let e = runner
            .forward(
                &RemoteSlots::default(),
                ActionKind::List,
                &serde_json::json!({}),
            )
            .unwrap_err();
        assert_eq!(
            (e.code(), e.dispatch()),
            (ErrorCode::RpcError, Dispatch::Completed)
        );
        assert!(!e.message().contains("s3cret"), "{}", e.message());
    }

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
