//! The tool result of a call, read from its text in one scan, and its canonical text.
//!
//! A result's canonical form is what serde_json writes for its validated map (keys sorted,
//! compact): `{"content":[{"text":…,"type":"text"},…],"isError":…,"structuredContent":…}`.
//! [`scan_result`] reads the plugin's text once: it checks that the text is one JSON value
//! within the JSON bounds (docs/PROTOCOL.md §3) and a result of the usual kind, finds its
//! shape, and keeps the text as it came when the plugin already wrote the canonical form
//! (serde_json plugins do) or writes the canonical form otherwise. Anything the scan is not sure
//! of — an unknown or repeated member, a wrong type, an escape, a number that is not a
//! non-negative integer of at most 18 digits, object keys out of order in `structuredContent`,
//! more than [`MAX_CONTENT_ITEMS`] items, a broken bound — returns `None`, and the caller
//! decides it on the `Value` path (`catalog::validate_tool_result`), which then gives every
//! verdict as before.
//!
//! [`CanonicalResult`] is the canonical text as a `RawValue`, made only here: from a scanned
//! text or from one serde_json wrote ([`CanonicalResult::write`]), so that the one `unsafe`
//! conversion below sees only text this module knows to be one JSON value.
//!
//! Oracle: the `Value` path, decoding the text and validating the value; the tests in
//! `catalog::result` hold the two to the same verdict and the same bytes on generated results.

use serde_json::value::RawValue;
use serde_json::Value;

use super::bytes::string_run;
use super::cursor::Cursor;
use crate::frame::bounds::{Tally, MAX_CONTENT_ITEMS, MAX_RESULT_BYTES, MAX_TEXT_BYTES};
use crate::frame::MAX_DEPTH;

/// The members of a result, found in its text.
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Shape<'a> {
    /// The `content` array, as written.
    content: &'a str,
    /// The `isError` member.
    is_error: Option<bool>,
    /// The `structuredContent` object, as written.
    structured: Option<&'a str>,
    /// `structuredContent` has whitespace between its tokens.
    structured_spaced: bool,
    /// The whole text is already the canonical form.
    canonical: bool,
}

/// The canonical text and where a member that sorts between `isError` and
/// `structuredContent` goes in it.
struct Canonical {
    /// The canonical JSON text.
    text: String,
    /// The offset of `,"structuredContent":`, or of the closing brace.
    insert_at: usize,
}

/// The member key that follows `isError` in the canonical text.
const STRUCTURED_KEY: &str = ",\"structuredContent\":";

/// Reads a result's text when it is one JSON value within the bounds and a valid result of the
/// usual kind.
fn scan(text: &str) -> Option<Shape<'_>> {
    scan_canonical(text).or_else(|| scan_members(text))
}

/// [`scan`] of any text: member by member, with the tally.
fn scan_members(text: &str) -> Option<Shape<'_>> {
    let mut s = Scanner::new(text);
    let mut shape = Shape {
        content: "",
        is_error: None,
        structured: None,
        structured_spaced: false,
        canonical: true,
    };
    let (mut content, mut rank, mut members) = (false, 0, 0);
    s.token(b'{')?;
    s.tally.enter(0);
    loop {
        s.skip_ws();
        let key = s.member_key()?;
        s.tally.plain_key(key.len());
        members += 1;
        s.skip_ws();
        let this_rank = match key {
            "content" if !content => {
                let start = s.c.at;
                shape.canonical &= s.content(|_| {})?;
                shape.content = s.c.since(start);
                content = true;
                1
            }
            "isError" if shape.is_error.is_none() => {
                shape.is_error = Some(s.boolean(1)?);
                2
            }
            "structuredContent" if shape.structured.is_none() => {
                let start = s.c.at;
                let spaced_before = s.spaced;
                s.spaced = false;
                (s.c.peek()? == b'{').then_some(())?;
                s.value(1)?;
                shape.structured = Some(s.c.since(start));
                shape.structured_spaced = s.spaced;
                s.spaced |= spaced_before;
                3
            }
            _ => return None,
        };
        shape.canonical &= this_rank > rank;
        rank = this_rank;
        s.skip_ws();
        match s.c.next()? {
            b',' => {}
            b'}' => break,
            _ => return None,
        }
    }
    s.tally.object(members);
    s.skip_ws();
    if !content || !s.c.at_end() {
        return None;
    }
    match s.tally.verdict() {
        Some(Ok(bytes)) if bytes <= MAX_RESULT_BYTES => {}
        _ => return None,
    }
    shape.canonical &= !s.spaced && shape.is_error.is_some();
    Some(shape)
}

/// The shape [`scan`] finds in a result written in its canonical form without
/// `structuredContent` — `{"content":[{"text":…,"type":"text"},…],"isError":…}`, compact, texts
/// without escapes — read by comparing it with that form, or `None` for any other text. No
/// tally is needed: such a result is as deep as three, holds at most 3 + 3 ×
/// [`MAX_CONTENT_ITEMS`] values and plain keys, and its compact length is its own, so its bounds
/// hold when its length does.
fn scan_canonical(text: &str) -> Option<Shape<'_>> {
    const START: &[u8] = b"{\"content\":[";
    const ITEM: &[u8] = b"{\"text\":\"";
    const ITEM_END: &[u8] = b",\"type\":\"text\"}";
    const IS_ERROR: &[u8] = b"],\"isError\":";
    let bytes = text.as_bytes();
    if text.len() > MAX_RESULT_BYTES || !bytes.starts_with(START) {
        return None;
    }
    let mut at = START.len();
    if bytes.get(at) != Some(&b']') {
        let mut items = 0;
        loop {
            if items == MAX_CONTENT_ITEMS || !bytes[at..].starts_with(ITEM) {
                return None;
            }
            at += ITEM.len();
            // The text, up to its closing quote (a stop at anything else is no plain text).
            at += string_run(&bytes[at..]).0;
            if bytes.get(at) != Some(&b'"') || !bytes[at + 1..].starts_with(ITEM_END) {
                return None;
            }
            at += 1 + ITEM_END.len();
            items += 1;
            match bytes.get(at) {
                Some(b',') => at += 1,
                Some(b']') => break,
                _ => return None,
            }
        }
    }
    let content = &text[START.len() - 1..at + 1];
    let is_error = match &bytes[at..] {
        [rest @ .., b'}'] if rest.starts_with(IS_ERROR) => match &rest[IS_ERROR.len()..] {
            b"false" => false,
            b"true" => true,
            _ => return None,
        },
        _ => return None,
    };
    Some(Shape {
        content,
        is_error: Some(is_error),
        structured: None,
        structured_spaced: false,
        canonical: true,
    })
}

impl Shape<'_> {
    /// When the text `scan` read (of `len` bytes) is already canonical: where a member that
    /// sorts between `isError` and `structuredContent` goes in it.
    fn insert_at_in_place(&self, len: usize) -> Option<usize> {
        self.canonical.then(|| match self.structured {
            Some(structured) => len - 1 - structured.len() - STRUCTURED_KEY.len(),
            None => len - 1,
        })
    }

    /// The canonical text, written from the members.
    fn write_canonical(&self) -> Canonical {
        let structured = self
            .structured
            .map_or(0, |s| s.len() + STRUCTURED_KEY.len());
        let mut out = String::with_capacity(64 + self.content.len() + structured);
        out.push_str("{\"content\":[");
        let mut items = Scanner::new(self.content);
        let mut first = true;
        // Read once already: the same items again.
        let _ = items.content(|text| {
            if !std::mem::take(&mut first) {
                out.push(',');
            }
            out.push_str("{\"text\":\"");
            out.push_str(text);
            out.push_str("\",\"type\":\"text\"}");
        });
        out.push_str("],\"isError\":");
        out.push_str(match self.is_error {
            Some(true) => "true",
            _ => "false",
        });
        let insert_at = out.len();
        if let Some(structured) = self.structured {
            out.push_str(STRUCTURED_KEY);
            match self.structured_spaced {
                false => out.push_str(structured),
                true => push_compact(&mut out, structured),
            }
        }
        out.push('}');
        Canonical {
            text: out,
            insert_at,
        }
    }
}

/// A result read from its text by one scan, in its canonical form: valid JSON within the
/// bounds and of the result's shape; only the output schema is left to check.
pub(crate) struct ScannedResult {
    canonical: Canonical,
    is_error: bool,
    structured: bool,
}

/// Reads a tools/call `result` from its text, or `None` when the scan is not sure of it (the
/// text is then to be decoded and validated on the `Value` path, which decides it).
pub(crate) fn scan_result(text: &str) -> Option<ScannedResult> {
    let shape = scan(text)?;
    let canonical = match shape.insert_at_in_place(text.len()) {
        Some(insert_at) => Canonical {
            text: text.to_owned(),
            insert_at,
        },
        None => shape.write_canonical(),
    };
    Some(ScannedResult {
        canonical,
        is_error: shape.is_error == Some(true),
        structured: shape.structured.is_some(),
    })
}

impl ScannedResult {
    /// The `isError` member (false when absent).
    pub(crate) fn is_error(&self) -> bool {
        self.is_error
    }

    /// The canonical text of `structuredContent`, when the result has it.
    pub(crate) fn structured(&self) -> Option<&str> {
        let text = &self.canonical.text;
        let start = self.canonical.insert_at + STRUCTURED_KEY.len();
        self.structured.then(|| &text[start..text.len() - 1])
    }

    /// The canonical text.
    pub(crate) fn into_canonical(self) -> CanonicalResult {
        CanonicalResult::new(self.canonical)
    }
}

/// The canonical text of a validated result, as a `RawValue` (written out as it is), and where
/// a member that sorts between `isError` and `structuredContent` goes in it.
#[derive(Debug, Clone)]
pub(crate) struct CanonicalResult {
    json: Box<RawValue>,
    /// The offset of `,"structuredContent":` in `json`, or of its closing brace. (At most
    /// [`MAX_RESULT_BYTES`]: a `u32`, so a result travels in fewer bytes.)
    insert_at: u32,
}

impl CanonicalResult {
    /// The canonical text of a result whose members are validated: serde_json writes them.
    pub(crate) fn write(content: &Value, is_error: bool, structured: Option<&Value>) -> Self {
        let mut text = String::with_capacity(128);
        let push = |text: &mut String, value: &Value| {
            text.push_str(&serde_json::to_string(value).unwrap_or_else(|_| "null".into()))
        };
        text.push_str("{\"content\":");
        push(&mut text, content);
        text.push_str(if is_error {
            ",\"isError\":true"
        } else {
            ",\"isError\":false"
        });
        let insert_at = text.len();
        if let Some(structured) = structured {
            text.push_str(STRUCTURED_KEY);
            push(&mut text, structured);
        }
        text.push('}');
        CanonicalResult::new(Canonical { text, insert_at })
    }

    /// `canonical` as a `RawValue`.
    fn new(canonical: Canonical) -> CanonicalResult {
        CanonicalResult {
            json: raw(canonical.text),
            insert_at: u32::try_from(canonical.insert_at).expect("a result within its bound"),
        }
    }

    /// The canonical JSON text.
    pub(crate) fn as_raw(&self) -> &RawValue {
        &self.json
    }

    /// The canonical JSON text, by value.
    pub(crate) fn into_raw(self) -> Box<RawValue> {
        self.json
    }

    /// The canonical JSON text with `"key":"value"` added where it sorts: `key` must sort
    /// after `isError` and before `structuredContent`; when either needs an escape, the text
    /// as it is.
    pub(crate) fn into_raw_with(self, key: &str, value: &str) -> Box<RawValue> {
        debug_assert!(key > "isError" && key < "structuredContent");
        let plain = |s: &str| string_run(s.as_bytes()).0 == s.len();
        if !plain(key) || !plain(value) {
            return self.json;
        }
        let json = self.json.get();
        let (head, tail) = json.split_at(self.insert_at as usize);
        raw(format!("{head},\"{key}\":\"{value}\"{tail}"))
    }
}

/// `text` as a `RawValue`, not parsed again: every caller in this module hands over one JSON
/// value with no whitespace around it (checked again in debug builds, so in `cargo test`).
fn raw(text: String) -> Box<RawValue> {
    // SAFETY: the texts are a result `scan` read as one valid JSON value (kept as it came, or
    // written again from its members, strings without escapes), a text serde_json wrote
    // (`CanonicalResult::write`), or one of those with a string member of plain text (no `"`,
    // `\` or control character) inserted before `,"structuredContent":` or the closing brace
    // (`into_raw_with`): one JSON value, no whitespace around it. Not `RawValue::from_string`:
    // that parses the text again, half as many instructions again as the whole call
    // (docs/DECISIONS.md 1.38).
    unsafe { RawValue::from_string_unchecked(text) }
}

/// `json` without the whitespace between its tokens (its strings have no escapes, so every
/// `"` opens or closes one).
fn push_compact(out: &mut String, json: &str) {
    let mut in_string = false;
    for c in json.chars() {
        match c {
            '"' => in_string = !in_string,
            ' ' | '\t' | '\n' | '\r' if !in_string => continue,
            _ => {}
        }
        out.push(c);
    }
}

struct Scanner<'a> {
    c: Cursor<'a>,
    /// Whitespace was skipped between two tokens.
    spaced: bool,
    /// The JSON bounds of what was read.
    tally: Tally,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Scanner<'a> {
        Scanner {
            c: Cursor::new(text),
            spaced: false,
            tally: Tally::default(),
        }
    }

    #[inline]
    fn skip_ws(&mut self) {
        self.spaced |= self.c.skip_ws();
    }

    /// Whitespace, then the byte `b`.
    #[inline]
    fn token(&mut self, b: u8) -> Option<()> {
        self.skip_ws();
        (self.c.next()? == b).then_some(())
    }

    /// A member's key and its colon: one of the result's three keys read at once when it is
    /// written compact, else any key.
    #[inline]
    fn member_key(&mut self) -> Option<&'a str> {
        for (lit, key) in [
            (&b"\"content\":"[..], "content"),
            (b"\"isError\":", "isError"),
            (b"\"structuredContent\":", "structuredContent"),
        ] {
            if self.c.literal(lit).is_some() {
                return Some(key);
            }
        }
        self.token(b'"')?;
        let key = self.string()?;
        self.token(b':')?;
        Some(key)
    }

    /// The text of a string whose opening quote was just read (see [`Cursor::string`]).
    #[inline]
    fn string(&mut self) -> Option<&'a str> {
        self.c.string().map(|(s, _)| s)
    }

    /// A string value at `depth` whose opening quote was just read.
    #[inline]
    fn string_value(&mut self, depth: usize) -> Option<&'a str> {
        let s = self.string()?;
        self.tally.unescaped_string(depth, s.len());
        Some(s)
    }

    fn boolean(&mut self, depth: usize) -> Option<bool> {
        let (lit, flag): (&[u8], bool) = match self.c.peek()? {
            b't' => (b"true", true),
            b'f' => (b"false", false),
            _ => return None,
        };
        self.c.literal(lit)?;
        self.tally.scalar(depth, lit.len());
        Some(flag)
    }

    /// The `content` array (depth 1): at most [`MAX_CONTENT_ITEMS`] items, each exactly
    /// `{"type":"text","text":…}` (either order) with a text of at most [`MAX_TEXT_BYTES`],
    /// each text given to `item`; true when every item has `text` first.
    fn content(&mut self, mut item: impl FnMut(&'a str)) -> Option<bool> {
        (self.c.next()? == b'[').then_some(())?;
        self.tally.enter(1);
        self.skip_ws();
        if self.c.peek()? == b']' {
            self.c.at += 1;
            self.tally.array(0);
            return Some(true);
        }
        let (mut items, mut text_first) = (0, true);
        loop {
            if items == MAX_CONTENT_ITEMS {
                return None;
            }
            let (text, first) = self.text_item()?;
            item(text);
            items += 1;
            text_first &= first;
            self.skip_ws();
            match self.c.next()? {
                b',' => self.skip_ws(),
                b']' => break,
                _ => return None,
            }
        }
        self.tally.array(items);
        Some(text_first)
    }

    /// One `{"type":"text","text":…}` item (depth 2): its text, and whether `text` came first.
    fn text_item(&mut self) -> Option<(&'a str, bool)> {
        let start = self.c.at;
        let (text, text_first) = match self.canonical_item() {
            Some(text) => (text, true),
            None => {
                self.c.at = start;
                self.any_item()?
            }
        };
        if text.len() > MAX_TEXT_BYTES {
            return None;
        }
        self.tally.enter(2);
        self.tally.plain_key(4);
        self.tally.plain_key(4);
        self.tally.unescaped_string(3, 4);
        self.tally.unescaped_string(3, text.len());
        self.tally.object(2);
        Some((text, text_first))
    }

    /// The text of an item written `{"text":…,"type":"text"}`, compact.
    fn canonical_item(&mut self) -> Option<&'a str> {
        self.c.literal(b"{\"text\":\"")?;
        let text = self.string()?;
        self.c.literal(b",\"type\":\"text\"}")?;
        Some(text)
    }

    /// The text of an item in either order, spaced or not, and whether `text` came first.
    fn any_item(&mut self) -> Option<(&'a str, bool)> {
        self.token(b'{')?;
        let (mut text, mut typed, mut text_first) = (None, false, false);
        for member in 0..2 {
            if member > 0 {
                self.token(b',')?;
            }
            self.token(b'"')?;
            let key = self.string()?;
            self.token(b':')?;
            self.token(b'"')?;
            let value = self.string()?;
            match key {
                "type" if !typed && value == "text" => typed = true,
                "text" if text.is_none() => {
                    text = Some(value);
                    text_first = member == 0;
                }
                _ => return None,
            }
        }
        self.token(b'}')?;
        Some((text?, text_first))
    }

    /// Any value at `depth` (whitespace before it already skipped): strings without escapes,
    /// non-negative integers of at most 18 digits, and objects whose keys are in
    /// ascending order.
    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let (lit, len): (&[u8], usize) = match self.c.next()? {
            b'{' => return self.object(depth),
            b'[' => return self.array(depth),
            b'"' => return self.string_value(depth).map(drop),
            b't' => (b"rue", 4),
            b'f' => (b"alse", 5),
            b'n' => (b"ull", 4),
            b'0'..=b'9' => {
                self.c.at -= 1;
                let (_, len) = self.c.digits()?;
                self.tally.scalar(depth, len);
                return Some(());
            }
            _ => return None,
        };
        self.c.literal(lit)?;
        self.tally.scalar(depth, len);
        Some(())
    }

    /// The members of an object whose `{` was just read, keys strictly ascending (as a sorted
    /// map writes them, and so without duplicates).
    fn object(&mut self, depth: usize) -> Option<()> {
        self.tally.enter(depth);
        self.skip_ws();
        if self.c.peek()? == b'}' {
            self.c.at += 1;
            self.tally.object(0);
            return Some(());
        }
        let (mut last, mut members): (Option<&str>, usize) = (None, 0);
        loop {
            self.token(b'"')?;
            let (key, ascii) = self.c.string()?;
            if last.is_some_and(|last| last >= key) {
                return None;
            }
            match ascii {
                true => self.tally.plain_key(key.len()),
                false => self.tally.key(key),
            }
            last = Some(key);
            members += 1;
            self.token(b':')?;
            self.skip_ws();
            self.value(depth + 1)?;
            self.skip_ws();
            match self.c.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
        self.tally.object(members);
        Some(())
    }

    /// The items of an array whose `[` was just read.
    fn array(&mut self, depth: usize) -> Option<()> {
        self.tally.enter(depth);
        self.skip_ws();
        if self.c.peek()? == b']' {
            self.c.at += 1;
            self.tally.array(0);
            return Some(());
        }
        let mut items = 0;
        loop {
            self.skip_ws();
            self.value(depth + 1)?;
            items += 1;
            self.skip_ws();
            match self.c.next()? {
                b',' => {}
                b']' => break,
                _ => return None,
            }
        }
        self.tally.array(items);
        Some(())
    }
}

#[cfg(test)]
mod tests;
