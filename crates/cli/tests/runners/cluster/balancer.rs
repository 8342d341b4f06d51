//! The cluster behind a real balancer: Debian's haproxy (HTTP mode, round robin per request,
//! no affinity, a new connection per request) before three replicas on 127.0.0.1, .2 and .3
//! (one port), with two `connect` runners linked to all three. haproxy checks each replica's
//! `/readyz`, and retries only a connection that was refused (nothing sent).

use super::*;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Providers per runner: a provider serves one call at a time, so each client calls its own.
const PROVIDERS: usize = 4;
/// Concurrent clients: one per provider of the two runners.
const CLIENTS: usize = 2 * PROVIDERS;

/// A port free on 127.0.0.1, 127.0.0.2 and 127.0.0.3 at once.
fn shared_port() -> u16 {
    for _ in 0..100 {
        let first = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        let free = [2, 3]
            .iter()
            .all(|i| TcpListener::bind((Ipv4Addr::new(127, 0, 0, *i), port)).is_ok());
        if free {
            return port;
        }
    }
    panic!("no port free on 127.0.0.1-3");
}

/// A haproxy process in the foreground, killed and reaped on drop.
struct Haproxy {
    child: Child,
    addr: SocketAddr,
}

impl Haproxy {
    fn start(dir: &TempDir, port: u16, admin_port: u16) -> Haproxy {
        let listen = SocketAddr::from(([127, 0, 0, 1], shared_port()));
        let servers: String = (1..=3)
            .map(|i| format!("    server r{i} 127.0.0.{i}:{port} check port {admin_port}\n"))
            .collect();
        let config = dir.write(
            "haproxy.cfg",
            &format!(
                "global\n    maxconn 1024\n\n\
                 defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n\
                 \x20   timeout server 60s\n    retries 3\n    option redispatch 1\n\
                 \x20   option http-server-close\n    http-reuse never\n\n\
                 frontend clients\n    bind {listen}\n    default_backend replicas\n\n\
                 backend replicas\n    balance roundrobin\n    option httpchk GET /readyz\n\
                 \x20   http-check expect status 200\n\
                 \x20   default-server inter 200ms fall 1 rise 1\n{servers}"
            ),
        );
        let check = Command::new("haproxy")
            .args(["-c", "-f", s(&config)])
            .output()
            .expect("haproxy is installed (Debian package haproxy)");
        assert!(
            check.status.success(),
            "haproxy -c: {}",
            String::from_utf8_lossy(&check.stderr)
        );
        let child = Command::new("haproxy")
            .args(["-db", "-f", s(&config)])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn haproxy");
        let haproxy = Haproxy {
            child,
            addr: listen,
        };
        wait_for("haproxy listens", LIMIT, || {
            TcpStream::connect(listen).is_ok()
        });
        haproxy
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request through the balancer: when it started and ended, and what came back.
struct Outcome {
    started: Instant,
    answer: Result<(u16, Value, String), String>,
}

impl Outcome {
    /// A call that completed with the echoed text.
    fn ok(&self) -> bool {
        matches!(&self.answer, Ok((200, body, _)) if body["output"]["isError"] == false
            && body["output"]["content"][0]["text"] == "hi")
    }

    /// A lost answer: the connection ended without one, or the balancer's own 502/503/504.
    fn lost(&self) -> bool {
        match &self.answer {
            Err(_) => true,
            Ok((status, _, instance)) => matches!(status, 502..=504) && instance.is_empty(),
        }
    }

    fn replica(&self) -> Option<&str> {
        self.answer.as_ref().ok().map(|(_, _, i)| i.as_str())
    }
}

/// Calls through `addr`, one client per lane of `lanes` (the bindings of one provider, called
/// in turn), until `stop` is set or `total` calls were made.
fn traffic(
    addr: SocketAddr,
    lanes: &[Vec<String>],
    total: usize,
    stop: &AtomicBool,
    done: &AtomicUsize,
) -> Vec<Outcome> {
    std::thread::scope(|scope| {
        let clients: Vec<_> = lanes
            .iter()
            .map(|lane| {
                scope.spawn(move || {
                    let mut outcomes = Vec::new();
                    let mut n = 0;
                    while !stop.load(Ordering::SeqCst)
                        && done.fetch_add(1, Ordering::SeqCst) < total
                    {
                        let binding = &lane[n % lane.len()];
                        n += 1;
                        let started = Instant::now();
                        let answer = try_exchange(addr, &tool_request(&call_params(binding, "hi")))
                            .map_err(|e| e.to_string());
                        outcomes.push(Outcome { started, answer });
                    }
                    outcomes
                })
            })
            .collect();
        clients
            .into_iter()
            .flat_map(|c| c.join().expect("a client thread"))
            .collect()
    })
}

/// `total` calls through `addr`, every one of which must succeed; how many each replica
/// (by its instance) answered.
fn all_succeed(addr: SocketAddr, lanes: &[Vec<String>], total: usize) -> BTreeMap<String, usize> {
    let outcomes = traffic(
        addr,
        lanes,
        total,
        &AtomicBool::new(false),
        &AtomicUsize::new(0),
    );
    assert_eq!(outcomes.len(), total);
    let failed: Vec<_> = outcomes
        .iter()
        .filter(|o| !o.ok())
        .map(|o| &o.answer)
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {total} calls failed: {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    let mut by_replica = BTreeMap::new();
    for outcome in &outcomes {
        *by_replica
            .entry(outcome.replica().unwrap().to_string())
            .or_insert(0) += 1;
    }
    by_replica
}

use std::collections::BTreeMap;

#[test]
#[ignore = "needs haproxy"]
fn haproxy_round_robin_before_three_replicas_and_two_runners() {
    let dir = TempDir::new("cluster", "haproxy");
    let tokens = tokens(&dir, &["edge-a", "edge-b"]);
    let (first_key, second_key) = (new_key("first"), new_key("second"));
    let keys = dir.write("keys.toml", &first_key);
    let (port, admin_port) = (shared_port(), shared_port());
    let args = |i: u8| -> Vec<String> {
        vec![
            "--listen".into(),
            format!("127.0.0.{i}:{port}"),
            "--admin-listen".into(),
            format!("127.0.0.{i}:{admin_port}"),
            "--tokens".into(),
            s(&tokens).into(),
            "--cluster-keys".into(),
            s(&keys).into(),
        ]
    };
    let mut replicas: Vec<Replica> = (1..=3).map(|i| Replica::start(args(i))).collect();
    let urls: Vec<String> = (1..=3)
        .map(|i| format!("http://127.0.0.{i}:{port}"))
        .collect();
    let mut runners = [
        Runner::start(&dir, "edge-a", &urls, PROVIDERS),
        Runner::start(&dir, "edge-b", &urls, PROVIDERS),
    ];
    for replica in &replicas {
        wait_linked(replica.addr, &["edge-a", "edge-b"], LIMIT);
        wait_for("ready", LIMIT, || replica.admin_get("/readyz").0 == 200);
    }
    let haproxy = Haproxy::start(&dir, port, admin_port);
    let pids = |replicas: &[Replica]| -> Vec<i32> {
        let mut pids: Vec<i32> = replicas
            .iter()
            .filter(|r| r.child.is_some())
            .map(|r| r.pid() as i32)
            .collect();
        pids.push(haproxy.pid());
        pids.extend(runners.iter().map(Runner::pid));
        pids
    };
    let instances: Vec<String> = replicas
        .iter()
        .map(|r| tool(r.addr, json!({"action": "list"})).2)
        .collect();
    wait_for("haproxy routes to all three", LIMIT, || {
        let answered: Vec<String> = (0..6)
            .map(|_| tool(haproxy.addr, json!({"action": "list"})).2)
            .collect();
        instances.iter().all(|i| answered.contains(i))
    });
    check_process_table(&pids(&replicas), &[&runners[0], &runners[1]], &[]);

    // 1. Round robin: each describe lands on one replica, its calls on all three.
    let describe_all = || -> Vec<(String, String)> {
        ["edge-a", "edge-b"]
            .iter()
            .flat_map(|runner| {
                (0..PROVIDERS).map(move |i| describe_of(haproxy.addr, runner, &format!("fx{i}")))
            })
            .collect()
    };
    let described = describe_all();
    for (_, on) in &described {
        assert!(instances.contains(on), "described on a replica: {on}");
    }
    let first: Vec<String> = described.into_iter().map(|(b, _)| b).collect();
    let bindings: Vec<Vec<String>> = first.iter().map(|b| vec![b.clone()]).collect();
    let by_replica = all_succeed(haproxy.addr, &bindings, 3000);
    for instance in &instances {
        assert!(
            by_replica.get(instance).copied().unwrap_or(0) >= 500,
            "{by_replica:?}"
        );
    }
    let mut total_calls = 3000;
    let mut lost_calls = 0;
    check_process_table(&pids(&replicas), &[&runners[0], &runners[1]], &[]);

    // 2. One replica SIGKILLed mid-traffic: only calls in flight then may fail, as lost
    // answers; every later call succeeds through the other two.
    let stop = AtomicBool::new(false);
    let done = AtomicUsize::new(0);
    let (outcomes, killed, killed_at) = std::thread::scope(|scope| {
        let load = scope.spawn(|| traffic(haproxy.addr, &bindings, usize::MAX, &stop, &done));
        wait_for("300 calls before the kill", LIMIT, || {
            done.load(Ordering::SeqCst) >= 300
        });
        let killed = replicas[0].kill();
        let killed_at = Instant::now();
        let at_kill = done.load(Ordering::SeqCst);
        wait_for("1500 calls after the kill", LIMIT * 4, || {
            done.load(Ordering::SeqCst) >= at_kill + 1500
        });
        stop.store(true, Ordering::SeqCst);
        (load.join().unwrap(), killed, killed_at)
    });
    let lost: Vec<&Outcome> = outcomes.iter().filter(|o| !o.ok()).collect();
    for outcome in &lost {
        assert!(
            outcome.lost(),
            "a call failed otherwise than as a lost answer: {:?}",
            outcome.answer
        );
        assert!(
            outcome.started < killed_at,
            "a call made after the kill failed: {:?}",
            outcome.answer
        );
    }
    assert!(
        lost.len() <= CLIENTS,
        "{} lost, more than were in flight",
        lost.len()
    );
    let after: Vec<&Outcome> = outcomes.iter().filter(|o| o.started >= killed_at).collect();
    assert!(after.len() >= 1000, "{} calls after the kill", after.len());
    assert!(after
        .iter()
        .all(|o| o.replica() != Some(instances[0].as_str())));
    total_calls += outcomes.len();
    lost_calls += lost.len();
    eprintln!(
        "the kill: {} calls, {} after it, {} lost (in flight at the kill)",
        outcomes.len(),
        after.len(),
        lost.len()
    );
    check_process_table(&pids(&replicas), &[&runners[0], &runners[1]], &[killed]);

    // 3. The replica back (same address and keys): the runners relink within the backoff cap,
    // it turns ready, the balancer sends it calls again, and old bindings open there.
    replicas[0].spawn();
    let relinked = wait_linked(
        replicas[0].addr,
        &["edge-a", "edge-b"],
        BACKOFF_CAP + RELINK_SLACK,
    );
    eprintln!(
        "the runners relinked {} ms after the replica came back",
        relinked.as_millis()
    );
    let back = tool(replicas[0].addr, json!({"action": "list"})).2;
    wait_for("the balancer routes to the replica again", LIMIT, || {
        (0..6).any(|_| tool(haproxy.addr, json!({"action": "list"})).2 == back)
    });
    let by_replica = all_succeed(haproxy.addr, &bindings, 1200);
    assert!(
        by_replica.get(&back).copied().unwrap_or(0) >= 200,
        "{by_replica:?}"
    );
    total_calls += 1200;
    check_process_table(&pids(&replicas), &[&runners[0], &runners[1]], &[]);

    // 4. A key rotated with overlap: new bindings are sealed with the second key, the first
    // key's still open everywhere until it leaves the file.
    std::fs::write(&keys, format!("{second_key}\n{first_key}")).unwrap();
    for replica in &replicas {
        replica.hang_up();
        replica.wait_logged("--cluster-keys reloaded (keys second, first;");
    }
    let second: Vec<String> = describe_all().into_iter().map(|(b, _)| b).collect();
    let only_second = sealer(&[&second_key]);
    assert!(second.iter().all(|b| only_second.open_at(b, 0).is_some()));
    assert!(first.iter().all(|b| only_second.open_at(b, 0).is_none()));
    // Each client calls its provider through its old and its new binding in turn.
    let mixed: Vec<Vec<String>> = first
        .iter()
        .zip(&second)
        .map(|(old, new)| vec![old.clone(), new.clone()])
        .collect();
    all_succeed(haproxy.addr, &mixed, 600);
    std::fs::write(&keys, &second_key).unwrap();
    for replica in &replicas {
        replica.hang_up();
        replica.wait_logged("--cluster-keys reloaded (keys second;");
    }
    for binding in &first {
        for _ in 0..3 {
            assert_eq!(call_code(haproxy.addr, binding), "describe_required");
        }
    }
    let rotated: Vec<Vec<String>> = second.iter().map(|b| vec![b.clone()]).collect();
    all_succeed(haproxy.addr, &rotated, 600);
    total_calls += 1200 + 3 * first.len();
    check_process_table(&pids(&replicas), &[&runners[0], &runners[1]], &[]);

    // 5. Tampered and foreign bindings: describe_required on every replica.
    let a2 = &second[0];
    let middle = a2.len() / 2;
    let flipped = if &a2[middle..=middle] == "A" {
        "B"
    } else {
        "A"
    };
    let tampered = format!("{}{flipped}{}", &a2[..middle], &a2[middle + 1..]);
    let contents = only_second.open_at(a2, 0).unwrap();
    // The same contents under another cluster's key of the same id, and of another id.
    let foreign_same_id = sealer(&[&new_key("second")]).seal_at(&contents, 0).unwrap();
    let foreign_other_id = sealer(&[&new_key("elsewhere")])
        .seal_at(&contents, 0)
        .unwrap();
    for binding in [&tampered, &foreign_same_id, &foreign_other_id] {
        for _ in 0..6 {
            assert_eq!(call_code(haproxy.addr, binding), "describe_required");
        }
    }
    total_calls += 18;
    check_process_table(&pids(&replicas), &[&runners[0], &runners[1]], &[]);

    // The end: runners and replicas stop as an operator stops them.
    for runner in &mut runners {
        runner.stop();
    }
    for replica in &mut replicas {
        replica.stop();
    }
    drop(haproxy);
    common::assert_no_zombie_children_of_self();
    eprintln!(
        "haproxy before 3 replicas and 2 runners: {total_calls} calls, {lost_calls} lost \
         answers (all in flight at the SIGKILL), 0 other failures"
    );
}
