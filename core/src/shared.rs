//! Request and token limits shared by every process behind one key, as a protocol
//! the core speaks with a store it never touches (key cooldowns and disables are
//! shared by [`keys`], a breaker's "open until" by [`breakers`]; a claim on a shared
//! idempotency ledger's entry is timed by [`claim`]).
//!
//! An endpoint whose limit is shared spends requests from a **lease**: a small slice
//! of the shared budget a store (Redis, or the simulator's model of one) granted this
//! process. While the lease lasts, admission stays local and costs nothing; when it is
//! spent (or has expired), the engine asks for another one:
//!
//! 1. A call finds no lease: [`SharedQuota::check`] answers a short wait
//!    ([`SharedConfig::recheck`]) and notes that a lease is wanted.
//! 2. The driver takes the ask with [`Engine::poll_lease_ask`](crate::engine::Engine::poll_lease_ask),
//!    asks the store (outside any lock), and reports the answer with
//!    [`Engine::handle_lease`](crate::engine::Engine::handle_lease). One ask per
//!    endpoint is outstanding at a time; the calls that find it outstanding wait.
//! 3. The answer is a grant (`requests` valid for `valid_for`), a not-before (the
//!    shared bucket is empty: nobody here asks again before it), or a failure (the
//!    store could not be reached in time). A driver turns what the store returned
//!    into it with [`StoreReply::lease_answer`], which takes the round trip off the
//!    lease's validity.
//!
//! An ask not answered within [`SharedConfig::ask_timeout`] counts as a failure, so a
//! lost answer never stalls the endpoint. After a failure the endpoint runs on its
//! fallback for [`SharedConfig::fallback_for`], then asks the store again:
//! [`FailMode::Open`] admits on the local limits alone (the limiter every endpoint
//! has), [`FailMode::Closed`] admits nothing. Either way the engine says so in an
//! [`SharedEvent`], and again when sharing resumes. A store that was only slow ends
//! the fallback early: a grant that answers the timed-out ask, before any newer ask
//! goes out, is a lease like any other (the store counted it).
//!
//! Falling back open, the endpoint's local limiter starts empty: it admits at the
//! limit's rate, and earns its burst again, rather than sending a whole burst at once
//! while the other replicas still spend the same limit from their leases.
//!
//! The lease is spent only by admissions the rest of the engine has already allowed,
//! and never after it expires: the store counted its requests in the window it
//! granted them, so a request spent later would land in a window that did not count
//! it.
//!
//! # Tokens
//!
//! An endpoint whose token limit is shared as well ([`SharedQuota::new`] with the
//! bucket's burst) holds a second lease, of tokens ([`LeaseKind::Tokens`]): a call
//! spends its estimate from it, the attempt's actual usage corrects what was spent
//! ([`SharedQuota::on_usage`]), and when the lease ends (expired, or replaced by a new
//! one) a [`TokenSettle`] tells the driver what to give back to the store or charge
//! on top. A token lease asks for a quarter of the bucket (at least the call's
//! estimate); after an empty answer, for just the estimate.

use core::time::Duration;

pub mod breakers;
pub mod claim;
#[cfg(feature = "alloc")]
pub mod keys;

use crate::config::nonzero;
use crate::error::ConfigError;
use crate::ids::EndpointId;
use crate::ring::Ring;
use crate::time::Timestamp;

mod reply;
mod slice;

pub use reply::{StoreReply, earn_back};
use slice::{Ended, Slice};

/// How a shared limit is asked for and what happens when its store fails.
///
/// Defaults: `fail: open`, `lease: 8`, `recheck: 1ms`, `ask_timeout: 250ms`,
/// `fallback_for: 1s`, `key_sync: 250ms`, `disable_for: 1h`, `breaker: false`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct SharedConfig {
    /// What an endpoint does while its store cannot be reached.
    pub fail: FailMode,
    /// The most requests one lease asks for. The store grants fewer when its bucket
    /// runs low (a quarter of what is left), so replicas share a burst.
    pub lease: u32,
    /// How soon a call that found no lease looks again (the ask is on its way).
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub recheck: Duration,
    /// An ask not answered in this time counts as a store failure.
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub ask_timeout: Duration,
    /// How long an endpoint stays on its fallback after a store failure before it
    /// asks the store again.
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub fallback_for: Duration,
    /// How often a driver reads the store's key states back (see [`keys`]).
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub key_sync: Duration,
    /// How long a key disabled here stays disabled in the store (an operator's enable
    /// lifts it sooner).
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub disable_for: Duration,
    /// Whether a face that shares through a store shares its endpoints' breaker
    /// "open until" as well (see [`breakers`]; an endpoint may say otherwise). The
    /// core reads [`EndpointSpec::share_breaker`](crate::engine::EndpointSpec::share_breaker)
    /// alone.
    pub breaker: bool,
}

impl Default for SharedConfig {
    fn default() -> SharedConfig {
        SharedConfig {
            fail: FailMode::Open,
            lease: 8,
            recheck: Duration::from_millis(1),
            ask_timeout: Duration::from_millis(250),
            fallback_for: Duration::from_secs(1),
            key_sync: Duration::from_millis(250),
            disable_for: Duration::from_secs(60 * 60),
            breaker: false,
        }
    }
}

impl SharedConfig {
    /// Checks the parameters; the error names the first bad field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        nonzero(self.lease == 0, "shared.lease")?;
        nonzero(self.recheck.is_zero(), "shared.recheck")?;
        nonzero(self.ask_timeout.is_zero(), "shared.ask_timeout")?;
        nonzero(self.fallback_for.is_zero(), "shared.fallback_for")?;
        nonzero(self.key_sync.is_zero(), "shared.key_sync")?;
        nonzero(self.disable_for.is_zero(), "shared.disable_for")
    }
}

/// What an endpoint does while its shared limit's store cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum FailMode {
    /// Keep admitting on the local limits alone.
    #[default]
    Open,
    /// Admit nothing until the store answers again.
    Closed,
}

/// What a lease is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseKind {
    /// Requests of the endpoint's request limit (granted as a slice of a GCRA).
    Requests,
    /// Tokens of the endpoint's token limit (reserved from a token bucket, settled
    /// with [`TokenSettle`] when the lease ends).
    Tokens,
}

/// A lease the driver should ask the store for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseAsk {
    /// The endpoint whose shared limit is asked.
    pub endpoint: EndpointId,
    /// Requests or tokens.
    pub kind: LeaseKind,
    /// The most units wanted (requests, or tokens: all of them or none).
    pub want: u32,
    /// Identifies the ask: its answer is reported with it, and an answer to an ask
    /// that already timed out changes nothing.
    pub ticket: u64,
    /// When the engine stops waiting for the answer ([`SharedConfig::ask_timeout`]
    /// after the ask): a driver bounds its store call by it, so a slow store never
    /// holds a call.
    pub expires: Timestamp,
}

/// The store's answer to a [`LeaseAsk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseAnswer {
    /// `requests` units (`0..=want`: requests or tokens, as asked) may be spent
    /// within `valid_for` of now; with 0, none is free for `retry_in`.
    Granted {
        /// Units leased.
        requests: u32,
        /// How long they may be spent.
        valid_for: Duration,
        /// With 0 requests: how long until one is free.
        retry_in: Duration,
    },
    /// The store could not be asked (an error or a timeout in the driver).
    Failed,
}

/// Something a shared limit did, for logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SharedEvent {
    /// The store failed: the endpoint runs on its fallback until `until`.
    Fallback {
        /// When.
        at: Timestamp,
        /// The endpoint.
        endpoint: EndpointId,
        /// Open (local limits) or closed (nothing admitted).
        mode: FailMode,
        /// When the store is asked again.
        until: Timestamp,
    },
    /// The store answered again after a failure: the limit is shared again.
    Resumed {
        /// When.
        at: Timestamp,
        /// The endpoint.
        endpoint: EndpointId,
    },
    /// The store said another process opened the endpoint's breaker: it opened here
    /// (or stays open) until the same instant (see [`breakers`]).
    BreakerOpened {
        /// When.
        at: Timestamp,
        /// The endpoint.
        endpoint: EndpointId,
        /// When it half-opens.
        until: Timestamp,
    },
}

/// Counts of one shared limit's decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SharedCounters {
    /// Asks sent to the store.
    pub asks: u64,
    /// Requests the store leased.
    pub leased: u64,
    /// Leased requests spent by admissions.
    pub spent: u64,
    /// Leased requests that expired unspent.
    pub expired: u64,
    /// Answers with nothing free.
    pub empty: u64,
    /// Asks that failed or timed out.
    pub failures: u64,
    /// Admissions made on the fallback (fail open) while the store was unreachable.
    pub fallback_admissions: u64,
    /// Tokens the store leased.
    pub tokens_leased: u64,
}

/// What the shared limit says of one admission at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaCheck {
    /// A leased request is free (or the fallback admits): go, then
    /// [`SharedQuota::spend`].
    Go,
    /// Nothing may go before this instant.
    Wait(Timestamp),
}

/// A token lease that ended, for the driver to settle with the store: `reserved`
/// tokens were taken from the shared bucket, `spent` were used. The store gives back
/// `reserved − spent`, or charges the overrun when usage passed the estimates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenSettle {
    /// The endpoint whose token limit it was.
    pub endpoint: EndpointId,
    /// Tokens the lease took.
    pub reserved: u64,
    /// Tokens used.
    pub spent: u64,
}

/// Settles kept for the driver before the oldest are dropped.
pub const SETTLE_CAPACITY: usize = 32;

/// The state of one endpoint's shared limit. See the module documentation.
#[derive(Debug, Clone)]
pub struct SharedQuota {
    config: SharedConfig,
    requests: Slice,
    /// The token dimension, with the shared bucket's burst, when tokens are shared.
    tokens: Option<(Slice, u64)>,
    /// The store failed: the fallback applies until this.
    fallback_until: Option<Timestamp>,
    /// The last failure has not been followed by an answer yet.
    failed: bool,
    next_ticket: u64,
    counters: SharedCounters,
    settles: Ring<(u64, u64), SETTLE_CAPACITY>,
}

impl SharedQuota {
    /// A shared request limit with no lease yet; with `token_burst`, the endpoint's
    /// tokens are shared as well, from a bucket of that many.
    pub fn new(config: &SharedConfig, token_burst: Option<u64>) -> SharedQuota {
        SharedQuota {
            config: config.clone(),
            requests: Slice::default(),
            tokens: token_burst.map(|b| (Slice::default(), b.max(1))),
            fallback_until: None,
            failed: false,
            next_ticket: 1,
            counters: SharedCounters::default(),
            settles: Ring::new(),
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> SharedCounters {
        self.counters
    }

    /// Whether the fallback applies at `now` (the store failed recently).
    pub fn on_fallback(&self, now: Timestamp) -> bool {
        self.fallback_until.is_some_and(|until| now < until)
    }

    /// Leased requests free at `now`.
    pub fn available(&self, now: Timestamp) -> u32 {
        u32::try_from(self.requests.available(now)).unwrap_or(u32::MAX)
    }

    /// Whether leases cover a call of `tokens` at `now` (or the fallback admits it).
    pub fn covers(&self, now: Timestamp, tokens: u64) -> bool {
        let tokens_ok = match &self.tokens {
            Some((slice, _)) => tokens == 0 || slice.available(now) >= tokens,
            None => true,
        };
        self.on_fallback(now) || (self.requests.available(now) > 0 && tokens_ok)
    }

    /// Whether one admission of `tokens` (estimated) may go at `now`. Changes nothing
    /// but the wish for a lease, so it may be asked before anything else commits.
    pub fn check(&mut self, now: Timestamp, tokens: u64) -> QuotaCheck {
        if let Some(until) = self.fallback_until.filter(|u| now < *u) {
            return match self.config.fail {
                FailMode::Open => QuotaCheck::Go,
                FailMode::Closed => QuotaCheck::Wait(until),
            };
        }
        let recheck = now.saturating_add(self.config.recheck);
        let requests = self.requests.check(now, 1, recheck);
        let tokens = match &mut self.tokens {
            Some((slice, _)) => slice.check(now, tokens, recheck),
            None => None,
        };
        match (requests, tokens) {
            (None, None) => QuotaCheck::Go,
            (Some(a), Some(b)) => QuotaCheck::Wait(a.min(b)),
            (Some(a), None) | (None, Some(a)) => QuotaCheck::Wait(a),
        }
    }

    /// A fallback admission that was not sent after all (its reserved slot came due
    /// after sharing resumed, with no lease for it).
    pub fn withdraw_fallback_admission(&mut self) {
        self.counters.fallback_admissions = self.counters.fallback_admissions.saturating_sub(1);
    }

    /// Spends a leased request and `tokens` leased tokens for an admission
    /// [`SharedQuota::check`] allowed at `now` (on the fallback, counts it).
    pub fn spend(&mut self, now: Timestamp, tokens: u64) {
        if self.on_fallback(now) {
            self.counters.fallback_admissions = self.counters.fallback_admissions.saturating_add(1);
            return;
        }
        if self.requests.available(now) > 0 {
            self.requests.spend(now, 1);
            self.counters.spent = self.counters.spent.saturating_add(1);
        }
        if let Some((slice, _)) = &mut self.tokens {
            slice.spend(now, tokens);
        }
    }

    /// An attempt's actual token usage, against the `estimate` it was admitted with.
    pub fn on_usage(&mut self, now: Timestamp, estimate: u64, actual: u64) {
        let Some((slice, _)) = &mut self.tokens else {
            return;
        };
        let more = actual.saturating_sub(estimate);
        let less = estimate.saturating_sub(actual);
        if more == 0 && less == 0 {
            return;
        }
        if let Some(ended) = slice.correct(now, more, less) {
            self.settles.push((ended.reserved, ended.spent));
        }
    }

    /// The next token lease to settle with the store.
    pub fn poll_settle(&mut self, endpoint: EndpointId) -> Option<TokenSettle> {
        let (reserved, spent) = self.settles.pop()?;
        Some(TokenSettle {
            endpoint,
            reserved,
            spent,
        })
    }

    /// The ask to send, if a lease is wanted and none is outstanding.
    pub fn poll_ask(&mut self, now: Timestamp, endpoint: EndpointId) -> Option<LeaseAsk> {
        self.handle_timeout(now, endpoint);
        if self.on_fallback(now) {
            return None;
        }
        let ticket = self.next_ticket;
        let expires = now.saturating_add(self.config.ask_timeout);
        let lease = u64::from(self.config.lease);
        let (kind, want) = if self.requests.take_ask(ticket, expires).is_some() {
            (LeaseKind::Requests, lease)
        } else {
            let (slice, burst) = self.tokens.as_mut()?;
            let need = slice.take_ask(ticket, expires)?;
            // A lease of a quarter of the bucket, unless the store just had less.
            let want = if slice.shrink {
                need
            } else {
                need.max(*burst / 4)
            };
            (LeaseKind::Tokens, want.min(*burst))
        };
        self.next_ticket = self.next_ticket.wrapping_add(1);
        self.counters.asks = self.counters.asks.saturating_add(1);
        Some(LeaseAsk {
            endpoint,
            kind,
            want: u32::try_from(want).unwrap_or(u32::MAX),
            ticket,
            expires,
        })
    }

    /// The store's answer to the ask `ticket`, at `now`. The answer to an ask that
    /// timed out (or that its driver answered with a failure when it stopped waiting)
    /// still counts while no newer ask is out: a grant (the store counted it) ends
    /// the fallback at once, a late failure changes nothing. An answer to any
    /// other ask changes nothing. Returns the event it caused.
    pub fn handle_answer(
        &mut self,
        now: Timestamp,
        endpoint: EndpointId,
        ticket: u64,
        answer: LeaseAnswer,
    ) -> Option<SharedEvent> {
        let (kind, late) = self.answered(ticket)?;
        let LeaseAnswer::Granted {
            requests: granted,
            valid_for,
            retry_in,
        } = answer
        else {
            // A late failure says nothing new: its ask already failed.
            if late {
                return None;
            }
            // A driver that stopped waiting at the ask's deadline answers a failure;
            // the store's own answer may still come.
            if let Some(slice) = self.slice_mut(kind) {
                slice.await_late(ticket);
            }
            return Some(self.fail(now, endpoint));
        };
        let granted = u64::from(granted);
        let slice = match kind {
            LeaseKind::Requests => &mut self.requests,
            LeaseKind::Tokens => match &mut self.tokens {
                Some((slice, _)) => slice,
                None => return None,
            },
        };
        if granted == 0 {
            self.counters.empty = self.counters.empty.saturating_add(1);
            slice.empty_until(now.saturating_add(retry_in));
        } else {
            let ended = slice.grant(granted, now.saturating_add(valid_for));
            self.record_end(kind, ended);
            match kind {
                LeaseKind::Requests => {
                    self.counters.leased = self.counters.leased.saturating_add(granted);
                }
                LeaseKind::Tokens => {
                    self.counters.tokens_leased =
                        self.counters.tokens_leased.saturating_add(granted);
                }
            }
        }
        self.fallback_until = None;
        let resumed = core::mem::take(&mut self.failed);
        resumed.then_some(SharedEvent::Resumed { at: now, endpoint })
    }

    /// An ask outstanding past its timeout fails, and a token lease past its expiry is
    /// settled; returns the event it caused.
    pub fn handle_timeout(&mut self, now: Timestamp, endpoint: EndpointId) -> Option<SharedEvent> {
        if let Some(ended) = self.requests.end_expired(now) {
            self.record_end(LeaseKind::Requests, ended);
        }
        if let Some(ended) = self.tokens.as_mut().and_then(|(s, _)| s.end_expired(now)) {
            self.record_end(LeaseKind::Tokens, ended);
        }
        let timed_out = |s: &Slice| s.asking.is_some_and(|(_, t)| now >= t);
        let tokens_out = self.tokens.as_ref().is_some_and(|(s, _)| timed_out(s));
        if !timed_out(&self.requests) && !tokens_out {
            return None;
        }
        Some(self.fail(now, endpoint))
    }

    /// The earliest instant something changes without an input: an outstanding ask
    /// times out, a token lease expires, or the fallback ends.
    pub fn poll_timeout(&self, now: Timestamp) -> Option<Timestamp> {
        let token = self.tokens.as_ref();
        [
            self.requests.asking.map(|(_, t)| t),
            token.and_then(|(s, _)| s.asking.map(|(_, t)| t)),
            token.and_then(|(s, _)| s.expiry()),
            self.fallback_until.filter(|u| now < *u),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn slice_mut(&mut self, kind: LeaseKind) -> Option<&mut Slice> {
        match kind {
            LeaseKind::Requests => Some(&mut self.requests),
            LeaseKind::Tokens => self.tokens.as_mut().map(|(s, _)| s),
        }
    }

    /// Which lease `ticket` answers, and whether its ask had timed out; `None` when it
    /// answers none (a newer ask is out, or it was answered already).
    fn answered(&mut self, ticket: u64) -> Option<(LeaseKind, bool)> {
        // An outstanding ask first, then one that timed out.
        for late in [false, true] {
            for kind in [LeaseKind::Requests, LeaseKind::Tokens] {
                let Some(slice) = self.slice_mut(kind) else {
                    continue;
                };
                let hit = if late {
                    slice.answers_late(ticket)
                } else {
                    slice.answers(ticket)
                };
                if hit {
                    return Some((kind, late));
                }
            }
        }
        None
    }

    fn fail(&mut self, now: Timestamp, endpoint: EndpointId) -> SharedEvent {
        self.counters.failures = self.counters.failures.saturating_add(1);
        self.failed = true;
        self.requests.time_out();
        if let Some((slice, _)) = &mut self.tokens {
            slice.time_out();
        }
        let until = now.saturating_add(self.config.fallback_for);
        self.fallback_until = Some(until);
        SharedEvent::Fallback {
            at: now,
            endpoint,
            mode: self.config.fail,
            until,
        }
    }

    /// Counts a lease that ended; a token lease is queued to settle.
    fn record_end(&mut self, kind: LeaseKind, ended: Ended) {
        match kind {
            LeaseKind::Requests => {
                let unspent = ended.reserved.saturating_sub(ended.spent);
                self.counters.expired = self.counters.expired.saturating_add(unspent);
            }
            LeaseKind::Tokens if ended.reserved > 0 || ended.spent > 0 => {
                self.settles.push((ended.reserved, ended.spent));
            }
            LeaseKind::Tokens => {}
        }
    }
}

#[cfg(test)]
mod breaker_tests;
#[cfg(test)]
mod tests;
