//! The I/O threads of one provider and the typed messages between them and the coordinator.
//!
//! ```text
//!  coordinator ──────────── direct, non-blocking write ────────► stdin
//!  coordinator ── WriteJob, bounded(1) ──► writer ──► stdin     (what did not fit the pipe)
//!  coordinator ◄── Event, bounded(16) ──── reader ◄── stdout   (lines and read faults)
//!  coordinator ── line buffer, bounded(1) ─► reader              (a decoded line's buffer back)
//!                                      ├── writer              (write failures only)
//!                                      └── stderr drain        (process exit, via a pidfd)
//!  StderrRing  ◄────────────────────────── stderr drain ◄── stderr
//! ```
//! The writer reports only failures: a response proves the write. Every thread ends on its own
//! once its pipe closes or its channel peer is dropped; none spins or sleeps. The reader checks
//! each line and hands over its text, which the coordinator parses, and gets the buffer back
//! (docs/DECISIONS.md D-PROV-1, D-PROV-2, D-PROV-11). On Linux a request reads its response itself
//! (`super::direct`); the diagram is the portable path (`super::portable`). Windows pipes have
//! no non-blocking write and no `poll(2)`: the writer takes every frame, and a waiter thread
//! watches the process handle (`windows`).

use std::io::{ErrorKind, Read};
use std::process::{ChildStderr, ChildStdin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use super::event::event_channel;
pub(crate) use super::event::Event;
use super::event::{EventSender, Wake};
use super::process::PluginProcess;
use super::stderr_ring::{self, Retirement, StderrRing};
use crate::error::ErrorCode;
use crate::frame::ResponseLine;
pub(crate) use crate::spawn::ThreadSet;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

/// Capacity of the event channel (reader messages beyond it wait in the pipe).
pub(crate) const EVENT_CAPACITY: usize = 16;
/// Largest line buffer handed back to the reader for reuse; larger ones are freed, so an idle
/// provider never keeps a big response's buffer.
pub(crate) const RECYCLED_LINE_MAX: usize = 16 * 1024;
const READER_STACK: usize = 256 * 1024;
const SMALL_STACK: usize = 64 * 1024;
const STDERR_CHUNK: usize = 32 * 1024;

/// A frame for the writer. The writer claims it on the shared gate before its first byte.
#[derive(Debug)]
pub(crate) struct WriteJob {
    pub(crate) seq: u64,
    pub(crate) frame: Vec<u8>,
}

/// The claim handshake between coordinator and writer for job `seq`:
/// `2·seq` = queued, `2·seq + 1` = claimed by the writer, `0` = cancelled by the coordinator.
#[derive(Debug, Default)]
pub(crate) struct WriteGate(AtomicU64);

impl WriteGate {
    pub(crate) fn queue(&self, seq: u64) {
        self.0.store(seq * 2, Ordering::Release);
    }
    /// The writer's claim; false when the coordinator cancelled the job first.
    fn claim(&self, seq: u64) -> bool {
        self.0
            .compare_exchange(seq * 2, seq * 2 + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
    /// The coordinator's cancel; true when the writer had not claimed the job, so no byte of it
    /// was or will be written.
    pub(crate) fn cancel(&self, seq: u64) -> bool {
        self.0
            .compare_exchange(seq * 2, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// The coordinator's ends of the channels.
#[derive(Debug)]
pub(crate) struct Channels {
    pub(crate) stdin: Arc<ChildStdin>,
    pub(crate) jobs: Sender<WriteJob>,
    pub(crate) events: Receiver<Event>,
    pub(crate) gate: Arc<WriteGate>,
    /// Set by the reader when, as it hands over a message, more stdout bytes are already
    /// buffered: something unasked is on its way.
    pub(crate) more_pending: Arc<AtomicBool>,
    /// Hands decoded lines' buffers back to the reader.
    pub(crate) spare_lines: Sender<String>,
}

impl Channels {
    /// Gives the buffer of a decoded line back to the reader (dropped when one is already
    /// waiting there, or when it grew past [`RECYCLED_LINE_MAX`]).
    pub(crate) fn recycle(&self, line: ResponseLine) {
        let buffer = line.into_buffer();
        if buffer.capacity() <= RECYCLED_LINE_MAX {
            let _ = self.spare_lines.try_send(buffer);
        }
    }
}

/// The stdout reader thread's body: it hands lines over on the event channel, publishes
/// whether more bytes are buffered behind each, and takes line buffers back.
pub(crate) type ReaderBody = Box<dyn FnOnce(EventSender, Arc<AtomicBool>, Receiver<String>) + Send>;

/// What the exit watch runs after it queued `Exited`.
pub(crate) type ExitHook = Box<dyn FnOnce() + Send>;

/// The response path's part of a provider's threads (see `super::imp`): the senders' wake-up,
/// the stdout reader's body, and what the exit watch must tell it.
pub(crate) struct ResponseThreads {
    pub(crate) wake: Option<Arc<dyn Wake>>,
    pub(crate) reader: ReaderBody,
    pub(crate) on_exit: ExitHook,
}

/// Starts the writer, reader and stderr-drain threads (and a waiter where there is no pidfd to
/// watch: Windows, kernels before Linux 5.3, other Unix systems), named after the provider id.
/// Also returns the sender the host uses to announce `Stopping`.
pub(crate) fn start(
    id: &str,
    process: &Arc<PluginProcess>,
    stdin: ChildStdin,
    response: ResponseThreads,
    stderr: ChildStderr,
    ring: Arc<Mutex<StderrRing>>,
    idle: Arc<IdleWatch>,
) -> std::io::Result<(Channels, EventSender, ThreadSet)> {
    let (job_tx, job_rx) = crossbeam_channel::bounded::<WriteJob>(1);
    let (event_tx, event_rx) = event_channel(EVENT_CAPACITY, response.wake);
    let gate = Arc::new(WriteGate::default());
    #[cfg(unix)]
    crate::sys::unix::set_nonblocking(std::os::fd::AsFd::as_fd(&stdin))?;
    let stdin = Arc::new(stdin);
    let mut threads = ThreadSet::new("provider I/O");

    let (events, writer_gate, writer_stdin) = (event_tx.clone(), gate.clone(), stdin.clone());
    threads.spawn(format!("wc-write-{id}"), SMALL_STACK, move || {
        write_loop(writer_stdin, job_rx, writer_gate, events)
    })?;
    let more_pending = Arc::new(AtomicBool::new(false));
    let (spare_lines, spare_rx) = crossbeam_channel::bounded(1);
    let (events, pending) = (event_tx.clone(), more_pending.clone());
    threads.spawn(format!("wc-read-{id}"), READER_STACK, move || {
        (response.reader)(events, pending, spare_rx)
    })?;
    // Exit is judged by wait status. Where the kernel offers a pidfd, the stderr thread watches
    // it beside stderr (three threads per provider); elsewhere a waiter thread blocks until the
    // exit.
    let watch = ExitWatch {
        process: process.clone(),
        events: event_tx.clone(),
        idle,
        ring: ring.clone(),
        on_exit: response.on_exit,
    };
    let drain = format!("wc-stderr-{id}");
    match imp::exit_pidfd(process) {
        Some(pidfd) => threads.spawn(drain, SMALL_STACK, move || {
            drain_stderr(stderr, ring, Some((pidfd, watch)))
        })?,
        None => {
            threads.spawn(drain, SMALL_STACK, move || drain_stderr(stderr, ring, None))?;
            threads.spawn(format!("wc-wait-{id}"), SMALL_STACK, move || {
                watch.process.wait_exit();
                watch.exited();
            })?;
        }
    }

    let channels = Channels {
        stdin,
        jobs: job_tx,
        events: event_rx,
        gate,
        more_pending,
        spare_lines,
    };
    Ok((channels, event_tx, threads))
}

/// How a non-blocking write ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WriteOutcome {
    /// Every byte was written.
    Done,
    /// The pipe is full after `written` bytes.
    WouldBlock { written: usize },
    /// The write failed after `written` bytes.
    Failed { written: usize },
}

/// Writes as much of `frame` as the pipe takes now, without blocking (stdin is non-blocking).
#[cfg(unix)]
pub(crate) fn write_nonblocking(stdin: &ChildStdin, frame: &[u8]) -> WriteOutcome {
    write_until_blocked(stdin, frame)
}

/// Anonymous pipes (Windows) cannot be written without the risk of blocking: the coordinator
/// writes nothing and hands the whole frame to the writer thread.
#[cfg(windows)]
pub(crate) fn write_nonblocking(_stdin: &ChildStdin, _frame: &[u8]) -> WriteOutcome {
    WriteOutcome::WouldBlock { written: 0 }
}

/// Writes `frame` until it is done, the pipe is full (a non-blocking pipe) or the write fails.
fn write_until_blocked(stdin: &ChildStdin, frame: &[u8]) -> WriteOutcome {
    let mut written = 0;
    while written < frame.len() {
        match imp::write(stdin, &frame[written..]) {
            Ok(0) => return WriteOutcome::Failed { written },
            Ok(n) => written += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                return WriteOutcome::WouldBlock { written }
            }
            Err(_) => return WriteOutcome::Failed { written },
        }
    }
    WriteOutcome::Done
}

/// The writer thread: writes each job it claims, waiting for the pipe when it is full; reports
/// failures only.
fn write_loop(
    stdin: Arc<ChildStdin>,
    jobs: Receiver<WriteJob>,
    gate: Arc<WriteGate>,
    events: EventSender,
) {
    for job in jobs {
        if !gate.claim(job.seq) {
            continue;
        }
        let mut written = 0;
        loop {
            match write_until_blocked(&stdin, &job.frame[written..]) {
                WriteOutcome::Done => break,
                WriteOutcome::WouldBlock { written: n } => {
                    written += n;
                    imp::wait_writable(&stdin);
                }
                WriteOutcome::Failed { written: n } => {
                    let _ = events.send(Event::WriteFailed {
                        wrote_any: written + n > 0,
                    });
                    return;
                }
            }
        }
    }
}

/// Whether a plugin that exits on its own does so while idle: admitted (armed) and no call in
/// flight. Such an exit is logged as a retirement in phase `idle`; an exit during admission or
/// a call is logged by that request's own failure, one the host caused is not logged.
#[derive(Debug)]
pub(crate) struct IdleWatch {
    id: String,
    armed: AtomicBool,
    calls: AtomicUsize,
}

/// Marks one call in flight on an [`IdleWatch`] until dropped.
pub(crate) struct InCall<'a>(&'a IdleWatch);

impl Drop for InCall<'_> {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::AcqRel);
    }
}

impl IdleWatch {
    /// A watch for provider `id`, not armed until admission succeeded.
    pub(crate) fn new(id: &str) -> IdleWatch {
        IdleWatch {
            id: id.to_string(),
            armed: AtomicBool::new(false),
            calls: AtomicUsize::new(0),
        }
    }

    /// The provider was admitted: from now on an exit with no call in flight is an idle death.
    pub(crate) fn arm(&self) {
        self.armed.store(true, Ordering::Release);
    }

    /// Marks a call in flight until the guard is dropped.
    pub(crate) fn in_call(&self) -> InCall<'_> {
        self.calls.fetch_add(1, Ordering::AcqRel);
        InCall(self)
    }

    /// The retirement to log for an exit the host did not cause, when the plugin was idle.
    pub(crate) fn idle_exit(&self) -> Option<Retirement> {
        let idle = self.armed.load(Ordering::Acquire) && self.calls.load(Ordering::Acquire) == 0;
        idle.then(|| Retirement {
            id: self.id.clone(),
            phase: "idle",
            code: ErrorCode::Eof,
            detail: None,
        })
    }
}

/// Reports the plugin's exit once it is seen.
struct ExitWatch {
    process: Arc<PluginProcess>,
    events: EventSender,
    /// Tells whether an exit the host did not cause came while the plugin was idle (logged).
    idle: Arc<IdleWatch>,
    ring: Arc<Mutex<StderrRing>>,
    /// The response path's part, for a caller that may sleep where the event does not reach.
    on_exit: ExitHook,
}

impl ExitWatch {
    fn exited(self) {
        // The plugin is gone: the instance is dead, and so is anything it left in its group. The
        // leader is reaped right here, so it never lingers as a zombie until shutdown.
        // Judged before the reap, which may take a while (Windows): by then a call that was
        // in flight may have ended, failed on this very exit and logged it itself.
        let unasked = !self.process.is_retired();
        let idle_exit = self.idle.idle_exit().filter(|_| unasked);
        self.process.retire_and_reap_exited();
        if let Some(mut retirement) = idle_exit {
            retirement.detail = self.process.await_exit(Instant::now());
            stderr_ring::report(&self.ring, retirement);
        }
        let _ = self.events.send(Event::Exited);
        (self.on_exit)();
    }
}

/// The environment variable that forces the waiter-thread exit watch even where the kernel
/// offers pidfds (set to `1`; read once per process). Tests and CI use it to exercise the path
/// that kernels before Linux 5.3 and other Unix systems take.
#[cfg_attr(not(unix), allow(dead_code))]
pub const FORCE_EXIT_WAITER_ENV: &str = "WEBCODEX_PLUGIN_FORCE_EXIT_WAITER";

/// Drains stderr into the ring until EOF and, when given a pidfd, reports the plugin's exit.
/// Ends once stderr is closed and the exit (if watched) was reported.
fn drain_stderr(
    mut stderr: ChildStderr,
    ring: Arc<Mutex<StderrRing>>,
    mut exit: Option<(imp::ExitFd, ExitWatch)>,
) {
    // A quiet plugin costs a small stack buffer; a large one is allocated once a read fills it.
    let mut small = [0u8; 1024];
    let mut large: Vec<u8> = Vec::new();
    let mut stderr_open = true;
    while stderr_open || exit.is_some() {
        let (stderr_ready, exited) = match &exit {
            Some((pidfd, _)) => imp::wait_stderr_or_exit(&stderr, stderr_open, pidfd),
            None => (true, false),
        };
        if exited {
            if let Some((_, watch)) = exit.take() {
                watch.exited();
            }
        }
        if !stderr_ready {
            continue;
        }
        let buffer: &mut [u8] = if large.is_empty() {
            &mut small
        } else {
            &mut large
        };
        match stderr.read(buffer) {
            Ok(0) => stderr_open = false,
            Ok(n) => {
                ring.lock().push_bytes(&buffer[..n]);
                if n == buffer.len() && large.is_empty() {
                    large = vec![0u8; STDERR_CHUNK];
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => stderr_open = false,
        }
        if !stderr_open {
            // Reached once: a closed stderr is never read again (the loop continues above).
            let due = ring.lock().close();
            if let Some((retirement, lines)) = due {
                retirement.log(&lines);
            }
        }
    }
}
