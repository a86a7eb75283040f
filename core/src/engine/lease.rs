//! The engine's side of shared limits (see [`crate::shared`]): the asks a driver
//! takes to the store, and the answers it brings back.

use crate::ids::{EndpointId, Target};
use crate::limiter::Limiter;
use crate::pool::{DisableReason, KeyState};
use crate::shared::breakers::{BreakerPublish, Known, SharedOpen, store_open_until};
use crate::shared::keys::{KeyPublish, SharedKeyState};
use crate::shared::{FailMode, LeaseAnswer, LeaseAsk, SharedCounters, SharedEvent, TokenSettle};
use crate::time::Timestamp;

use super::endpoint::EndpointState;
use super::{Engine, EngineEvent};

impl Engine {
    /// The next lease to ask a store for at `now`, if a call is waiting for one. The
    /// driver asks the store outside the engine's lock and reports the answer with
    /// [`Engine::handle_lease`]; an ask it never answers times out by itself.
    pub fn poll_lease_ask(&mut self, now: Timestamp) -> Option<LeaseAsk> {
        let now = self.clock.observe(now);
        let mut found = None;
        for (i, s) in self.endpoints.iter_mut().enumerate() {
            let endpoint = EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
            if let Some(ev) = shared_timeout(s, now, endpoint) {
                self.events.push(EngineEvent::Shared(ev));
            }
            if found.is_none() {
                found = s.shared.as_mut().and_then(|q| q.poll_ask(now, endpoint));
            }
        }
        found
    }

    /// The store's answer to `ask`, at `now`. The answer to an ask that timed out
    /// still counts while no newer ask is out: a grant ends the fallback (see
    /// [`SharedQuota::handle_answer`](crate::shared::SharedQuota::handle_answer)). An
    /// answer of an endpoint without a shared limit changes nothing.
    pub fn handle_lease(&mut self, now: Timestamp, ask: &LeaseAsk, answer: LeaseAnswer) {
        let now = self.clock.observe(now);
        let Some(s) = self.endpoints.get_mut(usize::from(ask.endpoint.0)) else {
            return;
        };
        let Some(q) = s.shared.as_mut() else {
            return;
        };
        if let Some(ev) = q.handle_answer(now, ask.endpoint, ask.ticket, answer) {
            drain_on_open_fallback(&mut s.limiter, now, &ev);
            self.events.push(EngineEvent::Shared(ev));
        }
    }

    /// The next token lease to settle with the store (see [`TokenSettle`]).
    pub fn poll_token_settle(&mut self) -> Option<TokenSettle> {
        self.endpoints.iter_mut().enumerate().find_map(|(i, s)| {
            let endpoint = EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
            s.shared.as_mut().and_then(|q| q.poll_settle(endpoint))
        })
    }

    /// The counters of `endpoint`'s shared limit, if it has one.
    pub fn shared_counters(&self, endpoint: EndpointId) -> Option<SharedCounters> {
        self.state(endpoint)
            .and_then(|s| s.shared.as_ref())
            .map(|q| q.counters())
    }

    /// Whether `endpoint`'s shared limit is on its fallback at `now` (its store
    /// failed recently).
    pub fn shared_on_fallback(&self, now: Timestamp, endpoint: EndpointId) -> bool {
        self.state(endpoint)
            .and_then(|s| s.shared.as_ref())
            .is_some_and(|q| q.on_fallback(now))
    }
}

/// `s`'s shared limit brought up to `now` (an ask past its timeout fails, an expired
/// token lease is settled): the event it caused.
pub(super) fn shared_timeout(
    s: &mut EndpointState,
    now: Timestamp,
    endpoint: EndpointId,
) -> Option<SharedEvent> {
    let ev = s.shared.as_mut()?.handle_timeout(now, endpoint)?;
    drain_on_open_fallback(&mut s.limiter, now, &ev);
    Some(ev)
}

/// A shared limit that falls back open leaves its endpoint's limiter empty (see
/// [`crate::shared`]).
fn drain_on_open_fallback(limiter: &mut Limiter, now: Timestamp, event: &SharedEvent) {
    if let SharedEvent::Fallback {
        mode: FailMode::Open,
        ..
    } = event
    {
        limiter.drain(now);
    }
}

impl Engine {
    /// The next change of a shared key's state to write to the store (see
    /// [`crate::shared::keys`]).
    pub fn poll_key_publish(&mut self) -> Option<KeyPublish> {
        self.keys.as_mut()?.poll_publish()
    }

    /// What the store says of `endpoint`'s keys at `now`, by key index: a key
    /// cooling there cools here until the same instant, a key disabled there is
    /// disabled here, and a key this engine disabled only because the store said so
    /// is enabled again once the store no longer does. Nothing of it is published
    /// back. Changes nothing for an endpoint that does not share its keys.
    pub fn handle_shared_keys(
        &mut self,
        now: Timestamp,
        endpoint: EndpointId,
        states: &[SharedKeyState],
    ) {
        let now = self.clock.observe(now);
        let shares = self.state(endpoint).is_some_and(|s| s.share_keys);
        let Some(sync) = self.keys.as_mut().filter(|_| shares) else {
            return;
        };
        sync.set_applying(true);
        for (k, state) in states.iter().enumerate() {
            let Ok(key) = u16::try_from(k) else {
                break;
            };
            let target = Target::new(endpoint.0, key);
            let disabled_here = matches!(
                self.pool.key_state(now, target),
                Some(KeyState::Disabled { .. })
            );
            if state.disabled && !disabled_here {
                if self
                    .pool
                    .on_key_rejected(now, target, DisableReason::Shared)
                    .is_ok()
                {
                    sync.on_disabled_by_store(target);
                }
            } else if !state.disabled && sync.disabled_by_store(target) {
                let _ = self.pool.enable_key(now, target);
            }
            if let Some(left) = state.cooling_for {
                let _ = self
                    .pool
                    .on_throttled(now, target, now.saturating_add(left));
            }
        }
        self.drain_events();
        if let Some(sync) = self.keys.as_mut() {
            sync.set_applying(false);
        }
    }
}

impl Engine {
    /// The next breaker open to write to the store (see [`crate::shared::breakers`]):
    /// an endpoint that shares its breaker opened here on its own.
    pub fn poll_breaker_publish(&mut self) -> Option<BreakerPublish> {
        self.keys.as_mut()?.poll_breaker_publish()
    }

    /// What the store says at `now` of `endpoint`'s breaker: open (for
    /// [`SharedOpen::left`] more), or not open (`None`). An open that ends later than
    /// any this engine knows of (by more than [`SharedConfig::ask_timeout`](crate::shared::SharedConfig::ask_timeout)),
    /// and began after this engine's latest success of the endpoint, opens the
    /// breaker here until then (or keeps it open until then), with a
    /// [`SharedEvent::BreakerOpened`]; it
    /// is not published back. A store that says "not open" closes nothing. Changes
    /// nothing for an endpoint that does not share its breaker.
    pub fn handle_shared_breaker(
        &mut self,
        now: Timestamp,
        endpoint: EndpointId,
        open: Option<SharedOpen>,
    ) {
        let now = self.clock.observe(now);
        let tolerance = self.policy.shared.ask_timeout;
        let Some(s) = self
            .endpoints
            .get_mut(usize::from(endpoint.0))
            .filter(|s| s.share_breaker)
        else {
            return;
        };
        let known = Known {
            open_until: s.breaker_until,
            succeeded_at: s.succeeded_at,
        };
        let Some(until) = store_open_until(now, open, known, tolerance) else {
            return;
        };
        s.breaker_until = until;
        let changed = s.breaker.open_until(now, until);
        if let Some(sync) = self.keys.as_mut() {
            sync.set_applying(true);
        }
        self.drain_events();
        if changed {
            let ev = SharedEvent::BreakerOpened {
                at: now,
                endpoint,
                until,
            };
            self.events.push(EngineEvent::Shared(ev));
        }
        if let Some(sync) = self.keys.as_mut() {
            sync.set_applying(false);
        }
    }
}
