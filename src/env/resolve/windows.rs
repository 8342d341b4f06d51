//! Windows: `PATHEXT` and the kinds of file a plugin may be.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::EnvSnapshot;
use crate::error::{Dispatch, Error, ErrorCode, Phase, Result};

/// `PATHEXT` when the prepared environment has none (the Windows default).
const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// A command with `/`, `\` or a drive prefix (`C:`) is a path, not a name to search.
pub(super) fn has_separator(command: &str) -> bool {
    command.contains(['/', '\\']) || command.as_bytes().get(1) == Some(&b':')
}

/// The file `path` names, tried as given when it already ends in a `PATHEXT` extension, then
/// with each `PATHEXT` extension appended (the snapshot's `PATHEXT`, in its order). The first
/// regular file found decides: an `.exe` or `.com` is the executable; anything else (`.cmd`,
/// `.bat`, a script) is refused with `plugin_executable_unsupported`.
pub(super) fn candidate(path: &Path, env: &EnvSnapshot) -> Result<Option<PathBuf>> {
    let extensions = pathext(env);
    let given = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| extensions.iter().any(|x| x[1..].eq_ignore_ascii_case(e)));
    if given && is_file(path) {
        return judge(path.to_path_buf());
    }
    for extension in &extensions {
        let mut name: OsString = path.as_os_str().to_owned();
        name.push(extension);
        let path = PathBuf::from(name);
        if is_file(&path) {
            return judge(path);
        }
    }
    Ok(None)
}

/// The snapshot's `PATHEXT` entries (each starting with a dot), or the default.
fn pathext(env: &EnvSnapshot) -> Vec<String> {
    let value = env
        .get("PATHEXT")
        .and_then(|v| v.to_str())
        .filter(|v| !v.trim().is_empty())
        .unwrap_or(DEFAULT_PATHEXT);
    value
        .split(';')
        .map(str::trim)
        .filter(|e| e.len() > 1 && e.starts_with('.'))
        .map(str::to_string)
        .collect()
}

fn is_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// An `.exe` or `.com` is started directly; every other kind is refused.
fn judge(path: PathBuf) -> Result<Option<PathBuf>> {
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ["exe", "com"]
        .iter()
        .any(|x| x.eq_ignore_ascii_case(extension))
    {
        return Ok(Some(path));
    }
    let message = if ["cmd", "bat"]
        .iter()
        .any(|x| x.eq_ignore_ascii_case(extension))
    {
        "the plugin command is a .cmd or .bat script, which cannot be started without cmd.exe; point command at the .exe it runs (for example node.exe with the script in args)"
    } else {
        "the plugin command is not an .exe or .com file; run scripts through their interpreter (command = the interpreter, the script in args)"
    };
    Err(Error::new(
        ErrorCode::ExecutableUnsupported,
        Dispatch::NotStarted,
        message,
    )
    .in_phase(Phase::Executable))
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU32, Ordering};

    use crate::env::resolve_executable;
    use crate::env::EnvSnapshot;
    use crate::error::ErrorCode;

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> TempDir {
            static N: AtomicU32 = AtomicU32::new(0);
            let dir = std::env::temp_dir().join(format!(
                "webcodex-resolve-win-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn file(&self, name: &str) -> PathBuf {
            let path = self.0.join(name);
            std::fs::write(&path, b"MZ").unwrap();
            path
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Windows file names compare without regard to case; the result carries the `PATHEXT`
    /// spelling (`tool.EXE`) of the extension it found.
    fn assert_same_file(found: PathBuf, expected: PathBuf) {
        let lower = |p: &PathBuf| p.display().to_string().to_lowercase();
        assert_eq!(lower(&found), lower(&expected));
    }

    fn env(vars: &[(&str, &OsString)]) -> EnvSnapshot {
        EnvSnapshot::from_vars(vars.iter().map(|(k, v)| (OsString::from(k), (*v).clone())))
    }

    #[test]
    fn a_bare_name_is_found_with_pathext_on_a_path_of_any_case() {
        let dir = TempDir::new();
        let exe = dir.file("tool.exe");
        let path = dir.0.clone().into_os_string();
        // `Path` spelled as Windows often does: names compare without regard to case.
        let snapshot = env(&[("Path", &path)]);
        assert_same_file(
            resolve_executable("tool", &snapshot, None).unwrap(),
            exe.clone(),
        );
        assert_same_file(
            resolve_executable("TOOL.EXE", &snapshot, None).unwrap(),
            exe,
        );
    }

    #[test]
    fn pathext_order_decides_within_a_directory() {
        let dir = TempDir::new();
        dir.file("tool.cmd");
        let exe = dir.file("tool.exe");
        let path = dir.0.clone().into_os_string();
        let snapshot = env(&[("PATH", &path)]);
        // The default PATHEXT tries .EXE before .CMD.
        assert_same_file(resolve_executable("tool", &snapshot, None).unwrap(), exe);
        let cmd_first = OsString::from(".CMD;.EXE");
        let snapshot = env(&[("PATH", &path), ("PathExt", &cmd_first)]);
        let err = resolve_executable("tool", &snapshot, None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ExecutableUnsupported);
    }

    #[test]
    fn cmd_and_bat_are_refused_as_unsupported_by_name_and_by_path() {
        let dir = TempDir::new();
        let bat = dir.file("plugin.bat");
        dir.file("other.cmd");
        let path = dir.0.clone().into_os_string();
        let snapshot = env(&[("PATH", &path)]);
        for command in ["other", "other.cmd", "plugin"] {
            let err = resolve_executable(command, &snapshot, None).unwrap_err();
            assert_eq!(err.code(), ErrorCode::ExecutableUnsupported, "{command}");
            assert!(!err.message().contains("plugin.bat"), "{}", err.message());
        }
        let err = resolve_executable(bat.to_str().unwrap(), &snapshot, None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ExecutableUnsupported);
    }

    #[test]
    fn a_path_with_backslashes_is_not_searched_and_gets_pathext_too() {
        let dir = TempDir::new();
        let exe = dir.file("plugin.exe");
        let snapshot = env(&[]);
        let given = format!("{}\\plugin", dir.0.display());
        assert_same_file(resolve_executable(&given, &snapshot, None).unwrap(), exe);
        let relative = resolve_executable(".\\plugin", &snapshot, Some(&dir.0)).unwrap();
        assert_same_file(relative, dir.0.join(".\\plugin.exe"));
        let err = resolve_executable("missing", &snapshot, None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ExecutableUnavailable);
    }

    #[test]
    fn snapshot_names_are_one_variable_in_any_case() {
        let a = OsString::from("first");
        let b = OsString::from("second");
        let snapshot = env(&[("Path", &a), ("PATH", &b)]);
        assert_eq!(snapshot.vars().len(), 1);
        assert_eq!(snapshot.get("path"), Some(b.as_os_str()));
        let secret = OsString::from("x");
        let snapshot = env(&[("Webcodex_Token", &secret), ("authorization", &secret)]);
        assert!(snapshot.vars().is_empty());
    }
}
