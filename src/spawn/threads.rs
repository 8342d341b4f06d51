//! The one supervisor of a child's helper threads (a plugin's I/O threads, an init_script's
//! readers and exit watch): named threads with small stacks, joined together within a bound.
//!
//! Each thread holds a token of one bounded channel until it ends, so [`ThreadSet::join_until`]
//! waits for all of them with one bounded receive, and a thread never outlives its owner
//! unnoticed: one still running at the bound (a grandchild that left the process group may hold
//! a pipe open) is left with a warning, never waited for without end.

use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

/// The helper threads of one child process.
#[derive(Debug)]
pub(crate) struct ThreadSet {
    /// What the threads serve, for the log line of one that does not end in time.
    owner: &'static str,
    handles: Vec<JoinHandle<()>>,
    done_tx: Sender<()>,
    /// Disconnects when every thread has dropped its token, i.e. has ended.
    done_rx: Receiver<()>,
}

impl ThreadSet {
    /// An empty set; `owner` names what the threads serve in the log.
    pub(crate) fn new(owner: &'static str) -> ThreadSet {
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
        ThreadSet {
            owner,
            handles: Vec::with_capacity(4),
            done_tx,
            done_rx,
        }
    }

    /// Starts a named thread with `stack` bytes of stack that runs `body`.
    pub(crate) fn spawn(
        &mut self,
        name: String,
        stack: usize,
        body: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<()> {
        let token = self.done_tx.clone();
        let handle = std::thread::Builder::new()
            .name(name)
            .stack_size(stack)
            .spawn(move || {
                body();
                drop(token);
            })?;
        self.handles.push(handle);
        Ok(())
    }

    /// Joins every thread if all end before `deadline`; else they are left running with a
    /// warning (each still ends once its pipe closes). True when all were joined.
    pub(crate) fn join_until(self, deadline: Instant) -> bool {
        drop(self.done_tx);
        loop {
            match self.done_rx.recv_deadline(deadline) {
                Ok(()) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    log::warn!("{} threads did not end within their bound", self.owner);
                    return false;
                }
            }
        }
        for handle in self.handles {
            if handle.join().is_err() {
                log::error!("a {} thread panicked", self.owner);
            }
        }
        true
    }
}
