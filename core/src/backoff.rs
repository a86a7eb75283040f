//! Exponential backoff with jitter.
//!
//! STUB: filled in by the backoff work; the types below are the contract.

use core::time::Duration;
use rand_core::Rng;

/// How a computed delay is randomised.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Jitter {
    /// No randomness.
    None,
    /// Uniform in `[0, d]`.
    #[default]
    Full,
}

/// Exponential backoff parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct BackoffConfig {
    /// The first delay.
    pub base: Duration,
    /// The growth factor per retry.
    pub factor: f64,
    /// The longest delay.
    pub cap: Duration,
    /// The jitter mode.
    pub jitter: Jitter,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            base: Duration::from_millis(500),
            factor: 2.0,
            cap: Duration::from_secs(30),
            jitter: Jitter::Full,
        }
    }
}

impl BackoffConfig {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), crate::error::ConfigError> {
        Ok(())
    }
}

/// The backoff state of one call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    config: BackoffConfig,
}

impl Backoff {
    /// A fresh backoff.
    pub fn new(config: BackoffConfig) -> Backoff {
        Backoff { config }
    }

    /// The delay before retry number `retry` (1 for the first retry).
    pub fn next_delay<R: Rng + ?Sized>(&mut self, retry: u32, rng: &mut R) -> Duration {
        let _ = (retry, rng);
        self.config.base
    }
}
