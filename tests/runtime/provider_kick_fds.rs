//! A request's deadline holds while no file descriptor is free (Linux; docs/DECISIONS.md
//! D-PROV-10).
//!
//! On Linux the caller sleeps in a blocking read of the plugin's stdout, and the deadline wakes
//! it with a kick: one byte written through a write end opened for that moment. With every
//! descriptor taken, that open fails; the stdout reader then retries the kick until it
//! succeeds. The test lowers the process's descriptor limit, so it runs its body in a process of
//! its own: the test binary started again for this one test.
#![cfg(target_os = "linux")]

use crate::common;

use std::fs::File;
use std::time::{Duration, Instant};

use common::{assert_error, assert_retired, Fixture};
use serde_json::json;
use webcodex_plugin_host::{Dispatch, ErrorCode};

/// Lowers the soft descriptor limit to a little above the highest open descriptor and opens
/// `/dev/null` until none is left. Returns the descriptors taken and the limit to restore.
fn take_every_descriptor() -> (Vec<File>, libc::rlimit) {
    let highest = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
        .max()
        .unwrap();
    let mut saved = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid rlimit to fill.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut saved) },
        0
    );
    let lowered = libc::rlimit {
        rlim_cur: (highest + 32).min(saved.rlim_cur),
        rlim_max: saved.rlim_max,
    };
    // SAFETY: a valid rlimit; only the soft limit is lowered.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) }, 0);
    let mut taken = Vec::new();
    loop {
        match File::open("/dev/null") {
            Ok(file) => taken.push(file),
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) => break,
            Err(e) => panic!("opening /dev/null: {e}"),
        }
        assert!(taken.len() < 4096, "the lowered limit did not hold");
    }
    (taken, saved)
}

/// Set in the environment of the process that runs the body.
const IN_OWN_PROCESS: &str = "WEBCODEX_TEST_KICK_FDS_BODY";

#[test]
fn the_deadline_holds_while_no_descriptor_is_free() {
    if std::env::var_os(IN_OWN_PROCESS).is_some() {
        return the_deadline_holds_while_no_descriptor_is_free_body();
    }
    let run = common::run_to_end(
        {
            let mut command = std::process::Command::new(std::env::current_exe().unwrap());
            command
                .args(["--exact", "--test-threads=1", "--nocapture"])
                .arg("provider_kick_fds::the_deadline_holds_while_no_descriptor_is_free")
                .env(IN_OWN_PROCESS, "1");
            command
        },
        Duration::from_secs(120),
    );
    assert_eq!(
        run.code,
        Some(0),
        "the body failed in its own process: {run:?}"
    );
    assert!(
        run.stdout.contains("1 passed"),
        "the body did not run: {run:?}"
    );
}

fn the_deadline_holds_while_no_descriptor_is_free_body() {
    let fx = Fixture::new("kick-fds");
    let provider = fx.start("normal", Duration::from_millis(500));
    let echoed = provider.call("echo", &json!({"text": "warm"})).unwrap();
    assert_eq!(echoed.texts(), ["warm"]);

    let (taken, limit) = take_every_descriptor();
    // Descriptors come back 2 s after the deadline's first kick failed.
    let give_back = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(2500));
        drop(taken);
    });
    let started = Instant::now();
    // The plugin answers after two minutes: only a retried kick ends the call before that.
    let err = provider
        .call("sleep", &json!({"ms": 120_000}))
        .expect_err("the plugin answers too late");
    let took = started.elapsed();
    give_back.join().unwrap();
    // SAFETY: the limit read before it was lowered.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);

    assert_error(&err, ErrorCode::Timeout, Dispatch::OutcomeUnknown);
    assert!(
        took < Duration::from_secs(60),
        "the call took {took:?}: the deadline's kick was not retried once descriptors were free"
    );
    assert_retired(&provider);
    fx.assert_cleaned_up();
}
