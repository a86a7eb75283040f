//! A started stream as a `futures` [`Stream`] of events.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;
use steadfast_http::{Interruption, Next, Provider, SseEvent, TextEvent, TextFold, TextStep};
use tokio::time::Instant;

use crate::StreamError;
use crate::drive::Opened;

type Item = Result<SseEvent, StreamError>;

/// No event came within the stall timeout.
struct Stalled;

/// The next piece of the body, before `by` (the last event's instant plus the stall
/// timeout) when there is a stall timeout.
async fn read(
    o: &mut Opened,
    by: Option<Instant>,
) -> Result<reqwest::Result<Option<bytes::Bytes>>, Stalled> {
    match by {
        Some(by) => tokio::time::timeout_at(by, o.resp.chunk())
            .await
            .map_err(|_| Stalled),
        None => Ok(o.resp.chunk().await),
    }
}

/// The events of a started stream: the first one (already received), then the rest
/// as they arrive. After an `Err` (the stream was interrupted; it carries the text so
/// far) or the final event, it ends.
pub struct EventStream {
    inner: Pin<Box<dyn Stream<Item = Item> + Send>>,
    /// The API whose events it yields.
    shape: Provider,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

impl EventStream {
    pub(crate) fn new(opened: Option<Opened>) -> EventStream {
        let shape = opened
            .as_ref()
            .map_or(Provider::OpenAi, |o| o.reader.handed_over());
        // The first event has just arrived: the first gap starts now.
        let state = opened.map(|o| {
            let by = o.stall.map(|gap| Instant::now() + gap);
            (o, by)
        });
        let inner = futures_util::stream::unfold(state, |state| async move {
            let (mut o, mut by) = state?;
            loop {
                let next = match o.reader.next_item() {
                    Next::Read => match read(&mut o, by).await {
                        Err(Stalled) => o.reader.on_error(Interruption::Stalled, None),
                        Ok(Ok(Some(bytes))) => {
                            o.reader.push(&bytes);
                            continue;
                        }
                        Ok(Ok(None)) => o.reader.on_eof(),
                        Ok(Err(e)) => {
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
                // Bytes that make no event (comments, filler) do not reset the stall.
                if let (Next::Item(Ok(_)), Some(gap)) = (&next, o.stall) {
                    by = Some(Instant::now() + gap);
                }
                return match next {
                    Next::Item(item) => Some((item, Some((o, by)))),
                    Next::Read | Next::End => None,
                };
            }
        });
        EventStream {
            inner: Box::pin(inner),
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
    pub fn text(self) -> TextStream {
        let fold = TextFold::new(self.shape);
        let inner = futures_util::stream::unfold((self, fold), |(mut events, mut fold)| async {
            use futures_util::StreamExt;
            while !fold.is_over() {
                let item = events.next().await;
                match fold.step(item) {
                    TextStep::Yield(out) => return Some((out, (events, fold))),
                    TextStep::Skip => {}
                    TextStep::End => return None,
                }
            }
            None
        });
        TextStream {
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

/// A stream read as text (see [`EventStream::text`]); with
/// [`StreamExt`](crate::StreamExt) in scope, `while let Some(ev) = text.next().await`.
pub struct TextStream {
    inner: Pin<Box<dyn Stream<Item = TextItem> + Send>>,
}

type TextItem = Result<TextEvent, StreamError>;

impl std::fmt::Debug for TextStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextStream").finish_non_exhaustive()
    }
}

impl Stream for TextStream {
    type Item = TextItem;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TextItem>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl Stream for EventStream {
    type Item = Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}
