//! Server hints: how long the server asks us to wait, and what its rate-limit headers say.
//!
//! STUB: the parsers are filled in by the hints work; the types below are the contract.

use core::time::Duration;

/// What the response headers tell about when to come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Hints {
    /// The wait the server asked for (`retry-after-ms`, else `retry-after`), measured
    /// from the moment the response arrived.
    pub retry_after: Option<Duration>,
    /// `x-should-retry: true|false`.
    pub should_retry: Option<bool>,
    /// The request-count window (`x-ratelimit-*-requests`, `anthropic-ratelimit-requests-*`).
    pub requests: RateWindow,
    /// The token window (`x-ratelimit-*-tokens`; for Anthropic the most restrictive of
    /// `tokens`, `input-tokens` and `output-tokens`).
    pub tokens: RateWindow,
}

/// One rate-limit window as the server reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RateWindow {
    /// The window's limit.
    pub limit: Option<u64>,
    /// What is left in the window.
    pub remaining: Option<u64>,
    /// How long until the window resets, from the moment the response arrived.
    pub reset: Option<Duration>,
}

impl Hints {
    /// Parses the headers of one response. `wall_now_unix` (seconds since the Unix
    /// epoch) anchors HTTP-dates and RFC 3339 instants when there is no `Date` header.
    pub fn from_headers<'h, I>(headers: I, wall_now_unix: u64) -> Hints
    where
        I: IntoIterator<Item = (&'h [u8], &'h [u8])>,
    {
        let _ = (headers, wall_now_unix);
        Hints::default()
    }

    /// The wait a throttled attempt should honour: `retry_after` when given, else the
    /// longest reset among windows whose `remaining` is zero.
    pub fn wait_hint(&self) -> Option<Duration> {
        self.retry_after
    }
}
