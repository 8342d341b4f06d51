//! Windows: the same threads and messages over anonymous pipes.
//!
//! Anonymous pipes have no non-blocking writes and no readiness wait, so:
//! - the coordinator never writes itself: `write_nonblocking` takes nothing and every frame
//!   goes to the writer thread, whose write may block; the coordinator still waits with its
//!   deadline, and retirement terminates the job, which breaks the pipe and ends the write;
//! - the stderr drain only drains (blocking reads until EOF);
//! - a waiter thread `wc-wait-ID` watches the process handle and, on exit, retires the instance
//!   and terminates its job (grandchildren that hold the pipes go too), as the Unix waiter does.

use std::convert::Infallible;
use std::process::{ChildStderr, ChildStdin};

use crate::provider::process::PluginProcess;

/// There is nothing the stderr drain could watch for the exit: the waiter thread watches it.
pub(super) type ExitFd = Infallible;

/// One write of stdin.
pub(super) fn write(mut stdin: &ChildStdin, bytes: &[u8]) -> std::io::Result<usize> {
    std::io::Write::write(&mut stdin, bytes)
}

/// A blocking write waits for the pipe by itself.
pub(super) fn wait_writable(_stdin: &ChildStdin) {}

/// Never called: there is no [`ExitFd`].
pub(super) fn wait_stderr_or_exit(_: &ChildStderr, _: bool, never: &ExitFd) -> (bool, bool) {
    match *never {}
}

/// The waiter thread watches the process handle.
pub(super) fn exit_pidfd(_process: &PluginProcess) -> Option<ExitFd> {
    None
}
