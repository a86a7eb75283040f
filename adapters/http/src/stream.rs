//! The reading of a started stream, shared by the async and the blocking adapter: bytes
//! in, events (or the interruption, with the text so far) out.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::chat::{FromAnthropicStream, ToAnthropicStream};
use crate::error::{DEFAULT_MAX_BODY, Interruption, StreamError};
use crate::metrics::Metrics;
use crate::provider::Provider;
use crate::sse::{EventKind, SseEvent, SseParser, StreamText};
use crate::telemetry::StreamTrace;

/// What the reader wants next.
#[derive(Debug)]
pub enum Next<E> {
    /// Hand this to the caller.
    Item(Result<SseEvent, StreamError<E>>),
    /// Read more bytes and [`EventReader::push`] them (or report the end or an error).
    Read,
    /// The stream is over.
    End,
}

/// Reads one provider's event stream. Before the first event reaches the caller the
/// adapter uses [`EventReader::first_event`] (the call may still be retried); after,
/// [`EventReader::next_item`], and failures become [`StreamError::Interrupted`] with the
/// text received so far.
///
/// Memory stays bounded by its limit ([`DEFAULT_MAX_BODY`] unless set with
/// [`EventReader::with_limit`]): an unfinished event, or the text kept, that grows past
/// it ends the stream ([`EventReader::over_limit`]; [`Interruption::TooLarge`] once
/// handed over).
#[derive(Debug)]
pub struct EventReader {
    parser: SseParser,
    text: StreamText,
    /// Events read and not yet handed over (translated ones, for a canonical call).
    ready: VecDeque<SseEvent>,
    /// For a call in the other API's shape than the endpoint's: the translation of
    /// its events.
    translate: Option<Translation>,
    over: bool,
    limit: u64,
    metrics: Option<Arc<Metrics>>,
    /// The stream's call, ended with the stream (see [`crate::telemetry`]).
    trace: Option<StreamTrace>,
}

/// How a translated stream's events become the call's.
#[derive(Debug)]
enum Translation {
    /// Anthropic's events as OpenAI chunks.
    FromAnthropic(Box<FromAnthropicStream>),
    /// OpenAI chunks as Anthropic's events.
    ToAnthropic(Box<ToAnthropicStream>),
}

impl EventReader {
    /// A reader of `provider`'s events.
    pub fn new(provider: Provider) -> EventReader {
        EventReader {
            parser: SseParser::new(),
            text: StreamText::new(provider),
            ready: VecDeque::new(),
            translate: None,
            over: false,
            limit: DEFAULT_MAX_BODY,
            metrics: None,
            trace: None,
        }
    }

    /// The same reader with this limit, in bytes, on an unfinished event and on the
    /// text kept.
    #[must_use]
    pub fn with_limit(mut self, limit: u64) -> EventReader {
        self.limit = limit;
        self
    }

    /// The same reader handing over an Anthropic stream as `chat.completion.chunk`s
    /// (ending with a usage chunk when `include_usage`, then `[DONE]`), stamped
    /// `created` (Unix seconds): the stream of a canonical call.
    #[must_use]
    pub fn translating(mut self, created: u64, include_usage: bool) -> EventReader {
        let t = FromAnthropicStream::new(created, include_usage);
        self.translate = Some(Translation::FromAnthropic(Box::new(t)));
        self
    }

    /// The same reader handing over an OpenAI stream as Anthropic's events: the
    /// stream of a call in Anthropic's shape sent to an OpenAI endpoint.
    #[must_use]
    pub fn translating_to_anthropic(mut self) -> EventReader {
        self.translate = Some(Translation::ToAnthropic(Box::default()));
        self
    }

    /// The API whose events the reader hands over: the call's, when translated.
    pub fn handed_over(&self) -> Provider {
        match &self.translate {
            Some(Translation::FromAnthropic(_)) => Provider::OpenAi,
            Some(Translation::ToAnthropic(_)) => Provider::Anthropic,
            None => self.text.provider(),
        }
    }

    /// Whether an unfinished event, or the text kept, has grown past the limit: the
    /// stream must not be read further.
    pub fn over_limit(&self) -> bool {
        self.parser.partial_len() as u64 > self.limit || self.text.text().len() as u64 > self.limit
    }

    /// The same reader counting interruptions in `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> EventReader {
        self.metrics = Some(metrics);
        self
    }

    /// Keeps the stream's call until the stream ends.
    pub(crate) fn set_trace(&mut self, trace: StreamTrace) {
        self.trace = Some(trace);
    }

    /// Ends the stream's call, once: at its final event (`cause` none) or its
    /// interruption.
    fn end_trace(&mut self, cause: Option<Interruption>) {
        if let Some(t) = self.trace.take() {
            t.finish(&self.text, cause);
        }
    }

    /// Feeds bytes of the body.
    pub fn push(&mut self, bytes: &[u8]) {
        self.parser.push(bytes);
    }

    /// Before the stream is handed over: the first complete event, and whether it is
    /// what the API sends (JSON, not an error event). The event is kept and will be
    /// the first [`EventReader::next_item`] item.
    pub fn first_event(&mut self) -> Option<bool> {
        let ev = self.parser.next_event()?;
        let ok = self.text.observe(&ev).is_ok() && self.hand_over(ev).is_ok();
        Some(ok)
    }

    /// Queues `ev` for the caller, translated when the call is canonical; an event the
    /// translation refuses is a malformed stream.
    fn hand_over(&mut self, ev: SseEvent) -> Result<(), Interruption> {
        match &mut self.translate {
            None => self.ready.push_back(ev),
            Some(Translation::FromAnthropic(t)) => {
                t.push(&ev).map_err(|_| Interruption::Malformed)?;
                while let Some(chunk) = t.next_chunk() {
                    self.ready.push_back(chunk.to_sse());
                }
            }
            Some(Translation::ToAnthropic(t)) => {
                t.push(&ev).map_err(|_| Interruption::Malformed)?;
                while let Some(event) = t.next_event() {
                    self.ready.push_back(event.to_sse());
                }
            }
        }
        Ok(())
    }

    /// The next thing to do or hand over.
    pub fn next_item<E>(&mut self) -> Next<E> {
        loop {
            if self.over {
                return Next::End;
            }
            if let Some(ev) = self.ready.pop_front() {
                return Next::Item(Ok(ev));
            }
            if self.text.is_done() {
                self.over = true;
                return Next::End;
            }
            if self.text.text().len() as u64 > self.limit {
                return Next::Item(Err(self.interrupt(Interruption::TooLarge, None)));
            }
            let Some(ev) = self.parser.next_event() else {
                if self.over_limit() {
                    return Next::Item(Err(self.interrupt(Interruption::TooLarge, None)));
                }
                return Next::Read;
            };
            let read = self.text.observe(&ev);
            if read == Ok(EventKind::Done) {
                if let Some(m) = &self.metrics {
                    m.on_stream_finished();
                }
                self.end_trace(None);
            }
            if let Err(cause) = read.and_then(|_| self.hand_over(ev)) {
                return Next::Item(Err(self.interrupt(cause, None)));
            }
        }
    }

    /// The body ended cleanly: the end, or an interruption when the final event
    /// never came.
    pub fn on_eof<E>(&mut self) -> Next<E> {
        if self.over || self.text.is_done() {
            self.over = true;
            return Next::End;
        }
        Next::Item(Err(self.interrupt(Interruption::Unfinished, None)))
    }

    /// Reading the body failed: the interruption, with the client's error.
    pub fn on_error<E>(&mut self, cause: Interruption, source: Option<E>) -> Next<E> {
        if self.over {
            return Next::End;
        }
        Next::Item(Err(self.interrupt(cause, source)))
    }

    fn interrupt<E>(&mut self, cause: Interruption, source: Option<E>) -> StreamError<E> {
        self.over = true;
        if let Some(m) = &self.metrics {
            m.on_stream_interrupted();
        }
        self.end_trace(Some(cause));
        StreamError::Interrupted {
            partial: self.text.take_text(),
            cause,
            source,
        }
    }

    /// The text received so far.
    pub fn text(&self) -> &str {
        self.text.text()
    }
}

impl Drop for EventReader {
    /// A stream dropped before its end ends its call there.
    fn drop(&mut self) {
        self.end_trace(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(r: &mut EventReader) -> Vec<Result<SseEvent, StreamError<()>>> {
        let mut out = Vec::new();
        while let Next::Item(i) = r.next_item() {
            out.push(i);
        }
        out
    }

    #[test]
    fn first_event_then_the_rest_then_end() {
        let mut r = EventReader::new(Provider::OpenAi);
        assert_eq!(r.first_event(), None);
        r.push(b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n");
        assert_eq!(r.first_event(), Some(true));
        r.push(b"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n");
        let items = drain(&mut r);
        assert_eq!(items.len(), 3);
        assert!(items.iter().all(Result::is_ok));
        assert!(matches!(r.next_item::<()>(), Next::End));
        assert!(matches!(r.on_eof::<()>(), Next::End));
    }

    #[test]
    fn a_cut_keeps_the_partial_text() {
        let m = Arc::new(Metrics::default());
        let mut r = EventReader::new(Provider::OpenAi).with_metrics(Arc::clone(&m));
        r.push(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n");
        assert_eq!(r.first_event(), Some(true));
        r.push(b"data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\ndata: {\"cho");
        assert_eq!(drain(&mut r).len(), 2);
        let Next::Item(Err(e)) = r.on_error(Interruption::Cut, Some(())) else {
            panic!("expected an interruption");
        };
        assert_eq!(e.partial(), "Hello");
        assert!(matches!(r.next_item::<()>(), Next::End));
        assert_eq!(m.snapshot().stream_interruptions, 1);
        let mut r = EventReader::new(Provider::OpenAi);
        r.push(b"data: {}\n\n");
        r.first_event();
        drain(&mut r);
        assert!(matches!(r.on_eof::<()>(), Next::Item(Err(_))));
    }

    #[test]
    fn a_stream_past_the_limit_is_interrupted() {
        // An event that never ends, before the first one.
        let mut r = EventReader::new(Provider::OpenAi).with_limit(100);
        r.push(&[b'a'; 100]);
        assert!(!r.over_limit());
        r.push(b"a");
        assert!(r.over_limit());
        assert_eq!(r.first_event(), None);
        // After the first event: the events before the limit, then the interruption.
        let mut r = EventReader::new(Provider::OpenAi).with_limit(100);
        r.push(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n");
        assert_eq!(r.first_event(), Some(true));
        r.push(&[b'a'; 200]);
        let items = drain(&mut r);
        assert_eq!(items.len(), 2);
        let Err(e) = &items[1] else {
            panic!("expected an interruption")
        };
        assert!(matches!(
            e,
            StreamError::Interrupted {
                cause: Interruption::TooLarge,
                ..
            }
        ));
        assert_eq!(e.partial(), "Hi");
        assert!(matches!(r.next_item::<()>(), Next::End));
        // Text kept past the limit.
        let mut r = EventReader::new(Provider::OpenAi).with_limit(10);
        let ev = "data: {\"choices\":[{\"delta\":{\"content\":\"0123456\"}}]}\n\n";
        r.push(ev.as_bytes());
        assert_eq!(r.first_event(), Some(true));
        r.push(ev.as_bytes());
        let items = drain(&mut r);
        assert_eq!(items.len(), 3, "two events, then the interruption");
        assert!(items[2].is_err());
    }

    #[test]
    fn a_translated_stream_hands_over_chunks_and_counts_its_end_as_a_success() {
        let m = Arc::new(Metrics::default());
        let mut r = EventReader::new(Provider::Anthropic)
            .translating(1_700_000_000, true)
            .with_metrics(Arc::clone(&m));
        assert_eq!(r.handed_over(), Provider::OpenAi);
        r.push(b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n");
        assert_eq!(r.first_event(), Some(true));
        r.push(b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
        r.push(b"event: ping\ndata: {\"type\":\"ping\"}\n\n");
        r.push(b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n");
        r.push(
            b"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        );
        r.push(b"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":1}}\n\n");
        r.push(b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
        let items: Vec<SseEvent> = drain(&mut r).into_iter().map(Result::unwrap).collect();
        assert!(
            items.iter().all(|e| e.event.is_none()),
            "OpenAI chunks have no event name"
        );
        let last = items.last().expect("items");
        assert!(last.is_done_marker(), "{items:?}");
        let chunks: Vec<serde_json::Value> = items.iter().filter_map(SseEvent::json).collect();
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        let text: String = chunks
            .iter()
            .filter_map(|c| c.pointer("/choices/0/delta/content")?.as_str())
            .collect();
        assert_eq!(text, "Hi");
        assert!(
            chunks
                .iter()
                .any(|c| c["choices"][0]["finish_reason"] == "stop")
        );
        assert!(
            chunks
                .iter()
                .any(|c| c["usage"]["total_tokens"].as_u64() == Some(4))
        );
        assert!(matches!(r.on_eof::<()>(), Next::End));
        assert_eq!(m.snapshot().successes, 1);
    }

    #[test]
    fn a_bad_first_event_is_flagged() {
        let mut r = EventReader::new(Provider::Anthropic);
        r.push(b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n");
        assert_eq!(r.first_event(), Some(false));
    }
}
