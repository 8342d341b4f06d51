//! The coordinator's wait for a response (docs/ARCHITECTURE.md, the path of one call;
//! docs/DECISIONS.md, provider runtime): one response path per platform, chosen at compile
//! time. On Linux the caller takes stdout over and reads the response itself (the direct
//! read); every other system, and Linux built with the test-only `webcodex_portable_wait` cfg, has
//! the reader thread read stdout while the caller blocks on the event channel (the portable
//! path). Every test here runs against real fixture plugin processes on the path this build
//! has; scripts/test-wait-modes.sh runs the file with both builds, quiet and with every CPU
//! busy.
//!
//! After every fault the plugin's process group is checked in `/proc` (no zombie, no orphan).

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{assert_error, assert_retired, wait_gone, BusyCpus, Fixture, GENEROUS};
use serde_json::json;
use webcodex_plugin_host::__private::provider::response_wait_mode;
use webcodex_plugin_host::Provider;
use webcodex_plugin_host::{Dispatch, ErrorCode};

const NORMAL: Duration = Duration::from_secs(30);

#[test]
fn the_response_path_is_the_one_this_build_was_compiled_with() {
    let expected = if cfg!(all(target_os = "linux", not(webcodex_portable_wait))) {
        "direct"
    } else {
        "portable"
    };
    assert_eq!(response_wait_mode(), expected);
}

/// Calls `echo` `n` times with distinct texts and checks every answer belongs to its request.
fn echo_many(provider: &Provider, label: &str, n: usize) {
    for i in 0..n {
        let text = format!("{label}-{i}");
        let result = provider
            .call("echo", &json!({ "text": text }))
            .unwrap_or_else(|e| panic!("call {i} of {label} failed: {e}"));
        assert_eq!(result.texts(), [text.as_str()], "call {i} of {label}");
    }
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn responses_ready_before_or_after_the_wait_begins_each_answer_their_own_request() {
    // A tiny plugin answers in microseconds: over many calls the reader hands some responses over
    // before the caller reaches its wait and others while it sleeps. Each must be taken once.
    let fx = Fixture::new("wait-many");
    let provider = fx.start("normal", NORMAL);
    echo_many(&provider, "seq", 1000);
    // initialize and tools/list took ids 1 and 2.
    assert_eq!(fx.logged_ids(), (1..=1002).collect::<Vec<u64>>());
    assert!(!provider.is_retired());
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn response_split_across_reads_arrives_whole() {
    // The first half wakes the caller (stdout is readable) long before the reader has a line;
    // the caller must then wait for the rest, not fail or spin.
    let fx = Fixture::new("wait-split").with_env("FIXTURE_PAUSE_MS", "100");
    let provider = fx.start("split", NORMAL);
    echo_many(&provider, "split", 5);
    assert!(!provider.is_retired());
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn response_whose_rest_never_comes_times_out_outcome_unknown() {
    let fx = Fixture::new("wait-half-line");
    let provider = fx.start("half-line", Duration::from_millis(500));
    let err = provider
        .call("echo", &json!({"text": "x"}))
        .expect_err("half a line is no response");
    assert_error(&err, ErrorCode::Timeout, Dispatch::OutcomeUnknown);
    assert!(err.is_fatal());
    assert_retired(&provider);
    fx.assert_cleaned_up();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn unasked_line_during_the_wait_is_a_protocol_error_outcome_unknown() {
    // A notification reaches the waiting caller before the response: it is taken as the answer
    // and breaks the envelope rules.
    let fx = Fixture::new("wait-notify-first");
    let provider = fx.start("notify-first", NORMAL);
    let err = provider
        .call("echo", &json!({"text": "x"}))
        .expect_err("a notification is not a response");
    assert_error(&err, ErrorCode::ProtocolError, Dispatch::OutcomeUnknown);
    assert!(err.is_fatal());
    assert_retired(&provider);
    fx.assert_cleaned_up();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn unasked_line_while_idle_fails_the_next_call_not_started() {
    // The line arrives while nobody waits (no wake-up is owed to anyone); the next call finds it
    // and sends nothing.
    let fx = Fixture::new("wait-unsolicited-later").with_env("FIXTURE_PAUSE_MS", "20");
    let provider = fx.start("unsolicited-later", NORMAL);
    let result = provider.call("echo", &json!({"text": "first"})).unwrap();
    assert_eq!(result.texts(), ["first"]);
    fx.wait_for_marker("unsolicited");
    // The plugin has written the line; give the reader ample time to hand it over.
    std::thread::sleep(Duration::from_millis(300));
    let err = provider
        .call("echo", &json!({"text": "second"}))
        .expect_err("the connection is out of step");
    assert_error(&err, ErrorCode::UnexpectedMessage, Dispatch::NotStarted);
    assert!(err.is_fatal());
    assert_retired(&provider);
    assert_eq!(
        fx.logged_calls(),
        ["echo"],
        "the second call was never sent"
    );
    fx.assert_cleaned_up();
}

/// The first call answers, then the plugin writes `lines` unasked notifications after
/// `pause_ms`; the second call must fail not started without sending anything.
fn unasked_lines_after_a_response_fail_the_next_call(tag: &str, pause_ms: &str, lines: &str) {
    let fx = Fixture::new(tag)
        .with_env("FIXTURE_PAUSE_MS", pause_ms)
        .with_env("FIXTURE_UNASKED_LINES", lines);
    let provider = fx.start("unsolicited-later", NORMAL);
    let result = provider.call("echo", &json!({"text": "first"})).unwrap();
    assert_eq!(result.texts(), ["first"]);
    fx.wait_for_marker("unsolicited");
    // The plugin has written the lines; give the reader ample time to read them (a line still
    // unread in the pipe when the call starts is taken for its answer: outcome unknown).
    std::thread::sleep(Duration::from_millis(300));
    let err = provider
        .call("echo", &json!({"text": "second"}))
        .expect_err("the connection is out of step");
    assert_eq!(err.dispatch(), Dispatch::NotStarted, "{err}");
    assert!(
        matches!(
            err.code(),
            ErrorCode::UnexpectedMessage | ErrorCode::ProtocolError
        ),
        "{err}"
    );
    assert!(err.is_fatal());
    assert_retired(&provider);
    assert_eq!(
        fx.logged_calls(),
        ["echo"],
        "the second call was never sent"
    );
    fx.assert_cleaned_up();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn an_unasked_line_written_right_behind_the_response_fails_the_next_call_not_started() {
    // Response and notification come back to back, often in one read: the notification is then
    // already buffered when the first call returns, whoever read it.
    unasked_lines_after_a_response_fail_the_next_call("wait-behind", "0", "1");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn a_flood_of_unasked_lines_while_idle_fails_the_next_call_not_started_without_a_stall() {
    // More lines than the event channel holds: the stdout reader fills the channel and waits
    // with a line in hand, so the next call cannot take stdout over and must take its events
    // from the channel instead (and not wait for the reader).
    unasked_lines_after_a_response_fail_the_next_call("wait-flood", "10", "200");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn calls_read_by_the_caller_and_by_the_reader_alternate_on_one_provider() {
    // The plugin waits a moment before it reads each request, so a frame larger than the pipe
    // buffer is finished by the writer thread and its response is read by the reader thread;
    // a small frame is written whole and, on Linux, its response is read by the caller. The
    // hand-over of stdout between the two must lose and repeat nothing.
    let fx = Fixture::new("wait-alternate").with_env("FIXTURE_PAUSE_MS", "2");
    let provider = fx.start("slow-read", NORMAL);
    let big = json!({"data": "x".repeat(64 * 1024 - r#"{"data":""}"#.len())});
    for i in 0..60 {
        if i % 3 == 0 {
            let result = provider.call("big_args", &big).unwrap();
            assert_eq!(result.texts(), ["ok"], "call {i}");
        } else {
            let text = format!("alt-{i}");
            let result = provider.call("echo", &json!({ "text": text })).unwrap();
            assert_eq!(result.texts(), [text.as_str()], "call {i}");
        }
    }
    assert_eq!(fx.logged_ids(), (1..=62).collect::<Vec<u64>>());
    assert!(!provider.is_retired());
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn exit_during_the_wait_is_eof_outcome_unknown() {
    let fx = Fixture::new("wait-exit").with_env("FIXTURE_PAUSE_MS", "100");
    let provider = fx.start("exit-later", NORMAL);
    let started = Instant::now();
    let err = provider
        .call("echo", &json!({"text": "x"}))
        .expect_err("the plugin exits");
    assert!(
        started.elapsed() < NORMAL / 3,
        "the exit was not noticed during the wait"
    );
    assert_error(&err, ErrorCode::Eof, Dispatch::OutcomeUnknown);
    assert!(err.is_fatal());
    assert_retired(&provider);
    fx.assert_cleaned_up();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn exit_during_the_wait_while_a_grandchild_holds_stdout_is_eof_outcome_unknown() {
    // stdout never hangs up (the grandchild holds it): only the exit watch can end the wait, by
    // its event (and the wake descriptor when the caller sleeps in poll).
    let fx = Fixture::new("wait-exit-keep")
        .with_env("FIXTURE_PAUSE_MS", "100")
        .with_env("FIXTURE_KEEP_STDOUT", "1");
    let provider = fx.start("exit-later", NORMAL);
    let started = Instant::now();
    let err = provider
        .call("echo", &json!({"text": "x"}))
        .expect_err("the plugin exits");
    assert!(
        started.elapsed() < NORMAL / 3,
        "the exit was not noticed during the wait"
    );
    assert_error(&err, ErrorCode::Eof, Dispatch::OutcomeUnknown);
    assert_retired(&provider);
    let grandchildren = fx.grandchild_pids();
    assert_eq!(grandchildren.len(), 1);
    assert!(wait_gone(grandchildren[0]), "the grandchild survived");
    fx.assert_cleaned_up();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn deadline_during_the_wait_is_timeout_outcome_unknown() {
    let fx = Fixture::new("wait-deadline");
    let provider = fx.start("normal", Duration::from_millis(300));
    let err = provider
        .call("sleep", &json!({"ms": 20_000}))
        .expect_err("the plugin answers too late");
    assert_error(&err, ErrorCode::Timeout, Dispatch::OutcomeUnknown);
    assert!(err.is_fatal());
    assert_retired(&provider);
    fx.assert_cleaned_up();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn stop_during_the_wait_ends_it_with_host_stopping() {
    // `stop()` sends its event from another thread while the caller sleeps.
    let fx = Fixture::new("wait-stop");
    let provider = Arc::new(fx.start("normal", NORMAL));
    let caller = {
        let provider = provider.clone();
        std::thread::spawn(move || provider.call("hang", &json!({})))
    };
    fx.wait_for_call("hang");
    std::thread::sleep(Duration::from_millis(50));
    provider.stop();
    let err = caller
        .join()
        .expect("the caller thread")
        .expect_err("the provider stops");
    assert_error(&err, ErrorCode::HostStopping, Dispatch::OutcomeUnknown);
    assert!(provider.is_retired());
    fx.assert_cleaned_up();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn many_concurrent_providers_with_every_cpu_busy() {
    // Eight providers called from eight threads while every CPU spins: the wake-ups compete with
    // other work. Every call answers its own request; then each plugin crashes during a wait and
    // leaves nothing behind.
    let _busy = BusyCpus::start();
    let fixtures: Vec<Fixture> = (0..8)
        .map(|i| Fixture::new(&format!("wait-concurrent-{i}")))
        .collect();
    let deadline = Instant::now() + GENEROUS * 12;
    std::thread::scope(|scope| {
        for (i, fx) in fixtures.iter().enumerate() {
            scope.spawn(move || {
                let provider = fx.start("normal", NORMAL);
                echo_many(&provider, &format!("p{i}"), 150);
                let err = provider
                    .call("crash", &json!({}))
                    .expect_err("the plugin crashes");
                assert_error(&err, ErrorCode::Eof, Dispatch::OutcomeUnknown);
                assert_retired(&provider);
                fx.assert_cleaned_up();
            });
        }
    });
    assert!(Instant::now() < deadline, "the concurrent calls hung");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Unix only; Windows runs the same portable path in the runtime tests (docs/PLATFORMS.md)"
)]
fn split_responses_and_exits_with_every_cpu_busy() {
    let _busy = BusyCpus::start();
    let split = Fixture::new("wait-busy-split").with_env("FIXTURE_PAUSE_MS", "20");
    let provider = split.start("split", NORMAL);
    echo_many(&provider, "busy-split", 10);
    drop(provider);
    split.assert_cleaned_up();

    let exit = Fixture::new("wait-busy-exit")
        .with_env("FIXTURE_PAUSE_MS", "20")
        .with_env("FIXTURE_KEEP_STDOUT", "1");
    let provider = exit.start("exit-later", NORMAL);
    let err = provider
        .call("echo", &json!({"text": "x"}))
        .expect_err("the plugin exits");
    assert_error(&err, ErrorCode::Eof, Dispatch::OutcomeUnknown);
    assert_retired(&provider);
    exit.assert_cleaned_up();

    let slow = Fixture::new("wait-busy-deadline");
    let provider = slow.start("normal", Duration::from_millis(300));
    let err = provider
        .call("hang", &json!({}))
        .expect_err("the plugin never answers");
    assert_error(&err, ErrorCode::Timeout, Dispatch::OutcomeUnknown);
    assert_retired(&provider);
    slow.assert_cleaned_up();
}
