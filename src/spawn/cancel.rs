//! The cancel handle of a batch of candidates (a check or a reload).

use parking_lot::Mutex;
use std::sync::Arc;

/// One registered member of a batch: a provider candidate or a running init_script.
pub(crate) trait Cancellable: Send + Sync {
    /// Kills the member now. Never blocks on a plugin.
    fn cancel(&self);
    /// True once the member is gone (its registration may be dropped).
    fn is_gone(&self) -> bool;
}

/// Cancels the admissions of a batch of candidates (a check or a reload) from another thread:
/// every candidate started with it, and every one started after, is killed at once.
///
/// Clones share one state. Candidates stay registered after admission, so cancel only while the
/// batch is still being prepared.
#[derive(Clone, Default)]
pub struct AdmissionCancel(Arc<Mutex<CancelState>>);

#[derive(Default)]
struct CancelState {
    cancelled: bool,
    /// The candidates' processes and init_scripts (a few per configured provider; gone members
    /// are dropped at each registration).
    members: Vec<Box<dyn Cancellable>>,
}

impl std::fmt::Debug for AdmissionCancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.0.lock();
        f.debug_struct("AdmissionCancel")
            .field("cancelled", &state.cancelled)
            .field("members", &state.members.len())
            .finish()
    }
}

impl AdmissionCancel {
    /// A fresh, not cancelled handle.
    pub fn new() -> AdmissionCancel {
        AdmissionCancel::default()
    }

    /// Kills every registered candidate and refuses new ones. Never blocks on a plugin.
    pub fn cancel(&self) {
        let members = {
            let mut state = self.0.lock();
            state.cancelled = true;
            std::mem::take(&mut state.members)
        };
        for member in members {
            member.cancel();
        }
    }

    /// True once [`AdmissionCancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.lock().cancelled
    }

    /// Registers a member; false (nothing registered) when the batch is already cancelled.
    pub(crate) fn register(&self, member: Box<dyn Cancellable>) -> bool {
        let mut state = self.0.lock();
        if state.cancelled {
            return false;
        }
        state.members.retain(|m| !m.is_gone());
        state.members.push(member);
        true
    }
}
