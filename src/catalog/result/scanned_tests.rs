//! The scan against the `Value` path, on generated results and lines.

use serde_json::{json, Value};

use super::{
    scan_tool_result, validate_plain_tool_result, validate_tool_result,
    validate_tool_result_bounded,
};
use crate::catalog::canonical::scan;
use crate::catalog::Schema;
use crate::frame::{decode_response, usual_result, validate_raw_bounded, Envelope};

/// A small deterministic generator of result texts near the contract: members in any order,
/// spaced or not, items of either key order, escapes, floats, unsorted and repeated keys,
/// wrong types and extra members.
struct Gen(u64, bool);

impl Gen {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }

    fn one_in(&mut self, n: u64) -> bool {
        self.next(n) == 0
    }

    /// Whitespace between tokens (none in a tidy result, as serde_json writes it).
    fn space(&mut self) -> &'static str {
        if self.1 {
            return "";
        }
        ["", "", "", " ", "\n  "][self.next(5) as usize]
    }

    fn string(&mut self) -> String {
        const PIECES: [&str; 8] = ["a", "text", "é", "€", " ", "z", "\\n", "\\\""];
        let pieces = if self.one_in(3) { 8 } else { 6 };
        let s: String = (0..self.next(4))
            .map(|_| PIECES[self.next(pieces) as usize])
            .collect();
        format!("\"{s}\"")
    }

    fn object(&mut self, depth: u32, members: Vec<(String, String)>) -> String {
        let body: Vec<String> = members
            .into_iter()
            .map(|(k, v)| format!("{}{k}{}:{}{v}", self.space(), self.space(), self.space()))
            .collect();
        format!(
            "{{{}{}}}",
            body.join(","),
            if depth > 0 { self.space() } else { "" }
        )
    }

    fn value(&mut self, depth: u32) -> String {
        let kinds = if depth >= 3 { 6 } else { 8 };
        match self.next(kinds) {
            0 => "null".into(),
            1 => ["true", "false"][self.next(2) as usize].into(),
            2 => self.next(100_000).to_string(),
            3 => ["-1", "1.5", "2e3", "0"][self.next(4) as usize].into(),
            4 | 5 => self.string(),
            6 => {
                let items: Vec<String> = (0..self.next(3)).map(|_| self.value(depth + 1)).collect();
                format!("[{}]", items.join(","))
            }
            _ => self.structured(depth + 1),
        }
    }

    fn structured(&mut self, depth: u32) -> String {
        const KEYS: [&str; 5] = ["\"a\"", "\"b\"", "\"sum\"", "\"é\"", "\"z\""];
        let mut keys: Vec<&str> = (0..self.next(4))
            .map(|_| KEYS[self.next(5) as usize])
            .collect();
        if !self.one_in(4) {
            keys.sort();
            keys.dedup();
        }
        let members = keys
            .into_iter()
            .map(|k| (k.to_string(), self.value(depth)))
            .collect();
        self.object(depth, members)
    }

    fn item(&mut self) -> String {
        let kind = if self.one_in(20) {
            "\"image\""
        } else {
            "\"text\""
        };
        let mut members = vec![
            ("\"text\"".to_string(), self.string()),
            ("\"type\"".to_string(), kind.to_string()),
        ];
        if !self.1 && self.one_in(2) {
            members.reverse();
        }
        if self.one_in(25) {
            members.push(("\"annotations\"".into(), "{}".into()));
        }
        self.object(1, members)
    }

    fn result(&mut self) -> String {
        self.1 = self.one_in(3);
        let mut members = Vec::new();
        if !self.one_in(20) {
            let n = if self.one_in(30) { 33 } else { self.next(4) };
            let items: Vec<String> = (0..n).map(|_| self.item()).collect();
            members.push(("\"content\"".to_string(), format!("[{}]", items.join(","))));
        }
        if !self.one_in(3) {
            let flag = ["true", "false", "false", "1"][self.next(4) as usize];
            members.push(("\"isError\"".into(), flag.into()));
        }
        if self.one_in(2) {
            let structured = if self.one_in(15) {
                "[]".into()
            } else {
                self.structured(1)
            };
            members.push(("\"structuredContent\"".into(), structured));
        }
        if self.one_in(30) {
            members.push(("\"extra\"".into(), "1".into()));
        }
        if self.one_in(30) && !members.is_empty() {
            members.push(members[0].clone());
        }
        if !self.1 && self.one_in(2) {
            let at = self.next(members.len() as u64 + 1) as usize;
            let at = at.min(members.len());
            members.rotate_left(at);
        }
        self.object(0, members)
    }
}

/// A generated line in one of the usual forms, now and then broken (cut short, a byte
/// added), so that the fused read also meets lines that are no JSON.
fn line_of(gen: &mut Gen, text: &str) -> String {
    let mut line = match gen.next(3) {
        0 => format!(r#"{{"jsonrpc":"2.0","id":3,"result":{text}}}"#),
        1 => format!(r#"{{"id":3,"jsonrpc":"2.0","result": {text} }} "#),
        _ => format!(r#"{{"id":3,"jsonrpc":"2.0","result":{text}}}"#),
    };
    match gen.next(12) {
        0 => line.truncate(line.len() - 1 - gen.next(3) as usize),
        1 => {
            let at = gen.next(line.len() as u64) as usize;
            let byte = ["}", "]", ",", "\"", " ", "x"][gen.next(6) as usize];
            if line.is_char_boundary(at) {
                line.insert_str(at, byte);
            }
        }
        _ => {}
    }
    line
}

#[test]
fn the_fused_read_of_a_line_agrees_with_decoding_it() {
    let mut gen = Gen(23, false);
    let schema = schema();
    let (mut fused, mut broken) = (0, 0);
    for round in 0..6000 {
        let text = gen.result();
        let line = line_of(&mut gen, &text);
        let schema = (round % 3 == 0).then_some(&schema);
        let decoded = decode_response(line.as_bytes())
            .ok()
            .and_then(|raw| validate_raw_bounded(raw, 3).ok());
        let Some((line_id, result)) = usual_result(&line) else {
            continue;
        };
        let Some(scanned) = scan_tool_result(result) else {
            broken += usize::from(decoded.is_none());
            continue;
        };
        fused += 1;
        assert_eq!(line_id, 3);
        let (envelope, bounds) = decoded.unwrap_or_else(|| panic!("fused read of {line}"));
        let by_decoding = match envelope {
            Envelope::PlainResult(plain) => validate_plain_tool_result(plain, bounds, schema),
            Envelope::Result(value) => validate_tool_result_bounded(value, bounds, schema),
            Envelope::Error { .. } => panic!("an error envelope {line}"),
        };
        assert_eq!(scanned.check(schema), by_decoding, "{line}");
    }
    assert!(fused > 1000, "{fused} lines read fused");
    assert!(broken > 200, "{broken} broken lines left to decoding");
}

fn schema() -> Schema {
    Schema::admit(&json!({"type": "object", "required": ["sum"],
        "properties": {"sum": {"type": "integer"}}}))
    .unwrap()
}

#[test]
fn agrees_with_the_value_path_on_generated_results() {
    let mut gen = Gen(22, false);
    let schema = schema();
    let (mut plain, mut scanned, mut rewritten, mut valid) = (0, 0, 0, 0);
    for round in 0..6000 {
        let text = gen.result();
        let line = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{text}}}"#);
        let raw = decode_response(line.as_bytes()).expect("generated lines are JSON");
        let Ok((Envelope::PlainResult(result), bounds)) = validate_raw_bounded(raw, 3) else {
            continue;
        };
        plain += 1;
        let schema = (round % 3 == 0).then_some(&schema);
        if let Some(shape) = scan(result.text()) {
            scanned += 1;
            rewritten += usize::from(shape.insert_at_in_place(text.len()).is_none());
        }
        let value = result.to_value();
        let fast = validate_plain_tool_result(result, bounds, schema).map_err(|r| r.fault);
        let slow = validate_tool_result(value, schema);
        assert_eq!(fast, slow, "{text}");
        let Ok(fast) = fast else { continue };
        valid += 1;
        let map = fast.to_json();
        assert_eq!(
            fast.as_raw().get(),
            serde_json::to_string(&map).unwrap(),
            "{text}"
        );
        let mut with = map.clone();
        with["resultType"] = json!("complete");
        let written = fast.into_raw_with("resultType", "complete");
        assert_eq!(
            written.get(),
            serde_json::to_string(&with).unwrap(),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Value>(written.get()).unwrap(), with);
    }
    // Every way is taken: the scan reads results as they are and rewrites others, and
    // leaves the rest to the `Value` path.
    assert!(
        plain > 3000,
        "{plain} results on the fast path of the frame"
    );
    assert!(
        scanned > 1000 && scanned + 500 < plain,
        "{scanned} of {plain} scanned"
    );
    assert!(
        rewritten > 300 && rewritten + 300 < scanned,
        "{rewritten} of {scanned} rewritten"
    );
    assert!(valid > 1000, "{valid} valid");
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
