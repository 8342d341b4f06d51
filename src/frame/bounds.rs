//! JSON bounds (docs/PROTOCOL.md §3.2, JSON bounds per value), applied to one value at a time.

use serde_json::Value;

/// Deepest nesting allowed (the root is depth 0).
pub const MAX_DEPTH: usize = 16;
/// Most values (every node) in one bounded value.
pub const MAX_NODES: usize = 4096;
/// Longest string value, in bytes.
pub const MAX_STRING_BYTES: usize = 512 * 1024;
/// Longest object key, in bytes; keys may not contain control characters.
pub const MAX_KEY_BYTES: usize = 1024;
/// Most content items in one tools/call result.
pub(crate) const MAX_CONTENT_ITEMS: usize = 32;
/// Longest text of one content item, in bytes.
pub(crate) const MAX_TEXT_BYTES: usize = 512 * 1024;
/// Largest serialized tools/call result, in bytes.
pub(crate) const MAX_RESULT_BYTES: usize = 512 * 1024;

/// Which JSON bound a value broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonBoundsError {
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// More than [`MAX_NODES`] values.
    TooManyNodes,
    /// A string longer than [`MAX_STRING_BYTES`].
    StringTooLong,
    /// A key longer than [`MAX_KEY_BYTES`] or containing a control character.
    InvalidKey,
    /// The compact serialization is longer than the size bound being checked.
    TooLarge,
}

/// Checks `value` against the JSON bounds.
///
/// Every value counts as a node, containers and the root included; object keys do not. The walk
/// stops at the first violation (values are visited depth-first, in document order) and never
/// descends more than `MAX_DEPTH + 1` levels, so any input is safe to check.
pub fn check_json_bounds(value: &Value) -> Result<(), JsonBoundsError> {
    check_json_bounds_sized(value, usize::MAX).map(|_| ())
}

/// Checks `value` against the JSON bounds and against `max_bytes` of compact serialization, in
/// one walk; returns the compact serialized length (exactly what `serde_json::to_vec` would
/// produce). Fails with [`JsonBoundsError::TooLarge`] once the length passes `max_bytes`.
pub fn check_json_bounds_sized(value: &Value, max_bytes: usize) -> Result<usize, JsonBoundsError> {
    check_json_bounds_measured(value, max_bytes).map(|measured| measured.len)
}

/// [`check_json_bounds_sized`], and whether every key and string is plain (see [`Measured`]).
pub(crate) fn check_json_bounds_measured(
    value: &Value,
    max_bytes: usize,
) -> Result<Measured, JsonBoundsError> {
    let mut tally = Tally::default();
    walk(&mut tally, value, 0, max_bytes)?;
    Ok(tally.measured())
}

/// Tallies `value`, found at `depth`, and everything below it, in document order; stops at the
/// first broken bound, before descending below it.
fn walk(
    tally: &mut Tally,
    value: &Value,
    depth: usize,
    max_bytes: usize,
) -> Result<(), JsonBoundsError> {
    tally.node(value, depth, max_bytes)?;
    match value {
        Value::Array(items) => items
            .iter()
            .try_for_each(|v| walk(tally, v, depth + 1, max_bytes)),
        Value::Object(map) => map.iter().try_for_each(|(key, v)| {
            tally.member_key(key, max_bytes)?;
            walk(tally, v, depth + 1, max_bytes)
        }),
        _ => Ok(()),
    }
}

/// What a walk over a value within the bounds found: its compact serialized length, and
/// whether every key and string in it is printable ASCII without `"` or `\` (written between
/// quotes as it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Measured {
    /// The compact serialized length.
    pub(crate) len: usize,
    /// No key or string needs an escape, nor holds anything but printable ASCII.
    pub(crate) plain: bool,
}

/// The bounds verdict of one value: its compact serialized length, or the bound it broke.
pub(crate) type BoundsVerdict = Result<usize, JsonBoundsError>;

/// What a [`BoundedSeed`] found while parsing.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    nodes: usize,
    bytes: usize,
    fault: Option<JsonBoundsError>,
    /// A duplicate key replaced a member already counted: only a walk over the built value
    /// counts exactly what it holds.
    inexact: bool,
    /// A key or string that [`Tally::key`] or [`Tally::string`] counted is not [`is_plain`].
    unplain: bool,
}

impl Tally {
    /// The verdict [`check_json_bounds_sized`](check_json_bounds_sized) with no size
    /// limit gives on the parsed value — the same `Ok` length, and an `Err` exactly when it
    /// fails (when several bounds are broken the kind may be another one) — or `None` when only
    /// a walk can tell (a duplicate key).
    pub(crate) fn verdict(&self) -> Option<BoundsVerdict> {
        match (self.inexact, self.fault) {
            (true, _) => None,
            (false, Some(fault)) => Some(Err(fault)),
            (false, None) => Some(Ok(self.bytes)),
        }
    }

    /// One step of the walk over a built value: `value`'s own share (a node and its bytes,
    /// not what is below it), found at `depth`, then the first broken bound so far or a length
    /// past `max_bytes`. A walk that stops at the first `Err` and otherwise goes on with the
    /// members ([`Tally::member_key`] before each) and items in document order gives
    /// [`check_json_bounds_sized`]'s verdict.
    #[inline(always)]
    pub(crate) fn node(
        &mut self,
        value: &Value,
        depth: usize,
        max_bytes: usize,
    ) -> Result<(), JsonBoundsError> {
        match value {
            Value::Null => self.scalar(depth, 4),
            Value::Bool(b) => self.scalar(depth, bool_len(*b)),
            Value::Number(n) => self.scalar(depth, number_len(n)),
            Value::String(s) => self.string(depth, s),
            Value::Array(items) => {
                self.enter(depth);
                self.array(items.len());
            }
            Value::Object(map) => {
                self.enter(depth);
                self.object(map.len());
            }
        }
        self.settled(max_bytes)
    }

    /// The walk's step before an object member's value: its key, then the verdict so far (see
    /// [`Tally::node`]).
    #[inline]
    pub(crate) fn member_key(
        &mut self,
        key: &str,
        max_bytes: usize,
    ) -> Result<(), JsonBoundsError> {
        self.key(key);
        self.settled(max_bytes)
    }

    /// What the walk over a built value found so far (see [`Tally::node`]).
    pub(crate) fn measured(&self) -> Measured {
        Measured {
            len: self.bytes,
            plain: !self.unplain,
        }
    }

    /// A duplicate key replaced a member already counted.
    pub(super) fn duplicate(&mut self) {
        self.inexact = true;
    }

    fn fail(&mut self, fault: JsonBoundsError) {
        self.fault.get_or_insert(fault);
    }

    /// A value at `depth`: counted as a node, before anything below it.
    pub(crate) fn enter(&mut self, depth: usize) {
        if depth > MAX_DEPTH {
            self.fail(JsonBoundsError::TooDeep);
        }
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            self.fail(JsonBoundsError::TooManyNodes);
        }
    }

    fn add(&mut self, bytes: usize) {
        self.bytes = self.bytes.saturating_add(bytes);
    }

    /// The brackets and commas of an array of `len` items (its items count on their own).
    pub(crate) fn array(&mut self, len: usize) {
        self.add(2 + len.saturating_sub(1));
    }

    /// The braces, colons and commas of an object of `len` members (keys and values count on
    /// their own).
    pub(crate) fn object(&mut self, len: usize) {
        self.add(2 + len + len.saturating_sub(1));
    }

    /// The first broken bound so far, or a length past `max_bytes`.
    fn settled(&self, max_bytes: usize) -> Result<(), JsonBoundsError> {
        match self.fault {
            Some(fault) => Err(fault),
            None if self.bytes > max_bytes => Err(JsonBoundsError::TooLarge),
            None => Ok(()),
        }
    }

    #[inline]
    pub(crate) fn key(&mut self, key: &str) {
        let plain = is_plain(key.as_bytes());
        if key.len() > MAX_KEY_BYTES || (!plain && key.chars().any(char::is_control)) {
            self.fail(JsonBoundsError::InvalidKey);
        }
        self.unplain |= !plain;
        self.add(if plain {
            key.len() + 2
        } else {
            escaped_len(key)
        });
    }

    /// A key of `len` printable ASCII bytes other than `"` and `\` (see [`string_run`]).
    pub(crate) fn plain_key(&mut self, len: usize) {
        if len > MAX_KEY_BYTES {
            self.fail(JsonBoundsError::InvalidKey);
        }
        self.add(len + 2);
    }

    /// A string value of `len` bytes without `"`, `\` or control bytes below 0x20.
    pub(crate) fn unescaped_string(&mut self, depth: usize, len: usize) {
        self.enter(depth);
        if len > MAX_STRING_BYTES {
            self.fail(JsonBoundsError::StringTooLong);
        } else {
            self.add(len + 2);
        }
    }

    #[inline]
    pub(super) fn string(&mut self, depth: usize, s: &str) {
        self.enter(depth);
        if s.len() > MAX_STRING_BYTES {
            self.fail(JsonBoundsError::StringTooLong);
        } else if is_plain(s.as_bytes()) {
            self.add(s.len() + 2);
        } else {
            self.unplain = true;
            self.add(escaped_len(s));
        }
    }

    pub(crate) fn scalar(&mut self, depth: usize, bytes: usize) {
        self.enter(depth);
        self.add(bytes);
    }
}

/// Length of `true` or `false`.
pub(super) fn bool_len(b: bool) -> usize {
    if b {
        4
    } else {
        5
    }
}

/// Length of `s` as a JSON string literal written by serde_json: quotes, two-character escapes
/// for `"` `\` `\b` `\f` `\n` `\r` `\t`, and six characters (`\u00XX`) for other control bytes.
pub(super) fn escaped_len(s: &str) -> usize {
    if is_plain(s.as_bytes()) {
        return s.len() + 2;
    }
    let extra: usize = s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | 0x0c | b'\n' | b'\r' | b'\t' => 1,
            0x00..=0x1f => 5,
            _ => 0,
        })
        .sum();
    s.len() + 2 + extra
}

/// True when every byte is printable ASCII (`0x20..=0x7e`) other than `"` and `\`: such text
/// is written as is between quotes and holds no control character. Eight bytes per step, the
/// last step overlapping the one before; shorter text is read as one word of overlapping
/// pieces (a byte looked at twice changes nothing), so a short key or value costs one step.
#[inline(always)]
pub(crate) fn is_plain(bytes: &[u8]) -> bool {
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"));
    let half = |at: usize| {
        u64::from(u32::from_le_bytes(
            bytes[at..at + 4].try_into().expect("four bytes"),
        ))
    };
    let len = bytes.len();
    match len {
        0 => true,
        1..=3 => {
            // Bytes 0, len / 2 and len - 1 cover them all; the rest is padded with `a`.
            let x = u64::from(bytes[0])
                | u64::from(bytes[len / 2]) << 8
                | u64::from(bytes[len - 1]) << 16
                | u64::from_le_bytes(*b"\0\0\0aaaaa");
            is_plain_word(x.to_le_bytes())
        }
        4..=7 => is_plain_word((half(0) | half(len - 4) << 32).to_le_bytes()),
        _ => {
            let mut words = bytes.chunks_exact(8);
            let plain = words.all(|w| is_plain_word(w.try_into().expect("eight bytes")));
            plain && (len % 8 == 0 || is_plain_word(word(len - 8).to_le_bytes()))
        }
    }
}

/// [`is_plain`] for one word of eight bytes.
fn is_plain_word(word: [u8; 8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    /// Flags (at least) one byte when some byte of `x` is zero, none otherwise.
    fn any_zero(x: u64) -> u64 {
        x.wrapping_sub(ONES) & !x & HIGHS
    }
    let x = u64::from_ne_bytes(word);
    // Below 0x20: `x - 0x20…20` borrows through a high bit that `x` does not have (exact for
    // "any byte below n" with n ≤ 0x80).
    let control = x.wrapping_sub(ONES * 0x20) & !x & HIGHS;
    let special = any_zero(x ^ (ONES * u64::from(b'"')))
        | any_zero(x ^ (ONES * u64::from(b'\\')))
        | any_zero(x ^ (ONES * 0x7f));
    (control | special | (x & HIGHS)) == 0
}

/// Length of a number as serde_json writes it (integers by their digits; floats formatted).
pub(super) fn number_len(n: &serde_json::Number) -> usize {
    fn digits(mut v: u64) -> usize {
        let mut d = 1;
        while v >= 10 {
            v /= 10;
            d += 1;
        }
        d
    }
    if let Some(u) = n.as_u64() {
        digits(u)
    } else if let Some(i) = n.as_i64() {
        1 + digits(i.unsigned_abs())
    } else {
        n.to_string().len()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Map};

    use super::*;

    /// `levels` arrays nested in each other around `null`: the `null` sits at depth `levels`.
    fn nested_arrays(levels: usize) -> Value {
        (0..levels).fold(Value::Null, |inner, _| Value::Array(vec![inner]))
    }

    /// An array holding `n - 1` nulls: `n` nodes in all.
    fn nodes(n: usize) -> Value {
        Value::Array(vec![Value::Null; n - 1])
    }

    fn object_with_key(key: &str) -> Value {
        let mut map = Map::new();
        map.insert(key.to_owned(), json!(1));
        Value::Object(map)
    }

    #[test]
    fn is_plain_agrees_with_a_byte_by_byte_look() {
        // Every kind of byte at every place of text of every length up to three words.
        const BYTES: [u8; 10] = [b'a', b' ', b'~', 0x7f, 0x80, 0xc3, b'"', b'\\', 0x00, 0x1f];
        for len in 0..=24 {
            for at in 0..len.max(1) {
                for &b in &BYTES {
                    let mut bytes = vec![b'x'; len];
                    if len > 0 {
                        bytes[at] = b;
                    }
                    let expected = bytes
                        .iter()
                        .all(|&c| (0x20..=0x7e).contains(&c) && c != b'"' && c != b'\\');
                    assert_eq!(is_plain(&bytes), expected, "{bytes:?}");
                }
            }
        }
    }

    #[test]
    fn escaped_len_is_the_serialized_length() {
        let pieces = [
            "a", "\"", "\\", "\n", "\u{1}", "\u{7f}", "é", "\u{85}", "~", " ", "€",
        ];
        for len in 0..20 {
            for (i, piece) in pieces.iter().enumerate() {
                // Plain text of every length with one special piece at every position.
                for at in 0..=len {
                    let s = format!("{}{piece}{}", "x".repeat(at), "y".repeat(len - at));
                    let expected = serde_json::to_string(&s).unwrap().len();
                    assert_eq!(escaped_len(&s), expected, "piece {i} at {at} of {len}");
                }
                let plain = "p".repeat(len);
                assert!(is_plain(plain.as_bytes()));
                assert_eq!(escaped_len(&plain), len + 2);
            }
        }
    }

    #[test]
    fn a_control_character_anywhere_in_a_key_is_invalid() {
        for len in 1..20 {
            for at in 0..len {
                for control in ["\u{0}", "\u{1f}", "\u{7f}", "\u{9f}"] {
                    let key = format!("{}{control}{}", "k".repeat(at), "k".repeat(len - at - 1));
                    assert_eq!(
                        check_json_bounds(&object_with_key(&key)),
                        Err(JsonBoundsError::InvalidKey)
                    );
                }
                let key = "k".repeat(len);
                assert_eq!(check_json_bounds(&object_with_key(&key)), Ok(()));
            }
        }
    }

    #[test]
    fn scalars_are_within_bounds() {
        for v in [
            json!(null),
            json!(true),
            json!(1.5),
            json!("s"),
            json!([]),
            json!({}),
        ] {
            assert_eq!(check_json_bounds(&v), Ok(()));
        }
    }

    #[test]
    fn depth_sixteen_is_accepted() {
        assert_eq!(check_json_bounds(&nested_arrays(MAX_DEPTH)), Ok(()));
    }

    #[test]
    fn depth_seventeen_is_too_deep() {
        let v = nested_arrays(MAX_DEPTH + 1);
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::TooDeep));
    }

    #[test]
    fn object_nesting_counts_toward_depth() {
        let v = (0..=MAX_DEPTH).fold(json!(1), |inner, _| json!({ "k": inner }));
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::TooDeep));
    }

    #[test]
    fn very_deep_value_does_not_overflow_the_stack() {
        let v = nested_arrays(100_000);
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::TooDeep));
        // Dropping is recursive in serde_json; unwind the nesting by hand.
        let mut v = v;
        while let Value::Array(mut items) = v {
            v = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn max_nodes_is_accepted() {
        assert_eq!(check_json_bounds(&nodes(MAX_NODES)), Ok(()));
    }

    #[test]
    fn one_node_past_max_is_too_many() {
        let v = nodes(MAX_NODES + 1);
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::TooManyNodes));
    }

    #[test]
    fn containers_count_as_nodes() {
        // The root object, MAX_NODES / 2 inner arrays and as many nulls: one node too many.
        let mut map = Map::new();
        for i in 0..MAX_NODES / 2 {
            map.insert(i.to_string(), json!([null]));
        }
        let v = Value::Object(map);
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::TooManyNodes));
    }

    #[test]
    fn string_of_max_bytes_is_accepted() {
        let v = Value::String("a".repeat(MAX_STRING_BYTES));
        assert_eq!(check_json_bounds(&v), Ok(()));
    }

    #[test]
    fn string_one_byte_too_long_is_rejected() {
        let v = json!({ "k": ["a".repeat(MAX_STRING_BYTES + 1)] });
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::StringTooLong));
    }

    #[test]
    fn key_of_max_bytes_is_accepted() {
        let v = object_with_key(&"k".repeat(MAX_KEY_BYTES));
        assert_eq!(check_json_bounds(&v), Ok(()));
    }

    #[test]
    fn key_one_byte_too_long_is_invalid() {
        let v = object_with_key(&"k".repeat(MAX_KEY_BYTES + 1));
        assert_eq!(check_json_bounds(&v), Err(JsonBoundsError::InvalidKey));
    }

    #[test]
    fn empty_key_is_accepted() {
        let v = object_with_key("");
        assert_eq!(check_json_bounds(&v), Ok(()));
    }

    #[test]
    fn key_with_control_character_is_invalid() {
        for key in ["a\nb", "\t", "x\u{0}", "\u{7f}", "\u{85}"] {
            let v = json!([object_with_key(key)]);
            assert_eq!(
                check_json_bounds(&v),
                Err(JsonBoundsError::InvalidKey),
                "{key:?}"
            );
        }
    }

    #[test]
    fn key_with_unicode_is_accepted() {
        assert_eq!(check_json_bounds(&object_with_key("clé ✓")), Ok(()));
    }

    #[test]
    fn sized_walk_counts_exactly_what_serde_json_writes() {
        let samples = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-1),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.5),
            json!(-0.000123),
            json!(1e300),
            json!(""),
            json!("plain"),
            json!(
                "quote \" backslash \\ newline \n tab \t cr \r bell \u{7} del \u{7f} nul \u{0} ü ✓"
            ),
            json!([]),
            json!({}),
            json!([[], {}, [1, [2, [3]]]]),
            json!({"a": {"b": [1, "x", null]}, "key \"q\"": {}, "ü": [true, false]}),
        ];
        for sample in samples {
            let expected = serde_json::to_vec(&sample).unwrap().len();
            assert_eq!(
                check_json_bounds_sized(&sample, usize::MAX),
                Ok(expected),
                "{sample}"
            );
        }
    }

    #[test]
    fn sized_walk_stops_past_the_size_bound() {
        let value = json!({"text": "x".repeat(100)});
        let len = serde_json::to_vec(&value).unwrap().len();
        assert_eq!(check_json_bounds_sized(&value, len), Ok(len));
        assert_eq!(
            check_json_bounds_sized(&value, len - 1),
            Err(JsonBoundsError::TooLarge)
        );
    }
}
