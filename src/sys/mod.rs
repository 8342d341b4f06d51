//! The one door to the operating system: every system call this crate makes.
//!
//! Each function here does one call (or one short, fixed sequence of calls), is safe to call,
//! and says what it does and how it fails. The rest of the crate forbids `unsafe` code
//! (`#![deny(unsafe_code)]` at the crate root, allowed only on this module), so where danger
//! can live is known at a glance.
//!
//! - [`unix`]: process groups, the wait for an exit that does not reap, `poll(2)`,
//!   non-blocking descriptors, and `read(2)`/`write(2)` on the plugin's pipes, all through
//!   [rustix](https://docs.rs/rustix)'s safe API (on Linux it makes the system call itself,
//!   so no libc wrapper and no thread-cancellation point sits on the call path). No `unsafe`.
//! - [`linux`]: what only Linux has: the pidfd of a plugin, the parent-death signal set in the
//!   child before `exec` (the one `unsafe` block of the Unix side: `CommandExt::pre_exec`),
//!   the stdout reader's epoll set and eventfd, and a second open file description of a pipe
//!   through `/proc/self/fd`.
//! - [`windows`]: Job Objects (a plugin's process tree, killed on close), the suspended
//!   child's resumption, and waits on process handles, through `windows-sys`: one `unsafe`
//!   block per function, each with its SAFETY comment; a directory's identity (volume serial
//!   number, file index, link count) through its handle, for project-bound tools, by
//!   winapi-util's safe wrappers (no `unsafe`). On Unix that identity needs no door: std's
//!   `MetadataExt` (`dev`, `ino`, `nlink`) has it.

#[cfg(target_os = "linux")]
pub(crate) mod linux;
#[cfg(unix)]
pub(crate) mod unix;
#[cfg(windows)]
pub(crate) mod windows;
