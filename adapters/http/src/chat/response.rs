//! Responses, both ways: an Anthropic Messages response ⇄ a `chat.completion`, and the
//! stop reasons and usage both streams share.

use serde_json::{Map, Value, json};

use super::content::text_block;
use super::error::TranslateError;
use super::json::{Obj, at, get, item, object, opt_array, opt_object, opt_str, opt_u64, req_str};
use super::request::{tool_call, tool_use};

/// Anthropic's `stop_reason` as a `finish_reason`: `end_turn` and `stop_sequence` are
/// `stop`; `max_tokens` and `model_context_window_exceeded` are `length`; `tool_use` is
/// `tool_calls`; `refusal` is `content_filter`; `pause_turn` (a long turn paused, valid
/// so far) is `stop`. A reason this version does not know is an error.
pub fn finish_reason(stop_reason: &str) -> Result<&'static str, TranslateError> {
    Ok(match stop_reason {
        "end_turn" | "stop_sequence" | "pause_turn" => "stop",
        "max_tokens" | "model_context_window_exceeded" => "length",
        "tool_use" => "tool_calls",
        "refusal" => "content_filter",
        _ => {
            return Err(TranslateError::invalid(
                "stop_reason",
                "a stop reason of the Messages API",
            ));
        }
    })
}

/// A `finish_reason` as Anthropic's `stop_reason`: `stop` is `end_turn` (OpenAI does
/// not say whether a stop sequence matched), `length` is `max_tokens`, `tool_calls` and
/// the deprecated `function_call` are `tool_use`, `content_filter` is `refusal`.
pub fn stop_reason(finish_reason: &str) -> Result<&'static str, TranslateError> {
    Ok(match finish_reason {
        "stop" => "end_turn",
        "length" => "max_tokens",
        "tool_calls" | "function_call" => "tool_use",
        "content_filter" => "refusal",
        _ => {
            return Err(TranslateError::invalid(
                "finish_reason",
                "stop, length, tool_calls, content_filter or function_call",
            ));
        }
    })
}

/// Anthropic usage as OpenAI usage. Anthropic's `input_tokens` leaves out the tokens
/// read from and written to the prompt cache; OpenAI's `prompt_tokens` counts them, with
/// the cache reads as `prompt_tokens_details.cached_tokens`.
pub(crate) fn usage_to_openai(u: &Obj) -> Result<Value, TranslateError> {
    let base = "usage";
    let read = opt_u64(u, base, "cache_read_input_tokens")?;
    let written = opt_u64(u, base, "cache_creation_input_tokens")?;
    let prompt = opt_u64(u, base, "input_tokens")?
        .unwrap_or(0)
        .saturating_add(read.unwrap_or(0))
        .saturating_add(written.unwrap_or(0));
    let completion = opt_u64(u, base, "output_tokens")?.unwrap_or(0);
    let mut out = json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt.saturating_add(completion),
    });
    if let (Some(o), true) = (out.as_object_mut(), read.is_some() || written.is_some()) {
        o.insert(
            "prompt_tokens_details".into(),
            json!({"cached_tokens": read.unwrap_or(0)}),
        );
    }
    Ok(out)
}

/// OpenAI usage as Anthropic usage (the cached tokens become `cache_read_input_tokens`;
/// OpenAI does not count cache writes apart).
pub(crate) fn usage_to_anthropic(u: &Obj) -> Result<Value, TranslateError> {
    let base = "usage";
    let prompt = opt_u64(u, base, "prompt_tokens")?.unwrap_or(0);
    let details = opt_object(u, base, "prompt_tokens_details")?;
    let cached = match details {
        Some(d) => opt_u64(d, "usage.prompt_tokens_details", "cached_tokens")?,
        None => None,
    };
    let mut out = json!({
        "input_tokens": prompt.saturating_sub(cached.unwrap_or(0)),
        "output_tokens": opt_u64(u, base, "completion_tokens")?.unwrap_or(0),
    });
    if let (Some(o), Some(c)) = (out.as_object_mut(), cached) {
        o.insert("cache_read_input_tokens".into(), c.into());
    }
    Ok(out)
}

/// An Anthropic Messages response as a `chat.completion`: text blocks joined into
/// `message.content`, `tool_use` blocks as `tool_calls`, the stop reason as
/// [`finish_reason`], usage as OpenAI counts it. Anthropic responses carry no creation
/// time: `created` (Unix seconds) comes from the caller.
///
/// ```
/// use serde_json::json;
/// use steadfast_http::chat::from_anthropic_response;
///
/// let msg = json!({
///     "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
///     "content": [{"type": "text", "text": "Hello"}],
///     "stop_reason": "end_turn", "stop_sequence": null,
///     "usage": {"input_tokens": 5, "output_tokens": 2}
/// });
/// let out = from_anthropic_response(&msg, 1_700_000_000).unwrap();
/// assert_eq!(out["object"], "chat.completion");
/// assert_eq!(out["choices"][0]["message"]["content"], "Hello");
/// assert_eq!(out["choices"][0]["finish_reason"], "stop");
/// assert_eq!(out["usage"]["total_tokens"], 7);
/// ```
pub fn from_anthropic_response(response: &Value, created: u64) -> Result<Value, TranslateError> {
    let r = object(response, "")?;
    let mut text = String::new();
    let mut calls = Vec::new();
    let blocks = opt_array(r, "", "content")?.map_or(&[][..], Vec::as_slice);
    for (i, block) in blocks.iter().enumerate() {
        let base = item("content", i);
        let b = object(block, &base)?;
        match req_str(b, &base, "type")? {
            // Citations annotate the text they come with; the text is the answer.
            "text" => text.push_str(req_str(b, &base, "text")?),
            "tool_use" => calls.push(tool_call(b, &base)?),
            _ => {
                return Err(TranslateError::untranslatable(
                    at(&base, "type"),
                    "a chat.completion holds text and tool calls",
                ));
            }
        }
    }
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    let has_text = blocks
        .iter()
        .any(|b| b.get("type").and_then(Value::as_str) == Some("text"));
    message.insert(
        "content".into(),
        if has_text { text.into() } else { Value::Null },
    );
    message.insert("refusal".into(), Value::Null);
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    let finish = match opt_str(r, "", "stop_reason")? {
        Some(s) => Value::from(finish_reason(s)?),
        None => Value::Null,
    };
    let mut out = json!({
        "id": req_str(r, "", "id")?,
        "object": "chat.completion",
        "created": created,
        "model": opt_str(r, "", "model")?.unwrap_or(""),
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
    });
    if let (Some(o), Some(u)) = (out.as_object_mut(), opt_object(r, "", "usage")?) {
        o.insert("usage".into(), usage_to_openai(u)?);
    }
    Ok(out)
}

/// A `chat.completion` as an Anthropic Messages response: `content` (and a `refusal`,
/// which also makes the stop reason `refusal`) as text blocks, `tool_calls` as
/// `tool_use` blocks, [`stop_reason`] from the finish reason. A response with more
/// than one choice, or with log probabilities, cannot be expressed.
///
/// ```
/// use serde_json::json;
/// use steadfast_http::chat::to_anthropic_response;
///
/// let done = json!({
///     "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
///     "choices": [{"index": 0, "finish_reason": "length", "logprobs": null,
///                  "message": {"role": "assistant", "content": "Hel", "refusal": null}}],
///     "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
/// });
/// let out = to_anthropic_response(&done).unwrap();
/// assert_eq!(out["content"], json!([{"type": "text", "text": "Hel"}]));
/// assert_eq!(out["stop_reason"], "max_tokens");
/// assert_eq!(out["usage"], json!({"input_tokens": 5, "output_tokens": 1}));
/// ```
pub fn to_anthropic_response(response: &Value) -> Result<Value, TranslateError> {
    let r = object(response, "")?;
    let choices = opt_array(r, "", "choices")?.ok_or_else(|| TranslateError::missing("choices"))?;
    let [choice] = choices.as_slice() else {
        return Err(TranslateError::untranslatable(
            "choices",
            "an Anthropic response carries exactly one answer",
        ));
    };
    let c = object(choice, "choices[0]")?;
    if get(c, "logprobs").is_some() {
        return Err(TranslateError::untranslatable(
            "choices[0].logprobs",
            "Anthropic returns no log probabilities",
        ));
    }
    let field = "choices[0].message";
    let m = get(c, "message").ok_or_else(|| TranslateError::missing(field))?;
    let m = object(m, field)?;
    let (content, refused) = message_blocks(m, field)?;
    let stop = match opt_str(c, "choices[0]", "finish_reason")? {
        _ if refused => Value::from("refusal"),
        Some(f) => Value::from(stop_reason(f).map_err(|_| {
            TranslateError::invalid("choices[0].finish_reason", "an OpenAI finish reason")
        })?),
        None => Value::Null,
    };
    let usage = match opt_object(r, "", "usage")? {
        Some(u) => usage_to_anthropic(u)?,
        None => json!({"input_tokens": 0, "output_tokens": 0}),
    };
    Ok(json!({
        "id": req_str(r, "", "id")?,
        "type": "message",
        "role": "assistant",
        "model": opt_str(r, "", "model")?.unwrap_or(""),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": usage,
    }))
}

fn message_blocks(m: &Obj, base: &str) -> Result<(Vec<Value>, bool), TranslateError> {
    let mut blocks: Vec<Value> = match get(m, "content") {
        None => Vec::new(),
        Some(c) => super::content::texts(
            c,
            &at(base, "content"),
            &["type", "text"],
            "an Anthropic answer holds text and tool calls",
        )?
        .iter()
        .filter(|t| !t.is_empty())
        .map(|t| text_block(t))
        .collect(),
    };
    let refusal = opt_str(m, base, "refusal")?;
    if let Some(r) = refusal {
        blocks.push(text_block(r));
    }
    let calls_field = at(base, "tool_calls");
    for (j, call) in opt_array(m, base, "tool_calls")?
        .into_iter()
        .flatten()
        .enumerate()
    {
        blocks.push(tool_use(call, &item(&calls_field, j))?);
    }
    Ok((blocks, refusal.is_some()))
}
