//! A started stream as an iterator of events.

use std::io::Read;

use steadfast_http::{Interruption, Next, Provider, SseEvent, TextEvent, TextFold, TextStep};

use crate::StreamError;
use crate::drive::Opened;

/// The events of a started stream: the first one (already received), then the rest
/// as they arrive (each `next` blocks until one does). After an `Err` (the stream was
/// interrupted; it carries the text so far) or the final event, it ends.
pub struct EventIter {
    opened: Option<Opened>,
    buf: Vec<u8>,
    /// The API whose events it yields.
    shape: Provider,
}

impl std::fmt::Debug for EventIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventIter").finish_non_exhaustive()
    }
}

impl EventIter {
    pub(crate) fn new(opened: Option<Opened>) -> EventIter {
        let shape = opened
            .as_ref()
            .map_or(Provider::OpenAi, |o| o.reader.handed_over());
        EventIter {
            opened,
            buf: vec![0u8; 8 * 1024],
            shape,
        }
    }

    /// The API whose events it yields: OpenAI's chunks for a canonical call, whoever
    /// answered it.
    pub fn shape(&self) -> Provider {
        self.shape
    }

    /// The stream read as text: each delta as it arrives, then the whole message
    /// ([`TextEvent::Done`]); an interruption ends it with the text so far.
    pub fn text(self) -> TextIter {
        TextIter {
            fold: TextFold::new(self.shape),
            events: self,
        }
    }

    /// Reads the whole stream and returns the events, stopping at the first error.
    pub fn collect_events(self) -> Result<Vec<SseEvent>, StreamError> {
        self.collect()
    }
}

/// A stream read as text (see [`EventIter::text`]).
#[derive(Debug)]
pub struct TextIter {
    events: EventIter,
    fold: TextFold,
}

impl Iterator for TextIter {
    type Item = Result<TextEvent, StreamError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.fold.is_over() {
            match self.fold.step(self.events.next()) {
                TextStep::Yield(out) => return Some(out),
                TextStep::Skip => {}
                TextStep::End => return None,
            }
        }
        None
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
