//! What the provider's threads tell its coordinator: one typed message per happening, sent
//! over the bounded event channel (see `io` for the threads, `wait` for how the caller waits).

use std::time::Duration;

use crate::error::ErrorCode;
use crate::frame::ResponseLine;

/// After the plugin exits, how long a response already in the pipe may still take to arrive.
pub(crate) const EXIT_GRACE: Duration = Duration::from_millis(200);

/// Something the coordinator must hear about.
#[derive(Debug)]
pub(crate) enum Event {
    /// One stdout line that passed the line checks; the coordinator decodes it.
    Message(ResponseLine),
    /// stdout ended or broke; the code says how. Terminal.
    ReadFault(ErrorCode),
    /// Writing a job failed; `wrote_any` says whether any byte of it was written.
    WriteFailed { wrote_any: bool },
    /// The plugin process exited (judged by wait status, not by pipe EOF).
    Exited,
    /// The host is stopping this provider.
    Stopping,
}
