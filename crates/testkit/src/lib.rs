//! Helpers shared by the workspace's integration tests: the fixture plugin, its side files
//! (`FIXTURE_LOG`, `FIXTURE_PIDS`), process-table checks, `webcodex-plugin serve` processes
//! ([`serve`]), temporary directories ([`tempdir`]) and gateways over the fixture ([`gateway`]).
//! Not published: a dev-dependency of the workspace's crates only.
#![allow(missing_docs)]
// `unsafe` only in the Windows helper (console groups, process snapshots: windows-sys); the Unix
// side's system calls go through rustix.
#![deny(unsafe_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use webcodex_plugin_host::EnvSnapshot;
use webcodex_plugin_host::{Dispatch, Error, ErrorCode};
use webcodex_plugin_host::{LaunchSpec, Provider, ProviderSpec};

pub mod gateway;
pub mod http;
mod procs;
pub mod serve;
pub use procs::*;
pub mod tempdir;
#[cfg(windows)]
#[allow(unsafe_code)]
pub mod windows;

/// The workspace's root directory (the repository): where README.md, docs/, examples/ and
/// scripts/ are.
pub const REPO_ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// How long "does not hang" checks wait at most. Never an expected duration.
pub const GENEROUS: Duration = Duration::from_secs(5);

/// `target/debug/examples/fixture_plugin`, next to the test binary's `deps` directory.
///
/// `cargo test` builds examples, but `cargo test --test NAME` does not: the first call builds
/// the fixture with the same cargo (a no-op when it is fresh), so a stale fixture is never used.
pub fn fixture_path() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| example_path("fixture_plugin")).clone()
}

/// `target/<profile>/examples/NAME`, built by the same cargo that runs the tests (a no-op when
/// it is fresh).
///
/// The variables cargo sets for a running test (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, …) are
/// removed from the nested cargo's environment: build scripts that watch them (ring's does)
/// would otherwise see them change and rebuild on every switch between the two cargos.
pub fn example_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test binary has a parent directory");
    let profile_dir = deps.parent().expect("deps has a parent directory");
    build_example(profile_dir, name);
    let path = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "example not built at {}: run `cargo build --example {name}`",
        path.display()
    );
    path
}

/// Windows: the tests run under Wine (or on a Windows runner after a `cargo build`), where the
/// cargo that built them may not run; scripts/windows-test.sh builds the examples first.
#[cfg(windows)]
fn build_example(_profile_dir: &Path, _name: &str) {}

/// Builds the example `name` into `profile_dir` (`target/debug` → the dev profile, else the
/// profile named like the directory).
#[cfg(not(windows))]
fn build_example(profile_dir: &Path, name: &str) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let mut command = Command::new(cargo);
    command
        .args(["build", "--quiet", "--example", name, "--profile", profile])
        .current_dir(REPO_ROOT)
        .stdin(Stdio::null());
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        let set_for_the_test = [
            "CARGO_MANIFEST_",
            "CARGO_PKG_",
            "CARGO_BIN_",
            "CARGO_CRATE_",
        ]
        .iter()
        .any(|prefix| key_text.starts_with(prefix))
            || ["CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR", "OUT_DIR"].contains(&&*key_text);
        if set_for_the_test {
            command.env_remove(&key);
        }
    }
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("run cargo build --example {name}: {e}"));
    assert!(status.success(), "building the example {name} failed");
}

/// One fixture plugin run: a private temp directory holding the stdin log and the pid file.
/// The directory is removed on drop.
pub struct Fixture {
    dir: PathBuf,
    log: PathBuf,
    pids: PathBuf,
    extra_env: Vec<(OsString, OsString)>,
}

impl Fixture {
    /// A fresh fixture directory named after `label`.
    pub fn new(label: &str) -> Fixture {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("wc-ptest-{}-{}-{label}", std::process::id(), n));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create fixture temp dir");
        Fixture {
            log: dir.join("stdin.log"),
            pids: dir.join("pids"),
            dir,
            extra_env: Vec::new(),
        }
    }

    /// Adds one environment variable for the plugin.
    pub fn with_env(mut self, key: &str, value: &str) -> Fixture {
        self.extra_env.push((key.into(), value.into()));
        self
    }

    /// The `FIXTURE_LOG` path.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The environment for the plugin: the host's own, minus any inherited `FIXTURE_*`, plus
    /// this fixture's side files and the extra variables.
    pub fn env(&self) -> EnvSnapshot {
        let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| !k.to_string_lossy().starts_with("FIXTURE_"))
            .collect();
        vars.push(("FIXTURE_LOG".into(), self.log.clone().into_os_string()));
        vars.push(("FIXTURE_PIDS".into(), self.pids.clone().into_os_string()));
        vars.extend(self.extra_env.iter().cloned());
        EnvSnapshot::from_vars(vars)
    }

    /// A spec that runs the fixture in `mode` with the given request timeout.
    pub fn spec(&self, mode: &str, timeout: Duration) -> ProviderSpec {
        self.spec_for(fixture_path(), vec![mode.to_string()], timeout)
    }

    /// A spec that runs `program` with `args` and this fixture's environment.
    pub fn spec_for(&self, program: PathBuf, args: Vec<String>, timeout: Duration) -> ProviderSpec {
        ProviderSpec {
            id: "fixture".into(),
            name: "Fixture".into(),
            launch: LaunchSpec {
                program,
                args,
                cwd: None,
                env: self.env(),
            },
            timeout,
        }
    }

    /// Starts the fixture in `mode` and expects admission to succeed.
    pub fn start(&self, mode: &str, timeout: Duration) -> Provider {
        match Provider::start(self.spec(mode, timeout)) {
            Ok(provider) => provider,
            Err(e) => panic!(
                "fixture in mode {mode} was not admitted: {e} (phase {:?})",
                e.phase()
            ),
        }
    }

    /// Starts the fixture in `mode` and expects admission to fail.
    pub fn start_err(&self, mode: &str, timeout: Duration) -> Error {
        match Provider::start(self.spec(mode, timeout)) {
            Ok(_) => panic!("fixture in mode {mode} was admitted, expected a failure"),
            Err(e) => e,
        }
    }

    /// Every line the plugin read from stdin, parsed as JSON (unparsable lines as `Null`).
    pub fn log_lines(&self) -> Vec<Value> {
        match std::fs::read_to_string(&self.log) {
            Ok(text) => text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The `id` of every logged request, in order.
    pub fn logged_ids(&self) -> Vec<u64> {
        self.log_lines()
            .iter()
            .map(|v| v["id"].as_u64().expect("logged request has an integer id"))
            .collect()
    }

    /// The `method` of every logged request, in order.
    pub fn logged_methods(&self) -> Vec<String> {
        self.log_lines()
            .iter()
            .map(|v| v["method"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// The tool names of every logged tools/call, in order.
    pub fn logged_calls(&self) -> Vec<String> {
        self.log_lines()
            .iter()
            .filter(|v| v["method"] == "tools/call")
            .map(|v| v["params"]["name"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// Waits (bounded by [`GENEROUS`]) until the plugin has read a tools/call of `tool`.
    pub fn wait_for_call(&self, tool: &str) {
        let deadline = Instant::now() + GENEROUS;
        while !self.logged_calls().iter().any(|t| t == tool) {
            assert!(
                Instant::now() < deadline,
                "the plugin never read the tools/call of {tool}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits (bounded by [`GENEROUS`]) until the plugin has recorded a `KIND N` line in its pid
    /// file (e.g. `unsolicited`, written by the fixture once it sent that line).
    pub fn wait_for_marker(&self, kind: &str) {
        let deadline = Instant::now() + GENEROUS;
        while self.recorded_pids(&format!("{kind} ")).is_empty() {
            assert!(
                Instant::now() < deadline,
                "the plugin never recorded {kind}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn recorded_pids(&self, kind: &str) -> Vec<i32> {
        std::fs::read_to_string(&self.pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.strip_prefix(kind)?.trim().parse().ok())
            .collect()
    }

    /// The pid of the plugin process (it records itself at start).
    pub fn plugin_pid(&self) -> i32 {
        let pids = self.recorded_pids("self ");
        assert_eq!(pids.len(), 1, "expected exactly one plugin process");
        pids[0]
    }

    /// Asserts that this fixture's plugin and everything in its process group are gone and
    /// reaped within the termination bound (call it after every fault that retires it).
    pub fn assert_cleaned_up(&self) {
        assert_plugins_cleaned_up(&self.recorded_pids("self "));
    }

    /// The pid file path (`FIXTURE_PIDS`).
    pub fn pids_path(&self) -> &Path {
        &self.pids
    }

    /// The pids of every grandchild the plugin spawned.
    pub fn grandchild_pids(&self) -> Vec<i32> {
        self.recorded_pids("grandchild ")
    }

    /// Asserts that an error message leaks nothing about the process: no program path, no
    /// side-file path, no fixture name.
    pub fn assert_message_is_safe(&self, error: &Error) {
        let message = error.message();
        for needle in [
            fixture_path().display().to_string(),
            self.dir.display().to_string(),
            "fixture_plugin".to_string(),
            "FIXTURE_".to_string(),
        ] {
            assert!(
                !message.contains(&needle),
                "error message leaks {needle:?}: {message}"
            );
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Keeps every CPU of the machine busy with spinning threads until dropped, so a test runs its
/// plugins while no CPU is idle (the wake-ups then compete with other work). The spinning
/// threads run at the lowest priority (nice 19), so they fill idle time without starving the
/// test, and only one `BusyCpus` exists at a time in a test process.
pub struct BusyCpus {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
}

impl BusyCpus {
    /// One spinning thread per CPU the process may use.
    pub fn start() -> BusyCpus {
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let guard = ONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    // The lowest priority for this thread only (Linux's setpriority takes a
                    // thread id).
                    #[cfg(target_os = "linux")]
                    let _ =
                        rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                    }
                })
            })
            .collect();
        BusyCpus {
            stop,
            threads,
            _one_at_a_time: guard,
        }
    }
}

impl Drop for BusyCpus {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Asserts code and dispatch of an error, with a readable failure.
pub fn assert_error(error: &Error, code: ErrorCode, dispatch: Dispatch) {
    assert_eq!(
        (error.code(), error.dispatch()),
        (code, dispatch),
        "unexpected error: {error}"
    );
}

/// Asserts that `provider` was retired: its process group is killed and its process reaped
/// within the termination bound (while the provider value still exists), and the next call is
/// `plugin_provider_unavailable`, not_started.
pub fn assert_retired(provider: &Provider) {
    assert!(provider.is_retired(), "the provider should be retired");
    assert_plugins_cleaned_up(&[provider.process_id() as i32]);
    let err = provider
        .call("echo", &serde_json::json!({"text": "after"}))
        .expect_err("a retired provider must not serve calls");
    assert_error(&err, ErrorCode::ProviderUnavailable, Dispatch::NotStarted);
}

/// The proxy variables an HTTP client reads; tests that reach loopback servers remove them.
pub const PROXY_VARIABLES: [&str; 8] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// The `webcodex-plugin` binary with the fixture's side files and the logger unset, so a test
/// sees only what it sets itself.
pub fn cli_command(binary: &str) -> Command {
    let mut cmd = Command::new(binary);
    // Windows: a console process group of its own, so `request_stop` can send it Ctrl-Break.
    #[cfg(windows)]
    std::os::windows::process::CommandExt::creation_flags(&mut cmd, windows::NEW_PROCESS_GROUP);
    for key in ["FIXTURE_LOG", "FIXTURE_PIDS", "FIXTURE_STDERR", "RUST_LOG"] {
        cmd.env_remove(key);
    }
    cmd
}

/// `webcodex-plugin connect` as every runner test starts it: [`cli_command`] with `connect`,
/// `token` in `WEBCODEX_RUNNER_TOKEN`, no stdin or stdout, stderr piped (read it with
/// [`read_all`]) and no proxy variable of this environment (loopback fronts only).
pub fn connect_command(binary: &str, token: &str) -> Command {
    let mut cmd = cli_command(binary);
    cmd.arg("connect")
        .env("WEBCODEX_RUNNER_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for var in PROXY_VARIABLES {
        cmd.env_remove(var);
    }
    cmd
}

/// Asks the process `pid` (a child of this test) to stop as an operator would: SIGTERM. True
/// when the signal was sent.
#[cfg(unix)]
pub fn request_stop(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).is_ok()
}

/// Windows: Ctrl-Break to the console process group of `pid` (a child started by
/// [`cli_command`], which leads a group of its own). True when the event was sent. Wine cannot
/// deliver it (GenerateConsoleCtrlEvent fails with error 12), so the tests that need it are
/// ignored on Windows; on a Windows runner they can be run with `--ignored`.
#[cfg(windows)]
pub fn request_stop(pid: u32) -> bool {
    windows::send_ctrl_break(pid)
}

/// Waits at most `limit` for `child`; kills it and fails the test on a hang.
pub fn wait_bounded(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the process did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The `[[plugins.providers]]` block `webcodex-plugin init` printed in `stdout` (up to the
/// first empty line), ready to paste into a runner.toml.
pub fn printed_provider_block(stdout: &str) -> String {
    let start = stdout
        .find("[[plugins.providers]]")
        .unwrap_or_else(|| panic!("no provider block printed: {stdout}"));
    stdout[start..]
        .lines()
        .take_while(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

/// What one finished process run produced.
#[derive(Debug)]
pub struct Run {
    /// The exit code (`None` when a signal ended it).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The single stdout line parsed as JSON; fails unless stdout is exactly one line.
    pub fn json(&self) -> Value {
        let line = self
            .stdout
            .strip_suffix('\n')
            .unwrap_or_else(|| panic!("stdout does not end with a newline: {self:?}"));
        assert!(!line.contains('\n'), "stdout is not one line: {self:?}");
        serde_json::from_str(line).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    /// Fails unless the exit code is `code`.
    pub fn assert_code(&self, code: i32) -> &Run {
        assert_eq!(self.code, Some(code), "unexpected exit code: {self:?}");
        self
    }
}

/// Runs `command` to its end with stdin empty, reading stdout and stderr on threads of their
/// own; waits at most `limit` (a hang kills it and fails the test).
pub fn run_to_end(mut command: Command, limit: Duration) -> Run {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn_test_process(&mut command);
    let stdout = read_all(child.stdout.take().expect("stdout"));
    let stderr = read_all(child.stderr.take().expect("stderr"));
    let status = wait_bounded(&mut child, limit);
    Run {
        code: status.code(),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// Spawns a process the test itself starts. Under Wine, `CreateProcess` now and then fails
/// with `ERROR_INTERNAL_ERROR` (1359) before the process exists; that is Wine's fault, not
/// the behaviour under test, so the test retries it twice. Any other error fails the test.
fn spawn_test_process(command: &mut Command) -> std::process::Child {
    const WINE_INTERNAL_ERROR: i32 = 1359;
    let mut attempts = 0;
    loop {
        match command.spawn() {
            Ok(child) => return child,
            Err(e)
                if cfg!(windows)
                    && e.raw_os_error() == Some(WINE_INTERNAL_ERROR)
                    && attempts < 2 =>
            {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("spawn {command:?}: {e}"),
        }
    }
}

/// Reads a child's pipe to the end on a thread of its own (so neither pipe can fill up).
pub fn read_all(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8(bytes).expect("process output is UTF-8")
    })
}

/// The leak canary: what must never appear in any plugin_tool output of any transport (stdio
/// lines, HTTP responses, library outputs): the command, argv, cwd, environment values and
/// stderr of a plugin (carried by unique canary strings) and its process ids.
///
/// Reuse it for a new transport: serialize every response it produces (headers included when
/// there are any) and pass it to [`Canary::assert_absent`].
#[derive(Debug, Clone, Default)]
pub struct Canary {
    /// Strings that must not appear anywhere (paths, argv words, env values, stderr text).
    pub strings: Vec<String>,
    /// Process ids that must not appear as a number of their own.
    pub pids: Vec<i32>,
}

impl Canary {
    /// A canary of these strings.
    pub fn new(strings: impl IntoIterator<Item = String>) -> Canary {
        Canary {
            strings: strings.into_iter().collect(),
            pids: Vec::new(),
        }
    }

    /// Asserts that `serialized` (one output of `what`) holds none of the canary strings and
    /// none of the pids as a standalone number.
    pub fn assert_absent(&self, what: &str, serialized: &str) {
        for needle in &self.strings {
            assert!(
                !serialized.contains(needle.as_str()),
                "{what} leaked {needle:?}: {serialized}"
            );
        }
        for pid in &self.pids {
            assert!(
                !contains_pid(serialized, &pid.to_string()),
                "{what} leaked the process id {pid}: {serialized}"
            );
        }
    }
}

/// True when `number` occurs in `text` with no letter or digit on either side.
pub fn contains_number(text: &str, number: &str) -> bool {
    standalone_numbers(text, number).next().is_some()
}

/// [`contains_number`], leaving out the numbers of the host's own bound descriptions
/// ("depth 16, 4096 values, 512 KiB strings, 1024-byte keys", "2 s"): a process id can equal
/// one of them (Wine's ids are small, a young container's are in the thousands), and the
/// message around it shows that it is a bound, not an id. Digits inside a binding (random
/// base64url, where `-` and `_` can fence a short number) are not an id either.
fn contains_pid(text: &str, pid: &str) -> bool {
    const BOUND_AFTER: [&str; 8] = [
        " KiB", " MiB", " bytes", "-byte", " values", " s", " ms", " ids",
    ];
    standalone_numbers(text, pid).any(|at| {
        let after = &text[at + pid.len()..];
        let before = &text[..at];
        let in_binding = before
            .rsplit(['"', ' '])
            .next()
            .is_some_and(|word| word.starts_with("wc_pbind_"));
        !BOUND_AFTER.iter().any(|unit| after.starts_with(unit))
            && !before.ends_with("depth ")
            && !in_binding
    })
}

/// The offsets where `number` occurs in `text` with no letter or digit on either side.
fn standalone_numbers<'t>(text: &'t str, number: &'t str) -> impl Iterator<Item = usize> + 't {
    let bytes = text.as_bytes();
    text.match_indices(number).filter_map(move |(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + number.len()).copied();
        let standalone = !before.is_some_and(|b| b.is_ascii_alphanumeric())
            && !after.is_some_and(|b| b.is_ascii_alphanumeric());
        standalone.then_some(at)
    })
}
