//! Anthropic `system` and `messages` → canonical messages.
//!
//! - `system` becomes one system message per text block (a string, one message).
//! - A user turn's `tool_result` blocks become `tool` messages and its other blocks user
//!   messages, in their order; an assistant turn's text blocks become `content` (none:
//!   `null`, one: a string, more: text parts) and its `tool_use` blocks `tool_calls`.
//! - A final assistant turn (a prefill, which Anthropic continues) is an error: OpenAI
//!   would answer it instead.

use serde_json::{Map, Value, json};

use super::super::content::{block_to_part, text_part, texts};
use super::super::error::TranslateError;
use super::super::json::{Obj, at, get, item, object, only, opt_bool, req_str};

const TEXT_FIELDS: &[&str] = &["type", "text", "cache_control"];

/// Anthropic's `system` as system messages.
pub(crate) fn system_messages(system: &Value) -> Result<Vec<Value>, TranslateError> {
    let texts = texts(system, "system", TEXT_FIELDS, "a system prompt is text")?;
    Ok(texts
        .into_iter()
        .map(|t| json!({"role": "system", "content": t}))
        .collect())
}

/// Anthropic `messages` as canonical messages.
pub(crate) fn to_openai(messages: &[Value]) -> Result<Vec<Value>, TranslateError> {
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let base = item("messages", i);
        let o = object(m, &base)?;
        only(o, &base, &["role", "content"])?;
        let role = req_str(o, &base, "role")?;
        let field = at(&base, "content");
        let content = get(o, "content").ok_or_else(|| TranslateError::missing(&field))?;
        match (role, content) {
            ("user" | "assistant", Value::String(s)) => {
                out.push(json!({"role": role, "content": s}));
            }
            ("user", Value::Array(blocks)) => user_turn(blocks, &field, &mut out)?,
            ("assistant", Value::Array(blocks)) => out.push(assistant_turn(blocks, &field)?),
            ("user" | "assistant", _) => {
                return Err(TranslateError::invalid(
                    field,
                    "a string or an array of blocks",
                ));
            }
            _ => {
                return Err(TranslateError::invalid(
                    at(&base, "role"),
                    "user or assistant",
                ));
            }
        }
        if role == "assistant" && i + 1 == messages.len() {
            return Err(TranslateError::untranslatable(
                at(&base, "role"),
                "OpenAI answers a final assistant turn where Anthropic continues it (a prefill)",
            ));
        }
    }
    Ok(out)
}

fn user_turn(blocks: &[Value], base: &str, out: &mut Vec<Value>) -> Result<(), TranslateError> {
    let mut parts = Vec::new();
    for (j, block) in blocks.iter().enumerate() {
        let at_j = item(base, j);
        let b = object(block, &at_j)?;
        if req_str(b, &at_j, "type")? != "tool_result" {
            parts.push(block_to_part(b, &at_j)?);
            continue;
        }
        if !parts.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut parts)}));
        }
        out.push(tool_result(b, &at_j)?);
    }
    if !parts.is_empty() {
        out.push(json!({"role": "user", "content": parts}));
    }
    Ok(())
}

fn tool_result(b: &Obj, base: &str) -> Result<Value, TranslateError> {
    only(
        b,
        base,
        &[
            "type",
            "tool_use_id",
            "content",
            "is_error",
            "cache_control",
        ],
    )?;
    if opt_bool(b, base, "is_error")? == Some(true) {
        return Err(TranslateError::untranslatable(
            at(base, "is_error"),
            "OpenAI tool results have no error flag",
        ));
    }
    let id = req_str(b, base, "tool_use_id")?;
    let field = at(base, "content");
    let content = match get(b, "content") {
        None => Value::String(String::new()),
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(c) => Value::Array(
            texts(c, &field, TEXT_FIELDS, "OpenAI tool results are text")?
                .iter()
                .map(|t| text_part(t))
                .collect(),
        ),
    };
    Ok(json!({"role": "tool", "tool_call_id": id, "content": content}))
}

fn assistant_turn(blocks: &[Value], base: &str) -> Result<Value, TranslateError> {
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for (j, block) in blocks.iter().enumerate() {
        let at_j = item(base, j);
        let b = object(block, &at_j)?;
        match req_str(b, &at_j, "type")? {
            "text" => {
                only(b, &at_j, TEXT_FIELDS)?;
                texts.push(req_str(b, &at_j, "text")?.to_owned());
            }
            "tool_use" => calls.push(tool_call(b, &at_j)?),
            _ => {
                return Err(TranslateError::untranslatable(
                    at(&at_j, "type"),
                    "OpenAI assistant messages hold text and tool calls",
                ));
            }
        }
    }
    let mut out = Map::new();
    out.insert("role".into(), "assistant".into());
    let content = match texts.as_slice() {
        [] => Value::Null,
        [one] => Value::String(one.clone()),
        many => Value::Array(many.iter().map(|t| text_part(t)).collect()),
    };
    out.insert("content".into(), content);
    if !calls.is_empty() {
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    Ok(Value::Object(out))
}

/// A `tool_use` block as an OpenAI tool call (`input` serialized as `arguments`).
pub(crate) fn tool_call(b: &Obj, base: &str) -> Result<Value, TranslateError> {
    only(b, base, &["type", "id", "name", "input", "cache_control"])?;
    let id = req_str(b, base, "id")?;
    let name = req_str(b, base, "name")?;
    let field = at(base, "input");
    let input = get(b, "input").ok_or_else(|| TranslateError::missing(&field))?;
    object(input, &field)?;
    Ok(json!({
        "id": id,
        "type": "function",
        "function": {"name": name, "arguments": input.to_string()}
    }))
}
