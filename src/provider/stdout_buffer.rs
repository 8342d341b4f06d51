//! The read buffer under the plugin's stdout line reader ([`StdoutLines`]).
//!
//! On Unix it is filled by `read(2)` straight into uninitialized memory, so a provider keeps
//! resident only the pages its reads reached (`std::io::BufReader` would zero-fill 64 KiB);
//! Windows keeps `BufReader` over `ChildStdout` (docs/DECISIONS.md D-PROV-11).

#[cfg(unix)]
use std::os::fd::OwnedFd;
#[cfg(not(unix))]
use std::process::ChildStdout;

use crate::frame::LineReader;

/// The read buffer of the plugin's stdout.
pub(crate) const STDOUT_BUFFER: usize = 64 * 1024;

/// The plugin's stdout, owned by whoever reads it (the reader thread, or the direct read's
/// port): its descriptor on Unix (any readable one: tests use a plain pipe).
#[cfg(unix)]
pub(crate) type Stdout = OwnedFd;
/// The plugin's stdout, owned by whoever reads it (the reader thread).
#[cfg(not(unix))]
pub(crate) type Stdout = ChildStdout;

/// The line reader over the plugin's stdout.
#[cfg(unix)]
pub(crate) type StdoutLines = LineReader<unix::StdoutBuffer>;
/// The line reader over the plugin's stdout.
#[cfg(not(unix))]
pub(crate) type StdoutLines = LineReader<std::io::BufReader<Stdout>>;

/// A line reader over `stdout` with a read buffer of `capacity` bytes.
pub(crate) fn stdout_lines(stdout: Stdout, capacity: usize) -> StdoutLines {
    #[cfg(unix)]
    let reader = unix::StdoutBuffer::new(stdout, capacity);
    #[cfg(not(unix))]
    let reader = std::io::BufReader::with_capacity(capacity, stdout);
    LineReader::new(reader)
}

#[cfg(unix)]
mod unix {
    use std::io::{self, BufRead, ErrorKind, Read};
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::sync::Arc;

    use super::Stdout;
    use crate::sys::unix::read_into;

    /// A `BufRead` over stdout whose buffer is never written but by `read(2)`.
    #[derive(Debug)]
    pub(crate) struct StdoutBuffer {
        stdout: Stdout,
        /// The bytes of the last read (its length); its capacity is the buffer's size.
        buffer: Vec<u8>,
        /// How many bytes of `buffer` were consumed.
        start: usize,
        /// Another, blocking description of the same pipe, read instead of `stdout` while
        /// `read_blocking` is set (while a request sleeps in its read: `super::super::direct`).
        blocking: Option<Arc<OwnedFd>>,
        read_blocking: bool,
    }

    impl StdoutBuffer {
        pub(crate) fn new(stdout: Stdout, capacity: usize) -> StdoutBuffer {
            StdoutBuffer {
                stdout,
                // Only allocated: no page is touched before a read fills it.
                buffer: Vec::with_capacity(capacity.max(1)),
                start: 0,
                blocking: None,
                read_blocking: false,
            }
        }

        /// stdout's descriptor.
        #[cfg_attr(
            not(all(target_os = "linux", not(webcodex_portable_wait))),
            allow(dead_code)
        )]
        pub(crate) fn stdout(&self) -> BorrowedFd<'_> {
            self.stdout.as_fd()
        }

        /// Gives the buffer a second, blocking description of the same pipe, to read from
        /// while [`StdoutBuffer::read_blocking`] says so.
        #[cfg_attr(
            not(all(target_os = "linux", not(webcodex_portable_wait))),
            allow(dead_code)
        )]
        pub(crate) fn set_blocking(&mut self, blocking: Arc<OwnedFd>) {
            self.blocking = Some(blocking);
        }

        /// Reads from the blocking description (if it was given one) until set back to false.
        #[cfg_attr(
            not(all(target_os = "linux", not(webcodex_portable_wait))),
            allow(dead_code)
        )]
        #[inline]
        pub(crate) fn read_blocking(&mut self, blocking: bool) {
            self.read_blocking = blocking;
        }

        /// The bytes read and not yet consumed.
        pub(crate) fn buffer(&self) -> &[u8] {
            &self.buffer[self.start..]
        }
    }

    impl BufRead for StdoutBuffer {
        fn fill_buf(&mut self) -> io::Result<&[u8]> {
            if self.start >= self.buffer.len() {
                self.start = 0;
                let fd = match (&self.blocking, self.read_blocking) {
                    (Some(blocking), true) => blocking.as_fd(),
                    _ => self.stdout.as_fd(),
                };
                loop {
                    // Fills the buffer's whole capacity, untouched before (no zero-fill).
                    match read_into(fd, &mut self.buffer) {
                        Ok(_) => break,
                        // A blocking read interrupted by a signal: read again.
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Ok(self.buffer())
        }

        fn consume(&mut self, amount: usize) {
            self.start = (self.start + amount).min(self.buffer.len());
        }
    }

    impl Read for StdoutBuffer {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let available = self.fill_buf()?;
            let n = available.len().min(out.len());
            out[..n].copy_from_slice(&available[..n]);
            self.consume(n);
            Ok(n)
        }
    }

    #[cfg(test)]
    mod tests {
        use std::io::{BufRead, ErrorKind, Read, Write};
        use std::os::fd::OwnedFd;

        use super::*;

        fn pipe_buffer(capacity: usize) -> (StdoutBuffer, os_pipe::PipeWriter) {
            let (reader, writer) = os_pipe::pipe().unwrap();
            (StdoutBuffer::new(OwnedFd::from(reader), capacity), writer)
        }

        #[test]
        fn reads_what_was_written_in_buffer_sized_pieces() {
            let (mut buffer, mut writer) = pipe_buffer(4);
            writer.write_all(b"hello world").unwrap();
            drop(writer);
            let mut all = Vec::new();
            buffer.read_to_end(&mut all).unwrap();
            assert_eq!(all, b"hello world");
        }

        #[test]
        fn consume_leaves_the_rest_buffered() {
            let (mut buffer, mut writer) = pipe_buffer(64);
            writer.write_all(b"one\ntwo\n").unwrap();
            assert_eq!(buffer.fill_buf().unwrap(), b"one\ntwo\n");
            buffer.consume(4);
            assert_eq!(buffer.buffer(), b"two\n");
            buffer.consume(100);
            assert!(buffer.buffer().is_empty());
        }

        #[test]
        fn end_of_stream_is_an_empty_fill() {
            let (mut buffer, writer) = pipe_buffer(64);
            drop(writer);
            assert!(buffer.fill_buf().unwrap().is_empty());
        }

        #[test]
        fn a_non_blocking_pipe_without_bytes_would_block_and_keeps_nothing() {
            let (mut buffer, _writer) = pipe_buffer(64);
            crate::sys::unix::set_nonblocking(buffer.stdout()).unwrap();
            let err = buffer.fill_buf().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::WouldBlock);
            assert!(buffer.buffer().is_empty());
        }
    }
}
