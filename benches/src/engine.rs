//! One whole steadfast decision: a [`Call`] driven against an [`Engine`] (classify +
//! hints + pool + breaker + budget + limiter + health + backoff), which no peer
//! offers as one step.
//!
//! The engine runs the default policy (with a time window for the breaker) over one endpoint with two keys (with a
//! fallback endpoint a 503 fails over at once instead of waiting). Every call starts fresh from the shared engine
//! (drawing its idempotency key from the engine's RNG), as an adapter does.
//!
//! - *round*: per iteration three calls, 10 ms apart (steady traffic of 100 calls a
//!   second): `poll_decision` → Send, `on_outcome` with a 503 → `poll_decision` →
//!   Wait; then twice `poll_decision` → Send, `on_outcome` with a 200 →
//!   `poll_decision` → Done. The report divides by three: one round is one new call,
//!   one attempt granted, one outcome settled, one next decision. A third of the
//!   calls fail, never two in a row: the breaker (trips at half of
//!   the window) stays closed and the state stays bounded.
//! - *retried call*: per iteration one call that fails with a 503, waits its backoff,
//!   is retried (the budget pays) and succeeds: Send, Wait, Send, Done. Calls are 5 s
//!   apart, so the breaker's 30 s window never holds the 20 calls its failure-rate
//!   model needs (half of these outcomes are failures).

use std::time::Duration;

use steadfast_core::breaker::Window;
use steadfast_core::engine::{EndpointSpec, Engine};
use steadfast_core::outcome::{Outcome, Response};
use steadfast_core::policy::Policy;
use steadfast_core::retry::{Call, Decision};
use steadfast_core::time::Timestamp;

use crate::{Case, Group, STEADFAST, Target, Visitor, Workload};

/// A 503 round and two 200 rounds.
pub const ROUND: Group = Group {
    id: "engine_round",
    label: "whole decision: new Call → Send → outcome → next decision (per round)",
    per_iteration: ROUNDS_PER_ITERATION,
    target: Target::Absolute { ns: 60.0 },
};

/// A call with one retry.
pub const RETRIED_CALL: Group = Group {
    id: "engine_retried_call",
    label: "whole call: Send → 503 → Wait → Send → 200 → Done",
    per_iteration: 1,
    target: Target::None,
};

/// Rounds per iteration of [`ROUND`].
pub const ROUNDS_PER_ITERATION: u32 = 3;

/// Between two calls of [`ROUND`].
const ROUND_SPACING: Duration = Duration::from_millis(10);

/// The attempt latency of [`ROUND`] (shorter than the spacing, so calls do not
/// overlap).
const ROUND_LATENCY: Duration = Duration::from_millis(4);

const LATENCY: Duration = Duration::from_millis(400);

/// Returned by a step whose decisions were not the expected ones.
pub const UNEXPECTED: u64 = u64::MAX;

/// The engine of the benchmark: the default policy with the breaker's failure rate
/// over a 30 s window instead of the last 50 calls (so the retried-call workload, half
/// failures at one call every 5 s, never trips it), one endpoint with two keys.
pub fn engine() -> Engine {
    let endpoints = [EndpointSpec::new(0, 2)];
    let mut policy = Policy::default();
    policy.breaker.window = Window::Time(Duration::from_secs(30));
    // This policy and these endpoints are valid; a failure here is a bug.
    Engine::new(policy, &endpoints, [7; 32]).unwrap_or_else(|e| {
        panic!("the benchmark engine is valid: {e}");
    })
}

/// A shared engine and the clock.
#[derive(Debug)]
pub struct Rounds<const RETRY: bool> {
    engine: Engine,
    now: Timestamp,
}

impl<const RETRY: bool> Rounds<RETRY> {
    /// A fresh engine at time zero.
    pub fn new() -> Rounds<RETRY> {
        Rounds {
            engine: engine(),
            now: Timestamp::ZERO,
        }
    }

    /// Sends the call's next attempt and reports `status` for it after `latency`;
    /// returns the decision that follows, or `None` if the call did not send.
    #[inline]
    fn attempt(&mut self, call: &mut Call, status: u16, latency: Duration) -> Option<Decision> {
        let Decision::Send(attempt) = call.poll_decision(self.now, &mut self.engine) else {
            return None;
        };
        self.now = self.now + latency;
        let outcome = Outcome::Response(Response::new(status));
        call.on_outcome(self.now, attempt.id, outcome).ok()?;
        Some(call.poll_decision(self.now, &mut self.engine))
    }

    /// One call: a 503 round, then (when `RETRY`) the retry's 200 round.
    #[inline]
    fn retried(&mut self) -> u64 {
        self.now = self.now + Duration::from_secs(5);
        let mut call = self.engine.start_call(self.now, None);
        let Some(Decision::Wait(until)) = self.attempt(&mut call, 503, LATENCY) else {
            return UNEXPECTED;
        };
        self.now = until;
        match self.attempt(&mut call, 200, LATENCY) {
            Some(Decision::Done(f)) if f.is_success() => u64::from(f.attempts()),
            _ => UNEXPECTED,
        }
    }

    /// Three calls: a 503 round and two 200 rounds.
    #[inline]
    fn rounds(&mut self) -> u64 {
        self.now = self.now + ROUND_SPACING;
        let mut failing = self.engine.start_call(self.now, None);
        let Some(Decision::Wait(until)) = self.attempt(&mut failing, 503, ROUND_LATENCY) else {
            return UNEXPECTED;
        };
        for _ in 0..2 {
            self.now = self.now + ROUND_SPACING;
            let mut succeeding = self.engine.start_call(self.now, None);
            match self.attempt(&mut succeeding, 200, ROUND_LATENCY) {
                Some(Decision::Done(f)) if f.is_success() => {}
                _ => return UNEXPECTED,
            }
        }
        until.as_nanos()
    }
}

impl<const RETRY: bool> Default for Rounds<RETRY> {
    fn default() -> Self {
        Rounds::new()
    }
}

impl<const RETRY: bool> Workload for Rounds<RETRY> {
    #[inline]
    fn step(&mut self) -> u64 {
        if RETRY { self.retried() } else { self.rounds() }
    }
}

/// Hands the engine workloads to `v`.
pub fn visit<V: Visitor>(v: &mut V) {
    v.visit(
        Case {
            group: ROUND.id,
            name: STEADFAST,
        },
        Rounds::<false>::new,
    );
    v.visit(
        Case {
            group: RETRIED_CALL.id,
            name: STEADFAST,
        },
        Rounds::<true>::new,
    );
}
