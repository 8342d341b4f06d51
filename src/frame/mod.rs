//! Newline-delimited JSON-RPC 2.0 framing for protocol `webcodex-plugin-v1`.
//!
//! Pure: no process code. The bounded [`LineReader`] reads one line of at most
//! [`MAX_LINE_BYTES`] (every fault ends the connection); [`read_line`] reads one line under the
//! same bound but skips an oversized line and goes on, for readers that serve requests (it, the
//! bound and the version string belong to the plugin SDK, `webcodex-plugin-sdk`, which both
//! ends of the protocol share). The [`RequestEncoder`] writes the three requests the host sends;
//! [`check_json_bounds`] enforces the JSON bounds (docs/PROTOCOL.md §3.2) on one value. A
//! response is checked on the typed path — [`LineReader::read_response`] or [`decode_response`],
//! then [`validate_raw`] — which decodes a line straight into a [`RawEnvelope`], without building
//! a `Value` for the envelope.

mod bounded;
mod bounds;
mod cursor;
mod encode;
mod envelope;
mod plain;
mod reader;
#[allow(unsafe_code)] // hand-tuned byte code (the fast-path door)
mod text;
mod write;

#[cfg(test)]
pub(crate) use bounds::check_json_bounds_measured;
pub use bounds::{check_json_bounds, check_json_bounds_sized, JsonBoundsError, MAX_DEPTH};
pub(crate) use bounds::{is_plain, string_run, BoundsVerdict, Measured, Tally};
#[cfg(any(test, feature = "internals", feature = "fuzzing"))]
pub use bounds::{MAX_KEY_BYTES, MAX_NODES, MAX_STRING_BYTES};
pub(crate) use cursor::Cursor;
pub(crate) use encode::tools_call_head;
pub use encode::RequestEncoder;
pub(crate) use envelope::validate_raw_bounded;
#[cfg(any(test, feature = "internals"))]
#[doc(hidden)]
pub use envelope::validate_response;
#[cfg(any(test, feature = "internals", feature = "fuzzing"))]
pub use envelope::{decode_response, validate_raw, EnvelopeFault, RawEnvelope};
pub use envelope::{Envelope, ResponseLine};
#[cfg(test)]
pub(crate) use plain::usual_result;
pub use plain::PlainJson;
pub use reader::LineReader;
#[cfg(any(test, feature = "internals", feature = "fuzzing"))]
pub use text::ReadFault;
/// The protocol version string exchanged in `initialize` (the plugin SDK's).
pub use webcodex_plugin_sdk::PROTOCOL_VERSION;
/// The bounded reader that skips an oversized line: the plugin SDK's, which owns the framing.
pub use webcodex_plugin_sdk::{read_line, Line};

/// The longest protocol line in either direction, without its newline (the plugin SDK's).
pub use webcodex_plugin_sdk::MAX_LINE_BYTES;
