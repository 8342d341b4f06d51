//! The trace context of a request: a W3C `traceparent` (version `00`) taken from the caller
//! (the HTTP header, or MCP `params._meta.traceparent`) or made fresh, and the request's log
//! fields (runner, plugin, tool, action, dispatch, duration) as they become known.
//!
//! The context belongs to the thread that runs the request, for as long as it runs: a front
//! end opens it with [`begin`] (the HTTP server for a whole exchange, the dispatcher around a
//! request otherwise); every log line written on that thread meanwhile can carry it
//! ([`current_fields`]), and the HTTP client sends it on a front hop with the same trace id and
//! a new parent id. It never reaches a plugin: the plugin protocol has no such field.

use std::cell::RefCell;

/// The header (and `_meta` key) that carries the context.
pub const TRACEPARENT: &str = "traceparent";

/// A W3C trace context: a trace id, the caller's span (parent) id and the trace flags.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: [u8; 16],
    parent_id: [u8; 8],
    flags: u8,
}

impl std::fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.header_value())
    }
}

impl TraceContext {
    /// Parses a `traceparent` value: `00-` 32 lower-case hex digits (the trace id) `-` 16
    /// (the parent id) `-` 2 (the flags), exactly 55 bytes. Another version, upper-case hex,
    /// an all-zero id or any other shape is `None` (the caller then gets a fresh context).
    pub fn parse(value: &str) -> Option<TraceContext> {
        let b = value.as_bytes();
        if b.len() != 55 || &b[..3] != b"00-" || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let mut trace_id = [0u8; 16];
        let mut parent_id = [0u8; 8];
        let mut flags = [0u8; 1];
        hex_into(&b[3..35], &mut trace_id)?;
        hex_into(&b[36..52], &mut parent_id)?;
        hex_into(&b[53..55], &mut flags)?;
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(TraceContext {
            trace_id,
            parent_id,
            flags: flags[0],
        })
    }

    /// A fresh context: random ids, flags `00` (this process records no trace). The ids come
    /// from a per-thread generator seeded once from the system's random source (a trace id
    /// only needs to be unpredictable enough not to collide, and asking the kernel twice per
    /// request cost two system calls on every hop); should that source fail, the seed comes
    /// from the clock and a counter.
    pub fn fresh() -> TraceContext {
        let mut bytes = [0u8; 24];
        random_bytes(&mut bytes);
        if bytes[..16] == [0; 16] {
            fallback_bytes(&mut bytes);
        }
        let mut trace_id = [0u8; 16];
        let mut parent_id = [0u8; 8];
        trace_id.copy_from_slice(&bytes[..16]);
        parent_id.copy_from_slice(&bytes[16..]);
        if parent_id == [0; 8] {
            parent_id[7] = 1;
        }
        TraceContext {
            trace_id,
            parent_id,
            flags: 0,
        }
    }

    /// `value` parsed, or a fresh context when it is absent or not valid.
    pub fn from_value_or_fresh(value: Option<&str>) -> TraceContext {
        value
            .and_then(TraceContext::parse)
            .unwrap_or_else(TraceContext::fresh)
    }

    /// The context to send on a hop: the same trace id and flags, a new parent id.
    pub fn child(&self) -> TraceContext {
        let fresh = TraceContext::fresh();
        TraceContext {
            parent_id: fresh.parent_id,
            ..*self
        }
    }

    /// The trace id, 32 lower-case hex digits.
    pub fn trace_id(&self) -> String {
        hex(&self.trace_id)
    }

    /// The parent id, 16 lower-case hex digits.
    pub fn parent_id(&self) -> String {
        hex(&self.parent_id)
    }

    /// The `traceparent` value.
    pub fn header_value(&self) -> String {
        let bytes = self.header_bytes();
        // Hex digits and dashes only.
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The `traceparent` value as its 55 ASCII bytes, without an allocation (a request head
    /// is written from them).
    pub fn header_bytes(&self) -> [u8; 55] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [b'-'; 55];
        out[..2].copy_from_slice(b"00");
        let hex = [
            (3, &self.trace_id[..]),
            (36, &self.parent_id[..]),
            (53, &[self.flags][..]),
        ];
        for (at, bytes) in hex {
            for (i, b) in bytes.iter().enumerate() {
                out[at + 2 * i] = DIGITS[usize::from(b >> 4)];
                out[at + 2 * i + 1] = DIGITS[usize::from(b & 0xf)];
            }
        }
        out
    }
}

fn hex_into(digits: &[u8], out: &mut [u8]) -> Option<()> {
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(())
}

fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() * 2);
    push_hex(&mut text, bytes);
    text
}

/// Appends `bytes` to `text` as lower-case hex digits.
fn push_hex(text: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 15)] as char);
    }
}

/// Fills `bytes` from this thread's SplitMix64 generator, seeded on first use.
fn random_bytes(bytes: &mut [u8; 24]) {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<Option<u64>> = const { Cell::new(None) };
    }
    STATE.with(|state| {
        let mut x = state.get().unwrap_or_else(|| {
            let seed = crate::random_bytes().unwrap_or_else(|| {
                let mut seed = [0u8; 24];
                fallback_bytes(&mut seed);
                seed
            });
            let [a, b, c] =
                [0, 8, 16].map(|i| u64::from_le_bytes(seed[i..i + 8].try_into().expect("8 bytes")));
            a ^ b.rotate_left(21) ^ c.rotate_left(42)
        });
        for chunk in bytes.chunks_exact_mut(8) {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
        }
        state.set(Some(x));
    });
}

/// Distinct, non-zero bytes without the system's random source.
fn fallback_bytes(bytes: &mut [u8; 24]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    bytes[..8].copy_from_slice(&nanos.to_be_bytes());
    bytes[8..16].copy_from_slice(&n.to_be_bytes());
    bytes[16..].copy_from_slice(&(nanos ^ n.rotate_left(32) | 1).to_be_bytes());
}

/// What a log line of a request carries besides its message: the trace id and, once known,
/// the request's runner, plugin, tool, action, dispatch state and duration. Names come from the
/// configuration or a binding (never a caller's string); no value of an argument.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestFields {
    /// The trace id (32 hex digits).
    pub trace_id: String,
    /// The runner id.
    pub runner: Option<String>,
    /// The plugin id.
    pub plugin: Option<String>,
    /// The tool name.
    pub tool: Option<String>,
    /// The `plugin_tool` action.
    pub action: Option<&'static str>,
    /// The dispatch state of the answer (`not_started`, `completed`, `outcome_unknown`).
    pub dispatch: Option<&'static str>,
    /// How long the gateway took, in milliseconds.
    pub duration_ms: Option<u64>,
}

/// The request running on this thread.
struct Current {
    trace: TraceContext,
    runner: Option<String>,
    plugin: Option<String>,
    tool: Option<String>,
    action: Option<&'static str>,
    dispatch: Option<&'static str>,
    duration_ms: Option<u64>,
}

thread_local! {
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// The request context opened by [`begin`]; dropping it closes it (also on unwinding).
#[must_use = "the context lasts only while the scope is held"]
pub struct TraceScope(());

impl std::fmt::Debug for TraceScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceScope")
    }
}

impl Drop for TraceScope {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| c.borrow_mut().take());
    }
}

/// Opens the request context of this thread with `trace` (a fresh one when `None`), or, when
/// one is already open (an HTTP exchange whose MCP message names its own), puts `trace` in
/// its place and returns `None` (the open scope closes it).
pub fn begin(trace: Option<TraceContext>) -> Option<TraceScope> {
    CURRENT
        .try_with(|c| {
            let mut current = c.borrow_mut();
            match (&mut *current, trace) {
                (Some(open), Some(trace)) => {
                    open.trace = trace;
                    None
                }
                (Some(_), None) => None,
                (None, trace) => {
                    *current = Some(Current {
                        trace: trace.unwrap_or_else(TraceContext::fresh),
                        runner: None,
                        plugin: None,
                        tool: None,
                        action: None,
                        dispatch: None,
                        duration_ms: None,
                    });
                    Some(TraceScope(()))
                }
            }
        })
        .ok()
        .flatten()
}

/// The trace context of the request running on this thread, if any.
pub fn current() -> Option<TraceContext> {
    CURRENT
        .try_with(|c| c.borrow().as_ref().map(|open| open.trace))
        .ok()
        .flatten()
}

/// The log fields of the request running on this thread, if any (for the log format).
pub fn current_fields() -> Option<RequestFields> {
    CURRENT
        .try_with(|c| {
            c.borrow().as_ref().map(|open| RequestFields {
                trace_id: open.trace.trace_id(),
                runner: open.runner.clone(),
                plugin: open.plugin.clone(),
                tool: open.tool.clone(),
                action: open.action,
                dispatch: open.dispatch,
                duration_ms: open.duration_ms,
            })
        })
        .ok()
        .flatten()
}

/// Records what the request addressed (names from the configuration or a binding).
#[inline]
pub(crate) fn note_target(runner: Option<&str>, plugin: Option<&str>, tool: Option<&str>) {
    let _ = CURRENT.try_with(|c| {
        if let Some(open) = c.borrow_mut().as_mut() {
            open.runner = runner.map(str::to_string);
            open.plugin = plugin.map(str::to_string);
            open.tool = tool.map(str::to_string);
        }
    });
}

/// Records how the request ended.
pub(crate) fn note_finished(
    action: Option<&'static str>,
    dispatch: Option<&'static str>,
    duration_ms: u64,
) {
    let _ = CURRENT.try_with(|c| {
        if let Some(open) = c.borrow_mut().as_mut() {
            open.action = action;
            open.dispatch = dispatch;
            open.duration_ms = Some(duration_ms);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn fresh_contexts_differ_within_and_across_threads() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let fresh = TraceContext::fresh();
            assert_ne!(fresh.trace_id, [0; 16]);
            assert_ne!(fresh.parent_id, [0; 8]);
            assert!(seen.insert(fresh.trace_id), "a trace id came twice");
        }
        let other = std::thread::spawn(|| TraceContext::fresh().trace_id)
            .join()
            .unwrap();
        assert!(seen.insert(other), "another thread repeated a trace id");
    }

    #[test]
    fn a_valid_traceparent_round_trips() {
        let trace = TraceContext::parse(VALID).unwrap();
        assert_eq!(trace.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(trace.parent_id(), "00f067aa0ba902b7");
        assert_eq!(trace.header_value(), VALID);
    }

    #[test]
    fn malformed_values_are_refused() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-é",
        ] {
            assert_eq!(TraceContext::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn fresh_and_child_contexts() {
        let a = TraceContext::fresh();
        let b = TraceContext::fresh();
        assert_ne!(a.trace_id(), b.trace_id());
        assert_eq!(TraceContext::parse(&a.header_value()), Some(a));
        let child = a.child();
        assert_eq!(child.trace_id(), a.trace_id());
        assert_ne!(child.parent_id(), a.parent_id());
        let fallback = TraceContext::from_value_or_fresh(Some("garbage"));
        assert_eq!(
            TraceContext::parse(&fallback.header_value()),
            Some(fallback)
        );
    }

    #[test]
    fn a_scope_holds_the_context_and_an_inner_one_replaces_it() {
        assert_eq!(current(), None);
        let outer = TraceContext::parse(VALID).unwrap();
        let scope = begin(Some(outer));
        assert!(scope.is_some());
        assert_eq!(current(), Some(outer));
        let inner = TraceContext::fresh();
        assert!(begin(Some(inner)).is_none());
        assert_eq!(current(), Some(inner));
        assert!(begin(None).is_none());
        note_target(Some("local"), Some("fx"), None);
        note_finished(Some("call"), Some("completed"), 3);
        let fields = current_fields().unwrap();
        assert_eq!(fields.trace_id, inner.trace_id());
        assert_eq!(fields.plugin.as_deref(), Some("fx"));
        assert_eq!(fields.duration_ms, Some(3));
        drop(scope);
        assert_eq!(current(), None);
        assert_eq!(current_fields(), None);
    }
}
