//! Canonical chunks folded into the whole `chat.completion`.

use serde_json::{Map, Value, json};

use super::super::api_error::ApiError;
use super::super::error::{EventError, TranslateError};
use super::super::json::{Obj, at, item, object, opt_array, opt_object, opt_str, opt_u64};
use super::StreamChunk;
use crate::sse::SseEvent;

/// One tool call being assembled from its deltas.
#[derive(Debug, Clone, Default)]
struct CallParts {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// One choice being assembled.
#[derive(Debug, Clone, Default)]
struct ChoiceParts {
    index: u64,
    content: Option<String>,
    refusal: Option<String>,
    calls: Vec<CallParts>,
    finish: Option<String>,
}

/// Folds a canonical stream into the whole `chat.completion`, as a client returns
/// "the whole message" at the end of a stream: each choice's text concatenated in
/// order, its tool calls assembled by `index` (id and name from their first chunk,
/// arguments concatenated), its `finish_reason`, and the usage chunk's usage.
///
/// ```
/// use serde_json::json;
/// use steadfast_http::chat::ChunkCollector;
///
/// let mut c = ChunkCollector::new();
/// let head = json!({"id": "c1", "object": "chat.completion.chunk", "created": 7, "model": "m"});
/// for (delta, finish) in [
///     (json!({"role": "assistant", "content": ""}), json!(null)),
///     (json!({"content": "Hel"}), json!(null)),
///     (json!({"content": "lo"}), json!(null)),
///     (json!({}), json!("stop")),
/// ] {
///     let mut chunk = head.clone();
///     chunk["choices"] = json!([{"index": 0, "delta": delta, "finish_reason": finish}]);
///     c.push_chunk(&chunk).unwrap();
/// }
/// assert_eq!(c.text(), "Hello");
/// let done = c.into_response().unwrap();
/// assert_eq!(done["object"], "chat.completion");
/// assert_eq!(done["choices"][0]["message"]["content"], "Hello");
/// assert_eq!(done["choices"][0]["finish_reason"], "stop");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ChunkCollector {
    id: Option<String>,
    model: String,
    created: u64,
    fingerprint: Option<Value>,
    choices: Vec<ChoiceParts>,
    usage: Option<Value>,
    done: bool,
}

impl ChunkCollector {
    /// A collector before the first chunk.
    pub fn new() -> ChunkCollector {
        ChunkCollector::default()
    }

    /// Reads one item of a canonical stream ([`StreamChunk::Done`] marks it finished).
    pub fn push(&mut self, item: &StreamChunk) -> Result<(), TranslateError> {
        match item {
            StreamChunk::Data(chunk) => self.push_chunk(chunk),
            StreamChunk::Done => {
                self.done = true;
                Ok(())
            }
        }
    }

    /// Reads one server-sent event of a canonical (OpenAI) stream: `[DONE]` marks it
    /// finished, an error body is the [`EventError::Upstream`] it carries.
    pub fn push_event(&mut self, event: &SseEvent) -> Result<(), EventError> {
        if event.is_done_marker() {
            self.done = true;
            return Ok(());
        }
        let data = event
            .json()
            .ok_or_else(|| TranslateError::invalid("", "a JSON chunk"))?;
        if let Some(e) = ApiError::from_body(&data) {
            return Err(EventError::Upstream(Box::new(e)));
        }
        Ok(self.push_chunk(&data)?)
    }

    /// Reads one `chat.completion.chunk`.
    pub fn push_chunk(&mut self, chunk: &Value) -> Result<(), TranslateError> {
        let c = object(chunk, "")?;
        if self.id.is_none() {
            self.head(c)?;
        }
        if let Some(u) = opt_object(c, "", "usage")? {
            self.usage = Some(Value::Object(u.clone()));
        }
        let choices = opt_array(c, "", "choices")?.map_or(&[][..], Vec::as_slice);
        for (i, choice) in choices.iter().enumerate() {
            self.choice(choice, &item("choices", i))?;
        }
        Ok(())
    }

    /// The first choice's text so far.
    pub fn text(&self) -> &str {
        self.choices
            .iter()
            .find(|c| c.index == 0)
            .and_then(|c| c.content.as_deref())
            .unwrap_or("")
    }

    /// Whether `[DONE]` was read.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The whole `chat.completion`. A choice whose stream was cut before its
    /// `finish_reason` has a `null` one; a stream without any chunk is an error
    /// naming `id`.
    pub fn into_response(self) -> Result<Value, TranslateError> {
        let id = self.id.ok_or_else(|| TranslateError::missing("id"))?;
        let mut choices = self.choices;
        choices.sort_by_key(|c| c.index);
        let mut out = json!({
            "id": id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": choices.into_iter().map(choice_value).collect::<Vec<_>>(),
        });
        if let Some(o) = out.as_object_mut() {
            if let Some(f) = self.fingerprint {
                o.insert("system_fingerprint".into(), f);
            }
            if let Some(u) = self.usage {
                o.insert("usage".into(), u);
            }
        }
        Ok(out)
    }

    fn head(&mut self, c: &Obj) -> Result<(), TranslateError> {
        let id = opt_str(c, "", "id")?.ok_or_else(|| TranslateError::missing("id"))?;
        self.id = Some(id.to_owned());
        self.model = opt_str(c, "", "model")?.unwrap_or("").to_owned();
        self.created = opt_u64(c, "", "created")?.unwrap_or(0);
        self.fingerprint = c
            .get("system_fingerprint")
            .filter(|v| !v.is_null())
            .cloned();
        Ok(())
    }

    fn choice(&mut self, choice: &Value, base: &str) -> Result<(), TranslateError> {
        let ch = object(choice, base)?;
        let index = opt_u64(ch, base, "index")?.unwrap_or(0);
        let parts = self.parts(index);
        let field = at(base, "delta");
        if let Some(d) = opt_object(ch, base, "delta")? {
            if let Some(t) = opt_str(d, &field, "content")? {
                parts.content.get_or_insert_with(String::new).push_str(t);
            }
            if let Some(t) = opt_str(d, &field, "refusal")? {
                parts.refusal.get_or_insert_with(String::new).push_str(t);
            }
            let calls_field = at(&field, "tool_calls");
            let calls = opt_array(d, &field, "tool_calls")?.map_or(&[][..], Vec::as_slice);
            for (j, call) in calls.iter().enumerate() {
                call_delta(parts, call, &item(&calls_field, j))?;
            }
        }
        if let Some(f) = opt_str(ch, base, "finish_reason")? {
            parts.finish = Some(f.to_owned());
        }
        Ok(())
    }

    fn parts(&mut self, index: u64) -> &mut ChoiceParts {
        let at = match self.choices.iter().position(|c| c.index == index) {
            Some(at) => at,
            None => {
                self.choices.push(ChoiceParts {
                    index,
                    ..ChoiceParts::default()
                });
                self.choices.len() - 1
            }
        };
        &mut self.choices[at]
    }
}

fn call_delta(parts: &mut ChoiceParts, call: &Value, base: &str) -> Result<(), TranslateError> {
    let c = object(call, base)?;
    let index =
        opt_u64(c, base, "index")?.ok_or_else(|| TranslateError::missing(at(base, "index")))?;
    let slot = match parts.calls.iter().position(|k| k.index == index) {
        Some(at) => &mut parts.calls[at],
        None => {
            parts.calls.push(CallParts {
                index,
                ..CallParts::default()
            });
            let last = parts.calls.len() - 1;
            &mut parts.calls[last]
        }
    };
    if let Some(id) = opt_str(c, base, "id")?.filter(|_| slot.id.is_empty()) {
        slot.id = id.to_owned();
    }
    let field = at(base, "function");
    if let Some(f) = opt_object(c, base, "function")? {
        if let Some(name) = opt_str(f, &field, "name")?.filter(|_| slot.name.is_empty()) {
            slot.name = name.to_owned();
        }
        if let Some(a) = opt_str(f, &field, "arguments")? {
            slot.arguments.push_str(a);
        }
    }
    Ok(())
}

fn choice_value(c: ChoiceParts) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    message.insert(
        "content".into(),
        c.content.map_or(Value::Null, Value::String),
    );
    message.insert(
        "refusal".into(),
        c.refusal.map_or(Value::Null, Value::String),
    );
    let mut calls = c.calls;
    calls.sort_by_key(|k| k.index);
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .into_iter()
            .map(|k| {
                json!({
                    "id": k.id,
                    "type": "function",
                    "function": {"name": k.name, "arguments": k.arguments}
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    json!({
        "index": c.index,
        "message": message,
        "logprobs": null,
        "finish_reason": c.finish,
    })
}
