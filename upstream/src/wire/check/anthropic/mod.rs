//! Anthropic's Messages API (`POST /v1/messages`): what it refuses, and how it says so.
//!
//! Anthropic validates bodies with pydantic and answers one error as `{loc}: {msg}`,
//! the location dotted (`messages.0.role`), a tagged union's tag inside it
//! (`tools.0.custom.input_schema`, `messages.65.content.1.tool_use.text`): `max_tokens:
//! Field required`, `stop: Extra inputs are not permitted`, `messages.0.role: Input
//! should be 'user' or 'assistant'` (the three issue 14 quotes; anthropics/claude-code
//! #4378 and #13460, langgenius/dify#25953 and Wei-Shaw/claude-relay-service#660 quote
//! the same shapes from the API).

use serde_json::{Map, Value};

use super::kind::Kind;
use super::{Rejection, given, unknown_keys};

mod blocks;
mod fields;
mod messages;
mod tools;

/// The top-level fields the API knows: `MessageCreateParamsBase` with `stream`, in
/// anthropic-sdk-python's `types/message_create_params.py` (generated from Anthropic's
/// OpenAPI spec; the version of 2026-08-07). Beta fields (`mcp_servers`,
/// `context_management`, …) are extra here: `context_management: Extra inputs are not
/// permitted` (Wei-Shaw/claude-relay-service#660).
pub(super) const KNOWN: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "cache_control",
    "container",
    "inference_geo",
    "metadata",
    "output_config",
    "service_tier",
    "stop_sequences",
    "stream",
    "system",
    "temperature",
    "thinking",
    "tool_choice",
    "tools",
    "top_k",
    "top_p",
];

/// The required top-level fields, in the order they are reported.
const REQUIRED: [&str; 3] = ["model", "max_tokens", "messages"];

/// Checks a Messages body.
///
/// Like pydantic, the API reports every fault of a body's shape at once, joined by
/// `; `: `max_tokens: Field required; stop: Extra inputs are not permitted;
/// messages.0.role: Input should be 'user' or 'assistant'` (the message issue 14
/// quotes; `tools.0.custom.eager_input_streaming: Extra inputs are not permitted;
/// tools.3.custom.…` is another joined answer as API users parse it). In order: the
/// missing required fields, the unknown fields, the other fields, each tool and
/// `tool_choice`, each message. Each field, tool, message and block reports its first
/// fault only. The rules past the shape (a non-empty list, non-empty content, tool
/// results answering tool uses) are checked only on a body of the right shape, and the
/// first fault is the answer.
pub(super) fn check(body: &Map<String, Value>) -> Result<(), Rejection> {
    let mut found = Vec::new();
    for key in REQUIRED {
        if !body.contains_key(key) {
            found.push(fail(key, "Field required"));
        }
    }
    for extra in unknown_keys(body, KNOWN) {
        found.push(fail(extra, "Extra inputs are not permitted"));
    }
    fields::check(body, &mut found);
    tools::check(body, &mut found);
    let turns = messages::shapes(body.get("messages"), &mut found);
    if !found.is_empty() {
        return Err(joined(found));
    }
    messages::check(body.get("messages"), &turns)
}

/// The faults of a body as one rejection, their messages joined by `; `.
fn joined(found: Vec<Rejection>) -> Rejection {
    let messages: Vec<String> = found.into_iter().map(|r| r.message).collect();
    Rejection::message(messages.join("; "))
}

/// Keeps the fault of one check, if any.
pub(super) fn keep(found: &mut Vec<Rejection>, result: Result<(), Rejection>) {
    if let Err(r) = result {
        found.push(r);
    }
}

/// `{loc}: {msg}`.
pub(super) fn fail(loc: &str, msg: &str) -> Rejection {
    Rejection::message(format!("{loc}: {msg}"))
}

/// `v` has the type `kind`, else `{loc}: Input should be a valid {type}`.
pub(super) fn typed(loc: &str, v: &Value, kind: Kind) -> Result<(), Rejection> {
    match kind.fits(v) {
        true => Ok(()),
        false => Err(fail(loc, kind.anthropic())),
    }
}

/// An optional field: absent, or of the type `kind` (`null` is refused where the SDK
/// does not mark the field `Optional`: `system: Input should be a valid list` answers a
/// `"system": null`, as quoted by API users).
pub(super) fn optional(body: &Map<String, Value>, key: &str, kind: Kind) -> Result<(), Rejection> {
    match body.get(key) {
        None => Ok(()),
        Some(v) => typed(key, v, kind),
    }
}

/// The object of a tagged union at `loc`: an object whose `type` is one of `tags`,
/// returned with its tag (`Input tag 'fallback' found using 'type' does not match any
/// of the expected tags: …`, the tags listed sorted as in `…document.source: Input tag
/// 'file' found using 'type' does not match any of the expected tags: 'base64',
/// 'content', 'text', 'url'`; `Unable to extract tag using discriminator 'type'` and
/// `Input should be a valid dictionary or object to extract fields from` are pydantic's
/// own for a missing tag and a non-object).
pub(super) fn tagged<'a>(
    loc: &str,
    v: &'a Value,
    tags: &[&str],
) -> Result<(&'a Map<String, Value>, &'a str), Rejection> {
    let Value::Object(map) = v else {
        return Err(fail(
            loc,
            "Input should be a valid dictionary or object to extract fields from",
        ));
    };
    let Some(tag) = map.get("type").and_then(Value::as_str) else {
        return Err(fail(
            loc,
            "Unable to extract tag using discriminator 'type'",
        ));
    };
    if tags.contains(&tag) {
        return Ok((map, tag));
    }
    let mut sorted: Vec<&str> = tags.to_vec();
    sorted.sort_unstable();
    let list: Vec<String> = sorted.iter().map(|t| format!("'{t}'")).collect();
    Err(fail(
        loc,
        &format!(
            "Input tag '{tag}' found using 'type' does not match any of the expected tags: {}",
            list.join(", ")
        ),
    ))
}

/// An object's members: the `required` ones present, none but `required` and
/// `optional` (`{loc}.{key}: Field required`, `{loc}.{key}: Extra inputs are not
/// permitted`); `type` is always allowed.
pub(super) fn members(
    loc: &str,
    map: &Map<String, Value>,
    required: &[&str],
    optional: &[&str],
) -> Result<(), Rejection> {
    for key in required {
        if !map.contains_key(*key) {
            return Err(fail(&format!("{loc}.{key}"), "Field required"));
        }
    }
    let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let extra = keys
        .into_iter()
        .find(|k| *k != "type" && !required.contains(k) && !optional.contains(k));
    match extra {
        Some(k) => Err(fail(
            &format!("{loc}.{k}"),
            "Extra inputs are not permitted",
        )),
        None => Ok(()),
    }
}

/// A member that must be a string, when present.
pub(super) fn string_member(
    loc: &str,
    map: &Map<String, Value>,
    key: &str,
) -> Result<(), Rejection> {
    match given(map, key) {
        Some(v) => typed(&format!("{loc}.{key}"), v, Kind::Str),
        None => Ok(()),
    }
}
