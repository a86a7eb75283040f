//! The fields of a Messages body beside `messages`, `tools` and `tool_choice`.

use serde_json::{Map, Value};

use super::super::kind::Kind;
use super::blocks::text_block;
use super::{Rejection, fail, keep, members, optional, tagged, typed};

/// Types from anthropic-sdk-python's `MessageCreateParamsBase`; `null` is accepted
/// only where it marks the field `Optional` (`cache_control`, `container`,
/// `inference_geo`).
const TYPED: &[(&str, Kind)] = &[
    ("model", Kind::Str),
    ("stream", Kind::Bool),
    ("top_p", Kind::Number),
    ("top_k", Kind::Int),
    ("output_config", Kind::Object),
];

/// The check of one field.
type Check = fn(&Map<String, Value>) -> Result<(), Rejection>;

/// Every field but `messages`, `tools` and `tool_choice`, each fault kept in `found`.
pub(super) fn check(body: &Map<String, Value>, found: &mut Vec<Rejection>) {
    for (key, kind) in TYPED {
        keep(found, optional(body, key, *kind));
    }
    for key in ["container", "inference_geo"] {
        if let Some(v) = body.get(key).filter(|v| !v.is_null()) {
            keep(found, typed(key, v, Kind::Str));
        }
    }
    let checks: [Check; 8] = [
        max_tokens,
        temperature,
        stop_sequences,
        system,
        metadata,
        service_tier,
        thinking,
        top_cache_control,
    ];
    for c in checks {
        keep(found, c(body));
    }
}

fn top_cache_control(body: &Map<String, Value>) -> Result<(), Rejection> {
    match body.get("cache_control").filter(|v| !v.is_null()) {
        Some(c) => cache_control("cache_control", c),
        None => Ok(()),
    }
}

/// `max_tokens`: an integer, at least 0 ("Set to `0` to populate the prompt cache
/// without generating a response", the SDK's doc of `max_tokens`, 2026-08; a negative
/// value gets pydantic's `Input should be greater than or equal to 0`).
fn max_tokens(body: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(v) = body.get("max_tokens") else {
        return Ok(());
    };
    typed("max_tokens", v, Kind::Int)?;
    match v.as_i64().is_some_and(|n| n < 0) {
        true => Err(fail(
            "max_tokens",
            "Input should be greater than or equal to 0",
        )),
        false => Ok(()),
    }
}

/// `temperature`: a number from 0 to 1 (the SDK's doc: "Ranges from `0.0` to `1.0`";
/// `temperature: Input should be a valid number` for a string and `temperature: range:
/// 0..1` for 2.0, as measured against the API and quoted by users).
fn temperature(body: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(v) = body.get("temperature") else {
        return Ok(());
    };
    typed("temperature", v, Kind::Number)?;
    let t = v.as_f64().unwrap_or(0.0);
    match (0.0..=1.0).contains(&t) {
        true => Ok(()),
        false => Err(fail("temperature", "range: 0..1")),
    }
}

/// `stop_sequences`: a list of strings.
fn stop_sequences(body: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(v) = body.get("stop_sequences") else {
        return Ok(());
    };
    typed("stop_sequences", v, Kind::Array)?;
    for (i, s) in v.as_array().into_iter().flatten().enumerate() {
        typed(&format!("stop_sequences.{i}"), s, Kind::Str)?;
    }
    Ok(())
}

/// `system`: a string or a list of text blocks (the SDK's `Union[str,
/// Iterable[TextBlockParam]]`; `system: Input should be a valid list` answers anything
/// else, `null` included, as quoted by API users).
fn system(body: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(v) = body.get("system") else {
        return Ok(());
    };
    let blocks = match v {
        Value::String(_) => return Ok(()),
        Value::Array(blocks) => blocks,
        _ => return Err(fail("system", "Input should be a valid list")),
    };
    for (i, b) in blocks.iter().enumerate() {
        let loc = format!("system.{i}");
        let (map, _) = tagged(&loc, b, &["text"])?;
        text_block(&loc, "system", map)?;
    }
    Ok(())
}

/// `metadata`: `{"user_id": string | null}` only (the SDK's `MetadataParam`).
fn metadata(body: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(v) = body.get("metadata") else {
        return Ok(());
    };
    typed("metadata", v, Kind::Object)?;
    let map = v.as_object().cloned().unwrap_or_default();
    members("metadata", &map, &[], &["user_id"])?;
    match map.get("user_id").filter(|u| !u.is_null()) {
        Some(u) => typed("metadata.user_id", u, Kind::Str),
        None => Ok(()),
    }
}

/// `service_tier`: `auto` or `standard_only` (the SDK's literal; pydantic's literal
/// error).
fn service_tier(body: &Map<String, Value>) -> Result<(), Rejection> {
    match body.get("service_tier") {
        None => Ok(()),
        Some(Value::String(s)) if s == "auto" || s == "standard_only" => Ok(()),
        Some(_) => Err(fail(
            "service_tier",
            "Input should be 'auto' or 'standard_only'",
        )),
    }
}

/// `thinking`: `{"type": "enabled", "budget_tokens" ≥ 1024}`, `{"type": "adaptive"}` or
/// `{"type": "disabled"}` (the SDK's `ThinkingConfigParam`; its doc: "Requires a
/// minimum budget of 1,024 tokens").
fn thinking(body: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(v) = body.get("thinking") else {
        return Ok(());
    };
    let (map, tag) = tagged("thinking", v, &["enabled", "adaptive", "disabled"])?;
    let loc = format!("thinking.{tag}");
    match tag {
        "enabled" => members(&loc, map, &["budget_tokens"], &["display"])?,
        "adaptive" => members(&loc, map, &[], &["display"])?,
        _ => members(&loc, map, &[], &[])?,
    }
    let Some(budget) = map.get("budget_tokens") else {
        return Ok(());
    };
    let at = format!("{loc}.budget_tokens");
    typed(&at, budget, Kind::Int)?;
    match budget.as_i64().is_some_and(|b| b < 1024) {
        true => Err(fail(&at, "Input should be greater than or equal to 1024")),
        false => Ok(()),
    }
}

/// `cache_control`: `{"type": "ephemeral", "ttl"?: "5m" | "1h"}` (the SDK's
/// `CacheControlEphemeralParam`).
pub(super) fn cache_control(loc: &str, v: &Value) -> Result<(), Rejection> {
    let (map, tag) = tagged(loc, v, &["ephemeral"])?;
    members(&format!("{loc}.{tag}"), map, &[], &["ttl"])
}
