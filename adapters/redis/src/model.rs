//! The reference model: every script's arithmetic in plain Rust, no IO.
//!
//! Each function takes the state a script reads, the server instant it read with
//! `TIME` (microseconds) and its arguments, and returns what the script answers and
//! the state it leaves. The property tests replay each script's own instant through
//! these functions and require identical answers.
//!
//! Absent state means "bucket full": a GCRA key that expired (its TTL runs to its
//! theoretical arrival time) reads as `now`, a token bucket that expired (its TTL
//! runs to the instant it is full) reads as full. The functions treat `None` and a
//! stale state alike, so it does not matter whether Redis has evicted the key yet.

use crate::rate::{BucketParams, GcraParams};

/// A GCRA request reservation's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcraAnswer {
    /// Requests granted: `n` or 0.
    pub granted: u64,
    /// Microseconds until `n` requests would be granted (0 when granted).
    pub wait_us: u64,
    /// The theoretical arrival time after the call (stored only when granted).
    pub tat_us: u64,
    /// Whole requests still available right after the call.
    pub remaining: u64,
}

/// GCRA: `tat` is the stored theoretical arrival time. Grants `n` when the bucket
/// holds `n` whole slots, i.e. `max(tat, now) + n·T ≤ now + burst·T`.
pub fn gcra_reserve(tat: Option<u64>, now: u64, p: GcraParams, n: u64) -> GcraAnswer {
    let tat = tat.unwrap_or(now).max(now);
    let limit_at = now + p.burst * p.interval_us;
    let new_tat = tat + n * p.interval_us;
    if new_tat > limit_at {
        return GcraAnswer {
            granted: 0,
            wait_us: new_tat - limit_at,
            tat_us: tat,
            remaining: available(tat, limit_at, p),
        };
    }
    GcraAnswer {
        granted: n,
        wait_us: 0,
        tat_us: new_tat,
        remaining: available(new_tat, limit_at, p),
    }
}

/// The divisor of the lease bound: a lease takes at most a quarter of what is left.
pub const LEASE_DIVISOR: u64 = 4;

/// A lease's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseAnswer {
    /// Requests leased: `min(want, max(1, ⌊available / 4⌋))`, or 0 when none is available.
    pub granted: u64,
    /// Microseconds until one request is available (0 when granted).
    pub wait_us: u64,
    /// The theoretical arrival time after the call.
    pub tat_us: u64,
    /// Server instant the lease expires: `now + granted·T`.
    pub expires_us: u64,
}

/// Leases up to `want` requests out of the GCRA state, charged to it like `granted`
/// reservations. With `a = ⌊(now + burst·T − max(tat, now)) / T⌋` whole requests
/// available, the lease is `min(want, max(1, ⌊a / 4⌋))` when `a ≥ 1`, else 0; it is
/// valid for `granted·T`, the time the shared bucket takes to earn it back.
pub fn lease(tat: Option<u64>, now: u64, p: GcraParams, want: u64) -> LeaseAnswer {
    let tat = tat.unwrap_or(now).max(now);
    let limit_at = now + p.burst * p.interval_us;
    let avail = available(tat, limit_at, p);
    if avail == 0 {
        return LeaseAnswer {
            granted: 0,
            wait_us: tat + p.interval_us - limit_at,
            tat_us: tat,
            expires_us: 0,
        };
    }
    let granted = (avail / LEASE_DIVISOR).max(1).min(want);
    LeaseAnswer {
        granted,
        wait_us: 0,
        tat_us: tat + granted * p.interval_us,
        expires_us: now + granted * p.interval_us,
    }
}

/// A lease release's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReleaseAnswer {
    /// Requests given back: `unused`, or 0 when the lease had expired or the bucket is
    /// already full (nothing to give back to).
    pub refunded: u64,
    /// The theoretical arrival time after the call.
    pub tat_us: u64,
}

/// Gives `unused` leased requests back: `tat ← max(now, tat − unused·T)`, only while
/// the lease is valid (`now < expires`), so a stale lease never adds quota that the
/// bucket has earned back on its own since.
pub fn release(
    tat: Option<u64>,
    now: u64,
    p: GcraParams,
    unused: u64,
    expires: u64,
) -> ReleaseAnswer {
    let tat = tat.unwrap_or(now).max(now);
    if now >= expires || tat <= now || unused == 0 {
        return ReleaseAnswer {
            refunded: 0,
            tat_us: tat,
        };
    }
    ReleaseAnswer {
        refunded: unused,
        tat_us: tat.saturating_sub(unused * p.interval_us).max(now),
    }
}

/// Whole requests available at `now` (`limit_at = now + burst·T`) with this TAT.
fn available(tat: u64, limit_at: u64, p: GcraParams) -> u64 {
    limit_at.saturating_sub(tat) / p.interval_us
}

/// A token bucket: `level` in units ([`crate::rate::UNIT`] per token), may be
/// negative (a debt from an overrun), as of `last_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// Level in units, in `[-cap, cap]`.
    pub level: i64,
    /// Server instant of the level.
    pub last_us: u64,
}

/// The level at `now`: refilled by `rate` units per microsecond, capped at `cap`.
pub fn refill(b: Option<Bucket>, now: u64, p: BucketParams) -> i64 {
    let Some(b) = b else { return p.cap };
    if b.level >= p.cap {
        return p.cap;
    }
    let Some(elapsed) = now.checked_sub(b.last_us).filter(|e| *e > 0) else {
        return b.level;
    };
    let elapsed = i64::try_from(elapsed).unwrap_or(i64::MAX);
    let need = ceil_div(p.cap - b.level, p.rate);
    if elapsed >= need {
        return p.cap;
    }
    b.level + elapsed * p.rate
}

/// A token reservation's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenAnswer {
    /// Whether `cost` was taken.
    pub granted: bool,
    /// Microseconds until the bucket holds `cost` (0 when granted).
    pub wait_us: u64,
    /// The level after the call (refilled; minus `cost` when granted).
    pub level: i64,
}

/// Takes `cost` units when the refilled level holds them; otherwise says how long
/// until it does (a debt from an overrun is waited out first).
pub fn reserve_tokens(b: Option<Bucket>, now: u64, p: BucketParams, cost: i64) -> TokenAnswer {
    let level = refill(b, now, p);
    if level < cost {
        let wait = ceil_div(cost - level, p.rate);
        return TokenAnswer {
            granted: false,
            wait_us: u64::try_from(wait).unwrap_or(u64::MAX),
            level,
        };
    }
    TokenAnswer {
        granted: true,
        wait_us: 0,
        level: level - cost,
    }
}

/// Applies `delta` units (reserved − actual, already clamped to
/// `[-2·cap, cap]` by the caller) to the refilled level, clamped to `[-cap, cap]`:
/// a refund never fills past the capacity, an overrun is a debt of at most one bucket.
pub fn reconcile_tokens(b: Option<Bucket>, now: u64, p: BucketParams, delta: i64) -> i64 {
    (refill(b, now, p) + delta).clamp(-p.cap, p.cap)
}

/// Microseconds until a bucket at `level` is full: the TTL of its key.
pub fn until_full_us(level: i64, p: BucketParams) -> i64 {
    ceil_div((p.cap - level).max(0), p.rate)
}

/// `⌈a / b⌉` for `a ≥ 0`, `b > 0`, written as the scripts write it.
fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

#[cfg(test)]
mod tests;
