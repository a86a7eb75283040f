//! A transparent [`Gate`] around the real [`Engine`] that looks at the shared machines
//! just before every decision and checks what the engine granted.
//!
//! Every call goes straight through to the engine; the wrapper only reads state (breaker
//! `peek`, pool `key_state`) at the engine's own clamped instant, which it can track
//! exactly because every input of the engine passes through it or through the harness.

use steadfast_core::breaker::Permit;
use steadfast_core::classify::{ClassifyConfig, Verdict};
use steadfast_core::engine::Engine;
use steadfast_core::ids::{EndpointId, KeyId, Target};
use steadfast_core::limiter;
use steadfast_core::pool::KeyState;
use steadfast_core::retry::{Admit, Gate, Query, Report, WaitCause};
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
}

/// What the wrapper tracks between decisions.
#[derive(Debug, Default)]
pub struct Watch {
    /// The engine's clock: the latest instant any of its inputs carried.
    pub clock: Timestamp,
    /// Granted probes not yet reported, per endpoint.
    pub probes: Vec<u32>,
    /// Granted attempts not yet reported, per endpoint.
    pub in_flight: Vec<u32>,
    /// The admits of the current poll.
    pub admits: Vec<AdmitRecord>,
    /// The verdicts reported during the current poll.
    pub reports: Vec<Verdict>,
    /// Broken invariants seen inside the engine's calls.
    pub broken: Vec<(Invariant, String)>,
}

impl Watch {
    /// A watch for `endpoints` endpoints.
    pub fn new(endpoints: usize) -> Watch {
        Watch {
            probes: vec![0; endpoints],
            in_flight: vec![0; endpoints],
            ..Watch::default()
        }
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
        let Admit::Go(grant) = record.answer else {
            return;
        };
        let e = usize::from(grant.target.endpoint.0);
        let k = usize::from(grant.target.key.0);
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
        if limit != Some(limiter::Admit::Go) {
            self.broke(
                Invariant::LimiterBypassed,
                format!("{grant:?} at {:?}: the limiter said {limit:?}", record.at),
            );
        }
        if grant.probe != matches!(peek, Permit::Probe) {
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
            && avoid.rules_out(record.at, grant.target)
        {
            self.broke(
                Invariant::AvoidIgnored,
                format!(
                    "{grant:?} at {:?} (call's now {now:?}): the call's last failure rules it out: {avoid:?}",
                    record.at
                ),
            );
        }
        let probes = self.engine.policy().breaker.half_open_probes;
        if let Some(p) = self.watch.probes.get_mut(e)
            && grant.probe
        {
            *p = p.saturating_add(1);
            if *p > probes {
                let got = *p;
                self.broke(
                    Invariant::TooManyProbes,
                    format!("{got} probes in flight on endpoint {e}, at most {probes}"),
                );
            }
        }
        if let Some(n) = self.watch.in_flight.get_mut(e) {
            *n = n.saturating_add(1);
        }
    }
}

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
        let (peeks, keys) = self.snapshot(at);
        let limits = self.limits(at, query.tokens);
        let answer = self.engine.admit(now, query);
        let record = AdmitRecord {
            at,
            query: *query,
            answer,
            peeks,
            keys,
            limits,
        };
        self.check_grant(&record, now);
        self.watch.admits.push(record);
        answer
    }

    fn on_attempt_end(&mut self, now: Timestamp, report: &Report) {
        self.watch.observe(now);
        let e = usize::from(report.grant.target.endpoint.0);
        let outstanding = self.watch.in_flight.get(e).copied().unwrap_or(0);
        if outstanding == 0 {
            self.broke(
                Invariant::InFlightAccounting,
                format!("a report for an attempt never granted: {report:?}"),
            );
        }
        if let Some(n) = self.watch.in_flight.get_mut(e) {
            *n = n.saturating_sub(1);
        }
        if report.grant.probe {
            match self.watch.probes.get_mut(e) {
                Some(p) if *p > 0 => *p = p.saturating_sub(1),
                _ => self.broke(
                    Invariant::ProbeAccounting,
                    format!("a probe reported that was never granted: {report:?}"),
                ),
            }
        }
        self.engine.on_attempt_end(now, report);
        self.watch.reports.push(report.verdict);
    }
}
