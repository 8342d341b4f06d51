//! Operator log lines for provider faults: a retirement after a call failed, and an admission
//! failure. Each names the provider id, the phase, the code and the last lines of the plugin's
//! stderr ring. These lines go to the host's own log (the `log` crate) only, never into a
//! plugin_tool output.
//!
//! A retirement is logged once the plugin's stderr has closed (or its connection is dropped),
//! so the lines a crashing plugin wrote just before it died are in the tail: the coordinator
//! may see the fault a moment before the stderr thread has stored them. See
//! [`super::StderrRing::report_when_closed`].

use crate::error::{Error, ErrorCode};

use super::stderr_ring::StderrLine;

/// How many of the last stderr lines a fault log line carries.
pub const FAULT_LOG_STDERR_LINES: usize = 5;

/// A retirement waiting to be logged: which provider, in which phase, with which code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Retirement {
    pub(crate) id: String,
    pub(crate) phase: &'static str,
    pub(crate) code: ErrorCode,
}

impl Retirement {
    /// Logs the retirement at warn with the tail of `lines`.
    pub(crate) fn log(&self, lines: &[StderrLine]) {
        log::warn!(
            "plugin provider {:?} retired: phase {}, code {}; stderr tail: {}",
            self.id,
            self.phase,
            self.code.as_str(),
            stderr_tail(lines)
        );
    }
}

/// Logs a failed admission of provider `id` at warn with the tail of its stderr `lines`.
pub(crate) fn log_admission_failure(id: &str, error: &Error, lines: &[StderrLine]) {
    let phase = error.phase().map_or("spawn", |p| p.as_str());
    log::warn!(
        "plugin provider {id:?} failed admission: phase {phase}, code {}; stderr tail: {}",
        error.code().as_str(),
        stderr_tail(lines)
    );
}

/// The last [`FAULT_LOG_STDERR_LINES`] lines, each quoted and escaped (no control character or
/// newline of a plugin reaches the host log), joined with ` | `; `(empty)` when there are none.
pub(crate) fn stderr_tail(lines: &[StderrLine]) -> String {
    let start = lines.len().saturating_sub(FAULT_LOG_STDERR_LINES);
    let quoted: Vec<String> = lines[start..]
        .iter()
        .map(|line| {
            let cut = if line.truncated { " (cut)" } else { "" };
            format!("\"{}\"{cut}", line.text.escape_default())
        })
        .collect();
    if quoted.is_empty() {
        "(empty)".to_string()
    } else {
        quoted.join(" | ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> StderrLine {
        StderrLine {
            text: text.to_string(),
            truncated: false,
        }
    }

    #[test]
    fn the_tail_keeps_the_last_lines_quoted() {
        let lines: Vec<StderrLine> = (0..8).map(|i| line(&format!("l{i}"))).collect();
        assert_eq!(
            stderr_tail(&lines),
            "\"l3\" | \"l4\" | \"l5\" | \"l6\" | \"l7\""
        );
        assert_eq!(stderr_tail(&[]), "(empty)");
    }

    #[test]
    fn control_characters_and_newlines_are_escaped() {
        // The ring already maps bytes to printable ASCII; a line built elsewhere is escaped too.
        let tail = stderr_tail(&[line("a\nb\u{1b}[31m\r\"")]);
        assert!(!tail.chars().any(|c| c.is_control()), "{tail}");
        assert!(tail.starts_with("\"a\\nb\\u{1b}[31m\\r\\\""), "{tail}");
    }
}
