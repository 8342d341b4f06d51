//! The line reader, the response envelope and the fast read of a call's answer line.
//!
//! Reads the input as a plugin's stdout twice — whole, each line parsed as a `Value` and checked
//! by the envelope rules written out below (the oracle), and through a tiny buffer that splits
//! lines across reads, each line read and decoded as the host does (`read_response_line_into`,
//! `ResponseLine::decode`, `validate_raw`) — and requires both paths to see the same lines, the
//! same faults and the same envelope verdicts. Where the fast path of a call's answer
//! (`usual_result`) finds a result text that is one JSON value, the oracle must read the line as
//! exactly that result.
//!
//! Control byte: bit 6 = first expected id; `0xe0..=0xe3` = prefix the stream with spaces so
//! that its first line ends near the 1 MiB line bound; the other bits choose the read chunk
//! size.
#![no_main]

use std::io::{BufReader, Cursor};

use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use webcodex_plugin_host::{
    __private::frame::usual_result, __private::frame::validate_raw, __private::frame::Envelope,
    __private::frame::EnvelopeFault, __private::frame::LineReader, __private::frame::ReadFault,
    __private::frame::MAX_LINE_BYTES,
};

/// Most responses read from one input.
const MAX_LINES: u64 = 64;

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let first_id = u64::from((control >> 6) & 1);
    // Rare (1 input in 64): a megabyte per execution is slow.
    let near_bound = control & 0xfc == 0xe0;
    // Reads of 1..=64 bytes; near the bound, reads of about 1..64 KiB (odd sizes).
    let chunk = match near_bound {
        false => usize::from(control & 0x3f) + 1,
        true => usize::from(control & 0x1f) * 2048 + 1021,
    };
    let mut stream = Vec::new();
    if near_bound {
        // Leading spaces are valid JSON whitespace: the first line's length lands around the
        // bound (within the input's own length of it).
        stream.resize(MAX_LINE_BYTES - 32, b' ');
    }
    stream.extend_from_slice(rest);

    let mut whole = LineReader::new(Cursor::new(&stream[..]));
    let mut split = LineReader::new(BufReader::with_capacity(chunk, &stream[..]));
    let mut buffer = String::new();
    for n in 0..MAX_LINES {
        let expected = first_id + n;
        let read = split
            .read_response_line_into(&mut buffer)
            .and_then(|line| Ok((line.decode()?, line.into_buffer())));
        match (whole.read_line_with(parse_value), read) {
            (Ok(value), Ok((raw, text))) => {
                let by_value = validate_response(value, expected);
                let by_type = validate_raw(raw, expected);
                assert_eq!(by_value, by_type, "the two envelope paths disagree");
                if let Ok(Envelope::Error { message, .. }) = &by_value {
                    assert!((1..=512).contains(&message.len()), "error message bound");
                }
                let fast = usual_result(&text, expected).map(serde_json::from_str::<Value>);
                if let Some(Ok(result)) = fast {
                    assert_eq!(
                        by_value,
                        Ok(Envelope::Result(result)),
                        "the fast read of the answer line disagrees"
                    );
                }
                buffer = text;
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.code(), b.code(), "the two read paths fault differently");
                return;
            }
            (a, b) => panic!(
                "the read paths disagree: value path ok={}, typed path ok={}",
                a.is_ok(),
                b.is_ok()
            ),
        }
    }
});

/// A line's text parsed as exactly one JSON value.
fn parse_value(text: &str) -> Result<Value, ReadFault> {
    serde_json::from_str(text).map_err(|_| ReadFault::Malformed)
}

/// The envelope rules (docs/PROTOCOL.md §2.6) on a parsed `Value`, in their order: an object
/// with `"jsonrpc":"2.0"` and no `method`; an `id` that is a non-negative integer, equal to
/// `expected_id`; exactly one of `result`/`error`, where `error` has an integer `code` and a
/// `message` of 1..=512 bytes.
fn validate_response(message: Value, expected_id: u64) -> Result<Envelope, EnvelopeFault> {
    let Value::Object(mut map) = message else {
        return Err(EnvelopeFault::Protocol);
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") || map.contains_key("method") {
        return Err(EnvelopeFault::Protocol);
    }
    let id = match map.get("id") {
        Some(Value::Number(n)) => n.as_u64().ok_or(EnvelopeFault::IdInvalid)?,
        _ => return Err(EnvelopeFault::IdInvalid),
    };
    if id < expected_id {
        return Err(EnvelopeFault::DuplicateId);
    }
    if id > expected_id {
        return Err(EnvelopeFault::UnknownId);
    }
    match (map.remove("result"), map.remove("error")) {
        (Some(result), None) => Ok(Envelope::Result(result)),
        (None, Some(Value::Object(error))) => rpc_error(error),
        _ => Err(EnvelopeFault::Protocol),
    }
}

fn rpc_error(mut error: Map<String, Value>) -> Result<Envelope, EnvelopeFault> {
    let code = match error.get("code") {
        Some(Value::Number(n)) => n.as_i64().ok_or(EnvelopeFault::Protocol)?,
        _ => return Err(EnvelopeFault::Protocol),
    };
    match error.remove("message") {
        Some(Value::String(message)) if (1..=512).contains(&message.len()) => {
            Ok(Envelope::Error { code, message })
        }
        _ => Err(EnvelopeFault::Protocol),
    }
}
