//! The canonical request.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::message::{ChatMessage, Content};
use super::tool::{Tool, ToolChoice};

/// `stop`: one sequence or several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    /// One stop sequence.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl From<&str> for Stop {
    fn from(s: &str) -> Stop {
        Stop::One(s.to_owned())
    }
}

impl From<Vec<String>> for Stop {
    fn from(s: Vec<String>) -> Stop {
        Stop::Many(s)
    }
}

impl<const N: usize> From<[&str; N]> for Stop {
    fn from(s: [&str; N]) -> Stop {
        Stop::Many(s.iter().map(|x| (*x).to_owned()).collect())
    }
}

/// `stream_options`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamOptions {
    /// Whether the stream ends with a usage chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
}

/// A canonical Chat Completions request. Unset fields are not serialised; fields
/// without a name here live in `extra`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatRequest {
    /// The model.
    pub model: String,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// The most tokens to generate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u64>,
    /// The older name of `max_completion_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Stop sequences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// Whether to stream the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// What the stream carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// The tools the model may call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// Which tool it may or must call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether it may call several tools at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// The end user's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The fields these structs do not name, serialised as they are.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

impl ChatRequest {
    /// A request to `model` with no messages yet.
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatRequest;
    /// let req = ChatRequest::new("claude-sonnet-4-5").user("Hi");
    /// assert_eq!(serde_json::to_value(&req).unwrap(),
    ///            serde_json::json!({"model": "claude-sonnet-4-5",
    ///                               "messages": [{"role": "user", "content": "Hi"}]}));
    /// ```
    pub fn new(model: impl Into<String>) -> ChatRequest {
        ChatRequest {
            model: model.into(),
            ..ChatRequest::default()
        }
    }

    /// Adds a message.
    ///
    /// ```
    /// use steadfast_http::chat::types::{ChatMessage, ChatRequest};
    /// let req = ChatRequest::new("m").message(ChatMessage::user("Hi"));
    /// assert_eq!(req.messages, vec![ChatMessage::user("Hi")]);
    /// ```
    pub fn message(mut self, message: ChatMessage) -> ChatRequest {
        self.messages.push(message);
        self
    }

    /// Adds a system message.
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatRequest;
    /// let req = ChatRequest::new("m").system("Be brief.").user("Hi");
    /// let anthropic = steadfast_http::chat::to_anthropic(&serde_json::to_value(&req).unwrap()).unwrap();
    /// assert_eq!(anthropic["system"], "Be brief.");
    /// ```
    pub fn system(self, text: impl Into<String>) -> ChatRequest {
        self.message(ChatMessage::system(text))
    }

    /// Adds a user message: text, or parts.
    ///
    /// ```
    /// use steadfast_http::chat::types::{ChatRequest, ContentPart};
    /// let req = ChatRequest::new("m")
    ///     .user("Hi")
    ///     .user(vec![ContentPart::text("and"), ContentPart::image_url("https://example.com/a.png")]);
    /// let body = serde_json::to_value(&req).unwrap();
    /// assert_eq!(body["messages"][0]["content"], "Hi");
    /// assert_eq!(body["messages"][1]["content"][1]["type"], "image_url");
    /// ```
    pub fn user(self, content: impl Into<Content>) -> ChatRequest {
        self.message(ChatMessage {
            content: Some(content.into()),
            ..ChatMessage::user("")
        })
    }

    /// Adds an assistant message (an earlier answer).
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatRequest;
    /// let req = ChatRequest::new("m").user("Hi").assistant("Hello").user("How are you?");
    /// assert_eq!(req.messages.len(), 3);
    /// ```
    pub fn assistant(self, text: impl Into<String>) -> ChatRequest {
        self.message(ChatMessage::assistant(text))
    }

    /// Sets the most tokens to generate (`max_completion_tokens`).
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatRequest;
    /// let req = ChatRequest::new("m").user("Hi").max_tokens(100);
    /// assert_eq!(serde_json::to_value(&req).unwrap()["max_completion_tokens"], 100);
    /// ```
    pub fn max_tokens(mut self, n: u64) -> ChatRequest {
        self.max_completion_tokens = Some(n);
        self
    }

    /// Sets the temperature.
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatRequest;
    /// assert_eq!(ChatRequest::new("m").temperature(0.2).temperature, Some(0.2));
    /// ```
    pub fn temperature(mut self, t: f64) -> ChatRequest {
        self.temperature = Some(t);
        self
    }

    /// Sets `top_p`.
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatRequest;
    /// assert_eq!(ChatRequest::new("m").top_p(0.9).top_p, Some(0.9));
    /// ```
    pub fn top_p(mut self, p: f64) -> ChatRequest {
        self.top_p = Some(p);
        self
    }

    /// Sets the stop sequences.
    ///
    /// ```
    /// use steadfast_http::chat::types::{ChatRequest, Stop};
    /// assert_eq!(ChatRequest::new("m").stop("END").stop, Some(Stop::One("END".into())));
    /// assert_eq!(serde_json::to_value(ChatRequest::new("m").stop(["a", "b"])).unwrap()["stop"],
    ///            serde_json::json!(["a", "b"]));
    /// ```
    pub fn stop(mut self, stop: impl Into<Stop>) -> ChatRequest {
        self.stop = Some(stop.into());
        self
    }

    /// Adds a tool.
    ///
    /// ```
    /// use serde_json::json;
    /// use steadfast_http::chat::types::{ChatRequest, Tool, ToolChoice};
    /// let req = ChatRequest::new("m")
    ///     .user("Weather in Oslo?")
    ///     .tool(Tool::function("weather", "The weather", json!({"type": "object"})))
    ///     .tool_choice(ToolChoice::REQUIRED);
    /// let anthropic = steadfast_http::chat::to_anthropic(&serde_json::to_value(&req).unwrap()).unwrap();
    /// assert_eq!(anthropic["tools"][0]["input_schema"], json!({"type": "object"}));
    /// assert_eq!(anthropic["tool_choice"], json!({"type": "any"}));
    /// ```
    pub fn tool(mut self, tool: Tool) -> ChatRequest {
        self.tools.push(tool);
        self
    }

    /// Sets the tool choice.
    ///
    /// ```
    /// use steadfast_http::chat::types::{ChatRequest, ToolChoice};
    /// let req = ChatRequest::new("m").tool_choice(ToolChoice::NONE);
    /// assert_eq!(serde_json::to_value(&req).unwrap()["tool_choice"], "none");
    /// ```
    pub fn tool_choice(mut self, choice: ToolChoice) -> ChatRequest {
        self.tool_choice = Some(choice);
        self
    }

    /// Streams the answer, ending with a usage chunk.
    ///
    /// ```
    /// use steadfast_http::chat::{types::ChatRequest, wants_usage};
    /// let req = serde_json::to_value(ChatRequest::new("m").user("Hi").streaming()).unwrap();
    /// assert_eq!(req["stream"], true);
    /// assert!(wants_usage(&req));
    /// ```
    pub fn streaming(mut self) -> ChatRequest {
        self.stream = Some(true);
        self.stream_options = Some(StreamOptions {
            include_usage: Some(true),
        });
        self
    }

    /// Sets the end user's id (`user`).
    ///
    /// ```
    /// use steadfast_http::chat::types::ChatRequest;
    /// assert_eq!(ChatRequest::new("m").end_user("u-42").user, Some("u-42".into()));
    /// ```
    pub fn end_user(mut self, id: impl Into<String>) -> ChatRequest {
        self.user = Some(id.into());
        self
    }
}
