//! Linux: the link's idle request threads wait together in one epoll instance.
//!
//! The link's socket is registered one-shot: bytes that arrive wake exactly one waiting thread
//! (epoll wakes the one that went to wait last), which reads every message that arrived
//! without waiting, re-arms the socket (bytes that came meanwhile wake the next waiter at
//! once) and runs the first request itself. So a request's way in crosses no hand-off between
//! threads, and on a machine with an idle CPU no wake-up of a second thread pulls the
//! request's run onto another CPU.
//!
//! Concurrency: a thread that takes a request while no other thread is idle starts one first,
//! so one thread is always there to read the next request (none could start: the request is
//! refused, `not_started`). A link has at most [`MAX_THREADS`] request threads: at that
//! count at most [`webcodex_plugin_host::transport::MAX_IN_FLIGHT`] of them hold a request, so one at least
//! is on its way back to wait and reads the next request; no thread is started then.
//! Requests read together with another go to a queue (each holds its in-flight slot, so it holds at most [`webcodex_plugin_host::transport::MAX_IN_FLIGHT`]) and one unit each
//! on an `eventfd` (semaphore mode, one-shot in the same instance) wakes a thread per request.
//!
//! The end: the thread that sees the link end marks it over and signals the `eventfd`; every
//! thread that wakes and finds the link over signals it again as it leaves, so the waiting
//! threads leave one after the other. A thread idle for [`WORKER_IDLE`] leaves while another
//! idle thread stays; the last one waits until the dead-link bound ([`DEAD_AFTER`] without a
//! frame) and closes the link when it passes. An idle link costs no wake-up but its frames.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};
use parking_lot::Mutex;
use tungstenite::protocol::frame::coding::CloseCode;

#[cfg(doc)]
use super::MAX_THREADS;
use super::{answer, refuse_no_thread, take, Taken, ThreadCount, DEAD_AFTER, WORKER_IDLE};
use crate::link::socket::{LinkSocket, Next};
use crate::link::wire::LinkRequest;
use webcodex_plugin_host::transport::{Dispatcher, Slot, WORKER_STACK};

/// See [`super::serve`].
pub(super) fn serve<S>(dispatcher: Dispatcher, socket: &Arc<LinkSocket<S>>) -> String
where
    S: Read + Write + Send + 'static,
{
    let poller = match Poller::new(socket.raw_fd()) {
        Ok(poller) => poller,
        Err(e) => {
            socket.close(CloseCode::Away, "the runner could not wait for the link");
            return format!("the runner could not wait for the link (epoll): {e}");
        }
    };
    let (ended_tx, ended) = bounded::<String>(1);
    let crew = Arc::new(Crew {
        dispatcher,
        socket: socket.clone(),
        poller,
        queue: Mutex::new(VecDeque::new()),
        idle: AtomicUsize::new(0),
        threads: ThreadCount::default(),
        started: Instant::now(),
        last_frame_ms: AtomicU64::new(0),
        over: AtomicBool::new(false),
        ended: ended_tx,
    });
    let started = start_thread(&crew) == Start::Started;
    drop(crew);
    super::await_end(started, socket, &ended)
}

/// The threads of one link and what they share.
struct Crew<S: Read + Write> {
    dispatcher: Dispatcher,
    socket: Arc<LinkSocket<S>>,
    poller: Poller,
    /// Requests read together with another one, each for the thread that takes one unit of
    /// the `eventfd`.
    queue: Mutex<VecDeque<(LinkRequest, Slot)>>,
    /// Threads that run no request: waiting, about to wait, or just started.
    idle: AtomicUsize,
    threads: ThreadCount,
    started: Instant,
    /// When the front's last frame came, in milliseconds since `started`.
    last_frame_ms: AtomicU64,
    /// The link ended: every thread leaves.
    over: AtomicBool,
    /// Why the link ended, to `serve`'s thread.
    ended: Sender<String>,
}

impl<S: Read + Write> Crew<S> {
    fn saw_frame(&self) {
        let ms = self.started.elapsed().as_millis() as u64;
        self.last_frame_ms.store(ms, Ordering::Relaxed);
    }

    /// The instant the link is dead unless a frame comes before.
    fn dead_at(&self) -> Instant {
        self.started
            + Duration::from_millis(self.last_frame_ms.load(Ordering::Relaxed))
            + DEAD_AFTER
    }

    /// The link ended: says why to `serve`'s thread (the first word only) and starts the
    /// waiting threads' leave.
    fn finish(&self, why: String) {
        self.over.store(true, Ordering::SeqCst);
        let _ = self.ended.try_send(why);
        self.poller.signal();
    }

    fn is_over(&self) -> bool {
        self.over.load(Ordering::SeqCst)
    }

    /// Takes this idle thread out of the crew when another idle thread stays.
    fn retire(&self) -> bool {
        self.idle
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n > 1).then(|| n - 1)
            })
            .is_ok()
    }
}

/// What [`start_thread`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// A thread started, counted idle from now.
    Started,
    /// The link has [`MAX_THREADS`] already: one of them is on its way back to wait.
    AtCap,
    /// The system could start no thread.
    Failed,
}

/// Starts a request thread, counted idle from now, unless the link has [`MAX_THREADS`].
fn start_thread<S>(crew: &Arc<Crew<S>>) -> Start
where
    S: Read + Write + Send + 'static,
{
    if !crew.threads.reserve() {
        return Start::AtCap;
    }
    crew.idle.fetch_add(1, Ordering::SeqCst);
    let mine = crew.clone();
    let spawned = std::thread::Builder::new()
        .name("wc-link-req".into())
        .stack_size(WORKER_STACK)
        .spawn(move || work(&mine));
    match spawned {
        Ok(_) => Start::Started,
        Err(e) => {
            crew.idle.fetch_sub(1, Ordering::SeqCst);
            crew.threads.release();
            log::warn!("connect: no thread for a request: {e}");
            Start::Failed
        }
    }
}

/// A request thread: takes requests and runs them until the link ends or it has been idle
/// for [`WORKER_IDLE`] while another thread is idle too.
fn work<S>(crew: &Arc<Crew<S>>)
where
    S: Read + Write + Send + 'static,
{
    while let Some((request, slot)) = next_request(crew) {
        answer(&crew.dispatcher, &crew.socket, request, slot);
        crew.idle.fetch_add(1, Ordering::SeqCst);
    }
    crew.threads.release();
}

/// Waits for a request to run; `None` when this thread leaves. Counted idle while it waits,
/// not once it returns a request.
fn next_request<S>(crew: &Arc<Crew<S>>) -> Option<(LinkRequest, Slot)>
where
    S: Read + Write + Send + 'static,
{
    loop {
        if crew.is_over() {
            // Passes the leave on to the next waiting thread.
            crew.poller.signal();
            crew.idle.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        let dead_at = crew.dead_at();
        let left = dead_at.saturating_duration_since(Instant::now());
        let woken = match crew.poller.wait(left.min(WORKER_IDLE)) {
            Ok(woken) => woken,
            Err(e) => {
                crew.socket
                    .close(CloseCode::Away, "the runner cannot wait for the link");
                crew.finish(format!("the runner cannot wait for the link (epoll): {e}"));
                continue;
            }
        };
        let taken = match woken {
            Woken::Interrupted => continue,
            Woken::TimedOut => {
                if Instant::now() >= crew.dead_at() {
                    if let Taken::End(why) = take(&crew.dispatcher, &crew.socket, Next::Quiet) {
                        crew.finish(why);
                    }
                    continue;
                }
                if left > WORKER_IDLE && crew.retire() {
                    return None;
                }
                continue;
            }
            Woken::Signal => {
                let unit = crew.poller.take_signal();
                crew.poller.rearm_signal();
                if !unit || crew.is_over() {
                    continue;
                }
                match crew.queue.lock().pop_front() {
                    Some(request) => request,
                    None => continue,
                }
            }
            Woken::Socket => match read_arrived(crew) {
                Some(request) => request,
                None => continue,
            },
        };
        crew.idle.fetch_sub(1, Ordering::SeqCst);
        // One thread must stay to read the link while this one runs the request (at the cap,
        // one that holds no request is on its way back to wait).
        if crew.idle.load(Ordering::SeqCst) == 0
            && !crew.is_over()
            && start_thread(crew) == Start::Failed
        {
            crew.idle.fetch_add(1, Ordering::SeqCst);
            let (request, slot) = taken;
            drop(slot);
            refuse_no_thread(&crew.socket, request.id);
            continue;
        }
        return Some(taken);
    }
}

/// Reads every message that has arrived, then re-arms the socket: the first request read, to
/// run; the others queued, a thread woken (or started) for each. `None` when nothing is to be
/// run (a heartbeat, a partial frame, a frame answered at once, the link's end).
fn read_arrived<S>(crew: &Arc<Crew<S>>) -> Option<(LinkRequest, Slot)>
where
    S: Read + Write + Send + 'static,
{
    let mut first = None;
    let mut queued = 0;
    while let Some(next) = crew.socket.next_ready() {
        if matches!(next, Next::Text(_) | Next::Heartbeat) {
            crew.saw_frame();
        }
        match take(&crew.dispatcher, &crew.socket, next) {
            Taken::Request(request, slot) if first.is_none() => first = Some((request, slot)),
            Taken::Request(request, slot) => {
                crew.queue.lock().push_back((request, slot));
                queued += 1;
            }
            Taken::Nothing => {}
            Taken::End(why) => {
                // The socket stays disarmed: no thread reads an ended link again.
                crew.finish(why);
                return None;
            }
        }
    }
    crew.poller.rearm_socket();
    for _ in 0..queued {
        crew.poller.signal();
    }
    // A thread for each queued request, besides this one's reader.
    while queued > 0
        && crew.idle.load(Ordering::SeqCst) < queued + 1
        && start_thread(crew) == Start::Started
    {}
    first
}

/// What ended a wait.
enum Woken {
    /// The link's socket has bytes (or its end).
    Socket,
    /// The `eventfd`: a queued request, or the link's end.
    Signal,
    /// The wait's time ran out.
    TimedOut,
    /// A signal interrupted the wait.
    Interrupted,
}

/// One epoll instance with the link's socket and an `eventfd`, both one-shot.
struct Poller {
    epoll: OwnedFd,
    signal: OwnedFd,
    socket: RawFd,
}

const SOCKET_KEY: u64 = 0;
const SIGNAL_KEY: u64 = 1;

/// A system call's `-1` as the OS error.
fn cvt(n: libc::c_int) -> io::Result<libc::c_int> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n)
    }
}

impl Poller {
    /// Registers `socket` (the link's TCP socket, open for as long as the poller) and a new
    /// `eventfd`.
    fn new(socket: RawFd) -> io::Result<Poller> {
        // SAFETY: plain system calls; each returned descriptor is new and owned from here.
        let epoll = unsafe { OwnedFd::from_raw_fd(cvt(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
        let flags = libc::EFD_CLOEXEC | libc::EFD_NONBLOCK | libc::EFD_SEMAPHORE;
        // SAFETY: as above.
        let signal = unsafe { OwnedFd::from_raw_fd(cvt(libc::eventfd(0, flags))?) };
        let poller = Poller {
            epoll,
            signal,
            socket,
        };
        poller.control(libc::EPOLL_CTL_ADD, socket, SOCKET_KEY)?;
        poller.control(libc::EPOLL_CTL_ADD, poller.signal.as_raw_fd(), SIGNAL_KEY)?;
        Ok(poller)
    }

    fn control(&self, op: libc::c_int, fd: RawFd, key: u64) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLONESHOT) as u32,
            u64: key,
        };
        // SAFETY: a valid epoll descriptor, a descriptor open for the poller's life, and one
        // event for the call.
        cvt(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut event) }).map(drop)
    }

    /// Waits up to `timeout` (at least 1 ms) for one event.
    fn wait(&self, timeout: Duration) -> io::Result<Woken> {
        let millis = timeout
            .as_nanos()
            .div_ceil(1_000_000)
            .clamp(1, i32::MAX as u128) as i32;
        let mut event = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: a valid epoll descriptor and room for one event.
        let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), &mut event, 1, millis) };
        match n {
            0 => Ok(Woken::TimedOut),
            n if n > 0 => Ok(match event.u64 {
                SOCKET_KEY => Woken::Socket,
                _ => Woken::Signal,
            }),
            _ => match io::Error::last_os_error() {
                e if e.kind() == io::ErrorKind::Interrupted => Ok(Woken::Interrupted),
                e => Err(e),
            },
        }
    }

    /// Lets the socket's next bytes wake a thread again (at once when some are there).
    fn rearm_socket(&self) {
        if let Err(e) = self.control(libc::EPOLL_CTL_MOD, self.socket, SOCKET_KEY) {
            log::warn!("connect: the link's socket could not be watched again: {e}");
        }
    }

    /// Lets the `eventfd` wake a thread again (at once while units are left).
    fn rearm_signal(&self) {
        if let Err(e) = self.control(libc::EPOLL_CTL_MOD, self.signal.as_raw_fd(), SIGNAL_KEY) {
            log::warn!("connect: the link's signal could not be watched again: {e}");
        }
    }

    /// Adds one unit to the `eventfd`.
    fn signal(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: a valid eventfd and 8 readable bytes. It cannot fail short of a counter
        // at its maximum, which one unit per request and per leaving thread never reaches.
        let _ = unsafe { libc::write(self.signal.as_raw_fd(), one.as_ptr().cast(), 8) };
    }

    /// Takes one unit of the `eventfd`: false when there was none.
    fn take_signal(&self) -> bool {
        let mut unit = [0u8; 8];
        // SAFETY: a valid eventfd and 8 writable bytes.
        let n = unsafe { libc::read(self.signal.as_raw_fd(), unit.as_mut_ptr().cast(), 8) };
        n == 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let near = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (far, _) = listener.accept().unwrap();
        (near, far)
    }

    /// Waits on `poller` from `n` threads at once, each up to `within`; what ended each wait.
    fn wait_from(poller: &Arc<Poller>, n: usize, within: Duration) -> Vec<Woken> {
        let started = Arc::new(std::sync::Barrier::new(n + 1));
        let waiters: Vec<_> = (0..n)
            .map(|_| {
                let poller = poller.clone();
                let started = started.clone();
                std::thread::spawn(move || {
                    started.wait();
                    poller.wait(within).unwrap()
                })
            })
            .collect();
        started.wait();
        waiters.into_iter().map(|t| t.join().unwrap()).collect()
    }

    fn count(woken: &[Woken], kind: fn(&Woken) -> bool) -> usize {
        woken.iter().filter(|w| kind(w)).count()
    }

    #[test]
    fn bytes_on_the_socket_wake_one_waiter_until_it_is_rearmed() {
        let (near, mut far) = pair();
        let poller = Arc::new(Poller::new(near.as_raw_fd()).unwrap());
        far.write_all(b"x").unwrap();
        let woken = wait_from(&poller, 3, Duration::from_millis(300));
        assert_eq!(count(&woken, |w| matches!(w, Woken::Socket)), 1);
        assert_eq!(count(&woken, |w| matches!(w, Woken::TimedOut)), 2);
        // Unread bytes and re-armed: ready again at once.
        poller.rearm_socket();
        assert!(matches!(
            poller.wait(Duration::from_secs(30)).unwrap(),
            Woken::Socket
        ));
    }

    #[test]
    fn each_signal_unit_wakes_one_waiter() {
        let (near, _far) = pair();
        let poller = Arc::new(Poller::new(near.as_raw_fd()).unwrap());
        poller.signal();
        poller.signal();
        assert!(matches!(
            poller.wait(Duration::from_secs(30)).unwrap(),
            Woken::Signal
        ));
        assert!(poller.take_signal());
        // One-shot: the unit left wakes no one until the signal is re-armed.
        assert!(matches!(
            poller.wait(Duration::from_millis(50)).unwrap(),
            Woken::TimedOut
        ));
        poller.rearm_signal();
        assert!(matches!(
            poller.wait(Duration::from_secs(30)).unwrap(),
            Woken::Signal
        ));
        assert!(poller.take_signal());
        assert!(!poller.take_signal(), "two units, two takes");
    }
}
