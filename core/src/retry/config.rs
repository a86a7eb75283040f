//! The configuration of the retry sequence.

use core::time::Duration;

use rand_core::Rng;

use crate::config::{nonzero, within};
use crate::error::ConfigError;

/// How one logical call retries.
///
/// Defaults (the `standard` preset):
///
/// | field | default | why |
/// |---|---|---|
/// | `max_attempts` | 4 | one try and three retries; the official SDKs use 3 attempts, one more rides out a typical 529 burst |
/// | `deadline` | 180 s | a non-streamed completion can take a minute; three retries and their waits fit |
/// | `attempt_timeout` | 60 s | long generations finish; a stuck connection does not hold the call for the SDKs' 10 minutes |
/// | `connect_timeout` | 10 s | |
/// | `first_event_timeout` | none | for streams (see the `streaming` preset) |
/// | `max_retry_after` | 60 s | a longer server hint ends the call at once so the caller can fail over |
/// | `hint_jitter` | 0.05 | a hinted wait grows by up to 5 % so clients told the same instant spread out, and a run of hinted waits takes 2.5 % longer than asked on average |
/// | `hint_jitter_max` | 1 s | but by no more than this |
/// | `idempotent` | true | every attempt carries the call's `Idempotency-Key`, so a failure after sending may be retried |
/// | `hold` | false | with every breaker open or the retry budget spent, give up at once (interactive callers fall back) |
/// | `max_hold` | 30 s | a holding call stops waiting for an endpoint that has failed this long without a success (a dead provider ends a batch promptly) |
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
#[non_exhaustive]
pub struct RetryConfig {
    /// Attempts in all, the first included (≥ 1).
    pub max_attempts: u32,
    /// No attempt starts after this span from the call's start; `None` for no deadline.
    #[cfg_attr(
        feature = "serde",
        serde(with = "crate::duration::serde_human::option")
    )]
    pub deadline: Option<Duration>,
    /// Each attempt must finish within this span (cut to the time left).
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub attempt_timeout: Duration,
    /// The TCP/TLS connect timeout.
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub connect_timeout: Duration,
    /// For streams: the first event must arrive within this span.
    #[cfg_attr(
        feature = "serde",
        serde(with = "crate::duration::serde_human::option")
    )]
    pub first_event_timeout: Option<Duration>,
    /// For streams: after the first event, the longest gap between two events; a
    /// longer one ends the stream with a typed interruption carrying the text so far.
    /// Both clients watch it. In the async client and the gateway, a stream that keeps
    /// producing is then no longer cut at `attempt_timeout`; the blocking client (which
    /// reads such a stream on its own thread) still bounds a stream by it as a whole.
    #[cfg_attr(
        feature = "serde",
        serde(with = "crate::duration::serde_human::option")
    )]
    pub stall_timeout: Option<Duration>,
    /// The longest server-requested wait honoured; a longer one ends the call.
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub max_retry_after: Duration,
    /// A hinted wait grows by a uniform fraction in `[0, hint_jitter]` of itself.
    pub hint_jitter: f64,
    /// The most a hinted wait grows.
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub hint_jitter_max: Duration,
    /// Whether a failure after the request was sent may be retried.
    pub idempotent: bool,
    /// With nothing available — every breaker open, the retry budget spent — wait for
    /// the first to come back (within the deadline) instead of giving up at once.
    pub hold: bool,
    /// How long a holding call waits for an endpoint that keeps failing: once the
    /// endpoint's first failure since its last success is this old, the call no longer
    /// holds for its breaker or budget and gives up instead (`BreakerOpen`,
    /// `BudgetExhausted`).
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub max_hold: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 4,
            deadline: Some(Duration::from_secs(180)),
            attempt_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            first_event_timeout: None,
            stall_timeout: None,
            max_retry_after: Duration::from_secs(60),
            hint_jitter: 0.05,
            hint_jitter_max: Duration::from_secs(1),
            idempotent: true,
            hold: false,
            max_hold: Duration::from_secs(30),
        }
    }
}

impl RetryConfig {
    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        nonzero(self.max_attempts == 0, "retry.max_attempts")?;
        nonzero(self.deadline == Some(Duration::ZERO), "retry.deadline")?;
        nonzero(self.attempt_timeout.is_zero(), "retry.attempt_timeout")?;
        nonzero(self.connect_timeout.is_zero(), "retry.connect_timeout")?;
        nonzero(self.max_hold.is_zero(), "retry.max_hold")?;
        nonzero(
            self.first_event_timeout == Some(Duration::ZERO),
            "retry.first_event_timeout",
        )?;
        nonzero(
            self.stall_timeout == Some(Duration::ZERO),
            "retry.stall_timeout",
        )?;
        within("retry.hint_jitter", self.hint_jitter, 0.0, 1.0)
    }

    /// The most a hinted wait grows: `min(hint × hint_jitter, hint_jitter_max)`, with a
    /// `hint_jitter` outside `[0, 1]` (even NaN, in a config never validated) clamped.
    pub fn hint_spread_max(&self, hint: Duration) -> Duration {
        let ratio = if self.hint_jitter > 0.0 {
            self.hint_jitter.min(1.0)
        } else {
            0.0
        };
        hint.mul_f64(ratio).min(self.hint_jitter_max)
    }

    /// The positive jitter added to a hinted wait: uniform in
    /// `[0, hint_spread_max(hint)]`, one draw.
    pub fn hint_jitter<R: Rng + ?Sized>(&self, hint: Duration, rng: &mut R) -> Duration {
        self.hint_spread_max(hint)
            .mul_f64(crate::rng::unit_f64(rng))
    }
}
