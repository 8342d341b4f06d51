//! How the coordinator waits for the next event of a request.
//!
//! Every event reaches the coordinator through the one bounded event channel ([`EventSender`]
//! → [`EventWait`]); this module decides only how the coordinator *sleeps* until one is there.
//!
//! - **Direct read** (the default on Linux, any number of CPUs; see `super::port`). The caller
//!   takes stdout over and reads the response itself; it sleeps in `poll(2)` on stdout and the
//!   wake descriptor ([`EventWait::wait_direct`]), so the other threads' events still wake it.
//!   When it cannot take stdout over (the reader is reading), it uses the readiness wait.
//! - **Readiness wait** (the default on other Unix hosts with more than one usable CPU). The
//!   coordinator sleeps in `poll(2)` on the plugin's stdout (readiness only: it never reads it)
//!   and on a wake descriptor. The plugin's write then wakes the coordinator and the stdout
//!   reader at once, and the coordinator takes the response line from the channel as soon as
//!   the reader has read and checked it (the coordinator parses it itself), instead of being woken by the reader after it (one thread wake-up less
//!   on the path of every response). Events that come without stdout bytes (exit, a write
//!   failure, `stop()`, a line from bytes the reader had already buffered) signal the
//!   wake descriptor, but only while the coordinator is armed in `poll(2)`, so the senders pay a
//!   system call only when someone sleeps there.
//! - **Plain blocking** (`recv_deadline`) on a host with one usable CPU (the reader must run on
//!   the coordinator's CPU anyway, so waking the coordinator early only adds a switch), on
//!   systems without `poll(2)`, or when forced with [`RESPONSE_WAIT_ENV`].
//!
//! Neither path polls in a loop: `poll(2)` blocks until a descriptor is ready or the deadline
//! passes, and once stdout is readable the coordinator blocks on the channel (after at most
//! [`DECODE_WAIT`] of `try_recv`, the time the reader takes to read and check a small line).

use std::io;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError, TrySendError};

use super::event::Event;
#[cfg(target_os = "linux")]
use super::kick::Kicker;

/// The environment variable that picks how the coordinator waits for responses (read once per
/// process): `direct` (the default on Linux) has the caller read the response from stdout
/// itself, sleeping in a blocking read where it can; `direct-poll` has it sleep in `poll(2)`
/// instead; `block` forces plain blocking on the event channel; `poll` forces the readiness
/// wait even on one usable CPU, and `poll=MICROS` also sets how long it checks for the response
/// line once stdout is readable (default 20 µs); unset (or anything else) takes `direct` where
/// it exists, else chooses by the number of usable CPUs. Tests and measurements use it to
/// exercise and compare the paths.
pub const RESPONSE_WAIT_ENV: &str = "WEBCODEX_PLUGIN_RESPONSE_WAIT";

/// After stdout became readable, how long the coordinator checks the channel (`try_recv` in a
/// spin) before it blocks: about the time the reader thread needs to be scheduled and read a
/// small response line.
pub(crate) const DECODE_WAIT: Duration = Duration::from_micros(20);

/// How the coordinator sleeps until the next event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitMode {
    /// `recv_deadline` on the event channel.
    Block,
    /// `poll(2)` on stdout and the wake descriptor, then the channel after at most this
    /// decode wait.
    Readiness(Duration),
    /// The caller takes stdout over for each request and reads the response itself (see
    /// `super::port`); when it cannot (the reader is reading), the readiness wait with
    /// [`DECODE_WAIT`].
    Direct,
}

impl WaitMode {
    /// The name [`RESPONSE_WAIT_ENV`] uses for this mode.
    pub(crate) fn name(self) -> &'static str {
        match self {
            WaitMode::Block => "block",
            WaitMode::Readiness(_) => "poll",
            WaitMode::Direct => "direct",
        }
    }
}

/// Whether a request of the direct read sleeps in a blocking read of stdout where it can (the
/// default) rather than in `poll(2)` (`WEBCODEX_PLUGIN_RESPONSE_WAIT=direct-poll`).
#[cfg(target_os = "linux")]
pub(crate) fn blocking_read_enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED
        .get_or_init(|| std::env::var_os(RESPONSE_WAIT_ENV).map_or(true, |v| v != "direct-poll"))
}

/// The mode of this process: [`RESPONSE_WAIT_ENV`], else the direct read where stdout can be
/// handed over (Linux), else readiness where `poll(2)` exists and more than one CPU is usable.
pub(crate) fn wait_mode() -> WaitMode {
    static MODE: OnceLock<WaitMode> = OnceLock::new();
    *MODE.get_or_init(|| {
        let forced = std::env::var_os(RESPONSE_WAIT_ENV);
        let forced = forced.as_ref().and_then(|v| v.to_str()).unwrap_or("");
        let decode_wait = forced
            .strip_prefix("poll=")
            .and_then(|micros| micros.parse().ok())
            .map_or(DECODE_WAIT, Duration::from_micros);
        match forced {
            "block" => WaitMode::Block,
            _ if !readiness::SUPPORTED => WaitMode::Block,
            "poll" => WaitMode::Readiness(decode_wait),
            _ if forced.starts_with("poll=") => WaitMode::Readiness(decode_wait),
            // The stdout hand-over of `super::port` exists on Linux (epoll).
            _ if cfg!(target_os = "linux") => WaitMode::Direct,
            _ if readiness::usable_cpus() > 1 => WaitMode::Readiness(decode_wait),
            _ => WaitMode::Block,
        }
    })
}

/// What the senders and the coordinator share: whether the coordinator sleeps in `poll(2)`, and
/// the descriptor that wakes it.
#[derive(Debug)]
struct Wake {
    /// True while the coordinator is in (or about to enter) `poll(2)`.
    armed: AtomicBool,
    /// The wake descriptor; `None` in [`WaitMode::Block`].
    signal: Option<readiness::Signal>,
    /// Wakes a caller that sleeps in a blocking read of stdout (see `super::kick`).
    #[cfg(target_os = "linux")]
    kicker: OnceLock<Arc<Kicker>>,
}

impl Wake {
    /// After an event was queued (or could not be, the channel being full): wakes the
    /// coordinator if it sleeps in `poll(2)`, or in a blocking read unless the event is the
    /// plugin's exit (`exit`: a response may still follow it, see the exit grace of
    /// `super::kick`).
    fn notify(&self, exit: bool) {
        #[cfg(target_os = "linux")]
        if let Some(kicker) = self.kicker.get() {
            if !exit {
                kicker.kick();
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = exit;
        if let Some(signal) = &self.signal {
            // Pairs with the fence in `EventWait::arm`: either the coordinator's `try_recv`
            // sees the event just queued, or this load sees it armed.
            fence(Ordering::SeqCst);
            if self.armed.load(Ordering::Relaxed) {
                signal.raise();
            }
        }
    }
}

/// The senders' end of the event channel (reader, writer, exit watch, `stop()`).
#[derive(Debug, Clone)]
pub(crate) struct EventSender {
    events: Sender<Event>,
    wake: Arc<Wake>,
}

impl EventSender {
    /// Sends `event`, blocking while the channel is full; `Err` once the coordinator is gone.
    pub(crate) fn send(&self, event: Event) -> Result<(), Event> {
        let exit = matches!(event, Event::Exited);
        self.events.send(event).map_err(|e| e.into_inner())?;
        self.wake.notify(exit);
        Ok(())
    }

    /// Hands the senders the kicker of a caller that sleeps in a blocking read of stdout.
    #[cfg(target_os = "linux")]
    pub(crate) fn set_kicker(&self, kicker: Arc<Kicker>) {
        let _ = self.wake.kicker.set(kicker);
    }

    /// Sends `event` if the channel has room; gives it back when the channel is full or closed.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn send_now(&self, event: Event) -> Result<(), TrySendError<Event>> {
        let exit = matches!(event, Event::Exited);
        self.events.try_send(event)?;
        self.wake.notify(exit);
        Ok(())
    }

    /// Sends `event` if the channel has room (an announcement that may be dropped when the
    /// channel is full: the coordinator has events to read then anyway).
    pub(crate) fn try_send(&self, event: Event) {
        let exit = matches!(event, Event::Exited);
        match self.events.try_send(event) {
            Ok(()) => self.wake.notify(exit),
            // Full: the coordinator has events to read; it must not sleep through them.
            Err(TrySendError::Full(_)) => self.wake.notify(exit),
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

/// The coordinator's end of the event channel.
#[derive(Debug)]
pub(crate) struct EventWait {
    events: Receiver<Event>,
    wake: Arc<Wake>,
    /// The plugin's stdout, watched for readiness in [`WaitMode::Readiness`]. Weak: the reader
    /// owns it, and stdout closes when the reader ends, as without this watch.
    stdout: Option<readiness::Source>,
    /// How long to check the channel once stdout is readable, before blocking on it.
    decode_wait: Duration,
}

/// The event channel (bounded to `capacity`) with the wake-up of `mode`; `stdout` is watched in
/// [`WaitMode::Readiness`].
pub(crate) fn event_channel(
    capacity: usize,
    mode: WaitMode,
    stdout: &readiness::Stdout,
) -> io::Result<(EventSender, EventWait)> {
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    let (signal, source, decode_wait) = match mode {
        WaitMode::Readiness(decode_wait) => {
            let (signal, source) = readiness::Signal::new(stdout)?;
            (Some(signal), Some(source), decode_wait)
        }
        WaitMode::Direct => {
            let (signal, source) = readiness::Signal::new(stdout)?;
            (Some(signal), Some(source), DECODE_WAIT)
        }
        WaitMode::Block => (None, None, Duration::ZERO),
    };
    let wake = Arc::new(Wake {
        armed: AtomicBool::new(false),
        signal,
        #[cfg(target_os = "linux")]
        kicker: OnceLock::new(),
    });
    Ok((
        EventSender {
            events: tx,
            wake: wake.clone(),
        },
        EventWait {
            events: rx,
            wake,
            stdout: source,
            decode_wait,
        },
    ))
}

impl EventWait {
    /// The next event if one is queued.
    #[inline]
    pub(crate) fn try_recv(&self) -> Result<Event, TryRecvError> {
        self.events.try_recv()
    }

    /// True when no event is queued: two loads, where a failed `try_recv` costs more than a
    /// hundred instructions (the check that runs before every request).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Plain blocking wait for the next event until `until`.
    #[inline]
    pub(crate) fn recv_deadline(&self, until: Instant) -> Result<Event, RecvTimeoutError> {
        self.events.recv_deadline(until)
    }

    /// Waits for the next event until `until`, in this process's [`WaitMode`].
    #[inline]
    pub(crate) fn next(&self, until: Instant) -> Result<Event, RecvTimeoutError> {
        match &self.stdout {
            Some(stdout) => self.next_by_readiness(stdout, until),
            None => self.events.recv_deadline(until),
        }
    }

    /// The readiness wait: arm, check the channel, sleep in `poll(2)`; once stdout is readable,
    /// take the response line from the channel.
    fn next_by_readiness(
        &self,
        stdout: &readiness::Source,
        until: Instant,
    ) -> Result<Event, RecvTimeoutError> {
        // Held only for this wait: the descriptor cannot be closed and reused under `poll(2)`.
        let Some(watch) = stdout.watch() else {
            // The reader has ended: its last event is in the channel (or the channel is closed).
            return self.events.recv_deadline(until);
        };
        loop {
            if let Some(queued) = self.arm() {
                return queued;
            }
            let ready = watch.wait(until);
            self.disarm();
            match ready {
                readiness::Ready::Stdout => return self.take_decoded(until),
                // An event was announced (or the wait was interrupted): check the channel again.
                readiness::Ready::Woken => continue,
                readiness::Ready::TimedOut if Instant::now() < until => continue,
                readiness::Ready::TimedOut | readiness::Ready::Failed => {
                    return self.events.recv_deadline(until)
                }
            }
        }
    }

    /// Arms the wake descriptor before a sleep in `poll(2)`, then checks the channel: an event
    /// queued before the arm (or a closed channel) is returned, disarmed; `None` means sleep.
    #[inline]
    fn arm(&self) -> Option<Result<Event, RecvTimeoutError>> {
        self.wake.armed.store(true, Ordering::Relaxed);
        // Pairs with the fence in `Wake::notify`: either this `try_recv` sees an event just
        // queued, or its sender sees the flag and raises the descriptor.
        fence(Ordering::SeqCst);
        let queued = match self.events.try_recv() {
            Ok(event) => Ok(event),
            Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) => return None,
        };
        self.disarm();
        Some(queued)
    }

    /// After the sleep in `poll(2)`: senders stop raising the wake descriptor.
    #[inline]
    fn disarm(&self) {
        self.wake.armed.store(false, Ordering::Relaxed);
    }

    /// Stdout is readable, so the reader has bytes to read: the line (or a fault) follows
    /// within microseconds for a small response. Checks the channel for at most the decode wait,
    /// then blocks on it (a long or split line simply arrives later). The check spins rather
    /// than yields: on a loaded machine a yield can hand the CPU to another process for a whole
    /// time slice (measured: p99 several times worse).
    fn take_decoded(&self, until: Instant) -> Result<Event, RecvTimeoutError> {
        let check_until = until.min(Instant::now() + self.decode_wait);
        loop {
            match self.events.try_recv() {
                Ok(event) => return Ok(event),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) if Instant::now() < check_until => std::hint::spin_loop(),
                Err(TryRecvError::Empty) => return self.events.recv_deadline(until),
            }
        }
    }

    /// The direct read's sleep (the caller holds stdout, descriptor `stdout`): returns a queued
    /// event, or `Ok(None)` once stdout is readable (or hung up), or the timeout at `until`.
    /// Arms the wake descriptor like the readiness wait, so other threads' events wake it.
    #[cfg(target_os = "linux")]
    pub(crate) fn wait_direct(
        &self,
        stdout: std::os::fd::RawFd,
        until: Instant,
    ) -> Result<Option<Event>, RecvTimeoutError> {
        let Some(source) = &self.stdout else {
            return self.events.recv_deadline(until).map(Some);
        };
        loop {
            if let Some(queued) = self.arm() {
                return queued.map(Some);
            }
            let ready = source.wait_on(stdout, until);
            self.disarm();
            match ready {
                readiness::Ready::Stdout => return Ok(None),
                readiness::Ready::Woken => continue,
                readiness::Ready::TimedOut if Instant::now() < until => continue,
                readiness::Ready::TimedOut => return Err(RecvTimeoutError::Timeout),
                // poll(2) itself failed: sleep on the channel; without the response the request
                // ends at its deadline, as a timeout.
                readiness::Ready::Failed => return self.events.recv_deadline(until).map(Some),
            }
        }
    }
}

/// The Unix readiness wait: `poll(2)` on stdout and a wake descriptor (an eventfd on Linux, a
/// pipe elsewhere).
#[cfg(unix)]
pub(crate) mod readiness {
    use std::fs::File;
    use std::io::{self, ErrorKind, Read};
    use std::os::fd::{AsRawFd, OwnedFd, RawFd};
    use std::process::ChildStdout;
    use std::sync::{Arc, Weak};
    use std::time::Instant;

    /// This system has `poll(2)`.
    pub(crate) const SUPPORTED: bool = true;

    /// The plugin's stdout, shared by the reader (which reads it) and the coordinator (which
    /// only watches it for readiness).
    #[derive(Debug, Clone)]
    pub(crate) struct Stdout(Arc<File>);

    impl Stdout {
        pub(crate) fn new(stdout: ChildStdout) -> Stdout {
            Stdout::from_fd(OwnedFd::from(stdout))
        }

        /// Any readable descriptor (tests use a plain pipe).
        pub(crate) fn from_fd(fd: OwnedFd) -> Stdout {
            Stdout(Arc::new(File::from(fd)))
        }
    }

    impl Read for Stdout {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            (&*self.0).read(buf)
        }
    }

    impl AsRawFd for Stdout {
        fn as_raw_fd(&self) -> RawFd {
            self.0.as_raw_fd()
        }
    }

    /// The coordinator's weak view of stdout.
    #[derive(Debug)]
    pub(crate) struct Source {
        stdout: Weak<File>,
        wake: Arc<WakeFd>,
    }

    impl Source {
        /// Stdout and the wake descriptor for one wait; `None` once the reader has ended.
        pub(crate) fn watch(&self) -> Option<Watch<'_>> {
            Some(Watch {
                stdout: self.stdout.upgrade()?,
                wake: &self.wake,
            })
        }
    }

    /// Stdout held open for one wait.
    pub(crate) struct Watch<'a> {
        stdout: Arc<File>,
        wake: &'a WakeFd,
    }

    /// Why `poll(2)` returned.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Ready {
        /// Stdout has bytes (or hung up, or failed): the reader is about to deliver an event.
        Stdout,
        /// The wake descriptor was signalled (and drained), or a signal interrupted the wait.
        Woken,
        /// Nothing happened before the timeout.
        TimedOut,
        /// `poll(2)` itself failed.
        Failed,
    }

    #[cfg(target_os = "linux")]
    impl Source {
        /// Blocks in `poll(2)` until `stdout` (a descriptor the caller keeps open) or the wake
        /// descriptor is readable, or `until`.
        pub(crate) fn wait_on(&self, stdout: RawFd, until: Instant) -> Ready {
            poll_pair(stdout, &self.wake, until)
        }
    }

    impl Watch<'_> {
        /// Blocks in `poll(2)` until stdout or the wake descriptor is readable, or `until`.
        pub(crate) fn wait(&self, until: Instant) -> Ready {
            poll_pair(self.stdout.as_raw_fd(), self.wake, until)
        }
    }

    /// Blocks in `poll(2)` until `stdout` or `wake` is readable, or `until`; drains `wake`
    /// when it was that.
    fn poll_pair(stdout: RawFd, wake: &WakeFd, until: Instant) -> Ready {
        let now = Instant::now();
        if now >= until {
            return Ready::TimedOut;
        }
        // Rounded up, so the wait never ends before `until`; far deadlines wait in steps.
        let nanos = (until - now).as_nanos();
        let millis = nanos.div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
        let mut fds = [
            libc::pollfd {
                fd: stdout,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake.reader,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfds over descriptors held open for this call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, millis) };
        if n < 0 {
            return match io::Error::last_os_error().kind() {
                ErrorKind::Interrupted => Ready::Woken,
                _ => Ready::Failed,
            };
        }
        if n == 0 {
            return Ready::TimedOut;
        }
        if fds[0].revents != 0 {
            // A wake signal raised at the same time is drained by the next wait.
            return Ready::Stdout;
        }
        wake.drain();
        Ready::Woken
    }

    /// The senders' end of the wake descriptor.
    #[derive(Debug)]
    pub(crate) struct Signal(Arc<WakeFd>);

    impl Signal {
        /// A new wake descriptor, and the coordinator's view of `stdout` beside it.
        pub(crate) fn new(stdout: &Stdout) -> io::Result<(Signal, Source)> {
            let wake = Arc::new(WakeFd::new()?);
            let source = Source {
                stdout: Arc::downgrade(&stdout.0),
                wake: wake.clone(),
            };
            Ok((Signal(wake), source))
        }

        /// Makes the wake descriptor readable (non-blocking; already readable is enough).
        pub(crate) fn raise(&self) {
            self.0.raise();
        }
    }

    /// A descriptor that one side makes readable and the other drains: an eventfd on Linux (one
    /// descriptor), a non-blocking pipe elsewhere.
    #[derive(Debug)]
    pub(crate) struct WakeFd {
        reader: RawFd,
        /// Owns the descriptors (one eventfd, or the pipe's two ends).
        _owned: (OwnedFd, Option<OwnedFd>),
        writer: RawFd,
    }

    impl WakeFd {
        #[cfg(target_os = "linux")]
        fn new() -> io::Result<WakeFd> {
            use std::os::fd::FromRawFd;
            // SAFETY: eventfd takes an initial value and flags, returns a new descriptor or -1.
            let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: just created, owned by nobody else.
            let owned = unsafe { OwnedFd::from_raw_fd(fd) };
            Ok(WakeFd {
                reader: fd,
                writer: fd,
                _owned: (owned, None),
            })
        }

        #[cfg(not(target_os = "linux"))]
        fn new() -> io::Result<WakeFd> {
            let (reader, writer) = os_pipe::pipe()?;
            let (reader, writer) = (OwnedFd::from(reader), OwnedFd::from(writer));
            for fd in [&reader, &writer] {
                let raw = fd.as_raw_fd();
                // SAFETY: fcntl on a descriptor we own.
                let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
                if flags < 0
                    || unsafe { libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(WakeFd {
                reader: reader.as_raw_fd(),
                writer: writer.as_raw_fd(),
                _owned: (reader, Some(writer)),
            })
        }

        fn raise(&self) {
            // An eventfd adds the 8-byte value; a pipe takes any byte. A full pipe or a
            // saturated counter is readable already.
            let one = 1u64.to_ne_bytes();
            // SAFETY: a non-blocking write of a valid buffer to a descriptor we own.
            let _ = unsafe { libc::write(self.writer, one.as_ptr().cast(), one.len()) };
        }

        fn drain(&self) {
            let mut sink = [0u8; 64];
            loop {
                // SAFETY: a non-blocking read into a valid buffer from a descriptor we own.
                let n = unsafe { libc::read(self.reader, sink.as_mut_ptr().cast(), sink.len()) };
                // One read resets an eventfd; a pipe is read until it is empty.
                if n <= 0 || self.reader == self.writer {
                    return;
                }
            }
        }
    }

    /// CPUs this process may run on (its affinity mask).
    #[cfg(target_os = "linux")]
    pub(crate) fn usable_cpus() -> usize {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
            return std::thread::available_parallelism().map_or(1, |n| n.get());
        }
        // SAFETY: `set` was filled by sched_getaffinity.
        unsafe { libc::CPU_COUNT(&set) as usize }
    }

    /// CPUs this process may use (no affinity call here).
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn usable_cpus() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// Without `poll(2)` the coordinator always blocks on the channel: the same types, never armed.
#[cfg(not(unix))]
pub(crate) mod readiness {
    use std::io::{self, Read};
    use std::process::ChildStdout;
    use std::time::Instant;

    /// This system has no `poll(2)` on pipes.
    pub(crate) const SUPPORTED: bool = false;

    /// The plugin's stdout, owned by the reader.
    #[derive(Debug)]
    pub(crate) struct Stdout(ChildStdout);

    impl Stdout {
        pub(crate) fn new(stdout: ChildStdout) -> Stdout {
            Stdout(stdout)
        }
    }

    impl Read for Stdout {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }

    /// Never constructed here.
    #[derive(Debug)]
    pub(crate) enum Source {}

    impl Source {
        pub(crate) fn watch(&self) -> Option<Watch> {
            match *self {}
        }
    }

    /// Never constructed here.
    pub(crate) enum Watch {}

    impl Watch {
        pub(crate) fn wait(&self, _until: Instant) -> Ready {
            match *self {}
        }
    }

    /// Why a wait returned (see the Unix module); never built here, since no wait is armed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[allow(dead_code)]
    pub(crate) enum Ready {
        Stdout,
        Woken,
        TimedOut,
        Failed,
    }

    /// Never constructed here.
    #[derive(Debug)]
    pub(crate) enum Signal {}

    impl Signal {
        pub(crate) fn new(_stdout: &Stdout) -> io::Result<(Signal, Source)> {
            Err(io::ErrorKind::Unsupported.into())
        }

        pub(crate) fn raise(&self) {
            match *self {}
        }
    }

    pub(crate) fn usable_cpus() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write;
    use std::os::fd::OwnedFd;

    use super::*;

    const GENEROUS: Duration = Duration::from_secs(10);

    /// A readiness channel over a fresh pipe standing in for the plugin's stdout.
    fn readiness_channel() -> (
        EventSender,
        EventWait,
        readiness::Stdout,
        os_pipe::PipeWriter,
    ) {
        let (reader, writer) = os_pipe::pipe().unwrap();
        let stdout = readiness::Stdout::from_fd(OwnedFd::from(reader));
        let (tx, rx) = event_channel(4, WaitMode::Readiness(DECODE_WAIT), &stdout).unwrap();
        (tx, rx, stdout, writer)
    }

    fn is_stopping(event: Result<Event, RecvTimeoutError>) -> bool {
        matches!(event, Ok(Event::Stopping))
    }

    #[test]
    fn an_event_queued_before_the_wait_is_taken_at_once() {
        let (tx, rx, _stdout, _writer) = readiness_channel();
        tx.send(Event::Stopping).unwrap();
        assert!(is_stopping(rx.next(Instant::now() + GENEROUS)));
    }

    #[test]
    fn an_event_sent_while_the_caller_sleeps_in_poll_wakes_it() {
        let (tx, rx, _stdout, _writer) = readiness_channel();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            tx.send(Event::Stopping).unwrap();
            tx
        });
        assert!(is_stopping(rx.next(Instant::now() + GENEROUS)));
        drop(sender.join().unwrap());
    }

    #[test]
    fn readable_stdout_without_a_line_waits_for_the_event_on_the_channel() {
        // Half a line: stdout stays readable (nobody reads this pipe), the event comes later.
        let (tx, rx, _stdout, mut writer) = readiness_channel();
        writer.write_all(b"{\"jsonrpc\":").unwrap();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            tx.send(Event::Stopping).unwrap();
            tx
        });
        assert!(is_stopping(rx.next(Instant::now() + GENEROUS)));
        drop(sender.join().unwrap());
    }

    #[test]
    fn nothing_before_the_deadline_times_out_at_the_deadline() {
        let (_tx, rx, _stdout, _writer) = readiness_channel();
        let until = Instant::now() + Duration::from_millis(50);
        assert!(matches!(rx.next(until), Err(RecvTimeoutError::Timeout)));
        assert!(Instant::now() >= until);
    }

    #[test]
    fn stdout_hung_up_without_an_event_still_waits_until_the_deadline() {
        let (_tx, rx, _stdout, writer) = readiness_channel();
        drop(writer);
        let until = Instant::now() + Duration::from_millis(50);
        assert!(matches!(rx.next(until), Err(RecvTimeoutError::Timeout)));
        assert!(Instant::now() >= until);
    }

    #[test]
    fn a_closed_channel_is_reported() {
        let (tx, rx, _stdout, _writer) = readiness_channel();
        drop(tx);
        let result = rx.next(Instant::now() + GENEROUS);
        assert!(matches!(result, Err(RecvTimeoutError::Disconnected)));
    }

    #[test]
    fn after_the_reader_let_go_of_stdout_the_wait_blocks_on_the_channel() {
        let (tx, rx, stdout, _writer) = readiness_channel();
        drop(stdout);
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            tx.send(Event::Stopping).unwrap();
            tx
        });
        assert!(is_stopping(rx.next(Instant::now() + GENEROUS)));
        drop(sender.join().unwrap());
    }

    #[test]
    fn a_stale_wake_signal_costs_one_extra_round_and_no_event() {
        let (tx, rx, _stdout, _writer) = readiness_channel();
        // Raised while the caller is not waiting (as after a race with its disarm).
        rx.wake.signal.as_ref().unwrap().raise();
        let until = Instant::now() + Duration::from_millis(50);
        assert!(matches!(rx.next(until), Err(RecvTimeoutError::Timeout)));
        tx.send(Event::Stopping).unwrap();
        assert!(is_stopping(rx.next(Instant::now() + GENEROUS)));
    }
}
