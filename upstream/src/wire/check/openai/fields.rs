//! The scalar and object fields of a Chat Completions body: types, ranges and the
//! pairs that go together. `null` is accepted for every optional field (the spec marks
//! them `nullable`).

use serde_json::{Map, Value};

use super::super::given;
use super::super::kind::{Kind, number_text};
use super::{Rejection, empty_array, invalid_value, too_long, typed, wrong_type};

/// A number's bounds, and whether the API calls it an integer or a decimal.
struct Range {
    min: Option<f64>,
    max: Option<f64>,
    kind: Kind,
}

/// Types and ranges from OpenAI's OpenAPI spec (`CreateChatCompletionRequest` and
/// `ModelResponseProperties`): `temperature` 0–2, `top_p` 0–1, `frequency_penalty` and
/// `presence_penalty` −2–2, `n` 1–128, `top_logprobs` 0–20; `max_completion_tokens` at
/// least 1 (`Invalid 'max_completion_tokens': integer below minimum value. Expected a
/// value >= 1, but got 0 instead.`, measured against the API in 2026-08).
const NUMBERS: &[(&str, Range)] = &[
    ("n", range(Kind::Int, Some(1.0), Some(128.0))),
    ("max_completion_tokens", range(Kind::Int, Some(1.0), None)),
    ("max_tokens", range(Kind::Int, None, None)),
    ("seed", range(Kind::Int, None, None)),
    ("temperature", range(Kind::Number, Some(0.0), Some(2.0))),
    ("top_p", range(Kind::Number, Some(0.0), Some(1.0))),
    (
        "frequency_penalty",
        range(Kind::Number, Some(-2.0), Some(2.0)),
    ),
    (
        "presence_penalty",
        range(Kind::Number, Some(-2.0), Some(2.0)),
    ),
    ("top_logprobs", range(Kind::Int, Some(0.0), Some(20.0))),
];

const fn range(kind: Kind, min: Option<f64>, max: Option<f64>) -> Range {
    Range { min, max, kind }
}

/// Fields with a plain type (the SDK's `TypedDict` annotations).
const TYPED: &[(&str, Kind)] = &[
    ("stream", Kind::Bool),
    ("logprobs", Kind::Bool),
    ("store", Kind::Bool),
    ("parallel_tool_calls", Kind::Bool),
    ("user", Kind::Str),
    ("prompt_cache_key", Kind::Str),
    ("safety_identifier", Kind::Str),
    ("service_tier", Kind::Str),
    ("reasoning_effort", Kind::Str),
    ("logit_bias", Kind::Object),
    ("audio", Kind::Object),
    ("prediction", Kind::Object),
    ("web_search_options", Kind::Object),
    ("moderation", Kind::Object),
    ("prompt_cache_options", Kind::Object),
    ("modalities", Kind::Array),
];

/// Every field but `model`, `messages`, `tools`, `tool_choice` and `functions`.
pub(super) fn check(body: &Map<String, Value>) -> Result<(), Rejection> {
    for (name, r) in NUMBERS {
        if let Some(v) = given(body, name) {
            number(name, v, r)?;
        }
    }
    for (name, kind) in TYPED {
        if let Some(v) = given(body, name) {
            typed(name, v, *kind)?;
        }
    }
    stop(body)?;
    verbosity(body)?;
    metadata(body)?;
    response_format(body)?;
    stream_options(body)?;
    top_logprobs(body)
}

/// A number of the right type within its range.
fn number(name: &str, v: &Value, r: &Range) -> Result<(), Rejection> {
    typed(name, v, r.kind)?;
    let x = v.as_f64().unwrap_or(0.0);
    let what = match r.kind {
        Kind::Int => "integer",
        _ => "decimal",
    };
    if let Some(min) = r.min.filter(|m| x < *m) {
        return Err(out_of_range(name, what, "below minimum", ">=", min, v));
    }
    if let Some(max) = r.max.filter(|m| x > *m) {
        return Err(out_of_range(name, what, "above maximum", "<=", max, v));
    }
    Ok(())
}

/// `Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got
/// 2.1 instead.`, code `decimal_above_max_value` (and `integer_below_min_value`, …).
fn out_of_range(name: &str, what: &str, side: &str, op: &str, bound: f64, v: &Value) -> Rejection {
    let code = match (what, op) {
        ("integer", ">=") => "integer_below_min_value",
        ("integer", _) => "integer_above_max_value",
        (_, ">=") => "decimal_below_min_value",
        _ => "decimal_above_max_value",
    };
    Rejection::at(
        format!(
            "Invalid '{name}': {what} {side} value. Expected a value {op} {bound}, but got {} instead.",
            number_text(v)
        ),
        name,
        code,
    )
}

/// `stop`: a string or up to four strings (the spec's `StopConfiguration`: `minItems`
/// 1, `maxItems` 4).
fn stop(body: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(v) = given(body, "stop") else {
        return Ok(());
    };
    let items = match v {
        Value::String(_) => return Ok(()),
        Value::Array(items) => items,
        other => {
            return Err(wrong_type(
                "stop",
                "one of a string or array of strings",
                other,
            ));
        }
    };
    if items.is_empty() {
        return Err(empty_array("stop"));
    }
    if items.len() > 4 {
        return Err(too_long("stop", 4, items.len()));
    }
    for (i, s) in items.iter().enumerate() {
        typed(&format!("stop[{i}]"), s, Kind::Str)?;
    }
    Ok(())
}

/// `verbosity`: `low`, `medium` or `high` (the SDK's literal; `Invalid value: 'bogus'.
/// Supported values are: 'low', 'medium', and 'high'.`, measured in 2026-08).
fn verbosity(body: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(v) = given(body, "verbosity") else {
        return Ok(());
    };
    typed("verbosity", v, Kind::Str)?;
    let value = v.as_str().unwrap_or_default();
    match ["low", "medium", "high"].contains(&value) {
        true => Ok(()),
        false => Err(invalid_value(
            "verbosity",
            value,
            &["low", "medium", "high"],
        )),
    }
}

/// `metadata`: at most 16 string values, keys of at most 64 characters, values of at
/// most 512 (the SDK's doc of `metadata`; the messages as measured in 2026-08:
/// `Invalid type for 'metadata': expected a metadata object, …`, `Invalid
/// 'metadata': too many properties. …`, `Invalid 'metadata.k': string too long. …`).
fn metadata(body: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(v) = given(body, "metadata") else {
        return Ok(());
    };
    let Value::Object(map) = v else {
        return Err(wrong_type("metadata", "a metadata object", v));
    };
    if map.len() > 16 {
        return Err(Rejection::at(
            format!(
                "Invalid 'metadata': too many properties. Expected an object with at most 16 properties, but got an object with {} properties instead.",
                map.len()
            ),
            "metadata",
            "object_above_max_properties",
        ));
    }
    for (k, value) in map {
        metadata_entry(k, value)?;
    }
    Ok(())
}

fn metadata_entry(key: &str, value: &Value) -> Result<(), Rejection> {
    let param = format!("metadata.{key}");
    let key_len = key.chars().count();
    if key_len > 64 {
        return Err(Rejection::at(
            format!(
                "Invalid property name in 'metadata': '{key}' is too long. Expected a string with maximum length 64, but got a string with length {key_len} instead."
            ),
            param,
            "property_name_above_max_length",
        ));
    }
    typed(&param, value, Kind::Str)?;
    let len = value.as_str().map_or(0, |s| s.chars().count());
    if len > 512 {
        return Err(Rejection::at(
            format!(
                "Invalid '{param}': string too long. Expected a string with maximum length 512, but got a string with length {len} instead."
            ),
            param.clone(),
            "string_above_max_length",
        ));
    }
    Ok(())
}

/// `response_format`: an object whose `type` is `text`, `json_object` or
/// `json_schema`, the last with `json_schema.name` (messages measured in 2026-08:
/// `Missing required parameter: 'response_format.type'.`, `Invalid value: 'bogus'.
/// Supported values are: 'json_object', 'json_schema', and 'text'.`).
fn response_format(body: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(v) = given(body, "response_format") else {
        return Ok(());
    };
    typed("response_format", v, Kind::Object)?;
    let Some(t) = v.get("type") else {
        return Err(super::missing("response_format.type"));
    };
    typed("response_format.type", t, Kind::Str)?;
    const TYPES: [&str; 3] = ["json_object", "json_schema", "text"];
    let t = t.as_str().unwrap_or_default();
    if !TYPES.contains(&t) {
        return Err(invalid_value("response_format.type", t, &TYPES));
    }
    if t != "json_schema" {
        return Ok(());
    }
    let Some(schema) = v.get("json_schema") else {
        return Err(super::missing("response_format.json_schema"));
    };
    typed("response_format.json_schema", schema, Kind::Object)?;
    match schema.get("name") {
        Some(_) => Ok(()),
        None => Err(super::missing("response_format.json_schema.name")),
    }
}

/// `stream_options` only with `"stream": true` (`The 'stream_options' parameter is only
/// allowed when 'stream' is enabled.`, as Azure's and OpenAI's answers are quoted), an
/// object of `include_usage` and `include_obfuscation` (the SDK's
/// `ChatCompletionStreamOptionsParam`; another member: `Unknown parameter:
/// 'stream_options.bogus'.`, code `unknown_parameter`, measured in 2026-08).
fn stream_options(body: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(v) = given(body, "stream_options") else {
        return Ok(());
    };
    if given(body, "stream") != Some(&Value::Bool(true)) {
        return Err(Rejection {
            message: "The 'stream_options' parameter is only allowed when 'stream' is enabled."
                .to_owned(),
            param: Some("stream_options".to_owned()),
            code: None,
        });
    }
    let Value::Object(map) = v else {
        return Err(wrong_type("stream_options", Kind::Object.openai(), v));
    };
    for (k, value) in map {
        let param = format!("stream_options.{k}");
        if !["include_usage", "include_obfuscation"].contains(&k.as_str()) {
            return Err(Rejection::at(
                format!("Unknown parameter: '{param}'."),
                param,
                "unknown_parameter",
            ));
        }
        if !value.is_null() {
            typed(&param, value, Kind::Bool)?;
        }
    }
    Ok(())
}

/// `top_logprobs` needs `"logprobs": true` (`The 'top_logprobs' parameter is only
/// allowed when 'logprobs' is enabled.`, measured in 2026-08; the spec: "`logprobs`
/// must be set to `true` if this parameter is used").
fn top_logprobs(body: &Map<String, Value>) -> Result<(), Rejection> {
    if given(body, "top_logprobs").is_none() || given(body, "logprobs") == Some(&Value::Bool(true))
    {
        return Ok(());
    }
    Err(Rejection {
        message: "The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled."
            .to_owned(),
        param: Some("top_logprobs".to_owned()),
        code: None,
    })
}
