//! Anthropic stream events → canonical chunks.

use std::collections::VecDeque;

use serde_json::{Map, Value, json};

use super::super::api_error::ApiError;
use super::super::error::{EventError, TranslateError};
use super::super::json::{Obj, at, get, object, opt_object, opt_str, opt_u64, req_str};
use super::super::response::{finish_reason, usage_to_openai};
use super::StreamChunk;
use crate::provider::Provider;
use crate::sse::SseEvent;

/// What an Anthropic content block is on the OpenAI side.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Block {
    Text,
    /// A tool call, with its index among the message's tool calls.
    Tool(u64),
}

/// Translates an Anthropic stream into canonical `chat.completion.chunk`s: a role chunk
/// for `message_start`, a content chunk per `text_delta`, a tool call chunk (index, id,
/// name) per `tool_use` block start and one per `input_json_delta` (its arguments), a
/// chunk with the `finish_reason` for `message_delta`, then, for `message_stop`, the
/// usage chunk when asked (`stream_options.include_usage`) and [`StreamChunk::Done`].
/// `ping`, `content_block_stop` and event types this version does not know yield
/// nothing; an `error` event is an [`EventError::Upstream`].
///
/// ```
/// use serde_json::json;
/// use steadfast_http::chat::{FromAnthropicStream, StreamChunk};
///
/// let mut s = FromAnthropicStream::new(1_700_000_000, true);
/// for event in [
///     json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude",
///         "usage": {"input_tokens": 3, "output_tokens": 1}}}),
///     json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
///     json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
///     json!({"type": "content_block_stop", "index": 0}),
///     json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
///     json!({"type": "message_stop"}),
/// ] {
///     s.push_value(&event)?;
/// }
/// let chunks: Vec<StreamChunk> = std::iter::from_fn(|| s.next_chunk()).collect();
/// let data: Vec<&serde_json::Value> = chunks.iter().filter_map(|c| match c {
///     StreamChunk::Data(v) => Some(v),
///     StreamChunk::Done => None,
/// }).collect();
/// assert_eq!(data[0]["choices"][0]["delta"]["role"], "assistant");
/// assert_eq!(data[1]["choices"][0]["delta"]["content"], "Hi");
/// assert_eq!(data[2]["choices"][0]["finish_reason"], "stop");
/// assert_eq!(data[3]["usage"]["total_tokens"], 5);
/// assert_eq!(chunks.last(), Some(&StreamChunk::Done));
/// # Ok::<(), steadfast_http::chat::EventError>(())
/// ```
#[derive(Debug, Clone)]
pub struct FromAnthropicStream {
    created: u64,
    include_usage: bool,
    id: String,
    model: String,
    started: bool,
    done: bool,
    blocks: Vec<(u64, Block)>,
    tools: u64,
    usage: Map<String, Value>,
    out: VecDeque<StreamChunk>,
}

impl FromAnthropicStream {
    /// A translator whose chunks say `created` (Unix seconds; Anthropic streams carry no
    /// time) and end with a usage chunk when `include_usage`.
    pub fn new(created: u64, include_usage: bool) -> FromAnthropicStream {
        FromAnthropicStream {
            created,
            include_usage,
            id: String::new(),
            model: String::new(),
            started: false,
            done: false,
            blocks: Vec::new(),
            tools: 0,
            usage: Map::new(),
            out: VecDeque::new(),
        }
    }

    /// Reads one server-sent event of the stream.
    pub fn push(&mut self, event: &SseEvent) -> Result<(), EventError> {
        let data = event
            .json()
            .ok_or_else(|| TranslateError::invalid("", "a JSON event"))?;
        self.push_value(&data)
    }

    /// Reads one event's JSON data.
    pub fn push_value(&mut self, event: &Value) -> Result<(), EventError> {
        let e = object(event, "")?;
        let kind = req_str(e, "", "type")?;
        if kind == "error" {
            return Err(EventError::Upstream(Box::new(upstream_error(event))));
        }
        if kind == "ping" {
            return Ok(());
        }
        if self.done {
            return Err(TranslateError::invalid("type", "no event after message_stop").into());
        }
        if !self.started && kind != "message_start" {
            return Err(TranslateError::invalid("type", "message_start first").into());
        }
        match kind {
            "message_start" => self.message_start(e)?,
            "content_block_start" => self.block_start(e)?,
            "content_block_delta" => self.block_delta(e)?,
            "message_delta" => self.message_delta(e)?,
            "message_stop" => self.message_stop(),
            _ => {}
        }
        Ok(())
    }

    /// The next translated item.
    pub fn next_chunk(&mut self) -> Option<StreamChunk> {
        self.out.pop_front()
    }

    /// The usage reported so far, as OpenAI counts it (what the usage chunk will say);
    /// `None` before `message_start`. A caller that did not ask for the usage chunk
    /// still learns the stream's usage here.
    pub fn usage(&self) -> Option<Value> {
        if !self.started {
            return None;
        }
        usage_to_openai(&self.usage).ok()
    }

    /// Whether `message_stop` arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    fn message_start(&mut self, e: &Obj) -> Result<(), TranslateError> {
        if self.started {
            return Err(TranslateError::invalid("type", "one message_start"));
        }
        let field = "message";
        let m = get(e, field).ok_or_else(|| TranslateError::missing(field))?;
        let m = object(m, field)?;
        self.id = req_str(m, field, "id")?.to_owned();
        self.model = opt_str(m, field, "model")?.unwrap_or("").to_owned();
        if let Some(u) = opt_object(m, field, "usage")? {
            self.usage.extend(u.clone());
        }
        self.started = true;
        self.emit(json!({"role": "assistant", "content": ""}), Value::Null);
        Ok(())
    }

    fn block_start(&mut self, e: &Obj) -> Result<(), TranslateError> {
        let index = opt_u64(e, "", "index")?.ok_or_else(|| TranslateError::missing("index"))?;
        let field = "content_block";
        let b = get(e, field).ok_or_else(|| TranslateError::missing(field))?;
        let b = object(b, field)?;
        match req_str(b, field, "type")? {
            "text" => {
                self.blocks.push((index, Block::Text));
                if let Some(t) = opt_str(b, field, "text")?.filter(|t| !t.is_empty()) {
                    self.emit(json!({"content": t}), Value::Null);
                }
            }
            "tool_use" => {
                let k = self.tools;
                self.tools = k.saturating_add(1);
                self.blocks.push((index, Block::Tool(k)));
                let args = match get(b, "input") {
                    Some(Value::Object(o)) if !o.is_empty() => Value::Object(o.clone()).to_string(),
                    _ => String::new(),
                };
                let call = json!({
                    "index": k,
                    "id": req_str(b, field, "id")?,
                    "type": "function",
                    "function": {"name": req_str(b, field, "name")?, "arguments": args}
                });
                self.emit(json!({"tool_calls": [call]}), Value::Null);
            }
            _ => {
                return Err(TranslateError::untranslatable(
                    at(field, "type"),
                    "a chat.completion.chunk holds text and tool calls",
                ));
            }
        }
        Ok(())
    }

    fn block_delta(&mut self, e: &Obj) -> Result<(), TranslateError> {
        let index = opt_u64(e, "", "index")?.ok_or_else(|| TranslateError::missing("index"))?;
        let block = self
            .blocks
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, b)| *b)
            .ok_or_else(|| TranslateError::invalid("index", "a started content block"))?;
        let field = "delta";
        let d = get(e, field).ok_or_else(|| TranslateError::missing(field))?;
        let d = object(d, field)?;
        match (req_str(d, field, "type")?, block) {
            ("text_delta", Block::Text) => {
                let text = req_str(d, field, "text")?;
                self.emit(json!({"content": text}), Value::Null);
            }
            ("input_json_delta", Block::Tool(k)) => {
                let part = req_str(d, field, "partial_json")?;
                let call = json!({"index": k, "function": {"arguments": part}});
                self.emit(json!({"tool_calls": [call]}), Value::Null);
            }
            // Citations annotate text already sent.
            ("citations_delta", Block::Text) => {}
            ("text_delta" | "input_json_delta" | "citations_delta", _) => {
                return Err(TranslateError::invalid(
                    at(field, "type"),
                    "a delta of its block's type",
                ));
            }
            _ => {
                return Err(TranslateError::untranslatable(
                    at(field, "type"),
                    "a chat.completion.chunk holds text and tool calls",
                ));
            }
        }
        Ok(())
    }

    fn message_delta(&mut self, e: &Obj) -> Result<(), TranslateError> {
        if let Some(u) = opt_object(e, "", "usage")? {
            self.usage.extend(
                u.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
        }
        let reason = match opt_object(e, "", "delta")? {
            Some(d) => opt_str(d, "delta", "stop_reason")?,
            None => None,
        };
        if let Some(r) = reason {
            let finish = finish_reason(r).map_err(|_| {
                TranslateError::invalid("delta.stop_reason", "a stop reason of the Messages API")
            })?;
            self.emit(json!({}), finish.into());
        }
        Ok(())
    }

    fn message_stop(&mut self) {
        if self.include_usage {
            // The usage holds numbers read from the stream; a non-number is left out.
            let usage = usage_to_openai(&self.usage).unwrap_or(Value::Null);
            let mut chunk = self.head();
            chunk.insert("choices".into(), json!([]));
            chunk.insert("usage".into(), usage);
            self.out.push_back(StreamChunk::Data(Value::Object(chunk)));
        }
        self.out.push_back(StreamChunk::Done);
        self.done = true;
    }

    fn head(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("id".into(), self.id.clone().into());
        m.insert("object".into(), "chat.completion.chunk".into());
        m.insert("created".into(), self.created.into());
        m.insert("model".into(), self.model.clone().into());
        m
    }

    fn emit(&mut self, delta: Value, finish: Value) {
        let mut chunk = self.head();
        chunk.insert(
            "choices".into(),
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]),
        );
        if self.include_usage {
            chunk.insert("usage".into(), Value::Null);
        }
        self.out.push_back(StreamChunk::Data(Value::Object(chunk)));
    }
}

/// The error an `error` event carries (an event without a readable error is an
/// `api_error` with the event as its message).
fn upstream_error(event: &Value) -> ApiError {
    ApiError::from_body(event).unwrap_or_else(|| {
        ApiError::new(
            Provider::Anthropic,
            super::super::api_error::ApiErrorKind::Server,
            event.to_string(),
        )
    })
}
