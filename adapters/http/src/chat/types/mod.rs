//! Typed canonical (OpenAI Chat Completions) structs of steadfast's own, for the common
//! fields, with serde derives.
//!
//! - Requests: [`ChatRequest`] (built with [`ChatRequest::new`] and its knobs),
//!   [`ChatMessage`], [`Content`], [`ContentPart`], [`Tool`], [`ToolChoice`], [`Stop`].
//!   A request's fields these structs do not name are kept in `extra` (and
//!   serialised back), so nothing is dropped on the way to the translation, which
//!   refuses what it cannot express.
//! - Responses: [`ChatResponse`], [`Choice`], [`Usage`]; stream chunks: [`ChatChunk`],
//!   [`ChunkChoice`], [`Delta`], [`ToolCallDelta`]. Every field has a default and
//!   unknown fields are ignored, so a provider's additions never break reading.
//!
//! ```
//! use steadfast_http::chat::types::{ChatRequest, ChatResponse};
//!
//! let req = ChatRequest::new("gpt-4o").system("Be brief.").user("Hi").max_tokens(64);
//! let body = serde_json::to_value(&req).unwrap();
//! assert_eq!(body["messages"][1]["content"], "Hi");
//!
//! let reply: ChatResponse = serde_json::from_str(
//!     r#"{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},
//!         "finish_reason":"stop","future_field":1}]}"#,
//! ).unwrap();
//! assert_eq!(reply.text(), Some("Hello"));
//! ```

mod chunk;
mod message;
mod request;
mod response;
mod tool;

pub use chunk::{ChatChunk, ChunkChoice, Delta, FunctionCallDelta, ToolCallDelta};
pub use message::{ChatMessage, Content, ContentPart, ImageUrl, Role};
pub use request::{ChatRequest, Stop, StreamOptions};
pub use response::{ChatResponse, Choice, PromptTokensDetails, Usage};
pub use tool::{
    FunctionCall, FunctionDef, FunctionName, NamedFunction, Tool, ToolCall, ToolChoice,
    ToolChoiceMode,
};
