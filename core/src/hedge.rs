//! Hedged attempts: when an attempt is slow, one more goes out beside it.
//!
//! A [`Call`](crate::retry::Call) with hedging on (see [`Call::with_hedge`]) arms a
//! trigger when it sends an attempt: a fixed delay ([`HedgeConfig::after`]) or a live
//! quantile of the endpoint's success latency ([`HedgeConfig::quantile`], from its
//! health window: for a stream the time to its first event, for a whole answer the time
//! to the whole answer — what a hedge races). If the attempt has not answered by then,
//! the call asks its gate for a hedge: a second attempt, preferably to another key or
//! endpoint, while the first keeps running. The first usable answer wins; the other
//! attempt is cancelled — its grant given back to the gate at once, its late answer
//! refused — and the driver is told to drop it ([`Call::poll_cancel`]). A failure of one
//! of the two does not retry while the other still runs: the call waits for it, and
//! hedges it in turn once it is as late as a first attempt would be.
//!
//! No more than two attempts run at once. With [`HedgeConfig::max_per_call`] above 1, a
//! hedge that is itself unanswered after the trigger's span gets one more beside it, in
//! place of the older of the two (cancelled like a loser): when a tail holds a share `s`
//! of requests, a call pays the long wait only when `max_per_call + 1` requests in a
//! row are held (`s²` with one hedge, `s³` with two).
//!
//! Hedges are paid from a [`HedgeBudget`] shared by every call of a gate, separate from
//! the retry budget: every call deposits [`HedgeConfig::budget`] of a hedge when its
//! first attempt goes out, a hedge spends a whole one, so hedges never exceed that share
//! of calls. A call hedges at most [`HedgeConfig::max_per_call`] times, only while it is
//! idempotent (every hedge carries the call's idempotency key), and never once it is
//! over: a stream's first event ends the call, so nothing is hedged after it reached
//! the caller.
//!
//! [`Call::with_hedge`]: crate::retry::Call::with_hedge
//! [`Call::poll_cancel`]: crate::retry::Call::poll_cancel

use core::time::Duration;

use crate::config::{nonzero, within};
use crate::error::ConfigError;

/// The most hedges a budget holds: a quiet spell saves up no more than this many.
pub const BURST: u64 = 10;

/// One hedge, in the budget's fixed-point unit (millionths of a hedge).
const UNIT: u64 = 1_000_000;

/// When and how much a call hedges. Off by default (neither `after` nor `quantile`).
///
/// Defaults:
///
/// | field | default | why |
/// |---|---|---|
/// | `after` | none | a fixed trigger, e.g. `"800ms"` |
/// | `quantile` | none | a live trigger, e.g. `0.9`: the endpoint's p90 success latency |
/// | `budget` | 0.1 | hedges add at most 10 % to the requests |
/// | `max_per_call` | 1 | one hedge beside an attempt is where most of the gain is; 2 also beats a held hedge |
/// | `min_samples` | 20 | a quantile of fewer successes is noise; `after` serves until then |
///
/// No preset turns hedging on: a hedge is a paid request, and whether a tail is worth
/// paying for is the caller's call. A face that runs one attempt at a time (the tower
/// layer) never hedges whatever the policy says.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
#[non_exhaustive]
pub struct HedgeConfig {
    /// Hedge an attempt that has not answered after this span (and, with `quantile`,
    /// until the endpoint's window has `min_samples` successes).
    #[cfg_attr(
        feature = "serde",
        serde(with = "crate::duration::serde_human::option")
    )]
    pub after: Option<Duration>,
    /// Hedge an attempt that has not answered after this quantile, in `(0, 1)`, of its
    /// endpoint's success latency over the health window.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub quantile: Option<f64>,
    /// The share of calls that may hedge, in `[0, 1]`.
    pub budget: f64,
    /// The most hedges one call sends (≥ 1).
    pub max_per_call: u32,
    /// The successes an endpoint's window needs before its quantile is trusted (≥ 1).
    pub min_samples: u32,
}

impl Default for HedgeConfig {
    fn default() -> Self {
        HedgeConfig {
            after: None,
            quantile: None,
            budget: 0.1,
            max_per_call: 1,
            min_samples: 20,
        }
    }
}

impl HedgeConfig {
    /// A config that hedges after `after`, with the other fields at their defaults.
    pub fn after(after: Duration) -> HedgeConfig {
        HedgeConfig {
            after: Some(after),
            ..HedgeConfig::default()
        }
    }

    /// A config that hedges after the endpoint's `quantile` success latency.
    pub fn quantile(quantile: f64) -> HedgeConfig {
        HedgeConfig {
            quantile: Some(quantile),
            ..HedgeConfig::default()
        }
    }

    /// The same config with this budget.
    #[must_use]
    pub fn with_budget(mut self, budget: f64) -> HedgeConfig {
        self.budget = budget;
        self
    }

    /// Whether it hedges at all.
    pub fn is_on(&self) -> bool {
        self.after.is_some() || self.quantile.is_some()
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        nonzero(self.after == Some(Duration::ZERO), "hedge.after")?;
        if let Some(q) = self.quantile {
            nonzero(q == 0.0, "hedge.quantile")?;
            within("hedge.quantile", q, 0.0, 0.999)?;
        }
        within("hedge.budget", self.budget, 0.0, 1.0)?;
        nonzero(self.max_per_call == 0, "hedge.max_per_call")?;
        nonzero(self.min_samples == 0, "hedge.min_samples")
    }

    /// The quantile in thousandths (what [`crate::health::HealthWindow::quantile`] takes).
    pub fn permille(&self) -> Option<u64> {
        self.quantile.map(|q| (q.clamp(0.0, 1.0) * 1000.0) as u64)
    }

    /// The trigger's span after an attempt went out, given the endpoint's quantile when
    /// the window knows it: the quantile, else `after`, else none (no hedge).
    pub fn delay(&self, known_quantile: Option<Duration>) -> Option<Duration> {
        self.quantile
            .and(known_quantile)
            .or(self.after)
            .filter(|d| !d.is_zero())
    }
}

/// The hedge budget shared by every call of a gate: a bucket every call's first attempt
/// deposits `budget` of a hedge into and every hedge withdraws a whole one from,
/// holding at most [`BURST`] hedges. Amounts are integers (millionths of a hedge) that
/// round deposits down, so `hedges ≤ budget × calls` holds exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HedgeBudget {
    deposit: u64,
    tokens: u64,
    calls: u64,
    hedges: u64,
}

impl HedgeBudget {
    /// An empty budget for `config`.
    pub fn new(config: &HedgeConfig) -> HedgeBudget {
        let ratio = if config.budget > 0.0 {
            config.budget.min(1.0)
        } else {
            0.0
        };
        HedgeBudget {
            deposit: (ratio * UNIT as f64) as u64,
            tokens: 0,
            calls: 0,
            hedges: 0,
        }
    }

    /// A call's first attempt went out.
    pub fn on_call(&mut self) {
        self.calls = self.calls.saturating_add(1);
        self.tokens = self
            .tokens
            .saturating_add(self.deposit)
            .min(BURST.saturating_mul(UNIT));
    }

    /// Whether a hedge could be paid now.
    pub fn can_spend(&self) -> bool {
        self.tokens >= UNIT
    }

    /// Pays for one hedge; false (and nothing spent) when the budget cannot.
    pub fn try_spend(&mut self) -> bool {
        if !self.can_spend() {
            return false;
        }
        self.tokens = self.tokens.saturating_sub(UNIT);
        self.hedges = self.hedges.saturating_add(1);
        true
    }

    /// Calls counted (first attempts sent).
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// Hedges paid for.
    pub fn hedges(&self) -> u64 {
        self.hedges
    }
}

#[cfg(test)]
mod tests;
