//! `messages` of a Messages body: roles, content, and tool results answering tool
//! uses.

use serde_json::{Map, Value};

use super::super::kind::Kind;
use super::blocks::block;
use super::{Rejection, fail, members, typed};

/// One message's turn as the pairing of tool uses and results reads it.
#[derive(Default)]
pub(super) struct Turn {
    /// The ids of its `tool_use` blocks.
    uses: Vec<String>,
    /// Its `tool_result` blocks: (block index, `tool_use_id`).
    results: Vec<(usize, String)>,
}

/// The shape of `messages`: a list (`messages: Input should be a valid list`) of
/// messages (see [`shape`]), each message's first fault kept in `found`. Returns the
/// turns, one a message (a faulty one's empty).
pub(super) fn shapes(messages: Option<&Value>, found: &mut Vec<Rejection>) -> Vec<Turn> {
    let Some(messages) = messages else {
        return Vec::new();
    };
    let Value::Array(list) = messages else {
        found.extend(typed("messages", messages, Kind::Array).err());
        return Vec::new();
    };
    let mut turns = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        match shape(i, m) {
            Ok(turn) => turns.push(turn),
            Err(r) => {
                found.push(r);
                turns.push(Turn::default());
            }
        }
    }
    turns
}

/// The rules past the shape: at least one message (`messages: at least one message is
/// required`, quoted in langgenius/dify#25953 and devoxx/DevoxxGenieIDEAPlugin#567),
/// content that is not empty but in a final assistant turn (`messages.1: all messages
/// must have non-empty content except for the optional final assistant message`,
/// quoted in danny-avila/LibreChat#3372), tool results answering tool uses (see
/// [`pairing`]).
pub(super) fn check(messages: Option<&Value>, turns: &[Turn]) -> Result<(), Rejection> {
    let list = messages
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if list.is_empty() {
        return Err(fail("messages", "at least one message is required"));
    }
    let last = list.len().saturating_sub(1);
    for (i, m) in list.iter().enumerate() {
        non_empty(i, m, i == last)?;
    }
    pairing(turns)
}

/// One message: an object of `role` and `content` only (the SDK's `MessageParam`).
///
/// The role is `user` or `assistant`: `messages.0.role: Input should be 'user' or
/// 'assistant'` (issue 14 quotes it; the system prompt goes in the top-level `system`,
/// "there is no `"system"` role for input messages in the Messages API", the SDK's doc
/// of `messages`). The spec lists a `system` role for mid-conversation system blocks
/// since 2026-05 (claude-opus-4-8); that is not modelled here.
fn shape(i: usize, m: &Value) -> Result<Turn, Rejection> {
    let loc = format!("messages.{i}");
    let Value::Object(m) = m else {
        return Err(fail(&loc, "Input should be a valid dictionary"));
    };
    members(&loc, m, &["role", "content"], &[])?;
    let role = m.get("role").and_then(Value::as_str);
    if !matches!(role, Some("user" | "assistant")) {
        return Err(fail(
            &format!("{loc}.role"),
            "Input should be 'user' or 'assistant'",
        ));
    }
    content(&loc, m)
}

/// Content is not empty, but in a final assistant turn (a prefill).
fn non_empty(i: usize, m: &Value, last: bool) -> Result<(), Rejection> {
    let final_assistant = last && m.get("role").and_then(Value::as_str) == Some("assistant");
    let empty = match m.get("content") {
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(blocks)) => blocks.is_empty(),
        _ => false,
    };
    match empty && !final_assistant {
        true => Err(fail(
            &format!("messages.{i}"),
            "all messages must have non-empty content except for the optional final assistant message",
        )),
        false => Ok(()),
    }
}

/// The content: a string, or blocks whose tool uses and results are gathered.
fn content(loc: &str, m: &Map<String, Value>) -> Result<Turn, Rejection> {
    let at = format!("{loc}.content");
    let blocks = match m.get("content") {
        Some(Value::String(_)) => return Ok(Turn::default()),
        Some(Value::Array(blocks)) => blocks,
        _ => return Err(fail(&at, "Input should be a valid list")),
    };
    let mut turn = Turn::default();
    for (j, b) in blocks.iter().enumerate() {
        let (map, tag) = block(&format!("{at}.{j}"), b)?;
        let id = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_owned);
        match tag {
            "tool_use" => turn.uses.extend(id("id")),
            "tool_result" => turn.results.extend(id("tool_use_id").map(|t| (j, t))),
            _ => {}
        }
    }
    Ok(turn)
}

/// A `tool_result` answers a `tool_use` of the message just before it, and every
/// `tool_use` is answered in the message just after it, unless it ends the list:
///
/// - `messages.48.content.1: unexpected `tool_use_id` found in `tool_result` blocks:
///   toolu_x. Each `tool_result` block must have a corresponding `tool_use` block in
///   the previous message.` (anthropics/claude-code#13460);
/// - `messages.125: `tool_use` ids were found without `tool_result` blocks immediately
///   after: toolu_x. Each `tool_use` block must have a corresponding `tool_result`
///   block in the next message.` (anthropics/claude-code#7929), at the message of the
///   uses.
fn pairing(turns: &[Turn]) -> Result<(), Rejection> {
    let mut before: &[String] = &[];
    for (i, turn) in turns.iter().enumerate() {
        for (j, id) in &turn.results {
            if !before.contains(id) {
                return Err(fail(
                    &format!("messages.{i}.content.{j}"),
                    &format!(
                        "unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    ),
                ));
            }
        }
        unanswered(i, turn, turns.get(i.saturating_add(1)))?;
        before = &turn.uses;
    }
    Ok(())
}

fn unanswered(i: usize, turn: &Turn, next: Option<&Turn>) -> Result<(), Rejection> {
    let Some(next) = next else {
        return Ok(());
    };
    let missing: Vec<&str> = turn
        .uses
        .iter()
        .filter(|u| !next.results.iter().any(|(_, r)| r == *u))
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(fail(
        &format!("messages.{i}"),
        &format!(
            "`tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
            missing.join(", ")
        ),
    ))
}
