//! The engine: the machines shared by every call, behind one `&mut self`.
//!
//! An [`Engine`] owns the key/endpoint [`Pool`], and per endpoint a circuit
//! [`Breaker`], a [`RetryBudget`], a rate [`Limiter`] and a [`HealthWindow`]. It is the
//! full [`Gate`]: before each attempt it asks pool → breaker → budget → limiter in one
//! place ([`Gate::admit`]); after it, it reports the outcome to all of them
//! ([`Gate::on_attempt_end`]). Adapters share one engine between many calls behind a
//! lock held only for these decisions.

use alloc::vec::Vec;
use core::time::Duration;

use crate::backoff::Backoff;
use crate::breaker::{Breaker, BreakerEvent, BreakerInput, Permit};
use crate::budget::RetryBudget;
use crate::classify::{Class, ClassifyConfig, Failure, Scope, Verdict};
use crate::error::ConfigError;
use crate::health::{HealthReport, HealthWindow, Sample, SampleResult};
use crate::idempotency::IdempotencyKey;
use crate::ids::{EndpointId, Target};
use crate::limiter::{self, Limiter, LimiterConfig};
use crate::policy::Policy;
use crate::pool::{DisableReason, EndpointConfig, Pool, PoolConfig, PoolEvent, Selection};
use crate::retry::{Admit, Call, Gate, GiveUpReason, Grant, Query, Report, RetryConfig, WaitCause};
use crate::ring::Ring;
use crate::rng::{self, CoreRng, Seed};
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
}

impl EndpointSpec {
    /// An endpoint with `priority` (lower is preferred) and `keys` keys.
    pub fn new(priority: u8, keys: u16) -> EndpointSpec {
        EndpointSpec {
            pool: EndpointConfig::new(priority, keys),
            limiter: None,
            standby: false,
        }
    }

    /// The same endpoint on standby (see [`EndpointSpec::standby`]).
    #[must_use]
    pub fn on_standby(mut self) -> EndpointSpec {
        self.standby = true;
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
    /// A key cooled down, was disabled, or was enabled again.
    Key(PoolEvent),
}

struct EndpointState {
    breaker: Breaker,
    budget: RetryBudget,
    limiter: Limiter,
    health: HealthWindow,
    single_key: bool,
    standby: bool,
    /// The first endpoint-scope failure since the last success, if the endpoint has
    /// failed since: how long it has been unavailable, for [`Query::max_hold`].
    failing_since: Option<Timestamp>,
}

impl EndpointState {
    /// Whether a call may use this endpoint: only the endpoint it is restricted to, or
    /// any endpoint not on standby.
    fn serves(&self, endpoint: EndpointId, query: &Query) -> bool {
        query.only.map_or(!self.standby, |only| only == endpoint)
    }

    /// Whether a holding call still waits for this endpoint at `now`: it has not been
    /// failing for `max_hold` or longer.
    fn holds(&self, now: Timestamp, query: &Query) -> bool {
        query.hold
            && self
                .failing_since
                .is_none_or(|since| now.saturating_duration_since(since) < query.max_hold)
    }

    /// The instant a holding call stops holding for this endpoint.
    fn hold_ends(&self, query: &Query) -> Timestamp {
        self.failing_since
            .map_or(Timestamp::MAX, |since| since.saturating_add(query.max_hold))
    }
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
                single_key: spec.pool.keys == 1,
                standby: spec.standby,
                failing_since: None,
            });
        }
        Ok(Engine {
            backoff: Backoff::new(policy.backoff),
            policy,
            pool,
            endpoints: states,
            rng: rng::from_seed(seed),
            clock: Monotonic::default(),
            events: Ring::new(),
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

    /// Re-enables a disabled key (say, after the operator topped up the account).
    pub fn enable_key(
        &mut self,
        now: Timestamp,
        target: Target,
    ) -> Result<(), crate::error::UsageError> {
        let now = self.clock.observe(now);
        let result = self.pool.enable_key(now, target);
        self.drain_events();
        result
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

    /// The earliest instant at which a breaker may half-open.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.endpoints
            .iter()
            .filter_map(|s| s.breaker.poll_timeout())
            .min()
    }

    fn state(&self, endpoint: EndpointId) -> Option<&EndpointState> {
        self.endpoints.get(usize::from(endpoint.0))
    }

    fn drain_events(&mut self) {
        for (i, s) in self.endpoints.iter_mut().enumerate() {
            while let Some(event) = s.breaker.poll_event() {
                let endpoint = EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
                self.events.push(EngineEvent::Breaker { endpoint, event });
            }
        }
        while let Some(e) = self.pool.poll_event() {
            self.events.push(EngineEvent::Key(e));
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
        if let Some(s) = self.endpoints.get_mut(usize::from(endpoint.0)) {
            while let Some(event) = s.breaker.poll_event() {
                self.events.push(EngineEvent::Breaker { endpoint, event });
            }
        }
        while let Some(e) = self.pool.poll_event() {
            self.events.push(EngineEvent::Key(e));
        }
    }

    /// When a throttled key may serve again: the call's own (jittered) retry instant,
    /// never before the server's hint — and the hint alone when the call will not wait
    /// for it.
    fn cool_until(at: Timestamp, report: &Report) -> Timestamp {
        let hinted = report
            .hints
            .wait_hint(report.grant.tokens)
            .map(|h| at.saturating_add(h));
        match (hinted, report.retry_at.filter(|r| *r < Timestamp::MAX)) {
            (Some(h), Some(r)) => h.max(r),
            (Some(h), None) => h,
            (None, r) => r.unwrap_or(at),
        }
    }
}

/// The earliest wait seen while walking the endpoints, and why.
#[derive(Default)]
struct Blocked {
    wait: Option<(Timestamp, WaitCause)>,
    /// The earliest instant an open breaker lifts, for a call that does not hold.
    breaker_open: Option<Timestamp>,
    budget_spent: bool,
    too_large: bool,
}

impl Blocked {
    fn note(&mut self, at: Timestamp, cause: WaitCause) {
        if self.wait.is_none_or(|(t, _)| at < t) {
            self.wait = Some((at, cause));
        }
    }

    fn note_open(&mut self, until: Timestamp) {
        self.breaker_open = Some(self.breaker_open.map_or(until, |u| u.min(until)));
    }

    /// A call that does not hold gives up on an open breaker unless something else
    /// frees up before it lifts.
    fn verdict(self) -> Admit {
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

impl Gate for Engine {
    type Rng = CoreRng;

    fn classifier(&self) -> &ClassifyConfig {
        &self.policy.classify
    }

    fn rng(&mut self) -> &mut CoreRng {
        &mut self.rng
    }

    fn admit(&mut self, now: Timestamp, query: &Query) -> Admit {
        let now = self.clock.observe(now);
        let mut blocked = Blocked::default();
        let mut probe = false;
        let states = &mut self.endpoints;
        // Each endpoint is asked breaker → budget → limiter; the limiter's `acquire`
        // is the first step that commits, so everything that could still refuse is
        // asked before it, and a grant is committed in the same walk.
        let selection = self.pool.select(now, |target| {
            let endpoint = target.endpoint;
            let Some(s) = states.get_mut(usize::from(endpoint.0)) else {
                return false;
            };
            if !s.serves(endpoint, query) {
                return false;
            }
            if let Some(a) = query.avoid.filter(|a| a.rules_out(now, target)) {
                blocked.note(a.until, a.cause);
                return false;
            }
            if let Permit::Deny { until } = s.breaker.peek(now) {
                if s.holds(now, query) {
                    blocked.note(until.min(s.hold_ends(query)), WaitCause::Breaker);
                } else {
                    blocked.note_open(until);
                }
                return false;
            }
            let charge = query.charges_budget(endpoint);
            if charge && !s.budget.can_withdraw(now) {
                // A holding call waits for the budget's floor to grant its next retry.
                match s.budget.available_at(now).filter(|_| s.holds(now, query)) {
                    Some(at) => blocked.note(at.min(s.hold_ends(query)), WaitCause::Budget),
                    None => blocked.budget_spent = true,
                }
                return false;
            }
            match s.limiter.acquire(now, query.tokens) {
                limiter::Admit::Go => {}
                limiter::Admit::NotBefore(at) => {
                    blocked.note(at, WaitCause::RateLimit);
                    return false;
                }
                limiter::Admit::Busy => {
                    blocked.note(now.saturating_add(BUSY_RECHECK), WaitCause::Busy);
                    return false;
                }
                limiter::Admit::TooLarge => {
                    blocked.too_large = true;
                    return false;
                }
            }
            // The peek above allowed it, so these grant.
            probe = matches!(s.breaker.permit(now), Permit::Probe);
            if charge {
                let _ = s.budget.try_withdraw(now);
            }
            true
        });
        let target = match selection {
            Selection::Picked(target) => target,
            Selection::CoolingUntil(at) => {
                blocked.note(at, WaitCause::Hint(at.saturating_duration_since(now)));
                return blocked.verdict();
            }
            Selection::Unavailable => return blocked.verdict(),
        };
        self.drain_events_of(target.endpoint);
        Admit::Go(Grant {
            target,
            probe,
            tokens: query.tokens,
        })
    }

    fn on_attempt_end(&mut self, now: Timestamp, report: &Report) {
        let now = self.clock.observe(now);
        let target = report.grant.target;
        let Some(s) = self.endpoints.get_mut(usize::from(target.endpoint.0)) else {
            return;
        };
        s.limiter
            .on_finish(now, report.grant.tokens, report.tokens_used);
        let exhausted =
            report.hints.requests.remaining == Some(0) || report.hints.tokens.remaining == Some(0);
        // A window with nothing `remaining` changes nothing (the instant was already
        // observed by `on_finish`), so a response without rate headers skips the call.
        let has_windows =
            report.hints.requests.remaining.is_some() || report.hints.tokens.remaining.is_some();
        if has_windows && (s.single_key || !exhausted) {
            s.limiter.on_hints(now, report.hints);
        }
        match report.verdict {
            Verdict::Success => s.failing_since = None,
            Verdict::Failure(f) if f.scope == Scope::Endpoint && f.class != Class::Cancelled => {
                s.failing_since.get_or_insert(now);
            }
            Verdict::Failure(_) => {}
        }
        let (input, sample) = match report.verdict {
            Verdict::Success => {
                s.budget.on_success(now);
                (
                    BreakerInput::Success {
                        latency: report.latency,
                    },
                    Some(SampleResult::Success),
                )
            }
            Verdict::Failure(f) => (breaker_input(&f), sample_result(&f)),
        };
        s.breaker
            .on_result(now, input, report.grant.probe, &mut self.rng);
        if let Some(result) = sample {
            s.health.on_sample(now, Sample::new(result, report.latency));
        }
        // Keys of one endpoint may belong to different accounts: a window the server
        // says is spent throttles the key that was told, not the endpoint.
        let throttled = matches!(report.verdict, Verdict::Failure(f) if f.scope == Scope::Throttle);
        if throttled || (exhausted && !s.single_key) {
            let _ = self
                .pool
                .on_throttled(now, target, Engine::cool_until(now, report));
        }
        if let Verdict::Failure(f) = report.verdict
            && f.scope == Scope::Key
        {
            let _ = self
                .pool
                .on_key_rejected(now, target, disable_reason(f.class));
        }
        self.drain_events_of(target.endpoint);
    }
}

/// Only endpoint-scope failures count toward a breaker; the rest are the request's,
/// the key's or the rate limit's doing.
fn breaker_input(f: &Failure) -> BreakerInput {
    if f.scope == Scope::Endpoint {
        BreakerInput::Failure
    } else {
        BreakerInput::Ignored
    }
}

fn sample_result(f: &Failure) -> Option<SampleResult> {
    Some(match (f.scope, f.class) {
        (_, Class::Cancelled) => return None,
        (Scope::Endpoint, Class::Timeout) => SampleResult::Timeout,
        (Scope::Endpoint, _) => SampleResult::EndpointError,
        (Scope::Throttle, _) => SampleResult::Throttled,
        (Scope::Key, _) => SampleResult::KeyError,
        (Scope::Request, _) => SampleResult::RequestError,
    })
}

fn disable_reason(class: Class) -> DisableReason {
    match class {
        Class::Unauthorized => DisableReason::Unauthorized,
        Class::Forbidden => DisableReason::Forbidden,
        Class::QuotaExhausted | Class::PaymentRequired => DisableReason::QuotaExhausted,
        _ => DisableReason::Other,
    }
}

#[cfg(test)]
mod tests;
