//! No zombies (docs/ARCHITECTURE.md §7, pitfalls): after providers are dropped, this process has no zombie children;
//! and a retired plugin is killed and reaped at once, while its provider still exists.
//!
//! `zombie_children_of_self()` looks at every child of the test process, so these tests run one
//! at a time (a process-wide lock) in their own test binary: no other test's plugin can be a
//! legitimately unreaped child while one of them looks.

use crate::common;

use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;
use webcodex_plugin_host::Provider;

use common::{assert_plugins_cleaned_up, zombie_children_of_self, Fixture, GENEROUS};

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

/// Every fault that retires a provider, with the provider still alive: within the termination
/// bound the plugin is reaped (no zombie child) and its group (grandchild included) is empty.
#[test]
fn every_retiring_fault_reaps_the_plugin_at_once_without_a_drop() {
    let _serial = serial();
    let faults: [(&str, &str, serde_json::Value); 9] = [
        ("malformed", "garbage", json!({})),
        ("huge", "huge_line", json!({})),
        ("wrong-id", "wrong_id", json!({"delta": 1})),
        ("bad-envelope", "bad_error", json!({})),
        ("crash", "crash", json!({})),
        ("exit-keep", "exit_keep_stdout", json!({})),
        ("bad-result", "invalid_result", json!({})),
        ("bad-output", "bad_output", json!({})),
        ("timeout", "hang", json!({})),
    ];
    for (label, tool, arguments) in faults {
        let fx = Fixture::new(label);
        let provider = fx.start("normal", NORMAL);
        provider.call("grandchild", &json!({})).unwrap();
        let err = provider
            .call_checked(tool, None, &arguments, SHORT)
            .expect_err("the fault must fail the call");
        assert!(err.is_fatal(), "{label}: {err} must retire");
        assert!(provider.is_retired());
        fx.assert_cleaned_up();
        for pid in fx.grandchild_pids() {
            assert!(common::process_is_gone(pid), "{label}: grandchild {pid}");
        }
        drop(provider);
    }
}

#[test]
fn unexpected_message_retires_and_reaps_at_once() {
    let _serial = serial();
    let fx = Fixture::new("unsolicited");
    let provider = fx.start("normal", NORMAL);
    provider.call("then_unsolicited", &json!({})).unwrap();
    let err = provider.call("echo", &json!({"text": "x"})).unwrap_err();
    assert!(err.is_fatal(), "{err}");
    fx.assert_cleaned_up();
}

#[test]
fn stop_reaps_at_once_without_a_drop() {
    let _serial = serial();
    let fx = Fixture::new("stop");
    let provider = fx.start("normal", NORMAL);
    provider.call("grandchild", &json!({})).unwrap();
    provider.stop();
    fx.assert_cleaned_up();
}

/// A plugin that exits by itself with no request in flight is retired, its group killed and
/// its process reaped without waiting for the next call.
#[test]
fn plugin_exiting_on_its_own_is_retired_and_reaped_without_a_call() {
    let _serial = serial();
    let fx = Fixture::new("exit-alone");
    let provider = fx.start("exit-after-handshake", NORMAL);
    let deadline = std::time::Instant::now() + GENEROUS;
    while !provider.is_retired() {
        assert!(
            std::time::Instant::now() < deadline,
            "the exit was never noticed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    fx.assert_cleaned_up();
    let grandchildren = fx.grandchild_pids();
    assert_eq!(grandchildren.len(), 1);
    assert_plugins_cleaned_up(&[fx.plugin_pid()]);
    assert!(common::wait_gone(grandchildren[0]), "grandchild survived");
}

/// Windows keeps a process's parent id after the parent exits, and that id can be given to a
/// plugin: the leftover check must not take the processes naming it for the plugin's tree.
/// Under Wine, `services.exe` and its services name the exited `wineboot.exe` (a small id that
/// plugins get again); this once failed `provider_runtime` on a busy machine.
#[cfg(windows)]
#[test]
fn leftover_check_ignores_processes_naming_an_exited_parent() {
    let stale = common::windows::processes_naming_an_exited_parent();
    assert!(
        !stale.is_empty(),
        "expected a process whose parent exited (Wine: services.exe; Windows: explorer.exe)"
    );
    for (pid, parent) in stale {
        let found = common::leftovers(
            std::process::id() as i32,
            &[parent as i32],
            common::ChildScope::Groups,
        );
        assert!(
            found.iter().all(|p| p.pid != pid as i32),
            "process {pid} (parent id {parent}, exited) was taken for a leftover: {found:?}"
        );
    }
}
