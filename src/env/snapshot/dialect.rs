//! The init_script's shell dialect, chosen from the profile's program name (docs/DECISIONS.md
//! D-PLAT-3): the generated script (strict mode where the shell has one, the init script, the
//! marker line, then the environment) and how it is handed to the program.

use std::ffi::OsString;
use std::process::Command;

/// The shell a profile's program is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    /// `bash`, `sh`, `zsh`, … (any program not named below): `set -eu`, `env -0`.
    Posix,
    /// `pwsh` or `powershell`: `$ErrorActionPreference = 'Stop'`, strict mode, the environment
    /// written as NUL-separated UTF-8 to the standard output stream.
    PowerShell,
    /// `cmd` (Windows only): a batch file with `@echo off`, the environment printed by `set`.
    #[cfg(windows)]
    Cmd,
}

impl Dialect {
    /// The dialect of `program`: its file name without directory and without `.exe`, compared
    /// without regard to ASCII case.
    pub(super) fn of(program: &str) -> Dialect {
        let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
        let name = name.to_ascii_lowercase();
        let stem = name.strip_suffix(".exe").unwrap_or(&name);
        match stem {
            "pwsh" | "powershell" => Dialect::PowerShell,
            #[cfg(windows)]
            "cmd" => Dialect::Cmd,
            _ => Dialect::Posix,
        }
    }

    /// The generated script around `init_script`. The marker is preceded by a newline so
    /// chatter without a trailing newline cannot hide it.
    pub(super) fn script(self, init_script: &str, marker: &str) -> String {
        match self {
            Dialect::Posix => {
                format!("set -eu\n{init_script}\nprintf '\\n%s\\n' '{marker}'\nenv -0\n")
            }
            // What the script printed through PowerShell's own streams is flushed first, then
            // the marker and the environment go to the standard output stream as raw UTF-8
            // bytes (no console code page, NUL separators as `env -0`).
            Dialect::PowerShell => format!(
                "$ErrorActionPreference = 'Stop'\n\
                 Set-StrictMode -Version Latest\n\
                 {init_script}\n\
                 [Console]::Out.Flush()\n\
                 $webcodexEnv = -join (Get-ChildItem Env: | ForEach-Object {{ $_.Name + '=' + $_.Value + [char]0 }})\n\
                 $webcodexBytes = [Text.Encoding]::UTF8.GetBytes(\"`n{marker}`n\" + $webcodexEnv)\n\
                 $webcodexOut = [Console]::OpenStandardOutput()\n\
                 $webcodexOut.Write($webcodexBytes, 0, $webcodexBytes.Length)\n\
                 $webcodexOut.Flush()\n"
            ),
            // cmd has no strict mode: the script runs as written (a line ending in
            // `|| exit /b 1` stops it there).
            #[cfg(windows)]
            Dialect::Cmd => format!(
                "@echo off\r\n{}\r\necho.\r\necho {marker}\r\nset\r\n",
                init_script.replace("\r\n", "\n").replace('\n', "\r\n")
            ),
        }
    }

    /// True when the environment after the marker is one `KEY=VALUE` per line (cmd's `set`)
    /// rather than NUL-separated.
    pub(super) fn lists_by_line(self) -> bool {
        match self {
            Dialect::Posix | Dialect::PowerShell => false,
            #[cfg(windows)]
            Dialect::Cmd => true,
        }
    }

    /// Hands `script` to the profile's program as its last argument. For cmd it is a batch
    /// file in the host's temporary directory (cmd runs one command line per `/c`, and a batch
    /// file reads each line when it reaches it, as a script), removed when the returned guard
    /// drops.
    pub(super) fn pass_script(
        self,
        command: &mut Command,
        script: String,
        marker: &str,
    ) -> std::io::Result<ScriptFile> {
        #[cfg(not(windows))]
        let _ = marker;
        match self {
            Dialect::Posix | Dialect::PowerShell => {
                command.arg(OsString::from(script));
                Ok(ScriptFile(None))
            }
            #[cfg(windows)]
            Dialect::Cmd => {
                use std::io::Write;
                use std::os::windows::process::CommandExt;
                let path = std::env::temp_dir().join(format!("{marker}.cmd"));
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)?;
                let guard = ScriptFile(Some(path));
                file.write_all(script.as_bytes())?;
                drop(file);
                // Quoted as it is (a Windows path cannot hold `"`); cmd takes the quoted path
                // as the command whether or not the profile's args hold `/s`.
                let mut quoted = OsString::from("\"");
                quoted.push(guard.0.as_deref().unwrap_or(std::path::Path::new("")));
                quoted.push("\"");
                command.raw_arg(quoted);
                Ok(guard)
            }
        }
    }
}

/// A generated script file, removed on drop (`None`: the script was an argument).
#[derive(Debug)]
pub(super) struct ScriptFile(Option<std::path::PathBuf>);

impl Drop for ScriptFile {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dialect_follows_the_program_name_in_any_case_and_directory() {
        assert_eq!(Dialect::of("bash"), Dialect::Posix);
        assert_eq!(Dialect::of("/usr/bin/sh"), Dialect::Posix);
        assert_eq!(Dialect::of("pwsh"), Dialect::PowerShell);
        assert_eq!(
            Dialect::of("/opt/microsoft/powershell/7/pwsh"),
            Dialect::PowerShell
        );
        assert_eq!(
            Dialect::of(r"C:\Windows\System32\WindowsPowerShell\v1.0\PowerShell.EXE"),
            Dialect::PowerShell
        );
        assert_eq!(Dialect::of("pwsh-preview"), Dialect::Posix);
        #[cfg(windows)]
        assert_eq!(Dialect::of(r"C:\Windows\system32\CMD.exe"), Dialect::Cmd);
        #[cfg(not(windows))]
        assert_eq!(Dialect::of("cmd"), Dialect::Posix);
    }

    #[test]
    fn the_powershell_script_is_strict_then_the_script_then_the_marker_and_the_environment() {
        let script = Dialect::PowerShell.script("Import-Module Foo\n$env:A = 'x'", "MARK");
        let lines: Vec<&str> = script.lines().collect();
        assert_eq!(lines[0], "$ErrorActionPreference = 'Stop'");
        assert_eq!(lines[1], "Set-StrictMode -Version Latest");
        assert_eq!(lines[2], "Import-Module Foo");
        assert_eq!(lines[3], "$env:A = 'x'");
        assert_eq!(lines[4], "[Console]::Out.Flush()");
        assert!(script.contains("Get-ChildItem Env:"), "{script}");
        assert!(script.contains("[char]0"), "{script}");
        assert!(script.contains("\"`nMARK`n\""), "{script}");
        assert!(
            script.contains("[Console]::OpenStandardOutput()"),
            "{script}"
        );
    }

    #[test]
    fn the_posix_script_is_unchanged() {
        assert_eq!(
            Dialect::Posix.script("echo hi", "MARK"),
            "set -eu\necho hi\nprintf '\\n%s\\n' 'MARK'\nenv -0\n"
        );
    }

    #[cfg(windows)]
    #[test]
    fn the_cmd_script_is_a_batch_file_with_crlf_lines() {
        let script = Dialect::Cmd.script("set A=1\ncall x.bat", "MARK");
        assert_eq!(
            script,
            "@echo off\r\nset A=1\r\ncall x.bat\r\necho.\r\necho MARK\r\nset\r\n"
        );
    }
}
