//! The engine: the machines shared by every call, behind one `&mut self`.
//!
//! An [`Engine`] owns the key/endpoint [`Pool`], and per endpoint a circuit
//! [`Breaker`], a [`RetryBudget`], a rate [`Limiter`], what each key's server said about
//! its rate limits ([`ServerLimits`]) and a [`HealthWindow`]. It is the full
//! [`Gate`](crate::retry::Gate): before each attempt it asks pool → breaker → budget →
//! rate limits in one place, grants a target at once or reserves the first free
//! rate-limit slot; after it, it reports the outcome to all of them. Every grant is
//! recorded until its end is reported, and reclaimed if it is long overdue. Adapters
//! share one engine between many calls behind a lock held only for these decisions.

use alloc::vec::Vec;
use core::time::Duration;

mod control;
mod endpoint;
mod gate;
mod lease;
mod ledger;
mod status;

use endpoint::EndpointState;
use ledger::Ledger;
pub use ledger::RECLAIM_GRACE;
pub use status::{
    BreakerStatus, EndpointStatus, KeyCondition, KeyStatus, LimiterStatus, ServerStatus,
};

use crate::backoff::Backoff;
use crate::breaker::{Breaker, BreakerEvent, BreakerMode, BreakerState, StateKind};
use crate::budget::RetryBudget;
use crate::error::ConfigError;
use crate::health::{HealthReport, HealthWindow};
use crate::hedge::HedgeBudget;
use crate::idempotency::IdempotencyKey;
use crate::ids::{EndpointId, Target};
use crate::limiter::{Limiter, LimiterConfig, ServerLimits};
use crate::policy::Policy;
use crate::pool::{EndpointConfig, Pool, PoolConfig, PoolEvent};
use crate::retry::{Call, Report, RetryConfig};
use crate::ring::Ring;
use crate::rng::{self, CoreRng, Seed};
use crate::shared::keys::KeySync;
use crate::shared::{SharedEvent, SharedQuota};
use crate::time::{Monotonic, Timestamp};

/// How long a call waits before asking again when every slot for calls in flight is
/// taken: no instant is known then, so the call re-checks at this pace.
pub const BUSY_RECHECK: Duration = Duration::from_millis(5);

/// Events kept for [`Engine::poll_event`] before the oldest are dropped.
pub const EVENT_CAPACITY: usize = 64;

/// One endpoint as the engine sees it.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
#[non_exhaustive]
pub struct EndpointSpec {
    /// Priority and number of keys.
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub pool: EndpointConfig,
    /// This endpoint's rate limits, when they differ from the policy's.
    pub limiter: Option<LimiterConfig>,
    /// A standby endpoint is never chosen for an ordinary call, only for calls
    /// [restricted](crate::retry::Call::restricted_to) to it (a fallback endpoint
    /// tried after a call gave up). It has its own breaker, budget, limiter and keys
    /// like any other.
    pub standby: bool,
    /// Whether its request limit is shared with other processes through a store
    /// (see [`crate::shared`]): admissions then spend leased requests as well as
    /// passing the local limiter.
    pub shared: bool,
    /// Whether its keys' cooldowns and disables are shared with other processes
    /// through a store (see [`crate::shared::keys`]).
    pub share_keys: bool,
    /// With [`EndpointSpec::shared`]: whether its token limit is shared as well
    /// (leased from a shared token bucket and settled with the actual usage).
    pub shared_tokens: bool,
    /// Whether its breaker's "open until" is shared with other processes through a
    /// store (see [`crate::shared::breakers`]).
    pub share_breaker: bool,
}

impl EndpointSpec {
    /// An endpoint with `priority` (lower is preferred) and `keys` keys.
    pub fn new(priority: u8, keys: u16) -> EndpointSpec {
        EndpointSpec {
            pool: EndpointConfig::new(priority, keys),
            limiter: None,
            standby: false,
            shared: false,
            share_keys: false,
            shared_tokens: false,
            share_breaker: false,
        }
    }

    /// The same endpoint on standby (see [`EndpointSpec::standby`]).
    #[must_use]
    pub fn on_standby(mut self) -> EndpointSpec {
        self.standby = true;
        self
    }

    /// The same endpoint with its request limit shared (see [`EndpointSpec::shared`]).
    #[must_use]
    pub fn with_shared_limit(mut self) -> EndpointSpec {
        self.shared = true;
        self
    }

    /// The same endpoint with its own rate limits.
    #[must_use]
    pub fn with_limiter(mut self, limiter: LimiterConfig) -> EndpointSpec {
        self.limiter = Some(limiter);
        self
    }
}

/// Something the shared machines did, for logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EngineEvent {
    /// An endpoint's breaker changed state.
    Breaker {
        /// The endpoint.
        endpoint: EndpointId,
        /// The transition.
        event: BreakerEvent,
    },
    /// An operator changed an endpoint's breaker mode
    /// ([`Engine::set_breaker_mode`]).
    BreakerModeChanged {
        /// When.
        at: Timestamp,
        /// The endpoint.
        endpoint: EndpointId,
        /// The mode left.
        from: BreakerMode,
        /// The mode entered.
        to: BreakerMode,
    },
    /// An operator reset an endpoint's breaker to closed ([`Engine::reset_breaker`]).
    /// When it was not closed, an [`EngineEvent::Breaker`] transition to closed follows.
    BreakerReset {
        /// When.
        at: Timestamp,
        /// The endpoint.
        endpoint: EndpointId,
        /// The state it was in.
        from: StateKind,
    },
    /// A key cooled down, was disabled, or was enabled again.
    Key(PoolEvent),
    /// A shared limit's store failed, or answered again.
    Shared(SharedEvent),
    /// A grant was reclaimed: its attempt was overdue by [`RECLAIM_GRACE`] (its call was
    /// dropped without being cancelled, or its driver stopped polling). What it held —
    /// a call-in-flight slot, a probe — was given back.
    Reclaimed {
        /// When.
        at: Timestamp,
        /// The grant.
        grant: crate::retry::Grant,
    },
}

/// The shared machines of many concurrent calls. See the module documentation.
pub struct Engine {
    policy: Policy,
    /// A fresh backoff for the policy, copied into every call.
    backoff: Backoff,
    pool: Pool,
    endpoints: Vec<EndpointState>,
    rng: CoreRng,
    clock: Monotonic,
    events: Ring<EngineEvent, EVENT_CAPACITY>,
    /// Every grant issued and not yet ended.
    ledger: Ledger,
    /// Reports refused: grants of another engine, or already ended.
    stale_reports: u64,
    /// Sweeps that reclaimed overdue grants.
    reclaims: u64,
    /// The hedge budget of every call.
    hedges: HedgeBudget,
    /// Key states and breakers shared with other processes, when some endpoint
    /// shares them.
    keys: Option<KeySync>,
}

impl core::fmt::Debug for Engine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Engine")
            .field("endpoints", &self.endpoints.len())
            .field("now", &self.clock.latest())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine for `endpoints` under `policy`, its RNG seeded with `seed`.
    pub fn new(
        policy: Policy,
        endpoints: &[EndpointSpec],
        seed: Seed,
    ) -> Result<Engine, ConfigError> {
        policy.validate()?;
        let pool = Pool::new(&PoolConfig::new(endpoints.iter().map(|e| e.pool).collect()))?;
        let mut states = Vec::with_capacity(endpoints.len());
        for spec in endpoints {
            let limits = spec.limiter.as_ref().unwrap_or(&policy.limiter);
            limits.validate()?;
            states.push(EndpointState {
                breaker: Breaker::new(&policy.breaker),
                budget: RetryBudget::new(policy.budget),
                limiter: Limiter::new(limits),
                health: HealthWindow::new(&policy.health),
                servers: alloc::vec![ServerLimits::default(); usize::from(spec.pool.keys)],
                follow_server: limits.follow_server,
                standby: spec.standby,
                shared: spec.shared.then(|| {
                    let token_burst = spec.shared_tokens.then(|| limits.token_burst()).flatten();
                    SharedQuota::new(&policy.shared, token_burst)
                }),
                share_keys: spec.share_keys,
                share_breaker: spec.share_breaker,
                breaker_until: Timestamp::ZERO,
                succeeded_at: Timestamp::ZERO,
                failing_since: None,
            });
        }
        Ok(Engine {
            hedges: HedgeBudget::new(&policy.hedge),
            backoff: Backoff::new(policy.backoff),
            policy,
            pool,
            endpoints: states,
            rng: rng::from_seed(seed),
            clock: Monotonic::default(),
            events: Ring::new(),
            ledger: Ledger::new(engine_id(&seed)),
            keys: endpoints
                .iter()
                .any(|e| e.share_keys || e.share_breaker)
                .then(KeySync::new),
            stale_reports: 0,
            reclaims: 0,
        })
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Starts a call under the policy's retry rules. Its idempotency key is derived from
    /// `business_id` when given (stable across processes), else drawn from the RNG.
    pub fn start_call(&mut self, now: Timestamp, business_id: Option<&[u8]>) -> Call {
        let key = self.call_key(business_id);
        Call::with_backoff(now, &self.policy.retry, self.backoff, key)
    }

    /// Starts a call with its own retry rules (say, an interactive call in a batch engine).
    pub fn start_call_with(
        &mut self,
        now: Timestamp,
        retry: &RetryConfig,
        business_id: Option<&[u8]>,
    ) -> Call {
        let key = self.call_key(business_id);
        Call::with_backoff(now, retry, self.backoff, key)
    }

    fn call_key(&mut self, business_id: Option<&[u8]>) -> IdempotencyKey {
        match business_id {
            Some(id) => IdempotencyKey::from_business_id(id),
            None => IdempotencyKey::random(&mut self.rng),
        }
    }

    /// The pool, for key states and counts.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// An endpoint's breaker.
    pub fn breaker(&self, endpoint: EndpointId) -> Option<&Breaker> {
        self.state(endpoint).map(|s| &s.breaker)
    }

    /// Since when an endpoint has been failing: its first endpoint-scope failure since
    /// its last success (`None` while it is not failing, or for an unknown endpoint).
    pub fn failing_since(&self, endpoint: EndpointId) -> Option<Timestamp> {
        self.state(endpoint).and_then(|s| s.failing_since)
    }

    /// An endpoint's limiter.
    pub fn limiter(&self, endpoint: EndpointId) -> Option<&Limiter> {
        self.state(endpoint).map(|s| &s.limiter)
    }

    /// What a key's server said about its rate limits (`None` for an unknown key, or
    /// when the endpoint does not follow the server's headers).
    pub fn server_limits(&self, target: Target) -> Option<&ServerLimits> {
        self.state(target.endpoint)
            .and_then(|s| s.server(target.key))
    }

    /// Grants issued and not yet ended (attempts in flight and reserved slots).
    pub fn outstanding(&self) -> usize {
        self.ledger.len()
    }

    /// The hedge budget: calls counted and hedges paid.
    pub fn hedge_budget(&self) -> &HedgeBudget {
        &self.hedges
    }

    /// Reports refused because their grant was not this engine's, or already ended.
    pub fn stale_reports(&self) -> u64 {
        self.stale_reports
    }

    /// How many sweeps reclaimed overdue grants (calls dropped without being
    /// cancelled, or attempts never reported).
    pub fn reclaims(&self) -> u64 {
        self.reclaims
    }

    /// An endpoint's health over the policy's window, against the policy's SLA.
    pub fn health(&self, now: Timestamp, endpoint: EndpointId) -> Option<HealthReport> {
        let now = now.max(self.clock.latest());
        self.state(endpoint)
            .map(|s| s.health.report(now, &self.policy.sla))
    }

    /// The next event of the shared machines.
    pub fn poll_event(&mut self) -> Option<EngineEvent> {
        self.events.pop()
    }

    /// Events dropped because nobody drained them.
    pub fn dropped_events(&self) -> u64 {
        self.events.dropped()
    }

    /// The earliest instant at which something happens without an input: a breaker
    /// may half-open, or an overdue grant is reclaimed. Drivers need not act on it
    /// (every decision catches up first); [`Engine::handle_timeout`] brings the state
    /// (and its events) up to date.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        let now = self.clock.latest();
        self.endpoints
            .iter()
            .filter_map(|s| s.breaker.poll_timeout())
            .chain(
                self.endpoints
                    .iter()
                    .filter_map(|s| s.shared.as_ref().and_then(|q| q.poll_timeout(now))),
            )
            .chain(
                (self.ledger.next_reclaim() < Timestamp::MAX).then(|| self.ledger.next_reclaim()),
            )
            .min()
    }

    /// Brings the shared machines up to `now`: open breakers whose time is up become
    /// half-open, shared-limit asks past their timeout fail, and overdue grants are
    /// reclaimed.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        let now = self.clock.observe(now);
        for (i, s) in self.endpoints.iter_mut().enumerate() {
            s.breaker.handle_timeout(now);
            let endpoint = EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
            if let Some(ev) = lease::shared_timeout(s, now, endpoint) {
                self.events.push(EngineEvent::Shared(ev));
            }
        }
        self.reclaim(now);
        self.drain_events();
    }

    /// Grants of `endpoint` issued and not yet ended.
    pub fn outstanding_on(&self, endpoint: EndpointId) -> usize {
        self.ledger.count(|e| e.target.endpoint == endpoint)
    }

    fn state(&self, endpoint: EndpointId) -> Option<&EndpointState> {
        self.endpoints.get(usize::from(endpoint.0))
    }

    fn drain_events(&mut self) {
        for i in 0..self.endpoints.len() {
            let endpoint = EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
            self.drain_breaker(endpoint);
        }
        while let Some(e) = self.pool.poll_event() {
            self.note_key_event(&e);
            self.events.push(EngineEvent::Key(e));
        }
    }

    /// Moves `endpoint`'s breaker events out; an open of a breaker that shares its
    /// state goes to the store as well.
    fn drain_breaker(&mut self, endpoint: EndpointId) {
        let Some(s) = self.endpoints.get_mut(usize::from(endpoint.0)) else {
            return;
        };
        while let Some(event) = s.breaker.poll_event() {
            self.events.push(EngineEvent::Breaker { endpoint, event });
            let BreakerState::Open { until } = s.breaker.state() else {
                continue;
            };
            // An open this breaker does not enforce (metrics only) is not the others' to enforce.
            let enforced = s.breaker.mode() == BreakerMode::Auto;
            if event.to != StateKind::Open || !s.share_breaker || !enforced {
                continue;
            }
            s.breaker_until = s.breaker_until.max(until);
            if let Some(sync) = self.keys.as_mut() {
                sync.on_breaker_opened(endpoint, event.at, until);
            }
        }
    }

    /// Hands a key event to the shared key states, when its endpoint shares them.
    fn note_key_event(&mut self, e: &PoolEvent) {
        let Some(sync) = self.keys.as_mut() else {
            return;
        };
        let shares = self
            .endpoints
            .get(usize::from(e.target().endpoint.0))
            .is_some_and(|s| s.share_keys);
        if shares {
            sync.on_pool_event(e);
        }
    }

    /// [`Engine::drain_events`] after an input that touched only `endpoint`'s machines:
    /// every input drains, so no other breaker holds an event and the order is the same.
    #[inline]
    fn drain_events_of(&mut self, endpoint: EndpointId) {
        let breaker = self
            .endpoints
            .get(usize::from(endpoint.0))
            .is_some_and(|s| s.breaker.has_events());
        // Nearly every decision emits nothing: test inline, drain out of line.
        if breaker || self.pool.has_events() {
            self.drain_pending_of(endpoint);
        }
    }

    #[cold]
    #[inline(never)]
    fn drain_pending_of(&mut self, endpoint: EndpointId) {
        self.drain_breaker(endpoint);
        while let Some(e) = self.pool.poll_event() {
            self.note_key_event(&e);
            self.events.push(EngineEvent::Key(e));
        }
    }

    /// When a throttled key may serve again: the call's own (jittered) retry instant,
    /// never before the server's hint — and the hint alone when the call will not wait
    /// for it.
    fn cool_until(at: Timestamp, tokens: u64, report: &Report) -> Timestamp {
        let hinted = report.hints.wait_hint(tokens).map(|h| at.saturating_add(h));
        match (hinted, report.retry_at.filter(|r| *r < Timestamp::MAX)) {
            (Some(h), Some(r)) => h.max(r),
            (Some(h), None) => h,
            (None, r) => r.unwrap_or(at),
        }
    }
}

/// A nonzero id for the engine, mixed from its seed (engines built from one seed share
/// it). Grants from [`SingleEndpoint`](crate::retry::SingleEndpoint) carry id 0.
fn engine_id(seed: &Seed) -> u64 {
    let id = seed.chunks(8).fold(0x9e37_79b9_7f4a_7c15u64, |acc, chunk| {
        let word = chunk
            .iter()
            .fold(0u64, |w, &b| w.rotate_left(8) ^ u64::from(b));
        (acc ^ word)
            .wrapping_mul(0xbf58_476d_1ce4_e5b9)
            .rotate_left(31)
    });
    id | 1
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod liveness_tests;
