//! The front's heartbeat on a real loopback socket with a short heartbeat: a silent link gets
//! its pings and is ended after the silence bound; a peer that dribbles a frame it never
//! completes cannot postpone either; a caller that reads its own answer gets it, and the
//! heartbeat and the end of a link hold while it reads.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;

use super::{Heartbeat, LinkRegistry};
use webcodex_plugin_host::gateway::Gateway;

/// A hang guard (never a timing: the links here end within a second).
const LIMIT: Duration = Duration::from_secs(20);

const SHORT: Heartbeat = Heartbeat {
    ping_every: Duration::from_millis(100),
    dead_after: Duration::from_millis(400),
};

const HELLO: &str =
    r#"{"hello":{"protocol":"webcodex-runner-link-v1","instance":"AAAAAAAAAAAAAAAAAAAAAA"}}"#;

/// One masked client frame (the mask is zero, so the payload reads as it is).
fn client_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 126);
    let mut frame = vec![0x80 | opcode, 0x80 | payload.len() as u8, 0, 0, 0, 0];
    frame.extend_from_slice(payload);
    frame
}

/// The next frame the front wrote (its opcode and payload); `None` at the end of the stream.
fn server_frame(tcp: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    tcp.read_exact(&mut head).ok()?;
    let mut len = usize::from(head[1] & 0x7f);
    if len == 126 {
        let mut ext = [0u8; 2];
        tcp.read_exact(&mut ext).ok()?;
        len = usize::from(u16::from_be_bytes(ext));
    }
    let mut payload = vec![0u8; len];
    tcp.read_exact(&mut payload).ok()?;
    Some((head[0] & 0x0f, payload))
}

/// A front's registry serving one link of runner `quiet` on a thread; the client's socket,
/// welcomed, and a receiver that hears when the link's `serve` returned.
fn linked() -> (
    Arc<Gateway>,
    TcpStream,
    crossbeam_channel::Receiver<Instant>,
) {
    let gateway = Arc::new(Gateway::new(Vec::new()));
    let registry = LinkRegistry::new(gateway.clone()).with_heartbeat(SHORT);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    client.set_read_timeout(Some(LIMIT)).unwrap();
    let (stream, _) = listener.accept().unwrap();
    let (done, ended) = bounded(1);
    std::thread::spawn(move || {
        registry.serve("quiet", "token-of-quiet", stream, Vec::new());
        let _ = done.send(Instant::now());
    });
    client
        .write_all(&client_frame(1, HELLO.as_bytes()))
        .unwrap();
    let (opcode, welcome) = server_frame(&mut client).expect("a welcome");
    assert_eq!(opcode, 1);
    assert_eq!(welcome, br#"{"welcome":{"runner":"quiet"}}"#);
    (gateway, client, ended)
}

/// Reads the front's frames until it closes: the pings and the close frames seen.
fn frames_until_closed(mut client: TcpStream) -> (usize, usize) {
    let (mut pings, mut closes) = (0, 0);
    while let Some((opcode, _)) = server_frame(&mut client) {
        match opcode {
            9 => pings += 1,
            8 => closes += 1,
            other => panic!("an unexpected frame (opcode {other})"),
        }
    }
    (pings, closes)
}

#[test]
fn a_silent_link_is_pinged_then_ended_and_leaves_the_routing_table() {
    let (gateway, client, ended) = linked();
    let wait = Instant::now() + LIMIT;
    while !gateway.runner_names().contains(&"quiet".to_string()) {
        assert!(Instant::now() < wait, "the link never became a runner");
        std::thread::sleep(Duration::from_millis(5));
    }
    // The client never answers: pings (every 100 ms), then a close frame after 400 ms.
    let (pings, closes) = frames_until_closed(client);
    assert!(pings >= 2, "{pings} pings");
    assert_eq!(closes, 1);
    ended.recv_timeout(LIMIT).expect("serve returned");
    assert!(gateway.runner_names().is_empty());
}

#[test]
fn a_peer_dribbling_a_frame_cannot_postpone_the_ping_or_the_end() {
    let (_gateway, client, ended) = linked();
    // The head of a 100-byte text frame, then one byte of it every 20 ms: bytes keep coming,
    // no message ever completes. Before the reader waited until a deadline, each byte started
    // its wait again and the link outlived its silence bound as long as the bytes came.
    let mut dribbler = client.try_clone().unwrap();
    let dribbling = std::thread::spawn(move || {
        let _ = dribbler.write_all(&[0x81, 0x80 | 100, 0, 0, 0, 0]);
        for _ in 0..99 {
            std::thread::sleep(Duration::from_millis(20));
            if dribbler.write_all(b"x").is_err() {
                return true;
            }
        }
        false
    });
    let (pings, closes) = frames_until_closed(client);
    assert!(pings >= 1, "{pings} pings");
    assert_eq!(closes, 1);
    ended.recv_timeout(LIMIT).expect("serve returned");
    assert!(
        dribbling.join().unwrap(),
        "the link lived until the dribbling stopped"
    );
}

/// Waits (bounded) until the link of `quiet` is a runner of the gateway.
fn wait_runner(gateway: &Gateway) {
    let wait = Instant::now() + LIMIT;
    while !gateway.runner_names().contains(&"quiet".to_string()) {
        assert!(Instant::now() < wait, "the link never became a runner");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Asks `list` of runner `quiet` through the link on a thread of its own (that caller finds
/// no other caller reading, so it claims the reading and reads its own answer).
fn list_through(
    gateway: &Arc<Gateway>,
) -> std::thread::JoinHandle<webcodex_plugin_host::gateway::ToolOutput> {
    let gateway = gateway.clone();
    std::thread::spawn(move || {
        gateway.plugin_tool(
            &webcodex_plugin_host::gateway::Caller::trusted(),
            &serde_json::json!({"action": "list", "runner": "quiet"}),
        )
    })
}

/// The id of the next request the front wrote, skipping its pings (and the pings seen).
fn next_request_id(client: &mut TcpStream) -> (u64, usize) {
    let mut pings = 0;
    loop {
        match server_frame(client).expect("a request") {
            (9, _) => pings += 1,
            (1, payload) => {
                let frame: serde_json::Value = serde_json::from_slice(&payload).unwrap();
                return (frame["id"].as_u64().expect("an id"), pings);
            }
            (other, _) => panic!("an unexpected frame (opcode {other})"),
        }
    }
}

#[test]
fn callers_that_read_their_own_answers_get_them_and_the_link_reads_on() {
    let (gateway, mut client, ended) = linked();
    wait_runner(&gateway);
    for _ in 0..3 {
        let asked = list_through(&gateway);
        let (id, _) = next_request_id(&mut client);
        let reply = format!(
            r#"{{"id":{id},"dispatch_state":"completed","payload":{{"kind":"list","output":{{"runner":"local","plugins":[]}}}}}}"#
        );
        client
            .write_all(&client_frame(1, reply.as_bytes()))
            .unwrap();
        let output = asked.join().unwrap();
        assert!(output.is_success(), "{}", output.to_json());
    }
    // No caller reads now: the connection thread notices the end of the stream.
    client.shutdown(std::net::Shutdown::Write).unwrap();
    ended.recv_timeout(LIMIT).expect("serve returned");
    assert!(gateway.runner_names().is_empty());
}

#[test]
fn a_caller_waiting_on_a_silent_runner_has_the_heartbeat_kept_and_the_link_ended() {
    let (gateway, mut client, ended) = linked();
    wait_runner(&gateway);
    let asked = list_through(&gateway);
    let (_, mut pings) = next_request_id(&mut client);
    // The runner never answers: the connection thread still pings while the caller holds the
    // reading, and ends the link at the silence bound; the caller's answer is lost.
    let (more, closes) = frames_until_closed(client);
    pings += more;
    assert!(pings >= 2, "{pings} pings");
    assert_eq!(closes, 1);
    let output = asked.join().unwrap();
    assert!(!output.is_success(), "{}", output.to_json());
    ended.recv_timeout(LIMIT).expect("serve returned");
    assert!(gateway.runner_names().is_empty());
}
