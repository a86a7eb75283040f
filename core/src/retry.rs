//! The retry sequence of one logical call.
//!
//! A [`Call`] decides *whether*, *when* and *where* the next attempt goes. It owns only
//! what belongs to one call (attempt count, deadline, backoff state, idempotency key);
//! everything shared between calls — classification rules, the RNG, retry budgets,
//! breakers, limiters, the key pool — sits behind the [`Gate`] it is driven with. The
//! gate is the one seam where the shared machines are asked before each attempt
//! ([`Gate::admit`]) and told after it ([`Gate::on_attempt_end`]).
//!
//! Inputs are `on_*`, outputs `poll_*`; see the crate documentation for the loop.

use core::time::Duration;

use crate::backoff::{Backoff, BackoffConfig};
use crate::classify::{Failure, Scope, Verdict};
use crate::error::UsageError;
use crate::hedge::HedgeConfig;
use crate::hints::Hints;
use crate::idempotency::IdempotencyKey;
use crate::ids::{AttemptId, EndpointId, EndpointSet, Target};
use crate::outcome::{Outcome, Phase, Transport, TransportKind};
use crate::ring::Ring;
use crate::time::{Monotonic, Timestamp};

mod config;
mod events;
mod gate;
mod single;

pub use config::RetryConfig;
pub use events::CallEvent;
#[cfg(feature = "testing")]
pub use gate::Sealed;
pub(crate) use gate::sealed::Sealed as GateSeal;
pub use gate::{Admit, Avoid, Gate, Grant, Query, Report, Ticket, WaitCause};
pub use single::SingleEndpoint;

/// What the driver must do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Send this attempt now.
    Send(Attempt),
    /// Nothing to do before this instant (or before an outcome arrives).
    Wait(Timestamp),
    /// The call is over.
    Done(Finish),
}

impl Decision {
    /// Whether the call is over.
    pub fn is_done(&self) -> bool {
        matches!(self, Decision::Done(_))
    }
}

/// One attempt the driver must send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// Identifies the attempt in [`Call::on_outcome`].
    pub id: AttemptId,
    /// Where it goes.
    pub target: Target,
    /// The whole attempt must end within this span. Cut to the time left before the
    /// call's deadline, except for streams, whose length only `attempt_timeout` bounds.
    pub timeout: Duration,
    /// Unless an outcome (for a stream: its first event, reported as the success) is
    /// reported by this instant, the call counts the attempt as timed out.
    pub deadline: Timestamp,
    /// The TCP/TLS connect timeout.
    pub connect_timeout: Duration,
    /// For streams: the first event must arrive within this span (cut to the time
    /// left before the call's deadline).
    pub first_event_timeout: Option<Duration>,
    /// For streams: the longest gap between events after the first (see
    /// [`RetryConfig::stall_timeout`]).
    pub stall_timeout: Option<Duration>,
    /// Sent as the `Idempotency-Key` header; the same on every attempt of the call.
    pub idempotency_key: IdempotencyKey,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// An attempt succeeded.
    Success {
        /// Attempts made, the successful one included.
        attempts: u32,
        /// Where the successful attempt went.
        target: Target,
    },
    /// The call gave up.
    GaveUp(GiveUp),
}

impl Finish {
    /// Attempts made.
    pub fn attempts(&self) -> u32 {
        match self {
            Finish::Success { attempts, .. } => *attempts,
            Finish::GaveUp(g) => g.attempts,
        }
    }

    /// Whether the call succeeded.
    pub fn is_success(&self) -> bool {
        matches!(self, Finish::Success { .. })
    }
}

/// Why and after what a call gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GiveUp {
    /// Why.
    pub reason: GiveUpReason,
    /// Attempts made.
    pub attempts: u32,
    /// The last failure, when there was an attempt.
    pub last_failure: Option<Failure>,
    /// The HTTP status of the last attempt, when it got one.
    pub last_status: Option<u16>,
}

/// Why a call gave up. Each is data an adapter can act on (fall back, fail over, queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GiveUpReason {
    /// The last failure may not be retried (a request-scope error, or `x-should-retry: false`).
    NotRetryable,
    /// The request may have been processed and the call is not idempotent.
    UnsafeToRetry,
    /// `max_attempts` attempts were made.
    RetriesExhausted,
    /// The deadline passed, or the next attempt could only start after it.
    DeadlineExceeded,
    /// The server asked for a wait longer than `max_retry_after` or than the time left.
    HintTooLong {
        /// The wait the server asked for.
        hint: Duration,
    },
    /// The retry budget of every usable endpoint is spent.
    BudgetExhausted,
    /// Every endpoint's breaker is open; the earliest one may admit a probe at `until`.
    BreakerOpen {
        /// When the first breaker half-opens.
        until: Timestamp,
    },
    /// No endpoint has a key that is not disabled.
    NoUsableKey,
    /// The client-side rate limit would only admit the attempt after the deadline.
    RateLimited {
        /// When the limiter would admit it.
        until: Timestamp,
    },
    /// The caller cancelled the call.
    Cancelled,
}

impl GiveUpReason {
    /// The reason's name in snake case, as reports and output files spell it.
    pub fn name(&self) -> &'static str {
        match self {
            GiveUpReason::NotRetryable => "not_retryable",
            GiveUpReason::UnsafeToRetry => "unsafe_to_retry",
            GiveUpReason::RetriesExhausted => "retries_exhausted",
            GiveUpReason::DeadlineExceeded => "deadline_exceeded",
            GiveUpReason::HintTooLong { .. } => "hint_too_long",
            GiveUpReason::BudgetExhausted => "budget_exhausted",
            GiveUpReason::BreakerOpen { .. } => "breaker_open",
            GiveUpReason::NoUsableKey => "no_usable_key",
            GiveUpReason::RateLimited { .. } => "rate_limited",
            GiveUpReason::Cancelled => "cancelled",
        }
    }
}

impl core::fmt::Display for GiveUpReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            GiveUpReason::NotRetryable => f.write_str("not retryable"),
            GiveUpReason::UnsafeToRetry => f.write_str("not idempotent, unsafe to retry"),
            GiveUpReason::RetriesExhausted => f.write_str("retries exhausted"),
            GiveUpReason::DeadlineExceeded => f.write_str("deadline exceeded"),
            GiveUpReason::HintTooLong { hint } => {
                write!(f, "server asked to wait {}", crate::duration::Human(*hint))
            }
            GiveUpReason::BudgetExhausted => f.write_str("retry budget exhausted"),
            GiveUpReason::BreakerOpen { .. } => f.write_str("circuit breaker open"),
            GiveUpReason::NoUsableKey => f.write_str("no usable key"),
            GiveUpReason::RateLimited { .. } => f.write_str("rate limited past the deadline"),
            GiveUpReason::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// An attempt in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Flight {
    id: AttemptId,
    grant: Grant,
    sent_at: Timestamp,
    deadline: Timestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ready {
        avoid: Option<Avoid>,
        /// The instant of the last `Wait` handed out: nothing happens before it.
        wake: Option<Timestamp>,
    },
    /// A rate-limit slot is reserved for `at`.
    Reserved {
        grant: Grant,
        at: Timestamp,
        avoid: Option<Avoid>,
    },
    /// An attempt is in flight (and maybe a second one, in the call's `second`).
    InFlight(Flight),
    /// The outcome itself waits in the call's `arrived`: kept out of the state, which
    /// every poll copies, it is written once and read in place.
    Arrived {
        grant: Grant,
        sent_at: Timestamp,
        at: Timestamp,
    },
    Done(Finish),
}

/// The retry sequence of one logical call. Fixed size, no allocation. Not `Clone`: it
/// may hold a grant (a probe slot, a reserved rate-limit slot) that must be ended once.
#[derive(Debug)]
pub struct Call {
    config: RetryConfig,
    backoff: Backoff,
    key: IdempotencyKey,
    tokens: u64,
    only: Option<EndpointSet>,
    deadline: Timestamp,
    attempts: u32,
    last_failure: Option<Failure>,
    last_status: Option<u16>,
    last_target: Option<Target>,
    clock: Monotonic,
    state: State,
    /// The outcome of the attempt in [`State::Arrived`].
    arrived: Outcome,
    events: Ring<CallEvent, 8>,
    /// When and how much to hedge (off unless [`Call::with_hedge`]).
    hedge: HedgeConfig,
    /// Hedges sent.
    hedges: u32,
    /// A second attempt in flight beside the one in the state (a hedge, or the attempt
    /// it races when the hedge answered first): only while the state is `InFlight` or
    /// `Arrived`.
    second: Option<Flight>,
    /// When the attempt in flight is hedged unless it answered.
    hedge_at: Option<Timestamp>,
    /// Attempts the driver must drop (see [`Call::poll_cancel`]).
    cancels: Ring<AttemptId, 4>,
}

impl Call {
    /// Starts a call at `now` whose attempts all carry `key`.
    pub fn new(
        now: Timestamp,
        retry: &RetryConfig,
        backoff: &BackoffConfig,
        key: IdempotencyKey,
    ) -> Call {
        Call::with_backoff(now, retry, Backoff::new(*backoff), key)
    }

    /// [`Call::new`] with a fresh backoff built beforehand, so that a caller starting
    /// many calls under one config derives it once.
    pub(crate) fn with_backoff(
        now: Timestamp,
        retry: &RetryConfig,
        backoff: Backoff,
        key: IdempotencyKey,
    ) -> Call {
        let mut clock = Monotonic::default();
        let now = clock.observe(now);
        let deadline = retry
            .deadline
            .map_or(Timestamp::MAX, |d| now.saturating_add(d));
        Call {
            config: *retry,
            backoff,
            key,
            tokens: 0,
            only: None,
            deadline,
            attempts: 0,
            last_failure: None,
            last_status: None,
            last_target: None,
            clock,
            state: State::Ready {
                avoid: None,
                wake: None,
            },
            arrived: Outcome::Cancelled,
            events: Ring::new(),
            hedge: HedgeConfig::default(),
            hedges: 0,
            second: None,
            hedge_at: None,
            cancels: Ring::new(),
        }
    }

    /// The same call hedged as `hedge` says (see [`crate::hedge`]). Only a driver that
    /// can run two attempts at once turns it on: it must send every `Send` while the
    /// other attempt keeps running, report each outcome by its id, and drop the
    /// attempts [`Call::poll_cancel`] names. A call that is not idempotent never hedges.
    #[must_use]
    pub fn with_hedge(mut self, hedge: &HedgeConfig) -> Call {
        self.set_hedge(hedge);
        self
    }

    /// [`Call::with_hedge`] in place, before the first attempt.
    pub fn set_hedge(&mut self, hedge: &HedgeConfig) {
        self.hedge = *hedge;
    }

    /// Hedges sent so far.
    pub fn hedges(&self) -> u32 {
        self.hedges
    }

    /// The same call with an estimated token cost for token rate limits.
    #[must_use]
    pub fn with_tokens(mut self, tokens: u64) -> Call {
        self.set_tokens(tokens);
        self
    }

    /// [`Call::with_tokens`] in place, before the first attempt (a call is large:
    /// this one is not moved).
    pub fn set_tokens(&mut self, tokens: u64) {
        self.tokens = tokens;
    }

    /// The same call restricted to one endpoint: every attempt goes there, and only
    /// there, even when the endpoint is on standby (see
    /// [`EndpointSpec::standby`](crate::engine::EndpointSpec::standby)).
    #[must_use]
    pub fn restricted_to(mut self, endpoint: EndpointId) -> Call {
        self.only = Some(EndpointSet::one(endpoint));
        self
    }

    /// The same call restricted to `endpoints`: every attempt goes to one of them (in
    /// the pool's order), even to an endpoint on standby, and never elsewhere.
    #[must_use]
    pub fn restricted_to_set(mut self, endpoints: EndpointSet) -> Call {
        self.restrict_to_set(endpoints);
        self
    }

    /// [`Call::restricted_to_set`] in place, before the first attempt.
    pub fn restrict_to_set(&mut self, endpoints: EndpointSet) {
        self.only = Some(endpoints);
    }

    /// The idempotency key every attempt carries.
    pub fn idempotency_key(&self) -> IdempotencyKey {
        self.key
    }

    /// The instant after which no attempt starts ([`Timestamp::MAX`] without a deadline).
    pub fn deadline(&self) -> Timestamp {
        self.deadline
    }

    /// Attempts made so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Reports what happened to attempt `id`. A late outcome for an attempt the call
    /// already timed out, or cancelled after the other of two answered, is an error
    /// the driver may ignore. With two attempts in flight, poll after each outcome: a
    /// second outcome reported before the first was polled is refused (and that
    /// attempt times out at its deadline).
    pub fn on_outcome(
        &mut self,
        now: Timestamp,
        id: AttemptId,
        outcome: Outcome,
    ) -> Result<(), UsageError> {
        let now = self.clock.observe(now);
        match self.state {
            State::InFlight(f) if f.id == id => {
                self.arrive(f, outcome, now);
                Ok(())
            }
            State::InFlight(f) if self.second.is_some_and(|s| s.id == id) => {
                // The second answered first: it is settled, the first keeps running.
                let Some(second) = self.second.replace(f) else {
                    return Err(UsageError::UnknownAttempt { id });
                };
                self.arrive(second, outcome, now);
                Ok(())
            }
            State::Done(_) => Err(UsageError::Finished),
            _ => Err(UsageError::UnknownAttempt { id }),
        }
    }

    /// The next thing to do. Call it after every input and whenever the instant of the
    /// last `Wait` comes; drain it until `Wait` or `Done`.
    pub fn poll_decision<G: Gate + ?Sized>(&mut self, now: Timestamp, gate: &mut G) -> Decision {
        let now = self.clock.observe(now);
        loop {
            match self.state {
                State::Done(finish) => return Decision::Done(finish),
                State::InFlight(f) => {
                    if let Some(decision) = self.poll_in_flight(now, gate, f) {
                        return decision;
                    }
                }
                State::Reserved { at, .. } if now < at => return Decision::Wait(at),
                // Polled too late for its slot: the slot is given back and the deadline
                // decides.
                State::Reserved { grant, avoid, .. } if now >= self.deadline => {
                    gate.release(now, &grant);
                    self.state = State::Ready { avoid, wake: None };
                }
                State::Reserved { grant, avoid, .. } => match gate.confirm(now, &grant) {
                    Some(grant) => return Decision::Send(self.send(now, grant, gate)),
                    None => self.state = State::Ready { avoid, wake: None },
                },
                State::Arrived { grant, sent_at, at } => self.settle(gate, grant, sent_at, at),
                State::Ready {
                    wake: Some(wake), ..
                } if now < wake => return Decision::Wait(wake),
                State::Ready { avoid, .. } => {
                    let decision = self.next_attempt(now, gate, avoid);
                    if matches!(self.state, State::Reserved { .. }) {
                        continue;
                    }
                    if let (Decision::Wait(wake), State::Ready { .. }) = (decision, self.state) {
                        self.state = State::Ready {
                            avoid,
                            wake: Some(wake),
                        };
                    }
                    return decision;
                }
            }
        }
    }

    /// The next instant the driver must call [`Call::poll_decision`] without another
    /// input; `None` when the call is done.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        match self.state {
            State::Done(_) => None,
            State::InFlight(f) => Some(self.in_flight_wake(f)),
            State::Reserved { at, .. } => Some(at),
            State::Arrived { at, .. } => Some(at),
            State::Ready { wake, .. } => Some(wake.unwrap_or(self.clock.latest())),
        }
    }

    /// The next event for logs and metrics.
    pub fn poll_event(&mut self) -> Option<CallEvent> {
        self.events.pop()
    }

    /// The next attempt the driver must drop (close its request, ignore its answer):
    /// the loser of a hedge's race. The core has already given its grant back. Drain
    /// it after every poll of a hedged call.
    pub fn poll_cancel(&mut self) -> Option<AttemptId> {
        self.cancels.pop()
    }

    /// Gives the call up at `now`: an attempt in flight is reported to the gate as
    /// cancelled (releasing what it held) and the call finishes with `Cancelled`.
    pub fn cancel<G: Gate + ?Sized>(&mut self, now: Timestamp, gate: &mut G) -> Finish {
        let now = self.clock.observe(now);
        match self.state {
            State::InFlight(f) => {
                self.arrived = Outcome::Cancelled;
                self.settle(gate, f.grant, f.sent_at, now);
            }
            State::Reserved { grant, .. } => gate.release(now, &grant),
            _ => {}
        }
        self.drop_second(now, gate);
        match self.state {
            State::Done(finish) => finish,
            _ => self.finish(now, GiveUpReason::Cancelled),
        }
    }

    /// Whether the call has finished.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done(_))
    }

    fn next_attempt<G: Gate + ?Sized>(
        &mut self,
        now: Timestamp,
        gate: &mut G,
        avoid: Option<Avoid>,
    ) -> Decision {
        if now >= self.deadline {
            return Decision::Done(self.finish(now, GiveUpReason::DeadlineExceeded));
        }
        let query = Query {
            attempt: self.attempts.saturating_add(1),
            avoid,
            tokens: self.tokens,
            hold: self.config.hold,
            max_hold: self.config.max_hold,
            only: self.only,
            deadline: self.deadline,
            span: self.span(),
            hedge: false,
        };
        match gate.admit(now, &query) {
            Admit::Go(grant) => Decision::Send(self.send(now, grant, gate)),
            // The reserved slot is waited for (or, if already due, confirmed) by
            // `poll_decision`'s `Reserved` arms.
            Admit::At(grant, at) => {
                self.state = State::Reserved { grant, at, avoid };
                Decision::Wait(at)
            }
            // A key cooling down for longer than this call may wait is a hint too long.
            // The hint reported is what is left of the cool-down, which may come from
            // another key's answer than this call's last.
            Admit::NotBefore(_, WaitCause::Hint(hint)) if hint > self.config.max_retry_after => {
                Decision::Done(self.finish(now, GiveUpReason::HintTooLong { hint }))
            }
            // Calls waiting on a key cooled by another call's hint spread out as if each
            // had been told itself (a call's own hinted wait is already spread).
            Admit::NotBefore(at, WaitCause::Hint(hint))
                if at > now && at < self.deadline && avoid.is_none_or(|a| a.until != at) =>
            {
                let spread = self.config.hint_jitter(hint, gate.rng());
                Decision::Wait(at.saturating_add(spread).min(self.deadline))
            }
            Admit::NotBefore(at, _) if at < self.deadline => Decision::Wait(at.max(now)),
            Admit::NotBefore(at, cause) => {
                let reason = match cause {
                    WaitCause::Hint(hint) => GiveUpReason::HintTooLong { hint },
                    WaitCause::Breaker => GiveUpReason::BreakerOpen { until: at },
                    WaitCause::Budget => GiveUpReason::BudgetExhausted,
                    WaitCause::RateLimit | WaitCause::Busy => {
                        GiveUpReason::RateLimited { until: at }
                    }
                    WaitCause::Backoff => GiveUpReason::DeadlineExceeded,
                };
                Decision::Done(self.finish(now, reason))
            }
            Admit::Refuse(reason) => Decision::Done(self.finish(now, reason)),
        }
    }

    /// The longest an attempt may take once sent (its timeout, or for a stream its
    /// first-event timeout).
    fn span(&self) -> Duration {
        self.config
            .first_event_timeout
            .unwrap_or(self.config.attempt_timeout)
    }

    fn send<G: Gate + ?Sized>(&mut self, now: Timestamp, grant: Grant, gate: &G) -> Attempt {
        // A failover is announced before the attempt it starts, so that counters see
        // the attempt as the failover's, not as a retry.
        if let Some(from) = self
            .last_target
            .filter(|t| t.endpoint != grant.target.endpoint)
        {
            self.events.push(CallEvent::Failover {
                at: now,
                from,
                to: grant.target,
            });
        }
        let (attempt, flight) = self.attempt(now, grant);
        self.last_target = Some(grant.target);
        self.state = State::InFlight(flight);
        self.hedge_at = self.arm_hedge(now, gate, flight);
        attempt
    }

    /// Counts a new attempt on `grant` sent at `now`: what the driver gets, and what
    /// the call keeps in flight.
    fn attempt(&mut self, now: Timestamp, grant: Grant) -> (Attempt, Flight) {
        self.attempts = self.attempts.saturating_add(1);
        let id = AttemptId(self.attempts);
        let left = self.deadline.saturating_duration_since(now);
        // A stream's whole length is not bounded by the call's deadline: only its
        // first event is, since after it the call is committed and never retried.
        let (timeout, first_event_timeout) = match self.config.first_event_timeout {
            Some(first) => (self.config.attempt_timeout, Some(first.min(left))),
            None => (self.config.attempt_timeout.min(left), None),
        };
        let deadline = now.saturating_add(first_event_timeout.unwrap_or(timeout));
        self.events.push(CallEvent::AttemptStarted {
            at: now,
            id,
            target: grant.target,
        });
        let flight = Flight {
            id,
            grant,
            sent_at: now,
            deadline,
        };
        let attempt = Attempt {
            id,
            target: grant.target,
            timeout,
            deadline,
            connect_timeout: self.config.connect_timeout.min(timeout),
            first_event_timeout,
            stall_timeout: self.config.stall_timeout,
            idempotency_key: self.key,
        };
        (attempt, flight)
    }

    /// Classifies the arrived outcome, tells the gate, and moves to `Ready` or `Done`.
    fn settle<G: Gate + ?Sized>(
        &mut self,
        gate: &mut G,
        grant: Grant,
        sent_at: Timestamp,
        at: Timestamp,
    ) {
        self.hedge_at = None;
        let verdict = gate.classifier().classify(&self.arrived);
        let tokens_used = match &self.arrived {
            Outcome::Response(r) => {
                self.last_status = Some(r.status);
                r.tokens_used
            }
            _ => None,
        };
        let latency = at.saturating_duration_since(sent_at);
        if let (Verdict::Failure(failure), Some(other)) = (verdict, self.second) {
            // One of two failed while the other still runs: no retry, the call waits
            // for the other (unless the failure ends the call anyway).
            if failure.retryable && !matches!(self.arrived, Outcome::Cancelled) {
                self.last_failure = Some(failure);
                let report = Report {
                    grant,
                    verdict,
                    latency,
                    hints: hints_of(&self.arrived),
                    tokens_used,
                    retry_at: None,
                };
                gate.on_attempt_end(at, &report);
                self.second = None;
                self.state = State::InFlight(other);
                // The survivor is hedged in turn once it is as late as a first attempt
                // would be (at once if it already is), while hedges are left.
                self.hedge_at = self.arm_hedge(at, gate, other);
                return;
            }
        }
        // A failure is planned (stop, or retry when) before the gate hears of it: the
        // report carries the retry instant.
        let planned = match verdict {
            Verdict::Success => None,
            Verdict::Failure(failure) => {
                self.last_failure = Some(failure);
                let stop = if matches!(self.arrived, Outcome::Cancelled) {
                    Some(GiveUpReason::Cancelled)
                } else {
                    self.stop_reason(&failure)
                };
                let avoid = match stop {
                    Some(_) => None,
                    None => {
                        let wait_hint = hints_of(&self.arrived).wait_hint(self.tokens);
                        Some(self.plan_retry(gate, at, grant.target, &failure, wait_hint))
                    }
                };
                Some((failure, stop, avoid))
            }
        };
        let report = Report {
            grant,
            verdict,
            latency,
            hints: hints_of(&self.arrived),
            tokens_used,
            retry_at: planned.and_then(|(_, _, avoid)| avoid).map(|a| a.until),
        };
        gate.on_attempt_end(at, &report);
        if !matches!(planned, Some((_, None, Some(_)))) {
            // The call is over: the other attempt, if one runs, lost.
            self.drop_second(at, gate);
        }
        match planned {
            None => {
                self.events.push(CallEvent::Succeeded {
                    at,
                    attempts: self.attempts,
                });
                self.state = State::Done(Finish::Success {
                    attempts: self.attempts,
                    target: grant.target,
                });
            }
            Some((_, Some(reason), _)) => {
                self.finish(at, reason);
            }
            Some((failure, None, Some(avoid))) => {
                self.events.push(CallEvent::RetryScheduled {
                    at,
                    failure,
                    until: avoid.until,
                });
                self.state = State::Ready {
                    avoid: Some(avoid),
                    wake: None,
                };
            }
            Some((_, None, None)) => {
                self.state = State::Ready {
                    avoid: None,
                    wake: None,
                }
            }
        }
    }

    /// Sets the attempt `f` as arrived at `at` with `outcome`.
    fn arrive(&mut self, f: Flight, outcome: Outcome, at: Timestamp) {
        self.arrived = outcome;
        self.state = State::Arrived {
            grant: f.grant,
            sent_at: f.sent_at,
            at,
        };
    }

    /// What an in-flight call does at `now`: time out an overdue attempt (then `None`:
    /// settle it), send a hedge whose instant came, or wait.
    fn poll_in_flight<G: Gate + ?Sized>(
        &mut self,
        now: Timestamp,
        gate: &mut G,
        f: Flight,
    ) -> Option<Decision> {
        // The driver did not report in time: the attempt timed out.
        let timeout =
            || Outcome::Transport(Transport::new(TransportKind::Timeout, Phase::AfterSend));
        if let Some(s) = self
            .second
            .filter(|s| now >= s.deadline && s.deadline <= f.deadline)
        {
            self.second = Some(f);
            self.arrive(s, timeout(), now);
            return None;
        }
        if now >= f.deadline {
            self.arrive(f, timeout(), now);
            return None;
        }
        if self.hedge_at.is_some_and(|at| now >= at) {
            self.hedge_at = None;
            if let Some(hedge) = self.try_hedge(now, gate, f) {
                return Some(Decision::Send(hedge));
            }
        }
        Some(Decision::Wait(self.in_flight_wake(f)))
    }

    /// The next instant an in-flight call needs a poll: an attempt's deadline, or the
    /// hedge's instant.
    fn in_flight_wake(&self, f: Flight) -> Timestamp {
        [self.second.map(|s| s.deadline), self.hedge_at]
            .into_iter()
            .flatten()
            .fold(f.deadline, Timestamp::min)
    }

    /// Whether one more hedge may go out.
    fn may_hedge(&self) -> bool {
        self.hedge.is_on()
            && self.config.idempotent
            && self.hedges < self.hedge.max_per_call
            && self.attempts < self.config.max_attempts
    }

    /// When the attempt `f` (in flight at `now`) is hedged unless it answered: the
    /// trigger's span after it went out, or `now` if that has passed.
    fn arm_hedge<G: Gate + ?Sized>(
        &self,
        now: Timestamp,
        gate: &G,
        f: Flight,
    ) -> Option<Timestamp> {
        if !self.may_hedge() {
            return None;
        }
        let endpoint = f.grant.target.endpoint;
        let known = self
            .hedge
            .permille()
            .and_then(|p| gate.latency_quantile(now, endpoint, p, self.hedge.min_samples));
        let at = f.sent_at.saturating_add(self.hedge.delay(known)?).max(now);
        (at < f.deadline).then_some(at)
    }

    /// The hedge of `f` at `now`, if the gate grants one: another key or endpoint when
    /// one is free, else the same key.
    fn try_hedge<G: Gate + ?Sized>(
        &mut self,
        now: Timestamp,
        gate: &mut G,
        f: Flight,
    ) -> Option<Attempt> {
        if !self.may_hedge() || now >= self.deadline {
            return None;
        }
        let mut query = Query {
            attempt: self.attempts.saturating_add(1),
            avoid: Some(Avoid {
                target: f.grant.target,
                scope: Scope::Key,
                until: f.deadline,
                cause: WaitCause::Backoff,
            }),
            tokens: self.tokens,
            hold: false,
            max_hold: self.config.max_hold,
            only: self.only,
            deadline: self.deadline,
            span: self.span(),
            hedge: true,
        };
        let grant = match admit_now(now, gate, &query) {
            Some(grant) => grant,
            None => {
                query.avoid = None;
                admit_now(now, gate, &query)?
            }
        };
        self.hedges = self.hedges.saturating_add(1);
        self.events.push(CallEvent::HedgeSent {
            at: now,
            id: AttemptId(self.attempts.saturating_add(1)),
            beside: f.id,
            target: grant.target,
        });
        let (attempt, flight) = self.attempt(now, grant);
        if let Some(other) = self.second.replace(flight) {
            // Two were out already, both late: the older gives way to the new hedge,
            // so that no more than two run at once.
            let (older, younger) = if other.sent_at < f.sent_at {
                (other, f)
            } else {
                (f, other)
            };
            self.cancel_flight(now, gate, older);
            self.state = State::InFlight(younger);
        }
        self.hedge_at = self.arm_hedge(now, gate, flight);
        Some(attempt)
    }

    /// Cancels the second attempt in flight, if there is one.
    fn drop_second<G: Gate + ?Sized>(&mut self, now: Timestamp, gate: &mut G) {
        self.hedge_at = None;
        if let Some(s) = self.second.take() {
            self.cancel_flight(now, gate, s);
        }
    }

    /// Cancels the attempt `f`: its grant goes back to the gate and the driver is told
    /// to drop it.
    fn cancel_flight<G: Gate + ?Sized>(&mut self, now: Timestamp, gate: &mut G, f: Flight) {
        gate.release(now, &f.grant);
        self.cancels.push(f.id);
        self.events.push(CallEvent::AttemptCancelled {
            at: now,
            id: f.id,
            target: f.grant.target,
        });
    }

    /// Why the sequence must stop after `failure`, if it must.
    fn stop_reason(&self, failure: &Failure) -> Option<GiveUpReason> {
        if !failure.retryable {
            Some(GiveUpReason::NotRetryable)
        } else if failure.after_send && !self.config.idempotent {
            Some(GiveUpReason::UnsafeToRetry)
        } else if self.attempts >= self.config.max_attempts {
            Some(GiveUpReason::RetriesExhausted)
        } else {
            None
        }
    }

    /// What the failed target is ruled out for: a key failure rules its key out for
    /// good (another key may serve at once); a throttle or endpoint failure waits the
    /// server's hint plus a small positive jitter when it gave one (however short:
    /// the server knows best), the backoff when it did not, and for ever when the hint
    /// is too long to honour.
    fn plan_retry<G: Gate + ?Sized>(
        &mut self,
        gate: &mut G,
        at: Timestamp,
        target: Target,
        failure: &Failure,
        wait_hint: Option<Duration>,
    ) -> Avoid {
        let avoid = |until, cause| Avoid {
            target,
            scope: failure.scope,
            until,
            cause,
        };
        if failure.scope == Scope::Key {
            return avoid(Timestamp::MAX, WaitCause::Backoff);
        }
        let Some(hint) = wait_hint else {
            let backoff = self.backoff.next_delay(self.attempts, gate.rng());
            return avoid(at.saturating_add(backoff), WaitCause::Backoff);
        };
        let left = self.deadline.saturating_duration_since(at);
        if hint > self.config.max_retry_after || hint >= left {
            return avoid(Timestamp::MAX, WaitCause::Hint(hint));
        }
        let jittered = hint.saturating_add(self.config.hint_jitter(hint, gate.rng()));
        avoid(at.saturating_add(jittered), WaitCause::Hint(hint))
    }

    fn finish(&mut self, now: Timestamp, reason: GiveUpReason) -> Finish {
        let finish = Finish::GaveUp(GiveUp {
            reason,
            attempts: self.attempts,
            last_failure: self.last_failure,
            last_status: self.last_status,
        });
        self.events.push(CallEvent::GaveUp { at: now, reason });
        self.state = State::Done(finish);
        finish
    }
}

/// A grant to send at once, or none (a reserved slot is given back: a hedge never waits).
fn admit_now<G: Gate + ?Sized>(now: Timestamp, gate: &mut G, query: &Query) -> Option<Grant> {
    match gate.admit(now, query) {
        Admit::Go(grant) => Some(grant),
        Admit::At(grant, _) => {
            gate.release(now, &grant);
            None
        }
        Admit::NotBefore(..) | Admit::Refuse(_) => None,
    }
}

/// The server's hints in an outcome.
fn hints_of(outcome: &Outcome) -> &Hints {
    match outcome {
        Outcome::Response(r) => &r.hints,
        _ => &Hints::NONE,
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod hedge_tests;
