//! The canonical response.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::message::ChatMessage;
use super::tool::ToolCall;

/// A `chat.completion`. Every field has a default and unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatResponse {
    /// The completion's id.
    pub id: String,
    /// `chat.completion`.
    pub object: String,
    /// When it was created, in Unix seconds.
    pub created: u64,
    /// The model that answered.
    pub model: String,
    /// The answers (one, unless `n` > 1).
    pub choices: Vec<Choice>,
    /// The tokens counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The backend configuration's fingerprint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<String>,
}

impl ChatResponse {
    /// The first choice's text.
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatResponse;
    /// let r: ChatResponse = serde_json::from_value(serde_json::json!({
    ///     "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}}]
    /// })).unwrap();
    /// assert_eq!(r.text(), Some("Hello"));
    /// assert_eq!(ChatResponse::default().text(), None);
    /// ```
    pub fn text(&self) -> Option<&str> {
        self.choices.first().and_then(|c| c.message.text())
    }

    /// The first choice's tool calls.
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatResponse;
    /// let r: ChatResponse = serde_json::from_value(serde_json::json!({"choices": [{"message": {
    ///     "role": "assistant", "content": null,
    ///     "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    /// }, "finish_reason": "tool_calls"}]})).unwrap();
    /// assert_eq!(r.tool_calls()[0].function.name, "f");
    /// assert_eq!(r.finish_reason(), Some("tool_calls"));
    /// ```
    pub fn tool_calls(&self) -> &[ToolCall] {
        self.choices.first().map_or(&[], |c| &c.message.tool_calls)
    }

    /// The first choice's finish reason.
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatResponse;
    /// let r: ChatResponse = serde_json::from_str(
    ///     r#"{"choices":[{"message":{"role":"assistant","content":"Hel"},"finish_reason":"length"}]}"#,
    /// ).unwrap();
    /// assert_eq!(r.finish_reason(), Some("length"));
    /// ```
    pub fn finish_reason(&self) -> Option<&str> {
        self.choices
            .first()
            .and_then(|c| c.finish_reason.as_deref())
    }
}

/// One answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Choice {
    /// Its place among the answers.
    pub index: u32,
    /// The message.
    pub message: ChatMessage,
    /// Why generation stopped: `stop`, `length`, `tool_calls`, `content_filter`, ...
    pub finish_reason: Option<String>,
    /// Log probabilities, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Value>,
}

/// Token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Tokens of the prompt, cached ones included.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
    /// Their sum.
    pub total_tokens: u64,
    /// The prompt's cached tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

/// What the prompt's tokens were.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptTokensDetails {
    /// Tokens read from the prompt cache.
    pub cached_tokens: u64,
}
