//! The read of a canonical result against the member-by-member scan, on canonical results,
//! near misses and broken texts.

use super::*;

/// A small deterministic generator (the tests need no crate of their own).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// Text pieces: plain, multi-byte, and everything that stops a plain string.
const PIECES: &[&str] = &[
    "a", "hello", " ", "é", "😀", "\u{7f}", "~", "\\n", "\\\"", "\\u0041", "\n", "\u{1}", "\"",
];

/// A result in (or near) the canonical form.
fn result(rng: &mut Rng) -> String {
    let items = match rng.below(10) {
        0 => 32 + rng.below(2),
        1 => 0,
        _ => 1 + rng.below(3),
    };
    let item = |rng: &mut Rng| {
        let mut text = String::new();
        for _ in 0..rng.below(4) {
            let kinds = if rng.below(3) == 0 { PIECES.len() } else { 7 };
            text.push_str(PIECES[rng.below(kinds)]);
        }
        match rng.below(12) {
            0 => format!(r#"{{"type":"text","text":"{text}"}}"#),
            1 => format!(r#"{{"text":"{text}", "type":"text"}}"#),
            2 => format!(r#"{{"text":"{text}","type":"image"}}"#),
            _ => format!(r#"{{"text":"{text}","type":"text"}}"#),
        }
    };
    let items: Vec<String> = (0..items).map(|_| item(rng)).collect();
    let flags = if rng.below(4) == 0 { 4 } else { 2 };
    let flag = ["false", "true", "1", "null"][rng.below(flags)];
    let mut text = match rng.below(14) {
        0 => format!(r#"{{"content":[{}]}}"#, items.join(",")),
        1 => format!(r#"{{"isError":{flag},"content":[{}]}}"#, items.join(",")),
        2 => format!(
            r#"{{"content":[{}],"isError":{flag},"structuredContent":{{"a":1}}}}"#,
            items.join(",")
        ),
        3 => format!(r#"{{"content":[{}],"isError":{flag}}} "#, items.join(",")),
        4 => format!(r#"{{"content":[{}], "isError":{flag}}}"#, items.join(",")),
        _ => format!(r#"{{"content":[{}],"isError":{flag}}}"#, items.join(",")),
    };
    match rng.below(10) {
        0 => {
            let mut cut = text.len() - 1 - rng.below(text.len().min(5));
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        1 => {
            let at = rng.below(text.len() + 1);
            let byte = ["}", "]", ",", "\"", " ", "x", "{"][rng.below(7)];
            if text.is_char_boundary(at) {
                text.insert_str(at, byte);
            }
        }
        _ => {}
    }
    text
}

fn assert_agrees(text: &str) -> bool {
    let canonical = scan_canonical(text);
    if let Some(shape) = &canonical {
        assert_eq!(Some(shape), scan_members(text).as_ref(), "{text}");
    }
    canonical.is_some()
}

#[test]
fn a_canonical_read_finds_what_the_member_scan_finds() {
    let mut rng = Rng(0xc0ffee);
    let (mut read, mut left) = (0, 0);
    for _ in 0..20_000 {
        let text = result(&mut rng);
        match assert_agrees(&text) {
            true => read += 1,
            // Whatever it leaves, the member scan decides (and may well accept).
            false => left += 1,
        }
    }
    assert!(read > 2_000 && left > 5_000, "{read} {left}");
}

#[test]
fn every_cut_of_a_canonical_result_agrees() {
    let text =
        r#"{"content":[{"text":"héllo","type":"text"},{"text":"","type":"text"}],"isError":true}"#;
    assert!(assert_agrees(text));
    for cut in 0..text.len() {
        if text.is_char_boundary(cut) {
            assert!(!assert_agrees(&text[..cut]));
            // Inside a text an added byte is still a canonical result.
            for byte in ["x", "\"", "}", " ", "\\"] {
                assert_agrees(&format!("{}{byte}{}", &text[..cut], &text[cut..]));
            }
        }
    }
}

#[test]
fn at_most_32_items_and_512_kib_are_read() {
    let item = r#"{"text":"x","type":"text"}"#;
    for n in [31, 32, 33] {
        let text = format!(
            r#"{{"content":[{}],"isError":false}}"#,
            vec![item; n].join(",")
        );
        assert_eq!(assert_agrees(&text), n <= 32, "{n}");
    }
    let fill =
        MAX_RESULT_BYTES - r#"{"content":[{"text":"","type":"text"}],"isError":false}"#.len();
    for len in [fill - 1, fill, fill + 1] {
        let text = format!(
            r#"{{"content":[{{"text":"{}","type":"text"}}],"isError":false}}"#,
            "a".repeat(len)
        );
        assert_eq!(assert_agrees(&text), len <= fill, "{len}");
        assert_eq!(scan(&text).is_some(), len <= fill, "{len}");
    }
}

#[test]
fn reads_a_canonical_result_in_place() {
    let text = r#"{"content":[{"text":"hi","type":"text"}],"isError":false,"structuredContent":{"a":[1,{"b":null}]}}"#;
    let shape = scan(text).expect("scanned");
    assert_eq!(
        shape.insert_at_in_place(text.len()),
        text.find(",\"structuredContent\"")
    );
    let python = r#"{"content": [{"type": "text", "text": "hi"}], "structuredContent": {"a": [1, {"b": null}]}, "isError": false}"#;
    let shape = scan(python).expect("scanned");
    assert_eq!(shape.insert_at_in_place(python.len()), None);
    assert_eq!(shape.write_canonical().text, text);
}
