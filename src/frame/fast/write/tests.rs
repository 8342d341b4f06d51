//! The fast writer against serde_json's own, on hand-picked and generated values.

use serde_json::{json, Map, Number, Value};

use super::*;

fn fast(v: &Value, plain: bool) -> Vec<u8> {
    let mut out = b"prefix".to_vec();
    value(&mut out, v, plain);
    out.split_off(6)
}

/// Both ways of writing `v` write what serde_json writes: looking at every string, and (when
/// a bounds walk finds every string and key plain) copying them.
fn assert_same(v: &Value) {
    let expected = serde_json::to_vec(v).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&fast(v, false)),
        String::from_utf8_lossy(&expected)
    );
    let walked = crate::frame::check_json_bounds_measured(v, usize::MAX);
    if let Ok(measured) = walked {
        assert_eq!(measured.len, expected.len());
        if measured.plain {
            assert_eq!(fast(v, true), expected);
        }
    }
}

/// Pieces of strings: plain text, every escape serde_json writes, the bytes around the
/// escaped range, and multi-byte characters.
const PIECES: &[&str] = &[
    "a",
    "hello",
    " ",
    "~",
    "\u{7f}",
    "\"",
    "\\",
    "/",
    "\n",
    "\r",
    "\t",
    "\u{8}",
    "\u{c}",
    "\u{0}",
    "\u{1}",
    "\u{1f}",
    "é",
    "€",
    "😀",
    "\u{2028}",
    "\u{2029}",
    "\u{feff}",
    "\u{80}",
    "\u{10FFFF}",
    "e\u{301}",
    "12345678",
];

/// A small deterministic generator (the tests need no crate of their own).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn text(&mut self) -> String {
        let len = match self.below(8) {
            0 => 0,
            1 => 20 + self.below(40),
            _ => self.below(6),
        };
        (0..len).map(|_| PIECES[self.below(PIECES.len())]).collect()
    }

    fn number(&mut self) -> Value {
        match self.below(10) {
            0 => json!(u64::MAX),
            1 => json!(i64::MIN),
            2 => json!(-(self.next() as i64)),
            3 => json!(self.next() as f64 / 7.0),
            4 => json!(-0.0),
            5 => json!(1e300),
            6 => json!(0.1),
            7 => Value::Number(Number::from_f64(f64::MIN_POSITIVE).unwrap()),
            8 => json!(0),
            _ => json!(self.next()),
        }
    }

    fn value(&mut self, depth: usize) -> Value {
        let container = depth < 40 && self.below(3) == 0;
        match (container, self.below(6)) {
            (true, 0..=2) => {
                let mut map = Map::new();
                for _ in 0..self.below(5) {
                    map.insert(self.text(), self.value(depth + 1));
                }
                Value::Object(map)
            }
            (true, _) => Value::Array((0..self.below(5)).map(|_| self.value(depth + 1)).collect()),
            (false, 0) => Value::Null,
            (false, 1) => Value::Bool(self.below(2) == 0),
            (false, 2) => self.number(),
            (false, _) => Value::String(self.text()),
        }
    }
}

#[test]
fn writes_what_serde_json_writes_on_hand_picked_values() {
    for v in [
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(-1),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1.5),
        json!(-0.0),
        json!(1e300),
        json!(""),
        json!("plain"),
        json!("quote \" backslash \\ newline \n tab \t nul \u{0} del \u{7f} ü ✓ 😀"),
        json!([]),
        json!({}),
        json!({"text": "hello"}),
        json!({"a": {"b": [1, "x", null, [], {}]}, "key \"q\"": {}, "ü": [true, false]}),
        json!({"\u{1}": "\u{1f}", "": ""}),
    ] {
        assert_same(&v);
    }
}

#[test]
fn every_piece_at_every_offset_of_a_word() {
    for piece in PIECES {
        for before in 0..17 {
            for after in [0, 1, 7, 8, 9] {
                let s = format!("{}{piece}{}", "x".repeat(before), "y".repeat(after));
                assert_same(&Value::String(s.clone()));
                assert_same(&json!({ s.clone(): s }));
            }
        }
    }
}

#[test]
fn oversize_and_deep_values_are_written_like_serde_json() {
    // Past every bound: the writer does not check bounds, it only writes.
    assert_same(&Value::String("a".repeat(600 * 1024)));
    assert_same(&Value::String(format!("{}\n", "é".repeat(300 * 1024))));
    assert_same(&json!({ "k".repeat(2000): 1 }));
    let deep = (0..200).fold(json!("leaf \"x\""), |inner, i| match i % 2 {
        0 => json!([inner]),
        _ => json!({ "k": inner }),
    });
    assert_same(&deep);
    assert_same(&Value::Array(vec![json!(1); 5000]));
}

#[test]
fn writes_what_serde_json_writes_on_generated_values() {
    let mut rng = Rng(0x5eed);
    for _ in 0..6000 {
        let v = rng.value(0);
        assert_same(&v);
    }
}

#[test]
fn ids_are_written_like_display() {
    let samples = [
        0,
        1,
        9,
        10,
        99,
        100,
        12_345,
        999_999_999,
        1_000_000_000,
        u64::from(u32::MAX),
        u64::MAX / 10,
        u64::MAX - 1,
        u64::MAX,
    ];
    let powers = (0..20).map(|e| 10u64.pow(e));
    let below = (1..20).map(|e| 10u64.pow(e) - 1);
    for n in samples.into_iter().chain(powers).chain(below) {
        let mut out = b"x".to_vec();
        push_u64(&mut out, n);
        let mut digits = Digits::of(n.saturating_sub(1));
        if n > 0 {
            digits.increment();
        }
        let mut counted = b"x".to_vec();
        digits.push_to(&mut counted);
        assert_eq!(counted, out, "{n}");
        assert_eq!(String::from_utf8(out).unwrap(), format!("x{n}"));
    }
}

proptest::proptest! {
    #[test]
    fn writes_what_serde_json_writes_on_any_number(n in proptest::prelude::any::<u64>()) {
        let mut out = Vec::new();
        push_u64(&mut out, n);
        proptest::prop_assert_eq!(out, n.to_string().into_bytes());
        assert_same(&Value::from(n));
        assert_same(&Value::from(n as i64));
    }
}
