//! Tools in a Chat Completions body: `tools`, `tool_choice`, the assistant's
//! `tool_calls` and the `tool` messages that answer them.

use serde_json::{Map, Value};

use super::super::given;
use super::super::kind::Kind;
use super::messages::role;
use super::{Rejection, empty_array, invalid_value, missing, too_long, typed, wrong_type};

/// `tools`, `functions`, `tool_choice` and `parallel_tool_calls`.
pub(super) fn check(body: &Map<String, Value>) -> Result<(), Rejection> {
    if let Some(f) = given(body, "functions") {
        typed("functions", f, Kind::Array)?;
    }
    let names = match given(body, "tools") {
        Some(tools) => definitions(tools)?,
        None => Vec::new(),
    };
    let offered = given(body, "tools").is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()));
    if let Some(choice) = given(body, "tool_choice") {
        tool_choice(choice, offered, &names)?;
    }
    if given(body, "parallel_tool_calls").is_some() && !offered {
        return Err(only_with_tools("parallel_tool_calls"));
    }
    Ok(())
}

/// `tools`: at most 128 (the SDK's doc of `tools`: "A max of 128 functions are
/// supported") objects of `{"type": "function", "function": {"name", "description"?,
/// "parameters"?}}` or `{"type": "custom", "custom": {"name", …}}` (the SDK's
/// `ChatCompletionToolUnionParam`). Messages measured in 2026-08: `Invalid type for
/// 'tools': expected an array of objects, but got a string instead.`, `Missing required
/// parameter: 'tools[0].function'.`, `Missing required parameter:
/// 'tools[0].function.name'.`, `Invalid 'tools[0].function.name': empty string. …`.
/// Returns the function names.
fn definitions(tools: &Value) -> Result<Vec<String>, Rejection> {
    let Value::Array(list) = tools else {
        return Err(wrong_type("tools", Kind::Array.openai(), tools));
    };
    if list.len() > 128 {
        return Err(too_long("tools", 128, list.len()));
    }
    let mut names = Vec::with_capacity(list.len());
    for (i, t) in list.iter().enumerate() {
        names.push(definition(i, t)?);
    }
    Ok(names)
}

fn definition(i: usize, t: &Value) -> Result<String, Rejection> {
    let param = format!("tools[{i}]");
    let Value::Object(t) = t else {
        return Err(wrong_type(&param, "an object", t));
    };
    let Some(kind) = t.get("type") else {
        return Err(missing(&format!("{param}.type")));
    };
    typed(&format!("{param}.type"), kind, Kind::Str)?;
    let (kind, member, f) = member_of(&param, t)?;
    let name = name_of(&member, f)?;
    if kind == "function" {
        if let Some(p) = f.get("parameters").filter(|p| !p.is_null()) {
            typed(&format!("{member}.parameters"), p, Kind::Object)?;
        }
    }
    Ok(name)
}

/// The member a tool (or tool call) at `param` carries for its `type` (a string):
/// `function` or `custom`, an object named after the type. Returns the type, the
/// member's path and the member.
fn member_of<'a>(
    param: &str,
    t: &'a Map<String, Value>,
) -> Result<(&'a str, String, &'a Value), Rejection> {
    const TYPES: [&str; 2] = ["function", "custom"];
    let kind = t.get("type").and_then(Value::as_str).unwrap_or_default();
    if !TYPES.contains(&kind) {
        return Err(invalid_value(&format!("{param}.type"), kind, &TYPES));
    }
    let member = format!("{param}.{kind}");
    let Some(f) = t.get(kind) else {
        return Err(missing(&member));
    };
    typed(&member, f, Kind::Object)?;
    Ok((kind, member, f))
}

/// A function's `name`: required, a non-empty string.
fn name_of(member: &str, f: &Value) -> Result<String, Rejection> {
    let param = format!("{member}.name");
    let Some(n) = f.get("name") else {
        return Err(missing(&param));
    };
    typed(&param, n, Kind::Str)?;
    let n = n.as_str().unwrap_or_default();
    if n.is_empty() {
        return Err(Rejection::at(
            format!(
                "Invalid '{param}': empty string. Expected a string with minimum length 1, but got an empty string instead."
            ),
            param,
            "empty_string",
        ));
    }
    Ok(n.to_owned())
}

/// `tool_choice`: `none`, `auto`, `required` or an object naming a function, and only
/// with `tools` (`Invalid value for 'tool_choice': 'tool_choice' is only allowed when
/// 'tools' are specified.`). Measured in 2026-08: `Invalid value: 'bogus'. Supported
/// values are: 'none', 'auto', and 'required'.`; `Missing required parameter:
/// 'tool_choice.function'.`; a function not among the tools: `Invalid value for
/// 'function_call': no function named 'x' was specified in the 'functions'
/// parameter.` (param `function_call`, as the API writes it).
fn tool_choice(choice: &Value, offered: bool, names: &[String]) -> Result<(), Rejection> {
    const MODES: [&str; 3] = ["none", "auto", "required"];
    match choice {
        Value::String(mode) if !MODES.contains(&mode.as_str()) => {
            return Err(invalid_value("tool_choice", mode, &MODES));
        }
        Value::String(_) | Value::Object(_) => {}
        other => {
            return Err(wrong_type(
                "tool_choice",
                "one of one of 'none', 'auto', or 'required' or object",
                other,
            ));
        }
    }
    if !offered {
        return Err(only_with_tools("tool_choice"));
    }
    let Value::Object(choice) = choice else {
        return Ok(());
    };
    named_choice(choice, names)
}

fn named_choice(choice: &Map<String, Value>, names: &[String]) -> Result<(), Rejection> {
    if choice.get("type").and_then(Value::as_str) == Some("allowed_tools") {
        return match choice.get("allowed_tools") {
            Some(a) => typed("tool_choice.allowed_tools", a, Kind::Object),
            None => Err(missing("tool_choice.allowed_tools")),
        };
    }
    let Some(f) = choice.get("function") else {
        return Err(missing("tool_choice.function"));
    };
    typed("tool_choice.function", f, Kind::Object)?;
    let Some(name) = f.get("name") else {
        return Err(missing("tool_choice.function.name"));
    };
    typed("tool_choice.function.name", name, Kind::Str)?;
    let name = name.as_str().unwrap_or_default();
    if names.iter().any(|n| n == name) {
        return Ok(());
    }
    Err(Rejection {
        message: format!(
            "Invalid value for 'function_call': no function named '{name}' was specified in the 'functions' parameter."
        ),
        param: Some("function_call".to_owned()),
        code: None,
    })
}

/// `Invalid value for '{p}': '{p}' is only allowed when 'tools' are specified.`
fn only_with_tools(p: &str) -> Rejection {
    Rejection {
        message: format!(
            "Invalid value for '{p}': '{p}' is only allowed when 'tools' are specified."
        ),
        param: Some(p.to_owned()),
        code: None,
    }
}

/// An assistant's `tool_calls`: a non-empty array (`Invalid 'messages[1].tool_calls':
/// empty array. …`, quoted in home-assistant/core#118577) of `{"id", "type":
/// "function", "function": {"name", "arguments"}}` (the SDK's
/// `ChatCompletionMessageFunctionToolCallParam`).
pub(super) fn calls(i: usize, m: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(calls) = m.get("tool_calls").filter(|c| !c.is_null()) else {
        return Ok(());
    };
    let param = format!("messages[{i}].tool_calls");
    let Value::Array(list) = calls else {
        return Err(wrong_type(&param, Kind::Array.openai(), calls));
    };
    if list.is_empty() {
        return Err(empty_array(&param));
    }
    for (j, c) in list.iter().enumerate() {
        call(&format!("{param}[{j}]"), c)?;
    }
    Ok(())
}

fn call(param: &str, c: &Value) -> Result<(), Rejection> {
    let Value::Object(c) = c else {
        return Err(wrong_type(param, "an object", c));
    };
    for key in ["id", "type"] {
        let p = format!("{param}.{key}");
        let Some(v) = c.get(key) else {
            return Err(missing(&p));
        };
        typed(&p, v, Kind::Str)?;
    }
    let (kind, member, f) = member_of(param, c)?;
    let fields: &[&str] = match kind {
        "function" => &["name", "arguments"],
        _ => &["name", "input"],
    };
    for key in fields {
        let p = format!("{member}.{key}");
        let Some(v) = f.get(*key) else {
            return Err(missing(&p));
        };
        typed(&p, v, Kind::Str)?;
    }
    Ok(())
}

/// Tool calls and tool messages pair up: a `tool` message follows an assistant message
/// with `tool_calls` (or another tool message answering it), names one of its ids, and
/// every id is answered before the next other message.
///
/// - `Invalid parameter: messages with role 'tool' must be a response to a preceeding
///   message with 'tool_calls'.`, param `messages.[4].role`, code null (the API's
///   spelling; smarter-sh/smarter#264, miurla/morphic#136);
/// - `Invalid parameter: 'tool_call_id' of 'call_x' not found in 'tool_calls' of
///   previous message.` (dapr/dapr-agents#145; its param is not quoted anywhere, this
///   model names `messages.[i].tool_call_id` after the rule above);
/// - `An assistant message with 'tool_calls' must be followed by tool messages
///   responding to each 'tool_call_id'. The following tool_call_ids did not have
///   response messages: call_x` (aliasrobotics/cai#111), param `messages.[3].role` for
///   the message that came instead, `messages` when the list ended.
pub(super) fn pairing(messages: &[&Map<String, Value>]) -> Result<(), Rejection> {
    let mut open: Option<Vec<String>> = None;
    for (i, m) in messages.iter().enumerate() {
        let r = role(m);
        if r == "tool" {
            answer(i, m, open.as_mut())?;
            continue;
        }
        unanswered(open.take(), Some(i))?;
        if r == "assistant" {
            open = ids(m);
        }
    }
    unanswered(open, None)
}

/// The ids of an assistant's tool calls, when it made any.
fn ids(m: &Map<String, Value>) -> Option<Vec<String>> {
    let list = m.get("tool_calls")?.as_array()?;
    let ids = list
        .iter()
        .filter_map(|c| c.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    Some(ids)
}

fn answer(
    i: usize,
    m: &Map<String, Value>,
    open: Option<&mut Vec<String>>,
) -> Result<(), Rejection> {
    let Some(open) = open else {
        return Err(Rejection {
            message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.".to_owned(),
            param: Some(format!("messages.[{i}].role")),
            code: None,
        });
    };
    let id = m
        .get("tool_call_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(at) = open.iter().position(|o| o == id) {
        open.remove(at);
        return Ok(());
    }
    Err(Rejection {
        message: format!(
            "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous message."
        ),
        param: Some(format!("messages.[{i}].tool_call_id")),
        code: None,
    })
}

fn unanswered(open: Option<Vec<String>>, at: Option<usize>) -> Result<(), Rejection> {
    let Some(left) = open.filter(|l| !l.is_empty()) else {
        return Ok(());
    };
    Err(Rejection {
        message: format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
            left.join(", ")
        ),
        param: Some(match at {
            Some(i) => format!("messages.[{i}].role"),
            None => "messages".to_owned(),
        }),
        code: None,
    })
}
