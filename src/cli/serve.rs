//! The serving commands: `gateway` (JSON lines on stdin/stdout) and `serve` (HTTP).

use std::io::Write;
use std::path::Path;

use super::target::Front;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use webcodex_plugin_host::gateway::{Caller, Scopes};
use webcodex_plugin_host::transport::http::{HttpServer, Tokens};
use webcodex_plugin_host::transport::serve_lines;

use super::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};

/// `gateway [--config F] [--runners F] [--scopes S]`: serves JSON lines on stdin/stdout until
/// EOF, then shuts the host down.
pub(super) fn gateway(front: &Front, scopes: &str) -> i32 {
    on_stdio(front, scopes, "gateway", serve_lines)
}

/// Starts the runners of `front`, runs the stdio transport `serve` (named `what` in errors) for
/// a caller with `scopes` until EOF, then shuts the host down: `gateway` and `mcp` alike.
pub(super) fn on_stdio(
    front: &Front,
    scopes: &str,
    what: &str,
    serve: impl FnOnce(
        std::sync::Arc<webcodex_plugin_host::gateway::Gateway>,
        Caller,
        std::io::StdinLock<'static>,
        std::io::Stdout,
    ) -> std::io::Result<()>,
) -> i32 {
    let scopes = match Scopes::parse(scopes) {
        Ok(scopes) => scopes,
        Err(e) => {
            eprintln!("error: --scopes: {e}");
            return EXIT_USAGE;
        }
    };
    let gateway = match front.start() {
        Ok(gateway) => gateway,
        Err(code) => return code,
    };
    let result = serve(
        gateway.clone(),
        Caller::new(scopes),
        std::io::stdin().lock(),
        std::io::stdout(),
    );
    gateway.shutdown();
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: the {what} transport failed: {e}");
            EXIT_FAILURE
        }
    }
}

/// Set by SIGINT/SIGTERM (Windows: Ctrl-C, Ctrl-Break, console close).
static STOP: AtomicBool = AtomicBool::new(false);

/// `serve --config F --listen ADDR --tokens F [--allow-origin O]…`: prints `listening on http://ADDR` on stdout
/// once bound, serves until SIGINT/SIGTERM, then answers in-flight requests, shuts the hosts
/// down and exits 0.
pub(super) fn serve(front: &Front, listen: &str, tokens: &Path, origins: Vec<String>) -> i32 {
    let tokens = match Tokens::load(tokens) {
        Ok(tokens) => tokens,
        Err(e) => {
            eprintln!("error: --tokens {}: {e}", tokens.display());
            return EXIT_USAGE;
        }
    };
    if std::net::ToSocketAddrs::to_socket_addrs(listen).is_err() {
        eprintln!("error: --listen {listen:?} is not an address such as 127.0.0.1:8787");
        return EXIT_USAGE;
    }
    let gateway = match front.start() {
        Ok(gateway) => gateway,
        Err(code) => return code,
    };
    let server = match HttpServer::bind_with_origins(listen, gateway.clone(), tokens, origins) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("error: cannot listen on {listen}: {e}");
            gateway.shutdown();
            return EXIT_FAILURE;
        }
    };
    install_signal_handlers();
    let stopper = server.stopper();
    let stopping = gateway.clone();
    let watcher = std::thread::Builder::new()
        .name("wc-http-signal".into())
        .spawn(move || {
            while !STOP.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(100));
            }
            log::info!("http: stopping on a signal");
            // Candidates of a running check or reload die now, not after their handshakes.
            stopping.begin_shutdown();
            stopper.stop();
        });
    if let Err(e) = watcher {
        log::warn!("http: no signal watcher ({e}); stop the server by killing it");
    }
    {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "listening on http://{}", server.local_addr());
        let _ = stdout.flush();
    }
    let result = server.run();
    gateway.shutdown();
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: the HTTP transport failed: {e}");
            EXIT_FAILURE
        }
    }
}

#[cfg(unix)]
fn install_signal_handlers() {
    extern "C" fn on_signal(_: libc::c_int) {
        STOP.store(true, Ordering::SeqCst);
    }
    // SAFETY: the handler only stores to an atomic (async-signal-safe). SA_RESETHAND restores
    // the default action, so a second signal ends the process at once.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut action.sa_mask);
        for signal in [libc::SIGINT, libc::SIGTERM] {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Windows: Ctrl-C, Ctrl-Break and closing the console stop the server as SIGINT/SIGTERM do;
/// a second event while stopping gets the default handling, which ends the process at once
/// (the plugins' jobs die with their handles).
#[cfg(windows)]
fn install_signal_handlers() {
    use windows_sys::core::BOOL;
    use windows_sys::Win32::System::Console::{
        SetConsoleCtrlHandler, CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, CTRL_C_EVENT,
    };
    unsafe extern "system" fn on_control(event: u32) -> BOOL {
        match event {
            CTRL_C_EVENT | CTRL_BREAK_EVENT | CTRL_CLOSE_EVENT => {
                BOOL::from(!STOP.swap(true, Ordering::SeqCst))
            }
            _ => 0,
        }
    }
    // SAFETY: registers a handler that only touches an atomic.
    if unsafe { SetConsoleCtrlHandler(Some(on_control), 1) } == 0 {
        log::warn!("http: no console control handler; stop the server by killing it");
    }
}

#[cfg(not(any(unix, windows)))]
fn install_signal_handlers() {}
