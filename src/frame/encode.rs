//! Encoding of the three requests the host sends.

use serde_json::Value;

use super::bounds::Measured;
use super::fast::{write, Digits};
use super::PROTOCOL_VERSION;

/// Encodes requests with ids starting at 1 and increasing by 1 per sent request.
///
/// Frames are written compactly (no spaces) with keys in the order
/// `jsonrpc`, `id`, `method`, `params`, each followed by `\n`.
#[derive(Debug)]
pub struct RequestEncoder {
    next_id: u64,
    /// The decimal digits of `next_id`, kept beside it (an id is copied, not formatted).
    digits: Digits,
}

impl Default for RequestEncoder {
    fn default() -> Self {
        RequestEncoder::starting_at(1)
    }
}

impl RequestEncoder {
    /// A new encoder whose first id is 1.
    pub fn new() -> RequestEncoder {
        RequestEncoder::default()
    }

    /// An encoder whose next id is `id`.
    fn starting_at(id: u64) -> RequestEncoder {
        RequestEncoder {
            next_id: id,
            digits: Digits::of(id),
        }
    }

    /// The id the next encoded request will carry (and the id its response must carry).
    #[cfg(test)]
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Encodes `initialize` into `out` (cleared first), newline included; returns its id.
    pub fn initialize(&mut self, out: &mut Vec<u8>) -> u64 {
        let id = self.begin(out, b",\"method\":\"initialize\",\"params\":");
        out.extend_from_slice(b"{\"protocolVersion\":\"");
        out.extend_from_slice(PROTOCOL_VERSION.as_bytes());
        out.extend_from_slice(b"\"}}\n");
        id
    }

    /// Encodes `tools/list` with `{}` params into `out` (cleared first); returns its id.
    pub fn tools_list(&mut self, out: &mut Vec<u8>) -> u64 {
        let id = self.begin(out, b",\"method\":\"tools/list\",\"params\":");
        out.extend_from_slice(b"{}}\n");
        id
    }

    /// Encodes `tools/call` of tool `name` with `arguments` into `out` (cleared first); returns
    /// its id. The caller checks the frame against `MAX_LINE_BYTES` before sending it.
    ///
    /// Name and arguments are written as serde_json writes them (`write`, without serde's
    /// generic machinery on the common path).
    pub fn tools_call(&mut self, name: &str, arguments: &Value, out: &mut Vec<u8>) -> u64 {
        self.tools_call_measured(&tools_call_head(name), arguments, None, out)
    }

    /// [`RequestEncoder::tools_call`] of the tool whose [`tools_call_head`] is `head`, with
    /// arguments whose bounds walk `measured` them: their length is reserved at once, and
    /// their keys and strings are copied without a look for characters to escape when the
    /// walk found none.
    pub(crate) fn tools_call_measured(
        &mut self,
        head: &[u8],
        arguments: &Value,
        measured: Option<Measured>,
        out: &mut Vec<u8>,
    ) -> u64 {
        const END: &[u8] = b"}}\n";
        let len = measured.map_or(0, |m| m.len);
        out.clear();
        out.reserve(FRAME_START.len() + 20 + head.len() + len + END.len());
        let id = self.begin(out, head);
        write::value(out, arguments, measured.is_some_and(|m| m.plain));
        out.extend_from_slice(END);
        id
    }

    /// Gives back the last id when its frame provably never reached the plugin, so that the
    /// plugin keeps seeing consecutive ids. Does nothing before the first request.
    pub fn unsend_last(&mut self) {
        if self.next_id > 1 {
            self.next_id -= 1;
            self.digits = Digits::of(self.next_id);
        }
    }

    /// Clears `out`, writes everything up to the id, the id, then `method` (the method's member
    /// up to and including `"params":`), and takes the next id.
    #[inline(always)]
    fn begin(&mut self, out: &mut Vec<u8>, method: &[u8]) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        out.clear();
        out.extend_from_slice(FRAME_START);
        self.digits.push_to(out);
        self.digits.increment();
        out.extend_from_slice(method);
        id
    }
}

/// What follows the id in a tools/call frame of tool `name`, up to its arguments:
/// `,"method":"tools/call","params":{"name":"…","arguments":` (written once per tool).
pub(crate) fn tools_call_head(name: &str) -> Vec<u8> {
    const NAME: &[u8] = b",\"method\":\"tools/call\",\"params\":{\"name\":";
    const ARGUMENTS: &[u8] = b",\"arguments\":";
    let mut head = NAME.to_vec();
    write::string(&mut head, name);
    head.extend_from_slice(ARGUMENTS);
    head
}

/// Every frame's start, up to its id.
const FRAME_START: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(out: &[u8]) -> &str {
        std::str::from_utf8(out).unwrap()
    }

    #[test]
    fn initialize_has_exact_wire_shape() {
        let mut enc = RequestEncoder::new();
        let mut out = Vec::new();
        assert_eq!(enc.initialize(&mut out), 1);
        assert_eq!(
            text(&out),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"webcodex-plugin-v1\"}}\n"
        );
    }

    #[test]
    fn tools_list_has_exact_wire_shape() {
        let mut enc = RequestEncoder::new();
        let mut out = Vec::new();
        enc.initialize(&mut out);
        assert_eq!(enc.tools_list(&mut out), 2);
        assert_eq!(
            text(&out),
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}\n"
        );
    }

    #[test]
    fn tools_call_has_exact_wire_shape() {
        let mut enc = RequestEncoder::new();
        let mut out = Vec::new();
        enc.initialize(&mut out);
        enc.tools_list(&mut out);
        assert_eq!(enc.tools_call("add", &json!({"a": 2, "b": 5}), &mut out), 3);
        assert_eq!(
            text(&out),
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":2,\"b\":5}}}\n"
        );
    }

    #[test]
    fn tools_call_escapes_name_and_arguments() {
        let mut enc = RequestEncoder::new();
        let mut out = Vec::new();
        let args = json!({"s": "line\n\"quoted\""});
        enc.tools_call("a\"b", &args, &mut out);
        assert_eq!(out.last(), Some(&b'\n'));
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
        let frame: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(frame["params"]["name"], "a\"b");
        assert_eq!(frame["params"]["arguments"], args);
    }

    #[test]
    fn encoding_clears_the_output_buffer() {
        let mut enc = RequestEncoder::new();
        let mut out = b"stale bytes".to_vec();
        enc.tools_list(&mut out);
        assert!(out.starts_with(b"{\"jsonrpc\""));
    }

    #[test]
    fn ids_start_at_one_and_increase_by_one() {
        let mut enc = RequestEncoder::new();
        let mut out = Vec::new();
        assert_eq!(enc.next_id(), 1);
        assert_eq!(enc.initialize(&mut out), 1);
        assert_eq!(enc.tools_list(&mut out), 2);
        assert_eq!(enc.tools_call("t", &json!({}), &mut out), 3);
        assert_eq!(enc.next_id(), 4);
    }

    #[test]
    fn unsend_last_reuses_the_id() {
        let mut enc = RequestEncoder::new();
        let mut out = Vec::new();
        enc.initialize(&mut out);
        enc.tools_list(&mut out);
        enc.unsend_last();
        assert_eq!(enc.next_id(), 2);
        assert_eq!(enc.tools_list(&mut out), 2);
    }

    #[test]
    fn large_ids_keep_the_exact_wire_shape() {
        // The largest id that still leaves a next one.
        let id = u64::MAX - 1;
        let mut enc = RequestEncoder::starting_at(id);
        let mut out = Vec::new();
        assert_eq!(enc.tools_call("t", &json!({}), &mut out), id);
        assert_eq!(
            text(&out),
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"tools/call\",\"params\":{{\"name\":\"t\",\"arguments\":{{}}}}}}\n",
                id
            )
        );
    }

    #[test]
    fn unsend_last_never_goes_below_one() {
        let mut enc = RequestEncoder::new();
        enc.unsend_last();
        assert_eq!(enc.next_id(), 1);
    }
}
