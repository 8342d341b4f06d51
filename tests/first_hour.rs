//! What a newcomer meets in the first hour with a fresh clone, as real runs of the CLI binary:
//! `init`'s next steps run as printed, `check` without `--plugin` checks every provider,
//! `describe` warns about a tool without hints, and `demo` shows the binding of each call.

mod common;
mod tempdir;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest one run may take (a hang, never a timing).
const LIMIT: Duration = Duration::from_secs(60);

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

fn run_in(dir: &Path, args: &[&str]) -> common::Run {
    let mut command = common::cli_command(BIN);
    command.args(args).current_dir(dir);
    common::run_to_end(command, LIMIT)
}

/// PATH without any directory that holds a `webcodex-plugin` binary: a newcomer who ran
/// `cargo run` has none on PATH.
fn path_without_the_binary() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<_> = std::env::split_paths(&path)
        .filter(|dir| {
            !dir.join("webcodex-plugin").exists() && !dir.join("webcodex-plugin.exe").exists()
        })
        .collect();
    std::env::join_paths(kept).expect("PATH entries join")
}

/// The command lines `init` printed: every line indented by four spaces.
fn printed_commands(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("    "))
        .map(str::to_string)
        .collect()
}

#[test]
#[cfg(unix)]
fn init_next_steps_run_as_printed() {
    let dir = TempDir::new("first-hour", "init");
    let target = dir.path("my plugin");
    let init = run_in(
        &dir,
        &["init", s(&target), "--lang", "python", "--id", "mine"],
    );
    assert_eq!(init.code, Some(0), "{}", init.stderr);
    dir.write("runner.toml", &common::printed_provider_block(&init.stdout));
    let commands = printed_commands(&init.stdout);
    assert!(
        commands.iter().any(|c| c.contains(" check ")),
        "no check command printed: {}",
        init.stdout
    );
    for line in commands {
        let mut shell = Command::new("sh");
        shell
            .args(["-c", &line])
            .current_dir(&dir)
            .env("PATH", path_without_the_binary());
        let run = common::run_to_end(shell, LIMIT);
        assert_eq!(
            run.code,
            Some(0),
            "the printed command {line:?} failed:\n{}{}",
            run.stdout,
            run.stderr
        );
        if line.contains(" check ") {
            assert!(run.stdout.starts_with("mine: ready"), "{}", run.stdout);
        }
    }
}
