//! Executable resolution on the snapshot's PATH.

use std::path::{Path, PathBuf};

use super::EnvSnapshot;
use crate::error::Result;

/// Resolves `command`: a bare name is searched on the snapshot's PATH (not the host's); a path
/// with a separator is taken relative to `cwd` when relative. Failures:
/// `plugin_executable_unavailable` (phase `executable`), and on Windows
/// `plugin_executable_unsupported` for `.cmd`/`.bat`.
pub fn resolve_executable(command: &str, env: &EnvSnapshot, cwd: Option<&Path>) -> Result<PathBuf> {
    let _ = (command, env, cwd);
    todo!()
}
