//! The engine's side of shared limits (see [`crate::shared`]): the asks a driver
//! takes to the store, and the answers it brings back.

use crate::ids::EndpointId;
use crate::shared::{LeaseAnswer, LeaseAsk, SharedCounters};
use crate::time::Timestamp;

use super::{Engine, EngineEvent};

impl Engine {
    /// The next lease to ask a store for at `now`, if a call is waiting for one. The
    /// driver asks the store outside the engine's lock and reports the answer with
    /// [`Engine::handle_lease`]; an ask it never answers times out by itself.
    pub fn poll_lease_ask(&mut self, now: Timestamp) -> Option<LeaseAsk> {
        let now = self.clock.observe(now);
        let mut found = None;
        for (i, s) in self.endpoints.iter_mut().enumerate() {
            let Some(q) = s.shared.as_mut() else {
                continue;
            };
            let endpoint = EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
            if let Some(ev) = q.handle_timeout(now, endpoint) {
                self.events.push(EngineEvent::Shared(ev));
            }
            if found.is_none() {
                found = q.poll_ask(now, endpoint);
            }
        }
        found
    }

    /// The store's answer to `ask`, at `now`. An answer to an ask that timed out (or
    /// of an endpoint without a shared limit) changes nothing.
    pub fn handle_lease(&mut self, now: Timestamp, ask: &LeaseAsk, answer: LeaseAnswer) {
        let now = self.clock.observe(now);
        let Some(q) = self
            .endpoints
            .get_mut(usize::from(ask.endpoint.0))
            .and_then(|s| s.shared.as_mut())
        else {
            return;
        };
        if let Some(ev) = q.handle_answer(now, ask.endpoint, ask.ticket, answer) {
            self.events.push(EngineEvent::Shared(ev));
        }
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
