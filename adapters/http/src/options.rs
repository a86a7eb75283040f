//! What a caller may change for a whole client (on its builder) or for one call: the
//! attempts, the attempt timeout and the deadline; and, per call, extra headers and
//! the idempotency key.

use std::time::Duration;

use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};
use steadfast_core::ids::EndpointSet;
use steadfast_core::retry::RetryConfig;

use crate::provider::Provider;

/// Changes to the policy's retry rules; each `None` keeps the policy's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RetryOverrides {
    /// Attempts in all, the first included.
    pub max_attempts: Option<u32>,
    /// Each attempt's timeout.
    pub attempt_timeout: Option<Duration>,
    /// The call's deadline (`Some(None)`: no deadline).
    pub deadline: Option<Option<Duration>>,
}

impl RetryOverrides {
    /// Whether nothing is changed.
    pub fn is_empty(&self) -> bool {
        *self == RetryOverrides::default()
    }

    /// `retry` with these changes (checked when the engine is built or the call starts:
    /// an invalid value names the field).
    pub fn apply(&self, retry: &RetryConfig) -> RetryConfig {
        let mut r = *retry;
        if let Some(n) = self.max_attempts {
            r.max_attempts = n;
        }
        if let Some(t) = self.attempt_timeout {
            r.attempt_timeout = t;
        }
        if let Some(d) = self.deadline {
            r.deadline = d;
        }
        r
    }

    /// Laid over `base`: what `self` sets wins.
    pub fn over(&self, base: &RetryOverrides) -> RetryOverrides {
        RetryOverrides {
            max_attempts: self.max_attempts.or(base.max_attempts),
            attempt_timeout: self.attempt_timeout.or(base.attempt_timeout),
            deadline: self.deadline.or(base.deadline),
        }
    }
}

/// One call's own settings, as the SDKs' per-request options: attempts, timeout,
/// deadline, extra headers and the idempotency key.
///
/// ```
/// use std::time::Duration;
/// use steadfast_http::CallOptions;
/// let options = CallOptions::new()
///     .max_retries(1)
///     .timeout(Duration::from_secs(20))
///     .deadline(Duration::from_secs(30))
///     .header("x-trace-id", "abc")
///     .idempotency_key("order-1234");
/// assert_eq!(options.retry.max_attempts, Some(2));
/// assert_eq!(options.headers["x-trace-id"], "abc");
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Changes to the client's retry rules for this call.
    pub retry: RetryOverrides,
    /// Headers added to every attempt (after the endpoint's own: they cannot replace
    /// the authentication or the idempotency key).
    pub headers: HeaderMap,
    /// The business id the call's `Idempotency-Key` is derived from: the same id gives
    /// the same key, so a resubmission is recognised (and the `Stored` fallback can
    /// answer with its last result).
    pub idempotency_key: Option<String>,
    /// The endpoints the call may use (a gateway's route); `None`: every endpoint not
    /// on standby. Attempts go to them in the pool's order, and failover stays among
    /// them.
    pub endpoints: Option<EndpointSet>,
    /// The API the request is in, and its reply will be in: translated for the
    /// endpoints that speak the other (a gateway serving both APIs). `None`: the
    /// client's shape (OpenAI's for a canonical client; else each endpoint's own).
    pub shape: Option<Provider>,
}

impl CallOptions {
    /// No changes.
    pub fn new() -> CallOptions {
        CallOptions::default()
    }

    /// Retries after the first attempt (`max_retries(2)`: three attempts in all).
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> CallOptions {
        self.retry.max_attempts = Some(retries.saturating_add(1));
        self
    }

    /// Attempts in all, the first included.
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> CallOptions {
        self.retry.max_attempts = Some(attempts);
        self
    }

    /// Each attempt's timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> CallOptions {
        self.retry.attempt_timeout = Some(timeout);
        self
    }

    /// No attempt starts later than this after the call's start.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> CallOptions {
        self.retry.deadline = Some(Some(deadline));
        self
    }

    /// Adds a header to every attempt; a name or value that HTTP cannot carry is
    /// ignored (see [`CallOptions::headers`] for a checked map).
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> CallOptions {
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            self.headers.append(n, v);
        }
        self
    }

    /// Restricts the call to `endpoints` (see [`CallOptions::endpoints`]).
    #[must_use]
    pub fn only_endpoints(mut self, endpoints: EndpointSet) -> CallOptions {
        self.endpoints = Some(endpoints);
        self
    }

    /// The request is in `shape`'s API (see [`CallOptions::shape`]).
    #[must_use]
    pub fn shape(mut self, shape: Provider) -> CallOptions {
        self.shape = Some(shape);
        self
    }

    /// The business id the idempotency key is derived from.
    #[must_use]
    pub fn idempotency_key(mut self, id: impl Into<String>) -> CallOptions {
        self.idempotency_key = Some(id.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_change_only_what_they_set() {
        let base = RetryConfig::default();
        assert_eq!(RetryOverrides::default().apply(&base), base);
        let o = CallOptions::new()
            .max_retries(0)
            .deadline(Duration::from_secs(5));
        let r = o.retry.apply(&base);
        assert_eq!(r.max_attempts, 1);
        assert_eq!(r.deadline, Some(Duration::from_secs(5)));
        assert_eq!(r.attempt_timeout, base.attempt_timeout);
        let client = RetryOverrides {
            max_attempts: Some(7),
            attempt_timeout: Some(Duration::from_secs(3)),
            deadline: None,
        };
        let merged = o.retry.over(&client);
        assert_eq!(merged.max_attempts, Some(1));
        assert_eq!(merged.attempt_timeout, Some(Duration::from_secs(3)));
        assert!(!merged.is_empty());
        let bad = CallOptions::new()
            .header("bad name", "v")
            .header("ok", "line\nbreak");
        assert!(bad.headers.is_empty());
    }
}
