//! What one attempt's result tells the core.

use std::borrow::Cow;

use http::HeaderMap;
use steadfast_core::outcome::Transport;

/// What happened to one attempt, as the core needs to know it.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed<'a> {
    /// A response arrived: its status, its headers when the client kept them
    /// (`Retry-After`, rate-limit headers, `x-should-retry`), and what was read of an
    /// error body (empty when nothing was).
    Response {
        /// The HTTP status.
        status: u16,
        /// The response headers, when known.
        headers: Option<&'a HeaderMap>,
        /// The error body, or what is known of it (an API error's type and code).
        body: Cow<'a, [u8]>,
    },
    /// The attempt failed below HTTP: what failed, and whether the request may have
    /// been sent.
    Transport(Transport),
    /// The attempt succeeded (a typed client's answer, with no response to show).
    Success,
    /// A 2xx whose body is not what the API sends (it did not parse).
    Malformed {
        /// The HTTP status.
        status: u16,
    },
    /// The client refused to send the request (invalid arguments, a file it could
    /// not read): a request-scope failure, never retried.
    Invalid,
}

/// A result of one attempt that the core can read, and that the caller gets back when
/// it is the call's last.
///
/// Implemented (behind features) for `Result<reqwest::Response, reqwest::Error>`,
/// `Result<http::Response<ureq::Body>, ureq::Error>`, `Result<T, genai::Error>` and
/// `Result<T, async_openai::error::OpenAIError>`; implement it for one's own client
/// with [`Observed`] and [`transport_of`](crate::transport_of).
pub trait IntoOutcome {
    /// What a successful call returns.
    type Value;
    /// The client's error, the source of a give-up after it.
    type Error;

    /// What happened.
    fn observe(&self) -> Observed<'_>;

    /// The result as the caller gets it.
    fn into_result(self) -> Result<Self::Value, Self::Error>;
}

/// `{"error":{"type":…,"code":…}}` for a client that keeps an API error's fields but
/// not its body, so that the core's classification reads them.
#[cfg(feature = "async-openai")]
pub(crate) fn error_body(kind: Option<&str>, code: Option<&str>, message: &str) -> Vec<u8> {
    let body = serde_json::json!({"error": {"type": kind, "code": code, "message": message}});
    body.to_string().into_bytes()
}
