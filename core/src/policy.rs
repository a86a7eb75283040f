//! The whole policy in one value, and the presets for common situations.

use core::time::Duration;

use crate::backoff::BackoffConfig;
use crate::breaker::BreakerConfig;
use crate::budget::BudgetConfig;
use crate::classify::ClassifyConfig;
use crate::error::ConfigError;
use crate::health::{HealthConfig, SlaTargets};
use crate::hedge::HedgeConfig;
use crate::idempotency::StoreConfig;
use crate::limiter::LimiterConfig;
use crate::retry::RetryConfig;
use crate::shared::SharedConfig;

/// Every rule steadfast follows, by section. `Policy::default()` is the `standard`
/// preset; see each section's type for its defaults.
///
/// In a config file each section is a table (`[retry]`, `[backoff]`, ...); a missing
/// section or field keeps its default, an unknown one is an error.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
#[non_exhaustive]
pub struct Policy {
    /// Attempts, deadline, timeouts, server hints.
    pub retry: RetryConfig,
    /// Delays between attempts.
    pub backoff: BackoffConfig,
    /// The retry budget per endpoint.
    pub budget: BudgetConfig,
    /// How outcomes are classified.
    pub classify: ClassifyConfig,
    /// The circuit breaker per endpoint.
    pub breaker: BreakerConfig,
    /// Client-side rate limits per endpoint (none by default).
    pub limiter: LimiterConfig,
    /// The health window per endpoint.
    pub health: HealthConfig,
    /// The service levels health reports are compared with.
    pub sla: SlaTargets,
    /// The idempotency store (adapters that dedupe submissions).
    pub idempotency: StoreConfig,
    /// How endpoints with a shared request limit lease it (see [`crate::shared`]).
    pub shared: SharedConfig,
    /// Hedged attempts (see [`crate::hedge`]; off by default, and in every preset).
    pub hedge: HedgeConfig,
}

/// A named starting point for a [`Policy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Preset {
    /// The defaults: a server-side caller that can wait a little.
    #[default]
    Standard,
    /// A person is waiting: short timeouts, few attempts, a tight deadline.
    Interactive,
    /// Nobody is waiting: long attempt timeouts, many attempts, a long deadline, and
    /// calls hold while every breaker is open rather than fail.
    Batch,
    /// Server-sent events: a time-to-first-event timeout instead of a whole-response one.
    Streaming,
}

impl Preset {
    /// Every preset, in documentation order.
    pub const ALL: [Preset; 4] = [
        Preset::Standard,
        Preset::Interactive,
        Preset::Batch,
        Preset::Streaming,
    ];

    /// The preset's name as written in config files and on command lines.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Standard => "standard",
            Preset::Interactive => "interactive",
            Preset::Batch => "batch",
            Preset::Streaming => "streaming",
        }
    }

    /// The preset named `name`.
    pub fn from_name(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl core::fmt::Display for Preset {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Preset> for Policy {
    fn from(preset: Preset) -> Policy {
        match preset {
            Preset::Standard => Policy::standard(),
            Preset::Interactive => Policy::interactive(),
            Preset::Batch => Policy::batch(),
            Preset::Streaming => Policy::streaming(),
        }
    }
}

const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

const fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

impl Policy {
    /// This policy with every random spread off: backoff jitter, the spread added to
    /// server hints and the breaker's open-time jitter. Every instant is then exact,
    /// for tests and for replays that compare instants.
    #[must_use]
    pub fn without_jitter(mut self) -> Policy {
        self.backoff.jitter = crate::backoff::Jitter::None;
        self.retry.hint_jitter = 0.0;
        self.breaker.open_jitter = 0.0;
        self
    }

    /// The defaults (see [`RetryConfig`], [`BackoffConfig`], [`BudgetConfig`]).
    pub fn standard() -> Policy {
        Policy::default()
    }

    /// A person is waiting: 3 attempts within 30 s, 20 s per attempt, 2 s to connect,
    /// server hints up to 10 s, backoff from 250 ms up to 4 s.
    pub fn interactive() -> Policy {
        let mut p = Policy::default();
        p.retry.max_attempts = 3;
        p.retry.deadline = Some(secs(30));
        p.retry.attempt_timeout = secs(20);
        p.retry.connect_timeout = secs(2);
        p.retry.max_retry_after = secs(10);
        p.backoff.base = millis(250);
        p.backoff.cap = secs(4);
        p
    }

    /// Nobody is waiting: 10 attempts within 15 min, 2 min per attempt, server hints up
    /// to 5 min, backoff from 1 s up to 60 s, and a call holds while every breaker is
    /// open or the retry budget is spent (an outage of seconds is waited out, not failed).
    pub fn batch() -> Policy {
        let mut p = Policy::default();
        p.retry.max_attempts = 10;
        p.retry.deadline = Some(secs(15 * 60));
        p.retry.attempt_timeout = secs(120);
        p.retry.max_retry_after = secs(5 * 60);
        p.retry.hold = true;
        p.backoff.base = secs(1);
        p.backoff.cap = secs(60);
        p
    }

    /// Server-sent events: the first event must come within 20 s; the stream as a whole
    /// may run 10 min. Attempts are retried only until the first event reaches the
    /// caller, so the deadline bounds the retries (60 s), not the stream.
    pub fn streaming() -> Policy {
        let mut p = Policy::default();
        p.retry.max_attempts = 3;
        p.retry.deadline = Some(secs(60));
        p.retry.attempt_timeout = secs(600);
        p.retry.first_event_timeout = Some(secs(20));
        p.retry.connect_timeout = secs(5);
        p.retry.max_retry_after = secs(20);
        p.backoff.base = millis(250);
        p.backoff.cap = secs(8);
        p
    }

    /// Checks every section; the error names the first bad field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.retry.validate()?;
        self.backoff.validate()?;
        self.budget.validate()?;
        self.classify.validate()?;
        self.breaker.validate()?;
        self.limiter.validate()?;
        self.health.validate()?;
        self.sla.validate()?;
        self.idempotency.validate()?;
        self.shared.validate()?;
        self.hedge.validate()
    }
}

#[cfg(test)]
mod tests;
