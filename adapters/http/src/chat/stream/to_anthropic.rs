//! Canonical chunks → Anthropic stream events.

use std::collections::VecDeque;

use serde_json::{Value, json};

use super::super::api_error::ApiError;
use super::super::error::{EventError, TranslateError};
use super::super::json::{Obj, at, item, object, opt_array, opt_object, opt_str, opt_u64, req_str};
use super::super::response::{stop_reason, usage_to_anthropic};
use super::AnthropicEvent;
use crate::sse::SseEvent;

/// The content block being streamed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    Text,
    /// A tool call, with its OpenAI index.
    Tool(u64),
}

/// Translates a canonical stream into Anthropic events: `message_start` for the first
/// chunk, a text block (`content_block_start`, `text_delta`s, `content_block_stop`) for
/// each run of content, a `tool_use` block per tool call (its arguments as
/// `input_json_delta`s), and at `[DONE]` the `message_delta` (stop reason, usage) and
/// `message_stop`.
///
/// OpenAI reports usage only at the end (with `stream_options.include_usage`), so
/// `message_start` counts 0 input tokens and `message_delta` carries the whole usage.
/// Tool calls must arrive one after another, as OpenAI streams them.
///
/// ```
/// use serde_json::json;
/// use steadfast_http::chat::ToAnthropicStream;
///
/// let mut s = ToAnthropicStream::new();
/// s.push_chunk(&json!({"id": "c1", "model": "gpt-4o", "object": "chat.completion.chunk",
///     "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}]})).unwrap();
/// s.finish().unwrap();
/// let names: Vec<_> = std::iter::from_fn(|| s.next_event()).map(|e| e.name).collect();
/// assert_eq!(names, ["message_start", "content_block_start", "content_block_delta",
///     "content_block_stop", "message_delta", "message_stop"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToAnthropicStream {
    started: bool,
    done: bool,
    open: Option<Open>,
    blocks: u64,
    stop: Option<&'static str>,
    usage: Option<Value>,
    out: VecDeque<AnthropicEvent>,
}

impl ToAnthropicStream {
    /// A translator before the first chunk.
    pub fn new() -> ToAnthropicStream {
        ToAnthropicStream::default()
    }

    /// Reads one server-sent event of a canonical stream (`[DONE]` ends it).
    pub fn push(&mut self, event: &SseEvent) -> Result<(), EventError> {
        if event.is_done_marker() {
            return self.finish();
        }
        let data = event
            .json()
            .ok_or_else(|| TranslateError::invalid("", "a JSON chunk"))?;
        self.push_chunk(&data)
    }

    /// Reads one `chat.completion.chunk` (or an error body sent in the stream).
    pub fn push_chunk(&mut self, chunk: &Value) -> Result<(), EventError> {
        if let Some(e) = ApiError::from_body(chunk) {
            return Err(EventError::Upstream(Box::new(e)));
        }
        if self.done {
            return Err(TranslateError::invalid("", "no chunk after [DONE]").into());
        }
        let c = object(chunk, "")?;
        if !self.started {
            self.start(c)?;
        }
        if let Some(u) = opt_object(c, "", "usage")? {
            self.usage = Some(usage_to_anthropic(u)?);
        }
        let choices = opt_array(c, "", "choices")?.map_or(&[][..], Vec::as_slice);
        for (i, choice) in choices.iter().enumerate() {
            self.choice(choice, &item("choices", i))?;
        }
        Ok(())
    }

    /// Ends the stream (OpenAI's `[DONE]`): closes the open block and sends
    /// `message_delta` and `message_stop`.
    pub fn finish(&mut self) -> Result<(), EventError> {
        if !self.started {
            return Err(TranslateError::missing("choices").into());
        }
        if self.done {
            return Ok(());
        }
        let stop = self
            .stop
            .ok_or_else(|| TranslateError::missing("choices[0].finish_reason"))?;
        self.close();
        let usage = self
            .usage
            .take()
            .unwrap_or_else(|| json!({"output_tokens": 0}));
        self.emit(
            "message_delta",
            json!({"delta": {"stop_reason": stop, "stop_sequence": null}, "usage": usage}),
        );
        self.emit("message_stop", json!({}));
        self.done = true;
        Ok(())
    }

    /// The next translated event.
    pub fn next_event(&mut self) -> Option<AnthropicEvent> {
        self.out.pop_front()
    }

    fn start(&mut self, c: &Obj) -> Result<(), TranslateError> {
        let message = json!({
            "id": req_str(c, "", "id")?,
            "type": "message",
            "role": "assistant",
            "model": opt_str(c, "", "model")?.unwrap_or(""),
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0}
        });
        self.emit("message_start", json!({"message": message}));
        self.started = true;
        Ok(())
    }

    fn choice(&mut self, choice: &Value, base: &str) -> Result<(), TranslateError> {
        let ch = object(choice, base)?;
        if opt_u64(ch, base, "index")?.unwrap_or(0) != 0 {
            return Err(TranslateError::untranslatable(
                at(base, "index"),
                "an Anthropic stream carries one answer",
            ));
        }
        let field = at(base, "delta");
        if let Some(d) = opt_object(ch, base, "delta")? {
            if let Some(text) = opt_str(d, &field, "content")?.filter(|t| !t.is_empty()) {
                self.text(text);
            }
            if let Some(text) = opt_str(d, &field, "refusal")?.filter(|t| !t.is_empty()) {
                self.text(text);
                self.stop = Some("refusal");
            }
            let calls_field = at(&field, "tool_calls");
            for (j, call) in opt_array(d, &field, "tool_calls")?
                .into_iter()
                .flatten()
                .enumerate()
            {
                self.tool_call(call, &item(&calls_field, j))?;
            }
        }
        if let Some(f) = opt_str(ch, base, "finish_reason")? {
            self.close();
            let reason = stop_reason(f).map_err(|_| {
                TranslateError::invalid(at(base, "finish_reason"), "an OpenAI finish reason")
            })?;
            self.stop = Some(self.stop.filter(|s| *s == "refusal").unwrap_or(reason));
        }
        Ok(())
    }

    fn text(&mut self, text: &str) {
        if self.open != Some(Open::Text) {
            self.close();
            self.open_block(Open::Text, json!({"type": "text", "text": ""}));
        }
        let index = self.current();
        self.emit(
            "content_block_delta",
            json!({"index": index, "delta": {"type": "text_delta", "text": text}}),
        );
    }

    fn tool_call(&mut self, call: &Value, base: &str) -> Result<(), TranslateError> {
        let c = object(call, base)?;
        let k =
            opt_u64(c, base, "index")?.ok_or_else(|| TranslateError::missing(at(base, "index")))?;
        let field = at(base, "function");
        let f = opt_object(c, base, "function")?;
        let name = match f {
            Some(f) => opt_str(f, &field, "name")?,
            None => None,
        };
        if let Some(id) = opt_str(c, base, "id")? {
            self.close();
            let name = name.ok_or_else(|| TranslateError::missing(at(&field, "name")))?;
            let block = json!({"type": "tool_use", "id": id, "name": name, "input": {}});
            self.open_block(Open::Tool(k), block);
        } else if self.open != Some(Open::Tool(k)) {
            return Err(TranslateError::invalid(
                at(base, "index"),
                "the tool call being streamed",
            ));
        }
        let args = match f {
            Some(f) => opt_str(f, &field, "arguments")?,
            None => None,
        };
        if let Some(part) = args.filter(|a| !a.is_empty()) {
            let index = self.current();
            self.emit(
                "content_block_delta",
                json!({"index": index, "delta": {"type": "input_json_delta", "partial_json": part}}),
            );
        }
        Ok(())
    }

    fn current(&self) -> u64 {
        self.blocks.saturating_sub(1)
    }

    fn open_block(&mut self, open: Open, block: Value) {
        let index = self.blocks;
        self.emit(
            "content_block_start",
            json!({"index": index, "content_block": block}),
        );
        self.blocks = index.saturating_add(1);
        self.open = Some(open);
    }

    fn close(&mut self) {
        if self.open.take().is_some() {
            let index = self.current();
            self.emit("content_block_stop", json!({"index": index}));
        }
    }

    fn emit(&mut self, name: &'static str, mut data: Value) {
        if let Some(o) = data.as_object_mut() {
            o.insert("type".into(), name.into());
        }
        self.out.push_back(AnthropicEvent { name, data });
    }
}
