//! Operator log lines for provider faults: a retirement after a call failed, and an admission
//! failure. Each names the provider id, the phase, the code and the last lines of the plugin's
//! stderr ring. These lines go to the host's own log (the `log` crate) only, never into a
//! plugin_tool output.
//!
//! A retirement is logged once the plugin's stderr has closed (or its connection is dropped),
//! so the lines a crashing plugin wrote just before it died are in the tail: the coordinator
//! may see the fault a moment before the stderr thread has stored them. See
//! [`super::StderrRing::report_when_closed`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::error::{Error, ErrorCode};

pub(crate) use super::stderr_ring::Retirement;
use super::stderr_ring::{StderrLine, StderrRing};

/// How many of the last stderr lines a fault log line carries.
pub const FAULT_LOG_STDERR_LINES: usize = 5;

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

/// Logs `retirement` once the plugin's stderr has closed, or at once when it already has.
pub(crate) fn report(ring: &Mutex<StderrRing>, retirement: Retirement) {
    let due = ring.lock().report_when_closed(retirement);
    if let Some((retirement, lines)) = due {
        retirement.log(&lines);
    }
}

/// Whether a plugin that exits on its own does so while idle: admitted (armed) and no call in
/// flight. Such an exit is logged as a retirement in phase `idle`; an exit during admission or
/// a call is logged by that request's own failure, one the host caused is not logged.
#[derive(Debug)]
pub(crate) struct IdleWatch {
    id: String,
    armed: AtomicBool,
    calls: AtomicUsize,
}

/// Marks one call in flight on an [`IdleWatch`] until dropped.
pub(crate) struct InCall<'a>(&'a IdleWatch);

impl Drop for InCall<'_> {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::AcqRel);
    }
}

impl IdleWatch {
    /// A watch for provider `id`, not armed until admission succeeded.
    pub(crate) fn new(id: &str) -> IdleWatch {
        IdleWatch {
            id: id.to_string(),
            armed: AtomicBool::new(false),
            calls: AtomicUsize::new(0),
        }
    }

    /// The provider was admitted: from now on an exit with no call in flight is an idle death.
    pub(crate) fn arm(&self) {
        self.armed.store(true, Ordering::Release);
    }

    /// Marks a call in flight until the guard is dropped.
    pub(crate) fn in_call(&self) -> InCall<'_> {
        self.calls.fetch_add(1, Ordering::AcqRel);
        InCall(self)
    }

    /// The retirement to log for an exit the host did not cause, when the plugin was idle.
    pub(crate) fn idle_exit(&self) -> Option<Retirement> {
        let idle = self.armed.load(Ordering::Acquire) && self.calls.load(Ordering::Acquire) == 0;
        idle.then(|| Retirement {
            id: self.id.clone(),
            phase: "idle",
            code: ErrorCode::Eof,
        })
    }
}

/// Logs a failed admission of provider `id` at `level` with the tail of its stderr `lines`
/// (`check` names the candidate of a check).
pub(crate) fn log_admission_failure(
    level: log::Level,
    check: bool,
    id: &str,
    error: &Error,
    lines: &[StderrLine],
) {
    let phase = error.phase().map_or("spawn", |p| p.as_str());
    let what = if check { "check candidate" } else { "provider" };
    log::log!(
        level,
        "plugin {what} {id:?} failed admission: phase {phase}, code {}; stderr tail: {}",
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
