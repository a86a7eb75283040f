//! One set of cooled and disabled keys for every process: what this engine learned
//! of its keys goes out to a store, and what the others learned comes back in.
//!
//! Every key cooldown, disable and enable the pool records on its own (from a 429, a
//! 401, an operator) becomes a [`KeyPublish`] for the driver to write to the store
//! ([`Engine::poll_key_publish`](crate::engine::Engine::poll_key_publish)). The driver
//! reads the store's state of each key back now and then and hands it to
//! [`Engine::handle_shared_keys`](crate::engine::Engine::handle_shared_keys): a key
//! cooling elsewhere cools here until the same instant, a key disabled elsewhere is
//! disabled here with [`DisableReason::Shared`] (and enabled again when the store's
//! disable is lifted). What came from the store is never published back, so replicas
//! do not echo each other's state.
//!
//! The same sync carries the breakers of endpoints that share them (see
//! [`super::breakers`]): their publishes queue here beside the keys', and the same
//! mark keeps what the store caused from going back.

use alloc::vec::Vec;
use core::time::Duration;

use super::breakers::{BREAKER_PUBLISH_CAPACITY, BreakerPublish};
use crate::ids::{EndpointId, Target};
use crate::pool::{DisableReason, PoolEvent};
use crate::ring::Ring;
use crate::time::Timestamp;

/// Publishes kept before the oldest are dropped (counted by [`KeySync::dropped`]).
pub const PUBLISH_CAPACITY: usize = 64;

/// A change of a key's state for the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPublish {
    /// The key cools for this long from now (a store only ever extends a cooldown).
    Cool {
        /// The key.
        target: Target,
        /// How long.
        for_: Duration,
    },
    /// The key was disabled here.
    Disable {
        /// The key.
        target: Target,
        /// Why.
        reason: DisableReason,
    },
    /// The key was enabled here (an operator lifted a disable).
    Enable {
        /// The key.
        target: Target,
    },
}

impl KeyPublish {
    /// The key it concerns.
    pub fn target(&self) -> Target {
        match *self {
            KeyPublish::Cool { target, .. }
            | KeyPublish::Disable { target, .. }
            | KeyPublish::Enable { target } => target,
        }
    }
}

/// What the store says of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SharedKeyState {
    /// Time left in a cooldown, if it is cooling.
    pub cooling_for: Option<Duration>,
    /// Whether it is disabled.
    pub disabled: bool,
}

/// The engine's side of shared key states. See the module documentation.
#[derive(Debug, Clone)]
pub struct KeySync {
    outbox: Ring<KeyPublish, PUBLISH_CAPACITY>,
    breakers: Ring<BreakerPublish, BREAKER_PUBLISH_CAPACITY>,
    /// Keys disabled here because the store said so.
    from_store: Vec<Target>,
    /// Pool events being caused by the store's state: not published back.
    applying: bool,
}

impl Default for KeySync {
    fn default() -> KeySync {
        KeySync::new()
    }
}

impl KeySync {
    /// Nothing to publish yet.
    pub fn new() -> KeySync {
        KeySync {
            outbox: Ring::new(),
            breakers: Ring::new(),
            from_store: Vec::new(),
            applying: false,
        }
    }

    /// Publishes dropped because the driver did not take them.
    pub fn dropped(&self) -> u64 {
        self.outbox
            .dropped()
            .saturating_add(self.breakers.dropped())
    }

    /// The next breaker open to write to the store.
    pub fn poll_breaker_publish(&mut self) -> Option<BreakerPublish> {
        self.breakers.pop()
    }

    /// A breaker that shares its state opened at `at` until `until`: published unless
    /// the store caused it.
    pub fn on_breaker_opened(&mut self, endpoint: EndpointId, at: Timestamp, until: Timestamp) {
        if !self.applying {
            self.breakers.push(BreakerPublish {
                endpoint,
                at,
                until,
            });
        }
    }

    /// The next change to write to the store.
    pub fn poll_publish(&mut self) -> Option<KeyPublish> {
        self.outbox.pop()
    }

    /// Whether `target` is disabled here only because the store said so.
    pub fn disabled_by_store(&self, target: Target) -> bool {
        self.from_store.contains(&target)
    }

    /// Marks the pool events that follow as caused by the store (`true`) or not.
    pub fn set_applying(&mut self, applying: bool) {
        self.applying = applying;
    }

    /// Notes that `target` is disabled here because the store said so.
    pub fn on_disabled_by_store(&mut self, target: Target) {
        if !self.from_store.contains(&target) {
            self.from_store.push(target);
        }
    }

    /// A pool event of a key whose state is shared.
    pub fn on_pool_event(&mut self, ev: &PoolEvent) {
        if let PoolEvent::KeyEnabled { target, .. } = *ev {
            self.from_store.retain(|t| *t != target);
        }
        if self.applying {
            return;
        }
        let publish = match *ev {
            PoolEvent::KeyCooled { at, target, until } => KeyPublish::Cool {
                target,
                for_: until.saturating_duration_since(at),
            },
            PoolEvent::KeyDisabled {
                reason: DisableReason::Shared,
                ..
            } => return,
            PoolEvent::KeyDisabled { target, reason, .. } => KeyPublish::Disable { target, reason },
            PoolEvent::KeyEnabled { target, .. } => KeyPublish::Enable { target },
        };
        self.outbox.push(publish);
    }
}
