//! What a request asks for, read from its JSON body.

use serde_json::{Map, Value};
use steadfast_core::provider::Provider;

use super::tool::{Offer, ToolChoice};

/// The longest reply echoed; a longer last user message is cut.
const MAX_ECHO: usize = 64 * 1024;
const NO_USER_MESSAGE: &str = "Hello from steadfast-upstream.";

/// A request's body as the provider reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The API the request was sent to.
    pub provider: Provider,
    /// `model`, or `mock-model`.
    pub model: String,
    /// `"stream": true`.
    pub stream: bool,
    /// OpenAI's `stream_options.include_usage`.
    pub include_usage: bool,
    /// OpenAI's `stream_options.include_obfuscation` (true unless `false`: "These
    /// obfuscation fields are included by default", OpenAI's OpenAPI spec).
    pub include_obfuscation: bool,
    /// The reply: an echo of the last user turn (a tool's result included).
    pub reply: String,
    /// Prompt tokens: the characters of the system prompt and every message / 4,
    /// rounded up (at least 1).
    pub input_tokens: u64,
    /// The output tokens charged up front: `max_tokens` (or `max_completion_tokens`)
    /// when given, else the reply's.
    pub output_tokens: u64,
    /// `max_tokens` (or `max_completion_tokens`) as given.
    pub max_tokens: Option<u64>,
    /// The stop sequences: OpenAI's `stop` (a string or strings), Anthropic's
    /// `stop_sequences`; empty strings left out.
    pub stop: Vec<String>,
    /// The tools the request offers, and how it asks them to be used.
    pub offer: Offer,
    /// Whether the last turn answers a tool call (a `tool` message, a user turn with a
    /// `tool_result` block).
    pub answers_tool: bool,
}

/// Tokens in `chars` characters: a quarter, rounded up, at least 1.
pub(crate) fn tokens_in(chars: usize) -> u64 {
    u64::try_from(chars).unwrap_or(u64::MAX).div_ceil(4).max(1)
}

/// Reads a request body as a JSON object; the error is the message of the provider's
/// 400.
pub fn json_object(provider: Provider, body: &[u8]) -> Result<Map<String, Value>, String> {
    let value: Value = serde_json::from_slice(body).map_err(|e| match provider {
        Provider::OpenAi => format!(
            "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.) ({e})"
        ),
        Provider::Anthropic => format!("There was an error parsing the body: {e}"),
    })?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err("The request body must be a JSON object.".to_owned()),
    }
}

impl Call {
    /// Reads a request body without checking it; the error is the message of the
    /// provider's 400 for a body that is not a JSON object.
    pub fn parse(provider: Provider, body: &[u8]) -> Result<Call, String> {
        Ok(Call::of(provider, &json_object(provider, body)?))
    }

    /// What a JSON body asks for (missing or odd fields read as absent).
    pub fn of(provider: Provider, body: &Map<String, Value>) -> Call {
        let flag = |v: Option<&Value>| v.and_then(Value::as_bool).unwrap_or(false);
        let (prompt_chars, last_user, answers_tool) = conversation(body);
        let reply = match last_user {
            Some(t) if !t.is_empty() => truncate(t, MAX_ECHO),
            _ => NO_USER_MESSAGE.to_owned(),
        };
        let max_tokens = ["max_tokens", "max_completion_tokens"]
            .iter()
            .find_map(|k| body.get(*k).and_then(Value::as_u64));
        Call {
            provider,
            model: body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("mock-model")
                .to_owned(),
            stream: flag(body.get("stream")),
            include_usage: flag(
                body.get("stream_options")
                    .and_then(|o| o.get("include_usage")),
            ),
            include_obfuscation: body
                .get("stream_options")
                .and_then(|o| o.get("include_obfuscation"))
                .and_then(Value::as_bool)
                .unwrap_or(true),
            output_tokens: max_tokens.unwrap_or_else(|| tokens_in(reply.chars().count())),
            max_tokens,
            stop: stop_sequences(provider, body),
            reply,
            input_tokens: tokens_in(prompt_chars),
            offer: Offer::of(provider, body),
            answers_tool,
        }
    }

    /// The tokens the request is charged: input and output together.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Whether the request offers tools it lets be called (`tool_choice` is not
    /// `none`).
    pub fn may_call_tools(&self) -> bool {
        !self.offer.tools.is_empty() && self.offer.choice != ToolChoice::None
    }
}

fn stop_sequences(provider: Provider, body: &Map<String, Value>) -> Vec<String> {
    let key = match provider {
        Provider::OpenAi => "stop",
        Provider::Anthropic => "stop_sequences",
    };
    let list = match body.get(key) {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    list.into_iter().filter(|s| !s.is_empty()).collect()
}

/// The characters of the prompt, the text of the last user (or tool) turn, and whether
/// that turn answers a tool call.
fn conversation(body: &Map<String, Value>) -> (usize, Option<String>, bool) {
    let mut chars = body.get("system").map_or(0, |s| text_of(s).chars().count());
    let mut last_user = None;
    let mut answers_tool = false;
    let messages = body.get("messages").and_then(Value::as_array);
    for m in messages.into_iter().flatten() {
        let content = m.get("content");
        let text = content.map(text_of).unwrap_or_default();
        chars = chars.saturating_add(text.chars().count());
        match m.get("role").and_then(Value::as_str) {
            Some("user") => {
                answers_tool = content.is_some_and(has_tool_result);
                last_user = Some(text);
            }
            Some("tool") => {
                answers_tool = true;
                last_user = Some(text);
            }
            Some("assistant") => answers_tool = false,
            _ => {}
        }
    }
    (chars, last_user, answers_tool)
}

fn has_tool_result(content: &Value) -> bool {
    content.as_array().is_some_and(|b| {
        b.iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
    })
}

/// The text of a content: a string, or the text of its parts (a `tool_result` block's
/// content included).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p.get("text").and_then(Value::as_str) {
                Some(t) => Some(t.to_owned()),
                None => p.get("content").map(text_of).filter(|t| !t.is_empty()),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let cut = (0..=max)
            .rev()
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(0);
        s.truncate(cut);
    }
    s
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn echo_and_tokens() {
        let c = Call::parse(
            Provider::OpenAi,
            br#"{"model":"gpt-x","max_tokens":7,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hello there"}]}]}"#,
        )
        .unwrap();
        assert_eq!(c.reply, "hello there");
        assert_eq!(c.model, "gpt-x");
        assert_eq!((c.input_tokens, c.output_tokens, c.tokens()), (5, 7, 12));
        let c = Call::parse(Provider::Anthropic, br#"{"stream":true,"messages":[]}"#).unwrap();
        assert!(c.stream);
        assert_eq!(c.reply, NO_USER_MESSAGE);
        assert!(Call::parse(Provider::OpenAi, b"{nope").is_err());
        assert!(Call::parse(Provider::OpenAi, b"[1]").is_err());
        assert_eq!(truncate("é".repeat(3), 3), "é");
    }

    #[test]
    fn a_tool_result_is_echoed() {
        let c = Call::parse(
            Provider::Anthropic,
            br#"{"messages":[{"role":"user","content":"w?"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"sunny"}]}]}"#,
        )
        .unwrap();
        assert_eq!((c.reply.as_str(), c.answers_tool), ("sunny", true));
        let c = Call::parse(
            Provider::OpenAi,
            br#"{"messages":[{"role":"tool","tool_call_id":"c","content":"42"}]}"#,
        )
        .unwrap();
        assert_eq!((c.reply.as_str(), c.answers_tool), ("42", true));
    }
}
