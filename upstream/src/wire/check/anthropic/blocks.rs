//! Content blocks of a Messages body, at `messages.{i}.content.{j}` (and text blocks
//! in `system`). Each block is a member of a tagged union: its fields are checked at
//! `{loc}.{type}.{field}` (`messages.65.content.1.tool_use.text: Extra inputs are not
//! permitted`, quoted in anthropics/claude-code#4378).

use serde_json::{Map, Value};

use super::super::kind::Kind;
use super::fields::cache_control;
use super::{Rejection, fail, members, string_member, tagged, typed};

/// The block types a message may hold: anthropic-sdk-python's `ContentBlockParam`
/// (2026-08). Those past `tool_result` are the server tools' and system blocks, checked
/// for their tag only.
pub(super) const BLOCKS: &[&str] = &[
    "text",
    "image",
    "document",
    "search_result",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "tool_result",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "tool_search_tool_result",
    "container_upload",
    "mid_conv_system",
];

/// The blocks a `tool_result`'s `content` may hold (the SDK's `ToolResultBlockParam`).
const RESULT_BLOCKS: &[&str] = &[
    "text",
    "image",
    "search_result",
    "document",
    "tool_reference",
];

/// One block of a message at `loc`, returned with its tag.
pub(super) fn block<'a>(
    loc: &str,
    v: &'a Value,
) -> Result<(&'a Map<String, Value>, &'a str), Rejection> {
    let (map, tag) = tagged(loc, v, BLOCKS)?;
    fields(loc, map, tag)?;
    Ok((map, tag))
}

/// The fields of a block of the tag `tag`.
fn fields(loc: &str, map: &Map<String, Value>, tag: &str) -> Result<(), Rejection> {
    let at = format!("{loc}.{tag}");
    match tag {
        "text" => text_block(loc, "messages", map),
        "image" => image(&at, map),
        "document" => document(&at, map),
        "tool_use" => tool_use(&at, map),
        "tool_result" => tool_result(&at, map),
        "thinking" => members(&at, map, &["signature", "thinking"], &[]),
        "redacted_thinking" => members(&at, map, &["data"], &[]),
        "search_result" => members(
            &at,
            map,
            &["content", "source", "title"],
            &["cache_control", "citations"],
        ),
        _ => Ok(()),
    }
}

/// A text block: `text`, a non-empty string (`messages: text content blocks must be
/// non-empty`, quoted by API users; for `system`, `system: …`), with optional
/// `cache_control` and `citations` (the SDK's `TextBlockParam`).
pub(super) fn text_block(
    loc: &str,
    scope: &str,
    map: &Map<String, Value>,
) -> Result<(), Rejection> {
    let at = format!("{loc}.text");
    members(&at, map, &["text"], &["cache_control", "citations"])?;
    let text = map.get("text").unwrap_or(&Value::Null);
    typed(&format!("{at}.text"), text, Kind::Str)?;
    if text.as_str().is_some_and(str::is_empty) {
        return Err(fail(scope, "text content blocks must be non-empty"));
    }
    optional_cache_control(&at, map)
}

fn optional_cache_control(at: &str, map: &Map<String, Value>) -> Result<(), Rejection> {
    match map.get("cache_control").filter(|c| !c.is_null()) {
        Some(c) => cache_control(&format!("{at}.cache_control"), c),
        None => Ok(()),
    }
}

/// An image: a `source` of `{"type": "base64", "media_type", "data"}` (JPEG, PNG, GIF
/// or WebP) or `{"type": "url", "url"}` (the SDK's `ImageBlockParam`).
fn image(at: &str, map: &Map<String, Value>) -> Result<(), Rejection> {
    members(at, map, &["source"], &["cache_control"])?;
    let loc = format!("{at}.source");
    let (src, tag) = tagged(
        &loc,
        map.get("source").unwrap_or(&Value::Null),
        &["base64", "url"],
    )?;
    let loc = format!("{loc}.{tag}");
    if tag == "url" {
        members(&loc, src, &["url"], &[])?;
        return string_member(&loc, src, "url");
    }
    members(&loc, src, &["data", "media_type"], &[])?;
    string_member(&loc, src, "data")?;
    const TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];
    match src.get("media_type").and_then(Value::as_str) {
        Some(m) if TYPES.contains(&m) => optional_cache_control(at, map),
        _ => Err(fail(
            &format!("{loc}.media_type"),
            "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
        )),
    }
}

/// A document: a `source` of `base64` (PDF), `text`, `content` or `url` (the SDK's
/// `DocumentBlockParam`; `…document.source: Input tag 'file' found using 'type' does
/// not match any of the expected tags: 'base64', 'content', 'text', 'url'`, as quoted
/// by an API user).
fn document(at: &str, map: &Map<String, Value>) -> Result<(), Rejection> {
    members(
        at,
        map,
        &["source"],
        &["cache_control", "citations", "context", "title"],
    )?;
    let loc = format!("{at}.source");
    let source = map.get("source").unwrap_or(&Value::Null);
    let (src, tag) = tagged(&loc, source, &["base64", "text", "content", "url"])?;
    let loc = format!("{loc}.{tag}");
    match tag {
        "base64" | "text" => members(&loc, src, &["data", "media_type"], &[]),
        "content" => members(&loc, src, &["content"], &[]),
        _ => members(&loc, src, &["url"], &[]),
    }
}

/// A tool use: `id`, `name` and an object `input` (the SDK's `ToolUseBlockParam`).
fn tool_use(at: &str, map: &Map<String, Value>) -> Result<(), Rejection> {
    members(
        at,
        map,
        &["id", "input", "name"],
        &["cache_control", "caller"],
    )?;
    string_member(at, map, "id")?;
    string_member(at, map, "name")?;
    typed(
        &format!("{at}.input"),
        map.get("input").unwrap_or(&Value::Null),
        Kind::Object,
    )
}

/// A tool result: `tool_use_id`, optional `content` (a string or result blocks) and
/// `is_error` (the SDK's `ToolResultBlockParam`).
fn tool_result(at: &str, map: &Map<String, Value>) -> Result<(), Rejection> {
    members(
        at,
        map,
        &["tool_use_id"],
        &["cache_control", "content", "is_error"],
    )?;
    string_member(at, map, "tool_use_id")?;
    if let Some(e) = map.get("is_error") {
        typed(&format!("{at}.is_error"), e, Kind::Bool)?;
    }
    let loc = format!("{at}.content");
    match map.get("content") {
        None | Some(Value::String(_)) => Ok(()),
        Some(Value::Array(blocks)) => {
            for (k, b) in blocks.iter().enumerate() {
                let loc = format!("{loc}.{k}");
                let (inner, tag) = tagged(&loc, b, RESULT_BLOCKS)?;
                if tag == "text" {
                    text_block(&loc, "messages", inner)?;
                }
            }
            Ok(())
        }
        Some(_) => Err(fail(&loc, "Input should be a valid list")),
    }
}
