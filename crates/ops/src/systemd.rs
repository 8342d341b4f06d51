//! The service manager's protocols, for `serve` under systemd (or anything that speaks them):
//! - readiness notification: with `NOTIFY_SOCKET` set, [`notify`] sends a state such as
//!   `READY=1` or `STOPPING=1` as one datagram to that socket (a path, or `@name` in the
//!   abstract namespace); [`claim_notify_socket`] keeps it from the plugins' environment;
//! - socket activation: with `LISTEN_PID` naming this process and `LISTEN_FDS` ≥ 1,
//!   [`inherited_listener`] takes the listening socket at descriptor 3 (checked by `listenfd`:
//!   a TCP stream socket; and that it listens) and removes the variables, so no plugin
//!   inherits them.
//!
//! The notification is a datagram on std's `UnixDatagram`: the `sd-notify` crate reads
//! `NOTIFY_SOCKET` at each call (so the variable would have to stay in the environment every
//! plugin inherits) and takes an `@name` as a file path (docs/DECISIONS.md).
//!
//! Both are no-ops without their variables, and on systems other than Unix.

/// The first descriptor a service manager passes (`SD_LISTEN_FDS_START`).
pub const LISTEN_FDS_START: i32 = 3;

static NOTIFY_SOCKET: std::sync::OnceLock<Option<std::ffi::OsString>> = std::sync::OnceLock::new();

/// Takes `NOTIFY_SOCKET` out of the environment (so no plugin inherits it and speaks for this
/// process) and keeps it for [`notify`]. Call it before any thread starts (it changes the
/// environment); later calls change nothing.
pub fn claim_notify_socket() {
    NOTIFY_SOCKET.get_or_init(|| {
        let socket = std::env::var_os("NOTIFY_SOCKET");
        if socket.is_some() {
            std::env::remove_var("NOTIFY_SOCKET");
        }
        socket
    });
}

/// Sends `state` (e.g. `READY=1`) to the service manager when `NOTIFY_SOCKET` is (or was, see
/// [`claim_notify_socket`]) set. `Ok(false)` when it is not; an error when the datagram could
/// not be sent.
pub fn notify(state: &str) -> std::io::Result<bool> {
    let claimed = NOTIFY_SOCKET.get().cloned();
    let Some(socket) = claimed.unwrap_or_else(|| std::env::var_os("NOTIFY_SOCKET")) else {
        return Ok(false);
    };
    send(&socket, state.as_bytes()).map(|()| true)
}

#[cfg(unix)]
fn send(socket: &std::ffi::OsStr, datagram: &[u8]) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::net::UnixDatagram;
    let bytes = socket.as_bytes();
    let sender = UnixDatagram::unbound()?;
    if let Some(name) = bytes.strip_prefix(b"@") {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            return sender.send_to_addr(datagram, &addr).map(drop);
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let _ = name;
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "an abstract NOTIFY_SOCKET needs Linux",
            ));
        }
    }
    sender.send_to(datagram, socket).map(drop)
}

#[cfg(not(unix))]
fn send(_socket: &std::ffi::OsStr, _datagram: &[u8]) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "NOTIFY_SOCKET needs a Unix system",
    ))
}

/// The listening socket a service manager passed to this process, if it passed one:
/// `Ok(None)` unless `LISTEN_PID` is this process's id and `LISTEN_FDS` ≥ 1. Descriptor 3
/// must be a listening TCP stream socket; a message that says what is wrong otherwise. The
/// variables are removed either way once they named this process. Call it before any thread
/// starts (it changes the environment).
pub fn inherited_listener() -> Result<Option<std::net::TcpListener>, String> {
    let pid = std::env::var("LISTEN_PID").ok();
    let fds = std::env::var("LISTEN_FDS").ok();
    let (Some(pid), Some(fds)) = (pid, fds) else {
        return Ok(None);
    };
    if pid.trim().parse::<u32>().ok() != Some(std::process::id()) {
        return Ok(None);
    }
    // A descriptor other than 3 is not systemd's protocol (`listenfd` would honour it).
    std::env::remove_var("LISTEN_FDS_FIRST_FD");
    let passed = Passed::from_env();
    for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
        std::env::remove_var(name);
    }
    let count: u32 = fds
        .trim()
        .parse()
        .map_err(|_| format!("LISTEN_FDS is {fds:?}, not a number of descriptors"))?;
    if count == 0 {
        return Ok(None);
    }
    if count > 1 {
        log::warn!(
            "systemd passed {count} sockets; serve listens on the first (descriptor 3) only"
        );
    }
    passed.first_listener().map(Some)
}

/// The descriptors the environment says were passed, read once (by `listenfd` on Unix).
#[cfg(unix)]
struct Passed(listenfd::ListenFd);

#[cfg(unix)]
impl Passed {
    fn from_env() -> Passed {
        Passed(listenfd::ListenFd::from_env())
    }

    /// Descriptor 3 as a listening TCP socket: `listenfd` checks that it is a TCP stream
    /// socket, marks it close-on-exec (no plugin inherits it) and takes it; on Linux
    /// `SO_ACCEPTCONN` (`rustix`) then says whether it listens.
    fn first_listener(mut self) -> Result<std::net::TcpListener, String> {
        let fd = LISTEN_FDS_START;
        let listener = match self.0.take_tcp_listener(0) {
            Ok(Some(listener)) => listener,
            Ok(None) | Err(_) => {
                return Err(format!(
                    "descriptor {fd} (passed by the service manager) is not a TCP stream socket; \
                     the socket unit must have ListenStream= with an IP address and port, e.g. \
                     127.0.0.1:8787"
                ))
            }
        };
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if !rustix::net::sockopt::socket_acceptconn(&listener).unwrap_or(false) {
            return Err(format!(
                "descriptor {fd} (passed by the service manager) is a TCP socket that does not \
                 listen"
            ));
        }
        Ok(listener)
    }
}

/// Socket activation is a Unix protocol.
#[cfg(not(unix))]
struct Passed;

#[cfg(not(unix))]
impl Passed {
    fn from_env() -> Passed {
        Passed
    }

    fn first_listener(self) -> Result<std::net::TcpListener, String> {
        Err(format!(
            "socket activation (descriptor {LISTEN_FDS_START}) needs a Unix system"
        ))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn notify_without_a_socket_is_a_no_op() {
        if std::env::var_os("NOTIFY_SOCKET").is_none() {
            assert!(!notify("READY=1").unwrap());
        }
    }

    #[test]
    fn a_datagram_reaches_a_path_socket() {
        let dir = std::env::temp_dir().join(format!("wc-notify-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let receiver = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str(), b"READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_datagram_reaches_an_abstract_socket() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("wc-notify-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let receiver = std::os::unix::net::UnixDatagram::bind_addr(&addr).unwrap();
        send(std::ffi::OsStr::new(&format!("@{name}")), b"STOPPING=1").unwrap();
        let mut buf = [0u8; 64];
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1");
    }
}
