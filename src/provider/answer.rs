//! How a round trip reads the line that answers it: any response as its envelope, or a call's
//! result read from its text in one scan when the line has the usual form.

use super::fault::Read;
use crate::catalog::{scan_tool_result, ScannedResult};
use crate::frame::{validate_raw_bounded, BoundsVerdict, Envelope, ResponseLine};

/// How a round trip reads the line that answers it.
pub(crate) trait ReadAnswer {
    /// What the line becomes.
    type Answer;
    /// Reads `line`, the response to the request with id `id`: its answer, or why the line
    /// is none.
    fn read(&mut self, line: &ResponseLine, id: u64) -> Result<Self::Answer, Read>;
}

/// Reads any response: its envelope, and the result's JSON bounds verdict found while it was
/// parsed (`None` when only a walk over the result can tell).
pub(crate) struct AnyResponse;

impl ReadAnswer for AnyResponse {
    type Answer = (Envelope, Option<BoundsVerdict>);

    #[inline]
    fn read(&mut self, line: &ResponseLine, id: u64) -> Result<Self::Answer, Read> {
        match line.decode().map(|raw| validate_raw_bounded(raw, id)) {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(fault)) => Err(Read::BadEnvelope(fault.code())),
            // Not one JSON value: the same fault the reader reports for a bad line.
            Err(fault) => Err(Read::Garbage(fault.code())),
        }
    }
}

/// Reads the answer to a tools/call: the result read from its text when the line has one of the
/// usual forms and the scan is sure of it, else the line's envelope as [`AnyResponse`] reads it
/// (and the same faults).
pub(crate) struct CallAnswer;

/// What [`CallAnswer`] read.
pub(crate) enum Called {
    /// The result, scanned from the line's text (only the output schema is left to check).
    Scanned(ScannedResult),
    /// The line's envelope and its result's bounds verdict, as [`AnyResponse`] reads them.
    Line(Envelope, Option<BoundsVerdict>),
}

impl ReadAnswer for CallAnswer {
    type Answer = Called;

    #[inline]
    fn read(&mut self, line: &ResponseLine, id: u64) -> Result<Called, Read> {
        // A scanned result is one valid JSON value within the bounds, so the line is valid
        // JSON with a valid envelope: what decoding it would have found.
        if let Some((line_id, text)) = line.usual_result() {
            if line_id == id {
                if let Some(scanned) = scan_tool_result(text) {
                    return Ok(Called::Scanned(scanned));
                }
            }
        }
        let (envelope, bounds) = AnyResponse.read(line, id)?;
        Ok(Called::Line(envelope, bounds))
    }
}
