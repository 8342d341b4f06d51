//! The stop request of `serve` and `connect`: SIGINT/SIGTERM on Unix, Ctrl-C, Ctrl-Break or
//! closing the console on Windows; and, on Unix, the reload request SIGHUP. The watcher blocks
//! until a request arrives; it never wakes before (no polling).
//!
//! A second stop request while stopping gets the default action, which ends the process at once
//! (the plugins' process groups and jobs die with the host either way).
//!
//! Unix: `signal-hook` (its handler writes to a self-pipe that [`StopSignal::wait`] reads; a
//! conditional default action arms the second signal). Windows: `ctrlc` (the console control
//! handler releases a semaphore that its own thread waits on, then runs our closure there).

/// What a signal asks of `serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SignalEvent {
    /// SIGINT, SIGTERM (or a console event): stop gracefully.
    Stop,
    /// SIGHUP: re-read the configuration files and keep serving (Unix only).
    #[cfg_attr(not(unix), allow(dead_code))]
    Reload,
}

/// The stop (and reload) requests, armed; [`StopSignal::wait`] blocks until one arrives.
pub(super) struct StopSignal {
    #[cfg(unix)]
    signals: signal_hook::iterator::Signals,
    #[cfg(windows)]
    stopped: crossbeam_channel::Receiver<()>,
}

impl StopSignal {
    /// Installs the handlers. `Err` leaves the default actions in place (the process can still
    /// be stopped, only without the graceful shutdown).
    pub(super) fn install() -> std::io::Result<StopSignal> {
        platform::install()
    }

    /// Blocks the calling thread until a stop or a reload is requested. Once it returned
    /// [`SignalEvent::Stop`], it is not called again.
    pub(super) fn wait(&mut self) -> SignalEvent {
        platform::wait(self)
    }
}

#[cfg(unix)]
mod platform {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use signal_hook::flag;
    use signal_hook::iterator::Signals;

    use super::{SignalEvent, StopSignal};

    pub(super) fn install() -> std::io::Result<StopSignal> {
        // Set by the first stop signal; from then on a stop signal gets its default action
        // (registered first, so the first signal finds it unset).
        let stopping = Arc::new(AtomicBool::new(false));
        for signal in [SIGINT, SIGTERM] {
            flag::register_conditional_default(signal, stopping.clone())?;
            flag::register(signal, stopping.clone())?;
        }
        // SIGHUP stays handled: every one asks for a reload.
        let signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
        Ok(StopSignal { signals })
    }

    pub(super) fn wait(signal: &mut StopSignal) -> SignalEvent {
        // `forever` waits on the self-pipe (retrying interrupted reads); it ends only when the
        // signals are closed, which nothing here does.
        match signal.signals.forever().next() {
            Some(SIGHUP) => SignalEvent::Reload,
            _ => SignalEvent::Stop,
        }
    }
}

#[cfg(windows)]
mod platform {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::{SignalEvent, StopSignal};

    /// The exit status of a process ended by Ctrl-C (`STATUS_CONTROL_C_EXIT`), as the default
    /// action leaves it.
    const CONTROL_C_EXIT: i32 = 0xC000_013A_u32 as i32;

    pub(super) fn install() -> std::io::Result<StopSignal> {
        let (stop, stopped) = crossbeam_channel::bounded(1);
        let first = AtomicBool::new(true);
        // Runs on the thread of `ctrlc`, for Ctrl-C, Ctrl-Break and the console's close.
        ctrlc::set_handler(move || {
            if first.swap(false, Ordering::SeqCst) {
                let _ = stop.try_send(());
            } else {
                std::process::exit(CONTROL_C_EXIT);
            }
        })
        .map_err(std::io::Error::other)?;
        Ok(StopSignal { stopped })
    }

    pub(super) fn wait(signal: &mut StopSignal) -> SignalEvent {
        let _ = signal.stopped.recv();
        SignalEvent::Stop
    }
}

#[cfg(not(any(unix, windows)))]
mod platform {
    use super::{SignalEvent, StopSignal};

    pub(super) fn install() -> std::io::Result<StopSignal> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "no stop signal on this platform",
        ))
    }

    pub(super) fn wait(_: &mut StopSignal) -> SignalEvent {
        SignalEvent::Stop
    }
}
