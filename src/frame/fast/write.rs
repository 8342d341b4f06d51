//! Compact JSON text of a `Value`, byte for byte what `serde_json::to_writer` writes, without
//! serde's generic machinery on the common path: a string with nothing to escape is copied
//! as it is, an integer written by its digits. A string that needs an escape, and a float, are
//! written by serde_json itself. Also the decimal digits of a request id, kept beside it.
//!
//! Oracle: `serde_json::to_writer` and `u64`'s `Display`; the tests compare them on hand-picked
//! and generated values.

use serde_json::{Number, Value};

use super::bytes::string_run;
use crate::frame::bounds::is_plain;

/// Appends the compact JSON text of `value` (keys in the map's order, as serde_json writes).
/// `plain`: every key and string in it is known to be printable ASCII without `"` or `\`
/// (a bounds walk found it so), and is copied without a look for characters to escape.
pub(crate) fn value(out: &mut Vec<u8>, value: &Value, plain: bool) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                self::item(out, item, plain);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                string_of(out, key, plain);
                out.push(b':');
                self::item(out, item, plain);
            }
            out.push(b'}');
        }
        scalar => self::scalar(out, scalar, plain),
    }
}

/// An item or member value: [`value`], with a scalar written in its parent's step.
#[inline(always)]
fn item(out: &mut Vec<u8>, item: &Value, plain: bool) {
    match item {
        Value::Array(_) | Value::Object(_) => self::value(out, item, plain),
        scalar => self::scalar(out, scalar, plain),
    }
}

/// A value that is neither an array nor an object.
#[inline(always)]
fn scalar(out: &mut Vec<u8>, value: &Value, plain: bool) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => number(out, n),
        Value::String(s) => string_of(out, s, plain),
        Value::Array(_) | Value::Object(_) => self::value(out, value, plain),
    }
}

/// [`string`], or a copy between quotes of a string known to need no escape.
#[inline]
fn string_of(out: &mut Vec<u8>, s: &str, plain: bool) {
    debug_assert!(!plain || is_plain(s.as_bytes()));
    match plain {
        true => quoted(out, s.as_bytes()),
        false => string(out, s),
    }
}

/// `bytes` between quotes.
#[inline]
fn quoted(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    out.extend_from_slice(bytes);
    out.push(b'"');
}

/// Appends `s` as a JSON string literal.
#[inline]
pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if is_plain(bytes) {
        // Printable ASCII without `"` or `\`: written between quotes as it is.
        quoted(out, bytes);
    } else if string_run(bytes).0 == bytes.len() {
        // No `"`, `\` or control byte either.
        quoted(out, bytes);
    } else {
        serde_json::to_writer(&mut *out, s).expect("writing a str into a Vec cannot fail");
    }
}

/// Appends a number as serde_json writes it.
fn number(out: &mut Vec<u8>, n: &Number) {
    if let Some(u) = n.as_u64() {
        push_u64(out, u);
    } else if let Some(i) = n.as_i64() {
        out.push(b'-');
        push_u64(out, i.unsigned_abs());
    } else {
        serde_json::to_writer(&mut *out, n).expect("writing a number into a Vec cannot fail");
    }
}

/// Appends the decimal digits of `n` (no sign, no leading zeros).
fn push_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(Decimal::of(n).as_bytes());
}

/// The decimal digits of a number (no sign, no leading zeros), written without the formatting
/// machinery: right to left into a stack buffer. Every writer of numbers in heads and frames
/// uses it.
pub(crate) struct Decimal {
    // u64::MAX has 20 digits.
    digits: [u8; 20],
    start: usize,
}

impl Decimal {
    /// The digits of `n`.
    pub(crate) fn of(mut n: u64) -> Decimal {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Decimal { digits, start }
    }

    /// The digits as ASCII bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.digits[self.start..]
    }
}

/// The decimal digits of a number, left-aligned: a request id's, kept beside it and counted up
/// with it (an id is copied, not formatted).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Digits {
    text: [u8; 20],
    len: usize,
}

impl Digits {
    pub(crate) fn of(n: u64) -> Digits {
        let mut text = Vec::with_capacity(20);
        push_u64(&mut text, n);
        let mut digits = Digits {
            text: [b'0'; 20],
            len: text.len(),
        };
        digits.text[..text.len()].copy_from_slice(&text);
        digits
    }

    /// Appends the digits (a copy of constant size, then cut to the digits).
    #[inline]
    pub(crate) fn push_to(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(&self.text);
        out.truncate(at + self.len);
    }

    /// The digits of the number one larger (u64::MAX wraps to 0, as the id does not: it is
    /// never reached).
    #[inline]
    pub(crate) fn increment(&mut self) {
        let mut i = self.len;
        while i > 0 {
            i -= 1;
            if self.text[i] != b'9' {
                self.text[i] += 1;
                return;
            }
            self.text[i] = b'0';
        }
        // All nines: one digit more.
        if self.len < self.text.len() {
            self.text[0] = b'1';
            self.text[self.len] = b'0';
            self.len += 1;
        }
    }
}

#[cfg(test)]
mod tests;
