//! The service manager's protocols, for `serve` under systemd (or anything that speaks them):
//! - readiness notification: with `NOTIFY_SOCKET` set, [`notify`] sends a state such as
//!   `READY=1` or `STOPPING=1` as one datagram to that socket (a path, or `@name` in the
//!   abstract namespace); [`claim_notify_socket`] keeps it from the plugins' environment;
//! - socket activation: with `LISTEN_PID` naming this process and `LISTEN_FDS` ≥ 1,
//!   [`inherited_listener`] takes the listening socket at descriptor 3 (checked: a TCP stream
//!   socket that listens) and removes the variables, so no plugin inherits them.
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
    take_listener(LISTEN_FDS_START).map(Some)
}

#[cfg(unix)]
fn take_listener(fd: i32) -> Result<std::net::TcpListener, String> {
    use std::os::fd::FromRawFd;
    let int_option = |level: i32, name: i32| -> Option<i32> {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt(2) writes at most `len` bytes into `value`.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                level,
                name,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (rc == 0).then_some(value)
    };
    let Some(kind) = int_option(libc::SOL_SOCKET, libc::SO_TYPE) else {
        return Err(format!(
            "descriptor {fd} (passed by the service manager) is not a socket; the socket unit \
             must have ListenStream= with an address"
        ));
    };
    // SAFETY: an all-zero sockaddr_storage is valid; getsockname(2) fills at most `len` bytes.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: as above.
    let named = unsafe {
        libc::getsockname(
            fd,
            (&mut addr as *mut libc::sockaddr_storage).cast(),
            &mut len,
        )
    };
    let family = i32::from(addr.ss_family);
    let tcp = named == 0 && (family == libc::AF_INET || family == libc::AF_INET6);
    if kind != libc::SOCK_STREAM || !tcp {
        return Err(format!(
            "descriptor {fd} (passed by the service manager) is not a TCP stream socket; the \
             socket unit must have ListenStream= with an IP address and port, e.g. 127.0.0.1:8787"
        ));
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if int_option(libc::SOL_SOCKET, libc::SO_ACCEPTCONN) != Some(1) {
        return Err(format!(
            "descriptor {fd} (passed by the service manager) is a TCP socket that does not listen"
        ));
    }
    // SAFETY: fcntl(2) on a descriptor this process owns; no plugin may inherit it.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
    // SAFETY: the descriptor is an open listening TCP socket (checked above), handed to this
    // process to own; nothing else in the process uses it.
    Ok(unsafe { std::net::TcpListener::from_raw_fd(fd) })
}

#[cfg(not(unix))]
fn take_listener(fd: i32) -> Result<std::net::TcpListener, String> {
    Err(format!(
        "socket activation (descriptor {fd}) needs a Unix system"
    ))
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
