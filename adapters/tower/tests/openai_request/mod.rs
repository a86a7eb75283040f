//! The typed async-openai request the async-openai suites send.

use async_openai::types::chat::{
    ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequest,
    CreateChatCompletionRequestArgs,
};

/// A one-turn chat request saying `text`, streamed when `stream`.
pub fn request(text: &str, stream: bool) -> CreateChatCompletionRequest {
    let user = ChatCompletionRequestUserMessageArgs::default()
        .content(text)
        .build()
        .expect("a message");
    CreateChatCompletionRequestArgs::default()
        .model("gpt-test")
        .messages([user.into()])
        .stream(stream)
        .build()
        .expect("a request")
}
