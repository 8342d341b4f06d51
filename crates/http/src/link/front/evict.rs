//! How links leave a front other than by ending: a runner token revoked by a reload of the
//! tokens file, a hello whose name holds the link's own token, and a front that stops.
//!
//! - [`LinkRegistry::revoke`] runs each time the server's tokens are replaced (SIGHUP): every
//!   link whose token no longer authenticates as its runner id (the entry was removed, or its
//!   token rotated) is closed at once with 1008 and [`REVOKED`], its runner leaves the gateway
//!   (`list`, routing: `plugin_runner_not_found` after) and forgets its instance, and the
//!   requests waiting on it end as on a lost link. A link still in its hello is checked when it
//!   is attached (`attach` asks [`runner_cap`] under the same lock), so none slips between.
//! - [`LinkRegistry::drain`] runs when the front stops: no link is attached any more, no
//!   request is sent any more (a caller gets `plugin_runner_unavailable`, not started), each
//!   link with no answer owed is closed at once with 1001, and the others are closed by the
//!   last request leaving them (answered, or past its own deadline).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tungstenite::protocol::frame::coding::CloseCode;

use super::super::wire::{FrameError, Hello};
use super::{Connection, LinkRegistry};
use crate::tokens::Tokens;

/// The close reason of a link whose token was revoked.
pub(super) const REVOKED: &str = "the runner token was revoked";

/// The in-flight cap of `runner` when `token` still authenticates as it; `None` when it does
/// not (revoked or rotated).
pub(super) fn runner_cap(tokens: &Tokens, runner: &str, token: &str) -> Option<usize> {
    match tokens.authenticate_runner(token) {
        Some((_, id)) if id == runner => tokens.runner_max_in_flight(runner),
        _ => None,
    }
}

/// Refuses a hello whose display name holds the link's own token (as a relayed answer that
/// holds it is refused): `list` would show it to every caller with the inspect scope.
pub(super) fn check_hello_name(hello: Hello, token: &str) -> Result<Hello, FrameError> {
    match &hello.name {
        Some(name) if !token.is_empty() && name.contains(token) => Err(FrameError(
            "the hello's name holds the runner's token; give a display name without it".into(),
        )),
        _ => Ok(hello),
    }
}

impl LinkRegistry {
    /// Closes every link whose token no longer authenticates as its runner id under the
    /// tokens now in force (call it after they were replaced); each link that stays takes its
    /// token entry's cap. Returns the runner ids whose links were closed.
    pub(crate) fn revoke(&self) -> Vec<String> {
        let mut revoked: Vec<(String, Arc<Connection>)> = Vec::new();
        {
            let mut runners = self.runners.lock();
            let tokens = self.tokens.read();
            runners.retain(|id, entry| {
                let Some(connection) = entry.link.current.read().clone() else {
                    return true;
                };
                if let Some(cap) = runner_cap(&tokens, id, &connection.token) {
                    entry.remote.set_max_in_flight(cap);
                    return true;
                }
                *entry.link.current.write() = None;
                self.gateway.remove_remote(id, &entry.remote);
                revoked.push((id.clone(), connection));
                false
            });
        }
        // Outside the lock: a close may wait a moment for a writer.
        for (id, connection) in &revoked {
            log::warn!("runner link `{id}`: closed: {REVOKED}");
            connection.close(CloseCode::Policy, REVOKED);
            connection.end();
        }
        revoked.into_iter().map(|(id, _)| id).collect()
    }

    /// Begins the front's stop on its links: none is attached any more, nothing new is sent on
    /// any, and each is closed (1001) once no answer is owed on it.
    pub(crate) fn drain(&self) {
        let connections: Vec<Arc<Connection>> = {
            let runners = self.runners.lock();
            self.draining.store(true, Ordering::SeqCst);
            runners
                .values()
                .filter_map(|entry| entry.link.current.read().clone())
                .collect()
        };
        for connection in connections {
            connection.draining.store(true, Ordering::SeqCst);
            connection.close_if_drained();
        }
    }
}
