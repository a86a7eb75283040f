//! `messages` of a Chat Completions body: roles, content, tool calls and the tool
//! messages that answer them.
//!
//! Three passes, in the order the API was measured to report faults (a conformance
//! table of direct answers, 2026-08): the shape of every message (its type, role,
//! content type, tool calls) before any missing content, and both before the pairing
//! of tool calls with tool messages.

use serde_json::{Map, Value};

use super::super::kind::Kind;
use super::{Rejection, empty_array, invalid_value, missing, typed, wrong_type};

/// The roles (openai-python's `ChatCompletionMessageParam`), in the order the API
/// lists them: `Invalid value: 'developer'. Supported values are: 'system',
/// 'assistant', 'user', 'function', 'tool', and 'developer'.` (param
/// `messages[0].role`, code `invalid_value`; run-llama/llama_index#17748 quotes the list
/// before `developer` was added).
const ROLES: [&str; 6] = [
    "system",
    "assistant",
    "user",
    "function",
    "tool",
    "developer",
];

/// Checks `messages`: an array of at least one message object (`Invalid type for
/// 'messages': expected an array of objects, …`; `Invalid 'messages': empty array. …`).
pub(super) fn check(messages: &Value) -> Result<(), Rejection> {
    let Value::Array(list) = messages else {
        return Err(wrong_type("messages", Kind::Array.openai(), messages));
    };
    if list.is_empty() {
        return Err(empty_array("messages"));
    }
    let mut objects = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        let Value::Object(m) = m else {
            return Err(wrong_type(&format!("messages[{i}]"), "an object", m));
        };
        shape(i, m)?;
        objects.push(m);
    }
    for (i, m) in objects.iter().enumerate() {
        content_present(i, m)?;
    }
    super::tools::pairing(&objects)
}

/// The role of a message checked by [`shape`].
pub(super) fn role(m: &Map<String, Value>) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or_default()
}

/// A message's role, the type of its content and parts, and its role's own fields.
fn shape(i: usize, m: &Map<String, Value>) -> Result<(), Rejection> {
    let param = format!("messages[{i}].role");
    let Some(r) = m.get("role") else {
        return Err(missing(&param));
    };
    typed(&param, r, Kind::Str)?;
    let r = r.as_str().unwrap_or_default();
    if !ROLES.contains(&r) {
        return Err(invalid_value(&param, r, &ROLES));
    }
    content_type(i, r, m)?;
    match r {
        "assistant" => super::tools::calls(i, m),
        "tool" => tool_fields(i, m),
        "function" => match m.get("name") {
            Some(n) => typed(&format!("messages[{i}].name"), n, Kind::Str),
            None => Err(missing(&format!("messages[{i}].name"))),
        },
        _ => Ok(()),
    }
}

/// A tool message answers one call: `tool_call_id` is required (the SDK's
/// `ChatCompletionToolMessageParam`).
fn tool_fields(i: usize, m: &Map<String, Value>) -> Result<(), Rejection> {
    let param = format!("messages[{i}].tool_call_id");
    match m.get("tool_call_id") {
        Some(id) => typed(&param, id, Kind::Str),
        None => Err(missing(&param)),
    }
}

/// Content is a string or an array of parts (`Invalid type for 'messages[0].content':
/// expected one of a string or array of objects, but got an integer instead.`,
/// measured in 2026-08); `null` is left to [`content_present`].
fn content_type(i: usize, role: &str, m: &Map<String, Value>) -> Result<(), Rejection> {
    let param = format!("messages[{i}].content");
    match m.get("content") {
        None | Some(Value::Null) | Some(Value::String(_)) => Ok(()),
        Some(Value::Array(parts)) => {
            for (j, p) in parts.iter().enumerate() {
                part(&format!("{param}[{j}]"), role, p)?;
            }
            Ok(())
        }
        Some(other) => Err(wrong_type(
            &param,
            "one of a string or array of objects",
            other,
        )),
    }
}

/// The part types each role takes (the SDK's message params): users send `text`,
/// `image_url`, `input_audio` and `file`; assistants `text` and `refusal`; system,
/// developer and tool messages `text` only.
fn part_types(role: &str) -> &'static [&'static str] {
    match role {
        "user" => &["text", "image_url", "input_audio", "file"],
        "assistant" => &["text", "refusal"],
        _ => &["text"],
    }
}

/// One content part: an object with a known `type` and that type's member
/// (`Missing required parameter: 'messages[2].content[0].type'.`, quoted in
/// neuron-core/neuron-ai#292).
fn part(param: &str, role: &str, p: &Value) -> Result<(), Rejection> {
    let Value::Object(p) = p else {
        return Err(wrong_type(param, "an object", p));
    };
    let type_param = format!("{param}.type");
    let Some(t) = p.get("type") else {
        return Err(missing(&type_param));
    };
    typed(&type_param, t, Kind::Str)?;
    let t = t.as_str().unwrap_or_default();
    let allowed = part_types(role);
    if !allowed.contains(&t) {
        return Err(invalid_value(&type_param, t, allowed));
    }
    let (member, kind) = match t {
        "text" => ("text", Kind::Str),
        "refusal" => ("refusal", Kind::Str),
        "image_url" => ("image_url", Kind::Object),
        "input_audio" => ("input_audio", Kind::Object),
        _ => ("file", Kind::Object),
    };
    let member_param = format!("{param}.{member}");
    let Some(v) = p.get(member) else {
        return Err(missing(&member_param));
    };
    typed(&member_param, v, kind)?;
    part_member(&member_param, t, v)
}

/// `image_url.url` is required; `input_audio` needs `data` and a `format` of `wav` or
/// `mp3` (the SDK's `ImageURL` and `InputAudio`).
fn part_member(param: &str, t: &str, v: &Value) -> Result<(), Rejection> {
    let required: &[&str] = match t {
        "image_url" => &["url"],
        "input_audio" => &["data", "format"],
        _ => &[],
    };
    for key in required {
        let p = format!("{param}.{key}");
        let Some(x) = v.get(key) else {
            return Err(missing(&p));
        };
        typed(&p, x, Kind::Str)?;
    }
    let format = v.get("format").and_then(Value::as_str);
    match format {
        Some(f) if t == "input_audio" && !["wav", "mp3"].contains(&f) => Err(invalid_value(
            &format!("{param}.format"),
            f,
            &["wav", "mp3"],
        )),
        _ => Ok(()),
    }
}

/// Content is required, except from an assistant that carries `tool_calls`,
/// `function_call`, `refusal` or `audio` instead. A developer message without it gets
/// `Missing required parameter: 'messages[1].content'.`; a null content gets `Invalid
/// type for 'messages[1].content': expected one of a string or array of objects, but
/// got null instead.`; any other role gets `Invalid value for 'content': expected a
/// string, got null.` with param `messages.[0].content` and code null (all measured in
/// 2026-08).
fn content_present(i: usize, m: &Map<String, Value>) -> Result<(), Rejection> {
    if m.get("content").is_some_and(|c| !c.is_null()) {
        return Ok(());
    }
    let r = role(m);
    let substitutes = ["tool_calls", "function_call", "refusal", "audio"];
    if r == "assistant"
        && substitutes
            .iter()
            .any(|k| m.get(*k).is_some_and(|v| !v.is_null()))
    {
        return Ok(());
    }
    if r == "developer" {
        let param = format!("messages[{i}].content");
        return match m.get("content") {
            None => Err(missing(&param)),
            Some(v) => Err(wrong_type(&param, "one of a string or array of objects", v)),
        };
    }
    Err(Rejection {
        message: "Invalid value for 'content': expected a string, got null.".to_owned(),
        param: Some(format!("messages.[{i}].content")),
        code: None,
    })
}
