//! `tools` and `tool_choice` of a Messages body.

use serde_json::{Map, Value};

use super::super::kind::Kind;
use super::fields::cache_control;
use super::{Rejection, fail, keep, members, tagged, typed};

/// The server tools' `type` tags: the members of anthropic-sdk-python's
/// `ToolUnionParam` beside `ToolParam` (2026-08). A client tool is `custom`, its tag
/// optional.
const SERVER_TOOLS: &[&str] = &[
    "bash_20250124",
    "code_execution_20250522",
    "code_execution_20250825",
    "code_execution_20260120",
    "code_execution_20260521",
    "memory_20250818",
    "text_editor_20250124",
    "text_editor_20250429",
    "text_editor_20250728",
    "web_search_20250305",
    "web_fetch_20250910",
    "web_search_20260209",
    "web_fetch_20260209",
    "web_fetch_20260309",
    "web_search_20260318",
    "web_fetch_20260318",
    "tool_search_tool_bm25_20251119",
    "tool_search_tool_regex_20251119",
];

/// The optional members of a client tool (the SDK's `ToolParam`).
const TOOL_OPTIONAL: &[&str] = &[
    "type",
    "description",
    "cache_control",
    "strict",
    "defer_loading",
    "allowed_callers",
    "eager_input_streaming",
    "input_examples",
];

/// `tools` (each tool's fault kept) and `tool_choice`.
pub(super) fn check(body: &Map<String, Value>, found: &mut Vec<Rejection>) {
    if let Some(tools) = body.get("tools") {
        keep(found, typed("tools", tools, Kind::Array));
        for (i, t) in tools.as_array().into_iter().flatten().enumerate() {
            keep(found, tool(i, t));
        }
    }
    if let Some(c) = body.get("tool_choice") {
        keep(found, tool_choice(c));
    }
}

/// One tool. A client tool (`type` absent or `custom`) has a `name` matching
/// `^[a-zA-Z0-9_-]{1,128}$` (`tools.0.custom.name: String should match pattern
/// '^[a-zA-Z0-9_-]{1,128}$'`, quoted from the API by its users) and an object
/// `input_schema` (`tools.0.custom.input_schema: Field required`, likewise); a server
/// tool has one of the known tags and its `name`. Any other tag gets `tools.0: Input
/// tag 'function' found using 'type' does not match any of the expected tags:
/// 'custom'` (the answer to an OpenAI-shaped tool, as quoted by an API user).
fn tool(i: usize, t: &Value) -> Result<(), Rejection> {
    let loc = format!("tools.{i}");
    let Value::Object(map) = t else {
        return Err(fail(
            &loc,
            "Input should be a valid dictionary or object to extract fields from",
        ));
    };
    match map.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "custom" => {}
        Some(Value::String(s)) if SERVER_TOOLS.contains(&s.as_str()) => {
            return server_tool(&format!("{loc}.{s}"), map);
        }
        Some(Value::String(s)) => {
            return Err(fail(
                &loc,
                &format!(
                    "Input tag '{s}' found using 'type' does not match any of the expected tags: 'custom'"
                ),
            ));
        }
        Some(_) => {
            return Err(fail(
                &loc,
                "Unable to extract tag using discriminator 'type'",
            ));
        }
    }
    let at = format!("{loc}.custom");
    members(&at, map, &["name", "input_schema"], TOOL_OPTIONAL)?;
    let name = map.get("name").unwrap_or(&Value::Null);
    typed(&format!("{at}.name"), name, Kind::Str)?;
    if !name.as_str().is_some_and(valid_name) {
        return Err(fail(
            &format!("{at}.name"),
            "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'",
        ));
    }
    let schema = map.get("input_schema").unwrap_or(&Value::Null);
    typed(&format!("{at}.input_schema"), schema, Kind::Object)?;
    match map.get("cache_control").filter(|c| !c.is_null()) {
        Some(c) => cache_control(&format!("{at}.cache_control"), c),
        None => Ok(()),
    }
}

/// A server tool names itself.
fn server_tool(at: &str, map: &Map<String, Value>) -> Result<(), Rejection> {
    match map.get("name") {
        Some(n) => typed(&format!("{at}.name"), n, Kind::Str),
        None => Err(fail(&format!("{at}.name"), "Field required")),
    }
}

fn valid_name(n: &str) -> bool {
    let len = n.chars().count();
    (1..=128).contains(&len)
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `tool_choice`: `{"type": "auto" | "any" | "tool" | "none"}`, `tool` with a `name`
/// (`tool_choice.tool.name: Field required`, as LiteLLM's users quote the API), the
/// first three with an optional `disable_parallel_tool_use` (the SDK's
/// `ToolChoiceParam`).
fn tool_choice(c: &Value) -> Result<(), Rejection> {
    let (map, tag) = tagged("tool_choice", c, &["auto", "any", "tool", "none"])?;
    let at = format!("tool_choice.{tag}");
    match tag {
        "tool" => members(&at, map, &["name"], &["disable_parallel_tool_use"])?,
        "none" => members(&at, map, &[], &[])?,
        _ => members(&at, map, &[], &["disable_parallel_tool_use"])?,
    }
    if let Some(name) = map.get("name") {
        typed(&format!("{at}.name"), name, Kind::Str)?;
    }
    match map.get("disable_parallel_tool_use") {
        Some(d) => typed(&format!("{at}.disable_parallel_tool_use"), d, Kind::Bool),
        None => Ok(()),
    }
}
