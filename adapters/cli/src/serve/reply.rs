//! The gateway's responses: JSON bodies, errors in the shape of the API the client
//! called (OpenAI's or Anthropic's), and the give-up of a call as the error a provider
//! would send (with `retry-after` when waiting would help).

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{Either, Full};
use serde_json::Value;
use steadfast_core::classify::Class;
use steadfast_core::time::Timestamp;
use steadfast_http::chat::{ApiError, ApiErrorKind};
use steadfast_http::{GiveUpReason, Provider};

/// The body of every gateway response: whole (held as it is, not boxed: one allocation
/// less a request), or streamed events.
pub type Body = Either<Full<Bytes>, UnsyncBoxBody<Bytes, Infallible>>;

/// A call that gave up, as the reqwest client reports it.
pub type CallError = steadfast_reqwest::CallError;

/// `retry-after-ms`: the wait of a give-up, in milliseconds.
pub const RETRY_AFTER_MS: HeaderName = HeaderName::from_static("retry-after-ms");
/// `x-steadfast-attempts`: the attempts a call made.
pub const X_ATTEMPTS: HeaderName = HeaderName::from_static("x-steadfast-attempts");
/// `x-steadfast-endpoint`: the endpoint that answered.
pub const X_ENDPOINT: HeaderName = HeaderName::from_static("x-steadfast-endpoint");
/// `x-steadfast-give-up`: why a call gave up.
pub const X_GIVE_UP: HeaderName = HeaderName::from_static("x-steadfast-give-up");
/// `x-steadfast-replayed`: how an answer sent again was kept.
pub const X_REPLAYED: HeaderName = HeaderName::from_static("x-steadfast-replayed");

/// The value of [`X_ATTEMPTS`] for `n` attempts (a small count without allocating).
pub fn attempts_value(n: u32) -> HeaderValue {
    const SMALL: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
    match usize::try_from(n).ok().and_then(|i| SMALL.get(i)) {
        Some(digits) => HeaderValue::from_static(digits),
        None => HeaderValue::from(n),
    }
}

/// A whole body.
fn full(bytes: impl Into<Bytes>) -> Body {
    Either::Left(Full::new(bytes.into()))
}

/// A whole answer: kept as bytes, so that it can be sent again to the requests that
/// share its idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Its status.
    pub status: StatusCode,
    /// Its content type.
    pub content_type: &'static str,
    /// Its headers besides the content type.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Its whole body (for a stream, every event it sent).
    pub body: Bytes,
}

impl Answer {
    /// A JSON answer.
    pub fn json(status: StatusCode, body: &Value) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            headers: Vec::new(),
            body: Bytes::from(serde_json::to_vec(body).unwrap_or_default()),
        }
    }

    /// An error of `kind` with `message`, in `shape`'s words and with its status.
    pub fn error(shape: Provider, kind: ApiErrorKind, message: impl Into<String>) -> Answer {
        Answer::api_error(shape, &ApiError::new(shape, kind, message))
    }

    /// `e` in `shape`'s words and with its status.
    pub fn api_error(shape: Provider, e: &ApiError) -> Answer {
        let body = match shape {
            Provider::OpenAi => e.to_openai(),
            Provider::Anthropic => e.to_anthropic(),
        };
        let status = StatusCode::from_u16(e.status_for(shape)).unwrap_or(StatusCode::BAD_GATEWAY);
        Answer::json(status, &body)
    }

    /// The same answer with one more header (none when `value` is not a header
    /// value).
    #[must_use]
    pub fn with_header<V: TryInto<HeaderValue>>(mut self, name: HeaderName, value: V) -> Answer {
        if let Ok(v) = value.try_into() {
            self.headers.push((name, v));
        }
        self
    }

    /// The HTTP response.
    pub fn to_response(&self) -> Response<Body> {
        let mut r = Response::new(full(self.body.clone()));
        *r.status_mut() = self.status;
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        for (name, value) in &self.headers {
            h.append(name, value.clone());
        }
        r
    }
}

/// What a give-up tells the client: the error, and the wait after which trying again
/// may succeed.
#[derive(Debug, Clone, PartialEq)]
pub struct GaveUp {
    /// The error.
    pub error: ApiError,
    /// The wait before trying again helps, when one is known.
    pub retry_after: Option<Duration>,
    /// The give-up's name (`retries_exhausted`, ...), or `refused`.
    pub reason: &'static str,
    /// Attempts made.
    pub attempts: u32,
}

impl GaveUp {
    /// The give-up of `e` at `now`, in `shape`'s words.
    pub fn of<E>(shape: Provider, e: &steadfast_http::CallError<E>, now: Timestamp) -> GaveUp {
        let wait_until = |until: Timestamp| Some(until.saturating_duration_since(now));
        let (kind, retry_after) = match (&e.request, e.reason) {
            (Some(_), _) => (ApiErrorKind::InvalidRequest, None),
            (None, GiveUpReason::RateLimited { until }) => {
                (ApiErrorKind::RateLimit, wait_until(until))
            }
            (None, GiveUpReason::BreakerOpen { until }) => {
                (ApiErrorKind::Overloaded, wait_until(until))
            }
            (None, GiveUpReason::HintTooLong { hint }) => (last_kind(e), Some(hint)),
            (None, GiveUpReason::NotRetryable) => (last_kind(e), None),
            (None, GiveUpReason::NoUsableKey) => (ApiErrorKind::Overloaded, None),
            (None, _) => (last_kind(e), None),
        };
        let message = match (&e.request, &e.message) {
            (Some(refused), _) => refused.to_string(),
            (None, Some(m)) => m.clone(),
            (None, None) => format!(
                "the gateway gave up ({}) after {} attempts",
                e.reason.name(),
                e.attempts
            ),
        };
        let mut error = ApiError::new(shape, kind, message);
        if let (GiveUpReason::NotRetryable, Some(status)) = (e.reason, e.status) {
            // A request the provider refused keeps the provider's status.
            error.status = (status < 500).then_some(status);
        }
        GaveUp {
            error,
            retry_after,
            reason: match e.request {
                Some(_) => "refused",
                None => e.reason.name(),
            },
            attempts: e.attempts,
        }
    }

    /// The answer: the error, its `retry-after` (whole seconds rounded up, so a
    /// client never comes back early) and `retry-after-ms`, the reason and attempts.
    pub fn answer(&self, shape: Provider) -> Answer {
        let mut a = Answer::api_error(shape, &self.error);
        if let Some(wait) = self.retry_after {
            let ms = wait.as_millis().max(1);
            a = a
                .with_header(header::RETRY_AFTER, ms.div_ceil(1000).to_string())
                .with_header(RETRY_AFTER_MS, ms.to_string());
        }
        a.with_header(X_GIVE_UP, HeaderValue::from_static(self.reason))
            .with_header(X_ATTEMPTS, attempts_value(self.attempts))
    }
}

/// The kind of the last attempt's failure.
fn last_kind<E>(e: &steadfast_http::CallError<E>) -> ApiErrorKind {
    match (e.class, e.status) {
        (Some(Class::Timeout | Class::RequestTimeout | Class::GatewayTimeout), _) => {
            ApiErrorKind::Timeout
        }
        // The gateway's own provider keys failed: not the client's to fix.
        (
            Some(
                Class::Unauthorized
                | Class::Forbidden
                | Class::PaymentRequired
                | Class::QuotaExhausted,
            ),
            _,
        ) => ApiErrorKind::Overloaded,
        (_, Some(status)) if status >= 400 => ApiErrorKind::from_status(status),
        (Some(_), _) => ApiErrorKind::Server,
        (None, _) => ApiErrorKind::Overloaded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_values_are_the_counts() {
        for n in [0, 1, 9, 10, 12, 1000, u32::MAX] {
            assert_eq!(attempts_value(n), n.to_string().as_str(), "{n}");
        }
    }
}
