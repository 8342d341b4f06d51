//! `read(2)` and `write(2)` on a descriptor, as plain system calls (Unix).
//!
//! On Linux libc's `read` and `write` are also thread-cancellation points: each call enters and
//! leaves the cancellation state around the system call, which costs more instructions than the
//! rest of the wrapper and buys nothing here (Rust never cancels a thread). The calls below
//! make the same system call through `syscall(2)`, with the same result and `errno`. Elsewhere
//! they are libc's.

use std::io;
use std::os::fd::RawFd;

/// `read(2)`: bytes read into `buffer`'s spare room, `Ok(0)` at the end of the stream.
///
/// # Safety
/// `buffer` must be valid for writes of `len` bytes.
pub(crate) unsafe fn read(fd: RawFd, buffer: *mut u8, len: usize) -> io::Result<usize> {
    // SAFETY: the caller's promise; the descriptor is only read.
    #[cfg(target_os = "linux")]
    let n = unsafe { libc::syscall(libc::SYS_read, fd, buffer, len) } as isize;
    #[cfg(not(target_os = "linux"))]
    let n = unsafe { libc::read(fd, buffer.cast(), len) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// `write(2)`: how many bytes of `bytes` were written.
pub(crate) fn write(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: `bytes` is valid for reads of its length; the descriptor is only written.
    #[cfg(target_os = "linux")]
    let n = unsafe { libc::syscall(libc::SYS_write, fd, bytes.as_ptr(), bytes.len()) } as isize;
    #[cfg(not(target_os = "linux"))]
    let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}
