//! The fleet against three real fronts in this process (the HTTP server with a runner token),
//! its names resolved by a resolver of the test's own: one link per address, with one runner
//! instance; a new address gets a link and a gone one loses it; a name that stops resolving
//! keeps its links; a stop closes every link; a refused credential ends the fleet.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{preferred, Fleet, Resolver};
use crate::link::{ConnectOptions, LinkEnd};
use crate::{HttpServer, HttpStopper, ProxyChoice, Tokens};
use webcodex_plugin_host::Gateway;

/// A hang guard, never a timing.
const LIMIT: Duration = Duration::from_secs(30);
const TOKEN: &str = "runner-token-of-edge-fleet-test";

/// One front: its gateway, address and server thread.
struct FrontUnderTest {
    gateway: Arc<Gateway>,
    addr: SocketAddr,
    stopper: HttpStopper,
    thread: Option<JoinHandle<()>>,
}

impl FrontUnderTest {
    fn start() -> FrontUnderTest {
        let gateway = Arc::new(Gateway::new(Vec::new()));
        let tokens = Tokens::parse(&format!(
            "[[runner_tokens]]\nname = \"edge\"\ntoken = \"{TOKEN}\"\nrunner = \"edge\"\n"
        ))
        .unwrap();
        let server = HttpServer::bind("127.0.0.1:0", gateway.clone(), tokens).unwrap();
        let addr = server.local_addr();
        let stopper = server.stopper();
        let thread = std::thread::spawn(move || {
            let _ = server.run();
        });
        FrontUnderTest {
            gateway,
            addr,
            stopper,
            thread: Some(thread),
        }
    }

    /// The instance of runner `edge` when it is linked.
    fn linked(&self) -> Option<String> {
        self.gateway
            .remote_runners()
            .iter()
            .find(|r| r.id() == "edge")
            .map(|r| r.link_instance().unwrap_or_default())
    }
}

impl Drop for FrontUnderTest {
    fn drop(&mut self) {
        self.stopper.stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn options(token: &str) -> ConnectOptions {
    ConnectOptions {
        front_url: "http://fronts.test:8787".into(),
        token: token.into(),
        ca_pem: None,
        proxy: ProxyChoice::Direct,
        name: Some("Edge".into()),
        connect_timeout: Duration::from_secs(5),
    }
}

/// A resolver of `fronts.test` to whatever `answer` holds (`None`: it fails), counting calls.
fn resolver(answer: Arc<Mutex<Option<Vec<SocketAddr>>>>, calls: Arc<AtomicUsize>) -> Resolver {
    Arc::new(move |host: &str, _port: u16| {
        assert_eq!(host, "fronts.test");
        calls.fetch_add(1, Ordering::SeqCst);
        answer
            .lock()
            .clone()
            .ok_or_else(|| std::io::Error::other("no such host (test)"))
    })
}

#[test]
fn one_link_per_address_follows_the_name_and_ends_on_stop() {
    let fronts: Vec<FrontUnderTest> = (0..3).map(|_| FrontUnderTest::start()).collect();
    let answer = Arc::new(Mutex::new(Some(vec![fronts[0].addr, fronts[1].addr])));
    let calls = Arc::new(AtomicUsize::new(0));
    let fleet = Fleet::new(vec![options(TOKEN)]).unwrap().with_resolver(
        resolver(answer.clone(), calls.clone()),
        Duration::from_millis(50),
    );
    let instance = fleet.instance().to_string();
    let stop = fleet.stopper();
    let runner = Arc::new(Gateway::new(Vec::new()));
    let running = std::thread::spawn(move || fleet.run(&runner));

    wait_for("links to the two addresses", || {
        fronts[0].linked().is_some() && fronts[1].linked().is_some()
    });
    assert_eq!(fronts[0].linked().as_deref(), Some(instance.as_str()));
    assert_eq!(fronts[1].linked().as_deref(), Some(instance.as_str()));
    assert_eq!(fronts[2].linked(), None);

    // The name now resolves to the second and third fronts.
    *answer.lock() = Some(vec![fronts[2].addr, fronts[1].addr]);
    wait_for("a link to the new address, none to the gone one", || {
        fronts[2].linked().is_some() && fronts[0].linked().is_none()
    });
    assert_eq!(fronts[2].linked().as_deref(), Some(instance.as_str()));
    assert_eq!(fronts[1].linked().as_deref(), Some(instance.as_str()));

    // The name stops resolving: three more rounds later the links are still there.
    *answer.lock() = None;
    let seen = calls.load(Ordering::SeqCst);
    wait_for("three more resolutions", || {
        calls.load(Ordering::SeqCst) >= seen + 3
    });
    assert!(fronts[1].linked().is_some() && fronts[2].linked().is_some());

    stop.stop();
    let deadline = Instant::now() + LIMIT;
    while !running.is_finished() {
        assert!(Instant::now() < deadline, "the fleet did not stop");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(running.join().unwrap(), LinkEnd::Stopped);
    wait_for("every link closed", || {
        fronts.iter().all(|f| f.linked().is_none())
    });
}

#[test]
fn a_refused_credential_ends_the_fleet() {
    let front = FrontUnderTest::start();
    let answer = Arc::new(Mutex::new(Some(vec![front.addr])));
    let fleet = Fleet::new(vec![options("not-the-runner-token-of-edge")])
        .unwrap()
        .with_resolver(
            resolver(answer, Arc::new(AtomicUsize::new(0))),
            Duration::from_millis(50),
        );
    let runner = Arc::new(Gateway::new(Vec::new()));
    let running = std::thread::spawn(move || fleet.run(&runner));
    let deadline = Instant::now() + LIMIT;
    while !running.is_finished() {
        assert!(Instant::now() < deadline, "the fleet did not end");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(running.join().unwrap(), LinkEnd::Refused(401));
}

#[test]
fn a_name_links_to_the_addresses_of_one_family() {
    let a: SocketAddr = "10.0.0.2:8787".parse().unwrap();
    let b: SocketAddr = "10.0.0.1:8787".parse().unwrap();
    let six: SocketAddr = "[fd00::1]:8787".parse().unwrap();
    let six_b: SocketAddr = "[fd00::2]:8787".parse().unwrap();
    // A dual-stack name (one front, or replicas with both families): its IPv4 addresses.
    assert_eq!(preferred(vec![six, a, b, a]), vec![b, a]);
    // An IPv6-only name: every address.
    assert_eq!(preferred(vec![six_b, six]), vec![six, six_b]);
}
