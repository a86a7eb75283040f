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
use steadfast_core::retry::{Attempt, Call, CallEvent, Decision, Finish, RetryConfig};
use steadfast_core::time::Timestamp;

use crate::ops::{Answer, NewCall, Op, Scenario};
use crate::respond::WALL_EPOCH;
use crate::watch::{AdmitRecord, Watch, Watched};

/// The most calls one run starts; later `NewCall`s are ignored.
pub const MAX_CALLS: usize = 24;

/// Decisions drained from one call in one poll before it counts as a livelock.
const MAX_DRAIN: usize = 8;

/// An invariant of the engine and its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Invariant {
    /// A `Send` at or after the call's deadline.
    SendAfterDeadline,
    /// An attempt's own deadline after the call's, or not after now.
    AttemptDeadline,
    /// An attempt number above `max_attempts`.
    TooManyAttempts,
    /// Attempt numbers not 1, 2, 3, … within a call.
    AttemptNumbering,
    /// A grant on an endpoint whose breaker `peek` denied just before.
    BreakerBypassed,
    /// More half-open probes in flight than configured.
    TooManyProbes,
    /// Probes granted and reported do not match the breaker's count.
    ProbeAccounting,
    /// Attempts granted and reported do not match the limiter's in-flight count.
    InFlightAccounting,
    /// A grant on a disabled key.
    DisabledKey,
    /// A grant on a key still cooling down.
    CooledKey,
    /// A grant on the target the call's last failure ruled out until later.
    AvoidIgnored,
    /// A grant on an endpoint or key that does not exist.
    UnknownTarget,
    /// An attempt without the call's one idempotency key.
    IdempotencyKey,
    /// `poll_timeout` before the call's clamped clock while the call waits.
    PollTimeoutInPast,
    /// `poll_timeout` differs from the instant of the `Wait` just returned.
    PollTimeoutMismatch,
    /// A `Wait` not after the call's clamped clock (a driver would spin).
    WaitNotAhead,
    /// A `Wait` past the call's deadline.
    WaitPastDeadline,
    /// A give-up reason (or success) that the call's history does not support.
    FinishInconsistent,
    /// A finished call answered differently later.
    FinishChanged,
    /// The verdict reported to the gate is not the classification of the outcome.
    Classification,
    /// A `UsageError` where none was due, or none where one was.
    Usage,
    /// The call's events disagree with its decisions.
    Events,
    /// A poll did not settle on `Wait` or `Done`.
    Livelock,
}

/// A broken invariant, with the step it broke at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The 1-based index of the operation after which it was seen.
    pub step: usize,
    /// Which invariant.
    pub invariant: Invariant,
    /// What was seen.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "step {}: {:?}: {}",
            self.step, self.invariant, self.detail
        )
    }
}

impl std::error::Error for Violation {}

/// Which invariants to check; all by default. Turning one off is for an invariant
/// the core is known to break, until it is fixed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checks {
    /// The invariants not checked.
    pub skip: Vec<Invariant>,
}

impl Checks {
    /// Every invariant except those the core is known to break today, each of which
    /// has an ignored regression test in `tests/tests/core_bugs.rs`. The proptest and
    /// the fuzz targets use this; remove an entry once its core fix lands.
    pub fn known_core_bugs() -> Checks {
        Checks {
            skip: vec![
                Invariant::AvoidIgnored,
                Invariant::PollTimeoutInPast,
                Invariant::PollTimeoutMismatch,
            ],
        }
    }
}

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

    /// Takes what the gate saw during one poll of call `i`.
    fn after_poll(&mut self, i: usize) -> Result<(), Violation> {
        if let Some((invariant, detail)) = self.watch.broken.first().cloned() {
            self.watch.broken.clear();
            self.fail(invariant, format!("call {i}: {detail}"))?;
        }
        let reports = core::mem::take(&mut self.watch.reports);
        for report in reports {
            self.settled(i, report.verdict)?;
        }
        Ok(())
    }

    fn settled(&mut self, i: usize, verdict: Verdict) -> Result<(), Violation> {
        let classifier = steadfast_core::retry::Gate::classifier(&self.engine).clone();
        let slot = &mut self.calls[i];
        let Some(attempt) = slot.in_flight.take() else {
            return self.fail(
                Invariant::InFlightAccounting,
                format!("call {i} settled nothing"),
            );
        };
        slot.last_target = Some(attempt.target);
        slot.last_verdict = Some(verdict);
        if let Verdict::Failure(f) = verdict {
            slot.last_failure = Some(f);
        }
        let expected = match slot.expect.take() {
            Some(o) => classifier.classify(&o),
            // Not delivered: the call timed it out, or the caller cancelled it.
            None if slot.cancelled => classifier.classify(&Outcome::Cancelled),
            None => classifier.classify(&Outcome::Transport(
                steadfast_core::outcome::Transport::new(
                    steadfast_core::outcome::TransportKind::Timeout,
                    steadfast_core::outcome::Phase::AfterSend,
                ),
            )),
        };
        if expected != verdict {
            return self.fail(
                Invariant::Classification,
                format!("call {i}: reported {verdict:?}, the outcome classifies as {expected:?}"),
            );
        }
        Ok(())
    }

    fn on_send(&mut self, i: usize, a: Attempt) -> Result<(), Violation> {
        let slot = &self.calls[i];
        let now = slot.latest;
        let deadline = slot.call.deadline();
        if now >= deadline {
            return self.fail(
                Invariant::SendAfterDeadline,
                format!("call {i} sent {:?} at {now:?}, deadline {deadline:?}", a.id),
            );
        }
        if a.deadline > deadline || a.deadline <= now {
            return self.fail(
                Invariant::AttemptDeadline,
                format!(
                    "call {i} at {now:?}: attempt deadline {:?}, call deadline {deadline:?}",
                    a.deadline
                ),
            );
        }
        if a.id.0 > slot.rules.max_attempts {
            return self.fail(
                Invariant::TooManyAttempts,
                format!("call {i} sent {:?}, max {}", a.id, slot.rules.max_attempts),
            );
        }
        if a.id.0 != slot.attempts + 1 || slot.in_flight.is_some() {
            return self.fail(
                Invariant::AttemptNumbering,
                format!(
                    "call {i} sent {:?} after {} (in flight: {:?})",
                    a.id, slot.attempts, slot.in_flight
                ),
            );
        }
        if a.idempotency_key != slot.key {
            return self.fail(
                Invariant::IdempotencyKey,
                format!("call {i} sent {:?} with a key other than its own", a.id),
            );
        }
        let granted = self.watch.admits.last().map(|r| r.answer);
        if !matches!(granted, Some(steadfast_core::retry::Admit::Go(g)) if g.target == a.target) {
            return self.fail(
                Invariant::UnknownTarget,
                format!(
                    "call {i} sent to {:?}, the engine granted {granted:?}",
                    a.target
                ),
            );
        }
        self.watch.admits.clear();
        let slot = &mut self.calls[i];
        slot.attempts = a.id.0;
        slot.in_flight = Some(a);
        slot.wake = Some(a.deadline);
        self.check_events(i)
    }

    fn on_wait(&mut self, i: usize, t: Timestamp) -> Result<(), Violation> {
        self.watch.admits.clear();
        let slot = &mut self.calls[i];
        slot.wake = Some(t);
        let now = slot.latest;
        let deadline = slot.call.deadline();
        let timeout = slot.call.poll_timeout();
        if t <= now {
            return self.fail(
                Invariant::WaitNotAhead,
                format!("call {i} at {now:?} waits until {t:?}"),
            );
        }
        if t > deadline {
            return self.fail(
                Invariant::WaitPastDeadline,
                format!("call {i} waits until {t:?}, deadline {deadline:?}"),
            );
        }
        match timeout {
            Some(pt) if pt < now => self.fail(
                Invariant::PollTimeoutInPast,
                format!("call {i} at {now:?} waits until {t:?}, poll_timeout {pt:?}"),
            )?,
            None => self.fail(
                Invariant::PollTimeoutInPast,
                format!("call {i} waits but poll_timeout is None"),
            )?,
            _ => {}
        }
        if timeout != Some(t) {
            self.fail(
                Invariant::PollTimeoutMismatch,
                format!("call {i} at {now:?} waits until {t:?}, poll_timeout {timeout:?}"),
            )?;
        }
        self.check_events(i)
    }

    fn on_done(&mut self, i: usize, finish: Finish) -> Result<(), Violation> {
        let admit: Option<AdmitRecord> = self.watch.admits.pop();
        self.watch.admits.clear();
        if let Some(before) = self.calls[i].finish {
            if before != finish {
                return self.fail(
                    Invariant::FinishChanged,
                    format!("call {i} finished {before:?}, now {finish:?}"),
                );
            }
            return Ok(());
        }
        if self.calls[i].call.poll_timeout().is_some() || !self.calls[i].call.is_done() {
            return self.fail(
                Invariant::FinishChanged,
                format!("call {i} is done but still wants polls"),
            );
        }
        crate::verdicts::check(self, i, finish, admit.as_ref())?;
        let slot = &mut self.calls[i];
        slot.finish = Some(finish);
        slot.wake = None;
        self.check_events(i)
    }

    fn check_events(&mut self, i: usize) -> Result<(), Violation> {
        let slot = &mut self.calls[i];
        while let Some(event) = slot.call.poll_event() {
            let ok = match event {
                CallEvent::AttemptStarted { id, target, .. } => slot
                    .in_flight
                    .is_some_and(|a| a.id == id && a.target == target),
                CallEvent::Succeeded { attempts, .. } => {
                    attempts == slot.attempts && matches!(slot.finish, Some(Finish::Success { .. }))
                }
                CallEvent::GaveUp { reason, .. } => {
                    matches!(slot.finish, Some(Finish::GaveUp(g)) if g.reason == reason)
                }
                _ => true,
            };
            if !ok {
                let attempts = slot.attempts;
                return self.fail(
                    Invariant::Events,
                    format!("call {i}: {event:?} with {attempts} attempts"),
                );
            }
        }
        Ok(())
    }

    fn check_shared(&self) -> Result<(), Violation> {
        let policy = self.engine.policy();
        for e in 0..self.endpoints.len() {
            let id = EndpointId(e as u16);
            let (Some(breaker), Some(limiter)) = (self.engine.breaker(id), self.engine.limiter(id))
            else {
                return self.fail(
                    Invariant::UnknownTarget,
                    format!("endpoint {e} has no machines"),
                );
            };
            let probes = breaker.probes_in_flight();
            if probes != self.watch.probes[e] {
                self.fail(
                    Invariant::ProbeAccounting,
                    format!(
                        "endpoint {e}: breaker counts {probes} probes, {} granted and unreported",
                        self.watch.probes[e]
                    ),
                )?;
            }
            if probes > policy.breaker.half_open_probes {
                self.fail(
                    Invariant::TooManyProbes,
                    format!("endpoint {e}: {probes} probes"),
                )?;
            }
            let flying = limiter.in_flight();
            if flying != self.watch.in_flight[e] {
                self.fail(
                    Invariant::InFlightAccounting,
                    format!(
                        "endpoint {e}: limiter counts {flying}, {} granted and unreported",
                        self.watch.in_flight[e]
                    ),
                )?;
            }
        }
        Ok(())
    }
}
