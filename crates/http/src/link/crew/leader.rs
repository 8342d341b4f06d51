//! Leader/follower (every platform but Linux, and Linux under the test-only
//! `webcodex_portable_wait` cfg): one request thread at a time reads the link (the leader). A leader that reads a
//! request passes the reading to a thread that waits for it (a new thread when none waits)
//! and runs the request itself, so no hand-off stands between a request's arrival and its
//! run; once it answered, it waits to lead again. A link has at most [`MAX_THREADS`]
//! request threads: at that count a leader waits for one of them (one holds no request and
//! is on its way back) to take the reading, or for one to end so that it may start one.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{bounded, select, Receiver, Sender};

#[cfg(doc)]
use super::MAX_THREADS;
use super::{answer, refuse_no_thread, take, Taken, ThreadCount, DEAD_AFTER, WORKER_IDLE};
use crate::link::socket::{LinkSocket, Next};
use webcodex_plugin_host::transport::{Dispatcher, WORKER_STACK};

/// See [`super::serve`].
pub(super) fn serve<S>(dispatcher: Dispatcher, socket: &Arc<LinkSocket<S>>) -> String
where
    S: Read + Write + Send + 'static,
{
    let (pass, take) = bounded::<Lead>(0);
    let (ended_tx, ended) = bounded::<String>(1);
    // Dropped when this returns: the threads that wait to lead end at once.
    let (_gone_tx, gone) = bounded::<()>(0);
    let crew = Arc::new(Crew {
        dispatcher,
        socket: socket.clone(),
        pass,
        take,
        ended: ended_tx,
        gone,
        threads: ThreadCount::default(),
        thread_ended: bounded(1),
    });
    let first = Lead {
        last_frame: Instant::now(),
    };
    let started = pass_lead(&crew, first);
    drop(crew);
    super::await_end(started, socket, &ended)
}

/// The reading of a link, passed from thread to thread: when the front's last frame came (a
/// link with none for [`DEAD_AFTER`] is dead). Exactly one thread holds it at a time.
#[derive(Clone, Copy)]
struct Lead {
    last_frame: Instant,
}

/// How a thread's turn as the link's reader ended.
enum Led {
    /// It read a request, passed the reading on and ran the request.
    Passed,
    /// The link ended (why, for the log); the reading goes to no one.
    Ended(String),
}

/// The threads of one link: the dispatcher they run requests on (its bound of 64 at once),
/// the link they read and answer, and the hand-off of the reading.
struct Crew<S: Read + Write> {
    dispatcher: Dispatcher,
    socket: Arc<LinkSocket<S>>,
    /// Passes the reading to a thread waiting in `take` (zero capacity: only to one that
    /// waits).
    pass: Sender<Lead>,
    take: Receiver<Lead>,
    /// Why the link ended, from the leader that saw it to `serve`'s thread.
    ended: Sender<String>,
    /// Disconnected once `serve` returned.
    gone: Receiver<()>,
    threads: ThreadCount,
    /// A thread ended (one unit, however many): a leader waiting at [`MAX_THREADS`] looks
    /// at the count again.
    thread_ended: (Sender<()>, Receiver<()>),
}

/// Reads the link as its leader until it reads a request it can run (it passes the reading on
/// and runs it: [`Led::Passed`]) or the link ends ([`Led::Ended`]). Requests that cannot run
/// (unreadable, over the bound of 64, no thread to pass the reading to) are answered at once
/// and the reading goes on.
fn lead_link<S>(crew: &Arc<Crew<S>>, mut lead: Lead) -> Led
where
    S: Read + Write + Send + 'static,
{
    let socket = &crew.socket;
    loop {
        let next = socket.next(lead.last_frame + DEAD_AFTER);
        if matches!(next, Next::Text(_) | Next::Heartbeat) {
            lead.last_frame = Instant::now();
        }
        match take(&crew.dispatcher, socket, next) {
            Taken::Request(request, slot) => {
                if pass_lead(crew, lead) {
                    answer(&crew.dispatcher, socket, request, slot);
                    return Led::Passed;
                }
                drop(slot);
                refuse_no_thread(socket, request.id);
            }
            Taken::Nothing => {}
            Taken::End(why) => return Led::Ended(why),
        }
    }
}

/// Passes the reading of the link to a thread waiting for it, else to a new thread (at
/// [`MAX_THREADS`]: to the first thread that comes back to wait, or a new one once a thread
/// ended); false when no thread could start (the caller keeps the reading).
fn pass_lead<S>(crew: &Arc<Crew<S>>, lead: Lead) -> bool
where
    S: Read + Write + Send + 'static,
{
    if crew.pass.try_send(lead).is_ok() {
        return true;
    }
    loop {
        if crew.threads.reserve() {
            return start_follower(crew, lead);
        }
        // A thread that ends after the count was read leaves its unit for this wait.
        select! {
            send(crew.pass, lead) -> sent => return sent.is_ok(),
            recv(crew.thread_ended.1) -> _ => {}
        }
    }
}

/// Starts a thread (already counted in `threads`) that leads with `lead`; false when none
/// could start.
fn start_follower<S>(crew: &Arc<Crew<S>>, lead: Lead) -> bool
where
    S: Read + Write + Send + 'static,
{
    let follower = crew.clone();
    let spawned = std::thread::Builder::new()
        .name("wc-link-req".into())
        .stack_size(WORKER_STACK)
        .spawn(move || {
            follow(&follower, lead);
            follower.threads.release();
            let _ = follower.thread_ended.0.try_send(());
        });
    match spawned {
        Ok(_) => true,
        Err(e) => {
            crew.threads.release();
            log::warn!("connect: no thread for a request: {e}");
            false
        }
    }
}

/// A request thread of the link: leads with `lead`, then, after each request it ran, waits up
/// to [`WORKER_IDLE`] to lead again; ends when the wait runs out or the link ended.
fn follow<S>(crew: &Arc<Crew<S>>, mut lead: Lead)
where
    S: Read + Write + Send + 'static,
{
    loop {
        if let Led::Ended(why) = lead_link(crew, lead) {
            let _ = crew.ended.try_send(why);
            return;
        }
        crossbeam_channel::select! {
            recv(crew.take) -> next => match next {
                Ok(next) => lead = next,
                Err(_) => return,
            },
            recv(crew.gone) -> _ => return,
            default(WORKER_IDLE) => return,
        }
    }
}
