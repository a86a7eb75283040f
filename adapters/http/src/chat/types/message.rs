//! Messages and their content.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::tool::ToolCall;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions to the model (Anthropic's `system`).
    System,
    /// Instructions from the developer (OpenAI's newer name for `system`).
    Developer,
    /// The end user.
    User,
    /// The model; the default, since every answer has this role.
    #[default]
    Assistant,
    /// A tool's result.
    Tool,
}

/// A message's content: a string, or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Text and image parts.
    Parts(Vec<ContentPart>),
    /// Content of a shape these structs do not name (audio, files, ...), kept as is.
    Other(Value),
}

impl From<&str> for Content {
    fn from(text: &str) -> Content {
        Content::Text(text.to_owned())
    }
}

impl From<Vec<ContentPart>> for Content {
    fn from(parts: Vec<ContentPart>) -> Content {
        Content::Parts(parts)
    }
}

impl From<String> for Content {
    fn from(text: String) -> Content {
        Content::Text(text)
    }
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// A text part.
    Text {
        /// The text.
        text: String,
    },
    /// An image, by URL (`https://…`) or as a `data:` URL.
    ImageUrl {
        /// The image.
        image_url: ImageUrl,
    },
}

impl ContentPart {
    /// A text part.
    ///
    /// ```
    /// use steadfast_http::chat::types::ContentPart;
    /// let part = serde_json::to_value(ContentPart::text("Hi")).unwrap();
    /// assert_eq!(part, serde_json::json!({"type": "text", "text": "Hi"}));
    /// ```
    pub fn text(text: impl Into<String>) -> ContentPart {
        ContentPart::Text { text: text.into() }
    }

    /// An image part.
    ///
    /// ```
    /// use steadfast_http::chat::types::ContentPart;
    /// let part = serde_json::to_value(ContentPart::image_url("data:image/png;base64,iVBOR")).unwrap();
    /// assert_eq!(part["image_url"]["url"], "data:image/png;base64,iVBOR");
    /// ```
    pub fn image_url(url: impl Into<String>) -> ContentPart {
        ContentPart::ImageUrl {
            image_url: ImageUrl {
                url: url.into(),
                detail: None,
            },
        }
    }
}

/// An image's URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageUrl {
    /// `https://…` or `data:<media type>;base64,<data>`.
    pub url: String,
    /// OpenAI's resolution hint (`low`, `high`, `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One message of a conversation, or a choice's answer. `role` is required; every
/// other field has a default.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: Role,
    /// Its content (none for an assistant message of tool calls only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// A participant's name (OpenAI only; the translation to Anthropic refuses it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// An assistant message's tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A tool message's call id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// An answer's refusal text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The fields these structs do not name.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

impl ChatMessage {
    /// A message of `role` with text content.
    ///
    /// ```
    /// use steadfast_http::chat::types::{ChatMessage, Role};
    /// let m = ChatMessage::new(Role::Developer, "Answer in French.");
    /// assert_eq!(serde_json::to_value(&m).unwrap()["role"], "developer");
    /// ```
    pub fn new(role: Role, text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role,
            content: Some(Content::Text(text.into())),
            ..ChatMessage::default()
        }
    }

    /// A system message.
    ///
    /// ```
    /// use steadfast_http::chat::types::{ChatMessage, Role};
    /// let m = ChatMessage::system("Be brief.");
    /// assert_eq!((m.role, m.text()), (Role::System, Some("Be brief.")));
    /// ```
    pub fn system(text: impl Into<String>) -> ChatMessage {
        ChatMessage::new(Role::System, text)
    }

    /// A user message.
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatMessage;
    /// assert_eq!(serde_json::to_value(ChatMessage::user("Hi")).unwrap(),
    ///            serde_json::json!({"role": "user", "content": "Hi"}));
    /// ```
    pub fn user(text: impl Into<String>) -> ChatMessage {
        ChatMessage::new(Role::User, text)
    }

    /// A user message of parts (text and images).
    ///
    /// ```
    /// use steadfast_http::chat::types::{ChatMessage, ContentPart};
    /// let m = ChatMessage::user_parts(vec![
    ///     ContentPart::text("What is this?"),
    ///     ContentPart::image_url("https://example.com/cat.jpg"),
    /// ]);
    /// assert_eq!(serde_json::to_value(&m).unwrap()["content"][1]["type"], "image_url");
    /// ```
    pub fn user_parts(parts: Vec<ContentPart>) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: Some(Content::Parts(parts)),
            ..ChatMessage::default()
        }
    }

    /// An assistant message (an earlier answer).
    ///
    /// ```
    /// use steadfast_http::chat::types::{ChatMessage, Role};
    /// assert_eq!(ChatMessage::assistant("Hello").role, Role::Assistant);
    /// ```
    pub fn assistant(text: impl Into<String>) -> ChatMessage {
        ChatMessage::new(Role::Assistant, text)
    }

    /// An assistant message of tool calls.
    ///
    /// ```
    /// use serde_json::json;
    /// use steadfast_http::chat::types::{ChatMessage, ToolCall};
    /// let m = ChatMessage::tool_calls(vec![ToolCall::new("call_1", "weather", &json!({"city": "Oslo"}))]);
    /// assert_eq!(serde_json::to_value(&m).unwrap()["tool_calls"][0]["function"]["arguments"],
    ///            "{\"city\":\"Oslo\"}");
    /// ```
    pub fn tool_calls(calls: Vec<ToolCall>) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            tool_calls: calls,
            ..ChatMessage::default()
        }
    }

    /// A tool's result for the call `tool_call_id`.
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatMessage;
    /// let m = ChatMessage::tool("call_1", "rain");
    /// assert_eq!(serde_json::to_value(&m).unwrap(),
    ///            serde_json::json!({"role": "tool", "content": "rain", "tool_call_id": "call_1"}));
    /// ```
    pub fn tool(tool_call_id: impl Into<String>, text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            tool_call_id: Some(tool_call_id.into()),
            ..ChatMessage::new(Role::Tool, text)
        }
    }

    /// The content when it is a string (as it is in every answer).
    ///
    /// ```
    /// use steadfast_http::chat::types::{ChatMessage, ContentPart};
    /// assert_eq!(ChatMessage::assistant("Hello").text(), Some("Hello"));
    /// assert_eq!(ChatMessage::user_parts(vec![ContentPart::text("Hi")]).text(), None);
    /// ```
    pub fn text(&self) -> Option<&str> {
        match &self.content {
            Some(Content::Text(t)) => Some(t),
            _ => None,
        }
    }
}
