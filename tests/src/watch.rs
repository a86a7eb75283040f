//! A transparent [`Gate`] around the real [`Engine`] that looks at the shared machines
//! just before every decision and checks what the engine granted.
//!
//! Every call goes straight through to the engine; the wrapper only reads state (breaker
//! `peek`, pool `key_state`) at the engine's own clamped instant, which it can track
//! exactly because every input of the engine passes through it or through the harness.

use steadfast_core::breaker::Permit;
use steadfast_core::classify::{ClassifyConfig, Verdict};
use steadfast_core::engine::{Engine, EngineEvent};
use steadfast_core::ids::{EndpointId, KeyId, Target};
use steadfast_core::limiter;
use steadfast_core::pool::KeyState;
use steadfast_core::retry::{Admit, Gate, Grant, Query, Report, WaitCause};
use steadfast_core::rng::CoreRng;
use steadfast_core::time::Timestamp;

use crate::harness::Invariant;

/// What the engine was asked and answered once, with the state it answered from.
#[derive(Debug, Clone)]
pub struct AdmitRecord {
    /// The engine's clamped instant.
    pub at: Timestamp,
    /// The call's question.
    pub query: Query,
    /// The engine's answer.
    pub answer: Admit,
    /// Each endpoint's breaker `peek(at)` just before the decision.
    pub peeks: Vec<Permit>,
    /// Each key's state at `at` just before the decision, by endpoint.
    pub keys: Vec<Vec<KeyState>>,
    /// Each endpoint's limiter `check(at, tokens)` just before the decision.
    pub limits: Vec<limiter::Admit>,
    /// Since when each endpoint has been failing, just before the decision.
    pub failing: Vec<Option<Timestamp>>,
    /// A reserved slot confirmed (`answer` is then `Go` with the confirmed grant): the
    /// limits were charged when it was reserved, so they are not asked again.
    pub confirmed: bool,
}

/// What the wrapper tracks between decisions.
#[derive(Debug, Default)]
pub struct Watch {
    /// The engine's clock: the latest instant any of its inputs carried.
    pub clock: Timestamp,
    /// Grants sent (granted at once, or reserved and confirmed) and not yet reported.
    pub sent: Vec<Grant>,
    /// Sent grants the engine reclaimed as overdue before they were reported.
    pub reclaimed: Vec<Grant>,
    /// The admits of the current poll.
    pub admits: Vec<AdmitRecord>,
    /// The verdicts reported during the current poll.
    pub reports: Vec<Verdict>,
    /// Broken invariants seen inside the engine's calls.
    pub broken: Vec<(Invariant, String)>,
    /// Reserved slots not yet confirmed or released, with the question they answered.
    pub reserved: Vec<(Grant, Query)>,
}

impl Watch {
    /// A watch for `endpoints` endpoints.
    pub fn new(endpoints: usize) -> Watch {
        let _ = endpoints;
        Watch::default()
    }

    /// Sent grants of `endpoint` not yet reported (nor reclaimed).
    pub fn in_flight(&self, endpoint: usize) -> u32 {
        self.sent
            .iter()
            .filter(|g| usize::from(g.target().endpoint.0) == endpoint)
            .count() as u32
    }

    /// Sent probes of `endpoint`'s half-open period `period` not yet reported.
    pub fn probes(&self, endpoint: usize, period: u32) -> u32 {
        self.sent
            .iter()
            .filter(|g| usize::from(g.target().endpoint.0) == endpoint)
            .filter(|g| g.probe_period() == Some(period))
            .count() as u32
    }

    /// Reserved slots of `endpoint` not yet confirmed or released.
    pub fn reserved_on(&self, endpoint: usize) -> u32 {
        self.reserved
            .iter()
            .filter(|(g, _)| usize::from(g.target().endpoint.0) == endpoint)
            .count() as u32
    }

    /// Raises the tracked engine clock to `now` and returns it.
    pub fn observe(&mut self, now: Timestamp) -> Timestamp {
        self.clock = self.clock.max(now);
        self.clock
    }
}

/// The gate the harness's calls are driven with.
pub struct Watched<'a> {
    /// The real engine.
    pub engine: &'a mut Engine,
    /// The tracked state.
    pub watch: &'a mut Watch,
}

impl Watched<'_> {
    fn limits(&self, at: Timestamp, tokens: u64) -> Vec<limiter::Admit> {
        (0..self.engine.pool().endpoint_count())
            .map(|e| {
                self.engine
                    .limiter(EndpointId(e))
                    .map_or(limiter::Admit::Go, |l| l.check(at, tokens))
            })
            .collect()
    }

    fn snapshot(&self, at: Timestamp) -> (Vec<Permit>, Vec<Vec<KeyState>>) {
        let pool = self.engine.pool();
        let n = pool.endpoint_count();
        let peeks = (0..n)
            .map(|e| {
                self.engine
                    .breaker(EndpointId(e))
                    .map_or(Permit::Allow, |b| b.peek(at))
            })
            .collect();
        let keys = (0..n)
            .map(|e| {
                (0..pool.key_count(EndpointId(e)))
                    .map(|k| {
                        let t = Target {
                            endpoint: EndpointId(e),
                            key: KeyId(k),
                        };
                        pool.key_state(at, t).unwrap_or(KeyState::Usable)
                    })
                    .collect()
            })
            .collect();
        (peeks, keys)
    }

    fn failing(&self) -> Vec<Option<Timestamp>> {
        (0..self.engine.pool().endpoint_count())
            .map(|e| self.engine.failing_since(EndpointId(e)))
            .collect()
    }

    fn broke(&mut self, invariant: Invariant, detail: String) {
        self.watch.broken.push((invariant, detail));
    }

    fn check_grant(&mut self, record: &AdmitRecord, now: Timestamp) {
        if let Admit::NotBefore(until, WaitCause::Breaker) = record.answer
            && !record.query.hold
        {
            self.broke(
                Invariant::BreakerHold,
                format!("a call that does not hold on breakers was told to wait until {until:?}"),
            );
        }
        let grant = match record.answer {
            Admit::Go(grant) => grant,
            Admit::At(grant, slot) => return self.check_reservation(record, grant, slot),
            _ => return,
        };
        let e = usize::from(grant.target().endpoint.0);
        let k = usize::from(grant.target().key.0);
        let Some(&peek) = record.peeks.get(e) else {
            self.broke(Invariant::UnknownTarget, format!("{grant:?}"));
            return;
        };
        let Some(&key) = record.keys.get(e).and_then(|keys| keys.get(k)) else {
            self.broke(Invariant::UnknownTarget, format!("{grant:?}"));
            return;
        };
        if let Permit::Deny { until } = peek {
            let at = record.at;
            self.broke(
                Invariant::BreakerBypassed,
                format!("{grant:?} at {at:?}: breaker denies until {until:?}"),
            );
        }
        let limit = record.limits.get(e).copied();
        if !record.confirmed && limit != Some(limiter::Admit::Go) {
            self.broke(
                Invariant::LimiterBypassed,
                format!("{grant:?} at {:?}: the limiter said {limit:?}", record.at),
            );
        }
        if grant.is_probe() != matches!(peek, Permit::Probe) {
            self.broke(
                Invariant::ProbeAccounting,
                format!("{grant:?} granted while the breaker peeked {peek:?}"),
            );
        }
        match key {
            KeyState::Usable => {}
            KeyState::Disabled { reason } => self.broke(
                Invariant::DisabledKey,
                format!("{grant:?}: key disabled ({reason:?})"),
            ),
            KeyState::Cooling { until } => self.broke(
                Invariant::CooledKey,
                format!("{grant:?} at {:?}: key cooling until {until:?}", record.at),
            ),
        }
        if let Some(avoid) = record.query.avoid
            && !record.confirmed
            && avoid.rules_out(record.at, grant.target())
        {
            self.broke(
                Invariant::AvoidIgnored,
                format!(
                    "{grant:?} at {:?} (call's now {now:?}): the call's last failure rules it out: {avoid:?}",
                    record.at
                ),
            );
        }
        self.watch.sent.push(grant);
        let probes = self.engine.policy().breaker.half_open_probes;
        if let Some(period) = grant.probe_period() {
            let got = self.watch.probes(e, period);
            if got > probes {
                self.broke(
                    Invariant::TooManyProbes,
                    format!("{got} probes in flight on endpoint {e}, at most {probes}"),
                );
            }
        }
    }

    /// Brings the engine up to `at` (overdue grants are reclaimed before anything is
    /// decided) and forgets what it reclaimed.
    fn catch_up(&mut self, at: Timestamp) {
        self.engine.handle_timeout(at);
        while let Some(event) = self.engine.poll_event() {
            let EngineEvent::Reclaimed { grant, .. } = event else {
                continue;
            };
            if let Some(i) = self.watch.sent.iter().position(|g| *g == grant) {
                let g = self.watch.sent.swap_remove(i);
                self.watch.reclaimed.push(g);
            } else if let Some(i) = self.watch.reserved.iter().position(|(g, _)| *g == grant) {
                self.watch.reserved.swap_remove(i);
            } else {
                self.broke(
                    Invariant::InFlightAccounting,
                    format!("the engine reclaimed {grant:?}, never granted"),
                );
            }
        }
    }
}

impl Watched<'_> {
    /// A reserved slot: later than the decision, before the call's deadline, on an
    /// endpoint and key the decision could use, holding no probe.
    fn check_reservation(&mut self, record: &AdmitRecord, grant: Grant, slot: Timestamp) {
        let target = grant.target();
        let e = usize::from(target.endpoint.0);
        let k = usize::from(target.key.0);
        let peek = record.peeks.get(e).copied();
        let key = record.keys.get(e).and_then(|keys| keys.get(k)).copied();
        let fine = slot > record.at
            && slot < record.query.deadline
            && !grant.is_probe()
            && peek.is_some_and(|p| p.is_granted())
            && key == Some(KeyState::Usable)
            && !record
                .query
                .avoid
                .is_some_and(|a| a.rules_out(record.at, target));
        if !fine {
            self.broke(
                Invariant::LimiterBypassed,
                format!(
                    "{grant:?} reserved for {slot:?} at {:?}: breaker {peek:?}, key {key:?}, {:?}",
                    record.at, record.query
                ),
            );
        }
    }
}

impl Watched<'_> {
    /// The question a reserved slot answered, forgetting the reservation.
    fn take_reservation(&mut self, grant: &Grant) -> Option<Query> {
        let i = self.watch.reserved.iter().position(|(g, _)| g == grant)?;
        Some(self.watch.reserved.swap_remove(i).1)
    }
}

impl steadfast_core::retry::Sealed for Watched<'_> {}

impl Gate for Watched<'_> {
    type Rng = CoreRng;

    fn classifier(&self) -> &ClassifyConfig {
        Gate::classifier(&*self.engine)
    }

    fn rng(&mut self) -> &mut CoreRng {
        Gate::rng(&mut *self.engine)
    }

    fn admit(&mut self, now: Timestamp, query: &Query) -> Admit {
        let at = self.watch.observe(now);
        self.catch_up(at);
        let (peeks, keys) = self.snapshot(at);
        let failing = self.failing();
        let limits = self.limits(at, query.tokens);
        let answer = self.engine.admit(now, query);
        let record = AdmitRecord {
            at,
            query: *query,
            answer,
            peeks,
            keys,
            limits,
            failing,
            confirmed: false,
        };
        self.check_grant(&record, now);
        if let Admit::At(grant, _) = answer {
            self.watch.reserved.push((grant, *query));
        }
        self.watch.admits.push(record);
        answer
    }

    fn confirm(&mut self, now: Timestamp, grant: &Grant) -> Option<Grant> {
        let at = self.watch.observe(now);
        self.catch_up(at);
        let (peeks, keys) = self.snapshot(at);
        let failing = self.failing();
        let query = self.take_reservation(grant);
        let confirmed = self.engine.confirm(now, grant)?;
        let Some(query) = query else {
            self.broke(
                Invariant::UnknownTarget,
                format!("{grant:?} confirmed but never reserved"),
            );
            return Some(confirmed);
        };
        let record = AdmitRecord {
            at,
            query,
            answer: Admit::Go(confirmed),
            peeks,
            keys,
            limits: Vec::new(),
            failing,
            confirmed: true,
        };
        self.check_grant(&record, now);
        self.watch.admits.push(record);
        Some(confirmed)
    }

    fn release(&mut self, now: Timestamp, grant: &Grant) {
        self.watch.observe(now);
        let _ = self.take_reservation(grant);
        self.engine.release(now, grant);
    }

    fn on_attempt_end(&mut self, now: Timestamp, report: &Report) {
        let at = self.watch.observe(now);
        self.catch_up(at);
        let grant = report.grant;
        if let Some(i) = self.watch.sent.iter().position(|g| *g == grant) {
            self.watch.sent.swap_remove(i);
        } else if let Some(i) = self.watch.reclaimed.iter().position(|g| *g == grant) {
            // Late: the engine reclaimed it and refuses the report.
            self.watch.reclaimed.swap_remove(i);
        } else {
            self.broke(
                Invariant::InFlightAccounting,
                format!("a report for an attempt never granted: {report:?}"),
            );
        }
        self.engine.on_attempt_end(now, report);
        self.watch.reports.push(report.verdict);
    }

    fn latency_quantile(
        &self,
        now: Timestamp,
        endpoint: EndpointId,
        permille: u64,
        min_samples: u32,
    ) -> Option<core::time::Duration> {
        Gate::latency_quantile(&*self.engine, now, endpoint, permille, min_samples)
    }
}
