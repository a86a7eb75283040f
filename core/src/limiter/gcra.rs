//! One GCRA dimension with an exact rational rate (see the limiter's documentation).

use crate::time::Timestamp;

/// Limits and the period above this are clamped to it (2^62: 4.6e18 units, 146 years),
/// which bounds every scaled quantity on the hot path below 2^127, see [`TAT_CAP`].
pub(super) const RANGE_CAP: u64 = 1 << 62;

/// `tat` never exceeds this. With the clamped ranges, `now·rate + horizon < 2^127` and
/// a cost is `< 2^126`, so the sums on the hot path fit a `u128` without saturating. A
/// `tat` at the cap is later than any scaled instant: the dimension admits nothing,
/// exactly as an uncapped one would.
const TAT_CAP: u128 = 1 << 127;

/// One GCRA dimension in scaled time: instant `t` (ns) is `t·rate + shift`, one unit of
/// cost is `unit` (the period in ns), so the emission interval `unit / rate` is exact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Gcra {
    pub(super) limit: u64,
    /// `limit + 1 − burst`, at least 1.
    pub(super) rate: u64,
    /// The period in nanoseconds.
    pub(super) unit: u64,
    /// `burst × unit`.
    pub(super) tolerance: u128,
    /// `shift + tolerance`, where `shift = limit × unit` puts the epoch a whole period
    /// after the start of the scaled clock (a fresh limiter has been idle a period).
    pub(super) horizon: u128,
    pub(super) tat: u128,
}

impl Gcra {
    pub(super) fn new(limit: u64, burst: f64, period_ns: u64) -> Gcra {
        let limit = limit.min(RANGE_CAP);
        let unit = period_ns.clamp(1, RANGE_CAP);
        // Float-to-int `as` saturates (NaN gives 0), so any burst maps into [1, limit].
        let burst = ((limit as f64) * burst.clamp(0.0, 1.0)) as u64;
        let burst = burst.max(1).min(limit);
        let tolerance = wide(burst, unit);
        Gcra {
            limit,
            rate: limit.saturating_sub(burst).saturating_add(1),
            unit,
            tolerance,
            horizon: wide(limit, unit).saturating_add(tolerance),
            tat: 0,
        }
    }

    /// `now·rate + horizon`: the latest `tat + cost` admitted at `now`.
    #[inline]
    pub(super) fn horizon_at(&self, now: Timestamp) -> u128 {
        // < 2^64·(2^62 + 1) + 2^125 < 2^127: cannot wrap.
        wide(now.as_nanos(), self.rate).wrapping_add(self.horizon)
    }

    /// `now` in scaled time.
    #[inline]
    pub(super) fn scaled(&self, now: Timestamp) -> u128 {
        self.horizon_at(now).wrapping_sub(self.tolerance)
    }

    #[inline]
    pub(super) fn cost(&self, units: u64) -> u128 {
        wide(units, self.unit)
    }

    #[inline]
    pub(super) fn admits(&self, now: Timestamp, units: u64) -> bool {
        // units ≤ limit ≤ 2^62 makes the cost < 2^124; tat ≤ 2^127: no wrap.
        units <= self.limit && self.tat.wrapping_add(self.cost(units)) <= self.horizon_at(now)
    }

    /// The first instant at which a call of `units` (at most `limit`) is admitted:
    /// at or before `now` when it is admitted now. It is admitted at `t` when
    /// `tat + cost ≤ t·rate + horizon`, that is when `need = tat + cost − horizon` is at
    /// most `t·rate`.
    #[inline]
    pub(super) fn first_admitted(&self, now: Timestamp, units: u64) -> Timestamp {
        // units ≤ limit ≤ 2^62 makes the cost < 2^124; tat ≤ 2^127: no wrap.
        let need = self
            .tat
            .wrapping_add(self.cost(units))
            .saturating_sub(self.horizon);
        if need <= wide(now.as_nanos(), self.rate) {
            return now;
        }
        self.instant_of(need)
    }

    /// `ceil(need / rate)` as an instant.
    pub(super) fn instant_of(&self, need: u128) -> Timestamp {
        // Nearly always `need` fits 64 bits: one hardware division instead of the
        // 128-bit routine.
        if let Ok(need) = u64::try_from(need) {
            return Timestamp::from_nanos(need.div_ceil(self.rate.max(1)));
        }
        let rate = u128::from(self.rate);
        let (Some(whole), Some(rest)) = (need.checked_div(rate), need.checked_rem(rate)) else {
            return Timestamp::MAX;
        };
        let ns = if rest == 0 {
            whole
        } else {
            whole.saturating_add(1)
        };
        Timestamp::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Charges an admitted call of `units` at `now`; returns the lead the timeline had
    /// over `now`.
    #[inline]
    pub(super) fn charge(&mut self, now: Timestamp, units: u64) -> u128 {
        let now = self.scaled(now);
        let lead = self.tat.saturating_sub(now);
        // Admitted: `tat + cost ≤ now + tolerance`, and `cost ≤ limit × unit`, so the
        // new tat is at most `now + limit × unit < 2^127`.
        self.tat = self.tat.max(now).wrapping_add(self.cost(units));
        lead
    }

    /// Charges usage reported beyond the estimate, admitted or not; returns the lead.
    pub(super) fn charge_excess(&mut self, now: Timestamp, units: u64) -> u128 {
        let now = self.scaled(now);
        let lead = self.tat.saturating_sub(now);
        self.tat = self
            .tat
            .max(now)
            .saturating_add(self.cost(units))
            .min(TAT_CAP);
        lead
    }

    /// Leaves at most `remaining` units available at `now`; true if that tightened.
    pub(super) fn tighten(&mut self, now: Timestamp, remaining: u64) -> bool {
        let floor = self.horizon_at(now).saturating_sub(self.cost(remaining));
        let tightened = floor > self.tat;
        self.tat = self.tat.max(floor);
        tightened
    }
}

/// `a × b` without overflow: both factors fit in 64 bits, so the product fits in 128.
#[inline]
pub(super) fn wide(a: u64, b: u64) -> u128 {
    u128::from(a).wrapping_mul(u128::from(b))
}
