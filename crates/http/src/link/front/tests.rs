//! The front's heartbeat on a real loopback socket with a short heartbeat: a silent link gets
//! its pings and is ended after the silence bound; a peer that dribbles a frame it never
//! completes cannot postpone either; a caller that reads its own answer gets it, and the
//! heartbeat and the end of a link hold while it reads; a link that ends after its last
//! answer leaves at once, not at the next ping; a revoked token closes its link at once (1008); a stopping front awaits the answer owed before it closes the link (1001).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;
use parking_lot::RwLock;

use super::{Heartbeat, LinkRegistry};
use crate::tokens::Tokens;
use webcodex_plugin_host::Gateway;

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

/// The token of runner `quiet`.
const QUIET_TOKEN: &str = "token-of-runner-quiet";

/// A tokens file whose runner token for `quiet` is `token`.
fn tokens_of_quiet(token: &str) -> Tokens {
    Tokens::parse(&format!(
        "[[runner_tokens]]\nname = \"quiet\"\ntoken = \"{token}\"\nrunner = \"quiet\"\n"
    ))
    .unwrap()
}

/// A front's registry serving one link of runner `quiet` on a thread; the client's socket,
/// welcomed, and a receiver that hears when the link's `serve` returned.
fn linked() -> (
    Arc<Gateway>,
    TcpStream,
    crossbeam_channel::Receiver<Instant>,
) {
    let linked = linked_with(SHORT);
    (linked.gateway, linked.client, linked.ended)
}

/// A link served by a registry: what [`linked_with`] gives.
struct Linked {
    gateway: Arc<Gateway>,
    registry: Arc<LinkRegistry>,
    tokens: Arc<RwLock<Tokens>>,
    client: TcpStream,
    ended: crossbeam_channel::Receiver<Instant>,
}

/// [`linked`] with `heartbeat`, also giving the registry and its tokens.
fn linked_with(heartbeat: Heartbeat) -> Linked {
    let gateway = Arc::new(Gateway::new(Vec::new()));
    let tokens = Arc::new(RwLock::new(tokens_of_quiet(QUIET_TOKEN)));
    let registry =
        Arc::new(LinkRegistry::new(gateway.clone(), tokens.clone()).with_heartbeat(heartbeat));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    client.set_read_timeout(Some(LIMIT)).unwrap();
    let (stream, _) = listener.accept().unwrap();
    let (done, ended) = bounded(1);
    let serving = registry.clone();
    std::thread::spawn(move || {
        serving.serve("quiet", QUIET_TOKEN, stream, Vec::new());
        let _ = done.send(Instant::now());
    });
    client
        .write_all(&client_frame(1, HELLO.as_bytes()))
        .unwrap();
    let (opcode, welcome) = server_frame(&mut client).expect("a welcome");
    assert_eq!(opcode, 1);
    assert_eq!(welcome, br#"{"welcome":{"runner":"quiet"}}"#);
    Linked {
        gateway,
        registry,
        tokens,
        client,
        ended,
    }
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
) -> std::thread::JoinHandle<webcodex_plugin_host::ToolOutput> {
    let gateway = gateway.clone();
    std::thread::spawn(move || {
        gateway.plugin_tool(
            &webcodex_plugin_host::Caller::trusted(),
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
fn a_link_that_ends_after_its_last_answer_leaves_before_the_next_ping() {
    // The heartbeat never comes within the test: only the claim's release can wake the
    // connection thread that waited while the caller read.
    let Linked {
        gateway,
        mut client,
        ended,
        ..
    } = linked_with(SLOW);
    wait_runner(&gateway);
    let asked = list_through(&gateway);
    let (id, _) = next_request_id(&mut client);
    // A pong wakes the connection thread, which finds the claim held and waits (without the
    // wake on release, until its next heartbeat duty, 600 s away). The pause only gives it
    // the time to get there before the answer: the test cannot fail for want of it.
    client.write_all(&client_frame(10, b"")).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let reply = format!(
        r#"{{"id":{id},"dispatch_state":"completed","payload":{{"kind":"list","output":{{"runner":"local","plugins":[]}}}}}}"#
    );
    client
        .write_all(&client_frame(1, reply.as_bytes()))
        .unwrap();
    assert!(asked.join().unwrap().is_success());
    client.shutdown(std::net::Shutdown::Both).unwrap();
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

/// A heartbeat that never comes within a test.
const SLOW: Heartbeat = Heartbeat {
    ping_every: Duration::from_secs(600),
    dead_after: Duration::from_secs(1200),
};

/// The close frame the front wrote next (requests and pings skipped): its code and reason.
fn close_frame(client: &mut TcpStream) -> (u16, String) {
    loop {
        match server_frame(client).expect("a close frame") {
            (8, payload) => {
                let code = u16::from_be_bytes([payload[0], payload[1]]);
                return (code, String::from_utf8_lossy(&payload[2..]).into_owned());
            }
            (1 | 9, _) => continue,
            (other, _) => panic!("an unexpected frame (opcode {other})"),
        }
    }
}

#[test]
fn a_revoked_token_closes_its_link_at_once_and_ends_the_request_waiting_on_it() {
    for replacement in ["token-of-another-runner", "rotated-token-of-quiet"] {
        let Linked {
            gateway,
            registry,
            tokens,
            mut client,
            ended,
        } = linked_with(SLOW);
        wait_runner(&gateway);
        let asked = list_through(&gateway);
        next_request_id(&mut client);
        // Another runner's entry, or the same runner id with another token.
        let id = if replacement.starts_with("rotated") {
            "quiet"
        } else {
            "other"
        };
        *tokens.write() = Tokens::parse(&format!(
            "[[runner_tokens]]\nname = \"n\"\ntoken = \"{replacement}\"\nrunner = \"{id}\"\n"
        ))
        .unwrap();
        let started = Instant::now();
        assert_eq!(registry.revoke(), ["quiet"]);
        assert!(gateway.runner_names().is_empty(), "still routed");
        let (code, reason) = close_frame(&mut client);
        assert_eq!(
            (code, reason.as_str()),
            (1008, "the runner token was revoked")
        );
        let output = asked.join().unwrap();
        assert_eq!(
            output.code(),
            Some(webcodex_plugin_host::ErrorCode::GatewayTimeout),
            "{}",
            output.to_json()
        );
        ended.recv_timeout(LIMIT).expect("serve returned");
        assert!(started.elapsed() < LIMIT / 4, "not at once");
        // A link whose token still holds stays.
        assert!(registry.revoke().is_empty());
    }
}

#[test]
fn a_link_that_keeps_its_token_keeps_its_runner_and_takes_its_new_cap() {
    // The client is kept: the link lives while it is open.
    let Linked {
        gateway,
        registry,
        tokens,
        client: _client,
        ..
    } = linked_with(SLOW);
    wait_runner(&gateway);
    *tokens.write() = Tokens::parse(&format!(
        "[[runner_tokens]]\nname = \"q\"\ntoken = \"{QUIET_TOKEN}\"\nrunner = \"quiet\"\n\
         max_in_flight = 3\n"
    ))
    .unwrap();
    assert!(registry.revoke().is_empty());
    let runners = registry.runners.lock();
    assert_eq!(runners["quiet"].remote.max_in_flight(), 3);
    assert!(gateway.runner_names().contains(&"quiet".to_string()));
}

#[test]
fn a_hello_whose_name_holds_the_token_is_refused() {
    let gateway = Arc::new(Gateway::new(Vec::new()));
    let tokens = Arc::new(RwLock::new(tokens_of_quiet(QUIET_TOKEN)));
    let registry = LinkRegistry::new(gateway.clone(), tokens);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    client.set_read_timeout(Some(LIMIT)).unwrap();
    let (stream, _) = listener.accept().unwrap();
    let hello = format!(
        r#"{{"hello":{{"protocol":"webcodex-runner-link-v1","instance":"AAAAAAAAAAAAAAAAAAAAAA","name":"x{QUIET_TOKEN}x"}}}}"#
    );
    client
        .write_all(&client_frame(1, hello.as_bytes()))
        .unwrap();
    registry.serve("quiet", QUIET_TOKEN, stream, Vec::new());
    let (code, reason) = close_frame(&mut client);
    assert_eq!(code, 1008);
    assert!(!reason.contains(QUIET_TOKEN), "{reason}");
    assert!(gateway.runner_names().is_empty());
}

#[test]
fn a_draining_front_awaits_the_answer_owed_then_closes_the_link() {
    let Linked {
        gateway,
        registry,
        mut client,
        ended,
        ..
    } = linked_with(SLOW);
    wait_runner(&gateway);
    let asked = list_through(&gateway);
    let (id, _) = next_request_id(&mut client);
    registry.drain();
    // Nothing new is sent: another request fails at once, not started.
    let refused = list_through(&gateway).join().unwrap();
    assert_eq!(
        (refused.code(), refused.to_json()["dispatch"].as_str()),
        (
            Some(webcodex_plugin_host::ErrorCode::RunnerUnavailable),
            Some("not_started")
        ),
        "{}",
        refused.to_json()
    );
    // The answer owed still comes through; then the link is closed (1001).
    let reply = format!(
        r#"{{"id":{id},"dispatch_state":"completed","payload":{{"kind":"list","output":{{"runner":"local","plugins":[]}}}}}}"#
    );
    client
        .write_all(&client_frame(1, reply.as_bytes()))
        .unwrap();
    let output = asked.join().unwrap();
    assert!(output.is_success(), "{}", output.to_json());
    let (code, _) = close_frame(&mut client);
    assert_eq!(code, 1001);
    ended.recv_timeout(LIMIT).expect("serve returned");
    assert!(gateway.runner_names().is_empty());
}
