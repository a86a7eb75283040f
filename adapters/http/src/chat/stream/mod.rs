//! Streams, both ways: Anthropic's server-sent events ⇄ `chat.completion.chunk`s, and
//! the folding of canonical chunks into the whole `chat.completion`.
//!
//! The translators are sans-IO: an event goes in (`push`), the translated items come
//! out (`next_chunk` / `next_event`) until `None`.

mod collect;
mod from_anthropic;
mod to_anthropic;

use serde_json::Value;

use crate::sse::SseEvent;

pub use collect::ChunkCollector;
pub use from_anthropic::FromAnthropicStream;
pub use to_anthropic::ToAnthropicStream;

/// One item of a canonical (OpenAI) stream.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamChunk {
    /// A `chat.completion.chunk` object.
    Data(Value),
    /// The end of the stream, `data: [DONE]`.
    Done,
}

impl StreamChunk {
    /// The first choice's text delta, if the chunk carries one.
    ///
    /// ```
    /// use steadfast_http::chat::StreamChunk;
    /// let c = StreamChunk::Data(serde_json::json!({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}));
    /// assert_eq!(c.text_delta(), Some("Hi"));
    /// assert_eq!(StreamChunk::Done.text_delta(), None);
    /// ```
    pub fn text_delta(&self) -> Option<&str> {
        match self {
            StreamChunk::Data(v) => v.pointer("/choices/0/delta/content")?.as_str(),
            StreamChunk::Done => None,
        }
    }

    /// The chunk as a server-sent event, as OpenAI writes it (no `event:` field).
    pub fn to_sse(&self) -> SseEvent {
        let data = match self {
            StreamChunk::Data(v) => v.to_string(),
            StreamChunk::Done => "[DONE]".to_owned(),
        };
        SseEvent {
            event: None,
            data,
            id: None,
        }
    }
}

/// One event of an Anthropic stream: its name and its data (whose `type` is the name).
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicEvent {
    /// `message_start`, `content_block_start`, `content_block_delta`,
    /// `content_block_stop`, `message_delta`, `message_stop` or `error`.
    pub name: &'static str,
    /// The event's JSON data.
    pub data: Value,
}

impl AnthropicEvent {
    /// The event as a server-sent event, as Anthropic writes it.
    pub fn to_sse(&self) -> SseEvent {
        SseEvent {
            event: Some(self.name.to_owned()),
            data: self.data.to_string(),
            id: None,
        }
    }
}
