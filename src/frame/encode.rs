//! Encoding of the three requests the host sends.

use serde_json::Value;

/// The protocol version string exchanged in initialize.
pub const PROTOCOL_VERSION: &str = "webcodex-plugin-v1";

/// Encodes requests with ids starting at 1 and increasing by 1 per sent request.
#[derive(Debug)]
pub struct RequestEncoder {
    next_id: u64,
}

impl Default for RequestEncoder {
    fn default() -> Self {
        RequestEncoder { next_id: 1 }
    }
}

impl RequestEncoder {
    /// A new encoder whose first id is 1.
    pub fn new() -> RequestEncoder {
        RequestEncoder::default()
    }

    /// The id the next encoded request will carry (and the id its response must carry).
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Encodes `initialize` into `out` (cleared first), newline included; returns its id.
    pub fn initialize(&mut self, out: &mut Vec<u8>) -> u64 {
        let _ = out;
        todo!()
    }

    /// Encodes `tools/list` with `{}` params; returns its id.
    pub fn tools_list(&mut self, out: &mut Vec<u8>) -> u64 {
        let _ = out;
        todo!()
    }

    /// Encodes `tools/call`; returns its id.
    pub fn tools_call(&mut self, name: &str, arguments: &Value, out: &mut Vec<u8>) -> u64 {
        let _ = (name, arguments, out);
        todo!()
    }

    /// Gives back the last id when its frame provably never reached the plugin, so that the
    /// plugin keeps seeing consecutive ids.
    pub fn unsend_last(&mut self) {
        todo!()
    }
}
