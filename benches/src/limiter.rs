//! Rate limiting: one check, allowed and rejected.
//!
//! Steadfast: [`Limiter::acquire`] (admits and charges, like governor's `check`) and
//! [`Limiter::check`] (answers without charging: governor has no such call).
//! governor: `RateLimiter::direct` with its default clock (quanta) and with its
//! `FakeRelativeClock`.
//!
//! - *allowed*: a limit far above the call rate (steadfast: 10^6 per second with
//!   `now` advancing 10 µs per call; governor: `u32::MAX` per second);
//! - *rejected*: one request per minute, already spent; every call is denied and the
//!   answer carries the instant it would be admitted.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock, FakeRelativeClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use steadfast_core::limiter::{Admit, Limiter, LimiterConfig};
use steadfast_core::time::Timestamp;

use crate::{Case, Group, STEADFAST, Target, Visitor, Workload};

/// governor with its default clock: the peer the targets name.
pub const GOVERNOR: &str = "governor";

/// An admitted call.
pub const ALLOWED: Group = Group {
    id: "limiter_allowed",
    label: "rate limit: acquire, allowed",
    per_iteration: 1,
    target: Target::Peer {
        ratio: 0.5,
        ns: 3.0,
        against: Some(GOVERNOR),
    },
};

/// A denied call.
pub const REJECTED: Group = Group {
    id: "limiter_rejected",
    label: "rate limit: acquire, rejected (with retry instant)",
    per_iteration: 1,
    target: Target::Peer {
        ratio: 0.5,
        ns: 3.0,
        against: Some(GOVERNOR),
    },
};

/// Steadfast's read-only check.
pub const CHECK: Group = Group {
    id: "limiter_check",
    label: "rate limit: check only (no charge), allowed",
    per_iteration: 1,
    target: Target::Absolute { ns: 3.0 },
};

/// 100 000 calls a second against a limit of 10^6: always admitted.
const STEP_NS: u64 = 10_000;

/// The limiter config of the allowed case: 10^6 requests per second.
pub fn generous() -> LimiterConfig {
    let mut config = LimiterConfig::default();
    config.requests = Some(1_000_000);
    config.period = Duration::from_secs(1);
    config
}

/// The limiter config of the rejected case: one request per minute.
pub fn one_per_minute() -> LimiterConfig {
    let mut config = LimiterConfig::default();
    config.requests = Some(1);
    config.period = Duration::from_secs(60);
    config
}

/// Steadfast's limiter.
#[derive(Debug)]
pub struct Steadfast<const CHARGE: bool> {
    limiter: Limiter,
    now: u64,
    step: u64,
}

fn admit_code(a: Admit) -> u64 {
    match a {
        Admit::Go => 0,
        Admit::NotBefore(t) => t.as_nanos(),
        Admit::Busy => 1,
        Admit::TooLarge => 2,
    }
}

impl<const CHARGE: bool> Workload for Steadfast<CHARGE> {
    #[inline]
    fn step(&mut self) -> u64 {
        self.now += self.step;
        let now = Timestamp::from_nanos(self.now);
        let admit = if CHARGE {
            self.limiter.acquire(now, 0)
        } else {
            self.limiter.check(now, 0)
        };
        admit_code(admit)
    }
}

fn steadfast_allowed<const CHARGE: bool>() -> Steadfast<CHARGE> {
    Steadfast {
        limiter: Limiter::new(&generous()),
        now: 0,
        step: STEP_NS,
    }
}

fn steadfast_rejected() -> Steadfast<true> {
    let mut limiter = Limiter::new(&one_per_minute());
    let now = 1_000_000_000;
    let first = limiter.acquire(Timestamp::from_nanos(now), 0);
    debug_assert_eq!(first, Admit::Go);
    Steadfast {
        limiter,
        now,
        // Time creeps on (1 ns per call) but never reaches the minute.
        step: 1,
    }
}

fn quota(allowed: bool) -> Quota {
    if allowed {
        Quota::per_second(NonZeroU32::MAX)
    } else {
        Quota::per_minute(NonZeroU32::MIN)
    }
}

/// A governor limiter. The fake clock is never advanced: the allowed quota's burst
/// outlasts any sample, and the rejected one must stay rejected.
#[derive(Debug)]
pub struct GovernorWorkload<C: Clock> {
    limiter: GovernorLimiter<C>,
}

/// A direct (un-keyed) in-memory governor limiter on clock `C`.
pub type GovernorLimiter<C> =
    RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// governor with its default clock and the allowed quota (for the size table).
pub fn governor_limiter() -> GovernorLimiter<DefaultClock> {
    RateLimiter::direct_with_clock(quota(true), DefaultClock::default())
}

/// governor with its fake clock and the allowed quota (for the size table).
pub fn governor_fake_limiter() -> GovernorLimiter<FakeRelativeClock> {
    RateLimiter::direct_with_clock(quota(true), FakeRelativeClock::default())
}

impl<C: Clock> Workload for GovernorWorkload<C> {
    #[inline]
    fn step(&mut self) -> u64 {
        match self.limiter.check() {
            Ok(()) => 0,
            Err(not_until) => {
                // The denial carries its instant; keep it observable.
                std::hint::black_box(not_until);
                1
            }
        }
    }
}

fn governor_with<C: Clock>(allowed: bool, clock: C) -> GovernorWorkload<C> {
    let limiter = RateLimiter::direct_with_clock(quota(allowed), clock);
    if !allowed {
        let _ = limiter.check();
    }
    GovernorWorkload { limiter }
}

fn governor(allowed: bool) -> GovernorWorkload<DefaultClock> {
    governor_with(allowed, DefaultClock::default())
}

fn governor_fake(allowed: bool) -> GovernorWorkload<FakeRelativeClock> {
    governor_with(allowed, FakeRelativeClock::default())
}

/// Hands the limiter workloads to `v`.
pub fn visit<V: Visitor>(v: &mut V) {
    let allowed = |name| Case {
        group: ALLOWED.id,
        name,
    };
    v.visit(allowed(STEADFAST), steadfast_allowed::<true>);
    v.visit(allowed(GOVERNOR), || governor(true));
    v.visit(allowed("governor_fake_clock"), || governor_fake(true));

    let rejected = |name| Case {
        group: REJECTED.id,
        name,
    };
    v.visit(rejected(STEADFAST), steadfast_rejected);
    v.visit(rejected(GOVERNOR), || governor(false));
    v.visit(rejected("governor_fake_clock"), || governor_fake(false));

    v.visit(
        Case {
            group: CHECK.id,
            name: STEADFAST,
        },
        steadfast_allowed::<false>,
    );
}
