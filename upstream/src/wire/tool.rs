//! Tools a request offers, and the tool call an answer makes.
//!
//! The upstream calls a tool when the request offers tools and either its
//! `tool_choice` demands a call (OpenAI's `required` or a named function, Anthropic's
//! `any` or `tool`: "`required` means the model must call one or more tools", the
//! SDKs' docs of `tool_choice`), or the endpoint's
//! [`ToolUse::Auto`](crate::scenario::ToolUse) lets it call one when the choice is left
//! to it, or the script says so ([`crate::Fault::ToolCall`]). It never calls one when
//! `tool_choice` is `none`, nor in answer to a tool's result (so a client's tool round
//! trip ends with text).

use serde_json::{Map, Value, json};
use steadfast_core::provider::Provider;

use super::call::Call;
use crate::draw::{alnum_id, splitmix};
use crate::fault::Fault;
use crate::scenario::ToolUse;

/// The tools of a request and its `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Offer {
    /// The tools, in order: (name, JSON schema of the arguments).
    pub tools: Vec<(String, Value)>,
    /// What `tool_choice` asks.
    pub choice: ToolChoice,
}

/// What a request's `tool_choice` asks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// The model decides (`auto`, or absent).
    #[default]
    Auto,
    /// No tool (`none`).
    None,
    /// Some tool (OpenAI's `required`, Anthropic's `any`).
    Any,
    /// This tool (OpenAI's named function, Anthropic's `tool`).
    Named(String),
}

/// A tool call an answer makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// Its id: `call_…` (OpenAI), `toolu_…` (Anthropic).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments (Anthropic's `input`; OpenAI sends them as a JSON string).
    pub arguments: Value,
}

impl Offer {
    /// The tools and the choice of a body, in `provider`'s shapes.
    pub fn of(provider: Provider, body: &Map<String, Value>) -> Offer {
        let list = body.get("tools").and_then(Value::as_array);
        let tools = list
            .into_iter()
            .flatten()
            .filter_map(|t| tool(provider, t))
            .collect();
        let choice = body.get("tool_choice").map_or(ToolChoice::Auto, choice_of);
        Offer { tools, choice }
    }

    /// The tool a call goes to: the named one, else the first (none without tools, or
    /// when the name is not offered).
    pub fn target(&self) -> Option<&(String, Value)> {
        match &self.choice {
            ToolChoice::Named(n) => self.tools.iter().find(|(name, _)| name == n),
            _ => self.tools.first(),
        }
    }

    /// Whether `tool_choice` demands a call.
    pub fn demands_call(&self) -> bool {
        matches!(self.choice, ToolChoice::Any | ToolChoice::Named(_))
    }
}

/// A tool's name and argument schema: OpenAI's `{"type": "function", "function":
/// {"name", "parameters"}}`, Anthropic's `{"name", "input_schema"}`; server tools and
/// custom OpenAI tools are not called.
fn tool(provider: Provider, t: &Value) -> Option<(String, Value)> {
    let (name, schema) = match provider {
        Provider::OpenAi => {
            let f = t.get("function")?;
            (f.get("name")?, f.get("parameters"))
        }
        Provider::Anthropic => {
            let custom = t.get("type").is_none_or(|k| k.is_null() || k == "custom");
            if !custom {
                return None;
            }
            (t.get("name")?, t.get("input_schema"))
        }
    };
    Some((
        name.as_str()?.to_owned(),
        schema.cloned().unwrap_or(Value::Null),
    ))
}

fn choice_of(c: &Value) -> ToolChoice {
    let named = |n: Option<&Value>| {
        n.and_then(Value::as_str)
            .map_or(ToolChoice::Auto, |n| ToolChoice::Named(n.to_owned()))
    };
    match c {
        Value::String(s) if s == "none" => ToolChoice::None,
        Value::String(s) if s == "required" => ToolChoice::Any,
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("none") => ToolChoice::None,
            Some("any") => ToolChoice::Any,
            Some("tool") => named(o.get("name")),
            Some("function") => named(o.get("function").and_then(|f| f.get("name"))),
            _ => ToolChoice::Auto,
        },
        _ => ToolChoice::Auto,
    }
}

impl ToolCall {
    /// The tool call the answer to `call` makes, if any (see the module's doc):
    /// `scripted` is the request's scripted fault, `seed` the success's.
    pub fn plan(
        call: &Call,
        tool_use: ToolUse,
        scripted: Option<&Fault>,
        seed: u64,
    ) -> Option<ToolCall> {
        if !call.may_call_tools() {
            return None;
        }
        let offer = &call.offer;
        let target = match scripted {
            Some(Fault::ToolCall { name: Some(n) }) => {
                offer.tools.iter().find(|(name, _)| name == n)
            }
            Some(Fault::ToolCall { name: None }) => offer.target(),
            _ if offer.demands_call() => offer.target(),
            _ if tool_use == ToolUse::Auto && !call.answers_tool => offer.target(),
            _ => None,
        }?;
        Some(ToolCall::new(
            call.provider,
            target,
            splitmix(seed ^ 0x7001),
            &call.reply,
        ))
    }

    /// A call of the tool `(name, schema)` with arguments made from its schema (see
    /// [`arguments`]), its id drawn from `seed`.
    pub fn new(
        provider: Provider,
        (name, schema): &(String, Value),
        seed: u64,
        text: &str,
    ) -> Self {
        let id = match provider {
            Provider::OpenAi => format!("call_{}", alnum_id(seed, 24)),
            Provider::Anthropic => format!("toolu_{}", alnum_id(seed, 24)),
        };
        ToolCall {
            id,
            name: name.clone(),
            arguments: arguments(schema, text),
        }
    }

    /// The arguments as OpenAI sends them: a JSON string.
    pub fn arguments_text(&self) -> String {
        serde_json::to_string(&self.arguments).unwrap_or_default()
    }
}

/// Arguments for a JSON schema: each required property (all of them when none is
/// listed) with a value of its type: `text` for a string (the echo the upstream
/// answers with), 1 for a number, `true`, `[]`, `{}`, the first of an `enum`.
pub fn arguments(schema: &Value, text: &str) -> Value {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return json!({});
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    for (key, prop) in props {
        if required.is_empty() || required.contains(&key.as_str()) {
            out.insert(key.clone(), value_for(prop, text));
        }
    }
    Value::Object(out)
}

fn value_for(prop: &Value, text: &str) -> Value {
    if let Some(first) = prop
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    match prop.get("type").and_then(Value::as_str) {
        Some("string") => Value::String(text.to_owned()),
        Some("integer" | "number") => json!(1),
        Some("boolean") => Value::Bool(true),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_follow_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"},
            "unit": {"type": "string", "enum": ["c", "f"]}, "x": {"type": "boolean"}
        }, "required": ["city", "days", "unit"]});
        assert_eq!(
            arguments(&schema, "Paris"),
            json!({"city": "Paris", "days": 1, "unit": "c"})
        );
        assert_eq!(arguments(&Value::Null, "t"), json!({}));
    }

    #[test]
    fn choices_read_both_shapes() {
        let body = |v: Value| v.as_object().cloned().unwrap_or_default();
        let o = Offer::of(
            Provider::OpenAi,
            &body(
                json!({"tools": [{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "b"}}],
                "tool_choice": {"type": "function", "function": {"name": "b"}}}),
            ),
        );
        assert_eq!(o.target().map(|t| t.0.as_str()), Some("b"));
        assert!(o.demands_call());
        let a = Offer::of(
            Provider::Anthropic,
            &body(
                json!({"tools": [{"type": "web_search_20250305", "name": "web_search"}, {"name": "f", "input_schema": {}}],
                "tool_choice": {"type": "none"}}),
            ),
        );
        assert_eq!(a.tools.len(), 1);
        assert_eq!(a.choice, ToolChoice::None);
    }
}
