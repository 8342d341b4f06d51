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
