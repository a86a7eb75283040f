//! Rates as callers give them, and the integer parameters the scripts run on.
//!
//! Redis runs Lua 5.1, whose numbers are IEEE doubles: integers are exact only below
//! 2^53. Every bound here keeps every product and sum a script forms below that (see
//! [`crate::model`]), so the scripts and the reference model agree to the microsecond.

use crate::error::Invalid;

/// Microseconds in a minute: the unit of `per_minute` rates.
pub const MICROS_PER_MINUTE: u64 = 60_000_000;

/// Largest request rate: one request per microsecond.
pub const MAX_REQUESTS_PER_MINUTE: u32 = 60_000_000;
/// Largest request burst.
pub const MAX_REQUEST_BURST: u32 = 1_000_000;
/// Largest token rate per minute.
pub const MAX_TOKENS_PER_MINUTE: u32 = 1_000_000_000;
/// Largest token burst (bucket capacity).
pub const MAX_TOKEN_BURST: u32 = 10_000_000;

/// A request limit: `per_minute` on average, at most `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests per minute, `1..=60_000_000`.
    pub per_minute: u32,
    /// Requests allowed back to back on a full bucket, `1..=1_000_000`.
    pub burst: u32,
}

/// A token limit: `per_minute` tokens refill continuously into a bucket of `burst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenRate {
    /// Tokens per minute, `1..=1_000_000_000`.
    pub per_minute: u32,
    /// Bucket capacity in tokens, `1..=10_000_000`.
    pub burst: u32,
}

/// A request rate as the GCRA script runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcraParams {
    /// Emission interval: microseconds per request, rounded up (never faster than the
    /// configured rate, slower by under a microsecond per request).
    pub interval_us: u64,
    /// Burst in requests.
    pub burst: u64,
}

impl Rate {
    /// The script parameters, or why this rate is out of range.
    pub fn params(self) -> Result<GcraParams, Invalid> {
        if self.per_minute == 0 || self.per_minute > MAX_REQUESTS_PER_MINUTE {
            return Err(Invalid::OutOfRange {
                field: "rate.per_minute",
            });
        }
        if self.burst == 0 || self.burst > MAX_REQUEST_BURST {
            return Err(Invalid::OutOfRange {
                field: "rate.burst",
            });
        }
        Ok(GcraParams {
            interval_us: MICROS_PER_MINUTE.div_ceil(u64::from(self.per_minute)),
            burst: u64::from(self.burst),
        })
    }
}

/// A token rate as the token-bucket scripts run it. One token is
/// [`MICROS_PER_MINUTE`] units, so a rate of `per_minute` tokens refills exactly
/// `per_minute` units per microsecond: no rounding at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketParams {
    /// Units refilled per microsecond (= tokens per minute).
    pub rate: i64,
    /// Capacity in units (= burst × [`MICROS_PER_MINUTE`]).
    pub cap: i64,
    /// Burst in tokens.
    pub burst: u32,
}

impl TokenRate {
    /// The script parameters, or why this rate is out of range.
    pub fn params(self) -> Result<BucketParams, Invalid> {
        if self.per_minute == 0 || self.per_minute > MAX_TOKENS_PER_MINUTE {
            return Err(Invalid::OutOfRange {
                field: "token_rate.per_minute",
            });
        }
        if self.burst == 0 || self.burst > MAX_TOKEN_BURST {
            return Err(Invalid::OutOfRange {
                field: "token_rate.burst",
            });
        }
        Ok(BucketParams {
            rate: i64::from(self.per_minute),
            cap: i64::from(self.burst) * UNIT,
            burst: self.burst,
        })
    }
}

/// Units per token in the token bucket.
pub const UNIT: i64 = MICROS_PER_MINUTE as i64;
