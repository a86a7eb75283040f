//! A read-only snapshot of each endpoint's shared machines, for admin views: breaker
//! state and mode, rate limits, outstanding grants, and every key's state.
//!
//! Plain data. Instants on the engine's clock mean nothing outside the process, so the
//! snapshot gives spans from its own instant (`at`): "cooling for 3.2s", "probe in 4s"
//! (serde writes them as human durations, `"3.2s"`). `at` plus a span is the instant.

use alloc::vec::Vec;
use core::time::Duration;

use crate::breaker::{BreakerMode, StateKind, WindowCounts};
use crate::ids::{EndpointId, KeyId, Target};
use crate::limiter::{self, Limiter, ServerLimits};
use crate::pool::{DisableReason, KeyState};
use crate::time::Timestamp;

use super::Engine;
use super::endpoint::EndpointState;

/// One endpoint at an instant.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct EndpointStatus {
    /// The instant of the snapshot (the engine's latest, if `now` was earlier).
    pub at: Timestamp,
    /// The endpoint.
    pub endpoint: EndpointId,
    /// Its priority (lower is preferred).
    pub priority: u8,
    /// Whether it serves only calls restricted to it.
    pub standby: bool,
    /// Its circuit breaker.
    pub breaker: BreakerStatus,
    /// How long it has been failing: since its first endpoint-scope failure after its
    /// last success (`None` while it is not failing).
    #[cfg_attr(
        feature = "serde",
        serde(with = "crate::duration::serde_human::option")
    )]
    pub failing_for: Option<Duration>,
    /// Grants on it issued and not yet ended (attempts in flight, reserved slots).
    pub outstanding: usize,
    /// Its configured rate limits.
    pub limiter: LimiterStatus,
    /// Each key, by id.
    pub keys: Vec<KeyStatus>,
}

/// An endpoint's circuit breaker at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct BreakerStatus {
    /// The mode in force.
    pub mode: BreakerMode,
    /// The state as of its last input (an open breaker whose time is up reads open,
    /// with `probe_in` zero, until the next call asks).
    pub state: StateKind,
    /// Whether a call sent now would be let through (as a call or a probe).
    pub admits: bool,
    /// When open, in a mode that lets it half-open: the time until it admits a probe
    /// (zero once due).
    #[cfg_attr(
        feature = "serde",
        serde(with = "crate::duration::serde_human::option")
    )]
    pub probe_in: Option<Duration>,
    /// Probes of the current half-open period not yet reported.
    pub probes_in_flight: u32,
    /// How many times it has opened.
    pub trips: u64,
    /// The calls in its sliding window.
    pub window: WindowCounts,
}

/// An endpoint's configured rate limits at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct LimiterStatus {
    /// Calls admitted and not yet finished.
    pub in_flight: u32,
    /// The time until the limits admit a request (zero: one may go now). `None` when
    /// no instant is known: every slot for calls in flight is taken.
    #[cfg_attr(
        feature = "serde",
        serde(with = "crate::duration::serde_human::option")
    )]
    pub next_slot_in: Option<Duration>,
}

/// One key at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct KeyStatus {
    /// The key.
    pub key: KeyId,
    /// Usable, cooling or disabled.
    pub condition: KeyCondition,
    /// What its server's rate-limit headers said, when the endpoint follows them.
    pub server: Option<ServerStatus>,
}

/// A key's [`KeyState`] with its cooldown as a span from the snapshot's instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum KeyCondition {
    /// It may be picked.
    Usable,
    /// It was throttled and is usable again after `left`.
    Cooling {
        /// The time until it is usable again.
        #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
        left: Duration,
    },
    /// It is never picked until enabled again.
    Disabled {
        /// Why (the first reason given).
        reason: DisableReason,
    },
}

impl KeyCondition {
    /// The condition of a key in `state` at `now`.
    pub fn of(state: KeyState, now: Timestamp) -> KeyCondition {
        match state {
            KeyState::Usable => KeyCondition::Usable,
            KeyState::Cooling { until } => KeyCondition::Cooling {
                left: until.saturating_duration_since(now),
            },
            KeyState::Disabled { reason } => KeyCondition::Disabled { reason },
        }
    }
}

/// What a key's server said about its rate limits, at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct ServerStatus {
    /// Whether its headers taught anything yet.
    pub known: bool,
    /// The time until its learned limits take another request (zero: now).
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub next_slot_in: Duration,
    /// The time between two requests it allows, once known.
    #[cfg_attr(
        feature = "serde",
        serde(with = "crate::duration::serde_human::option")
    )]
    pub request_interval: Option<Duration>,
    /// The most requests it takes at once, once known.
    pub request_capacity: Option<u64>,
}

impl ServerStatus {
    /// What `limits` say at `now`.
    pub fn of(limits: &ServerLimits, now: Timestamp) -> ServerStatus {
        ServerStatus {
            known: limits.is_known(),
            next_slot_in: limits.first_slot(now, 0).saturating_duration_since(now),
            request_interval: limits.request_interval(),
            request_capacity: limits.request_capacity(),
        }
    }
}

impl LimiterStatus {
    /// What `limiter` says at `now`.
    pub fn of(limiter: &Limiter, now: Timestamp) -> LimiterStatus {
        let next_slot_in = match limiter.check(now, 0) {
            limiter::Admit::Go => Some(Duration::ZERO),
            limiter::Admit::NotBefore(at) => Some(at.saturating_duration_since(now)),
            limiter::Admit::Busy | limiter::Admit::TooLarge => None,
        };
        LimiterStatus {
            in_flight: limiter.in_flight(),
            next_slot_in,
        }
    }
}

impl Engine {
    /// A snapshot of `endpoint` at `now` (`None` for an unknown endpoint). Reads only:
    /// nothing changes, not even an open breaker whose time is up.
    pub fn endpoint_status(&self, now: Timestamp, endpoint: EndpointId) -> Option<EndpointStatus> {
        let now = now.max(self.clock.latest());
        let s = self.state(endpoint)?;
        let keys = (0..self.pool.key_count(endpoint))
            .filter_map(|key| {
                self.key_status(
                    now,
                    s,
                    Target {
                        endpoint,
                        key: KeyId(key),
                    },
                )
            })
            .collect();
        Some(EndpointStatus {
            at: now,
            endpoint,
            priority: self.pool.priority(endpoint)?,
            standby: s.standby,
            breaker: breaker_status(s, now),
            failing_for: s.failing_since.map(|t| now.saturating_duration_since(t)),
            outstanding: self.outstanding_on(endpoint),
            limiter: LimiterStatus::of(&s.limiter, now),
            keys,
        })
    }

    /// A snapshot of every endpoint at `now`, by id.
    pub fn status(&self, now: Timestamp) -> Vec<EndpointStatus> {
        (0..self.pool.endpoint_count())
            .filter_map(|e| self.endpoint_status(now, EndpointId(e)))
            .collect()
    }

    fn key_status(&self, now: Timestamp, s: &EndpointState, target: Target) -> Option<KeyStatus> {
        let state = self.pool.key_state(now, target)?;
        Some(KeyStatus {
            key: target.key,
            condition: KeyCondition::of(state, now),
            server: s.server(target.key).map(|l| ServerStatus::of(l, now)),
        })
    }
}

fn breaker_status(s: &EndpointState, now: Timestamp) -> BreakerStatus {
    let b = &s.breaker;
    BreakerStatus {
        mode: b.mode(),
        state: b.state().kind(),
        admits: b.peek(now).is_granted(),
        probe_in: b.poll_timeout().map(|t| t.saturating_duration_since(now)),
        // Only the current half-open period's probes hold slots.
        probes_in_flight: match b.state() {
            crate::breaker::BreakerState::HalfOpen => b.probes_in_flight(),
            _ => 0,
        },
        trips: b.trips(),
        window: b.counts(),
    }
}
