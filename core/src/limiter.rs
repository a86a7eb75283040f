//! Client-side rate limiter for one endpoint or key: requests per period, tokens per
//! period (RPM / TPM with the default 60 s period) and a maximum of calls in flight.
//!
//! # The guarantee
//!
//! Over **any** window `[t, t + period)` the limiter admits at most `requests` calls and
//! at most `tokens` tokens, for every sequence of inputs. A call's tokens are its
//! estimate, charged when it is admitted; a lower actual usage reported by
//! [`Limiter::on_finish`] replaces the estimate (the unused part may be given back, see
//! below); a higher one is charged as extra usage *at the instant it is reported*,
//! since the windows already past were admitted against the estimate and cannot be
//! re-decided. Extra usage is forced on the limiter, so a window may exceed the limit by
//! such a report, but never by an admission: every admission leaves every window that
//! contains it within the limits, counting all usage reported so far.
//!
//! # How: GCRA with an exact rational rate
//!
//! Each limited dimension (requests, tokens) is a generic cell rate algorithm with a
//! theoretical arrival time `tat`. With limit `L` per period `P` and a burst `B`
//! (`1 ≤ B ≤ L`, see [`LimiterConfig::burst`]), the sustained rate is `L + 1 − B` units
//! per period and the tolerance is `B` units, which bounds any window to
//! `B + (L + 1 − B) − 1 = L` units. A call costing `c` is admitted at `now` when
//! `c ≤ L` and `tat + c·e ≤ now + B·e`, with `e = P / (L + 1 − B)` the emission
//! interval; then `tat = max(tat, now) + c·e`.
//!
//! To keep `e` exact without a division, time is scaled by the rate: the state is kept
//! in units of `1 / (L + 1 − B)` nanoseconds (`u128`), where an instant is
//! `now_ns · (L + 1 − B)` and one unit of cost is `P` (in nanoseconds). The hot path is
//! two widening multiplications, additions and a comparison; a denial divides once to
//! find its exact instant: [`Admit::NotBefore`]`(t)` means the same call is denied at
//! `t − 1 ns` and admitted at `t` if nothing else happens in between. [`Limiter::acquire`]
//! remembers its last denial until an input changes the state, so callers polling a
//! limit they ran into get the same instant back without the division.
//!
//! So with `requests = 60`, `burst = 0` (one call) a call is admitted every second;
//! with the default `burst = 0.1` six are admitted at once and then one every
//! `60 s / 55`.
//!
//! # Large calls
//!
//! A call costing more than the burst (but not more than the limit) waits until the
//! timeline has been idle long enough for it, then goes: a fresh limiter has been idle
//! for a whole period, so it admits one call of up to the full limit at once. A call
//! costing more than the per-period limit can never be admitted without breaking the
//! guarantee (the server would refuse it as well), so it is denied with
//! [`Admit::TooLarge`] instead of waiting forever.
//!
//! # Corrections
//!
//! [`Limiter::on_finish`] releases the in-flight slot and corrects the token charge:
//! - *more than estimated*: the excess is charged now (it pushes later admissions back);
//! - *less than estimated*: the unused tokens are given back, but only as far as no
//!   later admission was made on the strength of them. GCRA forgets idle time beyond
//!   the tolerance, so when a later call was admitted with a lead of `x` (its `tat` was
//!   `x` ahead of its arrival), giving back more than `x` would let a window hold more
//!   than the limit. The finish does not say which call finished, so the limiter keeps
//!   the smallest lead of every charge made since the in-flight count was last zero,
//!   except the first one (every call still in flight was admitted at or after that
//!   first one, so only later charges can constrain its refund). A lone call in flight
//!   always gets its full refund; with overlapping calls the refund is conservative.
//!
//! # Server hints
//!
//! With [`LimiterConfig::follow_server`], [`Limiter::on_hints`] reads the rate-limit
//! windows a response reported: `remaining == n` tightens a dimension with a local limit
//! so that at most `n` units are available right now; it keeps refilling at its
//! configured rate. A hint never loosens the local state, and a hint that tightens it
//! also stops refunds to calls already in flight. A window's `reset` is the time until
//! the server's bucket is *full*, so it never blocks anything here; what the windows
//! teach about the server's own rate is kept per key by [`ServerLimits`].
//!
//! # Reserved slots
//!
//! A call that must wait may [`reserve`](Limiter::reserve) the instant it is first
//! admitted at: it is charged for that instant at once, and every later call comes
//! after it (admissions are handed out in order, so the any-window guarantee holds as
//! for calls admitted at those instants). Calls paced this way wait in arrival order
//! and never wake together to race for one slot.
//!
//! # Time
//!
//! The driver's `now` is clamped to the latest instant seen, so a clock stepping back
//! neither panics nor gives capacity back. All arithmetic saturates.

use core::time::Duration;

use crate::config::{nonzero, within};
use crate::error::ConfigError;
use crate::hints::{Hints, RateWindow};
use crate::time::{Timestamp, nanos_of};

mod gcra;
mod server;

use gcra::Gcra;
pub use server::ServerLimits;

/// Rate-limiter parameters for one endpoint or key.
///
/// Defaults: `requests: None`, `tokens: None` (unlimited), `period: 60s`,
/// `burst: 0.1`, `max_in_flight: None` (unlimited), `follow_server: true`. The default
/// limiter admits everything, except what the server's own hints forbid.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct LimiterConfig {
    /// Calls admitted per `period` (e.g. RPM); `None` is unlimited.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub requests: Option<u32>,
    /// Tokens charged per `period` (e.g. TPM); `None` is unlimited.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub tokens: Option<u64>,
    /// The window both limits apply to.
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub period: Duration,
    /// The share of each limit that may be spent at one instant, in `[0, 1]`: the burst
    /// is `floor(limit × burst)`, at least 1 unit and at most the limit. The rest of the
    /// limit is spread evenly over the period (the sustained rate is
    /// `limit + 1 − burst units` per period), so a bigger burst means a slower refill.
    pub burst: f64,
    /// Calls in flight at once (bulkhead); `None` is unlimited.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub max_in_flight: Option<u32>,
    /// Whether the server's rate-limit headers correct the local state.
    pub follow_server: bool,
}

impl Default for LimiterConfig {
    fn default() -> LimiterConfig {
        LimiterConfig {
            requests: None,
            tokens: None,
            period: Duration::from_secs(60),
            burst: 0.1,
            max_in_flight: None,
            follow_server: true,
        }
    }
}

impl LimiterConfig {
    /// The token burst: `⌊tokens × burst⌋`, at least 1 and at most the limit
    /// (`None` without a token limit).
    pub fn token_burst(&self) -> Option<u64> {
        let tokens = self.tokens?;
        let burst = (tokens as f64 * self.burst) as u64;
        Some(burst.clamp(1, tokens))
    }

    /// Checks the parameters; the error names the first bad field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        nonzero(self.requests == Some(0), "limiter.requests")?;
        nonzero(self.tokens == Some(0), "limiter.tokens")?;
        nonzero(self.period.is_zero(), "limiter.period")?;
        within("limiter.burst", self.burst, 0.0, 1.0)?;
        nonzero(self.max_in_flight == Some(0), "limiter.max_in_flight")
    }
}

/// The limiter's answer for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use]
pub enum Admit {
    /// Admitted (and, from [`Limiter::acquire`], charged and counted in flight).
    Go,
    /// Rate-limited: the same call is admitted at exactly this instant (and not a
    /// nanosecond earlier) if nothing else changes.
    NotBefore(Timestamp),
    /// The maximum of calls in flight is reached. No instant is known: try again after
    /// a call finishes.
    Busy,
    /// The call's token estimate exceeds the per-period token limit: it can never be
    /// admitted without breaking the limit, so it is refused rather than left to wait
    /// forever. The caller should fail the call (or shrink it).
    TooLarge,
}

impl Admit {
    /// The instant of a `NotBefore`.
    pub fn not_before(self) -> Option<Timestamp> {
        match self {
            Admit::NotBefore(at) => Some(at),
            _ => None,
        }
    }
}

/// The rate limiter of one endpoint or key. Sans-IO: it never blocks, never reads a
/// clock and allocates nothing.
///
/// The driver asks [`acquire`](Limiter::acquire) before each attempt, and reports the
/// end of every admitted attempt with [`on_finish`](Limiter::on_finish) and the
/// response's headers with [`on_hints`](Limiter::on_hints).
#[derive(Debug, Clone)]
pub struct Limiter {
    requests: Option<Gcra>,
    tokens: Option<Gcra>,
    /// `u32::MAX` when unlimited.
    max_in_flight: u32,
    in_flight: u32,
    /// Sum of the estimates of the calls in flight: a refund never exceeds it.
    in_flight_tokens: u64,
    /// How far the token `tat` may be lowered by refunds: the smallest lead of the
    /// token charges since the in-flight count was last zero, except the first one.
    /// `u128::MAX` when there is none.
    refund_room: u128,
    /// The latest instant a call was admitted or reserved for: later calls come after.
    last_slot: Timestamp,
    latest: Timestamp,
    follow_server: bool,
    /// The last `NotBefore` answered by `acquire`, with what it was computed from.
    last_denial: Option<Denial>,
}

/// A remembered denial: a call of `tokens` is not admitted before `at`. Every input
/// that changes the state forgets it.
#[derive(Debug, Clone, Copy)]
struct Denial {
    tokens: u64,
    at: Timestamp,
}

/// Two limiters are equal when they answer alike: the remembered denial is a cache
/// and does not count.
impl PartialEq for Limiter {
    fn eq(&self, other: &Limiter) -> bool {
        self.requests == other.requests
            && self.tokens == other.tokens
            && self.max_in_flight == other.max_in_flight
            && self.in_flight == other.in_flight
            && self.in_flight_tokens == other.in_flight_tokens
            && self.refund_room == other.refund_room
            && self.last_slot == other.last_slot
            && self.latest == other.latest
            && self.follow_server == other.follow_server
    }
}

impl Eq for Limiter {}

impl Limiter {
    /// A limiter for `config`, as fresh as after a long idle time.
    ///
    /// `config` should have passed [`LimiterConfig::validate`]; if not, the values are
    /// used as safely as possible: a zero limit admits nothing (every call is
    /// [`Admit::TooLarge`]), a zero period counts as 1 ns, `max_in_flight = 0` is always
    /// [`Admit::Busy`], a burst outside `[0, 1]` is clamped. Limits above 2^62 units and
    /// periods above 2^62 ns (146 years) are clamped to those values.
    pub fn new(config: &LimiterConfig) -> Limiter {
        let period = nanos_of(config.period).max(1);
        Limiter {
            requests: config
                .requests
                .map(|limit| Gcra::new(u64::from(limit), config.burst, period)),
            tokens: config
                .tokens
                .map(|limit| Gcra::new(limit, config.burst, period)),
            max_in_flight: config.max_in_flight.unwrap_or(u32::MAX),
            in_flight: 0,
            in_flight_tokens: 0,
            refund_room: u128::MAX,
            last_slot: Timestamp::ZERO,
            latest: Timestamp::ZERO,
            last_denial: None,
            follow_server: config.follow_server,
        }
    }

    /// What [`acquire`](Limiter::acquire) would answer for a call estimated at `tokens`,
    /// without charging anything.
    #[inline]
    pub fn check(&self, now: Timestamp, tokens: u64) -> Admit {
        // `Ord::max`, not `Timestamp::max`: the derived one inlines across crates.
        let now = Ord::max(now, self.latest);
        if let Some(at) = self.remembered_denial(now, tokens) {
            return Admit::NotBefore(at);
        }
        if now >= self.last_slot && self.admits_now(now, tokens) {
            return Admit::Go;
        }
        self.denial(now, tokens)
    }

    /// Asks to start a call estimated at `tokens`. On [`Admit::Go`] the call is charged
    /// one request and `tokens` tokens and counts as in flight until
    /// [`on_finish`](Limiter::on_finish); any other answer changes nothing.
    ///
    /// A denial repeated before the state changed (callers polling a limit they ran
    /// into) answers the instant computed for the first, without computing it again.
    #[inline]
    pub fn acquire(&mut self, now: Timestamp, tokens: u64) -> Admit {
        let now = self.observe(now);
        if let Some(at) = self.remembered_denial(now, tokens) {
            return Admit::NotBefore(at);
        }
        if now >= self.last_slot && self.admits_now(now, tokens) {
            self.charge(now, tokens);
            return Admit::Go;
        }
        self.refuse(now, tokens)
    }

    /// Reserves the slot of a call estimated at `tokens` that [`check`](Limiter::check)
    /// answered `NotBefore(at)`: the call is charged for `at` (or the first instant after
    /// the slots already reserved, if later) and counts as in flight from now; later
    /// calls come after it. Returns the instant reserved. The caller should have seen
    /// `NotBefore` (a `Busy` or `TooLarge` call is not reserved for: nothing changes and
    /// `None` is returned).
    pub fn reserve(&mut self, now: Timestamp, at: Timestamp, tokens: u64) -> Option<Timestamp> {
        let now = self.observe(now);
        let at = match self.denial(at.max(now), tokens) {
            Admit::Go => at.max(now),
            Admit::NotBefore(slot) => slot,
            Admit::Busy | Admit::TooLarge => return None,
        };
        self.charge(at, tokens);
        Some(at)
    }

    /// The remembered denial's instant, if it answers a call of `tokens` at `now`:
    /// every input that changes the state (a charge, a finish, hints) forgets it, so
    /// a remembered denial still holds until its instant.
    #[inline]
    fn remembered_denial(&self, now: Timestamp, tokens: u64) -> Option<Timestamp> {
        self.last_denial
            .filter(|d| d.tokens == tokens && now < d.at)
            .map(|d| d.at)
    }

    /// `acquire`'s answer to a call `admits_now` refused, remembered for the next ask.
    #[inline(never)]
    fn refuse(&mut self, now: Timestamp, tokens: u64) -> Admit {
        let admit = self.denial(now, tokens);
        if let Admit::NotBefore(at) = admit {
            self.last_denial = Some(Denial { tokens, at });
        }
        admit
    }

    /// A call admitted with an estimate of `estimated` tokens ended. Releases its
    /// in-flight slot; `actual`, when the response reported it, corrects the token
    /// charge (see the module documentation for how far a refund goes).
    pub fn on_finish(&mut self, now: Timestamp, estimated: u64, actual: Option<u64>) {
        let now = self.observe(now);
        self.last_denial = None;
        if let (Some(gcra), Some(actual)) = (self.tokens.as_mut(), actual) {
            if actual > estimated {
                let lead = gcra.charge_excess(now, actual.saturating_sub(estimated));
                if self.in_flight > 0 {
                    self.refund_room = self.refund_room.min(lead);
                }
            } else if self.in_flight > 0 {
                let unused = estimated.min(self.in_flight_tokens).saturating_sub(actual);
                let refund = gcra.cost(unused).min(self.refund_room);
                gcra.tat = gcra.tat.saturating_sub(refund);
                if self.refund_room != u128::MAX {
                    self.refund_room = self.refund_room.saturating_sub(refund);
                }
            }
        }
        self.in_flight_tokens = self.in_flight_tokens.saturating_sub(estimated);
        self.in_flight = self.in_flight.saturating_sub(1);
        if self.in_flight == 0 {
            self.in_flight_tokens = 0;
            self.refund_room = u128::MAX;
        }
    }

    /// The rate-limit windows a response reported (ignored unless
    /// [`LimiterConfig::follow_server`]): a smaller `remaining` tightens the local state.
    pub fn on_hints(&mut self, now: Timestamp, hints: &Hints) {
        let now = self.observe(now);
        self.last_denial = None;
        if !self.follow_server {
            return;
        }
        self.apply_window(now, &hints.requests, false);
        self.apply_window(now, &hints.tokens, true);
    }

    /// Leaves nothing available at `now`: the next call waits for the limit's rate,
    /// and the burst is earned again from here (a shared limit that falls back to
    /// this limiter, while other processes still spend the same limit).
    pub fn drain(&mut self, now: Timestamp) {
        let now = self.observe(now);
        self.last_denial = None;
        for gcra in [self.requests.as_mut(), self.tokens.as_mut()]
            .into_iter()
            .flatten()
        {
            gcra.tighten(now, 0);
        }
    }

    /// The calls admitted and not yet finished.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    #[inline]
    fn observe(&mut self, now: Timestamp) -> Timestamp {
        self.latest = Ord::max(self.latest, now);
        self.latest
    }

    /// Whether a call of `tokens` goes at `now` (already clamped).
    #[inline]
    fn admits_now(&self, now: Timestamp, tokens: u64) -> bool {
        self.requests.as_ref().is_none_or(|g| g.admits(now, 1))
            && self.tokens.as_ref().is_none_or(|g| g.admits(now, tokens))
            && self.in_flight < self.max_in_flight
    }

    /// Why a call that `admits_now` refused (or that must come after a reserved slot)
    /// waits: too large, too many in flight, or not before the first instant, at or
    /// after the last slot handed out, that every dimension admits it.
    #[inline(never)]
    fn denial(&self, now: Timestamp, tokens: u64) -> Admit {
        let mut at = self.last_slot;
        if let Some(g) = &self.requests {
            if g.limit < 1 {
                return Admit::TooLarge;
            }
            at = at.max(g.first_admitted(now, 1));
        }
        if let Some(g) = &self.tokens {
            if tokens > g.limit {
                return Admit::TooLarge;
            }
            at = at.max(g.first_admitted(now, tokens));
        }
        if self.in_flight >= self.max_in_flight {
            return Admit::Busy;
        }
        if at <= now {
            return Admit::Go;
        }
        Admit::NotBefore(at)
    }

    #[inline]
    fn charge(&mut self, now: Timestamp, tokens: u64) {
        self.last_denial = None;
        self.last_slot = Ord::max(self.last_slot, now);
        if let Some(g) = self.requests.as_mut() {
            g.charge(now, 1);
        }
        if let Some(g) = self.tokens.as_mut() {
            let lead = g.charge(now, tokens);
            self.refund_room = if self.in_flight == 0 {
                u128::MAX
            } else {
                self.refund_room.min(lead)
            };
        }
        self.in_flight = self.in_flight.saturating_add(1);
        self.in_flight_tokens = self.in_flight_tokens.saturating_add(tokens);
    }

    fn apply_window(&mut self, now: Timestamp, window: &RateWindow, is_tokens: bool) {
        let Some(remaining) = window.remaining else {
            return;
        };
        let gcra = if is_tokens {
            self.tokens.as_mut()
        } else {
            self.requests.as_mut()
        };
        let Some(gcra) = gcra else {
            return;
        };
        if gcra.tighten(now, remaining) && is_tokens && self.in_flight > 0 {
            self.refund_room = 0;
        }
    }
}

#[cfg(test)]
mod tests;
