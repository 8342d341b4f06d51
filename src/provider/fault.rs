//! Failure classification of one request, as a pure function.
//!
//! When a request ends without a response envelope its I/O (`session`, the response path)
//! returns a [`Fault`]: how much of the frame may have reached the plugin ([`Sent`]), what was
//! read ([`Read`]) and what ended the request ([`End`]). [`classify`] alone turns that into the
//! error code, the dispatch (docs/PROTOCOL.md, failure classification) and whether the instance
//! must be retired: `not_started` when provably no byte was written, else `outcome_unknown` for
//! a tools/call (admission requests have no effect and stay `not_started`); every fault retires
//! except a deadline before any byte was written (docs/DECISIONS.md D-PROV-12).

use crate::error::{Dispatch, Error, ErrorCode};

/// Which request is in flight: it decides what "the frame may have been written" means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestKind {
    /// initialize and tools/list have no effect: a failure after queueing is still not_started.
    Admission,
    /// tools/call: a failure after queueing is outcome_unknown.
    Call,
}

/// How much of the request frame may have reached the plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Provably no byte: the frame was never written or queued, or the writer never claimed it.
    Nothing,
    /// Some bytes may have been written, perhaps all (the writer took over the rest).
    Part,
    /// The whole frame was written.
    All,
}

/// What the request read from the plugin's stdout before it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// No line.
    Nothing,
    /// A line nobody asked for (before the request was sent), or bytes of an unfinished one.
    Unasked,
    /// A line that is not one JSON value; the code says how (`plugin_malformed_json`).
    Garbage(ErrorCode),
    /// A response line that broke the JSON-RPC 2.0 envelope or carried another id.
    BadEnvelope(ErrorCode),
}

/// What ended the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The request's deadline passed.
    Deadline,
    /// The plugin exited (before the request was sent, or without answering within the grace
    /// after its exit).
    PluginExited,
    /// stdout ended or broke; the code says how (end of file, a line longer than 1 MiB, a line
    /// that is not UTF-8, a read error).
    Stdout(ErrorCode),
    /// The host is stopping the provider.
    Stopping,
    /// Writing the frame to the plugin's stdin failed.
    WriterFailed,
    /// The event channel closed under the request.
    Disconnected,
    /// The encoded frame is longer than one protocol line; nothing was sent.
    FrameTooLarge,
    /// The line that was read ([`Read`]) ended it.
    Line,
}

/// Why a request ended without a response envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) sent: Sent,
    pub(crate) read: Read,
    pub(crate) end: End,
}

impl Fault {
    /// A fault with nothing read.
    pub(crate) fn new(sent: Sent, end: End) -> Fault {
        Fault {
            sent,
            read: Read::Nothing,
            end,
        }
    }

    /// A fault ended by the line that was read.
    pub(crate) fn line(sent: Sent, read: Read) -> Fault {
        Fault {
            sent,
            read,
            end: End::Line,
        }
    }
}

/// The classified failure: what the caller is told, and whether the instance must be retired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) code: ErrorCode,
    pub(crate) dispatch: Dispatch,
    pub(crate) message: &'static str,
    pub(crate) retires: bool,
}

impl Failure {
    /// The error the caller sees (marked retiring when it retires the instance).
    pub(crate) fn into_error(self) -> Error {
        let error = Error::new(self.code, self.dispatch, self.message);
        if self.retires {
            error.retiring()
        } else {
            error
        }
    }
}

/// Maps a request's `fault` to its error code, dispatch and retirement (see the module doc).
pub(crate) fn classify(kind: RequestKind, fault: Fault) -> Failure {
    let Fault { sent, read, end } = fault;
    let dispatch = match (sent, kind) {
        (Sent::Nothing, _) | (_, RequestKind::Admission) => Dispatch::NotStarted,
        (Sent::Part | Sent::All, RequestKind::Call) => Dispatch::OutcomeUnknown,
    };
    let retires = !(end == End::Deadline && sent == Sent::Nothing);
    let (code, message) = match end {
        End::Deadline => (ErrorCode::Timeout, deadline_message(sent)),
        End::PluginExited if sent == Sent::Nothing => (ErrorCode::Eof, "the plugin process exited"),
        End::PluginExited => (ErrorCode::Eof, "the plugin exited before answering"),
        End::Stdout(code) => (code, read_fault_message(code)),
        End::Stopping => (ErrorCode::HostStopping, "the plugin host is stopping"),
        End::WriterFailed if sent == Sent::Nothing => {
            (ErrorCode::StdinFailed, "the plugin's stdin is closed")
        }
        End::WriterFailed => (
            ErrorCode::StdinFailed,
            "writing the request to the plugin's stdin failed",
        ),
        End::Disconnected => (ErrorCode::Eof, "the plugin connection is closed"),
        End::FrameTooLarge => (
            ErrorCode::RequestTooLarge,
            "the request is larger than one protocol line (1 MiB)",
        ),
        End::Line => line_code(read),
    };
    Failure {
        code,
        dispatch,
        message,
        retires,
    }
}

fn deadline_message(sent: Sent) -> &'static str {
    match sent {
        Sent::Nothing => "the request timed out before any byte of it was written",
        Sent::Part => "the request timed out while it was being written or answered",
        Sent::All => "the plugin did not answer within the request timeout",
    }
}

/// Code and message for a request ended by the line it read.
fn line_code(read: Read) -> (ErrorCode, &'static str) {
    match read {
        Read::Garbage(code) => (code, read_fault_message(code)),
        Read::BadEnvelope(code) => (
            code,
            "the plugin's response broke the JSON-RPC 2.0 envelope",
        ),
        Read::Unasked | Read::Nothing => (
            ErrorCode::UnexpectedMessage,
            "the plugin wrote to stdout without being asked",
        ),
    }
}

/// The message for a stdout read fault.
pub(crate) fn read_fault_message(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::Eof => "the plugin closed its stdout",
        ErrorCode::MessageTooLarge => "the plugin wrote a line longer than 1 MiB",
        ErrorCode::MalformedJson => "the plugin wrote a line that is not one JSON value",
        _ => "reading the plugin's stdout failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorCode as C;
    use RequestKind::{Admission, Call};

    const NOT_STARTED: Dispatch = Dispatch::NotStarted;
    const UNKNOWN: Dispatch = Dispatch::OutcomeUnknown;

    /// One row: the request kind, the fault, and the code, dispatch and retirement it must get.
    type Row = (RequestKind, Fault, ErrorCode, Dispatch, bool);

    fn ended(sent: Sent, end: End) -> Fault {
        Fault::new(sent, end)
    }

    #[rustfmt::skip]
    fn rows() -> Vec<Row> {
        use End::*;
        use Sent::*;
        vec![
            // Found waiting before anything was sent: not started, retired.
            (Call, Fault::line(Nothing, Read::Unasked), C::UnexpectedMessage, NOT_STARTED, true),
            (Call, Fault::line(Nothing, Read::Garbage(C::MalformedJson)), C::MalformedJson, NOT_STARTED, true),
            (Call, ended(Nothing, Stdout(C::Eof)), C::Eof, NOT_STARTED, true),
            (Call, ended(Nothing, Stdout(C::MessageTooLarge)), C::MessageTooLarge, NOT_STARTED, true),
            (Call, ended(Nothing, PluginExited), C::Eof, NOT_STARTED, true),
            (Call, ended(Nothing, Stopping), C::HostStopping, NOT_STARTED, true),
            (Call, ended(Nothing, Disconnected), C::Eof, NOT_STARTED, true),
            (Call, ended(Nothing, FrameTooLarge), C::RequestTooLarge, NOT_STARTED, true),
            // stdin closed before a byte, or failed after some.
            (Call, ended(Nothing, WriterFailed), C::StdinFailed, NOT_STARTED, true),
            (Call, ended(Part, WriterFailed), C::StdinFailed, UNKNOWN, true),
            (Admission, ended(Part, WriterFailed), C::StdinFailed, NOT_STARTED, true),
            // The deadline: before any byte it keeps the instance; after, it retires it.
            (Call, ended(Nothing, Deadline), C::Timeout, NOT_STARTED, false),
            (Admission, ended(Nothing, Deadline), C::Timeout, NOT_STARTED, false),
            (Call, ended(Part, Deadline), C::Timeout, UNKNOWN, true),
            (Call, ended(All, Deadline), C::Timeout, UNKNOWN, true),
            (Admission, ended(All, Deadline), C::Timeout, NOT_STARTED, true),
            // During the wait.
            (Call, ended(All, PluginExited), C::Eof, UNKNOWN, true),
            (Call, ended(All, Stdout(C::Eof)), C::Eof, UNKNOWN, true),
            (Call, ended(All, Stdout(C::MessageTooLarge)), C::MessageTooLarge, UNKNOWN, true),
            (Call, ended(All, Stdout(C::MalformedJson)), C::MalformedJson, UNKNOWN, true),
            (Call, ended(All, Stdout(C::StdoutFailed)), C::StdoutFailed, UNKNOWN, true),
            (Call, ended(Part, Stopping), C::HostStopping, UNKNOWN, true),
            (Call, ended(All, Disconnected), C::Eof, UNKNOWN, true),
            (Admission, ended(All, Stdout(C::Eof)), C::Eof, NOT_STARTED, true),
            // A response line that is not one, or breaks the envelope.
            (Call, Fault::line(All, Read::Garbage(C::MalformedJson)), C::MalformedJson, UNKNOWN, true),
            (Call, Fault::line(All, Read::BadEnvelope(C::ProtocolError)), C::ProtocolError, UNKNOWN, true),
            (Call, Fault::line(Part, Read::BadEnvelope(C::UnknownResponseId)), C::UnknownResponseId, UNKNOWN, true),
            (Admission, Fault::line(All, Read::BadEnvelope(C::ProtocolError)), C::ProtocolError, NOT_STARTED, true),
        ]
    }

    #[test]
    fn every_fault_gets_its_code_dispatch_and_retirement() {
        for (kind, fault, code, dispatch, retires) in rows() {
            let failure = classify(kind, fault);
            assert_eq!(
                (failure.code, failure.dispatch, failure.retires),
                (code, dispatch, retires),
                "{kind:?} {fault:?}"
            );
            let error = failure.into_error();
            assert_eq!(error.is_fatal(), retires, "{kind:?} {fault:?}");
            assert!(!error.message().is_empty());
        }
    }

    #[test]
    fn only_a_deadline_before_any_byte_keeps_the_instance() {
        let ends = [
            End::Deadline,
            End::PluginExited,
            End::Stdout(C::Eof),
            End::Stopping,
            End::WriterFailed,
            End::Disconnected,
            End::FrameTooLarge,
            End::Line,
        ];
        for end in ends {
            for sent in [Sent::Nothing, Sent::Part, Sent::All] {
                for kind in [Admission, Call] {
                    let failure = classify(kind, Fault::new(sent, end));
                    let keeps = end == End::Deadline && sent == Sent::Nothing;
                    assert_eq!(failure.retires, !keeps, "{kind:?} {sent:?} {end:?}");
                    let expected = match (sent, kind) {
                        (Sent::Nothing, _) | (_, Admission) => NOT_STARTED,
                        _ => UNKNOWN,
                    };
                    assert_eq!(failure.dispatch, expected, "{kind:?} {sent:?} {end:?}");
                }
            }
        }
    }
}
