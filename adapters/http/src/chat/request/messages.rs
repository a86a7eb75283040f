//! Canonical messages → Anthropic's top-level `system` and its `messages`.
//!
//! - Leading `system` and `developer` messages become `system`: a string when there is
//!   one message with string content, text blocks otherwise. A system message after the
//!   conversation started is an error: Anthropic has no place for it.
//! - `tool` messages become `tool_result` blocks of a user turn; consecutive turns of
//!   the same role are merged into one (their contents as blocks, in order; empty texts
//!   are left out, since Anthropic refuses empty text blocks).
//! - The conversation must start with a user turn and must not end with an assistant
//!   turn (which Anthropic would continue as a prefill, where OpenAI answers after it).

use serde_json::Value;

use super::super::content::{part_to_block, text_block, texts};
use super::super::error::TranslateError;
use super::super::json::{Obj, at, get, item, object, only, opt_array, opt_str, req_str};

/// Anthropic's `system` and `messages`.
pub(crate) struct Conversation {
    pub system: Option<Value>,
    pub messages: Vec<Value>,
}

/// A message's content: a lone string stays a string unless it is merged.
enum Body {
    Plain(String),
    Blocks(Vec<Value>),
}

impl Body {
    fn into_blocks(self) -> Vec<Value> {
        match self {
            Body::Plain(s) if s.is_empty() => Vec::new(),
            Body::Plain(s) => vec![text_block(&s)],
            Body::Blocks(b) => b,
        }
    }

    fn into_value(self) -> Value {
        match self {
            Body::Plain(s) => Value::String(s),
            Body::Blocks(b) => Value::Array(b),
        }
    }
}

struct Turn {
    role: &'static str,
    first: usize,
    body: Body,
}

/// Translates the canonical `messages`.
pub(crate) fn to_anthropic(messages: &[Value]) -> Result<Conversation, TranslateError> {
    let mut system = Vec::new();
    let mut turns: Vec<Turn> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let base = item("messages", i);
        let o = object(m, &base)?;
        let (role, body) = match req_str(o, &base, "role")? {
            "system" | "developer" if turns.is_empty() => {
                system.push(system_message(o, &base)?);
                continue;
            }
            "system" | "developer" => {
                return Err(TranslateError::untranslatable(
                    at(&base, "role"),
                    "Anthropic's system prompt comes before the conversation",
                ));
            }
            "user" => ("user", user_message(o, &base)?),
            "assistant" => ("assistant", assistant_message(o, &base)?),
            "tool" => ("user", Body::Blocks(vec![tool_message(o, &base)?])),
            _ => {
                return Err(TranslateError::invalid(
                    at(&base, "role"),
                    "system, developer, user, assistant or tool",
                ));
            }
        };
        push(&mut turns, role, i, body);
    }
    check_ends(&turns)?;
    Ok(Conversation {
        system: system_value(system),
        messages: turns
            .into_iter()
            .map(|t| serde_json::json!({"role": t.role, "content": t.body.into_value()}))
            .collect(),
    })
}

fn push(turns: &mut Vec<Turn>, role: &'static str, first: usize, body: Body) {
    match turns.last_mut() {
        Some(t) if t.role == role => {
            let mut blocks = std::mem::replace(&mut t.body, Body::Blocks(Vec::new())).into_blocks();
            blocks.extend(body.into_blocks());
            t.body = Body::Blocks(blocks);
        }
        _ => turns.push(Turn { role, first, body }),
    }
}

fn check_ends(turns: &[Turn]) -> Result<(), TranslateError> {
    let (Some(first), Some(last)) = (turns.first(), turns.last()) else {
        return Err(TranslateError::untranslatable(
            "messages",
            "Anthropic needs at least one user turn",
        ));
    };
    if first.role != "user" {
        return Err(TranslateError::untranslatable(
            at(&item("messages", first.first), "role"),
            "an Anthropic conversation starts with a user turn",
        ));
    }
    if last.role == "assistant" {
        return Err(TranslateError::untranslatable(
            at(&item("messages", last.first), "role"),
            "Anthropic continues a final assistant turn (a prefill) where OpenAI answers it",
        ));
    }
    Ok(())
}

/// One system message's texts, and whether its content was a plain string.
struct System {
    texts: Vec<String>,
    plain: bool,
}

fn system_message(o: &Obj, base: &str) -> Result<System, TranslateError> {
    only(o, base, &["role", "content"])?;
    let field = at(base, "content");
    let content = get(o, "content").ok_or_else(|| TranslateError::missing(&field))?;
    let texts = texts(
        content,
        &field,
        &["type", "text"],
        "Anthropic's system prompt is text only",
    )?;
    Ok(System {
        texts,
        plain: content.is_string(),
    })
}

fn system_value(system: Vec<System>) -> Option<Value> {
    if let [one] = system.as_slice() {
        if let (true, [text]) = (one.plain, one.texts.as_slice()) {
            return Some(Value::String(text.clone()));
        }
    }
    let blocks: Vec<Value> = system
        .iter()
        .flat_map(|s| s.texts.iter())
        .filter(|t| !t.is_empty())
        .map(|t| text_block(t))
        .collect();
    (!blocks.is_empty()).then_some(Value::Array(blocks))
}

fn user_message(o: &Obj, base: &str) -> Result<Body, TranslateError> {
    only(o, base, &["role", "content"])?;
    let field = at(base, "content");
    match get(o, "content") {
        None => Err(TranslateError::missing(field)),
        Some(Value::String(s)) => Ok(Body::Plain(s.clone())),
        // Anthropic refuses a user turn without content ("messages.0.content: ... at
        // least 1 item"); OpenAI takes it. Refused here, by name, before any attempt.
        Some(Value::Array(parts)) if parts.is_empty() => {
            Err(TranslateError::invalid(field, "at least one content part"))
        }
        Some(Value::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(j, p)| part_to_block(p, &item(&field, j)))
            .collect::<Result<_, _>>()
            .map(Body::Blocks),
        Some(_) => Err(TranslateError::invalid(
            field,
            "a string or an array of parts",
        )),
    }
}

fn assistant_message(o: &Obj, base: &str) -> Result<Body, TranslateError> {
    only(o, base, &["role", "content", "tool_calls"])?;
    let calls = opt_array(o, base, "tool_calls")?.filter(|c| !c.is_empty());
    let field = at(base, "content");
    let content = get(o, "content");
    if let (None, Some(Value::String(s))) = (calls, content) {
        return Ok(Body::Plain(s.clone()));
    }
    if calls.is_none() && content.is_none() {
        return Err(TranslateError::missing(field));
    }
    let why = "Anthropic assistant turns hold text and tool calls";
    let mut blocks: Vec<Value> = match content {
        Some(c) => texts(c, &field, &["type", "text"], why)?
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| text_block(t))
            .collect(),
        None => Vec::new(),
    };
    let calls_field = at(base, "tool_calls");
    for (j, call) in calls.into_iter().flatten().enumerate() {
        blocks.push(tool_use(call, &item(&calls_field, j))?);
    }
    Ok(Body::Blocks(blocks))
}

/// An OpenAI tool call as a `tool_use` block (`arguments` parsed as `input`).
pub(crate) fn tool_use(call: &Value, base: &str) -> Result<Value, TranslateError> {
    let c = object(call, base)?;
    only(c, base, &["id", "type", "function"])?;
    if opt_str(c, base, "type")?.is_some_and(|t| t != "function") {
        return Err(TranslateError::untranslatable(
            at(base, "type"),
            "Anthropic tool calls are function calls",
        ));
    }
    let id = req_str(c, base, "id")?;
    let field = at(base, "function");
    let f = get(c, "function").ok_or_else(|| TranslateError::missing(&field))?;
    let f = object(f, &field)?;
    only(f, &field, &["name", "arguments"])?;
    let name = req_str(f, &field, "name")?;
    let args = opt_str(f, &field, "arguments")?.unwrap_or("");
    let input = parse_arguments(args, &at(&field, "arguments"))?;
    Ok(serde_json::json!({"type": "tool_use", "id": id, "name": name, "input": input}))
}

/// A tool call's `arguments` as Anthropic's `input` object. An empty string (what some
/// models send for a function without parameters) is the empty object.
pub(crate) fn parse_arguments(args: &str, field: &str) -> Result<Value, TranslateError> {
    if args.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str::<Value>(args) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(TranslateError::invalid(field, "a JSON object in a string")),
    }
}

fn tool_message(o: &Obj, base: &str) -> Result<Value, TranslateError> {
    only(o, base, &["role", "content", "tool_call_id"])?;
    let id = req_str(o, base, "tool_call_id")?;
    let field = at(base, "content");
    let content = match get(o, "content") {
        None => Value::String(String::new()),
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(c) => Value::Array(
            texts(c, &field, &["type", "text"], "OpenAI tool results are text")?
                .iter()
                .map(|t| text_block(t))
                .collect(),
        ),
    };
    Ok(serde_json::json!({"type": "tool_result", "tool_use_id": id, "content": content}))
}
