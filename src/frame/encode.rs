//! Encoding of the three requests the host sends.

use serde_json::Value;

/// The protocol version string exchanged in initialize.
pub const PROTOCOL_VERSION: &str = "webcodex-plugin-v1";

/// Encodes requests with ids starting at 1 and increasing by 1 per sent request.
///
/// Frames are written compactly (no spaces) with keys in the order
/// `jsonrpc`, `id`, `method`, `params`, each followed by `\n`.
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
    #[cfg(any(test, feature = "internals"))]
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Encodes `initialize` into `out` (cleared first), newline included; returns its id.
    pub fn initialize(&mut self, out: &mut Vec<u8>) -> u64 {
        let id = self.begin(out, "initialize");
        out.extend_from_slice(b"{\"protocolVersion\":\"");
        out.extend_from_slice(PROTOCOL_VERSION.as_bytes());
        out.extend_from_slice(b"\"}}\n");
        id
    }

    /// Encodes `tools/list` with `{}` params into `out` (cleared first); returns its id.
    pub fn tools_list(&mut self, out: &mut Vec<u8>) -> u64 {
        let id = self.begin(out, "tools/list");
        out.extend_from_slice(b"{}}\n");
        id
    }

    /// Encodes `tools/call` of tool `name` with `arguments` into `out` (cleared first); returns
    /// its id. The caller checks the frame against `MAX_LINE_BYTES` before sending it.
    pub fn tools_call(&mut self, name: &str, arguments: &Value, out: &mut Vec<u8>) -> u64 {
        let id = self.begin(out, "tools/call");
        out.extend_from_slice(b"{\"name\":");
        serde_json::to_writer(&mut *out, name).expect("serializing a str into a Vec cannot fail");
        out.extend_from_slice(b",\"arguments\":");
        serde_json::to_writer(&mut *out, arguments)
            .expect("serializing a Value into a Vec cannot fail");
        out.extend_from_slice(b"}}\n");
        id
    }

    /// Gives back the last id when its frame provably never reached the plugin, so that the
    /// plugin keeps seeing consecutive ids. Does nothing before the first request.
    pub fn unsend_last(&mut self) {
        if self.next_id > 1 {
            self.next_id -= 1;
        }
    }

    /// Clears `out`, writes everything up to and including `"params":`, and takes the next id.
    fn begin(&mut self, out: &mut Vec<u8>, method: &str) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        out.clear();
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        push_u64(out, id);
        out.extend_from_slice(b",\"method\":\"");
        out.extend_from_slice(method.as_bytes());
        out.extend_from_slice(b"\",\"params\":");
        id
    }
}

/// Appends the decimal digits of `n` (no sign, no leading zeros) without the formatting
/// machinery: the digits are produced right to left into a stack buffer.
fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    // u64::MAX has 20 digits.
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

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
            assert_eq!(text(&out), format!("x{n}"));
        }
    }

    #[test]
    fn large_ids_keep_the_exact_wire_shape() {
        // The largest id that still leaves a next one.
        let id = u64::MAX - 1;
        let mut enc = RequestEncoder { next_id: id };
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
