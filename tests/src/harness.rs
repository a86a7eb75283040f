//! The harness: the real [`Engine`] and many [`Call`]s driven by [`Op`]s, with the
//! invariants checked after every step.

use core::fmt;

use steadfast_core::classify::{Failure, Verdict};
use steadfast_core::engine::{EndpointSpec, Engine};
use steadfast_core::error::{ConfigError, UsageError};
use steadfast_core::idempotency::IdempotencyKey;
use steadfast_core::ids::{AttemptId, EndpointId, KeyId, Target};
use steadfast_core::outcome::Outcome;
use steadfast_core::policy::Policy;
use steadfast_core::retry::{Attempt, Call, Decision, Finish, RetryConfig};
use steadfast_core::time::Timestamp;

use crate::ops::{Answer, NewCall, Op, Scenario};
use crate::respond::WALL_EPOCH;
use crate::watch::{Watch, Watched};

/// The most calls one run starts; later `NewCall`s are ignored.
pub const MAX_CALLS: usize = 24;

/// Decisions drained from one call in one poll before it counts as a livelock.
const MAX_DRAIN: usize = 8;

pub use crate::invariant::{Checks, Invariant, Violation};

/// One call as the harness drives it.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) call: Call,
    pub(crate) rules: RetryConfig,
    pub(crate) key: IdempotencyKey,
    /// The call's clamped clock: the latest instant it was given.
    pub(crate) latest: Timestamp,
    pub(crate) attempts: u32,
    pub(crate) in_flight: Option<Attempt>,
    pub(crate) last_target: Option<Target>,
    pub(crate) last_verdict: Option<Verdict>,
    pub(crate) last_failure: Option<Failure>,
    pub(crate) last_status: Option<u16>,
    /// The last outcome the driver delivered was `Outcome::Cancelled`.
    pub(crate) delivered_cancel: bool,
    /// The driver called `cancel`.
    pub(crate) cancelled: bool,
    /// The instant of the last `Wait`.
    pub(crate) wake: Option<Timestamp>,
    pub(crate) finish: Option<Finish>,
    /// Outcomes delivered and not yet settled, with the verdict they must get.
    pub(crate) expect: Option<Outcome>,
}

/// The engine, its calls and the driver's clock. See the crate documentation.
pub struct Harness {
    pub(crate) engine: Engine,
    pub(crate) endpoints: Vec<EndpointSpec>,
    pub(crate) now: Timestamp,
    pub(crate) calls: Vec<Slot>,
    pub(crate) watch: Watch,
    pub(crate) step: usize,
    checks: Checks,
    trace: Option<Vec<String>>,
}

impl fmt::Debug for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Harness")
            .field("now", &self.now)
            .field("calls", &self.calls.len())
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

impl Harness {
    /// A harness over an engine for `endpoints` under `policy`, seeded with `seed`.
    pub fn new(
        policy: Policy,
        endpoints: &[EndpointSpec],
        seed: u64,
    ) -> Result<Harness, ConfigError> {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        let engine = Engine::new(policy, endpoints, bytes)?;
        Ok(Harness {
            engine,
            endpoints: endpoints.to_vec(),
            now: Timestamp::ZERO,
            calls: Vec::new(),
            watch: Watch::new(endpoints.len()),
            step: 0,
            checks: Checks::default(),
            trace: None,
        })
    }

    /// The same harness checking only what `checks` allows.
    #[must_use]
    pub fn with_checks(mut self, checks: Checks) -> Harness {
        self.checks = checks;
        self
    }

    /// The same harness recording every decision (for [`Harness::trace`]).
    #[must_use]
    pub fn with_trace(mut self) -> Harness {
        self.trace = Some(Vec::new());
        self
    }

    /// Runs a whole scenario with its own setup; the first violation ends it.
    pub fn run(scenario: &Scenario, checks: Checks) -> Result<Harness, Violation> {
        let (policy, endpoints, seed) = scenario.setup.build();
        let mut h = Harness::new(policy, &endpoints, seed)
            .map_err(|e| Violation {
                step: 0,
                invariant: Invariant::Usage,
                detail: format!("the setup built an invalid engine: {e}"),
            })?
            .with_checks(checks);
        h.apply_all(&scenario.ops)?;
        Ok(h)
    }

    /// Applies `ops` in order; the first violation ends it.
    pub fn apply_all(&mut self, ops: &[Op]) -> Result<(), Violation> {
        ops.iter().try_for_each(|op| self.apply(op))
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The driver's clock (it may have stepped back).
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The recorded decisions, when recording.
    pub fn trace(&self) -> Option<&[String]> {
        self.trace.as_deref()
    }

    /// How the calls ended so far, in start order (`None`: still running).
    pub fn finishes(&self) -> Vec<Option<Finish>> {
        self.calls.iter().map(|s| s.finish).collect()
    }

    /// Attempts sent so far over all calls.
    pub fn attempts_sent(&self) -> u32 {
        self.calls.iter().map(|s| s.attempts).sum()
    }

    /// Applies one operation and checks every invariant.
    pub fn apply(&mut self, op: &Op) -> Result<(), Violation> {
        self.step = self.step.saturating_add(1);
        match op {
            Op::Advance(s) => self.now = self.now.saturating_add(s.span()),
            Op::Rewind(s) => self.now = self.now.saturating_sub(s.span()),
            Op::Sleep => {
                if let Some(t) = self.next_wake() {
                    self.now = self.now.max(t);
                }
                self.poll_due()?;
            }
            Op::NewCall(nc) => self.new_call(nc)?,
            Op::Answer { call, answer } => self.answer(*call, answer)?,
            Op::Cancel { call } => {
                if let Some(i) = self.pick_unfinished(*call) {
                    self.cancel(i)?;
                }
            }
            Op::EnableKey { endpoint, key } => self.enable_key(*endpoint, *key)?,
            Op::Poll { call } => {
                if let Some(i) = self.pick_unfinished(*call) {
                    self.drain(i)?;
                }
            }
            Op::PollDue => self.poll_due()?,
        }
        self.check_shared()
    }

    pub(crate) fn fail(&self, invariant: Invariant, detail: String) -> Result<(), Violation> {
        if self.checks.skip.contains(&invariant) {
            return Ok(());
        }
        Err(Violation {
            step: self.step,
            invariant,
            detail,
        })
    }

    fn record(&mut self, line: impl FnOnce() -> String) {
        if let Some(t) = self.trace.as_mut() {
            t.push(line());
        }
    }

    fn next_wake(&self) -> Option<Timestamp> {
        self.calls
            .iter()
            .filter(|s| s.finish.is_none())
            .filter_map(|s| s.wake)
            .min()
    }

    fn pick_unfinished(&self, pick: u8) -> Option<usize> {
        let open: Vec<usize> = (0..self.calls.len())
            .filter(|&i| self.calls[i].finish.is_none())
            .collect();
        open.get(usize::from(pick) % open.len().max(1)).copied()
    }

    fn poll_due(&mut self) -> Result<(), Violation> {
        for i in 0..self.calls.len() {
            let slot = &self.calls[i];
            if slot.finish.is_none() && slot.wake.is_none_or(|t| t <= self.now) {
                self.drain(i)?;
            }
        }
        Ok(())
    }

    fn new_call(&mut self, nc: &NewCall) -> Result<(), Violation> {
        if self.calls.len() >= MAX_CALLS {
            return Ok(());
        }
        let business = nc.business_id.map(|b| format!("order-{}", b % 8));
        let id = business.as_deref().map(str::as_bytes);
        let rules = nc.rules.map_or(self.engine.policy().retry, |r| {
            r.apply(&self.engine.policy().retry)
        });
        let call = match nc.rules {
            Some(_) => self.engine.start_call_with(self.now, &rules, id),
            None => self.engine.start_call(self.now, id),
        }
        .with_tokens(u64::from(nc.tokens));
        let key = call.idempotency_key();
        if let Some(id) = id
            && key != IdempotencyKey::from_business_id(id)
        {
            return self.fail(
                Invariant::IdempotencyKey,
                format!("business id {id:?} gave {key:?}"),
            );
        }
        if id.is_none() && self.calls.iter().any(|s| s.key == key) {
            return self.fail(
                Invariant::IdempotencyKey,
                format!("a drawn key repeats: {key:?}"),
            );
        }
        let expected = rules
            .deadline
            .map_or(Timestamp::MAX, |d| self.now.saturating_add(d));
        if call.deadline() != expected {
            return self.fail(
                Invariant::AttemptDeadline,
                format!("call deadline {:?}, expected {expected:?}", call.deadline()),
            );
        }
        self.calls.push(Slot {
            call,
            rules,
            key,
            latest: self.now,
            attempts: 0,
            in_flight: None,
            last_target: None,
            last_verdict: None,
            last_failure: None,
            last_status: None,
            delivered_cancel: false,
            cancelled: false,
            wake: None,
            finish: None,
            expect: None,
        });
        let i = self.calls.len() - 1;
        self.drain(i)
    }

    fn answer(&mut self, pick: u8, answer: &Answer) -> Result<(), Violation> {
        let flying: Vec<usize> = (0..self.calls.len())
            .filter(|&i| self.calls[i].in_flight.is_some())
            .collect();
        let wall = WALL_EPOCH.saturating_add(self.now.as_nanos() / 1_000_000_000);
        let outcome = answer.to_outcome(wall);
        let Some(&i) = flying.get(usize::from(pick) % flying.len().max(1)) else {
            return self.late_answer(pick, outcome);
        };
        let now = self.now;
        let slot = &mut self.calls[i];
        let Some(attempt) = slot.in_flight else {
            return Ok(());
        };
        slot.latest = slot.latest.max(now);
        if let Err(e) = slot.call.on_outcome(now, attempt.id, outcome) {
            return self.fail(
                Invariant::Usage,
                format!("in-flight {:?} refused: {e}", attempt.id),
            );
        }
        slot.expect = Some(outcome);
        slot.delivered_cancel = outcome == Outcome::Cancelled;
        if let Outcome::Response(r) = outcome {
            slot.last_status = Some(r.status);
        }
        self.record(|| format!("{now:?} call {i} answered {outcome:?}"));
        self.drain(i)
    }

    /// An outcome for an attempt that is not in flight must be refused.
    fn late_answer(&mut self, pick: u8, outcome: Outcome) -> Result<(), Violation> {
        let Some(i) = (!self.calls.is_empty()).then(|| usize::from(pick) % self.calls.len()) else {
            return Ok(());
        };
        let now = self.now;
        let slot = &mut self.calls[i];
        slot.latest = slot.latest.max(now);
        let id = AttemptId(slot.attempts.max(1));
        let got = slot.call.on_outcome(now, id, outcome);
        let want = if slot.finish.is_some() {
            UsageError::Finished
        } else {
            UsageError::UnknownAttempt { id }
        };
        if got != Err(want.clone()) {
            return self.fail(
                Invariant::Usage,
                format!("a late outcome for call {i} {id:?} gave {got:?}, expected {want:?}"),
            );
        }
        Ok(())
    }

    fn cancel(&mut self, i: usize) -> Result<(), Violation> {
        let now = self.now;
        let slot = &mut self.calls[i];
        slot.latest = slot.latest.max(now);
        slot.cancelled = true;
        let mut gate = Watched {
            engine: &mut self.engine,
            watch: &mut self.watch,
        };
        let finish = slot.call.cancel(now, &mut gate);
        self.record(|| format!("{now:?} call {i} cancelled: {finish:?}"));
        self.after_poll(i)?;
        self.on_done(i, finish)
    }

    fn enable_key(&mut self, endpoint: u8, key: u8) -> Result<(), Violation> {
        let n = self.endpoints.len();
        let e = usize::from(endpoint) % (n + 1);
        let keys = self
            .endpoints
            .get(e)
            .map_or(1, |s| usize::from(s.pool.keys));
        let k = usize::from(key) % (keys + 1);
        let target = Target {
            endpoint: EndpointId(e as u16),
            key: KeyId(k as u16),
        };
        self.watch.observe(self.now);
        let got = self.engine.enable_key(self.now, target);
        let known = e < n && k < keys;
        match (known, got) {
            (true, Ok(())) | (false, Err(UsageError::UnknownId)) => Ok(()),
            (_, got) => self.fail(
                Invariant::Usage,
                format!(
                    "enable_key({target:?}) gave {got:?} for a {} key",
                    if known { "known" } else { "unknown" }
                ),
            ),
        }
    }

    /// Polls call `i` until it waits or is done, checking every decision.
    pub(crate) fn drain(&mut self, i: usize) -> Result<(), Violation> {
        for _ in 0..MAX_DRAIN {
            let now = self.now;
            let slot = &mut self.calls[i];
            slot.latest = slot.latest.max(now);
            let mut gate = Watched {
                engine: &mut self.engine,
                watch: &mut self.watch,
            };
            let decision = slot.call.poll_decision(now, &mut gate);
            self.record(|| format!("{now:?} call {i} {decision:?}"));
            self.after_poll(i)?;
            match decision {
                Decision::Send(a) => self.on_send(i, a)?,
                Decision::Wait(t) => return self.on_wait(i, t),
                Decision::Done(f) => return self.on_done(i, f),
            }
        }
        self.fail(
            Invariant::Livelock,
            format!("call {i} still deciding after {MAX_DRAIN} polls"),
        )
    }
}
