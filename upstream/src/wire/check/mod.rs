//! What the providers refuse: the request-body rules of OpenAI's Chat Completions and
//! Anthropic's Messages API, each answered with the provider's own 400 (see
//! [`Rejection::body`]).
//!
//! Every rule names its source in its doc comment. The field lists come from the
//! providers' generated SDK types (`openai-python`'s
//! `types/chat/completion_create_params.py`, `anthropic-sdk-python`'s
//! `types/message_create_params.py`, both generated from the providers' OpenAPI
//! specs) and the messages from the providers' answers as users quoted them in issue
//! threads (cited per rule). Where a body breaks several rules the real APIs answer
//! with one message; which one comes first is this model's order, written in
//! [`openai::check`] and [`anthropic::check`], and measured only where a rule says so.
//!
//! Types are checked strictly: a number sent as a string is refused, as the OpenAI
//! API does (`Invalid type for 'n': expected an integer, but got a string instead.`).

use serde_json::{Map, Value};
use steadfast_core::provider::Provider;

use super::errors::{error_body, invalid_body};

mod anthropic;
mod kind;
mod openai;

/// A request body the provider refuses: the message of its 400 and, for OpenAI, the
/// `param` and `code` the error names (Anthropic's error has neither).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// `error.message`.
    pub message: String,
    /// OpenAI's `error.param`: the offending field's path (`messages[0].role`).
    pub param: Option<String>,
    /// OpenAI's `error.code` (`missing_required_parameter`, `invalid_type`, …).
    pub code: Option<&'static str>,
}

impl Rejection {
    /// A rejection with a message only (`param` and `code` null).
    pub fn message(message: impl Into<String>) -> Rejection {
        Rejection {
            message: message.into(),
            param: None,
            code: None,
        }
    }

    /// A rejection naming the field and the code.
    pub fn at(message: impl Into<String>, param: impl Into<String>, code: &'static str) -> Self {
        Rejection {
            message: message.into(),
            param: Some(param.into()),
            code: Some(code),
        }
    }

    /// The body of the provider's 400: OpenAI's
    /// `{"error":{"message","type":"invalid_request_error","param","code"}}`, Anthropic's
    /// `{"type":"error","error":{"type":"invalid_request_error","message"},"request_id"}`.
    pub fn body(&self, provider: Provider, request_id: &str) -> Vec<u8> {
        match provider {
            Provider::OpenAi => invalid_body(&self.message, self.param.as_deref(), self.code),
            Provider::Anthropic => error_body(
                provider,
                "invalid_request_error",
                None,
                &self.message,
                request_id,
            ),
        }
    }
}

impl core::fmt::Display for Rejection {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Checks a request body (already known to be a JSON object) as `provider` does.
pub fn check(provider: Provider, body: &Map<String, Value>) -> Result<(), Rejection> {
    match provider {
        Provider::OpenAi => openai::check(body),
        Provider::Anthropic => anthropic::check(body),
    }
}

/// The keys of `body` not in `known`, sorted.
fn unknown_keys<'a>(body: &'a Map<String, Value>, known: &[&str]) -> Vec<&'a str> {
    let mut extra: Vec<&str> = body
        .keys()
        .map(String::as_str)
        .filter(|k| !known.contains(k))
        .collect();
    extra.sort_unstable();
    extra
}

/// The field, unless it is absent or `null` (an optional field sent as `null` is
/// treated as absent).
fn given<'a>(body: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    body.get(key).filter(|v| !v.is_null())
}
