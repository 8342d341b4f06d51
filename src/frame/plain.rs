//! The fast path for the usual result line: `{"jsonrpc":"2.0","id":N,"result":…}`, these three
//! members once each in any order, whose result holds only objects, arrays, strings without
//! escapes or control characters, non-negative integers of at most 18 digits, booleans and null.
//!
//! [`plain_result`] checks such a line with a small byte parser instead of serde's generic
//! machinery, builds nothing, and finds the result's place in the line and the [`Tally`] the
//! serde path builds. Anything else — another member, a repeated member, an escape, a float, a
//! negative or long number, nesting beyond [`MAX_DEPTH`], invalid JSON — returns `None`, and the
//! caller decodes the line on the serde path, which then decides every rule and fault as
//! before.

use std::ops::Range;

use serde_json::Value;

use super::bounds::{BoundsVerdict, Tally};
use super::cursor::Cursor;
use super::MAX_DEPTH;

/// Most members of one object whose keys are compared for duplicates; an object with more
/// leaves its bounds to a walk (the verdict is `None`), so the comparisons stay linear in the
/// line.
const MAX_COMPARED_KEYS: usize = 32;

/// A result line checked on the fast path: what the serde path would have found.
#[derive(Debug)]
pub(super) struct PlainResult {
    /// The `id` member.
    pub(super) id: u64,
    /// Where the `result` member's value is in the line (no whitespace on either side).
    pub(super) result: Range<usize>,
    /// The result's JSON bounds verdict (`None`: a duplicate key, or an object too large to
    /// compare its keys; only a walk can tell).
    pub(super) bounds: Option<BoundsVerdict>,
}

/// The id and the result's text of a line that begins `{"jsonrpc":"2.0","id":N,"result":` or
/// `{"id":N,"jsonrpc":"2.0","result":` and ends with `}` (whitespace aside), the result not
/// checked: when that text is one valid JSON value, it is the line's result, the line is
/// valid JSON and its envelope is valid (for a reader that checks the result anyway, as a
/// call's does). The oracle of [`usual_result_for`].
#[cfg(test)]
pub(crate) fn usual_result(text: &str) -> Option<(u64, &str)> {
    let mut p = Parser {
        c: Cursor::new(text),
        tally: Tally::default(),
    };
    let id = p.usual_start()?;
    Some((id, result_text(text, p.c.at)?))
}

/// [`usual_result`] of a line whose id is `id`: the line's start is compared with the two
/// usual starts written with `id` (its digits as the encoder writes them), not parsed. `None`
/// for any other line, whatever its id.
pub(crate) fn usual_result_for(text: &str, id: u64) -> Option<&str> {
    const ID_FIRST: &[u8] = b"{\"id\":";
    const ID_FIRST_REST: &[u8] = b",\"jsonrpc\":\"2.0\",\"result\":";
    const JSONRPC_FIRST: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
    const JSONRPC_FIRST_REST: &[u8] = b",\"result\":";
    let mut buffer = [0u8; 20];
    let digits = decimal(id, &mut buffer);
    // Longer ids are left to the parse (`Cursor::digits` reads at most 18 digits).
    if digits.len() > 18 {
        return None;
    }
    let bytes = text.as_bytes();
    let rest = match bytes.strip_prefix(ID_FIRST) {
        Some(rest) => rest.strip_prefix(digits)?.strip_prefix(ID_FIRST_REST)?,
        None => bytes
            .strip_prefix(JSONRPC_FIRST)?
            .strip_prefix(digits)?
            .strip_prefix(JSONRPC_FIRST_REST)?,
    };
    result_text(text, text.len() - rest.len())
}

/// The decimal digits of `n` (as the encoder writes an id), at the end of `buffer`.
fn decimal(mut n: u64, buffer: &mut [u8; 20]) -> &[u8] {
    const PAIRS: [u8; 200] = {
        let mut pairs = [0u8; 200];
        let mut i = 0;
        while i < 100 {
            pairs[2 * i] = b'0' + (i / 10) as u8;
            pairs[2 * i + 1] = b'0' + (i % 10) as u8;
            i += 1;
        }
        pairs
    };
    let mut at = buffer.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        at -= 2;
        buffer[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        at -= 2;
        let pair = n as usize * 2;
        buffer[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        buffer[at] = b'0' + n as u8;
    }
    &buffer[at..]
}

/// The result's text in `text` from `start` (whitespace aside) up to the line's closing `}`
/// (whitespace aside), when the line ends with one.
fn result_text(text: &str, start: usize) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut at = start;
    while at < bytes.len() && is_json_space(bytes[at]) {
        at += 1;
    }
    let mut end = text.len();
    while end > at && is_json_space(bytes[end - 1]) {
        end -= 1;
    }
    (end > at && bytes[end - 1] == b'}').then_some(())?;
    end -= 1;
    while end > at && is_json_space(bytes[end - 1]) {
        end -= 1;
    }
    // Both ends are next to ASCII bytes: char boundaries.
    Some(&text[at..end])
}

fn is_json_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Checks `text` on the fast path, or `None` when it is no line the fast path reads.
pub(super) fn plain_result(text: &str) -> Option<PlainResult> {
    let mut p = Parser {
        c: Cursor::new(text),
        tally: Tally::default(),
    };
    // The two usual orders (a sorted map's, and the protocol's), compact: the envelope read
    // at once.
    if let Some(id) = p.usual_start() {
        return p.result_then_end(id);
    }
    p.c.at = 0;
    p.c.token(b'{')?;
    let (mut jsonrpc, mut id, mut result) = (false, None, None);
    for member in 0..3 {
        if member > 0 {
            p.c.token(b',')?;
        }
        p.c.token(b'"')?;
        match p.c.string()?.0 {
            "jsonrpc" if !jsonrpc => {
                p.c.token(b':')?;
                p.c.token(b'"')?;
                p.c.literal(b"2.0\"")?;
                jsonrpc = true;
            }
            "id" if id.is_none() => {
                p.c.token(b':')?;
                p.c.skip_ws();
                id = Some(p.c.digits()?.0);
            }
            "result" if result.is_none() => {
                p.c.token(b':')?;
                p.c.skip_ws();
                let start = p.c.at;
                p.value(0)?;
                result = Some(start..p.c.at);
            }
            _ => return None,
        }
    }
    p.c.token(b'}')?;
    p.c.skip_ws();
    if !p.c.at_end() || !jsonrpc {
        return None;
    }
    Some(PlainResult {
        id: id?,
        result: result?,
        bounds: p.tally.verdict(),
    })
}

/// A response's `result` read on the fast path, kept as the plugin wrote it: one valid JSON value
/// in the fast path's subset (objects, arrays, strings without escapes or control characters,
/// non-negative integers of at most 18 digits without a leading zero, booleans, null), with
/// the plugin's whitespace inside it but none around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainJson(String);

impl PlainJson {
    pub(super) fn new(text: &str) -> PlainJson {
        PlainJson(text.to_owned())
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        &self.0
    }

    /// The value it holds, parsed (a duplicate key keeps its last value).
    pub fn to_value(&self) -> Value {
        // The fast path only keeps text that is valid JSON.
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}

struct Parser<'a> {
    c: Cursor<'a>,
    tally: Tally,
}

/// The keys of one object, for the duplicate check: the first few on the stack, more in a
/// vector made only for an object that has them.
#[derive(Default)]
struct Keys<'a> {
    /// How many members the object has.
    len: usize,
    first: [&'a str; 8],
    more: Vec<&'a str>,
}

impl<'a> Keys<'a> {
    /// Notes one more key: false when it repeats an earlier one, or when the object has more
    /// than [`MAX_COMPARED_KEYS`] members (only a walk can tell then).
    fn note(&mut self, key: &'a str) -> bool {
        let index = self.len;
        self.len += 1;
        let (first, more) = (&self.first[..index.min(8)], &self.more);
        if index >= MAX_COMPARED_KEYS || first.contains(&key) || more.contains(&key) {
            return false;
        }
        match index < 8 {
            true => self.first[index] = key,
            false => self.more.push(key),
        }
        true
    }
}

impl<'a> Parser<'a> {
    /// The id of a line that begins `{"jsonrpc":"2.0","id":N,"result":` or
    /// `{"id":N,"jsonrpc":"2.0","result":`, the result's first byte next.
    fn usual_start(&mut self) -> Option<u64> {
        const JSONRPC: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
        if self.c.bytes.starts_with(JSONRPC) {
            self.c.at = JSONRPC.len();
            let (id, _) = self.c.digits()?;
            self.c.literal(b",\"result\":")?;
            return Some(id);
        }
        self.c.literal(b"{\"id\":")?;
        let (id, _) = self.c.digits()?;
        self.c.literal(b",\"jsonrpc\":\"2.0\",\"result\":")?;
        Some(id)
    }

    /// The result value, then the line's closing brace and its end.
    fn result_then_end(mut self, id: u64) -> Option<PlainResult> {
        self.c.skip_ws();
        let start = self.c.at;
        self.value(0)?;
        let result = start..self.c.at;
        self.c.token(b'}')?;
        self.c.skip_ws();
        self.c.at_end().then(|| PlainResult {
            id,
            result,
            bounds: self.tally.verdict(),
        })
    }

    /// One value at `depth` (whitespace before it already skipped).
    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.c.peek()? {
            b'{' => {
                self.c.at += 1;
                self.object(depth)
            }
            b'[' => {
                self.c.at += 1;
                self.array(depth)
            }
            b'"' => {
                self.c.at += 1;
                let (s, _) = self.c.string()?;
                self.tally.unescaped_string(depth, s.len());
                Some(())
            }
            b't' => self.scalar(depth, b"true"),
            b'f' => self.scalar(depth, b"false"),
            b'n' => self.scalar(depth, b"null"),
            b'0'..=b'9' => {
                // Without a leading zero, the digits are the serialized number.
                let (_, len) = self.c.digits()?;
                self.tally.scalar(depth, len);
                Some(())
            }
            _ => None,
        }
    }

    fn scalar(&mut self, depth: usize, lit: &[u8]) -> Option<()> {
        self.c.literal(lit)?;
        self.tally.scalar(depth, lit.len());
        Some(())
    }

    /// The members of an object whose `{` was just read.
    fn object(&mut self, depth: usize) -> Option<()> {
        self.tally.enter(depth);
        let mut keys = Keys::default();
        self.c.skip_ws();
        if self.c.peek()? == b'}' {
            self.c.at += 1;
        } else {
            loop {
                self.c.token(b'"')?;
                let (key, ascii) = self.c.string()?;
                match ascii {
                    true => self.tally.plain_key(key.len()),
                    false => self.tally.key(key),
                }
                if !keys.note(key) {
                    self.tally.duplicate();
                }
                self.c.token(b':')?;
                self.c.skip_ws();
                self.value(depth + 1)?;
                self.c.skip_ws();
                match self.c.peek()? {
                    b',' => self.c.at += 1,
                    b'}' => {
                        self.c.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.tally.object(keys.len);
        Some(())
    }

    /// The items of an array whose `[` was just read.
    fn array(&mut self, depth: usize) -> Option<()> {
        self.tally.enter(depth);
        let mut len = 0;
        self.c.skip_ws();
        if self.c.peek()? == b']' {
            self.c.at += 1;
        } else {
            loop {
                self.c.skip_ws();
                self.value(depth + 1)?;
                len += 1;
                self.c.skip_ws();
                match self.c.peek()? {
                    b',' => self.c.at += 1,
                    b']' => {
                        self.c.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.tally.array(len);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::envelope::{validate_raw_bounded, Envelope, RawEnvelope};
    use super::*;

    /// The fast path's reading of `text`, checked against the serde path: when the fast path
    /// reads the line, the serde path must find the same id, result and bounds verdict.
    fn fast_agrees(text: &str) -> bool {
        let Some(plain) = plain_result(text) else {
            return false;
        };
        let raw: RawEnvelope = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("the fast path read invalid JSON {text:?}: {e}"));
        assert_eq!(
            validate_raw_bounded(raw, plain.id),
            Ok((
                Envelope::PlainResult(PlainJson::new(&text[plain.result.clone()])),
                plain.bounds
            )),
            "{text}"
        );
        true
    }

    fn line(result: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":41,"result":{result}}}"#)
    }

    #[test]
    fn reads_the_usual_result_lines_as_the_serde_path_does() {
        let deep = format!("{}0{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let results = [
            r#"{"content":[{"type":"text","text":"hello"}],"isError":false}"#,
            r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":""}],"structuredContent":{"n":0,"m":123456789012345678,"x":null,"y":true,"z":[],"w":{}},"isError":true}"#,
            r#"{"content":[{"type":"text","text":"é € \u{7f} ~"}]}"#,
            r#"{"a":1,"a":[2,3]}"#,
            r#"{"":""}"#,
            "null",
            "[]",
            "7",
            r#""text""#,
            &deep,
        ];
        for result in results {
            let text = line(&result.replace("\\u{7f}", "\u{7f}"));
            assert!(fast_agrees(&text), "the fast path left {text:?} to serde");
        }
        // Any member order.
        for text in [
            r#"{"id":41,"jsonrpc":"2.0","result":{"content":[]}}"#,
            r#"{"result":[],"id":41,"jsonrpc":"2.0"}"#,
        ] {
            assert!(fast_agrees(text), "the fast path left {text:?} to serde");
        }
        // Whitespace as Python's json.dumps writes it, and around every token.
        let spaced = [
            r#"{"jsonrpc": "2.0", "id": 41, "result": {"content": [{"type": "text", "text": "hi"}], "isError": false}}"#,
            " {\t\"jsonrpc\" :\"2.0\" ,\r\"id\"\n: 41 , \"result\" : [ 1 , { } , [ ] ] } \t",
            // The usual start, then whitespace: read at once, or member by member.
            "{\"jsonrpc\":\"2.0\",\"id\":41,\"result\": {\"a\": [1]} } ",
            "{\"jsonrpc\":\"2.0\",\"id\":41 ,\"result\":1}",
            "{\"jsonrpc\":\"2.0\",\"id\":41,\"result\" :1}",
            "{\"id\":41,\"jsonrpc\":\"2.0\",\"result\":\t[1]}",
            "{\"id\":41,\"jsonrpc\":\"2.0\" ,\"result\":1}",
        ];
        for text in spaced {
            assert!(fast_agrees(text), "the fast path left {text:?} to serde");
        }
    }

    #[test]
    fn leaves_every_other_line_to_the_serde_path() {
        let too_deep = format!(
            "{}0{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        let results = [
            r#""esc\"aped""#,
            r#""new\nline""#,
            "\"raw\tcontrol\"",
            "1.5",
            "1e3",
            "1E3",
            "-1",
            "1234567890123456789",
            "01",
            "[1,]",
            r#"{"a":1,}"#,
            "{,}",
            "[1 2]",
            r#"{"a" 1}"#,
            "tru",
            "nul",
            r#""unclosed"#,
            &too_deep,
        ];
        for result in results {
            let text = line(result);
            assert!(!fast_agrees(&text), "the fast path read {text:?}");
        }
        let lines = [
            r#"{"id":41,"jsonrpc":"2.0","id":41,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":41}"#,
            r#"{"jsonrpc":"2.0","result":1}"#,
            r#"{"jsonrpc":"2.0","id":41,"result":1,"extra":2}"#,
            r#"{"jsonrpc":"2.0","id":41,"result":1}x"#,
            r#"{"jsonrpc":"2.0","id":41,"result":1"#,
            r#"{"jsonrpc":"2.0 ","id":41,"result":1}"#,
            r#"{"jsonrpc":"1.0","id":41,"result":1}"#,
            r#"{"jsonrpcx":"2.0","id":41,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":41.0,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":4e1,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":041,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":-41,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":"41","result":1}"#,
            r#"{"jsonrpc":"2.0","id":41,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":41,"method":"x","result":1}"#,
            r#"{"jsonrpc":"2.0","id":41,"result":1}{}"#,
            "",
        ];
        for text in lines {
            assert!(!fast_agrees(text), "the fast path read {text:?}");
        }
    }

    /// A small deterministic generator of JSON values, strings drawn from pieces that take
    /// every branch of the fast path's string scan.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self, below: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % below
        }

        fn string(&mut self) -> String {
            const PIECES: [&str; 9] = ["a", "text", "é", "€", "\u{7f}", " ", "\"", "\\", "\n"];
            (0..self.next(4))
                .map(|_| PIECES[self.next(PIECES.len() as u64) as usize])
                .collect()
        }

        fn value(&mut self, depth: usize) -> Value {
            let kinds = if depth >= MAX_DEPTH + 2 { 6 } else { 8 };
            match self.next(kinds) {
                0 => Value::Null,
                1 => Value::Bool(self.next(2) == 1),
                2 => Value::from(self.next(1 << 31) << self.next(33)),
                3 => Value::from(-(self.next(1000) as i64)),
                4 => Value::from(self.next(1000) as f64 / 8.0),
                5 => Value::String(self.string()),
                6 => Value::Array((0..self.next(4)).map(|_| self.value(depth + 1)).collect()),
                _ => Value::Object(
                    (0..self.next(4))
                        .map(|_| (self.string(), self.value(depth + 1)))
                        .collect(),
                ),
            }
        }
    }

    #[test]
    fn agrees_with_the_serde_path_on_generated_results() {
        let mut gen = Gen(14);
        let mut read = 0;
        for _ in 0..3000 {
            let result = gen.value(0);
            let compact = serde_json::to_string(&result).expect("serialize");
            let pretty = serde_json::to_string_pretty(&result).expect("serialize");
            for text in [line(&compact), line(&pretty)] {
                if fast_agrees(&text) {
                    read += 1;
                }
            }
        }
        // Both paths are exercised: most generated results have something the fast path
        // leaves to serde, but a good share has not.
        assert!(
            (600..5400).contains(&read),
            "the fast path read {read} of 6000 lines"
        );
    }

    #[test]
    fn the_start_written_with_the_id_reads_what_the_parsed_start_reads() {
        // Ids around every digit count, and lines of both usual starts, broken or not: the
        // result the comparison finds is the one the parse finds when its id is that id.
        let mut ids: Vec<u64> = vec![0, 1, 9, 10, 99, 100, 101, 4201, u64::MAX];
        ids.extend((1..19).flat_map(|e| [10u64.pow(e) - 1, 10u64.pow(e), 10u64.pow(e) + 7]));
        let starts = |id: &str| {
            [
                format!(r#"{{"id":{id},"jsonrpc":"2.0","result":"#),
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#),
                format!(r#"{{"id": {id},"jsonrpc":"2.0","result":"#),
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result": "#),
                format!(r#"{{"id":{id},"result":"#),
                format!(r#"{{"id":{id}.0,"jsonrpc":"2.0","result":"#),
                format!(r#"{{"id":0{id},"jsonrpc":"2.0","result":"#),
                format!(r#"{{"id":-{id},"jsonrpc":"2.0","result":"#),
                format!(r#"{{"id":{id}1,"jsonrpc":"2.0","result":"#),
                format!(r#"{{"id":"{id}","jsonrpc":"2.0","result":"#),
                format!(r#" {{"id":{id},"jsonrpc":"2.0","result":"#),
            ]
        };
        let ends = ["{}}", "{} } ", "{}", "1}\r\n", " {\"a\":1}\t}", "}", "[] ]"];
        let mut found = 0;
        for &id in &ids {
            for other in [id, id.wrapping_add(1), id / 10] {
                for start in starts(&other.to_string()) {
                    for end in ends {
                        let text = format!("{start}{end}");
                        let parsed = usual_result(&text)
                            .filter(|&(line_id, _)| line_id == id)
                            .map(|(_, result)| result);
                        let compared = usual_result_for(&text, id);
                        assert_eq!(compared, parsed, "{text:?} for id {id}");
                        found += usize::from(compared.is_some());
                    }
                }
            }
        }
        assert!(found > 100, "{found}");
    }

    #[test]
    fn an_id_is_written_as_display_writes_it() {
        let mut buffer = [0u8; 20];
        for n in (0..1000)
            .chain((1..20).map(|e| 10u64.pow(e)))
            .chain([u64::MAX - 1, u64::MAX])
        {
            assert_eq!(decimal(n, &mut buffer), n.to_string().as_bytes());
        }
    }
}
