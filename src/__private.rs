//! Not API: what this crate's benches and fuzz targets, and the workspace's tests, reach that
//! an embedder does not. Nothing here is stable, documented for use or covered by semver; it
//! may change in any release.
//!
//! Always compiled (no feature switches it on), and hidden from the docs. The oracles the tests
//! compare the fast paths with live in the tests themselves.

/// The framing layer: the line reader, the request encoder, the response envelope and the JSON
/// bounds (the `frame` benches, the `frame_envelope` and `schema_matching` fuzz targets).
pub mod frame {
    /// The fast path's read of a call's answer line: its unchecked result text.
    pub use crate::frame::usual_result;
    pub use crate::frame::{
        check_json_bounds, check_json_bounds_sized, decode_response, validate_raw, Envelope,
        EnvelopeFault, JsonBoundsError, LineReader, RawEnvelope, ReadFault, RequestEncoder,
        ResponseLine, MAX_DEPTH, MAX_KEY_BYTES, MAX_LINE_BYTES, MAX_NODES, MAX_STRING_BYTES,
    };
}

/// One provider's bounds and build mode (the runtime tests in `tests/runtime`).
pub mod provider {
    pub use crate::provider::{
        response_wait_mode, FAULT_LOG_STDERR_LINES, FORCE_EXIT_WAITER_ENV, STDERR_MAX_LINES,
        STDERR_MAX_LINE_BYTES, STDERR_MAX_TOTAL_BYTES,
    };
}

/// A tool result read from its text: one scan when it is sure, else decoded and validated as a
/// `Value` (the `tool_result_text` fuzz target compares it with `catalog::validate_tool_result`).
pub use crate::catalog::result::validate_tool_result_text;
