//! `serve` under a service manager: where its listener comes from (`--listen`, or the socket
//! systemd passed) and the readiness notifications (`READY=1`, `STOPPING=1`).

use std::net::TcpListener;
use std::sync::Arc;

use webcodex_plugin_host::Gateway;
use webcodex_plugin_http::{HttpServer, Tokens};
use webcodex_plugin_ops::systemd;

use super::{EXIT_FAILURE, EXIT_USAGE};

/// Where `serve` listens: an address to bind, or the socket a service manager passed.
pub(super) enum ServeListener {
    /// `--listen ADDR`, bound once the providers are started.
    Bind(String),
    /// Descriptor 3 of socket activation.
    Inherited(TcpListener),
}

/// The listener of `serve` (and the notify socket claimed from the environment): the inherited socket when the service manager passed one (then
/// `--listen` is ignored, with a warning), else `--listen`, checked. The exit code after a
/// message that says what to fix otherwise.
pub(super) fn listener(listen: Option<&str>) -> Result<ServeListener, i32> {
    systemd::claim_notify_socket();
    match systemd::inherited_listener() {
        Ok(Some(socket)) => {
            if let Some(listen) = listen {
                log::warn!(
                    "serve: listening on the socket systemd passed; --listen {listen} is ignored"
                );
            }
            return Ok(ServeListener::Inherited(socket));
        }
        Ok(None) => {}
        Err(message) => {
            eprintln!("error: socket activation: {message}");
            return Err(EXIT_USAGE);
        }
    }
    let Some(listen) = listen else {
        eprintln!(
            "error: serve needs --listen ADDR (e.g. 127.0.0.1:8787), or a listening socket \
             passed by systemd socket activation (LISTEN_FDS)"
        );
        return Err(EXIT_USAGE);
    };
    if std::net::ToSocketAddrs::to_socket_addrs(listen).is_err() {
        eprintln!("error: --listen {listen:?} is not an address such as 127.0.0.1:8787");
        return Err(EXIT_USAGE);
    }
    Ok(ServeListener::Bind(listen.to_string()))
}

impl ServeListener {
    /// The HTTP server for `gateway` on this listener; the exit code after a message when the
    /// address cannot be bound.
    pub(super) fn serve(
        self,
        gateway: Arc<Gateway>,
        tokens: Tokens,
        origins: Vec<String>,
    ) -> Result<HttpServer, i32> {
        match self {
            ServeListener::Bind(addr) => {
                HttpServer::bind_with_origins(addr.as_str(), gateway, tokens, origins).map_err(
                    |e| {
                        eprintln!("error: cannot listen on {addr}: {e}");
                        EXIT_FAILURE
                    },
                )
            }
            ServeListener::Inherited(socket) => {
                HttpServer::from_inherited(socket, gateway, tokens, origins).map_err(|e| {
                    eprintln!("error: cannot serve on the socket systemd passed: {e}");
                    EXIT_FAILURE
                })
            }
        }
    }
}

/// Tells the service manager `state` when `NOTIFY_SOCKET` is set; a failure is logged only.
pub(super) fn notify(state: &str) {
    if let Err(e) = systemd::notify(state) {
        log::warn!("serve: could not notify the service manager ({state}): {e}");
    }
}
