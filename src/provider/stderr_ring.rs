//! The bounded ring of a plugin's recent stderr lines, and the operator log lines of provider
//! faults that carry its tail (a retirement after a failed call or an idle exit, a failed
//! admission): provider id, phase, code and the last lines, to the host's own log only, never
//! into a plugin_tool output. A retirement is logged once stderr has closed, so the lines a
//! crashing plugin wrote as it died are in the tail ([`StderrRing::report_when_closed`]).

use std::collections::VecDeque;

use parking_lot::Mutex;

use crate::error::ErrorCode;

/// Most lines kept.
pub const STDERR_MAX_LINES: usize = 64;
/// Longest kept line, in bytes; longer lines are cut and marked truncated.
pub const STDERR_MAX_LINE_BYTES: usize = 1024;
/// Most bytes kept over all lines.
pub const STDERR_MAX_TOTAL_BYTES: usize = 32 * 1024;

/// One kept stderr line, already mapped to printable ASCII.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StderrLine {
    /// The mapped text (tab → space, printable ASCII kept, CR dropped, other bytes → `?`).
    pub text: String,
    /// True when the line was longer than `STDERR_MAX_LINE_BYTES` (1 KiB) and was cut.
    pub truncated: bool,
}

/// Recent stderr lines of one plugin, bounded in lines, line length and total bytes.
#[derive(Debug, Default)]
pub struct StderrRing {
    lines: VecDeque<StderrLine>,
    total: usize,
    current: String,
    current_truncated: bool,
    /// True once the plugin's stderr reached EOF (or failed): no more lines will come.
    closed: bool,
    /// A retirement to log once stderr has closed.
    pending: Option<Retirement>,
}

/// A retirement waiting to be logged once stderr closes: which provider, in which phase, with
/// which code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Retirement {
    pub(crate) id: String,
    pub(crate) phase: &'static str,
    pub(crate) code: ErrorCode,
    /// The failure's local detail (an exit status, a timeout's value and key, …).
    pub(crate) detail: Option<String>,
}

/// A retirement to log now, with the ring's lines at that moment.
pub(crate) type DueReport = (Retirement, Vec<StderrLine>);

impl StderrRing {
    /// An empty ring.
    pub fn new() -> StderrRing {
        StderrRing::default()
    }

    /// Maps and appends raw stderr bytes, splitting on LF; lines that would be evicted anyway
    /// are skipped unmapped (docs/DECISIONS.md D-PROV-7).
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        let mut rest = match start_of_last_lines(bytes, STDERR_MAX_LINES) {
            Some(start) => {
                self.lines.clear();
                self.total = 0;
                self.current.clear();
                self.current_truncated = false;
                &bytes[start..]
            }
            None => bytes,
        };
        loop {
            match rest.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    self.append(&rest[..end]);
                    self.finish_line();
                    rest = &rest[end + 1..];
                }
                None => {
                    self.append(rest);
                    return;
                }
            }
        }
    }

    /// Appends one segment without LF to the unfinished line, mapped and cut to the line bound.
    fn append(&mut self, segment: &[u8]) {
        for (i, &b) in segment.iter().enumerate() {
            if self.current.len() >= STDERR_MAX_LINE_BYTES {
                if segment[i..].iter().any(|&b| b != b'\r') {
                    self.current_truncated = true;
                }
                return;
            }
            match b {
                b'\r' => {}
                b'\t' => self.current.push(' '),
                0x20..=0x7e => self.current.push(b as char),
                _ => self.current.push('?'),
            }
        }
    }

    fn finish_line(&mut self) {
        let line = StderrLine {
            text: std::mem::take(&mut self.current),
            truncated: std::mem::take(&mut self.current_truncated),
        };
        self.total += line.text.len();
        self.lines.push_back(line);
        while self.lines.len() > STDERR_MAX_LINES || self.total > STDERR_MAX_TOTAL_BYTES {
            match self.lines.pop_front() {
                Some(old) => self.total -= old.text.len(),
                None => break,
            }
        }
    }

    /// Hands over a retirement to log once stderr has closed: returned at once (with the lines)
    /// when it already has, else kept until [`StderrRing::close`] (the first one wins).
    pub(crate) fn report_when_closed(&mut self, retirement: Retirement) -> Option<DueReport> {
        if self.closed {
            return Some((retirement, self.lines()));
        }
        self.pending.get_or_insert(retirement);
        None
    }

    /// Marks stderr closed; returns the retirement waiting for that, if any, with the lines.
    pub(crate) fn close(&mut self) -> Option<DueReport> {
        self.closed = true;
        self.take_pending()
    }

    /// The retirement still waiting (stderr never closed), with the lines, if any.
    pub(crate) fn take_pending(&mut self) -> Option<DueReport> {
        self.pending.take().map(|r| (r, self.lines()))
    }

    /// The kept lines, oldest first, plus the unfinished last line if any; the unfinished line
    /// counts against the same bounds (older lines make room for it).
    pub fn lines(&self) -> Vec<StderrLine> {
        let partial = !self.current.is_empty() || self.current_truncated;
        let (mut skip, mut total) = (0, self.total);
        if partial {
            total += self.current.len();
            while skip < self.lines.len()
                && (self.lines.len() - skip + 1 > STDERR_MAX_LINES
                    || total > STDERR_MAX_TOTAL_BYTES)
            {
                total -= self.lines[skip].text.len();
                skip += 1;
            }
        }
        let mut out: Vec<StderrLine> = self.lines.iter().skip(skip).cloned().collect();
        if partial {
            out.push(StderrLine {
                text: self.current.clone(),
                truncated: self.current_truncated,
            });
        }
        out
    }
}

/// When `bytes` completes more than `keep` lines, the index where the last `keep` complete lines
/// start (everything before it would be evicted).
fn start_of_last_lines(bytes: &[u8], keep: usize) -> Option<usize> {
    let mut end = bytes.len();
    let mut seen = 0;
    while let Some(i) = bytes[..end].iter().rposition(|&b| b == b'\n') {
        seen += 1;
        if seen == keep + 1 {
            return Some(i + 1);
        }
        end = i;
    }
    None
}

/// How many of the last stderr lines a fault log line carries.
pub const FAULT_LOG_STDERR_LINES: usize = 5;

impl Retirement {
    /// Logs the retirement at warn with the tail of `lines`.
    pub(crate) fn log(&self, lines: &[StderrLine]) {
        let detail = self.detail.as_deref().unwrap_or("");
        log::warn!(
            "plugin provider {:?} retired: phase {}, code {}{}{detail}; stderr tail: {}",
            self.id,
            self.phase,
            self.code.as_str(),
            if detail.is_empty() { "" } else { ": " },
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

    fn retirement(phase: &'static str) -> Retirement {
        Retirement {
            id: "p".into(),
            phase,
            code: crate::error::ErrorCode::Eof,
            detail: None,
        }
    }

    #[test]
    fn a_retirement_waits_for_stderr_to_close_and_the_first_one_wins() {
        let mut ring = StderrRing::new();
        assert!(ring.report_when_closed(retirement("call")).is_none());
        assert!(ring.report_when_closed(retirement("idle")).is_none());
        ring.push_bytes(b"last words\n");
        let (due, lines) = ring.close().expect("due once stderr closed");
        assert_eq!(due.phase, "call");
        assert_eq!(lines[0].text, "last words");
        assert!(ring.take_pending().is_none());
        // After close, a report is due at once.
        let (due, _) = ring
            .report_when_closed(retirement("call"))
            .expect("due at once");
        assert_eq!(due.phase, "call");
    }

    #[test]
    fn bytes_are_mapped_to_printable_ascii() {
        let mut ring = StderrRing::new();
        ring.push_bytes(b"a\tb\r\x01\xffc\n");
        assert_eq!(ring.lines()[0].text, "a b??c");
    }

    #[test]
    fn long_lines_are_cut_and_marked() {
        let mut ring = StderrRing::new();
        ring.push_bytes(&vec![b'x'; 5000]);
        ring.push_bytes(b"\n");
        let lines = ring.lines();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].text.len(), STDERR_MAX_LINE_BYTES);
        assert!(lines[0].truncated);
    }

    #[test]
    fn keeps_at_most_64_lines() {
        let mut ring = StderrRing::new();
        for i in 0..200 {
            ring.push_bytes(format!("line {i}\n").as_bytes());
        }
        let lines = ring.lines();
        assert_eq!(lines.len(), STDERR_MAX_LINES);
        assert_eq!(lines.last().unwrap().text, "line 199");
    }

    #[test]
    fn keeps_at_most_32_kib() {
        let mut ring = StderrRing::new();
        for _ in 0..60 {
            ring.push_bytes(&vec![b'y'; 1000]);
            ring.push_bytes(b"\n");
        }
        let total: usize = ring.lines().iter().map(|l| l.text.len()).sum();
        assert!(total <= STDERR_MAX_TOTAL_BYTES);
        assert_eq!(ring.lines().len(), 32);
    }

    #[test]
    fn unfinished_line_is_visible() {
        let mut ring = StderrRing::new();
        ring.push_bytes(b"done\npartial");
        let lines = ring.lines();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].text, "partial");
    }

    #[test]
    fn a_chunk_with_more_lines_than_kept_keeps_the_last_ones() {
        let mut ring = StderrRing::new();
        ring.push_bytes(b"old partial");
        let chunk: String = (0..500).map(|i| format!("line {i}\n")).collect();
        ring.push_bytes(chunk.as_bytes());
        let lines = ring.lines();
        assert_eq!(lines.len(), STDERR_MAX_LINES);
        assert_eq!(lines[0].text, "line 436");
        assert_eq!(lines.last().unwrap().text, "line 499");
    }

    #[test]
    fn chunked_and_whole_input_give_the_same_ring() {
        let text: String = (0..300)
            .map(|i| format!("l{i}\t{}\r\n", "z".repeat(i * 7)))
            .collect();
        let mut whole = StderrRing::new();
        whole.push_bytes(text.as_bytes());
        let mut chunked = StderrRing::new();
        for chunk in text.as_bytes().chunks(97) {
            chunked.push_bytes(chunk);
        }
        assert_eq!(whole.lines(), chunked.lines());
    }

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
