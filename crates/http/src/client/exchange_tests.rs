//! The exchange against a scripted connection (no socket): what it writes, how it reads each
//! kind of answer, and which answers leave the connection fit for another request.

use std::collections::VecDeque;
use std::time::Duration;

use ureq::unversioned::transport::{Buffers, LazyBuffers, NextTimeout, Transport};

use super::*;

/// What the scripted server does when the client waits for input.
#[derive(Debug)]
enum Step {
    /// These bytes arrive.
    Bytes(Vec<u8>),
    /// The wait times out.
    Timeout,
}

/// A connection whose input is scripted and whose output is recorded.
#[derive(Debug)]
struct Scripted {
    buffers: LazyBuffers,
    script: VecDeque<Step>,
    written: Vec<u8>,
    writes: usize,
    /// The socket timeouts asked for, in order.
    waits: Vec<NextTimeout>,
}

impl Scripted {
    fn new(script: impl IntoIterator<Item = Step>) -> Scripted {
        Scripted {
            buffers: LazyBuffers::new(128 * 1024, 128 * 1024),
            script: script.into_iter().collect(),
            written: Vec::new(),
            writes: 0,
            waits: Vec::new(),
        }
    }

    /// A connection on which `pieces` arrive one wait each, then the server closes.
    fn answering(pieces: &[&[u8]]) -> Scripted {
        Scripted::new(pieces.iter().map(|p| Step::Bytes(p.to_vec())))
    }
}

impl Transport for Scripted {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, _: NextTimeout) -> Result<(), ureq::Error> {
        self.writes += 1;
        let bytes = self.buffers.output()[..amount].to_vec();
        self.written.extend_from_slice(&bytes);
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.waits.push(timeout);
        match self.script.pop_front() {
            None => Ok(false),
            Some(Step::Timeout) => Err(ureq::Error::Timeout(timeout.reason)),
            Some(Step::Bytes(bytes)) => {
                let free = self.buffers.input_append_buf();
                let n = bytes.len().min(free.len());
                free[..n].copy_from_slice(&bytes[..n]);
                self.buffers.input_appended(n);
                if n < bytes.len() {
                    self.script.push_front(Step::Bytes(bytes[n..].to_vec()));
                }
                Ok(n > 0)
            }
        }
    }

    fn is_open(&mut self) -> bool {
        true
    }
}

const READ: Duration = Duration::from_secs(130);

/// What `receive` gave: the status, instance and body, and whether the connection may be kept.
type Got = (u16, Option<String>, Vec<u8>, bool);

fn receive_all(t: &mut Scripted) -> Result<Got, ClientError> {
    receive(t, READ, |status, instance, body| {
        (status, instance.map(str::to_string), body.to_vec())
    })
    .map(|((status, instance, body), keep)| (status, instance, body, keep))
}

fn lost(r: Result<Got, ClientError>) -> String {
    match r {
        Err(ClientError::Lost(m)) => m,
        other => panic!("not lost: {other:?}"),
    }
}

fn bad(r: Result<Got, ClientError>) -> String {
    match r {
        Err(ClientError::BadResponse(m)) => m,
        other => panic!("not a bad response: {other:?}"),
    }
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
    Webcodex-Runner-Instance: inst-1\r\nContent-Length: 16\r\n\r\n{\"success\":true}";

#[test]
fn a_request_goes_out_in_one_write() {
    let mut t = Scripted::new([]);
    send(&mut t, &[b"POST / HTTP/1.1\r\n", b"\r\n", b"{}"], READ).unwrap();
    assert_eq!(t.writes, 1);
    assert_eq!(t.written, b"POST / HTTP/1.1\r\n\r\n{}");
    // Larger than the output buffer: one write per buffer-full, every byte in order.
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let mut t = Scripted::new([]);
    send(&mut t, &[b"head", &big, b"tail"], READ).unwrap();
    assert_eq!(t.writes, 3);
    assert_eq!(t.written.len(), big.len() + 8);
    assert_eq!(&t.written[4..4 + big.len()], &big[..]);
    assert!(t.written.ends_with(b"tail"));
}

#[test]
fn an_answer_in_one_read_is_taken_where_it_lies_and_keeps_the_connection() {
    let mut t = Scripted::answering(&[OK]);
    let (status, instance, body, keep) = receive_all(&mut t).unwrap();
    assert_eq!((status, instance.as_deref()), (200, Some("inst-1")));
    assert_eq!(body, b"{\"success\":true}");
    assert!(keep);
    assert!(t.buffers.input().is_empty());
    assert_eq!(t.waits.len(), 1, "one wait for the whole answer");
    // The wait is the read timeout, already a whole step.
    assert_eq!(t.waits[0].after, Budget::Exact(READ));
}

#[test]
fn an_answer_in_many_pieces_is_put_together() {
    for cut in 1..OK.len() {
        let (a, b) = OK.split_at(cut);
        let mut t = Scripted::answering(&[a, b]);
        let (status, instance, body, keep) = receive_all(&mut t).unwrap();
        assert_eq!(
            (status, instance.as_deref()),
            (200, Some("inst-1")),
            "{cut}"
        );
        assert_eq!(body, b"{\"success\":true}", "{cut}");
        assert!(keep, "{cut}");
    }
    let bytes: Vec<&[u8]> = OK.chunks(1).collect();
    assert!(receive_all(&mut Scripted::answering(&bytes)).unwrap().3);
}

#[test]
fn chunked_answers_are_decoded() {
    let answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        7\r\n{\"succe\r\n9\r\nss\":true}\r\n0\r\n\r\n";
    for step in [1, 5, answer.len()] {
        let pieces: Vec<&[u8]> = answer.chunks(step).collect();
        let (status, _, body, keep) = receive_all(&mut Scripted::answering(&pieces)).unwrap();
        assert_eq!(
            (status, &body[..], keep),
            (200, &b"{\"success\":true}"[..], true)
        );
    }
    // Broken framing is not HTTP.
    let broken = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
    let m = bad(receive_all(&mut Scripted::answering(&[broken])));
    assert!(m.contains("not HTTP/1.x"), "{m}");
}

#[test]
fn an_answer_that_closes_leaves_the_connection_unkept() {
    let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}";
    let (status, _, body, keep) = receive_all(&mut Scripted::answering(&[close])).unwrap();
    assert_eq!((status, &body[..], keep), (200, &b"{}"[..], false));
    // No length: the body runs to the close.
    let until = b"HTTP/1.1 200 OK\r\n\r\n{\"a\":";
    let got = receive_all(&mut Scripted::answering(&[until, b"1}"])).unwrap();
    assert_eq!((&got.2[..], got.3), (&b"{\"a\":1}"[..], false));
    // Bytes after the answer nobody asked for: the answer is taken, the connection is not.
    let extra = [OK, b"HTTP/1.1 200 OK\r\n"].concat();
    let got = receive_all(&mut Scripted::answering(&[&extra])).unwrap();
    assert_eq!((got.0, got.3), (200, false));
}

#[test]
fn interim_answers_are_skipped_and_a_protocol_switch_is_not_an_answer() {
    let continued = [&b"HTTP/1.1 100 Continue\r\n\r\n"[..], OK].concat();
    let got = receive_all(&mut Scripted::answering(&[&continued])).unwrap();
    assert_eq!((got.0, got.3), (200, true));
    let got = receive_all(&mut Scripted::answering(&[
        b"HTTP/1.1 100 Continue\r\n\r\n",
        OK,
    ]));
    assert_eq!(got.unwrap().0, 200);
    let hints = [
        &b"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"[..],
        b"HTTP/1.1 102 Processing\r\n\r\n",
        OK,
    ]
    .concat();
    let got = receive_all(&mut Scripted::answering(&[&hints])).unwrap();
    assert_eq!((got.0, got.3), (200, true));
    let switch = [&b"HTTP/1.1 101 Switching Protocols\r\n\r\n"[..], OK].concat();
    let m = lost(receive_all(&mut Scripted::answering(&[&switch])));
    assert!(m.contains("not a plugin_tool status"), "101: {m}");
}

#[test]
fn heads_and_bodies_are_bounded() {
    // A head over 64 KiB, whether or not it ever ends.
    let filler = format!("X-Filler: {}\r\n", "y".repeat(1000));
    let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
    while head.len() <= MAX_HEAD_BYTES {
        head.extend_from_slice(filler.as_bytes());
    }
    let m = lost(receive_all(&mut Scripted::answering(&[&head])));
    assert!(m.contains("larger than 64 KiB"), "{m}");
    head.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    let m = lost(receive_all(&mut Scripted::answering(&[&head])));
    assert!(m.contains("larger than 64 KiB"), "{m}");
    // A stream of interim answers counts toward the bound too.
    let hundreds = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(MAX_HEAD_BYTES / 20);
    let m = lost(receive_all(&mut Scripted::answering(&[&hundreds])));
    assert!(m.contains("larger than 64 KiB"), "{m}");
    // Bodies over 1 MiB, declared or chunked or until the close.
    let declared = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
        MAX_BODY_BYTES + 1
    );
    let m = bad(receive_all(&mut Scripted::answering(
        &[declared.as_bytes()],
    )));
    assert!(m.contains("larger than 1 MiB"), "{m}");
    let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, "z".repeat(64 * 1024));
    let mut chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..17 {
        chunked.extend_from_slice(chunk.as_bytes());
    }
    let m = bad(receive_all(&mut Scripted::answering(&[&chunked])));
    assert!(m.contains("larger than 1 MiB"), "{m}");
    let mut until = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
    until.resize(until.len() + MAX_BODY_BYTES + 1, b'z');
    let m = bad(receive_all(&mut Scripted::answering(&[&until])));
    assert!(m.contains("larger than 1 MiB"), "{m}");
    // Exactly 1 MiB is taken.
    let mut full =
        format!("HTTP/1.1 200 OK\r\nContent-Length: {MAX_BODY_BYTES}\r\n\r\n").into_bytes();
    full.resize(full.len() + MAX_BODY_BYTES, b'z');
    let got = receive_all(&mut Scripted::answering(&[&full])).unwrap();
    assert_eq!((got.2.len(), got.3), (MAX_BODY_BYTES, true));
}

#[test]
fn an_answer_cut_short_or_late_is_lost() {
    let m = lost(receive_all(&mut Scripted::answering(&[])));
    assert!(m.contains("without answering"), "{m}");
    let m = lost(receive_all(&mut Scripted::answering(&[
        b"HTTP/1.1 200 OK\r\nConte",
    ])));
    assert!(m.contains("middle of the answer's head"), "{m}");
    let m = lost(receive_all(&mut Scripted::answering(
        &[&OK[..OK.len() - 3]],
    )));
    assert!(m.contains("middle of the answer"), "{m}");
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab";
    let m = lost(receive_all(&mut Scripted::answering(&[chunked])));
    assert!(m.contains("middle of the answer"), "{m}");
    let mut late = Scripted::new([Step::Bytes(b"HTTP/1.1 2".to_vec()), Step::Timeout]);
    let m = lost(receive_all(&mut late));
    assert!(m.contains("read timeout (130 s)"), "{m}");
}

#[test]
fn garbage_is_a_bad_response() {
    for garbage in [
        &b"SSH-2.0-OpenSSH_9.6\r\n\r\n"[..],
        b"<html><body>hello</body></html>\n\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
    ] {
        let m = bad(receive_all(&mut Scripted::answering(&[garbage])));
        assert!(m.contains("not HTTP/1.x"), "{m}");
    }
}

#[test]
fn socket_waits_are_whole_steps() {
    let exact = |d| budget(d, Timeout::RecvResponse).after;
    assert_eq!(exact(Duration::from_millis(129_999)), Budget::Exact(READ));
    assert_eq!(exact(Duration::from_nanos(1)), Budget::Exact(TIMEOUT_STEP));
    assert_eq!(exact(READ), Budget::Exact(READ));
}
