//! A token bucket refilled continuously: `limit` per minute, holding at most `burst`.
//!
//! Kept as the instant the bucket is full again (GCRA), in integer nanoseconds, so a
//! bucket is exact and costs no float: the debt `full_at − now` times the limit is the
//! missing tokens times one minute.

use core::time::Duration;

use steadfast_core::time::Timestamp;

use crate::wire::headers::WindowState;

const MINUTE: u128 = 60_000_000_000;

/// One key's bucket for one quantity (requests, or tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    limit: u64,
    burst: u64,
    /// When the bucket is full again (ns since the upstream's start).
    full_at: u64,
}

impl Bucket {
    /// A full bucket of `burst` (at least 1, at most `limit`) refilled at `limit` per
    /// minute.
    pub fn new(limit: u64, burst: u64) -> Bucket {
        let limit = limit.max(1);
        Bucket {
            limit,
            burst: burst.clamp(1, limit),
            full_at: 0,
        }
    }

    fn debt(&self, now: Timestamp) -> u128 {
        u128::from(self.full_at.saturating_sub(now.as_nanos()))
    }

    /// Whether `n` more fit now, and if not, how long until they do.
    pub fn check(&self, now: Timestamp, n: u64) -> Result<(), Duration> {
        let limit = u128::from(self.limit);
        let used = self.debt(now).saturating_mul(limit);
        let want = used.saturating_add(u128::from(n).saturating_mul(MINUTE));
        let room = u128::from(self.burst).saturating_mul(MINUTE);
        match want.checked_sub(room) {
            None | Some(0) => Ok(()),
            Some(over) => Err(nanos(over.div_ceil(limit))),
        }
    }

    /// Takes `n` (after a successful [`Bucket::check`]).
    pub fn take(&mut self, now: Timestamp, n: u64) {
        let cost = u128::from(n)
            .saturating_mul(MINUTE)
            .div_ceil(u128::from(self.limit));
        let from = self.full_at.max(now.as_nanos());
        self.full_at = from.saturating_add(u64::try_from(cost).unwrap_or(u64::MAX));
    }

    /// What the bucket's headers say now.
    pub fn state(&self, now: Timestamp) -> WindowState {
        let debt = self.debt(now);
        let missing = debt.saturating_mul(u128::from(self.limit));
        let level = u128::from(self.burst)
            .saturating_mul(MINUTE)
            .saturating_sub(missing);
        WindowState {
            limit: self.limit,
            remaining: u64::try_from(level / MINUTE).unwrap_or(u64::MAX),
            until_full: nanos(debt),
        }
    }
}

fn nanos(n: u128) -> Duration {
    Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX))
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use crate::wire::headers::openai_duration;

    fn at_ms(ms: u64) -> Timestamp {
        Timestamp::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn drained_at_60_per_minute_the_next_is_559_ms_away() {
        let mut b = Bucket::new(60, 60);
        for _ in 0..60 {
            assert_eq!(b.check(Timestamp::ZERO, 1), Ok(()));
            b.take(Timestamp::ZERO, 1);
        }
        let now = Timestamp::from_nanos(441_500_000);
        let wait = b.check(now, 1).unwrap_err();
        assert_eq!(wait, Duration::from_micros(558_500));
        let s = b.state(now);
        assert_eq!(s.remaining, 0);
        assert_eq!(openai_duration(s.until_full), "59.558s");
        assert_eq!(b.check(now + wait, 1), Ok(()));
    }

    #[test]
    fn refills_continuously_up_to_the_burst() {
        let mut b = Bucket::new(60, 2);
        b.take(at_ms(0), 1);
        assert_eq!(b.state(at_ms(0)).remaining, 1);
        b.take(at_ms(0), 1);
        assert_eq!(b.state(at_ms(0)).until_full, Duration::from_secs(2));
        assert_eq!(b.check(at_ms(500), 1), Err(Duration::from_millis(500)));
        assert_eq!(b.state(at_ms(1000)).remaining, 1);
        assert_eq!(b.state(at_ms(9000)).remaining, 2);
        assert_eq!(b.state(at_ms(9000)).until_full, Duration::ZERO);
        // More than the burst never fits; the wait says when it would.
        assert!(Bucket::new(60, 2).check(Timestamp::ZERO, 3).is_err());
    }
}
