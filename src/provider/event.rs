//! What the provider's threads tell its coordinator: one typed message per happening, sent
//! over the one bounded event channel ([`EventSender`] → a plain `Receiver`; see `io` for
//! the threads). A response path whose caller may sleep elsewhere than on the channel (the Linux
//! direct read) gives the senders a [`Wake`] to call after each event.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, TrySendError};

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

/// How senders wake a caller that does not sleep on the event channel itself.
pub(crate) trait Wake: Send + Sync + Debug {
    /// After an event was queued (or could not be, the channel being full); `exit` when the
    /// event is the plugin's exit.
    fn notify(&self, exit: bool);
}

/// The senders' end of the event channel (reader, writer, exit watch, `stop()`).
#[derive(Debug, Clone)]
pub(crate) struct EventSender {
    events: Sender<Event>,
    wake: Option<Arc<dyn Wake>>,
}

impl EventSender {
    /// Sends `event`, blocking while the channel is full; `Err` once the coordinator is gone.
    pub(crate) fn send(&self, event: Event) -> Result<(), Event> {
        let exit = matches!(event, Event::Exited);
        self.events.send(event).map_err(|e| e.into_inner())?;
        self.notify(exit);
        Ok(())
    }

    /// Sends `event` if the channel has room; gives it back when the channel is full or closed.
    /// A full channel wakes the caller too: it has events to read and must not sleep through
    /// them (an announcement such as `Stopping` may be dropped then).
    pub(crate) fn try_send(&self, event: Event) -> Result<(), TrySendError<Event>> {
        let exit = matches!(event, Event::Exited);
        let sent = self.events.try_send(event);
        if !matches!(sent, Err(TrySendError::Disconnected(_))) {
            self.notify(exit);
        }
        sent
    }

    #[inline]
    fn notify(&self, exit: bool) {
        if let Some(wake) = &self.wake {
            wake.notify(exit);
        }
    }
}

/// The event channel, bounded to `capacity`, with the response path's wake-up `wake` (if any).
pub(crate) fn event_channel(
    capacity: usize,
    wake: Option<Arc<dyn Wake>>,
) -> (EventSender, Receiver<Event>) {
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    (EventSender { events: tx, wake }, rx)
}
