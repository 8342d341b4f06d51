//! Tests of serve's request heads, bodies and answers on real sockets.

use super::*;
use std::net::TcpListener;

/// A connected pair: the server side as a [`Conn`], and the client's stream.
fn pair() -> (Conn, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    (Conn::new(server), client)
}

fn head_of(raw: &str) -> Result<Head, HeadError> {
    let (mut conn, mut client) = pair();
    client.write_all(raw.as_bytes()).unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    conn.read_head(deadline, deadline)
}

#[test]
fn socket_timeouts_are_whole_steps_and_set_once_per_value() {
    let now = Instant::now();
    let at = |ms| socket_timeout(now + Duration::from_millis(ms)).unwrap();
    assert_eq!(at(4_999), Duration::from_secs(5));
    assert_eq!(at(1), TIMEOUT_STEP);
    assert!(
        socket_timeout(now).is_err(),
        "a passed deadline is a timeout"
    );
    // Two requests with their own deadlines (5 s from their start) find the same value.
    let (mut conn, _client) = pair();
    conn.read_by(Instant::now() + Duration::from_secs(5))
        .unwrap();
    let first = conn.read_timeout;
    conn.read_by(Instant::now() + Duration::from_secs(5))
        .unwrap();
    assert_eq!(conn.read_timeout, first);
    assert_eq!(conn.stream.read_timeout().unwrap(), first);
}

#[test]
fn heads_and_framing() {
    let head =
        head_of("\r\nPOST /a?b HTTP/1.1\r\nContent-Length: 3\r\nX: 1\r\nx: 2\r\n\r\n").unwrap();
    assert_eq!((head.method(), head.path()), ("POST", "/a"));
    assert_eq!(head.declared_length(), Some(3));
    assert!(head.keep_alive && !head.expect_continue);
    assert_eq!(head.unique("x"), None);
    assert_eq!(head.values("X").collect::<Vec<_>>(), ["1", "2"]);
    let head = head_of("GET / HTTP/1.0\r\n\r\n").unwrap();
    assert!(!head.keep_alive && !head.has_body());
    let head = head_of("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n").unwrap();
    assert!(!head.keep_alive);
    let head = head_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
    assert_eq!(head.framing, Framing::Chunked);
    let bad = |raw: &str| head_of(raw).unwrap_err();
    let both = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n";
    assert_eq!(bad(both), HeadError::Malformed);
    let gzip = "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
    assert_eq!(bad(gzip), HeadError::Unsupported);
    let two = "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n";
    assert_eq!(bad(two), HeadError::Malformed);
    assert_eq!(
        bad("POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n"),
        HeadError::Malformed
    );
    assert_eq!(bad("NOT HTTP\r\n\r\n"), HeadError::Malformed);
    assert_eq!(bad("GET / HTTP/1.1\r\nHost: x\r\n"), HeadError::Idle);
    assert_eq!(bad(""), HeadError::Idle);
    let many: String = (0..=MAX_HEADERS).map(|i| format!("X-{i}: v\r\n")).collect();
    assert_eq!(
        bad(&format!("GET / HTTP/1.1\r\n{many}\r\n")),
        HeadError::TooLarge
    );
    let long = format!(
        "GET / HTTP/1.1\r\nX: {}\r\n\r\n",
        "v".repeat(MAX_HEAD_BYTES)
    );
    assert_eq!(bad(&long), HeadError::TooLarge);
}

fn head_of_bytes(raw: &[u8]) -> Head {
    let (mut conn, mut client) = pair();
    client.write_all(raw).unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    conn.read_head(deadline, deadline).unwrap()
}

#[test]
fn a_head_reads_the_same_whether_or_not_a_value_is_utf8() {
    // Two requests on one connection: the second head's ranges are into its own text.
    let (mut conn, mut client) = pair();
    client
        .write_all(b"GET /one HTTP/1.1\r\nA:  x y \t\r\nB:\r\n\r\nPOST /two?q HTTP/1.1\r\nC: \xc3\xa9\r\n\r\n")
        .unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let first = conn.read_head(deadline, deadline).unwrap();
    assert_eq!((first.method(), first.path()), ("GET", "/one"));
    assert_eq!(first.unique("a"), Some("x y"), "values are trimmed");
    assert_eq!(first.unique("B"), Some(""));
    let second = conn.read_head(deadline, deadline).unwrap();
    assert_eq!((second.method(), second.path()), ("POST", "/two"));
    assert_eq!(
        second.unique("c"),
        Some("\u{e9}"),
        "UTF-8 in a value is kept"
    );
    // Not UTF-8 (a Latin-1 byte in a value): the value is kept lossily, the rest as is.
    let latin = head_of_bytes(b"GET /l HTTP/1.1\r\nX:  caf\xe9 \r\nY: ok\r\n\r\n");
    assert_eq!((latin.method(), latin.path()), ("GET", "/l"));
    assert_eq!(latin.unique("x"), Some("caf\u{fffd}"));
    assert_eq!(latin.unique("y"), Some("ok"));
    assert!(latin.keep_alive);
}

#[test]
fn bodies_by_length_and_chunked() {
    let (mut conn, mut client) = pair();
    let deadline = Instant::now() + Duration::from_secs(5);
    client
        .write_all(b"abcde4;ext=1\r\nwxyz\r\n2\r\n!!\r\n0\r\nTrailer: t\r\n\r\nrest")
        .unwrap();
    assert_eq!(
        conn.read_body(Framing::Length(5), 5, deadline).unwrap(),
        b"abcde"
    );
    assert_eq!(
        conn.read_body(Framing::Chunked, 6, deadline).unwrap(),
        b"wxyz!!"
    );
    assert_eq!(
        conn.read_body(Framing::Length(5), 4, deadline),
        Err(BodyError::TooLarge)
    );
    // Nothing of a body declared too large was read.
    assert_eq!(
        conn.read_body(Framing::Length(4), 4, deadline).unwrap(),
        b"rest"
    );
    client.write_all(b"9\r\n123456789\r\n0\r\n\r\n").unwrap();
    assert_eq!(
        conn.read_body(Framing::Chunked, 8, deadline),
        Err(BodyError::TooLarge)
    );
    let (mut conn, mut client) = pair();
    client.write_all(b"short").unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    assert_eq!(
        conn.read_body(Framing::Length(10), 10, deadline),
        Err(BodyError::Broken)
    );
}

#[test]
fn a_body_that_stops_coming_times_out_at_the_deadline() {
    let (mut conn, mut client) = pair();
    client.write_all(b"ab").unwrap();
    let deadline = Instant::now() + Duration::from_millis(300);
    assert_eq!(
        conn.read_body(Framing::Length(10), 10, deadline),
        Err(BodyError::TimedOut)
    );
    drop(client);
}
