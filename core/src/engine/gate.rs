//! The engine as the full [`Gate`]: before each attempt it asks pool → breaker → budget
//! → rate limits in one walk, commits a grant (or reserves a rate-limit slot) and
//! records it in the ledger; after it, it tells every machine the outcome.

use core::time::Duration;

use crate::breaker::{BreakerInput, Permit};
use crate::classify::{Class, ClassifyConfig, Failure, Scope, Verdict};
use crate::health::{Sample, SampleResult};
use crate::ids::{EndpointId, Target};
use crate::pool::{DisableReason, KeyState, Selection};
use crate::retry::{Admit, Gate, GateSeal, Grant, Query, Report, WaitCause};
use crate::rng::CoreRng;
use crate::time::Timestamp;

use super::endpoint::{Blocked, EndpointState, RateSlot};
use super::ledger::{Entry, reclaim_at};
use super::{BUSY_RECHECK, Engine, EngineEvent};

impl GateSeal for Engine {}

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
        self.reclaim(now);
        if query.hedge && !self.hedges.can_spend() {
            return Admit::NotBefore(Timestamp::MAX, WaitCause::Budget);
        }
        let mut blocked = Blocked::default();
        let mut probe = None;
        let mut charge = None;
        let tokens = query.tokens;
        let states = &mut self.endpoints;
        // Each endpoint is asked breaker → budget → rate limits; the limiter's
        // `acquire` is the first step that commits, so everything that could still
        // refuse is asked before it, and a grant is committed in the same walk.
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
            let retry = query.charges_budget(endpoint);
            if retry && !s.budget.can_withdraw(now) {
                // A holding call waits for the budget's floor to grant its next retry.
                match s.budget.available_at(now).filter(|_| s.holds(now, query)) {
                    Some(at) => blocked.note(at.min(s.hold_ends(query)), WaitCause::Budget),
                    None => blocked.budget_spent = true,
                }
                return false;
            }
            if let Some(at) = s.shared_wait(now, tokens) {
                blocked.note(at, WaitCause::RateLimit);
                return false;
            }
            // The rate limits come last: acquiring is the first step that charges.
            match s.acquire_rate(now, target.key, tokens) {
                RateSlot::At(at) if at > now => {
                    blocked.note_slot(at, target);
                    return false;
                }
                RateSlot::At(_) => {}
                RateSlot::Busy => {
                    blocked.note(now.saturating_add(BUSY_RECHECK), WaitCause::Busy);
                    return false;
                }
                RateSlot::TooLarge => {
                    blocked.too_large = true;
                    return false;
                }
            }
            // Everything above allowed it, so these grant.
            s.spend_shared(now, tokens);
            charge = s
                .server_mut(target.key)
                .map(|server| server.charge(now, tokens));
            probe = match s.breaker.permit(now) {
                Permit::Probe => Some(s.breaker.probe_period()),
                _ => None,
            };
            if retry {
                let _ = s.budget.try_withdraw(now);
            }
            true
        });
        match selection {
            Selection::Picked(target) => {
                self.drain_events_of(target.endpoint);
                let first = query.attempt == 1 && !query.hedge;
                if query.hedge {
                    let _ = self.hedges.try_spend();
                } else if first {
                    self.hedges.on_call();
                }
                let entry = Entry {
                    target,
                    tokens,
                    probe,
                    charge,
                    reserved: None,
                    span: query.span,
                    reclaim_at: reclaim_at(now, query.span),
                    first: false,
                    fallback: false,
                };
                return Admit::Go(self.issue(entry));
            }
            Selection::CoolingUntil(at) => {
                blocked.note(at, WaitCause::Hint(at.saturating_duration_since(now)));
            }
            Selection::Unavailable => {}
        }
        // A hedge goes now or not at all.
        if query.hedge {
            return blocked.verdict();
        }
        if let Some((at, target)) = blocked.reservable(query.deadline) {
            return self.reserve(now, query, target, at);
        }
        blocked.verdict()
    }

    fn confirm(&mut self, now: Timestamp, grant: &Grant) -> Option<Grant> {
        let now = self.clock.observe(now);
        self.reclaim(now);
        let endpoint = grant.target.endpoint;
        let usable = matches!(
            self.pool.key_state(now, grant.target),
            Some(KeyState::Usable)
        );
        let entry = self.ledger.get_mut(grant.ticket)?;
        let s = self.endpoints.get_mut(usize::from(endpoint.0))?;
        // A slot the shared limit's fallback admitted needs a lease if sharing resumed
        // while it waited (the store did not count it).
        let covered = !entry.fallback || s.covers_resumed(now, entry.tokens);
        let permit = (usable && covered).then(|| s.breaker.permit(now));
        let probe = match permit {
            Some(Permit::Allow) => None,
            Some(Permit::Probe) => Some(s.breaker.probe_period()),
            // While the call waited for its slot, the breaker opened, another call's
            // answer cooled or disabled the key, or sharing resumed with no lease for
            // it: the slot is given back and the call asks again.
            Some(Permit::Deny { .. }) | None => {
                s.limiter.on_finish(now, entry.tokens, None);
                let _ = self.ledger.take(grant.ticket);
                self.drain_events_of(endpoint);
                return None;
            }
        };
        if entry.first {
            self.hedges.on_call();
        }
        entry.reserved = None;
        entry.first = false;
        entry.probe = probe;
        entry.reclaim_at = reclaim_at(now, entry.span);
        let at = entry.reclaim_at;
        self.ledger.reschedule(at);
        self.drain_events_of(endpoint);
        Some(Grant { probe, ..*grant })
    }

    fn release(&mut self, now: Timestamp, grant: &Grant) {
        let now = self.clock.observe(now);
        if let Some(entry) = self.ledger.take(grant.ticket) {
            give_back(&mut self.endpoints, now, &entry);
            self.drain_events_of(entry.target.endpoint);
        }
    }

    fn on_attempt_end(&mut self, now: Timestamp, report: &Report) {
        let now = self.clock.observe(now);
        // A grant this engine did not issue, or already heard the end of (or reclaimed
        // as overdue), changes nothing.
        let Some(entry) = self.ledger.take(report.grant.ticket) else {
            self.stale_reports = self.stale_reports.saturating_add(1);
            return;
        };
        let target = entry.target;
        let Some(s) = self.endpoints.get_mut(usize::from(target.endpoint.0)) else {
            return;
        };
        s.limiter.on_finish(now, entry.tokens, report.tokens_used);
        if let (Some(q), Some(actual)) = (s.shared.as_mut(), report.tokens_used) {
            q.on_usage(now, entry.tokens, actual);
        }
        // A window with nothing `remaining` changes nothing (the instant was already
        // observed by `on_finish`), so a response without rate headers skips these.
        let has_windows =
            report.hints.requests.remaining.is_some() || report.hints.tokens.remaining.is_some();
        if has_windows {
            s.limiter.on_hints(now, report.hints);
            if let Some(server) = s.server_mut(target.key) {
                server.on_hints(now, report.hints, entry.charge);
            }
        }
        match report.verdict {
            Verdict::Success => {
                s.failing_since = None;
                s.succeeded_at = now;
            }
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
        // A probe of an earlier half-open period is no probe of this one.
        let was_probe = entry.probe == Some(s.breaker.probe_period());
        s.breaker.on_result(now, input, was_probe, &mut self.rng);
        if let Some(result) = sample {
            s.health.on_sample(now, Sample::new(result, report.latency));
        }
        if let Verdict::Failure(f) = report.verdict {
            if f.scope == Scope::Throttle {
                let until = Engine::cool_until(now, entry.tokens, report);
                let _ = self.pool.on_throttled(now, target, until);
            }
            if f.scope == Scope::Key {
                let _ = self
                    .pool
                    .on_key_rejected(now, target, disable_reason(f.class));
            }
        }
        self.drain_events_of(target.endpoint);
    }

    fn latency_quantile(
        &self,
        now: Timestamp,
        endpoint: EndpointId,
        permille: u64,
        min_samples: u32,
    ) -> Option<Duration> {
        let now = now.max(self.clock.latest());
        self.state(endpoint)
            .and_then(|s| s.health.quantile(now, permille, min_samples))
    }
}

impl Engine {
    /// Records a grant in the ledger and stamps it.
    fn issue(&mut self, entry: Entry) -> Grant {
        let ticket = self.ledger.insert(entry);
        Grant {
            target: entry.target,
            probe: entry.probe,
            tokens: entry.tokens,
            ticket,
        }
    }

    /// Reserves the rate-limit slot at `at` on `target` for the call: charged to the
    /// limits now, sent at `at` after [`Gate::confirm`].
    fn reserve(&mut self, now: Timestamp, query: &Query, target: Target, at: Timestamp) -> Admit {
        let busy = Admit::NotBefore(now.saturating_add(BUSY_RECHECK), WaitCause::Busy);
        let Some(s) = self.endpoints.get_mut(usize::from(target.endpoint.0)) else {
            return busy;
        };
        // A reserved slot spends a leased request still valid when it is sent.
        if s.shared
            .as_ref()
            .is_some_and(|q| q.available(at) == 0 && !q.on_fallback(at))
        {
            return busy;
        }
        let Some(at) = s.limiter.reserve(now, at, query.tokens) else {
            return busy;
        };
        let fallback = s.shared.as_ref().is_some_and(|q| q.on_fallback(at));
        s.spend_shared(at, query.tokens);
        let charge = s
            .server_mut(target.key)
            .map(|server| server.charge(at, query.tokens));
        if query.charges_budget(target.endpoint) {
            let _ = s.budget.try_withdraw(now);
        }
        let entry = Entry {
            target,
            tokens: query.tokens,
            probe: None,
            charge,
            reserved: Some(at),
            span: query.span,
            reclaim_at: reclaim_at(at, query.span),
            first: query.attempt == 1,
            fallback,
        };
        Admit::At(self.issue(entry), at)
    }

    /// Reclaims every grant overdue at `now`.
    #[inline]
    pub(super) fn reclaim(&mut self, now: Timestamp) {
        // Nearly every decision has nothing to reclaim: test inline, sweep out of line.
        if now >= self.ledger.next_reclaim() {
            self.sweep(now);
        }
    }

    #[cold]
    #[inline(never)]
    fn sweep(&mut self, now: Timestamp) {
        let mut overdue = false;
        let endpoints = &mut self.endpoints;
        let events = &mut self.events;
        self.ledger.reclaim(now, |entry, ticket| {
            overdue = true;
            give_back(endpoints, now, &entry);
            let grant = Grant {
                target: entry.target,
                probe: entry.probe,
                tokens: entry.tokens,
                ticket,
            };
            events.push(EngineEvent::Reclaimed { at: now, grant });
        });
        if overdue {
            self.reclaims = self.reclaims.saturating_add(1);
            self.drain_events();
        }
    }
}

/// Gives back what an outstanding grant held (a call-in-flight slot, a probe).
fn give_back(endpoints: &mut [EndpointState], now: Timestamp, entry: &Entry) {
    if let Some(s) = endpoints.get_mut(usize::from(entry.target.endpoint.0)) {
        s.limiter.on_finish(now, entry.tokens, None);
        if let Some(period) = entry.probe {
            s.breaker.release_probe(period);
        }
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
