//! The canonical chat shape and its translation to and from Anthropic Messages.
//!
//! The canonical request, response and stream chunk are OpenAI Chat Completions'. The
//! functions here translate them to and from Anthropic Messages, faithfully: what one
//! API cannot express is a [`TranslateError`] naming the field (a JSON path such as
//! `messages[2].content[0].type`; a key a dotted path would misread is written as a
//! JSON string in brackets, `metadata["a.b"]`; [`TranslateError::pointer`] gives the
//! JSON pointer), never dropped.
//!
//! ## The API
//!
//! | Direction | Item |
//! |---|---|
//! | canonical request → Anthropic body | [`to_anthropic`], [`to_anthropic_with`] ([`ToAnthropic`] options, [`DEFAULT_MAX_TOKENS`]) |
//! | Anthropic response → `chat.completion` | [`from_anthropic_response`] |
//! | Anthropic events → `chat.completion.chunk`s | [`FromAnthropicStream`] (push an event, pull [`StreamChunk`]s; [`FromAnthropicStream::usage`]) |
//! | canonical chunks (or an OpenAI event stream) → the whole `chat.completion` | [`ChunkCollector`] ([`ChunkCollector::push_event`], [`ChunkCollector::text`]) |
//! | either provider's error body | [`ApiError`], [`ApiErrorKind`] |
//! | whether a request asks for the usage chunk | [`wants_usage`] |
//! | Anthropic request → canonical (the gateway) | [`from_anthropic_request`] |
//! | `chat.completion` → Anthropic response | [`to_anthropic_response`] |
//! | canonical chunks → Anthropic events | [`ToAnthropicStream`] ([`AnthropicEvent`]) |
//! | stop reasons | [`finish_reason`], [`stop_reason`] |
//! | typed canonical structs | [`types`] |
//!
//! ## Requests: canonical → Anthropic
//!
//! | Canonical field | Anthropic | Notes |
//! |---|---|---|
//! | `model` | `model` | unchanged |
//! | leading `system` / `developer` messages | `system` | a string for one string message, text blocks otherwise; a system message after the first turn is refused |
//! | `user` / `assistant` messages | `messages` | consecutive same-role turns merged into one turn of blocks |
//! | content part `text` | `text` block | |
//! | content part `image_url` (`data:<type>;base64,…`) | `image` block, `base64` source | JPEG, PNG, GIF, WebP only; `detail` is accepted and has no equivalent |
//! | content part `image_url` (`http(s)://…`) | `image` block, `url` source | |
//! | other content parts (`input_audio`, `file`, …) | — | refused |
//! | assistant `tool_calls` | `tool_use` blocks | `arguments` (a JSON string) parsed into `input` (an object; `""` is `{}`) |
//! | `tool` messages | `tool_result` blocks in a user turn | merged with the user turn around them |
//! | `max_completion_tokens`, `max_tokens` | `max_tokens` | [`DEFAULT_MAX_TOKENS`] when both are absent; both given and different is a conflict |
//! | `stop` (string or array) | `stop_sequences` | |
//! | `temperature` | `temperature` | above 1 refused (or clamped with [`ToAnthropic::clamp_temperature`]) |
//! | `top_p` | `top_p` | |
//! | `stream` | `stream` | |
//! | `stream_options.include_usage` | — | shapes the translated stream ([`wants_usage`]); Anthropic always reports usage |
//! | `tools` (`function`) | `tools` (`name`, `description`, `input_schema`) | no `parameters` is `{"type":"object","properties":{}}`; `strict: true` and non-function tools refused |
//! | `tool_choice` `auto` / `none` / `required` / named | `tool_choice` `auto` / `none` / `any` / `tool` | |
//! | `parallel_tool_calls: false` | `tool_choice.disable_parallel_tool_use: true` | |
//! | `user`, `safety_identifier`, `metadata.user_id` | `metadata.user_id` | must agree; other `metadata` keys refused |
//! | `n: 1`, `logprobs: false`, `top_logprobs: 0`, `presence_penalty: 0`, `frequency_penalty: 0`, `logit_bias: {}`, `response_format: {"type":"text"}`, `modalities: ["text"]`, `store: false`, `service_tier: auto/default`, `prompt_cache_key` | — | accepted: they ask for nothing |
//! | any other value of those, `seed`, `audio`, `prediction`, `reasoning_effort`, `web_search_options`, `functions`, `function_call`, unknown fields | — | refused, naming the field |
//!
//! | `name` on a message | — | refused: Anthropic turns carry no participant names |
//!
//! A conversation must start with a user turn and must not end with an assistant turn
//! (Anthropic would continue it as a prefill, where OpenAI answers after it).
//!
//! ## Responses and streams
//!
//! | Anthropic `stop_reason` | `finish_reason` | Why |
//! |---|---|---|
//! | `end_turn`, `stop_sequence` | `stop` | OpenAI has one reason for a natural end and a matched stop |
//! | `pause_turn` | `stop` | a paused long turn: the text so far is valid and complete as far as it goes |
//! | `max_tokens`, `model_context_window_exceeded` | `length` | |
//! | `tool_use` | `tool_calls` | |
//! | `refusal` | `content_filter` | |
//!
//! The other way, `stop` is `end_turn`, `length` is `max_tokens`, `tool_calls` and
//! `function_call` are `tool_use`, `content_filter` is `refusal`.
//!
//! Usage: `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens`
//! is `prompt_tokens` (cache reads as `prompt_tokens_details.cached_tokens`),
//! `output_tokens` is `completion_tokens`, `total_tokens` their sum.
//!
//! Stream events: `message_start` is the role chunk; `content_block_start` of a
//! `tool_use` block is a tool call chunk (index, id, name); `text_delta` is a content
//! chunk; `input_json_delta` a tool call arguments chunk; `message_delta` the chunk with
//! the `finish_reason`; `message_stop` the usage chunk (when asked) and `[DONE]`; `ping`
//! and `content_block_stop` yield nothing; `error` is an [`EventError::Upstream`].
//! Thinking blocks and server tool blocks in responses and streams are refused (a
//! canonical request cannot ask for them); unknown fields of responses and unknown
//! stream event types are ignored, so a provider's additions never break a call.
//!
//! ## The other way: Anthropic → canonical
//!
//! [`from_anthropic_request`] is the table above read backwards: `system` becomes one
//! system message per text block, `max_tokens` becomes `max_completion_tokens`, a
//! stream asks for the usage chunk. It refuses `top_k`, extended `thinking`, server
//! tools, `tool_result` blocks with `is_error: true`, documents, more than 4 stop
//! sequences and unknown fields. [`to_anthropic_response`] refuses more than one choice
//! and log probabilities; a `refusal` becomes a text block with the `refusal` stop
//! reason.

mod api_error;
mod content;
mod error;
mod json;
mod request;
mod response;
mod stream;
pub mod types;

#[cfg(test)]
mod tests;

pub use api_error::{ApiError, ApiErrorKind};
pub use error::{EventError, TranslateError};
pub use request::{
    DEFAULT_MAX_TOKENS, ToAnthropic, from_anthropic_request, to_anthropic, to_anthropic_with,
    wants_usage,
};
pub use response::{finish_reason, from_anthropic_response, stop_reason, to_anthropic_response};
pub use stream::{
    AnthropicEvent, ChunkCollector, FromAnthropicStream, StreamChunk, ToAnthropicStream,
};
