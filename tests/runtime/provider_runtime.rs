//! The provider runtime against the real fixture plugin process (docs/PROTOCOL.md §2 protocol, §3
//! bounds, §5 failure classification; docs/ARCHITECTURE.md §7, pitfalls).
//!
//! Every test names one behaviour of the contract. Timings are never asserted as expectations;
//! wall-clock bounds appear only as generous "does not hang" limits.

use crate::common;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use webcodex_plugin_host::DiagnosticCode;
use webcodex_plugin_host::EnvSnapshot;
use webcodex_plugin_host::{
    __private::provider::STDERR_MAX_LINES, __private::provider::STDERR_MAX_LINE_BYTES,
    __private::provider::STDERR_MAX_TOTAL_BYTES,
};
use webcodex_plugin_host::{Dispatch, ErrorCode, Phase};
use webcodex_plugin_host::{Provider, StderrLine};

use common::{assert_error, assert_reaped, assert_retired, wait_gone, Fixture, GENEROUS};

/// Request timeout for providers whose calls are expected to succeed.
const NORMAL: Duration = Duration::from_secs(30);
/// Request timeout for cases that are meant to run into the deadline.
const SHORT: Duration = Duration::from_secs(1);

/// Every tool the fixture declares, sorted by name.
const FIXTURE_TOOLS: &[&str] = &[
    "add",
    "bad_error",
    "bad_output",
    "big_args",
    "crash",
    "cwd",
    "echo",
    "env",
    "exit_keep_stdout",
    "garbage",
    "grandchild",
    "hang",
    "huge_line",
    "invalid_result",
    "is_error",
    "rpc_error",
    "sleep",
    "stderr",
    "then_unsolicited",
    "wrong_id",
];

fn texts(result: &webcodex_plugin_host::ToolResult) -> Vec<&str> {
    result.texts()
}

// ---------------------------------------------------------------------------------------------
// Happy path
// ---------------------------------------------------------------------------------------------

#[test]
fn echo_returns_text_content_and_structured_content() {
    let fx = Fixture::new("echo");
    let provider = fx.start("normal", NORMAL);
    let result = provider.call("echo", &json!({"text": "hello"})).unwrap();
    assert_eq!(texts(&result), ["hello"]);
    assert_eq!(
        result.structured_content().cloned().map(Value::Object),
        Some(json!({"text": "hello"}))
    );
    assert!(!result.is_error());
    assert!(!provider.is_retired());
    let pid = fx.plugin_pid();
    drop(provider);
    assert_reaped(pid);
}

#[test]
fn add_returns_the_sum_as_text_and_structured_content() {
    let fx = Fixture::new("add");
    let provider = fx.start("normal", NORMAL);
    let result = provider.call("add", &json!({"a": 2, "b": 5})).unwrap();
    assert_eq!(texts(&result), ["7"]);
    assert_eq!(
        result.structured_content().cloned().map(Value::Object),
        Some(json!({"sum": 7}))
    );
    assert!(!result.is_error());
}

#[test]
fn catalog_holds_every_declared_tool_sorted_by_name() {
    let fx = Fixture::new("catalog");
    let provider = fx.start("normal", NORMAL);
    let names: Vec<&str> = provider
        .catalog()
        .tools()
        .iter()
        .map(|t| t.name())
        .collect();
    assert_eq!(names, FIXTURE_TOOLS);
    assert_eq!(provider.catalog().len(), FIXTURE_TOOLS.len());
    assert!(provider.catalog().digest().starts_with("sha256:"));
    let echo = provider
        .catalog()
        .get("echo")
        .expect("echo is in the catalog");
    assert_eq!(echo.title(), Some("Echo"));
    assert!(provider.catalog().get("no_such_tool").is_none());
}

#[test]
fn request_ids_start_at_1_and_increase_by_one() {
    let fx = Fixture::new("ids");
    let provider = fx.start("normal", NORMAL);
    provider.call("echo", &json!({"text": "a"})).unwrap();
    provider.call("add", &json!({"a": 1, "b": 1})).unwrap();
    provider.call("echo", &json!({"text": "b"})).unwrap();
    assert_eq!(fx.logged_ids(), [1, 2, 3, 4, 5]);
    assert_eq!(
        fx.logged_methods(),
        [
            "initialize",
            "tools/list",
            "tools/call",
            "tools/call",
            "tools/call"
        ]
    );
    let lines = fx.log_lines();
    assert_eq!(lines[0]["jsonrpc"], "2.0");
    assert_eq!(
        lines[0]["params"],
        json!({"protocolVersion": "webcodex-plugin-v1"})
    );
    assert_eq!(lines[1]["params"], json!({}));
    assert_eq!(
        lines[3]["params"],
        json!({"name": "add", "arguments": {"a": 1, "b": 1}})
    );
}

#[test]
fn is_error_result_is_ok_with_is_error_true() {
    let fx = Fixture::new("is-error");
    let provider = fx.start("normal", NORMAL);
    let result = provider.call("is_error", &json!({})).unwrap();
    assert!(result.is_error());
    assert_eq!(texts(&result), ["bad input"]);
    assert!(result.structured_content().is_none());
    assert!(!provider.is_retired());
    provider
        .call("echo", &json!({"text": "still live"}))
        .unwrap();
}

#[test]
fn call_checked_with_the_current_observation_succeeds() {
    let fx = Fixture::new("observation-ok");
    let provider = fx.start("normal", NORMAL);
    let observation = provider
        .catalog()
        .get("echo")
        .unwrap()
        .observation()
        .to_string();
    assert!(observation.starts_with("sha256:"));
    let result = provider
        .call_checked("echo", Some(&observation), &json!({"text": "x"}), NORMAL)
        .unwrap();
    assert_eq!(texts(&result), ["x"]);
}

#[test]
fn plugin_gets_exactly_the_snapshot_environment_without_sensitive_variables() {
    let fx = Fixture::new("env");
    let mut spec = fx.spec("normal", NORMAL);
    let mut vars: Vec<(OsString, OsString)> = vec![
        ("WC_TEST_MARKER".into(), "marker value".into()),
        ("WEBCODEX_TOKEN".into(), "do-not-pass".into()),
        ("AUTHORIZATION".into(), "Bearer do-not-pass".into()),
    ];
    if let Some(path) = std::env::var_os("PATH") {
        vars.push(("PATH".into(), path));
    }
    spec.launch.env = EnvSnapshot::from_vars(vars);
    let provider = Provider::start(spec).unwrap();
    let value = |name: &str| {
        let result = provider.call("env", &json!({"name": name})).unwrap();
        result.structured_content().unwrap()["value"].clone()
    };
    assert_eq!(value("WC_TEST_MARKER"), json!("marker value"));
    assert_eq!(value("WEBCODEX_TOKEN"), Value::Null);
    assert_eq!(value("AUTHORIZATION"), Value::Null);
    // env_clear(): a variable of the host that is not in the snapshot is not inherited.
    std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it for tests");
    assert_eq!(value("CARGO_MANIFEST_DIR"), Value::Null);
    assert_eq!(value("FIXTURE_LOG"), Value::Null);
}

#[test]
fn plugin_runs_in_the_configured_working_directory() {
    let fx = Fixture::new("cwd");
    // Windows' canonical form is a verbatim `\\?\C:\...` path, which the plugin never sees;
    // the temp dir ends in a separator, which its working directory does not.
    let dir = if cfg!(windows) {
        std::env::temp_dir().components().collect()
    } else {
        std::env::temp_dir().canonicalize().unwrap()
    };
    let mut spec = fx.spec("normal", NORMAL);
    spec.launch.cwd = Some(dir.clone());
    let provider = Provider::start(spec).unwrap();
    let result = provider.call("cwd", &json!({})).unwrap();
    assert_eq!(texts(&result), [dir.display().to_string()]);
}

/// Voluntary context switches of each thread of this process named `wc-*-{provider}`.
fn context_switches_of_threads(provider: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        let comm = comm.trim_end().to_string();
        if !(comm.starts_with("wc-") && comm.ends_with(&format!("-{provider}"))) {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let switches = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        out.push((comm, switches));
    }
    out.sort();
    out
}

#[test]
#[cfg_attr(
    windows,
    ignore = "reads per-thread context switches from /proc/self/task (Linux only)"
)]
fn idle_provider_threads_never_wake_up() {
    // docs/ARCHITECTURE.md §1: no polling loops and no sleeps. While nothing happens, none of the
    // I/O threads (named after the provider id) is scheduled at all.
    let fx = Fixture::new("idle");
    let mut spec = fx.spec("normal", NORMAL);
    spec.id = "idle".into();
    let provider = Provider::start(spec).unwrap();
    // A burst of calls first: on Linux the reader leaves stdout to the calls and takes it back
    // (re-arms it) once they stop, so it too must end up asleep for good.
    for i in 0..200 {
        let text = format!("warm up {i}");
        let result = provider.call("echo", &json!({ "text": text })).unwrap();
        assert_eq!(result.texts(), [text.as_str()]);
    }
    // Let the threads settle after the warm-up calls (under load one may still be on its way
    // back into its blocking read): wait for two equal samples, then watch a longer window.
    let settle_until = Instant::now() + GENEROUS;
    let mut before = context_switches_of_threads("idle");
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = context_switches_of_threads("idle");
        if now == before || Instant::now() > settle_until {
            before = now;
            break;
        }
        before = now;
    }
    // Three threads where the kernel offers a pidfd; a fourth waiter thread elsewhere.
    let names: Vec<&str> = before
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| *n != "wc-wait-idle")
        .collect();
    assert_eq!(names, ["wc-read-idle", "wc-stderr-idle", "wc-write-idle"]);
    std::thread::sleep(Duration::from_millis(500));
    let after = context_switches_of_threads("idle");
    assert_eq!(before, after, "an idle provider thread woke up");
    drop(provider);
    // Dropping joins the threads; a joined thread's /proc entry can still show for a moment (the
    // kernel releases the task after it wakes the joiner), so wait for it with a generous bound.
    let until = Instant::now() + GENEROUS;
    while !context_switches_of_threads("idle").is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        context_switches_of_threads("idle").is_empty(),
        "the provider's threads outlived it"
    );
}

#[test]
#[cfg_attr(
    windows,
    ignore = "reads per-thread context switches from /proc/self/task (Linux only)"
)]
fn a_long_call_does_not_wake_the_provider_threads_while_the_plugin_computes() {
    // No polling loop while the plugin computes: during a call of 1.5 s, the I/O threads are
    // woken a bounded number of times (the call's start and end), not once per period.
    let fx = Fixture::new("long-call");
    let mut spec = fx.spec("normal", NORMAL);
    spec.id = "long".into();
    let provider = Provider::start(spec).unwrap();
    // Calls right before it: the reader is still watching stdout when the long call starts.
    for i in 0..50 {
        let text = format!("warm up {i}");
        provider.call("echo", &json!({ "text": text })).unwrap();
    }
    let switches = || -> u64 {
        context_switches_of_threads("long")
            .iter()
            .map(|t| t.1)
            .sum()
    };
    let before = switches();
    let result = provider.call("sleep", &json!({"ms": 1500})).unwrap();
    assert!(!result.is_error());
    let woke = switches() - before;
    // A look every 10 ms would be ~150 wake-ups.
    assert!(
        woke <= 10,
        "the provider's threads woke {woke} times during one call"
    );
}

/// `WEBCODEX_PLUGIN_FORCE_EXIT_WAITER=1` (CI runs the provider tests a second time with it)
/// replaces the pidfd watch by a waiter thread; without it, Linux watches through a pidfd.
#[test]
#[cfg_attr(
    windows,
    ignore = "pidfd versus waiter thread is a Linux choice; Windows always uses the waiter"
)]
fn exit_watch_takes_the_waiter_thread_exactly_when_forced() {
    let fx = Fixture::new("watch");
    let mut spec = fx.spec("normal", NORMAL);
    spec.id = "watch".into();
    let provider = Provider::start(spec).unwrap();
    let names: Vec<String> = context_switches_of_threads("watch")
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let forced = std::env::var_os(webcodex_plugin_host::__private::provider::FORCE_EXIT_WAITER_ENV)
        .is_some_and(|v| v == "1");
    assert_eq!(
        names.iter().any(|n| n == "wc-wait-watch"),
        forced,
        "threads: {names:?}"
    );
    provider.call("crash", &json!({})).unwrap_err();
    assert_retired(&provider);
}

// ---------------------------------------------------------------------------------------------
// Admission failures
// ---------------------------------------------------------------------------------------------

#[test]
fn stray_stdout_before_the_handshake_fails_initialize_and_points_at_stdout() {
    let fx = Fixture::new("stray");
    let err = fx.start_err("stray-stdout", NORMAL);
    assert!(
        matches!(
            err.code(),
            ErrorCode::MalformedJson | ErrorCode::UnexpectedMessage
        ),
        "unexpected error: {err}"
    );
    assert_eq!(err.dispatch(), Dispatch::NotStarted);
    assert_eq!(err.phase(), Some(Phase::Initialize));
    assert!(err.is_fatal());
    assert!(err.message().contains("stdout"), "{}", err.message());
    fx.assert_message_is_safe(&err);
    fx.assert_cleaned_up();
}

#[test]
fn silent_initialize_times_out_in_phase_initialize_not_started() {
    let fx = Fixture::new("silent");
    let started = Instant::now();
    let err = fx.start_err("silent-init", SHORT);
    assert!(started.elapsed() < SHORT + GENEROUS, "admission hung");
    assert_error(&err, ErrorCode::Timeout, Dispatch::NotStarted);
    assert_eq!(err.phase(), Some(Phase::Initialize));
    assert_eq!(fx.logged_methods(), ["initialize"]);
    fx.assert_message_is_safe(&err);
    fx.assert_cleaned_up();
}

#[test]
fn another_protocol_version_is_a_version_mismatch() {
    let fx = Fixture::new("bad-version");
    let err = fx.start_err("bad-version", NORMAL);
    assert_error(
        &err,
        ErrorCode::ProtocolVersionMismatch,
        Dispatch::NotStarted,
    );
    assert_eq!(err.phase(), Some(Phase::Initialize));
    assert_eq!(
        fx.logged_methods(),
        ["initialize"],
        "tools/list must not follow"
    );
    fx.assert_cleaned_up();
}

#[test]
fn unsupported_schema_keyword_rejects_the_tool_list_with_a_diagnostic() {
    let fx = Fixture::new("bad-tools");
    let err = fx.start_err("bad-tools", NORMAL);
    assert_error(&err, ErrorCode::ToolsListInvalid, Dispatch::NotStarted);
    assert_eq!(err.phase(), Some(Phase::Validation));
    let diagnostic = err
        .diagnostic()
        .expect("plugin_tools_list_invalid carries a diagnostic");
    assert_eq!(diagnostic.code, DiagnosticCode::SchemaKeywordUnsupported);
    assert_eq!(diagnostic.tool.as_deref(), Some("add"));
    assert_eq!(diagnostic.field, Some("inputSchema"));
    assert!(!err.message().contains("minimum"), "{}", err.message());
    fx.assert_cleaned_up();
}

#[test]
fn plugin_exiting_at_start_fails_initialize() {
    let fx = Fixture::new("exit-at-start");
    let err = fx.start_err("exit-at-start", NORMAL);
    assert!(
        matches!(err.code(), ErrorCode::Eof | ErrorCode::StdinFailed),
        "unexpected error: {err}"
    );
    assert_eq!(err.dispatch(), Dispatch::NotStarted);
    assert_eq!(err.phase(), Some(Phase::Initialize));
    fx.assert_message_is_safe(&err);
    fx.assert_cleaned_up();
}

#[test]
fn nonexistent_program_fails_in_phase_spawn() {
    let fx = Fixture::new("no-program");
    let program = PathBuf::from("/nonexistent/webcodex/plugin-binary");
    let err = Provider::start(fx.spec_for(program, vec![], NORMAL)).expect_err("no such program");
    assert_error(&err, ErrorCode::SpawnFailed, Dispatch::NotStarted);
    assert_eq!(err.phase(), Some(Phase::Spawn));
    assert!(!err.message().contains("/nonexistent"), "{}", err.message());
}

// ---------------------------------------------------------------------------------------------
// Malformed output at call time: outcome_unknown, fatal, then plugin_provider_unavailable
// ---------------------------------------------------------------------------------------------

/// Calls `tool` and expects a fatal outcome_unknown failure with `code`; then the provider must
/// be retired and its process reaped after drop.
fn expect_fatal_unknown(label: &str, tool: &str, arguments: Value, code: ErrorCode) {
    let fx = Fixture::new(label);
    let provider = fx.start("normal", NORMAL);
    let started = Instant::now();
    let err = provider
        .call(tool, &arguments)
        .expect_err("the call must fail");
    assert!(started.elapsed() < GENEROUS, "the failure took too long");
    assert_error(&err, code, Dispatch::OutcomeUnknown);
    assert!(err.is_fatal(), "{err} must retire the provider");
    fx.assert_message_is_safe(&err);
    assert_retired(&provider);
    assert_eq!(
        fx.logged_calls(),
        [tool],
        "nothing was sent after the fault"
    );
    let pid = fx.plugin_pid();
    drop(provider);
    assert_reaped(pid);
}

#[test]
fn garbage_line_is_malformed_json_outcome_unknown_and_retires() {
    expect_fatal_unknown("garbage", "garbage", json!({}), ErrorCode::MalformedJson);
}

#[test]
fn line_over_1_mib_is_message_too_large_outcome_unknown_and_retires() {
    expect_fatal_unknown("huge", "huge_line", json!({}), ErrorCode::MessageTooLarge);
}

#[test]
fn response_id_above_the_expected_is_unknown_response_id() {
    expect_fatal_unknown(
        "id-plus",
        "wrong_id",
        json!({"delta": 1}),
        ErrorCode::UnknownResponseId,
    );
}

#[test]
fn response_id_below_the_expected_is_duplicate_response_id() {
    expect_fatal_unknown(
        "id-minus",
        "wrong_id",
        json!({"delta": -1}),
        ErrorCode::DuplicateResponseId,
    );
}

#[test]
fn response_id_that_is_not_an_integer_is_response_id_invalid() {
    expect_fatal_unknown(
        "id-string",
        "wrong_id",
        json!({"delta": 0, "id": "3"}),
        ErrorCode::ResponseIdInvalid,
    );
}

#[test]
fn negative_response_id_is_response_id_invalid() {
    expect_fatal_unknown(
        "id-negative",
        "wrong_id",
        json!({"delta": 0, "id": -3}),
        ErrorCode::ResponseIdInvalid,
    );
}

#[test]
fn malformed_error_object_is_protocol_error() {
    expect_fatal_unknown(
        "bad-error",
        "bad_error",
        json!({}),
        ErrorCode::ProtocolError,
    );
}

#[test]
fn crash_after_reading_the_call_is_eof_outcome_unknown() {
    expect_fatal_unknown("crash", "crash", json!({}), ErrorCode::Eof);
}

// ---------------------------------------------------------------------------------------------
// Deadlines
// ---------------------------------------------------------------------------------------------

#[test]
fn hang_past_the_timeout_is_timeout_outcome_unknown_and_retires() {
    let fx = Fixture::new("hang");
    let provider = fx.start("normal", NORMAL);
    let started = Instant::now();
    let err = provider
        .call_checked("hang", None, &json!({}), SHORT)
        .expect_err("hang never answers");
    assert!(started.elapsed() < SHORT + GENEROUS, "the call hung");
    assert_error(&err, ErrorCode::Timeout, Dispatch::OutcomeUnknown);
    assert!(err.is_fatal());
    assert_retired(&provider);
    let pid = fx.plugin_pid();
    drop(provider);
    assert_reaped(pid);
}

/// Arguments whose serialization is exactly the 64 KiB bound, so the tools/call frame (with its
/// envelope) is larger than a default Linux pipe buffer (64 KiB).
fn arguments_of_64_kib() -> Value {
    let overhead = r#"{"data":""}"#.len();
    let args = json!({"data": "x".repeat(64 * 1024 - overhead)});
    assert_eq!(serde_json::to_vec(&args).unwrap().len(), 64 * 1024);
    args
}

/// The kernel wait channel of this process's thread named `name` (`/proc/self/task/*/comm`
/// holds at most 15 bytes of the name), when the kernel exposes it.
fn wait_channel_of_thread(name: &str) -> Option<String> {
    let prefix = &name[..name.len().min(15)];
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() == prefix {
            let wchan = std::fs::read_to_string(task.path().join("wchan")).ok()?;
            return (!wchan.is_empty() && wchan != "0").then_some(wchan);
        }
    }
    None
}

/// True for the kernel wait channels of a thread waiting to write into a full pipe.
fn waiting_for_pipe_space(wchan: &str) -> bool {
    wchan.contains("pipe_write") || wchan.contains("poll")
}

#[test]
fn plugin_that_stops_reading_cannot_block_a_call_whose_frame_exceeds_the_pipe_buffer() {
    // After the handshake the plugin never reads stdin again. The frame is larger than the pipe
    // buffer, so the writer thread stays blocked waiting for pipe space (in poll(2) on the
    // non-blocking stdin, or in write(2)); the deadline armed before the first
    // byte must still end the call, as outcome_unknown (part of the frame was written).
    let fx = Fixture::new("stop-reading-big");
    let mut spec = fx.spec("stop-reading", NORMAL);
    spec.id = "pipefull".into();
    let provider = Provider::start(spec).unwrap();
    let timeout = Duration::from_secs(4);
    let args = arguments_of_64_kib();
    let (outcome, elapsed, writer_state) = std::thread::scope(|s| {
        let call = s.spawn(|| {
            let started = Instant::now();
            let outcome = provider.call_checked("big_args", None, &args, timeout);
            (outcome, started.elapsed())
        });
        // Premise: the writer really is blocked on the full pipe (checked where the kernel
        // exposes wait channels; the call itself is asserted either way). Watched for as long
        // as the call runs: on a loaded machine the writer may take a while to get there.
        let mut writer_state = None;
        while !call.is_finished() {
            if let Some(state) = wait_channel_of_thread("wc-write-pipefull") {
                let blocked = waiting_for_pipe_space(&state);
                writer_state = Some(state);
                if blocked {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let (outcome, elapsed) = call.join().unwrap();
        (outcome, elapsed, writer_state)
    });
    if let Some(state) = writer_state {
        assert!(
            waiting_for_pipe_space(&state),
            "writer not blocked on the pipe: {state}"
        );
    }
    assert!(elapsed < timeout + GENEROUS, "the call hung");
    let err = outcome.expect_err("the plugin never reads the call");
    assert_error(&err, ErrorCode::Timeout, Dispatch::OutcomeUnknown);
    assert!(err.is_fatal());
    assert_retired(&provider);
    assert_eq!(fx.logged_calls(), Vec::<String>::new());
    let pid = fx.plugin_pid();
    let dropped = Instant::now();
    drop(provider);
    assert!(
        dropped.elapsed() < GENEROUS,
        "drop hung on the blocked writer"
    );
    assert_reaped(pid);
}

#[test]
fn plugin_that_stops_reading_times_out_a_small_call() {
    let fx = Fixture::new("stop-reading-small");
    let provider = fx.start("stop-reading", NORMAL);
    let started = Instant::now();
    let err = provider
        .call_checked("echo", None, &json!({"text": "anyone?"}), SHORT)
        .expect_err("the plugin never reads the call");
    assert!(started.elapsed() < SHORT + GENEROUS, "the call hung");
    assert_error(&err, ErrorCode::Timeout, Dispatch::OutcomeUnknown);
    assert!(err.is_fatal());
    assert_retired(&provider);
}

#[test]
fn a_frame_the_writer_finishes_is_answered_and_the_next_calls_still_work() {
    // The plugin waits before it reads each request, so a frame larger than the pipe buffer is
    // finished by the writer thread and its response is read by the reader thread; the calls
    // after it (small ones, read by the caller itself on Linux) must still be answered, each
    // received once.
    let fx = Fixture::new("slow-read-big");
    let provider = fx.start("slow-read", NORMAL);
    let big = arguments_of_64_kib();
    for round in 0..3 {
        let result = provider.call("big_args", &big).unwrap();
        assert_eq!(texts(&result), ["ok"], "big call of round {round}");
        let result = provider.call("echo", &json!({"text": "after"})).unwrap();
        assert_eq!(texts(&result), ["after"], "small call of round {round}");
    }
    assert!(!provider.is_retired());
    assert_eq!(
        fx.logged_calls(),
        ["big_args", "echo", "big_args", "echo", "big_args", "echo"]
    );
    assert_eq!(fx.logged_ids(), [1, 2, 3, 4, 5, 6, 7, 8]);
}

#[test]
fn arguments_over_64_kib_are_rejected_before_sending() {
    let fx = Fixture::new("args-too-big");
    let provider = fx.start("normal", NORMAL);
    let args = json!({"data": "x".repeat(200 * 1024)});
    let err = provider
        .call("big_args", &args)
        .expect_err("over the 64 KiB bound");
    assert_error(
        &err,
        ErrorCode::ArgumentsSchemaInvalid,
        Dispatch::NotStarted,
    );
    assert!(!err.is_fatal());
    assert!(!provider.is_retired());
    // Exactly at the bound is accepted and reaches the plugin.
    let result = provider.call("big_args", &arguments_of_64_kib()).unwrap();
    assert_eq!(texts(&result), ["ok"]);
    assert_eq!(fx.logged_calls(), ["big_args"]);
    assert_eq!(fx.logged_ids(), [1, 2, 3]);
}

// ---------------------------------------------------------------------------------------------
// Rejections before the budget: not_started, not fatal, nothing sent
// ---------------------------------------------------------------------------------------------

/// Calls `tool` with invalid `arguments`: rejected before sending, the provider stays usable and
/// the next request still gets id 3.
fn expect_arguments_rejected(label: &str, tool: &str, arguments: Value) {
    let fx = Fixture::new(label);
    let provider = fx.start("normal", NORMAL);
    let err = provider
        .call(tool, &arguments)
        .expect_err("invalid arguments");
    assert_error(
        &err,
        ErrorCode::ArgumentsSchemaInvalid,
        Dispatch::NotStarted,
    );
    assert!(!err.is_fatal());
    assert!(!provider.is_retired());
    assert!(
        fx.logged_calls().is_empty(),
        "a rejected call reached the plugin"
    );
    let result = provider.call("echo", &json!({"text": "ok"})).unwrap();
    assert_eq!(texts(&result), ["ok"]);
    assert_eq!(
        fx.logged_ids(),
        [1, 2, 3],
        "a rejected call must not use an id"
    );
}

#[test]
fn argument_of_the_wrong_type_is_rejected_before_sending() {
    expect_arguments_rejected("args-type", "echo", json!({"text": 5}));
}

#[test]
fn missing_required_argument_is_rejected_before_sending() {
    expect_arguments_rejected("args-missing", "echo", json!({}));
}

#[test]
fn unknown_argument_is_rejected_when_additional_properties_is_false() {
    expect_arguments_rejected("args-extra", "echo", json!({"text": "x", "extra": 1}));
}

#[test]
fn fractional_number_for_an_integer_argument_is_rejected_before_sending() {
    expect_arguments_rejected("args-float", "add", json!({"a": 1.5, "b": 2}));
}

#[test]
fn arguments_that_are_not_an_object_are_rejected_before_sending() {
    expect_arguments_rejected("args-array", "echo", json!(["text"]));
}

#[test]
fn unknown_tool_is_tool_unavailable_not_started() {
    let fx = Fixture::new("unknown-tool");
    let provider = fx.start("normal", NORMAL);
    let err = provider
        .call("does_not_exist", &json!({}))
        .expect_err("no such tool");
    assert_error(&err, ErrorCode::ToolUnavailable, Dispatch::NotStarted);
    assert!(!err.is_fatal());
    assert!(fx.logged_calls().is_empty());
    provider.call("echo", &json!({"text": "ok"})).unwrap();
}

#[test]
fn changed_schema_observation_is_schema_changed_not_started() {
    let fx = Fixture::new("observation");
    let provider = fx.start("normal", NORMAL);
    let other = provider
        .catalog()
        .get("add")
        .unwrap()
        .observation()
        .to_string();
    let err = provider
        .call_checked("echo", Some(&other), &json!({"text": "x"}), NORMAL)
        .expect_err("the observation belongs to another tool");
    assert_error(&err, ErrorCode::SchemaChanged, Dispatch::NotStarted);
    assert!(!err.is_fatal());
    let err = provider
        .call_checked("echo", Some("sha256:0000"), &json!({"text": "x"}), NORMAL)
        .expect_err("a made-up observation");
    assert_error(&err, ErrorCode::SchemaChanged, Dispatch::NotStarted);
    assert!(fx.logged_calls().is_empty());
    assert!(!provider.is_retired());
}

#[test]
fn second_caller_while_a_call_runs_gets_busy_and_the_first_completes() {
    let fx = Fixture::new("busy");
    let provider = fx.start("normal", NORMAL);
    std::thread::scope(|s| {
        let slow = s.spawn(|| provider.call("sleep", &json!({"ms": 1500})));
        fx.wait_for_call("sleep");
        let err = provider
            .call("echo", &json!({"text": "me too"}))
            .expect_err("one request at a time");
        assert_error(&err, ErrorCode::ProviderBusy, Dispatch::NotStarted);
        assert!(!err.is_fatal());
        let result = slow.join().unwrap().expect("the first call completes");
        assert_eq!(texts(&result), ["slept"]);
    });
    assert_eq!(fx.logged_calls(), ["sleep"], "the busy call was never sent");
    provider.call("echo", &json!({"text": "now"})).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Answers that are errors or break the result contract
// ---------------------------------------------------------------------------------------------

#[test]
fn rpc_error_is_completed_not_fatal_and_hides_its_data() {
    let fx = Fixture::new("rpc-error");
    let provider = fx.start("normal", NORMAL);
    let err = provider
        .call("rpc_error", &json!({}))
        .expect_err("rpc error");
    assert_error(&err, ErrorCode::RpcError, Dispatch::Completed);
    assert!(!err.is_fatal());
    assert!(!err.message().contains("secret"), "{}", err.message());
    assert!(!provider.is_retired());
    let result = provider.call("echo", &json!({"text": "next"})).unwrap();
    assert_eq!(texts(&result), ["next"]);
}

#[test]
fn structured_content_violating_the_output_schema_is_completed_and_fatal() {
    let fx = Fixture::new("bad-output");
    let provider = fx.start("normal", NORMAL);
    let err = provider
        .call("bad_output", &json!({}))
        .expect_err("violation");
    assert_error(&err, ErrorCode::OutputSchemaViolation, Dispatch::Completed);
    assert!(err.is_fatal());
    assert_retired(&provider);
}

#[test]
fn non_text_content_is_result_invalid_completed_and_fatal() {
    let fx = Fixture::new("invalid-result");
    let provider = fx.start("normal", NORMAL);
    let err = provider
        .call("invalid_result", &json!({}))
        .expect_err("image content");
    assert_error(&err, ErrorCode::ResultInvalid, Dispatch::Completed);
    assert!(err.is_fatal());
    assert_retired(&provider);
}

#[test]
fn unsolicited_message_after_a_response_fails_the_next_call_not_started() {
    for _ in 0..20 {
        unsolicited_message_after_a_response_once();
    }
}

fn unsolicited_message_after_a_response_once() {
    let fx = Fixture::new("unsolicited");
    let provider = fx.start("normal", NORMAL);
    let result = provider.call("then_unsolicited", &json!({})).unwrap();
    assert_eq!(texts(&result), ["first"]);
    // The notification left the plugin in the same write(2) as the response, so it is already
    // buffered behind the response when the next call starts, with no pause in between.
    let err = provider
        .call("echo", &json!({"text": "x"}))
        .expect_err("the connection is out of step");
    assert_error(&err, ErrorCode::UnexpectedMessage, Dispatch::NotStarted);
    assert!(err.is_fatal());
    assert_retired(&provider);
    assert_eq!(
        fx.logged_calls(),
        ["then_unsolicited"],
        "the echo was never sent"
    );
}

// ---------------------------------------------------------------------------------------------
// Exit, stderr, process tree, shutdown
// ---------------------------------------------------------------------------------------------

#[test]
fn exit_while_a_grandchild_holds_stdout_is_eof_well_within_the_timeout() {
    let fx = Fixture::new("exit-keep-stdout");
    let provider = fx.start("normal", NORMAL);
    let started = Instant::now();
    let err = provider
        .call("exit_keep_stdout", &json!({}))
        .expect_err("the plugin exits");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "exit was not detected by wait status"
    );
    assert_error(&err, ErrorCode::Eof, Dispatch::OutcomeUnknown);
    assert!(err.is_fatal());
    assert_retired(&provider);
    let grandchildren = fx.grandchild_pids();
    assert_eq!(grandchildren.len(), 1);
    assert!(wait_gone(grandchildren[0]), "the grandchild survived");
    let pid = fx.plugin_pid();
    drop(provider);
    assert_reaped(pid);
}

#[test]
fn flood_of_stderr_changes_nothing_but_the_bounded_ring() {
    const LINE: &str = "0123456789abcdefghijklmnopqrstuvwxyz noise from the plugin on stderr";
    let fx = Fixture::new("stderr");
    let provider = fx.start("normal", NORMAL);
    // 50 MB over five calls, far more than any pipe buffer.
    for _ in 0..5 {
        let result = provider
            .call("stderr", &json!({"bytes": 10_000_000}))
            .unwrap();
        assert_eq!(texts(&result), ["wrote stderr"]);
    }
    let result = provider
        .call("echo", &json!({"text": "still fine"}))
        .unwrap();
    assert_eq!(texts(&result), ["still fine"]);
    assert!(!provider.is_retired());
    let lines = provider.stderr_lines();
    assert!(!lines.is_empty());
    assert!(
        lines.len() <= STDERR_MAX_LINES,
        "{} lines kept",
        lines.len()
    );
    assert!(lines.iter().all(|l| l.text.len() <= STDERR_MAX_LINE_BYTES));
    let total: usize = lines.iter().map(|l| l.text.len()).sum();
    assert!(total <= STDERR_MAX_TOTAL_BYTES, "{total} bytes kept");
    assert!(lines.iter().any(|l| l.text == LINE && !l.truncated));
}

#[test]
fn endless_stderr_line_is_cut_at_1_kib_and_marked_truncated() {
    let fx = Fixture::new("stderr-long");
    let provider = fx.start("normal", NORMAL);
    provider
        .call("stderr", &json!({"bytes": 5_000_000, "newlines": false}))
        .unwrap();
    provider.call("echo", &json!({"text": "fine"})).unwrap();
    let lines = provider.stderr_lines();
    assert_eq!(lines.len(), 1, "no newline was written");
    assert_eq!(lines[0].text.len(), STDERR_MAX_LINE_BYTES);
    assert!(lines[0].truncated);
}

/// The stderr ring once the drain thread has caught up, i.e. its last line satisfies `done`
/// (the plugin's stderr writes return as soon as the bytes are in the pipe).
fn stderr_when(provider: &Provider, done: impl Fn(&StderrLine) -> bool) -> Vec<StderrLine> {
    let deadline = Instant::now() + GENEROUS;
    loop {
        let lines = provider.stderr_lines();
        if lines.last().is_some_and(&done) {
            return lines;
        }
        assert!(Instant::now() < deadline, "stderr never arrived: {lines:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn unfinished_stderr_line_counts_against_the_64_line_bound() {
    // 100 complete 68-byte lines, then 10 bytes without a newline.
    let fx = Fixture::new("stderr-lines-bound");
    let provider = fx.start("normal", NORMAL);
    provider
        .call("stderr", &json!({"bytes": 69 * 100 + 10}))
        .unwrap();
    let lines = stderr_when(&provider, |last| last.text == "0123456789");
    assert!(
        lines.len() <= STDERR_MAX_LINES,
        "{} lines returned, the bound is {STDERR_MAX_LINES}",
        lines.len()
    );
}

#[test]
fn unfinished_stderr_line_counts_against_the_32_kib_bound() {
    // 40 complete lines of 2000 bytes (each kept as 1024 bytes, truncated), then 500 bytes
    // without a newline.
    let fx = Fixture::new("stderr-bytes-bound");
    let provider = fx.start("normal", NORMAL);
    provider
        .call(
            "stderr",
            &json!({"bytes": 2001 * 40 + 500, "line_bytes": 2000}),
        )
        .unwrap();
    let lines = stderr_when(&provider, |last| last.text.len() == 500);
    assert!(lines.iter().all(|l| l.text.len() <= STDERR_MAX_LINE_BYTES));
    assert!(lines[..lines.len() - 1].iter().all(|l| l.truncated));
    let total: usize = lines.iter().map(|l| l.text.len()).sum();
    assert!(
        total <= STDERR_MAX_TOTAL_BYTES,
        "{total} bytes returned, the bound is {STDERR_MAX_TOTAL_BYTES}"
    );
}

/// Starts a provider, has it spawn a grandchild and returns both with the grandchild's pid.
fn provider_with_grandchild(fx: &Fixture) -> (Provider, i32) {
    let provider = fx.start("normal", NORMAL);
    let result = provider.call("grandchild", &json!({})).unwrap();
    let pid: i32 = texts(&result)[0].parse().expect("grandchild pid");
    assert_eq!(fx.grandchild_pids(), [pid]);
    assert!(!common::process_is_gone(pid), "the grandchild should run");
    (provider, pid)
}

#[test]
fn grandchild_is_killed_when_a_fault_retires_the_provider() {
    let fx = Fixture::new("grandchild-retire");
    let (provider, grandchild) = provider_with_grandchild(&fx);
    let err = provider.call("garbage", &json!({})).expect_err("garbage");
    assert!(err.is_fatal());
    // Retiring alone (no drop yet) kills the whole process group and reaps the plugin.
    assert!(wait_gone(grandchild), "the grandchild survived the retire");
    fx.assert_cleaned_up();
    let pid = fx.plugin_pid();
    drop(provider);
    assert_reaped(pid);
}

#[test]
fn grandchild_is_killed_by_stop_and_drop() {
    let fx = Fixture::new("grandchild-stop");
    let (provider, grandchild) = provider_with_grandchild(&fx);
    provider.stop();
    assert!(provider.is_retired());
    fx.assert_cleaned_up();
    let pid = fx.plugin_pid();
    drop(provider);
    assert!(wait_gone(grandchild), "the grandchild survived stop");
    assert_reaped(pid);
}

#[test]
fn grandchild_is_killed_by_a_plain_drop() {
    let fx = Fixture::new("grandchild-drop");
    let (provider, grandchild) = provider_with_grandchild(&fx);
    let pid = fx.plugin_pid();
    let dropped = Instant::now();
    drop(provider);
    assert!(dropped.elapsed() < GENEROUS, "drop hung");
    assert!(wait_gone(grandchild), "the grandchild survived the drop");
    assert_reaped(pid);
}

#[test]
fn stop_during_a_waiting_call_ends_it_with_manager_stopping_outcome_unknown() {
    // stop() announces Stopping on the event channel before it kills the process group, so the
    // waiting coordinator sees plugin_manager_stopping first (never plugin_eof).
    let fx = Fixture::new("stop-during-call");
    let provider = fx.start("normal", NORMAL);
    std::thread::scope(|s| {
        let waiting = s.spawn(|| {
            let started = Instant::now();
            let outcome = provider.call("hang", &json!({}));
            (outcome, started.elapsed())
        });
        fx.wait_for_call("hang");
        provider.stop();
        let (outcome, elapsed) = waiting.join().unwrap();
        assert!(elapsed < NORMAL, "the call waited for its deadline");
        let err = outcome.expect_err("stopped");
        assert_error(&err, ErrorCode::HostStopping, Dispatch::OutcomeUnknown);
        assert!(err.is_fatal());
    });
    assert_retired(&provider);
    let pid = fx.plugin_pid();
    drop(provider);
    assert_reaped(pid);
}

#[test]
fn calls_after_stop_are_provider_unavailable() {
    let fx = Fixture::new("after-stop");
    let provider = fx.start("normal", NORMAL);
    provider.stop();
    assert_retired(&provider);
    assert!(fx.logged_calls().is_empty());
}

#[test]
fn dropping_many_providers_leaves_no_zombie_children() {
    let fixtures: Vec<Fixture> = (0..4).map(|i| Fixture::new(&format!("many-{i}"))).collect();
    let providers: Vec<Provider> = fixtures.iter().map(|f| f.start("normal", NORMAL)).collect();
    for p in &providers {
        p.call("echo", &json!({"text": "x"})).unwrap();
    }
    // One of them dies on its own before the drop.
    let _ = providers[0].call("crash", &json!({}));
    let pids: Vec<i32> = fixtures.iter().map(|f| f.plugin_pid()).collect();
    drop(providers);
    for pid in pids {
        assert_reaped(pid);
    }
}
