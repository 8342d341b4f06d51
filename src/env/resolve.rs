//! Executable resolution on the snapshot's PATH.
//!
//! The plugin is started from the prepared environment, so a bare command is looked up on that
//! environment's PATH, never the host's. Messages never name the command or a path (either may
//! be secret); they say what to check instead.
//!
//! On Unix a candidate must be a regular file with an execute bit. On Windows (`windows`) both
//! `/` and `\\` separate, a name without one of the snapshot's `PATHEXT` extensions is tried with
//! each in turn, and what is found must be an `.exe` or `.com`: a `.cmd` or `.bat` (or any other
//! script) is refused with `plugin_executable_unsupported`, since it would need `cmd.exe`
//! between the host and the plugin.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::EnvSnapshot;
use crate::error::{Dispatch, Error, ErrorCode, Phase, Result};

/// Resolves `command`: a bare name is searched on the snapshot's PATH (not the host's); a path
/// with a separator is taken relative to `cwd` when relative. Empty PATH entries are skipped;
/// relative ones are taken relative to `cwd` like a relative command. The result must be an
/// executable regular file. Failures: `plugin_executable_unavailable` (phase `executable`), and
/// on Windows `plugin_executable_unsupported` for `.cmd`/`.bat`.
///
/// A configured `cwd` that is not an existing directory fails first, as
/// `plugin_spawn_failed` (phase `spawn`) with a message that says so, since the process could
/// never start there (without this check it would look like a missing command).
pub fn resolve_executable(command: &str, env: &EnvSnapshot, cwd: Option<&Path>) -> Result<PathBuf> {
    if let Some(cwd) = cwd {
        check_cwd(cwd)?;
    }
    if command.is_empty() {
        return Err(unavailable("the plugin command is empty"));
    }
    if has_separator(command) {
        let path = anchored(Path::new(command), cwd);
        return match candidate(&path, env)? {
            Some(found) => Ok(found),
            None => Err(unavailable(
                "the plugin command path does not name an executable regular file; check command and cwd",
            )),
        };
    }
    let Some(path_var) = path_var(env) else {
        return Err(unavailable(
            "the prepared environment has no PATH, so the plugin command cannot be found; use a path or set PATH via shell.path_prepend or the profile",
        ));
    };
    for dir in std::env::split_paths(path_var) {
        if dir.as_os_str().is_empty() {
            continue;
        }
        if let Some(found) = candidate(&anchored(&dir, cwd).join(command), env)? {
            return Ok(found);
        }
    }
    Err(unavailable(
        "the plugin command was not found on the PATH of the prepared environment; check command and profile",
    ))
}

/// The provider's `cwd` must be an existing directory. The message never carries the path.
fn check_cwd(cwd: &Path) -> Result<()> {
    let problem = match std::fs::metadata(cwd) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => "the provider's cwd is not a directory; set cwd to an existing directory",
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            "the provider's cwd does not exist; create it or fix cwd in [[plugins.providers]] (leave cwd out to use the host's working directory)"
        }
        Err(_) => "the provider's cwd cannot be accessed; check its permissions",
    };
    Err(Error::new(ErrorCode::SpawnFailed, Dispatch::NotStarted, problem).in_phase(Phase::Spawn))
}

fn unavailable(message: &str) -> Error {
    Error::new(
        ErrorCode::ExecutableUnavailable,
        Dispatch::NotStarted,
        message,
    )
    .in_phase(Phase::Executable)
}

#[cfg(unix)]
fn has_separator(command: &str) -> bool {
    command.contains('/')
}

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows::{candidate, has_separator};

fn anchored(path: &Path, cwd: Option<&Path>) -> PathBuf {
    match cwd {
        Some(cwd) if path.is_relative() => cwd.join(path),
        _ => path.to_path_buf(),
    }
}

fn path_var(env: &EnvSnapshot) -> Option<&OsStr> {
    env.get("PATH")
}

#[cfg(unix)]
fn candidate(path: &Path, _env: &EnvSnapshot) -> Result<Option<PathBuf>> {
    use std::os::unix::fs::PermissionsExt;
    Ok(std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .map(|_| path.to_path_buf()))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> TempDir {
            static N: AtomicU32 = AtomicU32::new(0);
            let dir = std::env::temp_dir().join(format!(
                "webcodex-resolve-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn file(&self, rel: &str, mode: u32) -> PathBuf {
            let path = self.0.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            path
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn env_with_path(path: impl Into<OsString>) -> EnvSnapshot {
        EnvSnapshot::from_vars([(OsString::from("PATH"), path.into())])
    }

    fn assert_unavailable(err: Error, needle: &str) {
        assert_eq!(err.code(), ErrorCode::ExecutableUnavailable);
        assert_eq!(err.phase(), Some(Phase::Executable));
        assert!(
            err.message().contains(needle),
            "message {:?} should contain {:?}",
            err.message(),
            needle
        );
    }

    #[test]
    fn bare_name_is_found_on_the_snapshot_path() {
        let dir = TempDir::new();
        let tool = dir.file("bin/webcodex-test-tool", 0o755);
        let path = format!(
            "{}:{}",
            dir.0.join("empty").display(),
            dir.0.join("bin").display()
        );
        let found = resolve_executable("webcodex-test-tool", &env_with_path(path), None).unwrap();
        assert_eq!(found, tool);
    }

    #[test]
    fn first_executable_on_path_wins() {
        let dir = TempDir::new();
        dir.file("a/tool", 0o644);
        let second = dir.file("b/tool", 0o755);
        dir.file("c/tool", 0o755);
        let path = ["a", "b", "c"]
            .map(|d| dir.0.join(d).display().to_string())
            .join(":");
        assert_eq!(
            resolve_executable("tool", &env_with_path(path), None).unwrap(),
            second
        );
    }

    #[test]
    fn host_path_is_not_searched() {
        // `sh` is on the host's PATH, but not on this snapshot's.
        let dir = TempDir::new();
        let err = resolve_executable("sh", &env_with_path(dir.0.clone()), None).unwrap_err();
        assert_unavailable(
            err,
            "the plugin command was not found on the PATH of the prepared environment; check command and profile",
        );
        let err = resolve_executable("sh", &EnvSnapshot::default(), None).unwrap_err();
        assert_unavailable(err, "the prepared environment has no PATH");
    }

    #[test]
    fn empty_path_entries_are_skipped() {
        let dir = TempDir::new();
        dir.file("tool", 0o755);
        // The current directory is where `tool` lives, yet "" must not mean ".".
        let err = resolve_executable("tool", &env_with_path("::"), Some(&dir.0)).unwrap_err();
        assert_unavailable(err, "not found on the PATH");
    }

    #[test]
    fn non_executable_file_is_rejected() {
        let dir = TempDir::new();
        let file = dir.file("tool", 0o644);
        let err =
            resolve_executable(file.to_str().unwrap(), &EnvSnapshot::default(), None).unwrap_err();
        assert!(!err.message().contains(&*file.to_string_lossy()));
        assert_unavailable(err, "does not name an executable regular file");
    }

    #[test]
    fn directory_is_rejected() {
        let dir = TempDir::new();
        let err =
            resolve_executable(dir.0.to_str().unwrap(), &EnvSnapshot::default(), None).unwrap_err();
        assert_unavailable(err, "does not name an executable regular file");
    }

    #[test]
    fn absolute_path_is_used_as_is() {
        let dir = TempDir::new();
        let tool = dir.file("tool", 0o700);
        let found = resolve_executable(tool.to_str().unwrap(), &EnvSnapshot::default(), None);
        assert_eq!(found.unwrap(), tool);
    }

    #[test]
    fn relative_path_is_taken_from_cwd() {
        let dir = TempDir::new();
        let tool = dir.file("tools/plugin", 0o755);
        let found = resolve_executable("./tools/plugin", &EnvSnapshot::default(), Some(&dir.0));
        assert_eq!(found.unwrap(), dir.0.join("./tools/plugin"));
        assert!(tool.exists());
        let err =
            resolve_executable("tools/missing", &EnvSnapshot::default(), Some(&dir.0)).unwrap_err();
        assert_unavailable(err, "check command and cwd");
    }

    #[test]
    fn missing_cwd_is_reported_as_such_without_its_path() {
        let dir = TempDir::new();
        let missing = dir.0.join("not-there");
        let err = resolve_executable("sh", &env_with_path("/bin"), Some(&missing)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::SpawnFailed);
        assert_eq!(err.phase(), Some(Phase::Spawn));
        assert!(
            err.message().contains("cwd does not exist"),
            "{}",
            err.message()
        );
        assert!(!err.message().contains("not-there"), "{}", err.message());
        let file = dir.file("plain", 0o644);
        let err = resolve_executable("sh", &env_with_path("/bin"), Some(&file)).unwrap_err();
        assert!(
            err.message().contains("cwd is not a directory"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn empty_command_is_unavailable() {
        let err = resolve_executable("", &env_with_path("/bin"), None).unwrap_err();
        assert_unavailable(err, "empty");
    }
}
