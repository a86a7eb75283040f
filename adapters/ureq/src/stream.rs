//! A started stream as an iterator of events.

use std::io::Read;

use steadfast_http::{Interruption, Next, SseEvent};

use crate::StreamError;
use crate::drive::Opened;

/// The events of a started stream: the first one (already received), then the rest
/// as they arrive (each `next` blocks until one does). After an `Err` (the stream was
/// interrupted; it carries the text so far) or the final event, it ends.
pub struct EventIter {
    opened: Option<Opened>,
    buf: Vec<u8>,
}

impl std::fmt::Debug for EventIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventIter").finish_non_exhaustive()
    }
}

impl EventIter {
    pub(crate) fn new(opened: Option<Opened>) -> EventIter {
        EventIter {
            opened,
            buf: vec![0u8; 8 * 1024],
        }
    }

    /// Reads the whole stream and returns the events, stopping at the first error.
    pub fn collect_events(self) -> Result<Vec<SseEvent>, StreamError> {
        self.collect()
    }
}

impl Iterator for EventIter {
    type Item = Result<SseEvent, StreamError>;

    fn next(&mut self) -> Option<Self::Item> {
        let o = self.opened.as_mut()?;
        loop {
            let next = match o.reader.next_item() {
                Next::Read => match o.body.read(&mut self.buf) {
                    Ok(0) => o.reader.on_eof(),
                    Ok(n) => {
                        o.reader.push(self.buf.get(..n).unwrap_or_default());
                        continue;
                    }
                    Err(e) => {
                        let e = ureq::Error::from(e);
                        let cause = match e {
                            ureq::Error::Timeout(_) => Interruption::Timeout,
                            _ => Interruption::Cut,
                        };
                        o.reader.on_error(cause, Some(e))
                    }
                },
                next => next,
            };
            return match next {
                Next::Item(item) => Some(item),
                Next::Read | Next::End => {
                    self.opened = None;
                    None
                }
            };
        }
    }
}
