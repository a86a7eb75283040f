//! What a request asks for, read from its JSON body.

use serde_json::Value;
use steadfast_core::provider::Provider;

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
    /// The reply: an echo of the last user message.
    pub reply: String,
    /// Prompt tokens: the characters of the system prompt and every message / 4,
    /// rounded up (at least 1).
    pub input_tokens: u64,
    /// The output tokens charged up front: `max_tokens` (or `max_completion_tokens`)
    /// when given, else the reply's.
    pub output_tokens: u64,
}

/// Tokens in `chars` characters: a quarter, rounded up, at least 1.
pub(crate) fn tokens_in(chars: usize) -> u64 {
    u64::try_from(chars).unwrap_or(u64::MAX).div_ceil(4).max(1)
}

impl Call {
    /// Reads a request body; the error is the message of the provider's 400.
    pub fn parse(provider: Provider, body: &[u8]) -> Result<Call, String> {
        let value: Value = serde_json::from_slice(body).map_err(|e| match provider {
            Provider::OpenAi => format!(
                "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.) ({e})"
            ),
            Provider::Anthropic => format!("There was an error parsing the body: {e}"),
        })?;
        if !value.is_object() {
            return Err("The request body must be a JSON object.".to_owned());
        }
        let flag = |pointer: &str| value.pointer(pointer).and_then(Value::as_bool);
        let mut prompt_chars = value
            .get("system")
            .map_or(0, |s| text_of(s).chars().count());
        let mut last_user = None;
        for m in value
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let text = m.get("content").map(text_of).unwrap_or_default();
            prompt_chars = prompt_chars.saturating_add(text.chars().count());
            if m.get("role").and_then(Value::as_str) == Some("user") {
                last_user = Some(text);
            }
        }
        let reply = match last_user {
            Some(t) if !t.is_empty() => truncate(t, MAX_ECHO),
            _ => NO_USER_MESSAGE.to_owned(),
        };
        let max_tokens = ["max_tokens", "max_completion_tokens"]
            .iter()
            .find_map(|k| value.get(k).and_then(Value::as_u64));
        Ok(Call {
            provider,
            model: value
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("mock-model")
                .to_owned(),
            stream: flag("/stream").unwrap_or(false),
            include_usage: flag("/stream_options/include_usage").unwrap_or(false),
            output_tokens: max_tokens.unwrap_or_else(|| tokens_in(reply.chars().count())),
            reply,
            input_tokens: tokens_in(prompt_chars),
        })
    }

    /// The tokens the request is charged: input and output together.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
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
}
