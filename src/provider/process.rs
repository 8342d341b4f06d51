//! Spawning the plugin in its own process group and terminating the whole tree.
//!
//! The kill path never takes the session lock: a writer blocked in `write(2)` holds no lock
//! that termination needs. The group is signalled while the leader is not yet reaped (exit is
//! watched through a pidfd or `waitid(WNOWAIT)`, neither of which reaps), so the group id cannot
//! have been reused.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shared_child::SharedChild;

use crate::env::EnvSnapshot;

/// What to run: the resolved program, its argv, cwd and exact environment.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    /// Resolved program path.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// Working directory (absolute), or the host's.
    pub cwd: Option<PathBuf>,
    /// The exact environment (`env_clear()` + these).
    pub env: EnvSnapshot,
}

/// The plugin process and its group.
#[derive(Debug)]
pub(crate) struct PluginProcess {
    child: SharedChild,
    pgid: libc::pid_t,
    retired: AtomicBool,
}

impl PluginProcess {
    /// Spawns the plugin with piped stdio in a new process group.
    pub(crate) fn spawn(spec: &LaunchSpec) -> io::Result<PluginProcess> {
        let mut command = Command::new(&spec.program);
        command
            .args(&spec.args)
            .env_clear()
            .envs(spec.env.vars().iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(cwd) = &spec.cwd {
            command.current_dir(cwd);
        }
        let child = SharedChild::spawn(&mut command)?;
        let pgid = child.id() as libc::pid_t;
        Ok(PluginProcess {
            child,
            pgid,
            retired: AtomicBool::new(false),
        })
    }

    pub(crate) fn child(&self) -> &SharedChild {
        &self.child
    }

    /// The process id of the plugin (the group leader; its group id is the same number).
    pub(crate) fn pid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    /// True once the instance was retired (fault, exit or shutdown).
    pub(crate) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Marks the instance retired and SIGKILLs the whole process group. Never blocks.
    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::Release);
        self.kill_group();
    }

    /// SIGKILL to the process group, then to the leader through `SharedChild` (a no-op once
    /// reaped, so a reused PID is never signalled).
    pub(crate) fn kill_group(&self) {
        // SAFETY: plain syscall. The leader is reaped only by `reap`, after the last kill, so the
        // group id cannot have been reused yet.
        unsafe {
            libc::kill(-self.pgid, libc::SIGKILL);
        }
        let _ = self.child.kill();
    }

    /// Reaps the leader (the caller has seen it exit) and waits, bounded by `deadline`, until no
    /// process of the group is left. Grandchildren are reaped by init, so their disappearance is
    /// observed, not caused. Called once, after the last kill. A leader that has not exited by
    /// then (a machine under heavy load) is reaped by a detached thread as soon as it does, so
    /// no zombie is left behind and the caller is not held past the bound.
    pub(crate) fn reap(self: &Arc<Self>, deadline: Instant) {
        match self.child.try_wait() {
            Ok(Some(_)) => {}
            Ok(None) => {
                log::warn!("plugin process did not exit within the termination bound");
                let process = Arc::clone(self);
                let spawned = std::thread::Builder::new()
                    .name("wc-reap".into())
                    .stack_size(64 * 1024)
                    .spawn(move || {
                        let _ = process.child.wait();
                    });
                if spawned.is_err() {
                    log::error!("could not start a thread to reap a plugin process");
                }
            }
            Err(e) => log::warn!("reaping the plugin process failed: {e}"),
        }
        let mut pause = Duration::from_millis(1);
        loop {
            // SAFETY: signal 0 only checks for existence.
            let alive = unsafe { libc::kill(-self.pgid, 0) } == 0;
            if !alive {
                return;
            }
            let now = Instant::now();
            if now >= deadline {
                log::debug!("process group still had members at the termination bound");
                return;
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }
}

/// Blocks until the process `pid` has exited, without reaping it (`waitid` with `WNOWAIT`).
pub(crate) fn wait_exit_noreap(pid: libc::pid_t) {
    loop {
        // SAFETY: zeroed siginfo is a valid out-parameter for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            return;
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}
