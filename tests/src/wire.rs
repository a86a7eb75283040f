//! What a server says in its error bodies, for the harness's answers: the core's
//! [`ErrorKind`]s as OpenAI and Anthropic write them, through
//! `steadfast-upstream`'s error bodies, and messages servers send.

use steadfast_core::classify::ErrorKind;
use steadfast_core::provider::Provider;
use steadfast_upstream::wire::errors;

/// The request id the harness's Anthropic bodies carry.
const REQUEST_ID: &str = "req_011CSHoEeqs5C35K2UUqR7Fy";

/// A realistic error body for `kind`. OpenAI puts the specific kind in `code` under a
/// broader `type`; Anthropic has only `type`.
pub fn error_body(provider: Provider, kind: ErrorKind, message: &str) -> Vec<u8> {
    let name = kind.name();
    match provider {
        Provider::OpenAi => {
            let ty = match kind {
                ErrorKind::RateLimitExceeded => "requests",
                ErrorKind::InsufficientQuota => "insufficient_quota",
                ErrorKind::ServerError => "server_error",
                _ => "invalid_request_error",
            };
            errors::error_body(provider, ty, Some(name), message, "")
        }
        Provider::Anthropic => errors::error_body(provider, name, None, message, REQUEST_ID),
    }
}

/// Messages servers send, some of which say the context is too long.
pub const MESSAGES: [&str; 6] = [
    "Overloaded",
    "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.",
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens.",
    "prompt is too long: 215000 tokens > 200000 maximum",
    "You exceeded your current quota, please check your plan and billing details.",
    "Incorrect API key provided: sk-****abcd.",
];

#[cfg(test)]
mod tests {
    use super::*;
    use steadfast_core::classify::ErrorFacts;

    #[test]
    fn bodies_say_their_kind() {
        for provider in Provider::ALL {
            for kind in [ErrorKind::InsufficientQuota, ErrorKind::RateLimitExceeded] {
                let body = error_body(provider, kind, MESSAGES[0]);
                assert_eq!(ErrorFacts::scan(&body).kind, Some(kind), "{provider}");
            }
        }
    }
}
