//! Server-sent events: an incremental parser (bytes in, events out) and the reading of
//! OpenAI and Anthropic event streams (text deltas, the final event, error events).

use std::collections::VecDeque;

use serde_json::Value;

use crate::error::Interruption;
use crate::provider::Provider;

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field (Anthropic names every event; OpenAI sends none).
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The `id:` field.
    pub id: Option<String>,
}

impl SseEvent {
    /// Whether this is OpenAI's end marker `data: [DONE]`.
    pub fn is_done_marker(&self) -> bool {
        self.data.trim() == "[DONE]"
    }

    /// The data parsed as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }

    /// The event as it goes on the wire: its `event:` and `id:` fields, one `data:`
    /// line per line of data, and the blank line that ends it. [`SseParser`] reads it
    /// back as the same event.
    pub fn to_wire(&self) -> String {
        let mut out = String::with_capacity(self.data.len() + 32);
        if let Some(name) = &self.event {
            out.push_str("event: ");
            out.push_str(name);
            out.push('\n');
        }
        if let Some(id) = &self.id {
            out.push_str("id: ");
            out.push_str(id);
            out.push('\n');
        }
        for line in self.data.split('\n') {
            out.push_str("data: ");
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
        out
    }
}

/// An incremental SSE parser: feed it bytes as they arrive, in pieces of any size,
/// and take the complete events out. Lines may end in `\n`, `\r\n` or `\r` (also split
/// across pieces); comments (`:`) and unknown fields are skipped.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    skip_lf: bool,
    event: Option<String>,
    data: Option<String>,
    id: Option<String>,
    ready: VecDeque<SseEvent>,
}

impl SseParser {
    /// An empty parser.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.skip_lf {
                self.skip_lf = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(),
                b'\r' => {
                    self.end_line();
                    self.skip_lf = true;
                }
                _ => self.line.push(b),
            }
        }
    }

    /// The next complete event.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    /// Whether bytes of an incomplete event are held.
    pub fn has_partial(&self) -> bool {
        !self.line.is_empty() || self.data.is_some() || self.event.is_some()
    }

    /// The bytes held for the incomplete event (its fields and its unfinished line):
    /// what a server that never ends an event makes the parser keep.
    pub fn partial_len(&self) -> usize {
        let field = |f: &Option<String>| f.as_ref().map_or(0, String::len);
        self.line.len() + field(&self.data) + field(&self.event) + field(&self.id)
    }

    fn end_line(&mut self) {
        if self.line.is_empty() {
            self.dispatch();
            return;
        }
        let mut line = std::mem::take(&mut self.line);
        self.field(&String::from_utf8_lossy(&line));
        // Keep the allocation for the next line.
        line.clear();
        self.line = line;
    }

    fn field(&mut self, text: &str) {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if text.starts_with(':') {
            return;
        }
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "id" => self.id = Some(value.to_owned()),
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        let event = self.event.take();
        let id = self.id.take();
        // An event without data is not dispatched (as in the SSE specification).
        if let Some(data) = self.data.take() {
            self.ready.push_back(SseEvent { event, data, id });
        }
    }
}

/// What one event of a provider's stream means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Part of the answer (possibly with no text).
    Content,
    /// The final event: `[DONE]` or `message_stop`.
    Done,
}

/// Follows a provider's event stream: the text so far, and whether it finished.
#[derive(Debug, Clone)]
pub struct StreamText {
    provider: Provider,
    text: String,
    done: bool,
    /// The model the stream says answered.
    model: Option<String>,
    /// The input and output tokens the stream counted, as far as it told.
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl StreamText {
    /// Follows a stream of `provider`.
    pub fn new(provider: Provider) -> StreamText {
        StreamText {
            provider,
            text: String::new(),
            done: false,
            model: None,
            input_tokens: None,
            output_tokens: None,
        }
    }

    /// Reads one event: appends its text delta. An error event or data that is not
    /// JSON is an [`Interruption`].
    pub fn observe(&mut self, ev: &SseEvent) -> Result<EventKind, Interruption> {
        if ev.event.as_deref() == Some("error") {
            return Err(Interruption::ErrorEvent);
        }
        if self.provider == Provider::OpenAi && ev.is_done_marker() {
            self.done = true;
            return Ok(EventKind::Done);
        }
        let v = ev.json().ok_or(Interruption::Malformed)?;
        if v.get("error").is_some_and(|e| !e.is_null()) {
            return Err(Interruption::ErrorEvent);
        }
        self.note_answer(&v);
        let delta = match self.provider {
            Provider::OpenAi => v.pointer("/choices/0/delta/content"),
            Provider::Anthropic => {
                if v.get("type").and_then(Value::as_str) == Some("message_stop") {
                    self.done = true;
                    return Ok(EventKind::Done);
                }
                v.pointer("/delta/text")
            }
        };
        if let Some(t) = delta.and_then(Value::as_str) {
            self.text.push_str(t);
        }
        Ok(EventKind::Content)
    }

    /// Notes the model and the token counts an event carries: OpenAI's chunks name
    /// the model and, when asked (`stream_options.include_usage`), end with a usage
    /// chunk; Anthropic's `message_start` names the model and the input tokens, and
    /// its `message_delta`s carry the output tokens so far.
    fn note_answer(&mut self, v: &Value) {
        let (model, usage) = match self.provider {
            Provider::OpenAi => (v.get("model"), v.get("usage")),
            Provider::Anthropic => match v.get("type").and_then(Value::as_str) {
                Some("message_start") => (v.pointer("/message/model"), v.pointer("/message/usage")),
                Some("message_delta") => (None, v.get("usage")),
                _ => (None, None),
            },
        };
        if self.model.is_none()
            && let Some(m) = model.and_then(Value::as_str)
        {
            self.model = Some(m.to_owned());
        }
        let Some(u) = usage.filter(|u| u.is_object()) else {
            return;
        };
        let count = |k: &str| u.get(k).and_then(Value::as_u64);
        let (input, output) = match self.provider {
            Provider::OpenAi => (count("prompt_tokens"), count("completion_tokens")),
            Provider::Anthropic => (count("input_tokens"), count("output_tokens")),
        };
        self.input_tokens = input.or(self.input_tokens);
        self.output_tokens = output.or(self.output_tokens);
    }

    /// The text received so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The model the stream says answered, once an event named it.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The input and output tokens the stream counted, as far as its events told.
    pub fn usage(&self) -> (Option<u64>, Option<u64>) {
        (self.input_tokens, self.output_tokens)
    }

    /// The provider whose stream it follows.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Takes the text received so far.
    pub fn take_text(&mut self) -> String {
        std::mem::take(&mut self.text)
    }

    /// Whether the final event arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
