//! The seam between one call and the machines all calls share.
//!
//! The protocol is the crate's own: [`Gate`] is sealed (only the engine and
//! [`SingleEndpoint`](super::SingleEndpoint) implement it, and with the `testing` feature
//! a harness wrapping them), and a [`Grant`] cannot be made outside the crate, so no
//! caller can forge a probe slot or a reserved rate-limit slot.

use core::time::Duration;

use rand_core::Rng;

use super::GiveUpReason;
use crate::classify::{ClassifyConfig, Scope, Verdict};
use crate::hints::Hints;
use crate::ids::{EndpointId, EndpointSet, Target};
use crate::time::Timestamp;

/// What a gate is asked before each attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Query {
    /// The number the attempt will have (1 for the first; >1 is a retry).
    pub attempt: u32,
    /// What the last failure rules out, and until when.
    pub avoid: Option<Avoid>,
    /// The call's estimated token cost (for token rate limits).
    pub tokens: u64,
    /// Whether to wait for an open breaker or a spent retry budget (instead of giving
    /// up at once).
    pub hold: bool,
    /// A holding call stops holding for an endpoint failing for longer than this.
    pub max_hold: Duration,
    /// The endpoints the call may use (a fallback call on a standby endpoint, a
    /// route); `None`: any endpoint that is not on standby.
    pub only: Option<EndpointSet>,
    /// The call's deadline: a rate-limit slot is reserved only before it.
    pub deadline: Timestamp,
    /// The longest the attempt may take once sent (its timeout, or for a stream its
    /// first-event timeout): a grant not reported this long after it went out is
    /// reclaimed.
    pub span: Duration,
    /// Whether the attempt is a hedge beside one still in flight: paid from the hedge
    /// budget, never from the retry budget, and only sent at once (never a reserved
    /// slot).
    pub hedge: bool,
}

impl Query {
    /// Whether this attempt, going to `endpoint`, is a retry charged to that endpoint's
    /// retry budget. A first attempt is not a retry; a failover to another endpoint
    /// adds no load to the one in trouble; and a retry after a throttle waits as the
    /// server directed, so it is not a blind retry either.
    pub fn charges_budget(&self, endpoint: EndpointId) -> bool {
        !self.hedge
            && self.attempt > 1
            && self
                .avoid
                .is_none_or(|a| a.target.endpoint == endpoint && a.scope != Scope::Throttle)
    }
}

/// A target the last failure rules out until an instant: the whole endpoint for an
/// endpoint-scope failure, the one key for a key or throttle failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avoid {
    /// The target that failed.
    pub target: Target,
    /// The failure's scope: [`Scope::Endpoint`] avoids the endpoint, else the key.
    pub scope: Scope,
    /// No attempt goes there before this instant ([`Timestamp::MAX`]: never).
    pub until: Timestamp,
    /// Why the wait: a backoff, a server hint, or a hint too long to honour.
    pub cause: WaitCause,
}

impl Avoid {
    /// Whether `target` is ruled out at `now`.
    pub fn rules_out(&self, now: Timestamp, target: Target) -> bool {
        let same = match self.scope {
            Scope::Endpoint => target.endpoint == self.target.endpoint,
            _ => target == self.target,
        };
        same && now < self.until
    }
}

/// Why an attempt must wait; decides the give-up reason when the wait passes the deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitCause {
    /// Exponential backoff.
    Backoff,
    /// A server hint (`Retry-After`, a rate-limit reset, a key cooling down).
    Hint(Duration),
    /// An open breaker.
    Breaker,
    /// A spent retry budget, until its floor grants the next retry.
    Budget,
    /// The client-side rate limiter.
    RateLimit,
    /// Every slot for calls in flight is taken.
    Busy,
}

/// A gate's answer before an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Go now, with this grant.
    Go(Grant),
    /// A rate-limit slot is reserved for this instant: go then, after
    /// [`Gate::confirm`] (or give it back with [`Gate::release`]).
    At(Grant, Timestamp),
    /// Nothing can go before this instant.
    NotBefore(Timestamp, WaitCause),
    /// Nothing will ever go: give up.
    Refuse(GiveUpReason),
}

/// What a gate granted: the target, and what it must be told back at the end. Only the
/// crate makes grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub(crate) target: Target,
    /// The half-open period of the breaker's probe slot it holds, if it holds one.
    pub(crate) probe: Option<u32>,
    pub(crate) tokens: u64,
    pub(crate) ticket: Ticket,
}

impl Grant {
    /// A grant of `target` for `tokens` tokens, holding nothing else.
    pub(crate) fn plain(target: Target, tokens: u64) -> Grant {
        Grant {
            target,
            probe: None,
            tokens,
            ticket: Ticket::default(),
        }
    }

    /// Where the attempt goes.
    pub fn target(&self) -> Target {
        self.target
    }

    /// Whether it holds a half-open breaker's probe slot.
    pub fn is_probe(&self) -> bool {
        self.probe.is_some()
    }

    /// The half-open period of the probe slot it holds (see
    /// [`Breaker::probe_period`](crate::breaker::Breaker::probe_period)).
    pub fn probe_period(&self) -> Option<u32> {
        self.probe
    }

    /// Tokens charged to the limiter.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }
}

/// Which grant of which engine: an engine refuses a report of a grant it did not issue
/// or was already told the end of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Ticket {
    pub(crate) engine: u64,
    pub(crate) slot: u32,
    pub(crate) generation: u32,
}

/// What a gate is told after an attempt. It borrows the server's hints from the
/// outcome the call holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report<'a> {
    /// The grant the attempt went out with.
    pub grant: Grant,
    /// How it went.
    pub verdict: Verdict,
    /// From send to outcome.
    pub latency: Duration,
    /// The server's hints ([`Hints::NONE`] when it did not answer).
    pub hints: &'a Hints,
    /// Tokens the request really used, when known.
    pub tokens_used: Option<u64>,
    /// When this call will try the same target again, after a throttle or failure.
    pub retry_at: Option<Timestamp>,
}

pub(crate) mod sealed {
    /// Seals [`Gate`](super::Gate): only the crate's gates (and, with the `testing`
    /// feature, harnesses around them) implement it.
    pub trait Sealed {}
}

/// Lets a test harness implement [`Gate`] around the crate's gates (feature `testing`).
#[cfg(feature = "testing")]
pub use sealed::Sealed;

/// The shared machines a [`Call`](super::Call) consults: one seam, asked before each
/// attempt and told after it. [`SingleEndpoint`](super::SingleEndpoint) is the simplest
/// gate; the engine is the full one.
pub trait Gate: sealed::Sealed {
    /// The RNG jitter is drawn from.
    type Rng: Rng + ?Sized;
    /// The classification rules.
    fn classifier(&self) -> &ClassifyConfig;
    /// The RNG.
    fn rng(&mut self) -> &mut Self::Rng;
    /// Before an attempt: where it may go, or until when it must wait, or never.
    fn admit(&mut self, now: Timestamp, query: &Query) -> Admit;
    /// At a reserved slot's instant: the grant to send now, or `None` when the slot is
    /// void (the endpoint's breaker opened meanwhile; the gate gave back what it held)
    /// and the call must ask [`Gate::admit`] again.
    fn confirm(&mut self, now: Timestamp, grant: &Grant) -> Option<Grant>;
    /// A grant that will never be sent (its call was cancelled first): give back what
    /// it held.
    fn release(&mut self, now: Timestamp, grant: &Grant);
    /// After an attempt: its outcome, for budgets, breakers, limiters, keys and health.
    fn on_attempt_end(&mut self, now: Timestamp, report: &Report<'_>);
    /// The `permille`-th thousandth quantile of `endpoint`'s success latency at `now`,
    /// when its window holds at least `min_samples` successes (the hedge trigger).
    fn latency_quantile(
        &self,
        now: Timestamp,
        endpoint: EndpointId,
        permille: u64,
        min_samples: u32,
    ) -> Option<Duration>;
}
