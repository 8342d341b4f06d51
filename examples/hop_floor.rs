//! The floor of a front hop: a byte relay between a client and a runner's `serve`, with no HTTP
//! or JSON work at all. `scripts/perf-hop.sh` times calls through it beside the same calls made
//! directly and through a real front, so the hop's cost splits into what any relay between two
//! processes pays (one more process woken twice per call, two more sockets) and what the front
//! adds on top.
//!
//! For each accepted connection it opens one connection to the runner and forwards bytes both
//! ways with `poll(2)` on one thread: a request is a read and a write, its answer a read and a
//! write. Loopback only; a test tool, never shipped.
//!
//! Run: `hop_floor RUNNER_ADDR` prints `listening on ADDR` and relays until killed.

#[cfg(unix)]
fn main() {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    let runner = std::env::args()
        .nth(1)
        .expect("usage: hop_floor RUNNER_ADDR");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    println!("listening on {}", listener.local_addr().expect("address"));
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        let Ok(upstream) = TcpStream::connect(&runner) else {
            continue;
        };
        std::thread::spawn(move || {
            let _ = client.set_nodelay(true);
            let _ = upstream.set_nodelay(true);
            let mut sides = [client, upstream];
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                let mut fds = [0, 1].map(|i| libc::pollfd {
                    fd: sides[i].as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
                // SAFETY: two valid descriptors owned by `sides` for the call.
                if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
                    return;
                }
                for from in 0..2 {
                    if fds[from].revents == 0 {
                        continue;
                    }
                    let n = match sides[from].read(&mut buffer) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if sides[1 - from].write_all(&buffer[..n]).is_err() {
                        return;
                    }
                }
            }
        });
    }
}

#[cfg(not(unix))]
fn main() {
    eprintln!("hop_floor runs on Unix only");
    std::process::exit(2);
}
