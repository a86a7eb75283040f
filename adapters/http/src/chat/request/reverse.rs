//! Anthropic Messages request → canonical request (so a `/v1/messages` caller can be
//! served by an OpenAI-compatible upstream).

use serde_json::{Map, Value, json};

use super::super::error::TranslateError;
use super::super::json::{Obj, get, object, opt_array, opt_f64, opt_object, opt_str, opt_u64};
use super::{reverse_messages, tools};

/// The most stop sequences OpenAI takes.
const MAX_STOP: usize = 4;

const TRANSLATED: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "system",
    "stop_sequences",
    "temperature",
    "top_p",
    "stream",
    "metadata",
    "tools",
    "tool_choice",
    "thinking",
    "service_tier",
];

/// An Anthropic Messages request as a canonical Chat Completions request: `system`
/// becomes leading system messages, `tool_result` blocks become `tool` messages,
/// `tool_use` blocks become `tool_calls`, `max_tokens` becomes `max_completion_tokens`,
/// `stop_sequences` becomes `stop`, `metadata.user_id` becomes `user`. A stream asks
/// for the usage chunk (`stream_options.include_usage`), since Anthropic streams always
/// report usage. Fields OpenAI cannot express (`top_k`, extended `thinking`, server
/// tools, more than 4 stop sequences, ...) are an error naming the field.
///
/// ```
/// use serde_json::json;
/// use steadfast_http::chat::from_anthropic_request;
///
/// let req = json!({
///     "model": "gpt-4o",
///     "max_tokens": 256,
///     "system": "Be brief.",
///     "messages": [{"role": "user", "content": "Hi"}]
/// });
/// let out = from_anthropic_request(&req).unwrap();
/// assert_eq!(out["messages"][0], json!({"role": "system", "content": "Be brief."}));
/// assert_eq!(out["max_completion_tokens"], 256);
/// assert_eq!(from_anthropic_request(&json!({"top_k": 5})).unwrap_err().field(), "top_k");
/// ```
pub fn from_anthropic_request(request: &Value) -> Result<Value, TranslateError> {
    let req = object(request, "")?;
    check(req)?;
    let mut out = Map::new();
    if let Some(model) = opt_str(req, "", "model")? {
        out.insert("model".into(), model.into());
    }
    let mut messages = match get(req, "system") {
        Some(system) => reverse_messages::system_messages(system)?,
        None => Vec::new(),
    };
    let list =
        opt_array(req, "", "messages")?.ok_or_else(|| TranslateError::missing("messages"))?;
    messages.extend(reverse_messages::to_openai(list)?);
    out.insert("messages".into(), Value::Array(messages));
    match opt_u64(req, "", "max_tokens")? {
        None => return Err(TranslateError::missing("max_tokens")),
        Some(0) => return Err(TranslateError::invalid("max_tokens", "a positive integer")),
        Some(n) => out.insert("max_completion_tokens".into(), n.into()),
    };
    for key in ["temperature", "top_p"] {
        match opt_f64(req, "", key)? {
            None => {}
            Some(x) if (0.0..=1.0).contains(&x) => {
                out.insert(key.into(), req.get(key).cloned().unwrap_or(Value::Null));
            }
            Some(_) => return Err(TranslateError::invalid(key, "a number from 0 to 1")),
        }
    }
    if let Some(stream) = get(req, "stream") {
        let on = stream
            .as_bool()
            .ok_or_else(|| TranslateError::invalid("stream", "true or false"))?;
        out.insert("stream".into(), on.into());
        if on {
            out.insert("stream_options".into(), json!({"include_usage": true}));
        }
    }
    if let Some(stop) = stop(req)? {
        out.insert("stop".into(), stop);
    }
    if let Some(user) = user(req)? {
        out.insert("user".into(), user.into());
    }
    if let Some(list) = opt_array(req, "", "tools")?.filter(|t| !t.is_empty()) {
        out.insert("tools".into(), Value::Array(tools::tools_to_openai(list)?));
    }
    if let Some(choice) = get(req, "tool_choice") {
        let (choice, parallel) = tools::choice_to_openai(choice)?;
        out.insert("tool_choice".into(), choice);
        if let Some(p) = parallel {
            out.insert("parallel_tool_calls".into(), p.into());
        }
    }
    Ok(Value::Object(out))
}

fn check(req: &Obj) -> Result<(), TranslateError> {
    if get(req, "top_k").is_some() {
        return Err(TranslateError::untranslatable(
            "top_k",
            "OpenAI has no top-k sampling",
        ));
    }
    if let Some(thinking) = opt_object(req, "", "thinking")? {
        if opt_str(thinking, "thinking", "type")? != Some("disabled") {
            return Err(TranslateError::untranslatable(
                "thinking",
                "OpenAI Chat Completions has no thinking budget",
            ));
        }
    }
    if opt_str(req, "", "service_tier")?.is_some_and(|t| t != "auto") {
        return Err(TranslateError::untranslatable(
            "service_tier",
            "OpenAI's service tiers are not Anthropic's",
        ));
    }
    super::super::json::only(req, "", TRANSLATED)
}

fn stop(req: &Obj) -> Result<Option<Value>, TranslateError> {
    let Some(list) = opt_array(req, "", "stop_sequences")? else {
        return Ok(None);
    };
    if !list.iter().all(Value::is_string) {
        return Err(TranslateError::invalid(
            "stop_sequences",
            "an array of strings",
        ));
    }
    if list.len() > MAX_STOP {
        return Err(TranslateError::untranslatable(
            "stop_sequences",
            "OpenAI takes at most 4 stop sequences",
        ));
    }
    Ok((!list.is_empty()).then(|| Value::Array(list.clone())))
}

fn user(req: &Obj) -> Result<Option<String>, TranslateError> {
    let Some(meta) = opt_object(req, "", "metadata")? else {
        return Ok(None);
    };
    super::super::json::only(meta, "metadata", &["user_id"])?;
    Ok(opt_str(meta, "metadata", "user_id")?.map(str::to_owned))
}
