//! The checks run on every decision a call makes and on the shared machines after
//! every step.

use steadfast_core::classify::Verdict;
use steadfast_core::ids::EndpointId;
use steadfast_core::outcome::Outcome;
use steadfast_core::retry::{Admit, Attempt, CallEvent, Finish, WaitCause};
use steadfast_core::time::Timestamp;

use crate::harness::Harness;
use crate::invariant::{Invariant, Violation};
use crate::watch::AdmitRecord;

impl Harness {
    /// Takes what the gate saw during one poll of call `i`.
    pub(crate) fn after_poll(&mut self, i: usize) -> Result<(), Violation> {
        if let Some((invariant, detail)) = self.watch.broken.first().cloned() {
            self.watch.broken.clear();
            self.fail(invariant, format!("call {i}: {detail}"))?;
        }
        let reports = core::mem::take(&mut self.watch.reports);
        for verdict in reports {
            self.settled(i, verdict)?;
        }
        Ok(())
    }

    /// An attempt of call `i` was reported to the gate with `verdict`: it must be the
    /// classification of what the driver delivered (or of the timeout or cancel).
    pub(crate) fn settled(&mut self, i: usize, verdict: Verdict) -> Result<(), Violation> {
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

    /// Checks a `Send`: before the call's deadline, numbered, with the call's key, and
    /// where the engine granted.
    pub(crate) fn on_send(&mut self, i: usize, a: Attempt) -> Result<(), Violation> {
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
        if !matches!(granted, Some(steadfast_core::retry::Admit::Go(g)) if g.target() == a.target) {
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

    /// Checks a `Wait`: exactly the engine's instant (or the attempt's deadline),
    /// ahead of the clock, within the deadline, and what `poll_timeout` says.
    pub(crate) fn on_wait(&mut self, i: usize, t: Timestamp) -> Result<(), Violation> {
        let admit = self.watch.admits.pop().map(|r| r.answer);
        self.watch.admits.clear();
        let slot = &self.calls[i];
        // The instants the wait may end at: the attempt's deadline; the engine's instant
        // (a key cooled by another call's hint, plus this call's positive spread); or,
        // when the engine was not asked, the wait already handed out.
        let (low, high) = match (slot.in_flight, admit) {
            (Some(a), _) => (Some(a.deadline), Some(a.deadline)),
            (None, Some(Admit::NotBefore(at, WaitCause::Hint(hint)))) => {
                let low = at.max(slot.latest);
                let spread = slot.rules.hint_spread_max(hint);
                (Some(low), Some((low + spread).min(slot.call.deadline())))
            }
            (None, Some(Admit::NotBefore(at, _) | Admit::At(_, at))) => {
                (Some(at.max(slot.latest)), Some(at.max(slot.latest)))
            }
            (None, _) => (slot.wake, slot.wake),
        };
        if !(low.is_some_and(|l| l <= t) && high.is_some_and(|h| t <= h)) {
            let why = format!(
                "call {i} waits until {t:?}; in flight {:?}, engine said {admit:?}",
                slot.in_flight
            );
            self.fail(Invariant::WaitMismatch, why)?;
        }
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

    /// Checks a `Done`: the first one against the call's history, later ones equal.
    pub(crate) fn on_done(&mut self, i: usize, finish: Finish) -> Result<(), Violation> {
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

    /// Drains the call's events and checks them against its decisions.
    pub(crate) fn check_events(&mut self, i: usize) -> Result<(), Violation> {
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

    /// After every step: each endpoint's breaker probe count and limiter in-flight
    /// count equal what was granted and not yet reported.
    pub(crate) fn check_shared(&self) -> Result<(), Violation> {
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
            // Only the probes of the current half-open period hold slots.
            let granted = self.watch.probes(e, breaker.probe_period());
            let half_open = breaker.state() == steadfast_core::breaker::BreakerState::HalfOpen;
            if half_open && probes != granted {
                self.fail(
                    Invariant::ProbeAccounting,
                    format!(
                        "endpoint {e}: breaker counts {probes} probes, {granted} granted and unreported"
                    ),
                )?;
            }
            if probes > policy.breaker.half_open_probes {
                self.fail(
                    Invariant::TooManyProbes,
                    format!("endpoint {e}: {probes} probes"),
                )?;
            }
            // Reserved slots count as in flight from the moment they are reserved.
            let flying = limiter.in_flight();
            let held = self.engine.outstanding_on(id) as u32;
            let granted = self.watch.in_flight(e) + self.watch.reserved_on(e);
            if flying != held || held != granted {
                self.fail(
                    Invariant::InFlightAccounting,
                    format!(
                        "endpoint {e}: limiter counts {flying}, the engine holds {held}, {granted} granted and unreported"
                    ),
                )?;
            }
        }
        Ok(())
    }
}
