//! One endpoint's machines as the engine holds them, and what a walk over the
//! endpoints learns while it looks for a target.

use alloc::vec::Vec;

use crate::breaker::Breaker;
use crate::budget::RetryBudget;
use crate::health::HealthWindow;
use crate::ids::{EndpointId, KeyId, Target};
use crate::limiter::{self, Limiter, ServerLimits};
use crate::retry::{Admit, GiveUpReason, Query, WaitCause};
use crate::shared::{QuotaCheck, SharedQuota};
use crate::time::Timestamp;

/// One endpoint's shared machines.
pub(super) struct EndpointState {
    pub breaker: Breaker,
    pub budget: RetryBudget,
    pub limiter: Limiter,
    pub health: HealthWindow,
    /// What each key's server said about its rate limits (by key id).
    pub servers: Vec<ServerLimits>,
    /// Whether the server's rate-limit headers pace calls.
    pub follow_server: bool,
    pub standby: bool,
    /// The shared request limit, when the endpoint has one.
    pub shared: Option<SharedQuota>,
    /// Whether its keys' states are shared with other processes.
    pub share_keys: bool,
    /// Whether its breaker's "open until" is shared with other processes.
    pub share_breaker: bool,
    /// The latest instant its breaker was known open until (its own opens and the
    /// store's), so an open read back from the store is not taken for a new one.
    pub breaker_until: Timestamp,
    /// Its latest success (zero before the first): a shared open that began before
    /// it is older news than what this engine saw.
    pub succeeded_at: Timestamp,
    /// The first endpoint-scope failure since the last success, if the endpoint has
    /// failed since: how long it has been unavailable, for [`Query::max_hold`].
    pub failing_since: Option<Timestamp>,
}

/// When the rate limits let a call go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RateSlot {
    /// At this instant (`now` or later).
    At(Timestamp),
    /// Every slot for calls in flight is taken.
    Busy,
    /// The call is larger than a whole period's tokens.
    TooLarge,
}

impl EndpointState {
    /// Whether a call may use this endpoint: only the endpoint it is restricted to, or
    /// any endpoint not on standby.
    pub fn serves(&self, endpoint: EndpointId, query: &Query) -> bool {
        query
            .only
            .map_or(!self.standby, |only| only.contains(endpoint))
    }

    /// Whether a holding call still waits for this endpoint at `now`: it has not been
    /// failing for `max_hold` or longer.
    pub fn holds(&self, now: Timestamp, query: &Query) -> bool {
        query.hold
            && self
                .failing_since
                .is_none_or(|since| now.saturating_duration_since(since) < query.max_hold)
    }

    /// The instant a holding call stops holding for this endpoint.
    pub fn hold_ends(&self, query: &Query) -> Timestamp {
        self.failing_since
            .map_or(Timestamp::MAX, |since| since.saturating_add(query.max_hold))
    }

    /// The learned limits of `key`, when the server's headers are followed.
    pub fn server(&self, key: KeyId) -> Option<&ServerLimits> {
        self.servers
            .get(usize::from(key.0))
            .filter(|_| self.follow_server)
    }

    pub fn server_mut(&mut self, key: KeyId) -> Option<&mut ServerLimits> {
        let follow = self.follow_server;
        self.servers.get_mut(usize::from(key.0)).filter(|_| follow)
    }

    /// When the shared limit, if any, lets a call of `tokens` go: `None` for now.
    pub fn shared_wait(&mut self, now: Timestamp, tokens: u64) -> Option<Timestamp> {
        match self.shared.as_mut()?.check(now, tokens) {
            QuotaCheck::Go => None,
            QuotaCheck::Wait(at) => Some(at),
        }
    }

    /// For a slot its shared limit's fallback admitted, come due at `now`: whether it
    /// may go. Still on the fallback (or not sharing), it goes; after sharing resumed,
    /// only on a lease, which it then spends.
    pub fn covers_resumed(&mut self, now: Timestamp, tokens: u64) -> bool {
        let Some(q) = self.shared.as_mut().filter(|q| !q.on_fallback(now)) else {
            return true;
        };
        let go = q.check(now, tokens) == QuotaCheck::Go;
        if go {
            q.spend(now, tokens);
        } else {
            q.withdraw_fallback_admission();
        }
        go
    }

    /// Spends a shared request and `tokens` shared tokens for an admission at `now`.
    pub fn spend_shared(&mut self, now: Timestamp, tokens: u64) {
        if let Some(q) = self.shared.as_mut() {
            q.spend(now, tokens);
        }
    }

    /// When the configured limits and the server's (for `key`) let a call of `tokens`
    /// go, from `now` on. When that is `now`, the configured limiter has admitted and
    /// charged it (the caller charges the server's limits); otherwise nothing changed.
    #[inline]
    pub fn acquire_rate(&mut self, now: Timestamp, key: KeyId, tokens: u64) -> RateSlot {
        let server = self.server(key).map_or(now, |s| s.first_slot(now, tokens));
        let admit = if server > now {
            self.limiter.check(now, tokens)
        } else {
            self.limiter.acquire(now, tokens)
        };
        match admit {
            limiter::Admit::Go => RateSlot::At(server),
            limiter::Admit::NotBefore(at) => RateSlot::At(at.max(server)),
            limiter::Admit::Busy => RateSlot::Busy,
            limiter::Admit::TooLarge => RateSlot::TooLarge,
        }
    }
}

/// The earliest wait seen while walking the endpoints, and why.
#[derive(Default)]
pub(super) struct Blocked {
    wait: Option<(Timestamp, WaitCause)>,
    /// The earliest rate-limit slot seen, and where: reserved when nothing frees
    /// up sooner.
    slot: Option<(Timestamp, Target)>,
    /// The earliest instant an open breaker lifts, for a call that does not hold.
    breaker_open: Option<Timestamp>,
    pub budget_spent: bool,
    pub too_large: bool,
}

impl Blocked {
    pub fn note(&mut self, at: Timestamp, cause: WaitCause) {
        if self.wait.is_none_or(|(t, _)| at < t) {
            self.wait = Some((at, cause));
        }
    }

    pub fn note_open(&mut self, until: Timestamp) {
        self.breaker_open = Some(self.breaker_open.map_or(until, |u| u.min(until)));
    }

    pub fn note_slot(&mut self, at: Timestamp, target: Target) {
        if self.slot.is_none_or(|(t, _)| at < t) {
            self.slot = Some((at, target));
        }
    }

    /// The rate-limit slot to reserve: the earliest seen, when nothing else frees up
    /// before it and it comes before the call's deadline. A slot that is not reserved
    /// counts as a wait (and, past the deadline, as the instant the call would need).
    pub fn reservable(&mut self, deadline: Timestamp) -> Option<(Timestamp, Target)> {
        let (at, target) = self.slot.take()?;
        let sooner = self.wait.is_some_and(|(t, _)| t < at);
        if !sooner && at < deadline {
            return Some((at, target));
        }
        self.note(at, WaitCause::RateLimit);
        None
    }

    /// A call that does not hold gives up on an open breaker unless something else
    /// frees up before it lifts.
    pub fn verdict(self) -> Admit {
        match (self.wait, self.breaker_open) {
            (Some((at, _)), Some(until)) if until <= at => {
                Admit::Refuse(GiveUpReason::BreakerOpen { until })
            }
            (Some((at, cause)), _) => Admit::NotBefore(at, cause),
            (None, Some(until)) => Admit::Refuse(GiveUpReason::BreakerOpen { until }),
            (None, None) if self.budget_spent => Admit::Refuse(GiveUpReason::BudgetExhausted),
            (None, None) if self.too_large => Admit::Refuse(GiveUpReason::RateLimited {
                until: Timestamp::MAX,
            }),
            (None, None) => Admit::Refuse(GiveUpReason::NoUsableKey),
        }
    }
}
