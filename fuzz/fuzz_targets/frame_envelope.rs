//! The line reader and the response envelope.
//!
//! Reads the input as a plugin's stdout twice — whole (`read_value` + `validate_response`) and
//! through a tiny buffer that splits lines across reads (`read_response` + `validate_raw`) — and
//! requires both paths to see the same lines, the same faults and the same envelope verdicts.
//!
//! Control byte: bit 6 = first expected id; `0xe0..=0xe3` = prefix the stream with spaces so
//! that its first line ends near the 1 MiB line bound; the other bits choose the read chunk
//! size.
#![no_main]

use std::io::{BufReader, Cursor};

use libfuzzer_sys::fuzz_target;
use webcodex_plugin_host::frame::{
    validate_raw, validate_response, Envelope, LineReader, MAX_LINE_BYTES,
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
    for n in 0..MAX_LINES {
        let expected = first_id + n;
        match (whole.read_value(), split.read_response()) {
            (Ok(value), Ok(raw)) => {
                let by_value = validate_response(value, expected);
                let by_type = validate_raw(raw, expected);
                assert_eq!(by_value, by_type, "the two envelope paths disagree");
                if let Ok(Envelope::Error { message, .. }) = &by_value {
                    assert!((1..=512).contains(&message.len()), "error message bound");
                }
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
