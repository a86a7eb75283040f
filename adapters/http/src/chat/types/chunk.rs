//! The canonical stream chunk.

use serde::{Deserialize, Serialize};

use super::message::Role;
use super::response::Usage;

/// A `chat.completion.chunk`. Every field has a default and unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatChunk {
    /// The completion's id (the same in every chunk).
    pub id: String,
    /// `chat.completion.chunk`.
    pub object: String,
    /// When the completion was created, in Unix seconds.
    pub created: u64,
    /// The model.
    pub model: String,
    /// The choices' deltas (none in the usage chunk).
    pub choices: Vec<ChunkChoice>,
    /// The usage chunk's token counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl ChatChunk {
    /// The first choice's text delta.
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatChunk;
    /// let c: ChatChunk = serde_json::from_str(
    ///     r#"{"id":"c","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}"#,
    /// ).unwrap();
    /// assert_eq!(c.text(), Some("Hel"));
    /// ```
    pub fn text(&self) -> Option<&str> {
        self.choices
            .first()
            .and_then(|c| c.delta.content.as_deref())
    }
}

/// One choice's delta.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ChunkChoice {
    /// The choice's index.
    pub index: u32,
    /// What it adds.
    pub delta: Delta,
    /// Set in the choice's last chunk.
    pub finish_reason: Option<String>,
}

/// What a chunk adds to a choice.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Delta {
    /// The role, in the first chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// More text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// More refusal text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// Pieces of tool calls.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallDelta>,
}

/// A piece of a tool call: id and name in its first piece, then arguments.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolCallDelta {
    /// Which tool call of the choice.
    pub index: u32,
    /// The call's id (first piece).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `function` (first piece).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The function's name and a piece of its arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionCallDelta>,
}

/// A piece of a function call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FunctionCallDelta {
    /// The name (first piece).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A piece of the arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}
