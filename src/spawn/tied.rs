//! Spawning child processes that die with the host.
//!
//! On Linux every child gets a parent-death signal (`PR_SET_PDEATHSIG` = SIGKILL), so a plugin
//! cannot outlive a host killed by SIGKILL. The kernel sends that signal when the *thread* that
//! forked the child exits, not the process: children are therefore forked by a small pool of
//! spawner threads (one per core, 2 to 8) that live as long as the process and serve spawn
//! requests from one bounded channel, so parallel startups still fork in parallel. The child
//! checks `getppid()` after `prctl`, so a host that died between fork and `prctl` is noticed too.
//! Grandchildren do not inherit the setting (see docs/DECISIONS.md, orphans).
//!
//! Elsewhere children are spawned on the calling thread, without a parent-death signal.

use std::io;
use std::process::{Child, Command};

/// Spawns `command`, tied to the host's lifetime where the platform allows it.
pub(crate) fn spawn_tied(command: Command) -> io::Result<Child> {
    imp::spawn_tied(command)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::process::{Child, Command};
    use std::sync::OnceLock;

    use crossbeam_channel::{bounded, Sender};

    /// Spawn requests waiting for the spawner thread.
    const QUEUE: usize = 16;
    const STACK: usize = 256 * 1024;

    struct Request {
        command: Command,
        reply: Sender<io::Result<Child>>,
    }

    /// The spawner threads' request queue (`None` when no thread could be started).
    fn spawner() -> Option<&'static Sender<Request>> {
        static SPAWNER: OnceLock<Option<Sender<Request>>> = OnceLock::new();
        SPAWNER
            .get_or_init(|| {
                let (tx, rx) = bounded::<Request>(QUEUE);
                let threads = std::thread::available_parallelism()
                    .map_or(2, |n| n.get())
                    .clamp(2, 8);
                let mut started = 0;
                for _ in 0..threads {
                    let rx = rx.clone();
                    let spawned = std::thread::Builder::new()
                        .name("wc-spawner".into())
                        .stack_size(STACK)
                        .spawn(move || {
                            for mut request in rx {
                                let _ = request.reply.send(request.command.spawn());
                            }
                        });
                    started += usize::from(spawned.is_ok());
                }
                (started > 0).then_some(tx)
            })
            .as_ref()
    }

    pub(super) fn spawn_tied(mut command: Command) -> io::Result<Child> {
        crate::sys::linux::die_with_parent(&mut command);
        let unavailable = || io::Error::other("the spawner thread is gone");
        let spawner = spawner().ok_or_else(unavailable)?;
        let (reply, answer) = bounded(1);
        spawner
            .send(Request { command, reply })
            .map_err(|_| unavailable())?;
        answer.recv().map_err(|_| unavailable())?
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;
    use std::process::{Child, Command};

    pub(super) fn spawn_tied(mut command: Command) -> io::Result<Child> {
        command.spawn()
    }
}
