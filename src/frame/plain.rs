//! The fast path for the usual result line: `{"jsonrpc":"2.0","id":N,"result":…}`, these three
//! members once each in any order, whose result holds only objects, arrays, strings without escapes or control
//! characters, non-negative integers of at most 18 digits, booleans and null.
//!
//! [`plain_result`] decodes such a line with a small byte parser instead of serde's generic
//! machinery, and builds exactly the `Value` and [`Tally`] the serde path builds. Anything else —
//! another member, a repeated member, an escape, a float, a negative or long
//! number, nesting beyond [`MAX_DEPTH`], invalid JSON — returns `None`, and the caller decodes
//! the line on the serde path, which then decides every rule and fault as before.

use serde_json::{Map, Number, Value};

use super::bounds::{BoundsVerdict, Tally};
use super::MAX_DEPTH;

/// Longest number the fast path reads: 18 digits always fit a u64.
const MAX_DIGITS: usize = 18;

/// A result line decoded on the fast path: what the serde path would have found.
#[derive(Debug)]
pub(super) struct PlainResult {
    /// The `id` member.
    pub(super) id: u64,
    /// The `result` member.
    pub(super) result: Value,
    /// The result's JSON bounds verdict (`None`: a duplicate key, only a walk can tell).
    pub(super) bounds: Option<BoundsVerdict>,
}

/// Decodes `text` on the fast path, or `None` when it is no line the fast path reads.
pub(super) fn plain_result(text: &str) -> Option<PlainResult> {
    let mut p = Parser {
        bytes: text.as_bytes(),
        text,
        at: 0,
        tally: Tally::default(),
    };
    p.token(b'{')?;
    let (mut jsonrpc, mut id, mut result) = (false, None, None);
    for member in 0..3 {
        if member > 0 {
            p.token(b',')?;
        }
        p.token(b'"')?;
        match p.string()? {
            "jsonrpc" if !jsonrpc => {
                p.token(b':')?;
                p.token(b'"')?;
                p.literal(b"2.0\"")?;
                jsonrpc = true;
            }
            "id" if id.is_none() => {
                p.token(b':')?;
                p.skip_ws();
                id = Some(p.digits()?);
            }
            "result" if result.is_none() => {
                p.token(b':')?;
                p.skip_ws();
                result = Some(p.value(0)?);
            }
            _ => return None,
        }
    }
    p.token(b'}')?;
    p.skip_ws();
    if p.at != p.bytes.len() || !jsonrpc {
        return None;
    }
    Some(PlainResult {
        id: id?,
        result: result?,
        bounds: p.tally.verdict(),
    })
}

struct Parser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
    tally: Tally,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// JSON whitespace.
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Whitespace, then the byte `b`.
    fn token(&mut self, b: u8) -> Option<()> {
        self.skip_ws();
        (self.peek()? == b).then(|| self.at += 1)
    }

    fn literal(&mut self, lit: &[u8]) -> Option<()> {
        self.bytes[self.at..]
            .starts_with(lit)
            .then(|| self.at += lit.len())
    }

    /// A non-negative integer of at most [`MAX_DIGITS`] digits, without a leading zero, not
    /// followed by a fraction or an exponent.
    fn digits(&mut self) -> Option<u64> {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        let digits = &self.bytes[start..self.at];
        let plain = !digits.is_empty()
            && digits.len() <= MAX_DIGITS
            && (digits[0] != b'0' || digits.len() == 1)
            && !matches!(self.peek(), Some(b'.' | b'e' | b'E'));
        plain.then(|| digits.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0')))
    }

    /// The text of a string whose opening quote was just read, without escapes or control
    /// characters; the closing quote is consumed.
    fn string(&mut self) -> Option<&str> {
        let start = self.at;
        loop {
            match self.peek()? {
                b'"' => break,
                b'\\' | 0x00..=0x1f => return None,
                _ => self.at += 1,
            }
        }
        // Both ends are ASCII quotes inside a `str`: char boundaries.
        let s = &self.text[start..self.at];
        self.at += 1;
        Some(s)
    }

    /// One value at `depth` (whitespace before it already skipped).
    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'{' => {
                self.at += 1;
                self.object(depth)
            }
            b'[' => {
                self.at += 1;
                self.array(depth)
            }
            b'"' => {
                self.at += 1;
                let s = self.string()?.to_owned();
                self.tally.string(depth, &s);
                Some(Value::String(s))
            }
            b't' => self.scalar(depth, b"true", Value::Bool(true)),
            b'f' => self.scalar(depth, b"false", Value::Bool(false)),
            b'n' => self.scalar(depth, b"null", Value::Null),
            b'0'..=b'9' => {
                let start = self.at;
                let n = self.digits()?;
                // Without a leading zero, the digits are the serialized number.
                self.tally.scalar(depth, self.at - start);
                Some(Value::Number(Number::from(n)))
            }
            _ => None,
        }
    }

    fn scalar(&mut self, depth: usize, lit: &[u8], value: Value) -> Option<Value> {
        self.literal(lit)?;
        self.tally.scalar(depth, lit.len());
        Some(value)
    }

    /// The members of an object whose `{` was just read.
    fn object(&mut self, depth: usize) -> Option<Value> {
        self.tally.enter(depth);
        let mut map = Map::new();
        self.skip_ws();
        if self.peek()? == b'}' {
            self.at += 1;
        } else {
            loop {
                self.token(b'"')?;
                let key = self.string()?.to_owned();
                self.tally.key(&key);
                self.token(b':')?;
                self.skip_ws();
                let value = self.value(depth + 1)?;
                if map.insert(key, value).is_some() {
                    self.tally.duplicate();
                }
                self.skip_ws();
                match self.peek()? {
                    b',' => self.at += 1,
                    b'}' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.tally.object(map.len());
        Some(Value::Object(map))
    }

    /// The items of an array whose `[` was just read.
    fn array(&mut self, depth: usize) -> Option<Value> {
        self.tally.enter(depth);
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek()? == b']' {
            self.at += 1;
        } else {
            loop {
                self.skip_ws();
                items.push(self.value(depth + 1)?);
                self.skip_ws();
                match self.peek()? {
                    b',' => self.at += 1,
                    b']' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.tally.array(items.len());
        Some(Value::Array(items))
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
            Ok((Envelope::Result(plain.result), plain.bounds)),
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
}
