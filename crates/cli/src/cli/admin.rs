//! `serve --admin-listen ADDR`: the admin listener on a thread of its own, with the process's
//! metrics installed as the front ends' observer.

use std::sync::Arc;
use std::thread::JoinHandle;

use webcodex_plugin_host::install_observer;
use webcodex_plugin_host::Gateway;
use webcodex_plugin_ops::{AdminServer, AdminStopper, DialOutIds, Metrics};

use super::{EXIT_FAILURE, EXIT_USAGE};

/// A running admin listener.
pub(super) struct Admin {
    addr: std::net::SocketAddr,
    stopper: AdminStopper,
    dial_out: DialOutIds,
    thread: JoinHandle<()>,
}

/// Binds `addr` and serves health, readiness and metrics for `gateway`, knowing the runner ids
/// of `runner_ids` (the runner tokens') from its first answer, and awaiting them for
/// `await_runners` (cluster mode) before it reports ready; the exit code after a message on
/// stderr when it cannot.
pub(super) fn start(
    addr: &str,
    gateway: &Arc<Gateway>,
    runner_ids: &[String],
    await_runners: Option<std::time::Duration>,
) -> Result<Admin, i32> {
    if std::net::ToSocketAddrs::to_socket_addrs(addr).is_err() {
        eprintln!("error: --admin-listen {addr:?} is not an address such as 127.0.0.1:9464");
        return Err(EXIT_USAGE);
    }
    let metrics = Metrics::new(gateway.clone());
    let observer = metrics.observer();
    let dial_out = metrics.dial_out_ids();
    let server = match AdminServer::bind(addr, gateway.clone(), metrics) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("error: cannot listen on --admin-listen {addr}: {e}");
            return Err(EXIT_FAILURE);
        }
    };
    install_observer(observer);
    let local = server.local_addr();
    let stopper = server.stopper();
    dial_out.set(runner_ids.iter().map(String::as_str));
    if let Some(within) = await_runners {
        stopper.await_runners(within);
    }
    let thread = std::thread::Builder::new()
        .name("wc-admin".into())
        .spawn(move || server.run())
        .map_err(|e| {
            eprintln!("error: no thread for the admin listener: {e}");
            EXIT_FAILURE
        })?;
    Ok(Admin {
        addr: local,
        stopper,
        dial_out,
        thread,
    })
}

impl Admin {
    /// The bound address.
    pub(super) fn local_addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// A handle that marks the process as stopping (`/readyz` turns red) from another thread.
    pub(super) fn stopper(&self) -> AdminStopper {
        self.stopper.clone()
    }

    /// The handle that tells the metrics which runner ids may dial out.
    pub(super) fn dial_out_ids(&self) -> DialOutIds {
        self.dial_out.clone()
    }

    /// Stops the listener and waits for its connections to end (bounded by their deadlines).
    pub(super) fn stop(self) {
        self.stopper.stop();
        let _ = self.thread.join();
    }
}
