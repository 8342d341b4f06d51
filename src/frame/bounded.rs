//! The JSON bounds checked while a value is parsed: [`BoundedSeed`] builds the same `Value` that
//! serde_json would, and feeds it to the same [`Tally`] that [`check_json_bounds_sized`] walks
//! a built value with, so the hot path (a tool result) needs no second walk over the value.
//!
//! [`check_json_bounds_sized`]: super::check_json_bounds_sized

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::bounds::{bool_len, number_len, Tally};

/// Deserializes one JSON value into a `Value` (exactly what `Value`'s own `Deserialize`
/// builds) and records its bounds in a [`Tally`]. Never fails on a bound: the verdict is read
/// from the tally afterwards.
pub(crate) struct BoundedSeed<'t> {
    tally: &'t mut Tally,
    depth: usize,
}

impl<'t> BoundedSeed<'t> {
    /// A seed for a root value (depth 0).
    pub(crate) fn root(tally: &'t mut Tally) -> BoundedSeed<'t> {
        BoundedSeed { tally, depth: 0 }
    }

    fn child(&mut self) -> BoundedSeed<'_> {
        BoundedSeed {
            tally: self.tally,
            depth: self.depth + 1,
        }
    }

    fn number(self, n: Number) -> Value {
        self.tally.scalar(self.depth, number_len(&n));
        Value::Number(n)
    }
}

impl<'de> DeserializeSeed<'de> for BoundedSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for BoundedSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        self.tally.scalar(self.depth, bool_len(b));
        Ok(Value::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Value, E> {
        Ok(self.number(i.into()))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Value, E> {
        Ok(self.number(u.into()))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        // As `Value` does: a float that is no JSON number becomes null.
        Ok(match Number::from_f64(f) {
            Some(n) => self.number(n),
            None => {
                self.tally.scalar(self.depth, 4);
                Value::Null
            }
        })
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        self.tally.string(self.depth, s);
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        self.tally.string(self.depth, &s);
        Ok(Value::String(s))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.tally.scalar(self.depth, 4);
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        self.tally.enter(self.depth);
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.child())? {
            items.push(item);
        }
        self.tally.array(items.len());
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut access: A) -> Result<Value, A::Error> {
        self.tally.enter(self.depth);
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            self.tally.key(&key);
            let value = access.next_value_seed(self.child())?;
            if map.insert(key, value).is_some() {
                self.tally.duplicate();
            }
        }
        self.tally.object(map.len());
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::super::bounds::BoundsVerdict;
    use super::super::{
        check_json_bounds_sized, MAX_DEPTH, MAX_KEY_BYTES, MAX_NODES, MAX_STRING_BYTES,
    };
    use super::*;

    /// Parses `text` with the seed: the value and the verdict.
    fn bounded(text: &str) -> (Value, Option<BoundsVerdict>) {
        let mut tally = Tally::default();
        let mut de = serde_json::Deserializer::from_str(text);
        let value = BoundedSeed::root(&mut tally)
            .deserialize(&mut de)
            .expect("valid JSON");
        de.end().expect("one value");
        (value, tally.verdict())
    }

    /// The seed builds what `Value` builds and agrees with the walk: the same length when it
    /// passes, a failure when it fails.
    fn agrees(text: &str) {
        let (value, verdict) = bounded(text);
        let expected: Value = serde_json::from_str(text).expect("valid JSON");
        assert_eq!(value, expected, "{text}");
        let walked = check_json_bounds_sized(&expected, usize::MAX);
        match verdict.expect("no duplicate key") {
            Ok(bytes) => assert_eq!(walked, Ok(bytes), "{text}"),
            Err(_) => assert!(walked.is_err(), "{text}: the walk passed ({walked:?})"),
        }
    }

    #[test]
    fn agrees_with_the_walk_on_valid_and_oversized_values() {
        let deep_ok = format!("{}0{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let too_deep = format!(
            "{}0{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        let nodes_ok = format!("[{}]", vec!["0"; MAX_NODES - 1].join(","));
        let too_many = format!("[{}]", vec!["0"; MAX_NODES].join(","));
        let long_ok = format!("\"{}\"", "a".repeat(MAX_STRING_BYTES));
        let too_long = format!("\"{}\"", "a".repeat(MAX_STRING_BYTES + 1));
        let key_ok = format!("{{\"{}\":1}}", "k".repeat(MAX_KEY_BYTES));
        let key_long = format!("{{\"{}\":1}}", "k".repeat(MAX_KEY_BYTES + 1));
        let texts = [
            r#"{"content":[{"type":"text","text":"hello"}],"isError":false}"#,
            r#"{"a":null,"b":true,"c":-12,"d":1.5e300,"e":1E2,"f":18446744073709551615}"#,
            r#"{"esc\"aped":"tab\there \u0001 \u00e9 \/ é","":[[],{}]}"#,
            r#"[1,-0,0.0,-1.25,123456789012345678901234567890]"#,
            r#""just a string""#,
            "null",
            &deep_ok,
            &too_deep,
            &nodes_ok,
            &too_many,
            &long_ok,
            &too_long,
            &key_ok,
            &key_long,
            r#"{"bad\u0007key":1}"#,
            r#"{"ok":1,"bad\nkey":2}"#,
        ];
        for text in texts {
            agrees(text);
        }
    }

    #[test]
    fn a_duplicate_key_leaves_the_verdict_to_the_walk() {
        let (value, verdict) = bounded(r#"{"a":[1,2,3],"a":1}"#);
        assert_eq!(value, serde_json::json!({"a": 1}));
        assert_eq!(verdict, None);
    }
}
