//! Invariant checks at every step of a run: a [`Gate`] wrapped around the engine looks
//! at the breakers and keys just before each admission, and the driver checks each
//! send against the call's deadline, its attempt count and the hints the server gave.

use steadfast_core::breaker::Permit;
use steadfast_core::classify::{ClassifyConfig, Scope};
use steadfast_core::engine::Engine;
use steadfast_core::ids::{EndpointId, Target};
use steadfast_core::policy::Policy;
use steadfast_core::pool::KeyState;
use steadfast_core::retry::{Admit, Attempt, Gate, Grant, Query, Report};
use steadfast_core::rng::CoreRng;
use steadfast_core::time::Timestamp;

use crate::driver::Request;
use crate::scenario::Scenario;

/// A broken promise of the core, seen during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// An attempt was sent at or after its call's deadline.
    SendAfterDeadline {
        /// The call.
        call: u32,
        /// When.
        at: Timestamp,
        /// The call's deadline.
        deadline: Timestamp,
    },
    /// A call made more attempts than `retry.max_attempts`.
    TooManyAttempts {
        /// The call.
        call: u32,
        /// The attempt number.
        attempt: u32,
    },
    /// An attempt went to an endpoint whose breaker denied at that instant.
    BreakerDenied {
        /// The call.
        call: u32,
        /// When.
        at: Timestamp,
        /// The endpoint.
        endpoint: EndpointId,
    },
    /// An attempt used a disabled key.
    DisabledKey {
        /// The call.
        call: u32,
        /// When.
        at: Timestamp,
        /// The key.
        target: Target,
    },
    /// An attempt used a key that was cooling down.
    CoolingKey {
        /// The call.
        call: u32,
        /// When.
        at: Timestamp,
        /// The key.
        target: Target,
    },
    /// An attempt went to an endpoint the call's last failure ruled out until later.
    BeforeBackoff {
        /// The call.
        call: u32,
        /// When.
        at: Timestamp,
        /// Until when the endpoint was ruled out.
        until: Timestamp,
    },
    /// An attempt went to a key before the instant a 429 on that key asked for.
    BeforeHint {
        /// The call.
        call: u32,
        /// When.
        at: Timestamp,
        /// The key.
        target: Target,
        /// The earliest instant the server allowed.
        until: Timestamp,
    },
}

impl core::fmt::Display for Violation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Violation::SendAfterDeadline { call, at, deadline } => {
                write!(f, "call {call} sent at {at}, after its deadline {deadline}")
            }
            Violation::TooManyAttempts { call, attempt } => {
                write!(f, "call {call} made attempt {attempt}, more than allowed")
            }
            Violation::BreakerDenied { call, at, endpoint } => {
                write!(
                    f,
                    "call {call} sent to {endpoint} at {at} while its breaker denied"
                )
            }
            Violation::DisabledKey { call, at, target } => {
                write!(f, "call {call} used disabled key {target} at {at}")
            }
            Violation::CoolingKey { call, at, target } => {
                write!(f, "call {call} used cooling key {target} at {at}")
            }
            Violation::BeforeBackoff { call, at, until } => {
                write!(
                    f,
                    "call {call} retried an endpoint at {at}, ruled out until {until}"
                )
            }
            Violation::BeforeHint {
                call,
                at,
                target,
                until,
            } => write!(
                f,
                "call {call} sent to {target} at {at}, hinted not before {until}"
            ),
        }
    }
}

/// What the checks remember between steps.
pub(crate) struct Checks {
    max_attempts: u32,
    /// Per endpoint, per key: no request before this instant (from 429 hints).
    hinted: Vec<Vec<Timestamp>>,
    peeks: Vec<Permit>,
    violations: Vec<Violation>,
}

impl Checks {
    pub(crate) fn new(scenario: &Scenario, policy: &Policy) -> Checks {
        Checks {
            max_attempts: policy.retry.max_attempts,
            hinted: scenario
                .endpoints
                .iter()
                .map(|e| vec![Timestamp::ZERO; usize::from(e.keys)])
                .collect(),
            peeks: Vec::new(),
            violations: Vec::new(),
        }
    }

    fn hinted(&mut self, t: Target) -> Option<&mut Timestamp> {
        self.hinted
            .get_mut(usize::from(t.endpoint.0))?
            .get_mut(usize::from(t.key.0))
    }

    /// An answer reached the client: a 429's hint binds every later request to its key.
    pub(crate) fn on_answer(&mut self, r: &Request) {
        let Some(hint) = r.hint else { return };
        if let Some(until) = self.hinted(r.target) {
            *until = (*until).max(r.answered.saturating_add(hint));
        }
    }

    /// The driver is about to send `attempt` of `call`.
    pub(crate) fn on_send(
        &mut self,
        now: Timestamp,
        call: u32,
        attempt: &Attempt,
        deadline: Timestamp,
    ) {
        if now >= deadline {
            self.violations.push(Violation::SendAfterDeadline {
                call,
                at: now,
                deadline,
            });
        }
        if attempt.id.0 > self.max_attempts {
            self.violations.push(Violation::TooManyAttempts {
                call,
                attempt: attempt.id.0,
            });
        }
        let target = attempt.target;
        if let Some(&until) = self
            .hinted
            .get(usize::from(target.endpoint.0))
            .and_then(|k| k.get(usize::from(target.key.0)))
            && now < until
        {
            self.violations.push(Violation::BeforeHint {
                call,
                at: now,
                target,
                until,
            });
        }
    }

    pub(crate) fn into_violations(self) -> Vec<Violation> {
        self.violations
    }
}

/// The engine, watched: every admission is checked against the state just before it.
pub(crate) struct Checked<'a> {
    engine: &'a mut Engine,
    checks: &'a mut Checks,
    call: u32,
}

impl<'a> Checked<'a> {
    pub(crate) fn new(engine: &'a mut Engine, checks: &'a mut Checks, call: u32) -> Self {
        Checked {
            engine,
            checks,
            call,
        }
    }
}

impl steadfast_core::retry::Sealed for Checked<'_> {}

impl Gate for Checked<'_> {
    type Rng = CoreRng;

    fn classifier(&self) -> &ClassifyConfig {
        Gate::classifier(&*self.engine)
    }

    fn rng(&mut self) -> &mut CoreRng {
        Gate::rng(self.engine)
    }

    fn admit(&mut self, now: Timestamp, query: &Query) -> Admit {
        let endpoints = self.engine.pool().endpoint_count();
        self.checks.peeks.clear();
        for e in 0..endpoints {
            let peek = self.engine.breaker(EndpointId(e)).map(|b| b.peek(now));
            self.checks.peeks.push(peek.unwrap_or(Permit::Allow));
        }
        let admit = self.engine.admit(now, query);
        let Admit::Go(grant) = admit else {
            return admit;
        };
        let (call, target) = (self.call, grant.target());
        let v = &mut self.checks.violations;
        if let Some(Permit::Deny { .. }) = self.checks.peeks.get(usize::from(target.endpoint.0)) {
            v.push(Violation::BreakerDenied {
                call,
                at: now,
                endpoint: target.endpoint,
            });
        }
        match self.engine.pool().key_state(now, target) {
            Some(KeyState::Disabled { .. }) => v.push(Violation::DisabledKey {
                call,
                at: now,
                target,
            }),
            Some(KeyState::Cooling { .. }) => v.push(Violation::CoolingKey {
                call,
                at: now,
                target,
            }),
            _ => {}
        }
        if let Some(a) = query.avoid
            && a.scope == Scope::Endpoint
            && a.rules_out(now, target)
        {
            v.push(Violation::BeforeBackoff {
                call,
                at: now,
                until: a.until,
            });
        }
        admit
    }

    fn confirm(&mut self, now: Timestamp, grant: &Grant) -> Option<Grant> {
        self.engine.confirm(now, grant)
    }

    fn release(&mut self, now: Timestamp, grant: &Grant) {
        self.engine.release(now, grant);
    }

    fn on_attempt_end(&mut self, now: Timestamp, report: &Report) {
        self.engine.on_attempt_end(now, report);
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
