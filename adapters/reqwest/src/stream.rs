//! A started stream as a `futures` [`Stream`] of events.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;
use steadfast_http::{Interruption, Next, SseEvent};

use crate::StreamError;
use crate::drive::Opened;

type Item = Result<SseEvent, StreamError>;

/// The events of a started stream: the first one (already received), then the rest
/// as they arrive. After an `Err` (the stream was interrupted; it carries the text so
/// far) or the final event, it ends.
pub struct EventStream {
    inner: Pin<Box<dyn Stream<Item = Item> + Send>>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

impl EventStream {
    pub(crate) fn new(opened: Option<Opened>) -> EventStream {
        let inner = futures_util::stream::unfold(opened, |state| async move {
            let mut o = state?;
            loop {
                let next = match o.reader.next_item() {
                    Next::Read => match o.resp.chunk().await {
                        Ok(Some(bytes)) => {
                            o.reader.push(&bytes);
                            continue;
                        }
                        Ok(None) => o.reader.on_eof(),
                        Err(e) => {
                            let cause = if e.is_timeout() {
                                Interruption::Timeout
                            } else {
                                Interruption::Cut
                            };
                            o.reader.on_error(cause, Some(e))
                        }
                    },
                    next => next,
                };
                return match next {
                    Next::Item(item) => Some((item, Some(o))),
                    Next::Read | Next::End => None,
                };
            }
        });
        EventStream {
            inner: Box::pin(inner),
        }
    }

    /// Reads the whole stream and returns the events, stopping at the first error.
    pub async fn collect_events(mut self) -> Result<Vec<SseEvent>, StreamError> {
        use futures_util::StreamExt;
        let mut out = Vec::new();
        while let Some(item) = self.next().await {
            out.push(item?);
        }
        Ok(out)
    }
}

impl Stream for EventStream {
    type Item = Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}
