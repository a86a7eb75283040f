//! A stream read as text: the deltas as they arrive, then the whole message.

use serde_json::Value;

use crate::chat::{self, ChunkCollector, FromAnthropicStream};
use crate::error::{Interruption, StreamError};
use crate::provider::Provider;
use crate::sse::SseEvent;

/// What a text stream yields: each piece of generated text, then the whole message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TextEvent {
    /// Text generated since the previous delta.
    Delta(String),
    /// The whole message, in the shape of the call: a `chat.completion` for a canonical
    /// or OpenAI call (tool calls and usage included), an Anthropic `message` otherwise.
    Done(Value),
}

/// Folds the events a stream hands over into text deltas and the whole message.
///
/// ```
/// use steadfast_http::{Provider, SseEvent, TextFold};
/// let chunk = |c: &str| SseEvent {
///     event: None,
///     data: format!(r#"{{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{{"content":"{c}"}},"finish_reason":null}}]}}"#),
///     id: None,
/// };
/// let mut fold = TextFold::new(Provider::OpenAi);
/// assert_eq!(fold.push(&chunk("Hel")).unwrap().as_deref(), Some("Hel"));
/// assert_eq!(fold.push(&chunk("lo")).unwrap().as_deref(), Some("lo"));
/// let done = SseEvent { event: None, data: "[DONE]".into(), id: None };
/// assert_eq!(fold.push(&done).unwrap(), None);
/// let message = fold.finish().unwrap();
/// assert_eq!(message["choices"][0]["message"]["content"], "Hello");
/// ```
#[derive(Debug)]
pub struct TextFold {
    /// An Anthropic stream read natively: translated to chunks to be folded.
    anthropic: Option<FromAnthropicStream>,
    collector: ChunkCollector,
    over: bool,
}

/// What a face does with one item of its event stream, read as text.
#[derive(Debug)]
pub enum TextStep<E> {
    /// Hand this to the caller.
    Yield(Result<TextEvent, StreamError<E>>),
    /// Nothing for the caller: read the next event.
    Skip,
    /// The text stream is over.
    End,
}

impl TextFold {
    /// A fold of events of `shape` (what the stream hands over; see
    /// [`EventReader::handed_over`](crate::EventReader::handed_over)).
    pub fn new(shape: Provider) -> TextFold {
        TextFold {
            anthropic: (shape == Provider::Anthropic).then(|| FromAnthropicStream::new(0, true)),
            collector: ChunkCollector::new(),
            over: false,
        }
    }

    /// Reads the event stream's next item (`None`: it ended) as the text stream's: a
    /// delta, the whole message once the events end, or the interruption (a folded
    /// event that is not its API's interrupts it as [`Interruption::Malformed`]).
    pub fn step<E>(&mut self, item: Option<Result<SseEvent, StreamError<E>>>) -> TextStep<E> {
        if self.over {
            return TextStep::End;
        }
        match item {
            Some(Ok(ev)) => match self.push(&ev) {
                Ok(Some(delta)) => TextStep::Yield(Ok(TextEvent::Delta(delta))),
                Ok(None) => TextStep::Skip,
                Err(cause) => {
                    self.over = true;
                    let partial = self.text().to_owned();
                    let e = StreamError::Interrupted {
                        partial,
                        cause,
                        source: None,
                    };
                    TextStep::Yield(Err(e))
                }
            },
            Some(Err(e)) => {
                self.over = true;
                TextStep::Yield(Err(e))
            }
            None => {
                self.over = true;
                match self.take_message() {
                    Some(m) => TextStep::Yield(Ok(TextEvent::Done(m))),
                    None => TextStep::End,
                }
            }
        }
    }

    /// Reads one event: the text it adds, if any. An event that is not its API's is
    /// [`Interruption::Malformed`].
    pub fn push(&mut self, ev: &SseEvent) -> Result<Option<String>, Interruption> {
        let Some(t) = &mut self.anthropic else {
            let before = self.collector.text().len();
            self.collector
                .push_event(ev)
                .map_err(|_| Interruption::Malformed)?;
            return Ok(self.collector.text().get(before..).and_then(non_empty));
        };
        t.push(ev).map_err(|_| Interruption::Malformed)?;
        let mut delta = String::new();
        while let Some(chunk) = t.next_chunk() {
            if let Some(text) = chunk.text_delta() {
                delta.push_str(text);
            }
            self.collector
                .push(&chunk)
                .map_err(|_| Interruption::Malformed)?;
        }
        Ok(non_empty(&delta))
    }

    /// Whether the text stream is over (the face must not read its events again).
    pub fn is_over(&self) -> bool {
        self.over
    }

    /// The text so far.
    pub fn text(&self) -> &str {
        self.collector.text()
    }

    /// The whole message, once the stream ended; `None` when nothing was read.
    pub fn finish(mut self) -> Option<Value> {
        self.take_message()
    }

    fn take_message(&mut self) -> Option<Value> {
        let message = std::mem::take(&mut self.collector).into_response().ok()?;
        if self.anthropic.is_none() {
            return Some(message);
        }
        chat::to_anthropic_response(&message).ok()
    }
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str, data: &str) -> SseEvent {
        SseEvent {
            event: Some(name.to_owned()),
            data: data.to_owned(),
            id: None,
        }
    }

    #[test]
    fn a_native_anthropic_stream_folds_into_its_message() {
        let mut fold = TextFold::new(Provider::Anthropic);
        let start = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}"#;
        let block =
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
        let delta = |t: &str| {
            format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{t}"}}}}"#
            )
        };
        let stop = r#"{"type":"content_block_stop","index":0}"#;
        let end = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}"#;
        assert_eq!(fold.push(&event("message_start", start)), Ok(None));
        assert_eq!(fold.push(&event("content_block_start", block)), Ok(None));
        assert_eq!(fold.push(&event("ping", r#"{"type":"ping"}"#)), Ok(None));
        let d = fold.push(&event("content_block_delta", &delta("Bon")));
        assert_eq!(d, Ok(Some("Bon".to_owned())));
        let d = fold.push(&event("content_block_delta", &delta("jour")));
        assert_eq!(d, Ok(Some("jour".to_owned())));
        assert_eq!(fold.push(&event("content_block_stop", stop)), Ok(None));
        assert_eq!(fold.push(&event("message_delta", end)), Ok(None));
        let msg_stop = r#"{"type":"message_stop"}"#;
        assert_eq!(fold.push(&event("message_stop", msg_stop)), Ok(None));
        assert_eq!(fold.text(), "Bonjour");
        let m = fold.finish().expect("the whole message");
        assert_eq!(m["type"], "message");
        assert_eq!(m["content"][0]["text"], "Bonjour");
        assert_eq!(m["stop_reason"], "end_turn");
        assert_eq!(m["usage"]["output_tokens"], 2);
    }

    #[test]
    fn a_foreign_event_is_malformed_and_nothing_is_nothing() {
        let mut fold = TextFold::new(Provider::OpenAi);
        let bad = event("x", "not json");
        assert_eq!(fold.push(&bad), Err(Interruption::Malformed));
        assert_eq!(TextFold::new(Provider::OpenAi).finish(), None);
        // As steps: the interruption, then the end.
        let mut fold = TextFold::new(Provider::OpenAi);
        let step = fold.step::<()>(Some(Ok(bad)));
        assert!(matches!(
            step,
            TextStep::Yield(Err(StreamError::Interrupted { .. }))
        ));
        assert!(matches!(fold.step::<()>(None), TextStep::End));
    }
}
