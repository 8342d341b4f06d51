//! The stop request of `serve`: SIGINT/SIGTERM on Unix, Ctrl-C, Ctrl-Break or closing the
//! console on Windows; and, on Unix, the reload request SIGHUP. The watcher blocks until a
//! request arrives; it never wakes before (no polling).
//!
//! A second request while stopping gets the default action, which ends the process at once
//! (Unix: `SA_RESETHAND`; Windows: the handler declines it; the plugins' process groups and
//! jobs die with the host either way).

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
    read_end: os_pipe::PipeReader,
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
    //! Self-pipe: the handler writes one byte (async-signal-safe); the watcher reads it.

    use std::io::Read;
    use std::os::fd::IntoRawFd;
    use std::sync::atomic::{AtomicI32, Ordering};

    use super::{SignalEvent, StopSignal};

    /// The pipe's write end for the handler; -1 until installed.
    static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

    /// The byte a stop signal writes.
    const STOP_BYTE: u8 = 1;
    /// The byte SIGHUP writes.
    const RELOAD_BYTE: u8 = 2;

    extern "C" fn on_signal(signal: libc::c_int) {
        let fd = WAKE_FD.load(Ordering::SeqCst);
        if fd >= 0 {
            let byte = if signal == libc::SIGHUP {
                RELOAD_BYTE
            } else {
                STOP_BYTE
            };
            // SAFETY: write(2) is async-signal-safe; the fd stays open for the process's life.
            unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
        }
    }

    pub(super) fn install() -> std::io::Result<StopSignal> {
        let (read_end, write_end) = os_pipe::pipe()?;
        // The write end lives until the process ends: a handler may run at any time.
        WAKE_FD.store(write_end.into_raw_fd(), Ordering::SeqCst);
        // SAFETY: the handler only loads an atomic and calls write(2). SA_RESETHAND restores
        // the default action, so a second signal ends the process at once.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            for signal in [libc::SIGINT, libc::SIGTERM] {
                if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // SIGHUP stays handled: every one asks for a reload.
            action.sa_flags = libc::SA_RESTART;
            if libc::sigaction(libc::SIGHUP, &action, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(StopSignal { read_end })
    }

    pub(super) fn wait(signal: &mut StopSignal) -> SignalEvent {
        let mut byte = [0u8; 1];
        loop {
            match signal.read_end.read(&mut byte) {
                Ok(1) if byte[0] == RELOAD_BYTE => return SignalEvent::Reload,
                Ok(_) => return SignalEvent::Stop,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // The pipe cannot fail while its write end is open; never stop on a fault.
                Err(e) => {
                    log::warn!(
                        "http: the stop watcher failed ({e}); stop the server by killing it"
                    );
                    loop {
                        std::thread::park();
                    }
                }
            }
        }
    }
}

#[cfg(windows)]
mod platform {
    //! The console control handler runs on a thread of its own, so it may take a lock and
    //! notify a condition variable.

    use std::sync::{Condvar, Mutex};

    use windows_sys::core::BOOL;
    use windows_sys::Win32::System::Console::{
        SetConsoleCtrlHandler, CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, CTRL_C_EVENT,
    };

    use super::{SignalEvent, StopSignal};

    static STOP: Mutex<bool> = Mutex::new(false);
    static STOPPED: Condvar = Condvar::new();

    unsafe extern "system" fn on_control(event: u32) -> BOOL {
        match event {
            CTRL_C_EVENT | CTRL_BREAK_EVENT | CTRL_CLOSE_EVENT => {
                let mut stop = STOP.lock().unwrap_or_else(|e| e.into_inner());
                let first = !*stop;
                *stop = true;
                STOPPED.notify_all();
                // Handled the first time; a second event gets the default action.
                BOOL::from(first)
            }
            _ => 0,
        }
    }

    pub(super) fn install() -> std::io::Result<StopSignal> {
        // SAFETY: registers a handler that only takes a lock and notifies.
        if unsafe { SetConsoleCtrlHandler(Some(on_control), 1) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(StopSignal {})
    }

    pub(super) fn wait(_: &mut StopSignal) -> SignalEvent {
        let mut stop = STOP.lock().unwrap_or_else(|e| e.into_inner());
        while !*stop {
            stop = STOPPED.wait(stop).unwrap_or_else(|e| e.into_inner());
        }
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
