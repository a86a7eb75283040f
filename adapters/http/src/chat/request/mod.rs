//! Requests, both ways: canonical (OpenAI Chat Completions) ⇄ Anthropic Messages.

mod fields;
mod messages;
mod reverse;
mod reverse_messages;
mod tools;

use serde_json::{Map, Value, json};

use super::error::TranslateError;
use super::json::{
    Obj, at, get, object, only, opt_array, opt_bool, opt_f64, opt_object, opt_str, opt_u64,
};

pub(crate) use messages::tool_use;
pub use reverse::from_anthropic_request;
pub(crate) use reverse_messages::tool_call;

/// The `max_tokens` sent to Anthropic, by default, for a request that sets no limit:
/// 4096, the largest every Claude model accepts.
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// How a canonical request becomes an Anthropic one where the APIs differ.
///
/// Defaults: `default_max_tokens` = [`DEFAULT_MAX_TOKENS`], `clamp_temperature` = `false`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToAnthropic {
    /// `max_tokens` for a request with neither `max_tokens` nor `max_completion_tokens`
    /// (OpenAI then lets the model run to its limit; Anthropic requires a number).
    pub default_max_tokens: u64,
    /// Whether a `temperature` above Anthropic's maximum of 1 (OpenAI's goes to 2) is
    /// sent as 1 instead of refused.
    pub clamp_temperature: bool,
}

impl Default for ToAnthropic {
    fn default() -> ToAnthropic {
        ToAnthropic {
            default_max_tokens: DEFAULT_MAX_TOKENS,
            clamp_temperature: false,
        }
    }
}

/// A canonical Chat Completions request as an Anthropic Messages request, with the
/// default [`ToAnthropic`] options. Fields Anthropic cannot express are an error
/// naming the field; fields at their harmless default (`n: 1`, `logprobs: false`, ...)
/// pass.
///
/// ```
/// use serde_json::json;
/// use steadfast_http::chat::{to_anthropic, TranslateError};
///
/// let req = json!({
///     "model": "claude-sonnet-4-5",
///     "messages": [
///         {"role": "system", "content": "Be brief."},
///         {"role": "user", "content": "Hi"}
///     ],
///     "stop": "\n\n"
/// });
/// let out = to_anthropic(&req)?;
/// assert_eq!(out["system"], "Be brief.");
/// assert_eq!(out["messages"], json!([{"role": "user", "content": "Hi"}]));
/// assert_eq!(out["max_tokens"], 4096);
/// assert_eq!(out["stop_sequences"], json!(["\n\n"]));
///
/// let err = to_anthropic(&json!({"messages": [], "logprobs": true})).unwrap_err();
/// assert_eq!(err.field(), "logprobs");
/// # Ok::<(), TranslateError>(())
/// ```
pub fn to_anthropic(request: &Value) -> Result<Value, TranslateError> {
    to_anthropic_with(request, &ToAnthropic::default())
}

/// [`to_anthropic`] with explicit options.
///
/// ```
/// use serde_json::json;
/// use steadfast_http::chat::{to_anthropic_with, ToAnthropic};
///
/// let mut options = ToAnthropic::default();
/// options.clamp_temperature = true;
/// let req = json!({"messages": [{"role": "user", "content": "Hi"}], "temperature": 1.5});
/// assert_eq!(to_anthropic_with(&req, &options).unwrap()["temperature"], 1.0);
/// ```
pub fn to_anthropic_with(request: &Value, options: &ToAnthropic) -> Result<Value, TranslateError> {
    let req = object(request, "")?;
    fields::check(req)?;
    let mut out = Map::new();
    if let Some(model) = opt_str(req, "", "model")? {
        out.insert("model".into(), model.into());
    }
    let list =
        opt_array(req, "", "messages")?.ok_or_else(|| TranslateError::missing("messages"))?;
    let conversation = messages::to_anthropic(list)?;
    if let Some(system) = conversation.system {
        out.insert("system".into(), system);
    }
    out.insert("messages".into(), Value::Array(conversation.messages));
    out.insert("max_tokens".into(), max_tokens(req, options)?.into());
    if let Some(t) = temperature(req, options)? {
        out.insert("temperature".into(), t);
    }
    if let Some(p) = top_p(req)? {
        out.insert("top_p".into(), p);
    }
    if let Some(stream) = opt_bool(req, "", "stream")? {
        out.insert("stream".into(), stream.into());
    }
    stream_options(req)?;
    if let Some(stop) = stop_sequences(req)? {
        out.insert("stop_sequences".into(), stop);
    }
    let tools = opt_array(req, "", "tools")?.filter(|t| !t.is_empty());
    if let Some(tools) = tools {
        out.insert(
            "tools".into(),
            Value::Array(tools::tools_to_anthropic(tools)?),
        );
    }
    if let Some(choice) = tools::choice_to_anthropic(req, tools.is_some())? {
        out.insert("tool_choice".into(), choice);
    }
    if let Some(user) = user_id(req)? {
        out.insert("metadata".into(), json!({"user_id": user}));
    }
    Ok(Value::Object(out))
}

/// Whether a canonical request asks for a usage chunk at the end of its stream
/// (`stream_options.include_usage`).
pub fn wants_usage(request: &Value) -> bool {
    request.pointer("/stream_options/include_usage") == Some(&Value::Bool(true))
}

fn max_tokens(req: &Obj, options: &ToAnthropic) -> Result<u64, TranslateError> {
    let legacy = opt_u64(req, "", "max_tokens")?;
    let current = opt_u64(req, "", "max_completion_tokens")?;
    if let (Some(a), Some(b)) = (legacy, current) {
        if a != b {
            return Err(TranslateError::Conflict {
                field: "max_tokens".into(),
                other: "max_completion_tokens",
            });
        }
    }
    match current
        .map(|n| (n, "max_completion_tokens"))
        .or(legacy.map(|n| (n, "max_tokens")))
    {
        Some((0, field)) => Err(TranslateError::invalid(field, "a positive integer")),
        Some((n, _)) => Ok(n),
        None => Ok(options.default_max_tokens),
    }
}

fn temperature(req: &Obj, options: &ToAnthropic) -> Result<Option<Value>, TranslateError> {
    let Some(t) = opt_f64(req, "", "temperature")? else {
        return Ok(None);
    };
    if !(0.0..=2.0).contains(&t) {
        return Err(TranslateError::invalid(
            "temperature",
            "a number from 0 to 2",
        ));
    }
    if t <= 1.0 {
        return Ok(get(req, "temperature").cloned());
    }
    if options.clamp_temperature {
        return Ok(Some(json!(1.0)));
    }
    Err(TranslateError::untranslatable(
        "temperature",
        "it is above Anthropic's maximum of 1",
    ))
}

fn top_p(req: &Obj) -> Result<Option<Value>, TranslateError> {
    match opt_f64(req, "", "top_p")? {
        None => Ok(None),
        Some(p) if (0.0..=1.0).contains(&p) => Ok(get(req, "top_p").cloned()),
        Some(_) => Err(TranslateError::invalid("top_p", "a number from 0 to 1")),
    }
}

/// `stream_options` shapes only the stream the caller gets back (the stream
/// translator adds the usage chunk); Anthropic always reports usage.
fn stream_options(req: &Obj) -> Result<(), TranslateError> {
    let Some(o) = opt_object(req, "", "stream_options")? else {
        return Ok(());
    };
    only(
        o,
        "stream_options",
        &["include_usage", "include_obfuscation"],
    )?;
    opt_bool(o, "stream_options", "include_usage")?;
    opt_bool(o, "stream_options", "include_obfuscation")?;
    Ok(())
}

fn stop_sequences(req: &Obj) -> Result<Option<Value>, TranslateError> {
    let list = match get(req, "stop") {
        None => return Ok(None),
        Some(Value::String(s)) => vec![Value::String(s.clone())],
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => a.clone(),
        Some(_) => {
            return Err(TranslateError::invalid(
                "stop",
                "a string or an array of strings",
            ));
        }
    };
    Ok((!list.is_empty()).then_some(Value::Array(list)))
}

/// The end user's id: `user`, `safety_identifier` or `metadata.user_id` (Anthropic's
/// only metadata), which must agree.
fn user_id(req: &Obj) -> Result<Option<String>, TranslateError> {
    let mut ids = Vec::new();
    for key in ["user", "safety_identifier"] {
        if let Some(id) = opt_str(req, "", key)? {
            ids.push((key, id));
        }
    }
    if let Some(meta) = opt_object(req, "", "metadata")? {
        if let Some((k, _)) = meta
            .iter()
            .find(|(k, v)| k.as_str() != "user_id" && !v.is_null())
        {
            return Err(TranslateError::untranslatable(
                at("metadata", k),
                "Anthropic's metadata holds only user_id",
            ));
        }
        if let Some(id) = opt_str(meta, "metadata", "user_id")? {
            ids.push(("metadata.user_id", id));
        }
    }
    let Some(&(first_key, first)) = ids.first() else {
        return Ok(None);
    };
    match ids.iter().find(|(_, id)| *id != first) {
        Some((key, _)) => Err(TranslateError::Conflict {
            field: (*key).to_owned(),
            other: first_key,
        }),
        None => Ok(Some(first.to_owned())),
    }
}
