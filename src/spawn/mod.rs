//! Starting child processes tied to the host, below both `env` (init_scripts) and `provider`
//! (plugins): the long-lived spawner threads that give every child a parent-death signal, the
//! cancel handle of a batch of children being started, and the one supervisor of a child's
//! helper threads (`threads`). The system calls themselves are `crate::sys`'s.
//! On Windows a child's tree is a Job Object instead (`windows`).

mod cancel;
mod threads;
#[cfg(unix)]
mod tied;
#[cfg(windows)]
pub(crate) mod windows;

pub use cancel::AdmissionCancel;
pub(crate) use cancel::Cancellable;
pub(crate) use threads::ThreadSet;
#[cfg(unix)]
pub(crate) use tied::spawn_tied;
