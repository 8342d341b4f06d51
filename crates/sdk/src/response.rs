//! Response encoding: serializes straight from borrowed data into a reused buffer.

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// JSON-RPC "Invalid Request": an object with an id but no string `method`.
pub(super) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC "Method not found".
pub(super) const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "Invalid params".
pub(super) const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC "Internal error".
pub(super) const INTERNAL_ERROR: i64 = -32603;

/// Appends `{"jsonrpc":"2.0","id":…,"result":…}` to `out`.
pub(super) fn write_result<T: Serialize>(
    out: &mut Vec<u8>,
    id: &Value,
    result: &T,
) -> serde_json::Result<()> {
    serde_json::to_writer(
        out,
        &Envelope {
            id,
            body: Body::Result(result),
        },
    )
}

/// Appends `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}` to `out`.
pub(super) fn write_error(out: &mut Vec<u8>, id: &Value, code: i64, message: &str) {
    let envelope: Envelope<'_, ()> = Envelope {
        id,
        body: Body::Error { code, message },
    };
    // A `Value` id, an integer and a string cannot fail to serialize into a Vec.
    if serde_json::to_writer(&mut *out, &envelope).is_err() {
        out.clear();
    }
}

struct Envelope<'a, T> {
    id: &'a Value,
    body: Body<'a, T>,
}

enum Body<'a, T> {
    Result(&'a T),
    Error { code: i64, message: &'a str },
}

#[derive(Serialize)]
struct RpcError<'a> {
    code: i64,
    message: &'a str,
}

impl<T: Serialize> Serialize for Envelope<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Envelope", 3)?;
        s.serialize_field("jsonrpc", "2.0")?;
        s.serialize_field("id", self.id)?;
        match &self.body {
            Body::Result(result) => s.serialize_field("result", result)?,
            Body::Error { code, message } => s.serialize_field(
                "error",
                &RpcError {
                    code: *code,
                    message,
                },
            )?,
        }
        s.end()
    }
}

/// A tools/call result: `{"content":[…],"structuredContent"?:…,"isError"?:true}`.
pub(super) struct CallResult<'a> {
    pub(super) text: &'a [String],
    pub(super) structured: Option<&'a Value>,
    pub(super) is_error: bool,
}

impl Serialize for CallResult<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = 1 + usize::from(self.structured.is_some()) + usize::from(self.is_error);
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("content", &TextItems(self.text))?;
        if let Some(structured) = self.structured {
            map.serialize_entry("structuredContent", structured)?;
        }
        if self.is_error {
            map.serialize_entry("isError", &true)?;
        }
        map.end()
    }
}

struct TextItems<'a>(&'a [String]);

#[derive(Serialize)]
struct TextItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

impl Serialize for TextItems<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|text| TextItem { kind: "text", text }))
    }
}
