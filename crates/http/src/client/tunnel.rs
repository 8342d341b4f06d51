//! A runner link's tunnel through an HTTP proxy: ureq's `CONNECT` (`ConnectProxyConnector`, the
//! same the client's connections go through) over a TCP socket opened here, which the link keeps
//! (it waits on that socket itself and shuts it down from another thread).

use std::io;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use ureq::http::Uri;
use ureq::unversioned::resolver::Resolver;
use ureq::unversioned::transport::time::Instant;
use ureq::unversioned::transport::{
    Buffers, ConnectProxyConnector, ConnectionDetails, Connector, LazyBuffers, NextTimeout,
    Transport,
};
use ureq::{Agent, Proxy, Timeout};

use super::dial::timeout;
use super::resolve::LiteralFirst;

/// Opens a TCP connection to `proxy` and asks it for a tunnel to `host:port` (`tls`: the target
/// speaks TLS, for the `CONNECT` target's default port only). The proxy's answer is read up to
/// its blank line and nothing after it; every step is bounded by `connect_timeout`. The socket
/// comes back with those timeouts still set.
pub(crate) fn tunnel(
    proxy: &Proxy,
    host: &str,
    port: u16,
    tls: bool,
    connect_timeout: Duration,
) -> io::Result<TcpStream> {
    let scheme = if tls { "https" } else { "http" };
    let target: Uri = format!("{scheme}://{host}:{port}/")
        .parse()
        .map_err(|_| io::Error::other("the front's address is not a valid URL"))?;
    let config = Agent::config_builder().proxy(Some(proxy.clone())).build();
    let resolver = LiteralFirst::default();
    let kept: Arc<Mutex<Option<TcpStream>>> = Arc::default();
    let keep = kept.clone();
    let details = ConnectionDetails {
        uri: &target,
        // An HTTP proxy resolves the target's name itself.
        addrs: resolver.empty(),
        config: &config,
        request_level: false,
        resolver: &resolver,
        now: Instant::now(),
        timeout: timeout(connect_timeout, Timeout::Connect),
        current_time: Arc::new(Instant::now),
        // The connection to the proxy: TCP to the first of its addresses that accepts.
        run_connector: Arc::new(move |to_proxy: &ConnectionDetails| {
            let stream = connect_first(to_proxy, connect_timeout)?;
            *keep.lock() = Some(stream.try_clone()?);
            Ok(Box::new(Socket {
                stream,
                buffers: LazyBuffers::new(8 * 1024, 1024),
            }) as Box<dyn Transport>)
        }),
        register_shutdown: Arc::new(|_| Ok(())),
    };
    let connector = ConnectProxyConnector::default();
    let tunnel = Connector::<()>::connect(&connector, &details, None)
        .map_err(|e| match e {
            ureq::Error::ConnectProxyFailed(why) => {
                io::Error::other(format!("the proxy refused the tunnel ({why})"))
            }
            ureq::Error::Io(e) => e,
            e => io::Error::other(e.to_string()),
        })?
        .ok_or_else(|| io::Error::other("the proxy made no tunnel"))?;
    let mut tunnel = tunnel;
    if !tunnel.buffers().input().is_empty() {
        return Err(io::Error::other(
            "the proxy sent bytes after its answer, before the tunnel was used",
        ));
    }
    drop(tunnel);
    let stream = kept.lock().take();
    stream.ok_or_else(|| io::Error::other("the proxy made no tunnel"))
}

/// A TCP connection to the first address of `details` that accepts within `limit`, with
/// `limit` as its read and write timeouts.
fn connect_first(details: &ConnectionDetails, limit: Duration) -> Result<TcpStream, ureq::Error> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the proxy's host has no address");
    for addr in details.addrs.iter() {
        match TcpStream::connect_timeout(addr, limit) {
            Ok(stream) => {
                stream.set_nodelay(true)?;
                stream.set_read_timeout(Some(limit))?;
                stream.set_write_timeout(Some(limit))?;
                return Ok(stream);
            }
            Err(e) => last = e,
        }
    }
    Err(last.into())
}

/// A TCP socket as a ureq transport, for the `CONNECT` exchange only: its timeouts are the
/// socket's own (set by [`connect_first`]).
#[derive(Debug)]
struct Socket {
    stream: TcpStream,
    buffers: LazyBuffers,
}

impl Transport for Socket {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, _: NextTimeout) -> Result<(), ureq::Error> {
        io::Write::write_all(&mut self.stream, &self.buffers.output()[..amount])?;
        Ok(())
    }

    fn await_input(&mut self, _: NextTimeout) -> Result<bool, ureq::Error> {
        let n = io::Read::read(&mut self.stream, self.buffers.input_append_buf())?;
        self.buffers.input_appended(n);
        Ok(n > 0)
    }

    fn is_open(&mut self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;

    /// A proxy for one connection: reads the request head, answers `status`, then (for 200)
    /// echoes what comes through the tunnel once. Returns its address and the head it read.
    fn proxy(status: &'static str) -> (String, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let seen = std::thread::spawn(move || {
            let (mut client, _) = listener.accept().unwrap();
            client
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && client.read(&mut byte).unwrap() == 1 {
                head.push(byte[0]);
            }
            client
                .write_all(format!("HTTP/1.1 {status}\r\n\r\n").as_bytes())
                .unwrap();
            if status.starts_with("200") {
                let mut ping = [0u8; 4];
                client.read_exact(&mut ping).unwrap();
                client.write_all(&ping).unwrap();
            }
            String::from_utf8(head).unwrap()
        });
        (addr, seen)
    }

    #[test]
    fn a_tunnel_is_a_plain_socket_once_the_proxy_said_yes() {
        let (addr, seen) = proxy("200 Connection established");
        let proxy = Proxy::new(&format!("http://user:pass@{addr}")).unwrap();
        let limit = Duration::from_secs(30);
        let mut stream = tunnel(&proxy, "[::1]", 9000, true, limit).unwrap();
        stream.write_all(b"ping").unwrap();
        let mut echo = [0u8; 4];
        stream.read_exact(&mut echo).unwrap();
        assert_eq!(&echo, b"ping");
        let head = seen.join().unwrap();
        assert!(
            head.starts_with("CONNECT [::1]:9000 HTTP/1.1\r\n"),
            "{head}"
        );
        // The credentials of the proxy URL, as Basic (base64 of `user:pass`).
        assert!(
            head.contains("\r\nProxy-Authorization: Basic dXNlcjpwYXNz\r\n"),
            "{head}"
        );
    }

    #[test]
    fn a_refused_tunnel_says_so() {
        let (addr, seen) = proxy("407 Proxy Authentication Required");
        let proxy = Proxy::new(&format!("http://{addr}")).unwrap();
        let e = tunnel(&proxy, "front.test", 443, true, Duration::from_secs(30)).unwrap_err();
        assert!(e.to_string().contains("refused the tunnel"), "{e}");
        assert!(seen.join().unwrap().starts_with("CONNECT front.test:443 "));
    }
}
