//! Tools and tool choice, both ways: `function` tools ⇄ `name` + `description` +
//! `input_schema`; `auto` / `none` / `required` / a named function ⇄ `auto` / `none` /
//! `any` / `tool`; `parallel_tool_calls: false` ⇄ `disable_parallel_tool_use: true`.

use serde_json::{Map, Value, json};

use super::super::error::TranslateError;
use super::super::json::{Obj, at, get, item, object, only, opt_bool, opt_str, req_str};

/// A function without parameters: what OpenAI assumes when `parameters` is absent and
/// what Anthropic's required `input_schema` must then say.
fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// Canonical `tools` → Anthropic `tools`.
pub(crate) fn tools_to_anthropic(tools: &[Value]) -> Result<Vec<Value>, TranslateError> {
    each_tool(tools, |t, base| {
        if req_str(t, base, "type")? != "function" {
            return Err(TranslateError::untranslatable(
                at(base, "type"),
                "Anthropic tools are function tools",
            ));
        }
        only(t, base, &["type", "function"])?;
        let field = at(base, "function");
        let f = get(t, "function").ok_or_else(|| TranslateError::missing(&field))?;
        let f = object(f, &field)?;
        only(f, &field, &["name", "description", "parameters", "strict"])?;
        if opt_bool(f, &field, "strict")? == Some(true) {
            return Err(TranslateError::untranslatable(
                at(&field, "strict"),
                "Anthropic does not enforce a tool's schema",
            ));
        }
        let mut out = Map::new();
        out.insert("name".into(), req_str(f, &field, "name")?.into());
        if let Some(d) = opt_str(f, &field, "description")? {
            out.insert("description".into(), d.into());
        }
        let schema = get(f, "parameters").cloned().unwrap_or_else(empty_schema);
        out.insert("input_schema".into(), schema);
        Ok(Value::Object(out))
    })
}

/// Anthropic `tools` → canonical `tools`. Server tools (a `type` other than `custom`)
/// have no OpenAI equivalent.
pub(crate) fn tools_to_openai(tools: &[Value]) -> Result<Vec<Value>, TranslateError> {
    each_tool(tools, |t, base| {
        if opt_str(t, base, "type")?.is_some_and(|k| k != "custom") {
            return Err(TranslateError::untranslatable(
                at(base, "type"),
                "OpenAI has no server tools",
            ));
        }
        let known = [
            "type",
            "name",
            "description",
            "input_schema",
            "cache_control",
        ];
        only(t, base, &known)?;
        let mut f = Map::new();
        f.insert("name".into(), req_str(t, base, "name")?.into());
        if let Some(d) = opt_str(t, base, "description")? {
            f.insert("description".into(), d.into());
        }
        let schema = get(t, "input_schema")
            .ok_or_else(|| TranslateError::missing(at(base, "input_schema")))?;
        f.insert("parameters".into(), schema.clone());
        Ok(json!({"type": "function", "function": f}))
    })
}

/// Each tool of a `tools` array as an object, translated by `f` with its path
/// (`tools[i]`).
fn each_tool(
    tools: &[Value],
    f: impl Fn(&Obj, &str) -> Result<Value, TranslateError>,
) -> Result<Vec<Value>, TranslateError> {
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let base = item("tools", i);
            f(object(tool, &base)?, &base)
        })
        .collect()
}

/// Canonical `tool_choice` and `parallel_tool_calls` → Anthropic `tool_choice`.
///
/// `parallel_tool_calls: false` becomes `disable_parallel_tool_use: true` on the choice
/// (on `auto` when no choice is given); with `none`, or without tools, no tool is
/// called, so it has nothing to say and is not sent. `true` is both APIs' default.
pub(crate) fn choice_to_anthropic(
    req: &Obj,
    has_tools: bool,
) -> Result<Option<Value>, TranslateError> {
    let mut choice = match get(req, "tool_choice") {
        None => None,
        Some(Value::String(mode)) => Some(match mode.as_str() {
            "auto" => json!({"type": "auto"}),
            "none" => json!({"type": "none"}),
            "required" => json!({"type": "any"}),
            _ => {
                return Err(TranslateError::invalid(
                    "tool_choice",
                    "auto, none, required or a named function",
                ));
            }
        }),
        Some(v) => Some(named_to_anthropic(v)?),
    };
    let serial = opt_bool(req, "", "parallel_tool_calls")? == Some(false);
    if serial && has_tools {
        let c = choice.get_or_insert_with(|| json!({"type": "auto"}));
        if let Some(o) = c
            .as_object_mut()
            .filter(|o| o.get("type") != Some(&"none".into()))
        {
            o.insert("disable_parallel_tool_use".into(), Value::Bool(true));
        }
    }
    Ok(choice)
}

fn named_to_anthropic(v: &Value) -> Result<Value, TranslateError> {
    let base = "tool_choice";
    let o = object(v, base)?;
    if req_str(o, base, "type")? != "function" {
        return Err(TranslateError::untranslatable(
            at(base, "type"),
            "Anthropic names one function tool or none",
        ));
    }
    only(o, base, &["type", "function"])?;
    let field = at(base, "function");
    let f = get(o, "function").ok_or_else(|| TranslateError::missing(&field))?;
    let f = object(f, &field)?;
    only(f, &field, &["name"])?;
    Ok(json!({"type": "tool", "name": req_str(f, &field, "name")?}))
}

/// Anthropic `tool_choice` → canonical `tool_choice` and `parallel_tool_calls`
/// (`Some(false)` only when parallel use is disabled).
pub(crate) fn choice_to_openai(choice: &Value) -> Result<(Value, Option<bool>), TranslateError> {
    let base = "tool_choice";
    let o = object(choice, base)?;
    let kind = req_str(o, base, "type")?;
    let known: &[&str] = match kind {
        "none" => &["type"],
        "tool" => &["type", "name", "disable_parallel_tool_use"],
        _ => &["type", "disable_parallel_tool_use"],
    };
    only(o, base, known)?;
    let out = match kind {
        "auto" => json!("auto"),
        "any" => json!("required"),
        "none" => json!("none"),
        "tool" => json!({"type": "function", "function": {"name": req_str(o, base, "name")?}}),
        _ => {
            return Err(TranslateError::invalid(
                at(base, "type"),
                "auto, any, tool or none",
            ));
        }
    };
    let serial = opt_bool(o, base, "disable_parallel_tool_use")? == Some(true);
    Ok((out, serial.then_some(false)))
}
