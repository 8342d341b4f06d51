//! No zombies (docs/ARCHITECTURE.md §7, pitfalls): after providers are dropped, this process has no
//! zombie children.
//!
//! `zombie_children_of_self()` looks at every child of the test process, so these tests run one
//! at a time (a process-wide lock) in their own test binary: no other test's plugin can be a
//! legitimately unreaped child while one of them looks.

mod common;

use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;
use webcodex_plugin_host::provider::Provider;

use common::{zombie_children_of_self, Fixture};

const NORMAL: Duration = Duration::from_secs(30);
const SHORT: Duration = Duration::from_secs(1);

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn assert_no_zombie_children() {
    let zombies = zombie_children_of_self();
    assert!(zombies.is_empty(), "zombie children left: {zombies:?}");
}

#[test]
fn no_zombie_children_after_dropping_healthy_providers() {
    let _serial = serial();
    assert_no_zombie_children();
    let fixtures: Vec<Fixture> = (0..3)
        .map(|i| Fixture::new(&format!("healthy-{i}")))
        .collect();
    let providers: Vec<Provider> = fixtures.iter().map(|f| f.start("normal", NORMAL)).collect();
    for p in &providers {
        p.call("echo", &json!({"text": "x"})).unwrap();
    }
    drop(providers);
    assert_no_zombie_children();
}

#[test]
fn no_zombie_children_after_plugins_that_crash_or_exit() {
    let _serial = serial();
    assert_no_zombie_children();
    let crash = Fixture::new("crash");
    let exit = Fixture::new("exit-keep-stdout");
    let a = crash.start("normal", NORMAL);
    let b = exit.start("normal", NORMAL);
    assert!(a.call("crash", &json!({})).is_err());
    assert!(b.call("exit_keep_stdout", &json!({})).is_err());
    drop((a, b));
    assert_no_zombie_children();
}

#[test]
fn no_zombie_children_after_failed_admissions() {
    let _serial = serial();
    assert_no_zombie_children();
    for (mode, timeout) in [
        ("stray-stdout", NORMAL),
        ("silent-init", SHORT),
        ("bad-version", NORMAL),
        ("bad-tools", NORMAL),
        ("exit-at-start", NORMAL),
    ] {
        let fx = Fixture::new(mode);
        let _ = fx.start_err(mode, timeout);
        assert_no_zombie_children();
    }
}

#[test]
fn no_zombie_children_after_stop_retire_and_timeout() {
    let _serial = serial();
    assert_no_zombie_children();
    let stopped = Fixture::new("stopped");
    let faulted = Fixture::new("faulted");
    let timed_out = Fixture::new("timed-out");
    let a = stopped.start("normal", NORMAL);
    a.call("grandchild", &json!({})).unwrap();
    a.stop();
    let b = faulted.start("normal", NORMAL);
    assert!(b.call("garbage", &json!({})).is_err());
    let c = timed_out.start("stop-reading", NORMAL);
    assert!(c
        .call_checked("echo", None, &json!({"text": "x"}), SHORT)
        .is_err());
    drop((a, b, c));
    assert_no_zombie_children();
}
