//! Request ids kept exactly as the client wrote them, from parse to response.
//!
//! A JSON number is not a machine number: `18446744073709551616`, `1e2`, `-0` or `1.50` would
//! come back changed (`1.8446744073709552e19`, `100.0`, …) after a round trip through
//! [`serde_json::Value`]. A [`RequestId`] keeps the id's raw JSON text and writes it back
//! unchanged, so every front echoes ids byte for byte.

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// A request id as its raw JSON text (any JSON value; the fronts that need a string or a
/// number check [`RequestId::is_string_or_number`]). Equal when the texts are equal.
#[derive(Clone)]
pub struct RequestId(Box<RawValue>);

impl RequestId {
    /// The `null` id (of an answer to a request whose id could not be read).
    pub fn null() -> RequestId {
        RequestId::from_value(&Value::Null)
    }

    /// The id written as `value` serializes (for ids this program makes, not for echoes).
    pub fn from_value(value: &Value) -> RequestId {
        // Serializing a Value cannot fail (its keys are strings).
        RequestId(serde_json::value::to_raw_value(value).unwrap_or_else(|_| null_raw()))
    }

    /// The raw JSON text, exactly as received.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }

    /// True for the `null` id.
    pub fn is_null(&self) -> bool {
        self.as_json() == "null"
    }

    /// True when the id is a JSON string or number (what JSON-RPC allows besides `null`).
    pub fn is_string_or_number(&self) -> bool {
        matches!(
            self.as_json().as_bytes().first(),
            Some(b'"' | b'-' | b'0'..=b'9')
        )
    }

    /// The id as a [`Value`]: for comparisons and tests only; a number may lose its spelling.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.as_json()).unwrap_or(Value::Null)
    }
}

fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".to_string()).expect("null is JSON")
}

impl PartialEq for RequestId {
    fn eq(&self, other: &RequestId) -> bool {
        self.as_json() == other.as_json()
    }
}

impl Eq for RequestId {}

impl Hash for RequestId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_json().hash(state);
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestId({})", self.as_json())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_json())
    }
}

impl Serialize for RequestId {
    /// Written verbatim by serde_json's serializer (`to_string`, `to_vec`, `to_writer`).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RequestId {
    /// Keeps the raw text; works when deserializing from JSON text (not from a [`Value`]).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RequestId, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(RequestId)
    }
}

/// A field that may be absent, told apart from a field that is `null` (serde's `Option` reads
/// both as `None`). Use with `#[serde(default)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Present<T>(pub Option<T>);

impl<T> Default for Present<T> {
    fn default() -> Present<T> {
        Present(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Present<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Present<T>, D::Error> {
        T::deserialize(deserializer).map(|value| Present(Some(value)))
    }
}

/// The first byte of `bytes` after JSON whitespace.
pub fn first_byte(bytes: &[u8]) -> Option<u8> {
    bytes
        .iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

/// Deserializes one JSON object into `T` (whose fields are all [`Present`] or lenient). A key
/// repeated in the object is taken as a [`Value`] takes it (the last one wins), through a
/// second parse; only then may an id lose its spelling.
pub fn parse_object<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    // Valid UTF-8 is checked once for the whole text: the slice reader checks each string
    // again (the same verdicts, at several times the cost). Invalid UTF-8 goes the slice way,
    // for its error.
    let first = match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    };
    first.or_else(|first| {
        let value: Value = serde_json::from_slice(bytes).map_err(|_| first)?;
        serde_json::from_str(&value.to_string())
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Deserialize)]
    struct Envelope {
        #[serde(default)]
        id: Present<RequestId>,
    }

    #[derive(Serialize)]
    struct Echo<'a> {
        id: &'a RequestId,
    }

    #[test]
    fn ids_round_trip_byte_for_byte() {
        for id in [
            r#""a\u0062""#,
            "18446744073709551616",
            "1e2",
            "-0",
            "1.50",
            "-12",
            "1E+400",
            "null",
            r#"{"b":1, "a":[2.0]}"#,
        ] {
            let text = format!(r#"{{ "id" : {id} , "x": 1}}"#);
            let envelope: Envelope = parse_object(text.as_bytes()).unwrap();
            let parsed = envelope.id.0.expect("present");
            assert_eq!(parsed.as_json(), id);
            let written = serde_json::to_string(&Echo { id: &parsed }).unwrap();
            assert_eq!(written, format!(r#"{{"id":{id}}}"#));
        }
        let absent: Envelope = parse_object(b"{}").unwrap();
        assert!(absent.id.0.is_none());
    }

    #[test]
    fn kinds_and_fallbacks() {
        let id = |text: &str| RequestId(RawValue::from_string(text.into()).unwrap());
        assert!(id("\"x\"").is_string_or_number());
        assert!(id("-1").is_string_or_number());
        assert!(!id("null").is_string_or_number());
        assert!(!id("[1]").is_string_or_number());
        assert!(RequestId::null().is_null());
        assert_eq!(RequestId::from_value(&json!(7)).as_json(), "7");
        assert_eq!(id("1e2").to_value(), json!(100.0));
        // A repeated key: the last one wins, as in a Value.
        let twice: Envelope = parse_object(br#"{"id":1,"id":"two"}"#).unwrap();
        assert_eq!(twice.id.0.unwrap().as_json(), "\"two\"");
        assert_eq!(first_byte(b" \n\t[1]"), Some(b'['));
        assert_eq!(first_byte(b"  "), None);
    }
}
