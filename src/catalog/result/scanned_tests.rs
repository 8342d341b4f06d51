//! The scan against the `Value` path, on generated results and lines.

use serde_json::{json, Value};

use super::{
    check_scanned, scan_result, validate_tool_result, validate_tool_result_bounded,
    validate_tool_result_text,
};
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
        let Some(result) = usual_result(&line, 3) else {
            continue;
        };
        let Some(scanned) = scan_result(result) else {
            broken += usize::from(decoded.is_none());
            continue;
        };
        fused += 1;
        let (envelope, bounds) = decoded.unwrap_or_else(|| panic!("fused read of {line}"));
        let by_decoding = match envelope {
            Envelope::Result(value) => validate_tool_result_bounded(value, bounds, schema),
            Envelope::Error { .. } => panic!("an error envelope {line}"),
        };
        assert_eq!(check_scanned(scanned, schema), by_decoding, "{line}");
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
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        plain += 1;
        let schema = (round % 3 == 0).then_some(&schema);
        if let Some(result) = scan_result(&text) {
            scanned += 1;
            let canonical = result.into_canonical();
            rewritten += usize::from(canonical.as_raw().get() != text);
        }
        let fast = validate_tool_result_text(&text, schema);
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
    assert!(plain > 3000, "{plain} results that are JSON");
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

/// A result `Value` near the contract: text items (now and then another type, an extra key, a
/// number for a text), `isError` of any type or none, `structuredContent` an object of any
/// values (now and then no object), an extra member now and then.
fn result_value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    // Mostly plain text, now and then something that needs an escape.
    let text = || prop_oneof![6 => "[a-z é€]{0,12}", 1 => "[a-z\"\\\\\n]{0,6}"];
    let item = prop_oneof![
        40 => text().prop_map(|t| json!({"type": "text", "text": t})),
        1 => text().prop_map(|t| json!({"type": "image", "text": t})),
        1 => text().prop_map(|t| json!({"type": "text", "text": t, "x": 1})),
        1 => Just(json!({"type": "text", "text": 5})),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<u32>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    let any_value = leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    let structured = prop_oneof![
        16 => prop::collection::btree_map("[a-z]{1,4}", any_value, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        1 => Just(json!([])),
    ];
    let is_error =
        prop_oneof![4 => Just(json!(true)), 4 => Just(json!(false)), 1 => Just(json!(1))];
    // A few items, now and then around the bound of 32.
    let content = prop_oneof![
        8 => prop::collection::vec(item.clone(), 0..4),
        1 => prop::collection::vec(item, 31..34),
    ];
    (
        prop::option::weighted(0.95, content),
        prop::option::of(is_error),
        prop::option::of(structured),
        prop::bool::weighted(0.05),
    )
        .prop_map(|(content, is_error, structured, extra)| {
            let mut map = serde_json::Map::new();
            if let Some(content) = content {
                map.insert("content".into(), Value::Array(content));
            }
            if let Some(flag) = is_error {
                map.insert("isError".into(), flag);
            }
            if let Some(structured) = structured {
                map.insert("structuredContent".into(), structured);
            }
            if extra {
                map.insert("extra".into(), json!(1));
            }
            Value::Object(map)
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

    /// The one scan (through `validate_tool_result_text`) and its oracle, the `Value` path, give
    /// the same verdict and the same canonical bytes, on the text as serde_json writes it
    /// (canonical) and pretty-printed, with and without an output schema.
    #[test]
    fn the_scan_agrees_with_the_value_path_on_generated_results(
        result in result_value(),
        pretty in proptest::prelude::any::<bool>(),
        with_schema in proptest::prelude::any::<bool>(),
    ) {
        let text = match pretty {
            true => serde_json::to_string_pretty(&result).unwrap(),
            false => serde_json::to_string(&result).unwrap(),
        };
        let schema = schema();
        let schema = with_schema.then_some(&schema);
        let fast = validate_tool_result_text(&text, schema);
        let oracle = validate_tool_result(result, schema);
        match (&fast, &oracle) {
            (Ok(a), Ok(b)) => proptest::prop_assert_eq!(a.as_raw().get(), b.as_raw().get()),
            (Err(a), Err(b)) => proptest::prop_assert_eq!(a, b),
            _ => proptest::prop_assert!(false, "{}: {:?} against {:?}", text, fast, oracle),
        }
    }
}
