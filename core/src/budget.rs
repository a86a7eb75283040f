//! The retry budget shared by all calls to one endpoint.
//!
//! A token bucket of retries: every success deposits `ratio` of a retry, every retry
//! withdraws a whole one. When the upstream is healthy the budget fills and retries of
//! the occasional failure pass; during an outage nothing succeeds, the budget drains,
//! and retries stop multiplying the load on a struggling server. Two refinements:
//!
//! - **Deposits expire** after `ttl`, so a burst of successes long ago cannot fund a
//!   storm of retries now. Time is cut into [`SLICES`] slices of `ttl / SLICES`; a
//!   deposit lives until its slice leaves the window, i.e. it expires between
//!   `0.9 × ttl` and `ttl` after it was made. A retry spends the oldest deposits first,
//!   so expiry only ever removes what nobody used.
//! - **A floor** of `min_per_sec` retries per second is always allowed, so a quiet
//!   endpoint (few successes to fund anything) can still retry. The floor is used only
//!   when the deposits cannot pay a whole retry. It is a sliding window, not a spacing:
//!   any half-open one-second span `[t, t + 1 s)` holds at most `min_per_sec` floor
//!   retries, and they may come at once. So a lone call whose jittered backoffs put its
//!   retries milliseconds apart still gets every attempt it was configured for, while an
//!   outage's retries stay capped at `min_per_sec` a second. The window remembers the
//!   last [`FLOOR_BURST`] floor retries; above that many per second, the span is cut to
//!   `FLOOR_BURST / min_per_sec` seconds holding at most `FLOOR_BURST` each (a second
//!   then holds at most `min_per_sec` rounded up to a multiple of `FLOOR_BURST`).
//!
//! Amounts are integers in millionths of a retry, so ratios are exact: `0.1` funds one
//! retry per ten successes, `0.2` one per five. A ratio that is not a whole number of
//! millionths rounds down (`1/3` becomes 333 333 millionths: four successes fund the
//! first retry, not three), so the budget never grants more than the ratio promises.
//!
//! Memory is fixed (one array of slices), nothing allocates, and a `now` earlier than
//! one already seen is treated as that later instant: time never runs backwards, so
//! nothing is refunded and nothing panics.

use core::time::Duration;

use crate::config::{nonzero, within};
use crate::error::ConfigError;
use crate::time::{Timestamp, nanos_of};

/// How many time slices the deposit window `ttl` is cut into.
pub const SLICES: usize = 10;

/// The most floor retries granted at one instant (the floor's window remembers this
/// many grants).
pub const FLOOR_BURST: usize = 32;
const FLOOR_BURST_U64: u64 = FLOOR_BURST as u64;
const SLICES_U64: u64 = SLICES as u64;

/// One retry, in the budget's fixed-point unit (millionths of a retry).
const UNIT: u64 = 1_000_000;
const NANOS_PER_SEC: u64 = 1_000_000_000;
/// The largest allowed `ratio`.
const MAX_RATIO: f64 = 1000.0;

/// Retry budget parameters.
///
/// Default: `enabled` true, `ratio` 0.2, `min_per_sec` 10, `ttl` 10 s — the values of
/// Finagle's `RetryBudget` and tower's `TpsBudget`: retries may add at most 20 % to
/// the load, plus ten retries a second for endpoints too quiet to earn any.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
#[non_exhaustive]
pub struct BudgetConfig {
    /// Whether the budget limits retries at all; `false` allows every retry.
    pub enabled: bool,
    /// Retries funded per success, in `[0, 1000]` (0.2: one retry per five successes).
    /// Resolution one millionth, rounded down.
    pub ratio: f64,
    /// Retries allowed in any one second even when the deposits are spent (the floor),
    /// at once or spread out; 0 disables the floor.
    pub min_per_sec: u32,
    /// How long a deposit lasts. Above zero.
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub ttl: Duration,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            enabled: true,
            ratio: 0.2,
            min_per_sec: 10,
            ttl: Duration::from_secs(10),
        }
    }
}

impl BudgetConfig {
    /// Checks the parameters: `ratio` finite and in `[0, 1000]`, `ttl` above zero.
    /// Checked even when the budget is disabled.
    pub fn validate(&self) -> Result<(), ConfigError> {
        within("budget.ratio", self.ratio, 0.0, MAX_RATIO)?;
        nonzero(self.ttl.is_zero(), "budget.ttl")
    }
}

/// Deposits made during one time slice, net of what retries took from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Slice {
    /// Which slice of time (`now / slice_ns`) these units belong to.
    index: u64,
    /// Millionths of a retry still available.
    units: u64,
}

/// A token bucket of retries shared by all calls to one endpoint.
///
/// [`RetryBudget::new`] does not validate: a ratio outside `[0, 1000]` or NaN is
/// clamped into it (NaN as 0), and a zero `ttl` makes deposits last one nanosecond
/// slice, so no config can make it panic.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryBudget {
    config: BudgetConfig,
    /// Millionths of a retry each success deposits.
    per_success: u64,
    /// Width of one slice in nanoseconds; at least 1.
    slice_ns: u64,
    /// Ring of deposit slices, slice `i` at position `i % SLICES`.
    slices: [Slice; SLICES],
    /// The floor's sliding window.
    floor: Floor,
    /// The latest `now` seen.
    latest: Timestamp,
    /// The slice `latest` falls in, and the first instant (ns) of the slice after it:
    /// a cache that spares the division while time stays in one slice.
    current: u64,
    current_end: u64,
    /// The units of the slices live in `current` (what `deposits(current)` sums),
    /// kept up to date so that the hot paths need not walk the ring.
    live: u64,
}

impl RetryBudget {
    /// An empty budget with `config` (no deposits; the floor is available at once).
    pub fn new(config: BudgetConfig) -> RetryBudget {
        let slice_ns = nanos_of(config.ttl)
            .checked_div(SLICES_U64)
            .unwrap_or(0)
            .max(1);
        RetryBudget {
            config,
            per_success: units_of(config.ratio),
            slice_ns,
            slices: [Slice::default(); SLICES],
            floor: Floor::new(config.min_per_sec),
            latest: Timestamp::ZERO,
            current: 0,
            current_end: slice_ns,
            live: 0,
        }
    }

    /// The configuration this budget runs on.
    pub fn config(&self) -> &BudgetConfig {
        &self.config
    }

    /// A success deposits `ratio` of a retry, valid for `ttl`.
    pub fn on_success(&mut self, now: Timestamp) {
        if !self.config.enabled {
            return;
        }
        let (_, current) = self.advance(now);
        let per_success = self.per_success;
        let Some(slice) = self.slices.get_mut(position(current)) else {
            return;
        };
        if slice.index != current {
            // The slot last held slice `current - k·SLICES`, long expired (and so
            // already out of `live`).
            *slice = Slice {
                index: current,
                units: 0,
            };
        }
        let before = slice.units;
        slice.units = before.saturating_add(per_success);
        self.live = self.live.saturating_add(slice.units.wrapping_sub(before));
    }

    /// A retry asks for one whole retry's worth; `true` grants it and takes it from the
    /// budget, `false` means the budget is spent (nothing changes then). Deposits pay
    /// first, oldest first; the floor pays only when they cannot.
    pub fn try_withdraw(&mut self, now: Timestamp) -> bool {
        if !self.config.enabled {
            return true;
        }
        let (now, current) = self.advance(now);
        if self.live >= UNIT {
            self.take_oldest(current, UNIT);
            return true;
        }
        self.floor.try_take(now)
    }

    /// Whether [`RetryBudget::try_withdraw`] would grant a retry at `now`, without
    /// taking it.
    pub fn can_withdraw(&self, now: Timestamp) -> bool {
        if !self.config.enabled {
            return true;
        }
        let now = now.max(self.latest);
        self.deposits_at(now) >= UNIT || self.floor_ready(now)
    }

    /// How many retries [`RetryBudget::try_withdraw`] would grant one after another at
    /// `now`: the whole retries the live deposits pay for, plus those the floor's
    /// window has room for. `u64::MAX` when the budget is disabled.
    pub fn balance(&self, now: Timestamp) -> u64 {
        if !self.config.enabled {
            return u64::MAX;
        }
        let now = now.max(self.latest);
        let whole = self.deposits_at(now) / UNIT;
        whole.saturating_add(self.floor.available(now))
    }

    /// The earliest instant, from `now` on, at which a retry would be granted if
    /// nothing else happened before it: `now` (or the latest instant already seen, if
    /// `now` is earlier) when one is available, else when the floor allows the next.
    /// `None` when only new successes can pay for a retry (no floor).
    pub fn available_at(&self, now: Timestamp) -> Option<Timestamp> {
        let now = now.max(self.latest);
        if self.can_withdraw(now) {
            return Some(now);
        }
        // Deposits only shrink with time, so the floor is the only way back.
        self.floor.next_at()
    }

    /// Clamps `now` to the latest instant seen and moves the current slice to it,
    /// dropping from `live` what expired; returns the clamped `now` and its slice.
    fn advance(&mut self, now: Timestamp) -> (Timestamp, u64) {
        self.latest = self.latest.max(now);
        let now = self.latest;
        if now.as_nanos() >= self.current_end {
            let current = self.slice_of(now);
            self.expire(self.current, current);
            self.current = current;
            self.current_end = current.saturating_add(1).saturating_mul(self.slice_ns);
        }
        (now, self.current)
    }

    /// Drops from `live` the slices live in slice `old` but not in `new` (`new ≥ old`):
    /// those numbered `old − 9 ..= new − 10`.
    fn expire(&mut self, old: u64, new: u64) {
        if new.saturating_sub(old) >= SLICES_U64 {
            self.live = 0;
            return;
        }
        let Some(last) = new.checked_sub(SLICES_U64) else {
            return;
        };
        let first = old.saturating_sub(SLICES_U64 - 1);
        for index in first..=last {
            if let Some(slice) = self.slices.get(position(index)) {
                if slice.index == index {
                    self.live = self.live.saturating_sub(slice.units);
                }
            }
        }
    }

    /// The live deposits at `now` (already clamped), without changing anything.
    fn deposits_at(&self, now: Timestamp) -> u64 {
        if now.as_nanos() < self.current_end {
            self.live
        } else {
            self.deposits(self.slice_of(now))
        }
    }

    fn slice_of(&self, now: Timestamp) -> u64 {
        now.as_nanos().checked_div(self.slice_ns).unwrap_or(0)
    }

    fn floor_ready(&self, now: Timestamp) -> bool {
        self.floor.next_at().is_some_and(|next| now >= next)
    }

    /// Whether a slice still counts when the current slice is `current`.
    fn is_live(slice: &Slice, current: u64) -> bool {
        slice.index <= current && current.saturating_sub(slice.index) < SLICES_U64
    }

    /// Millionths of a retry in the live slices.
    fn deposits(&self, current: u64) -> u64 {
        self.slices
            .iter()
            .filter(|s| Self::is_live(s, current))
            .fold(0u64, |sum, s| sum.saturating_add(s.units))
    }

    /// Takes `amount` units from the live slices, oldest first. The caller has checked
    /// that they hold at least `amount`.
    fn take_oldest(&mut self, current: u64, mut amount: u64) {
        for age in (0..SLICES_U64).rev() {
            let Some(index) = current.checked_sub(age) else {
                continue;
            };
            let Some(slice) = self.slices.get_mut(position(index)) else {
                continue;
            };
            if slice.index != index {
                continue;
            }
            let take = slice.units.min(amount);
            slice.units = slice.units.saturating_sub(take);
            self.live = self.live.saturating_sub(take);
            amount = amount.saturating_sub(take);
            if amount == 0 {
                return;
            }
        }
    }
}

/// The floor's sliding window: the instants of the last `size` floor retries, where
/// `size = min(min_per_sec, FLOOR_BURST)`; a retry is granted when the oldest of them is
/// at least `span` old (`span` = 1 s, or `size / min_per_sec` s above the burst).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Floor {
    /// Grant instants in nanoseconds, a ring of `size` entries; `oldest` is the next
    /// to be replaced.
    grants: [u64; FLOOR_BURST],
    size: u64,
    /// How many of the `size` entries hold a grant (the rest are free).
    used: u64,
    oldest: u64,
    span_ns: u64,
    /// Set once a grant's window would end past the end of time: nothing more is
    /// granted.
    spent: bool,
}

impl Floor {
    fn new(min_per_sec: u32) -> Floor {
        let per_sec = u64::from(min_per_sec);
        let size = per_sec.min(FLOOR_BURST_U64);
        let span_ns = if per_sec > FLOOR_BURST_U64 {
            (NANOS_PER_SEC.saturating_mul(size)).div_ceil(per_sec)
        } else {
            NANOS_PER_SEC
        };
        Floor {
            grants: [0; FLOOR_BURST],
            size,
            used: 0,
            oldest: 0,
            span_ns,
            spent: false,
        }
    }

    /// The earliest instant the floor grants a retry; `None` when it never will (no
    /// floor, or the end of time was reached).
    fn next_at(&self) -> Option<Timestamp> {
        if self.size == 0 || self.spent {
            return None;
        }
        if self.used < self.size {
            return Some(Timestamp::ZERO);
        }
        let oldest = self.grants.get(ring_index(self.oldest)).copied()?;
        oldest.checked_add(self.span_ns).map(Timestamp::from_nanos)
    }

    /// How many retries the floor grants one after another at `now`.
    fn available(&self, now: Timestamp) -> u64 {
        if self.size == 0 || self.spent {
            return 0;
        }
        let free = self.size.saturating_sub(self.used);
        // While the ring is filling, the oldest grant sits `free` places after the
        // next slot to write.
        let first = self.oldest.wrapping_add(free);
        let aged = (0..self.used)
            .map(|i| first.wrapping_add(i).checked_rem(self.size).unwrap_or(0))
            .filter_map(|i| self.grants.get(ring_index(i)))
            .take_while(|g| {
                g.checked_add(self.span_ns)
                    .is_some_and(|end| now.as_nanos() >= end)
            })
            .count();
        free.saturating_add(aged as u64)
    }

    fn try_take(&mut self, now: Timestamp) -> bool {
        if self.next_at().is_none_or(|next| now < next) {
            return false;
        }
        let ns = now.as_nanos();
        self.spent = ns.checked_add(self.span_ns).is_none();
        if let Some(slot) = self.grants.get_mut(ring_index(self.oldest)) {
            *slot = ns;
        }
        self.oldest = self
            .oldest
            .wrapping_add(1)
            .checked_rem(self.size)
            .unwrap_or(0);
        self.used = self.used.saturating_add(1).min(self.size);
        true
    }
}

/// A ring position below [`FLOOR_BURST`], as an index.
fn ring_index(i: u64) -> usize {
    // Below FLOOR_BURST, so the cast is exact.
    i.min(FLOOR_BURST_U64.saturating_sub(1)) as usize
}

/// The ring position of slice `index`.
fn position(index: u64) -> usize {
    // The remainder is below SLICES, so the cast is exact.
    index.checked_rem(SLICES_U64).unwrap_or(0) as usize
}

/// `ratio` in millionths of a retry, rounded down, except that a value within a
/// millionth of a millionth of a whole count is taken as that count (so `0.7`, whose
/// binary value is a hair below 0.7, still gives exactly 700 000).
fn units_of(ratio: f64) -> u64 {
    let ratio = if ratio > 0.0 {
        ratio.min(MAX_RATIO)
    } else {
        0.0
    };
    let exact = ratio * UNIT as f64;
    let nearest = (exact + 0.5) as u64;
    let gap = nearest as f64 - exact;
    if (-1e-6..=1e-6).contains(&gap) {
        nearest
    } else {
        exact as u64
    }
}

#[cfg(test)]
mod tests;
