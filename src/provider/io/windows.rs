//! Windows: the same threads and messages over anonymous pipes.
//!
//! Anonymous pipes have no non-blocking writes and no readiness wait, so:
//! - the coordinator never writes itself: [`write_nonblocking`] takes nothing and every frame
//!   goes to the writer thread, whose write may block; the coordinator still waits with its
//!   deadline, and retirement terminates the job, which breaks the pipe and ends the write;
//! - the stderr drain only drains (blocking reads until EOF);
//! - a waiter thread `wc-wait-ID` watches the process handle and, on exit, retires the instance
//!   and terminates its job (grandchildren that hold the pipes go too), as the Unix waiter does.

use std::io::{ErrorKind, Read, Write};
use std::process::{ChildStderr, ChildStdin};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crossbeam_channel::Receiver;
use parking_lot::Mutex;

use super::{
    spare_line_channel, Channels, Event, ExitWatch, IdleWatch, ResponseThreads, ThreadSet,
    WriteGate, WriteJob, WriteOutcome, EVENT_CAPACITY, READER_STACK, SMALL_STACK,
};
use crate::provider::event::{event_channel, EventSender};
use crate::provider::process::PluginProcess;
use crate::provider::stderr_ring::StderrRing;

/// Starts the writer, reader, stderr-drain and waiter threads, named after the provider id.
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
    let ResponseThreads {
        wake,
        reader,
        on_exit,
    } = response;
    let (event_tx, event_rx) = event_channel(EVENT_CAPACITY, wake);
    let gate = Arc::new(WriteGate::default());
    let stdin = Arc::new(stdin);
    let mut threads = ThreadSet::new("provider I/O");

    let (events, writer_gate, writer_stdin) = (event_tx.clone(), gate.clone(), stdin.clone());
    threads.spawn(format!("wc-write-{id}"), SMALL_STACK, move || {
        write_loop(writer_stdin, job_rx, writer_gate, events)
    })?;
    let more_pending = Arc::new(AtomicBool::new(false));
    let (spare_lines, spare_rx) = spare_line_channel();
    let (events, pending) = (event_tx.clone(), more_pending.clone());
    threads.spawn(format!("wc-read-{id}"), READER_STACK, move || {
        reader(events, pending, spare_rx)
    })?;
    let watch = ExitWatch {
        process: process.clone(),
        events: event_tx.clone(),
        idle,
        ring: ring.clone(),
        on_exit,
    };
    threads.spawn(format!("wc-stderr-{id}"), SMALL_STACK, move || {
        drain_stderr(stderr, ring)
    })?;
    threads.spawn(format!("wc-wait-{id}"), SMALL_STACK, move || {
        watch.process.wait_exit();
        watch.exited();
    })?;

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

/// Anonymous pipes cannot be written without the risk of blocking: the coordinator writes
/// nothing and hands the whole frame to the writer thread.
pub(crate) fn write_nonblocking(_stdin: &ChildStdin, _frame: &[u8]) -> WriteOutcome {
    WriteOutcome::WouldBlock { written: 0 }
}

/// Writes each claimed job with blocking writes; reports failures only.
fn write_loop(
    stdin: Arc<ChildStdin>,
    jobs: Receiver<WriteJob>,
    gate: Arc<WriteGate>,
    events: EventSender,
) {
    let mut pipe: &ChildStdin = &stdin;
    for job in jobs {
        if !gate.claim(job.seq) {
            continue;
        }
        let mut written = 0;
        while written < job.frame.len() {
            match pipe.write(&job.frame[written..]) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if written < job.frame.len() {
            let _ = events.send(Event::WriteFailed {
                wrote_any: written > 0,
            });
            return;
        }
    }
}

/// Drains stderr into the ring until EOF, then logs a retirement that waited for it.
fn drain_stderr(mut stderr: ChildStderr, ring: Arc<Mutex<StderrRing>>) {
    let mut buffer = [0u8; 4096];
    loop {
        match stderr.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => ring.lock().push_bytes(&buffer[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let due = ring.lock().close();
    if let Some((retirement, lines)) = due {
        retirement.log(&lines);
    }
}
