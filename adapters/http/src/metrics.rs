//! Counters the caller can read, fed from the core's events; with the `tracing`
//! feature, one `tracing` event per core event as well (two for a give-up for a spent
//! budget: `steadfast.budget.denied`, then `steadfast.give_up`). The resilience
//! decisions are named events (`steadfast.breaker.transition`, `steadfast.key.cooldown`,
//! `steadfast.key.disabled`, `steadfast.budget.denied`, `steadfast.retry.scheduled`,
//! `steadfast.failover`, `steadfast.give_up`): the name is both the event's and its
//! message, which `tracing-opentelemetry` exports as the span event's name. Events name
//! endpoints and keys by index only, so no secret can reach a counter or a log line.

use std::sync::atomic::{AtomicU64, Ordering};

use steadfast_core::breaker::StateKind;
use steadfast_core::engine::EngineEvent;
use steadfast_core::pool::PoolEvent;
use steadfast_core::retry::{CallEvent, GiveUpReason};
use steadfast_core::shared::SharedEvent;

use crate::fallback::FallbackKind;

/// Live counters, shared by a client's calls (fallback calls included).
#[derive(Debug, Default)]
pub struct Metrics {
    attempts: AtomicU64,
    retries: AtomicU64,
    successes: AtomicU64,
    give_ups: [AtomicU64; GIVE_UP_SLOTS],
    breaker: [AtomicU64; 3],
    keys_cooled: AtomicU64,
    keys_disabled: AtomicU64,
    keys_enabled: AtomicU64,
    failovers: AtomicU64,
    fallbacks: [AtomicU64; 3],
    stream_interruptions: AtomicU64,
    shared_fallbacks: AtomicU64,
    shared_resumed: AtomicU64,
    hedges: AtomicU64,
    hedges_cancelled: AtomicU64,
}

const GIVE_UP_SLOTS: usize = 11;

fn give_up_slot(reason: &GiveUpReason) -> usize {
    match reason {
        GiveUpReason::NotRetryable => 0,
        GiveUpReason::UnsafeToRetry => 1,
        GiveUpReason::RetriesExhausted => 2,
        GiveUpReason::DeadlineExceeded => 3,
        GiveUpReason::HintTooLong { .. } => 4,
        GiveUpReason::BudgetExhausted => 5,
        GiveUpReason::BreakerOpen { .. } => 6,
        GiveUpReason::NoUsableKey => 7,
        GiveUpReason::RateLimited { .. } => 8,
        GiveUpReason::Cancelled => 9,
        _ => 10,
    }
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// What the counters need to know of one call across its events: whether it is a
/// stream (its success is counted when its final event arrives, not when it starts)
/// and whether its next attempt is a failover (counted as one, not as a retry).
#[derive(Debug, Clone, Copy, Default)]
pub struct CallTally {
    stream: bool,
    failing_over: bool,
    /// The next attempt is a hedge (not a retry).
    hedging: bool,
}

impl CallTally {
    /// The tally of a call, a stream when `stream`.
    pub fn new(stream: bool) -> CallTally {
        CallTally {
            stream,
            failing_over: false,
            hedging: false,
        }
    }
}

impl Metrics {
    /// Counts one event of a call. An attempt after a failover counts as a failover,
    /// not a retry; a stream's success waits for its final event
    /// ([`Metrics::on_stream_finished`]).
    pub fn on_call_event(&self, ev: &CallEvent, call: &mut CallTally) {
        trace_call(ev);
        match ev {
            CallEvent::AttemptStarted { id, .. } => {
                bump(&self.attempts);
                if id.0 > 1 && !call.failing_over && !call.hedging {
                    bump(&self.retries);
                }
                call.failing_over = false;
                call.hedging = false;
            }
            CallEvent::HedgeSent { .. } => {
                bump(&self.hedges);
                call.hedging = true;
            }
            CallEvent::AttemptCancelled { .. } => bump(&self.hedges_cancelled),
            CallEvent::Failover { .. } => {
                bump(&self.failovers);
                call.failing_over = true;
            }
            CallEvent::Succeeded { .. } if !call.stream => bump(&self.successes),
            CallEvent::GaveUp { reason, .. } => {
                if let Some(c) = self.give_ups.get(give_up_slot(reason)) {
                    bump(c);
                }
            }
            _ => {}
        }
    }

    /// Counts one event of the shared machines.
    pub fn on_engine_event(&self, ev: &EngineEvent) {
        trace_engine(ev);
        match ev {
            EngineEvent::Breaker { event, .. } => {
                let slot = match event.to {
                    StateKind::Open => 0,
                    StateKind::HalfOpen => 1,
                    StateKind::Closed => 2,
                };
                if let Some(c) = self.breaker.get(slot) {
                    bump(c);
                }
            }
            EngineEvent::Key(PoolEvent::KeyCooled { .. }) => bump(&self.keys_cooled),
            EngineEvent::Key(PoolEvent::KeyDisabled { .. }) => bump(&self.keys_disabled),
            EngineEvent::Key(PoolEvent::KeyEnabled { .. }) => bump(&self.keys_enabled),
            EngineEvent::Shared(SharedEvent::Fallback { .. }) => bump(&self.shared_fallbacks),
            EngineEvent::Shared(SharedEvent::Resumed { .. }) => bump(&self.shared_resumed),
            _ => {}
        }
    }

    /// Counts a fallback that produced the reply.
    pub fn on_fallback(&self, via: FallbackKind, reason: &GiveUpReason) {
        #[cfg(feature = "tracing")]
        tracing::warn!(target: "steadfast", via = ?via, reason = %reason, "degraded reply from a fallback");
        #[cfg(not(feature = "tracing"))]
        let _ = reason;
        let slot = match via {
            FallbackKind::Endpoint => 0,
            FallbackKind::Stored => 1,
            FallbackKind::Template => 2,
        };
        if let Some(c) = self.fallbacks.get(slot) {
            bump(c);
        }
    }

    /// Counts a stream whose final event arrived: a success.
    pub fn on_stream_finished(&self) {
        bump(&self.successes);
    }

    /// Counts a stream interrupted after its first event.
    pub fn on_stream_interrupted(&self) {
        #[cfg(feature = "tracing")]
        tracing::warn!(target: "steadfast", "stream interrupted after its first event");
        bump(&self.stream_interruptions);
    }

    /// A consistent-enough copy of every counter (each is read atomically).
    pub fn snapshot(&self) -> MetricsSnapshot {
        let g = |i: usize| self.give_ups.get(i).map_or(0, get);
        let b = |i: usize| self.breaker.get(i).map_or(0, get);
        let f = |i: usize| self.fallbacks.get(i).map_or(0, get);
        MetricsSnapshot {
            attempts: get(&self.attempts),
            retries: get(&self.retries),
            successes: get(&self.successes),
            give_ups: GiveUps {
                not_retryable: g(0),
                unsafe_to_retry: g(1),
                retries_exhausted: g(2),
                deadline_exceeded: g(3),
                hint_too_long: g(4),
                budget_exhausted: g(5),
                breaker_open: g(6),
                no_usable_key: g(7),
                rate_limited: g(8),
                cancelled: g(9),
                other: g(10),
            },
            breaker_opened: b(0),
            breaker_half_opened: b(1),
            breaker_closed: b(2),
            keys_cooled: get(&self.keys_cooled),
            keys_disabled: get(&self.keys_disabled),
            keys_enabled: get(&self.keys_enabled),
            failovers: get(&self.failovers),
            fallbacks: Fallbacks {
                endpoint: f(0),
                stored: f(1),
                template: f(2),
            },
            stream_interruptions: get(&self.stream_interruptions),
            shared_fallbacks: get(&self.shared_fallbacks),
            shared_resumed: get(&self.shared_resumed),
            hedges: get(&self.hedges),
            hedges_cancelled: get(&self.hedges_cancelled),
        }
    }
}

/// The counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// Attempts sent (first tries and retries).
    pub attempts: u64,
    /// Attempts after the first of their call that went where the one before went (an
    /// attempt to another endpoint is a failover, not a retry).
    pub retries: u64,
    /// Calls that succeeded (a fallback endpoint's own call included); a stream counts
    /// once its final event arrived (a cut stream is an interruption, not a success).
    pub successes: u64,
    /// Calls that gave up, by reason.
    pub give_ups: GiveUps,
    /// Breakers that opened.
    pub breaker_opened: u64,
    /// Breakers that half-opened.
    pub breaker_half_opened: u64,
    /// Breakers that closed again.
    pub breaker_closed: u64,
    /// Keys that started (or extended) a cooldown.
    pub keys_cooled: u64,
    /// Keys disabled (401, 403, exhausted quota).
    pub keys_disabled: u64,
    /// Keys enabled again.
    pub keys_enabled: u64,
    /// Attempts that went to another endpoint than the one before.
    pub failovers: u64,
    /// Replies that came from a fallback, by kind.
    pub fallbacks: Fallbacks,
    /// Streams interrupted after their first event.
    pub stream_interruptions: u64,
    /// Times a shared limit's store failed and its endpoint went on its fallback
    /// (local limits, or nothing admitted when it fails closed).
    pub shared_fallbacks: u64,
    /// Times a shared limit's store answered again after a failure.
    pub shared_resumed: u64,
    /// Hedges sent: attempts beside one still running (counted in `attempts`, never in
    /// `retries`).
    pub hedges: u64,
    /// Attempts dropped unanswered because another attempt of their call answered
    /// first, or a later hedge took their place.
    pub hedges_cancelled: u64,
}

/// Give-ups by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct GiveUps {
    /// [`GiveUpReason::NotRetryable`].
    pub not_retryable: u64,
    /// [`GiveUpReason::UnsafeToRetry`].
    pub unsafe_to_retry: u64,
    /// [`GiveUpReason::RetriesExhausted`].
    pub retries_exhausted: u64,
    /// [`GiveUpReason::DeadlineExceeded`].
    pub deadline_exceeded: u64,
    /// [`GiveUpReason::HintTooLong`].
    pub hint_too_long: u64,
    /// [`GiveUpReason::BudgetExhausted`].
    pub budget_exhausted: u64,
    /// [`GiveUpReason::BreakerOpen`].
    pub breaker_open: u64,
    /// [`GiveUpReason::NoUsableKey`].
    pub no_usable_key: u64,
    /// [`GiveUpReason::RateLimited`].
    pub rate_limited: u64,
    /// [`GiveUpReason::Cancelled`].
    pub cancelled: u64,
    /// Reasons added to the core after this crate was written.
    pub other: u64,
}

impl GiveUps {
    /// All give-ups.
    pub fn total(&self) -> u64 {
        [
            self.not_retryable,
            self.unsafe_to_retry,
            self.retries_exhausted,
            self.deadline_exceeded,
            self.hint_too_long,
            self.budget_exhausted,
            self.breaker_open,
            self.no_usable_key,
            self.rate_limited,
            self.cancelled,
            self.other,
        ]
        .iter()
        .sum()
    }
}

/// Fallback replies by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Fallbacks {
    /// From a fallback endpoint.
    pub endpoint: u64,
    /// From the idempotency store.
    pub stored: u64,
    /// From a fixed template.
    pub template: u64,
}

impl Fallbacks {
    /// All fallback replies.
    pub fn total(&self) -> u64 {
        self.endpoint + self.stored + self.template
    }
}

#[cfg(feature = "tracing")]
fn trace_call(ev: &CallEvent) {
    use tracing::{debug, info, warn};
    match ev {
        CallEvent::AttemptStarted { at, id, target } => {
            debug!(target: "steadfast", at = %at, attempt = id.0, to = %target, "attempt started");
        }
        CallEvent::RetryScheduled { at, failure, until } => info!(
            name: "steadfast.retry.scheduled",
            target: "steadfast",
            at = %at,
            class = ?failure.class,
            scope = ?failure.scope,
            until = %until,
            wait_ms = millis(until.saturating_duration_since(*at)),
            "steadfast.retry.scheduled"
        ),
        CallEvent::HedgeSent {
            at,
            id,
            beside,
            target,
        } => info!(
            name: "steadfast.hedge.sent",
            target: "steadfast",
            at = %at,
            attempt = id.0,
            beside = beside.0,
            to = %target,
            "steadfast.hedge.sent"
        ),
        CallEvent::Failover { at, from, to } => {
            warn!(name: "steadfast.failover", target: "steadfast", at = %at, from = %from, to = %to, "steadfast.failover");
        }
        CallEvent::Succeeded { at, attempts } => {
            debug!(target: "steadfast", at = %at, attempts, "call succeeded");
        }
        CallEvent::GaveUp { at, reason } => {
            if *reason == GiveUpReason::BudgetExhausted {
                warn!(name: "steadfast.budget.denied", target: "steadfast", at = %at, "steadfast.budget.denied");
            }
            warn!(
                name: "steadfast.give_up",
                target: "steadfast",
                at = %at,
                reason = reason.name(),
                "steadfast.give_up"
            );
        }
        other => debug!(target: "steadfast", event = ?other, "call event"),
    }
}

#[cfg(not(feature = "tracing"))]
fn trace_call(_: &CallEvent) {}

/// A wait in whole milliseconds, as the events carry it.
#[cfg(feature = "tracing")]
fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(feature = "tracing")]
fn trace_engine(ev: &EngineEvent) {
    use tracing::{debug, info, warn};
    match ev {
        EngineEvent::Breaker { endpoint, event } => warn!(
            name: "steadfast.breaker.transition",
            target: "steadfast",
            at = %event.at,
            endpoint = %endpoint,
            from = ?event.from,
            to = ?event.to,
            "steadfast.breaker.transition"
        ),
        EngineEvent::BreakerModeChanged {
            at,
            endpoint,
            from,
            to,
        } => warn!(
            target: "steadfast",
            at = %at,
            endpoint = %endpoint,
            from = %from,
            to = %to,
            "breaker mode changed"
        ),
        EngineEvent::BreakerReset { at, endpoint, from } => warn!(
            target: "steadfast",
            at = %at,
            endpoint = %endpoint,
            from = ?from,
            "breaker reset"
        ),
        EngineEvent::Key(PoolEvent::KeyCooled { at, target, until }) => info!(
            name: "steadfast.key.cooldown",
            target: "steadfast",
            at = %at,
            key = %target,
            until = %until,
            wait_ms = millis(until.saturating_duration_since(*at)),
            "steadfast.key.cooldown"
        ),
        EngineEvent::Key(PoolEvent::KeyDisabled { at, target, reason }) => warn!(
            name: "steadfast.key.disabled",
            target: "steadfast",
            at = %at,
            key = %target,
            reason = ?reason,
            "steadfast.key.disabled"
        ),
        EngineEvent::Key(PoolEvent::KeyEnabled { at, target }) => {
            info!(target: "steadfast", at = %at, key = %target, "key enabled");
        }
        EngineEvent::Shared(SharedEvent::Fallback {
            at,
            endpoint,
            mode,
            until,
        }) => warn!(
            target: "steadfast",
            at = %at,
            endpoint = %endpoint,
            mode = ?mode,
            until = %until,
            "shared limit store failed: on the fallback"
        ),
        EngineEvent::Shared(SharedEvent::Resumed { at, endpoint }) => {
            info!(target: "steadfast", at = %at, endpoint = %endpoint, "shared limit resumed");
        }
        EngineEvent::Shared(SharedEvent::BreakerOpened {
            at,
            endpoint,
            until,
        }) => warn!(
            target: "steadfast",
            at = %at,
            endpoint = %endpoint,
            until = %until,
            "breaker opened by another process (shared)"
        ),
        other => debug!(target: "steadfast", event = ?other, "engine event"),
    }
}

#[cfg(not(feature = "tracing"))]
fn trace_engine(_: &EngineEvent) {}

#[cfg(test)]
mod tests {
    use super::*;
    use steadfast_core::breaker::BreakerEvent;
    use steadfast_core::ids::{AttemptId, EndpointId, Target};
    use steadfast_core::time::Timestamp;

    #[test]
    fn events_feed_counters() {
        let m = Metrics::default();
        let t = Target::new(0, 0);
        let at = Timestamp::ZERO;
        let mut call = CallTally::new(false);
        let start = |id| CallEvent::AttemptStarted {
            at,
            id: AttemptId(id),
            target: t,
        };
        for id in 1..=3 {
            m.on_call_event(&start(id), &mut call);
        }
        let failover = CallEvent::Failover {
            at,
            from: t,
            to: Target::new(1, 0),
        };
        m.on_call_event(&failover, &mut call);
        m.on_call_event(&start(4), &mut call);
        m.on_call_event(&start(5), &mut call);
        let gave_up = CallEvent::GaveUp {
            at,
            reason: GiveUpReason::NoUsableKey,
        };
        m.on_call_event(&gave_up, &mut call);
        m.on_call_event(&CallEvent::Succeeded { at, attempts: 1 }, &mut call);
        // A stream's start is not its success; its final event is.
        let mut stream = CallTally::new(true);
        m.on_call_event(&CallEvent::Succeeded { at, attempts: 1 }, &mut stream);
        assert_eq!(m.snapshot().successes, 1);
        m.on_stream_finished();
        m.on_engine_event(&EngineEvent::Breaker {
            endpoint: EndpointId(0),
            event: BreakerEvent {
                at,
                from: StateKind::Closed,
                to: StateKind::Open,
            },
        });
        m.on_engine_event(&EngineEvent::Key(PoolEvent::KeyCooled {
            at,
            target: t,
            until: at,
        }));
        m.on_fallback(FallbackKind::Template, &GiveUpReason::NoUsableKey);
        let s = m.snapshot();
        // Attempts 2, 3 and 5 are retries; 4 went elsewhere.
        assert_eq!((s.attempts, s.retries, s.successes), (5, 3, 2));
        assert_eq!(s.failovers, 1);
        assert_eq!(s.give_ups.no_usable_key, 1);
        assert_eq!(s.give_ups.total(), 1);
        assert_eq!((s.breaker_opened, s.keys_cooled), (1, 1));
        assert_eq!(s.fallbacks.template, 1);
        assert_eq!(s.fallbacks.total(), 1);
    }
}
