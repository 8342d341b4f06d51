//! Newline-delimited JSON-RPC 2.0 framing for protocol `webcodex-plugin-v1`.
//!
//! Pure: no process code. The bounded [`LineReader`] reads one line of at most
//! [`MAX_LINE_BYTES`] (every fault ends the connection); [`read_line`] reads one line under the
//! same bound but skips an oversized line and goes on, for readers that serve requests (it, the
//! bound and the version string belong to the plugin SDK, `webcodex-plugin-sdk`, which both
//! ends of the protocol share). The [`RequestEncoder`] writes the three requests the host sends;
//! [`check_json_bounds`] enforces the JSON bounds (docs/PROTOCOL.md §3.2) on one value. A
//! response is decoded by serde straight into a [`RawEnvelope`] ([`ResponseLine::decode`] or
//! [`decode_response`], then [`validate_raw`]), without building a `Value` for the envelope.
//!
//! The hand-tuned byte code — the JSON writer of a request, the read of a call's answer line
//! and of its tool result, the UTF-8 check of a line — is in one module, `fast`, each piece with
//! the plain path beside it as its test oracle; only that module may hold `unsafe`.

mod bounded;
mod bounds;
mod encode;
mod envelope;
#[allow(unsafe_code)] // hand-tuned byte code (the fast-path door)
mod fast;
mod reader;
mod text;

#[cfg(test)]
pub(crate) use bounds::check_json_bounds_measured;
pub use bounds::{check_json_bounds, check_json_bounds_sized, JsonBoundsError, MAX_DEPTH};
pub(crate) use bounds::{is_plain, BoundsVerdict, Measured, Tally};
pub(crate) use bounds::{MAX_CONTENT_ITEMS, MAX_RESULT_BYTES, MAX_TEXT_BYTES};
pub use bounds::{MAX_KEY_BYTES, MAX_NODES, MAX_STRING_BYTES};
pub(crate) use encode::tools_call_head;
pub use encode::RequestEncoder;
pub(crate) use envelope::validate_raw_bounded;
pub use envelope::{
    decode_response, validate_raw, Envelope, EnvelopeFault, RawEnvelope, ResponseLine,
};
pub use fast::usual_result;
pub(crate) use fast::{scan_result, CanonicalResult, ScannedResult};
pub use reader::LineReader;
pub use text::ReadFault;
/// The protocol version string exchanged in `initialize` (the plugin SDK's).
pub use webcodex_plugin_sdk::PROTOCOL_VERSION;
/// The bounded reader that skips an oversized line: the plugin SDK's, which owns the framing.
pub use webcodex_plugin_sdk::{read_line, Line};

/// The longest protocol line in either direction, without its newline (the plugin SDK's).
pub use webcodex_plugin_sdk::MAX_LINE_BYTES;
