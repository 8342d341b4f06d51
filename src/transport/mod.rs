//! The front ends that carry `plugin_tool` requests, and the core they share.
//!
//! Every front end — the stdio JSON-lines transport ([`serve_lines`]), the HTTP transport
//! (`transport::http`, features `http-server` and `http-client`) and any later one — does the
//! same four things through this module:
//! - reads its input with a bound: `frame::read_line` skips an oversized line
//!   instead of ending the stream;
//! - parses `{"id"?, "tool": "plugin_tool", "params": {…}}` with [`parse_request`] (or its own
//!   envelope) and answers bytes that are not a request with [`invalid_request`];
//! - takes an in-flight [`Slot`] from its [`Dispatcher`] before any work (at most
//!   [`MAX_IN_FLIGHT`]; none free → [`saturated`], `gateway_saturated`, not started, nothing
//!   queued), and frees it by dropping it once the response is written;
//! - runs the request with [`Dispatcher::execute`], which answers even a panicking request
//!   (`gateway_internal_error`, outcome unknown), and maps the output's typed
//!   [`code`](crate::gateway::ToolOutput::code) to its own status, never reading the output JSON.
//!
//! The gateway below knows nothing of transports; a transport knows nothing of plugins.

mod dispatcher;
mod id;
mod line_writer;
pub mod observe;
mod request;
mod stdio;

pub use dispatcher::{
    internal_error, invalid_request, saturated, Dispatcher, Slot, MAX_IN_FLIGHT, WORKER_STACK,
};
pub use id::{first_byte, parse_object, Present, RequestId};
pub use line_writer::{drive_lines, Input, LineWriter};
pub use request::{
    parse_request, response_body, Framing, Rejection, Request, ResponseBody, TypedResponseBody,
    TOOL_NAME,
};
pub use stdio::serve_lines;
