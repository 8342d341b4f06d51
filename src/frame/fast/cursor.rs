//! A cursor over one JSON text: the byte-level steps of the tool result's scan.

use super::bytes::string_run;

/// Longest number a fast path reads: 18 digits always fit a u64.
const MAX_DIGITS: usize = 18;

/// A position in one JSON text.
pub(super) struct Cursor<'a> {
    /// The text's bytes.
    pub(super) bytes: &'a [u8],
    text: &'a str,
    /// The next byte to read.
    pub(super) at: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`.
    pub(super) fn new(text: &'a str) -> Cursor<'a> {
        Cursor {
            bytes: text.as_bytes(),
            text,
            at: 0,
        }
    }

    /// The next byte, not consumed.
    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// The next byte, consumed.
    #[inline]
    pub(super) fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    /// Skips JSON whitespace; true when there was some.
    #[inline]
    pub(super) fn skip_ws(&mut self) -> bool {
        let start = self.at;
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
        self.at != start
    }

    /// The bytes `lit`, when they come next.
    #[inline]
    pub(super) fn literal(&mut self, lit: &[u8]) -> Option<()> {
        let end = self.at + lit.len();
        (self.bytes.get(self.at..end) == Some(lit)).then(|| self.at = end)
    }

    /// The text of a string whose opening quote was just read, without escapes or control
    /// characters, and whether it is all printable ASCII; the closing quote is consumed.
    #[inline]
    pub(super) fn string(&mut self) -> Option<(&'a str, bool)> {
        let (len, ascii) = string_run(&self.bytes[self.at..]);
        let end = self.at + len;
        (self.bytes.get(end) == Some(&b'"')).then_some(())?;
        // Both ends are ASCII quotes inside a `str`: char boundaries.
        let s = &self.text[self.at..end];
        self.at = end + 1;
        Some((s, ascii))
    }

    /// A non-negative integer of at most 18 digits, without a leading zero, not followed by a
    /// fraction or an exponent: its value and its length.
    pub(super) fn digits(&mut self) -> Option<(u64, usize)> {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        let digits = &self.bytes[start..self.at];
        let plain = !digits.is_empty()
            && digits.len() <= MAX_DIGITS
            && (digits[0] != b'0' || digits.len() == 1)
            && !matches!(self.peek(), Some(b'.' | b'e' | b'E'));
        plain.then(|| {
            let n = digits.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0'));
            (n, digits.len())
        })
    }

    /// The text from `start` to here.
    pub(super) fn since(&self, start: usize) -> &'a str {
        &self.text[start..self.at]
    }

    /// True at the end of the text.
    pub(super) fn at_end(&self) -> bool {
        self.at == self.bytes.len()
    }
}
