//! The hand-tuned byte code of the crate, in one place: what buys the stdio call path its
//! instruction count, each piece with the plain path beside it as its differential oracle.
//!
//! | piece | what it does | its oracle in the tests |
//! |---|---|---|
//! | [`line`] | a line's end and whether it is ASCII (SSE2 on x86-64), its text | `memchr`, `str::from_utf8` |
//! | [`bytes`] | the run of a string JSON writes as it is, eight bytes a step | a byte-by-byte look |
//! | [`cursor`] | the byte steps of the scan below | (through the scan) |
//! | [`write`] | a `Value`'s compact JSON, a request id's digits | `serde_json::to_writer`, `Display` |
//! | [`reply`] | a call's answer line: its result text, by comparison | `decode_response` + `validate_raw` |
//! | [`result`] | a tool result read in one scan, its canonical text | decoding + `validate_tool_result` |
//!
//! One word-wise test stays below this module, in `frame::bounds` (which this module builds on):
//! `is_plain`, whether a whole string is written as it is, safe code that the bounds' tally
//! needs; its tests compare it with a byte-by-byte look, those of [`bytes`] with `string_run`.
//!
//! Each fast path only ever accepts what its oracle accepts, and gives the same answer; what
//! it is not sure of it leaves to the plain path, which decides every verdict, fault and byte.
//! The fuzz targets `frame_envelope` and `tool_result_text` compare the two paths on arbitrary
//! input, the tests here and in `catalog::result` on generated input.
//!
//! The only `unsafe` of the protocol layer is here, three blocks, each with its reason:
//! the SSE2 loads of [`find_line`], the UTF-8 conversion of a line [`find_line`] saw to be ASCII
//! ([`utf8`]), and the conversion of a canonical result text to a `RawValue` without parsing it
//! again (`result::raw`).

mod bytes;
mod cursor;
mod line;
mod reply;
mod result;
pub(crate) mod write;

pub(crate) use line::{find_line, utf8};
pub use reply::usual_result;
pub(crate) use result::{scan_result, CanonicalResult, ScannedResult};
pub(crate) use write::Digits;
