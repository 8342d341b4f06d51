//! The result text of a call's answer line, found by comparing the line's start with the two
//! usual envelopes written with the request's id instead of parsing it.
//!
//! `{"jsonrpc":"2.0","id":N,"result":…}` (the protocol's order) and
//! `{"id":N,"jsonrpc":"2.0","result":…}` (a sorted map's, as serde_json plugins write it), the
//! envelope compact: what [`usual_result`] finds between the start and the line's closing brace
//! is unchecked text. When it is one valid JSON value (which the tool-result scan checks), it is
//! the line's result, the line is valid JSON and its envelope is valid. Any other line — other
//! members, whitespace in the envelope, another id — gives `None` and is decoded on the serde
//! path (`decode_response`, then `validate_raw`), which decides every rule and fault.
//!
//! Oracle: that serde path; the tests hold the two to the same id and result on generated lines.

/// The unchecked result text of `text` when it is one of the two usual answer lines to the
/// request `id` (see the module doc); `None` for any other line, whatever its id.
pub fn usual_result(text: &str, id: u64) -> Option<&str> {
    const ID_FIRST: &[u8] = b"{\"id\":";
    const ID_FIRST_REST: &[u8] = b",\"jsonrpc\":\"2.0\",\"result\":";
    const JSONRPC_FIRST: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
    const JSONRPC_FIRST_REST: &[u8] = b",\"result\":";
    let bytes = text.as_bytes();
    let rest = match bytes.strip_prefix(ID_FIRST) {
        Some(rest) => strip_id(rest, id)?.strip_prefix(ID_FIRST_REST)?,
        None => {
            strip_id(bytes.strip_prefix(JSONRPC_FIRST)?, id)?.strip_prefix(JSONRPC_FIRST_REST)?
        }
    };
    result_text(text, text.len() - rest.len())
}

/// `bytes` after the decimal digits of `id` at their start, written as a JSON number is (no
/// sign, no leading zero) and not followed by another digit. Ids of 20 digits are left to the
/// serde path (19 digits never overflow a `u64`).
fn strip_id(bytes: &[u8], id: u64) -> Option<&[u8]> {
    let (mut n, mut len) = (0u64, 0);
    while let Some(digit) = bytes
        .get(len)
        .map(|b| b.wrapping_sub(b'0'))
        .filter(|&d| d < 10)
    {
        if len == 19 {
            return None;
        }
        n = n * 10 + u64::from(digit);
        len += 1;
    }
    let leading_zero = len > 1 && bytes[0] == b'0';
    (len > 0 && !leading_zero && n == id).then(|| &bytes[len..])
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;
    use crate::frame::{decode_response, validate_raw, Envelope};

    /// The serde path's reading of `line` as the answer to `id`: its result, when it is one.
    fn decoded(line: &str, id: u64) -> Option<Value> {
        match validate_raw(decode_response(line.as_bytes()).ok()?, id) {
            Ok(Envelope::Result(value)) => Some(value),
            _ => None,
        }
    }

    /// When the comparison finds a result text that is one JSON value, the serde path reads
    /// the line as that result; true when it found one.
    fn agrees(line: &str, id: u64) -> bool {
        let Some(result) = usual_result(line, id) else {
            return false;
        };
        let Ok(value) = serde_json::from_str::<Value>(result) else {
            // Not one value: the scan refuses it and the line goes to the serde path.
            return false;
        };
        assert_eq!(decoded(line, id), Some(value), "{line:?} for id {id}");
        true
    }

    #[test]
    fn the_usual_lines_are_read_and_others_left_to_serde() {
        // Ids around every digit count, and lines of both usual starts, broken or not.
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
        let ends = [
            ("{}}", true),
            ("{} } ", true),
            ("{}", false),
            ("1}\r\n", true),
            (" {\"a\":1}\t}", true),
            ("}", false),
            ("[] ]", false),
        ];
        let mut found = 0;
        for &id in &ids {
            for other in [id, id.wrapping_add(1), id / 10] {
                for start in starts(&other.to_string()) {
                    for (end, whole) in ends {
                        let line = format!("{start}{end}");
                        let read = agrees(&line, id);
                        // Exactly the usual starts written with `id`, and a whole line (an
                        // id of 20 digits is left to serde).
                        let usual = starts(&id.to_string())[..2]
                            .iter()
                            .any(|usual| line.starts_with(usual.as_str()));
                        let short = id < 10u64.pow(19);
                        assert_eq!(read, usual && whole && short, "{line:?} for id {id}");
                        found += usize::from(read);
                    }
                }
            }
        }
        assert!(found > 100, "{found}");
    }

    /// A JSON value of the kinds a result holds, as serde_json writes it.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-z \"\\\\é\n]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{0,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn agrees_with_the_serde_path_on_generated_lines(
            result in json_value(),
            id in prop_oneof![0u64..20, any::<u64>()],
            asked in prop_oneof![Just(None), (0u64..20).prop_map(Some)],
            id_first in any::<bool>(),
            spaced in any::<bool>(),
        ) {
            let result = match spaced {
                true => serde_json::to_string_pretty(&result).unwrap(),
                false => serde_json::to_string(&result).unwrap(),
            };
            let line = match id_first {
                true => format!(r#"{{"id":{id},"jsonrpc":"2.0","result":{result}}}"#),
                false => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#),
            };
            let asked = asked.unwrap_or(id);
            prop_assert_eq!(agrees(&line, asked), asked == id && id < 10u64.pow(19));
        }
    }
}
