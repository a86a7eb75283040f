//! Shared limits: GCRA for requests, leases of request quota, and a reserve →
//! reconcile token bucket for tokens. One script call per decision.

use crate::error::{Invalid, StoreError};
use crate::ids::LimitKey;
use crate::model::LEASE_DIVISOR;
use crate::rate::{Rate, TokenRate, UNIT};
use crate::scripts::SCRIPTS;
use crate::store::{RedisStore, ints, unsigned};
use std::time::Duration;

/// A shared limit's answer to a reservation.
///
/// `server_us` is the server's `TIME` (µs since the Unix epoch) the script decided
/// at, for logs and for replaying the reference model; never compare it with a
/// local clock. Waits are relative to it, so clients whose clocks differ agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// `n` were taken from the shared budget.
    Granted {
        /// Requests or tokens granted (all that were asked for).
        n: u32,
        /// Whole requests or tokens left in the bucket right after.
        remaining: u32,
        /// The server instant of the decision.
        server_us: u64,
    },
    /// Not now: the budget holds enough after `wait`.
    NotBefore {
        /// How long after the decision the same request would be granted (if no
        /// one else takes the budget first).
        wait: Duration,
        /// The server instant of the decision.
        server_us: u64,
    },
}

impl Decision {
    /// The server instant of the decision (µs; not comparable with local clocks).
    pub fn server_us(&self) -> u64 {
        match *self {
            Decision::Granted { server_us, .. } | Decision::NotBefore { server_us, .. } => {
                server_us
            }
        }
    }
}

/// A slice of a request limit for the process to spend locally.
///
/// Bound: with `a` whole requests available in the shared bucket, a lease is
/// `min(want, max(1, ⌊a / 4⌋))` requests, 0 when `a = 0`. So it never takes more
/// than a quarter of what is left once `a ≥ 4`, and takes 1 when `1 ≤ a ≤ 3`: n
/// replicas leasing in turn leave most of the burst to the others. It is valid for
/// `requests × interval` (the time the shared bucket takes to earn it back); spend
/// it within that, then [`RedisStore::release_lease`] what is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// Requests leased, `0..=want`.
    pub requests: u32,
    /// How long the lease may be spent, from the decision.
    pub valid_for: Duration,
    /// When `requests` is 0: how long until one request is available.
    pub retry_in: Duration,
    /// The server instant of the decision (µs; not comparable with local clocks).
    pub server_us: u64,
    /// Server instant the lease ends; only ever sent back to the server.
    expires_us: u64,
}

/// What [`RedisStore::release_lease`] gave back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    /// Requests returned to the shared bucket: the unused count, or 0 when the lease
    /// had expired or the bucket had refilled completely.
    pub refunded: u32,
    /// The server instant of the decision.
    pub server_us: u64,
}

/// What [`RedisStore::reconcile_tokens`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reconciled {
    /// `reserved − actual`: tokens given back (positive) or charged on top as an
    /// overrun (negative). The bucket never fills past its burst, and carries a debt
    /// of at most one burst, which later reservations wait out.
    pub difference: i64,
    /// Whole tokens in the bucket after (negative: a debt).
    pub balance: i64,
    /// The server instant of the decision.
    pub server_us: u64,
}

impl RedisStore {
    /// GCRA: takes `n` requests (`1..=burst`) from `limit` at `rate`, or says how long
    /// until they fit.
    pub async fn reserve_requests(
        &self,
        limit: &LimitKey,
        rate: Rate,
        n: u32,
    ) -> Result<Decision, StoreError> {
        const OP: &str = "reserve_requests";
        let p = match rate
            .params()
            .and_then(|p| count("n", n, rate.burst).map(|_| p))
        {
            Ok(p) => p,
            Err(e) => return self.refuse(e),
        };
        let mut inv = SCRIPTS.gcra_reserve.prepare_invoke();
        inv.key(self.keys.requests(limit))
            .arg(p.interval_us)
            .arg(p.burst)
            .arg(n);
        let [granted, now, tat, wait] = ints(OP, self.invoke(OP, &inv).await?)?;
        let now = unsigned(OP, now)?;
        if granted == 0 {
            return Ok(Decision::NotBefore {
                wait: Duration::from_micros(unsigned(OP, wait)?),
                server_us: now,
            });
        }
        let left = (now + p.burst * p.interval_us).saturating_sub(unsigned(OP, tat)?);
        Ok(Decision::Granted {
            n,
            remaining: u32::try_from(left / p.interval_us).unwrap_or(u32::MAX),
            server_us: now,
        })
    }

    /// Leases up to `want` (≥ 1) requests of `limit` for local use (bound on
    /// [`Lease`]). The lease is charged to the shared limit like reservations.
    pub async fn lease(
        &self,
        limit: &LimitKey,
        rate: Rate,
        want: u32,
    ) -> Result<Lease, StoreError> {
        const OP: &str = "lease";
        let p = match rate
            .params()
            .and_then(|p| count("want", want, u32::MAX).map(|_| p))
        {
            Ok(p) => p,
            Err(e) => return self.refuse(e),
        };
        let mut inv = SCRIPTS.lease.prepare_invoke();
        inv.key(self.keys.requests(limit))
            .arg(p.interval_us)
            .arg(p.burst)
            .arg(want)
            .arg(LEASE_DIVISOR);
        let [granted, now, _tat, wait, expires] = ints(OP, self.invoke(OP, &inv).await?)?;
        let now = unsigned(OP, now)?;
        let expires_us = unsigned(OP, expires)?;
        Ok(Lease {
            requests: u32::try_from(granted).map_err(|_| StoreError::reply(OP, "count"))?,
            valid_for: Duration::from_micros(expires_us.saturating_sub(now)),
            retry_in: Duration::from_micros(unsigned(OP, wait)?),
            server_us: now,
            expires_us,
        })
    }

    /// Gives `unused` (≤ `lease.requests`) requests of a lease back to `limit`, while
    /// the lease is still valid on the server's clock.
    pub async fn release_lease(
        &self,
        limit: &LimitKey,
        rate: Rate,
        lease: &Lease,
        unused: u32,
    ) -> Result<Released, StoreError> {
        const OP: &str = "release_lease";
        let p = match rate.params() {
            Ok(p) if unused <= lease.requests => p,
            Ok(_) => return self.refuse(Invalid::OutOfRange { field: "unused" }),
            Err(e) => return self.refuse(e),
        };
        let mut inv = SCRIPTS.release_lease.prepare_invoke();
        inv.key(self.keys.requests(limit))
            .arg(p.interval_us)
            .arg(unused)
            .arg(lease.expires_us);
        let [refunded, now, _tat] = ints(OP, self.invoke(OP, &inv).await?)?;
        Ok(Released {
            refunded: u32::try_from(refunded).map_err(|_| StoreError::reply(OP, "count"))?,
            server_us: unsigned(OP, now)?,
        })
    }

    /// Reserves an `estimate` of tokens (`1..=burst`) from `limit`'s bucket, or says
    /// how long until the bucket holds them (a debt from an overrun first).
    pub async fn reserve_tokens(
        &self,
        limit: &LimitKey,
        rate: TokenRate,
        estimate: u32,
    ) -> Result<Decision, StoreError> {
        const OP: &str = "reserve_tokens";
        let p = match rate
            .params()
            .and_then(|p| count("estimate", estimate, rate.burst).map(|_| p))
        {
            Ok(p) => p,
            Err(e) => return self.refuse(e),
        };
        let mut inv = SCRIPTS.tokens_reserve.prepare_invoke();
        inv.key(self.keys.tokens(limit))
            .arg(p.rate)
            .arg(p.cap)
            .arg(i64::from(estimate) * UNIT);
        let [granted, now, level, wait] = ints(OP, self.invoke(OP, &inv).await?)?;
        let now = unsigned(OP, now)?;
        if granted == 0 {
            return Ok(Decision::NotBefore {
                wait: Duration::from_micros(unsigned(OP, wait)?),
                server_us: now,
            });
        }
        Ok(Decision::Granted {
            n: estimate,
            remaining: u32::try_from(level.div_euclid(UNIT)).unwrap_or(0),
            server_us: now,
        })
    }

    /// Settles a token reservation once the actual usage is known: gives back
    /// `reserved − actual` or charges the overrun (see [`Reconciled`]).
    pub async fn reconcile_tokens(
        &self,
        limit: &LimitKey,
        rate: TokenRate,
        reserved: u32,
        actual: u64,
    ) -> Result<Reconciled, StoreError> {
        const OP: &str = "reconcile_tokens";
        let p = match rate.params() {
            Ok(p) if reserved <= rate.burst => p,
            Ok(_) => return self.refuse(Invalid::OutOfRange { field: "reserved" }),
            Err(e) => return self.refuse(e),
        };
        let actual = i64::try_from(actual).unwrap_or(i64::MAX);
        let difference = i64::from(reserved).saturating_sub(actual);
        let mut inv = SCRIPTS.tokens_reconcile.prepare_invoke();
        inv.key(self.keys.tokens(limit))
            .arg(p.rate)
            .arg(p.cap)
            .arg(clamped_delta(difference, rate.burst));
        let [now, level] = ints(OP, self.invoke(OP, &inv).await?)?;
        Ok(Reconciled {
            difference,
            balance: level.div_euclid(UNIT),
            server_us: unsigned(OP, now)?,
        })
    }
}

/// `reserved − actual` in units, clamped to `[-2·burst, burst]` tokens: the bucket
/// is clamped to `[-cap, cap]` after adding it, so the clamp changes nothing and
/// keeps the script's arithmetic below 2^53.
pub fn clamped_delta(difference: i64, burst: u32) -> i64 {
    let burst = i64::from(burst);
    difference.clamp(-2 * burst, burst) * UNIT
}

fn count(field: &'static str, n: u32, max: u32) -> Result<(), Invalid> {
    if n == 0 || n > max {
        return Err(Invalid::OutOfRange { field });
    }
    Ok(())
}
