//! Operator control of the shared machines: breaker modes and resets, keys taken out
//! of service and back. Every change emits an [`EngineEvent`], like the changes the
//! machines make on their own.

use crate::breaker::BreakerMode;
use crate::error::UsageError;
use crate::ids::{EndpointId, Target};
use crate::time::Timestamp;

use super::endpoint::EndpointState;
use super::{Engine, EngineEvent};

impl Engine {
    /// Puts `endpoint`'s breaker in `mode` at `now` (force it open, disable it, let it
    /// only measure, or back to automatic); its state is kept as it is (see
    /// [`Breaker::set_mode`](crate::breaker::Breaker::set_mode)). Emits
    /// [`EngineEvent::BreakerModeChanged`] when the mode changes.
    pub fn set_breaker_mode(
        &mut self,
        now: Timestamp,
        endpoint: EndpointId,
        mode: BreakerMode,
    ) -> Result<(), UsageError> {
        let now = self.clock.observe(now);
        let s = self.state_mut(endpoint)?;
        let from = s.breaker.set_mode(now, mode);
        if from != mode {
            self.events.push(EngineEvent::BreakerModeChanged {
                at: now,
                endpoint,
                from,
                to: mode,
            });
        }
        self.drain_events_of(endpoint);
        Ok(())
    }

    /// Closes `endpoint`'s breaker at `now` with an empty window, and forgets since
    /// when the endpoint has been failing. Its mode is unchanged. A probe still in
    /// flight keeps its grant (its call-in-flight slot) until it reports, but holds no
    /// probe slot any more: its result counts as a plain call. Emits
    /// [`EngineEvent::BreakerReset`], then the transition to closed if it was not.
    pub fn reset_breaker(
        &mut self,
        now: Timestamp,
        endpoint: EndpointId,
    ) -> Result<(), UsageError> {
        let now = self.clock.observe(now);
        let s = self.state_mut(endpoint)?;
        let from = s.breaker.state().kind();
        s.breaker.reset(now);
        s.failing_since = None;
        // The reset is announced before the transition it caused (at most one).
        let transition = s.breaker.poll_event();
        self.events.push(EngineEvent::BreakerReset {
            at: now,
            endpoint,
            from,
        });
        if let Some(event) = transition {
            self.events.push(EngineEvent::Breaker { endpoint, event });
        }
        self.drain_events_of(endpoint);
        Ok(())
    }

    /// Takes a key out of service at `now` until [`Engine::enable_key`]: it is
    /// disabled with [`DisableReason::Operator`](crate::pool::DisableReason::Operator)
    /// (a key already disabled keeps its first reason). An attempt in flight on it
    /// still reports as usual; the call's next attempt goes to another key. Emits
    /// [`PoolEvent::KeyDisabled`](crate::pool::PoolEvent::KeyDisabled).
    pub fn disable_key(&mut self, now: Timestamp, target: Target) -> Result<(), UsageError> {
        let now = self.clock.observe(now);
        let result = self.pool.disable_key(now, target);
        self.drain_events_of(target.endpoint);
        result
    }

    /// Makes a disabled or cooling key usable again at `now` (say, after the operator
    /// topped up the account). Emits
    /// [`PoolEvent::KeyEnabled`](crate::pool::PoolEvent::KeyEnabled) when it was not.
    pub fn enable_key(&mut self, now: Timestamp, target: Target) -> Result<(), UsageError> {
        let now = self.clock.observe(now);
        let result = self.pool.enable_key(now, target);
        self.drain_events_of(target.endpoint);
        result
    }
}

impl Engine {
    /// An endpoint's state, or [`UsageError::UnknownId`].
    fn state_mut(&mut self, endpoint: EndpointId) -> Result<&mut EndpointState, UsageError> {
        self.endpoints
            .get_mut(usize::from(endpoint.0))
            .ok_or(UsageError::UnknownId)
    }
}
