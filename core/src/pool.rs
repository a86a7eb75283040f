//! The key/endpoint pool: which endpoint to try, in what order, and with which key.
//!
//! Endpoints (by [`EndpointId`], their index in [`PoolConfig::endpoints`]) have a
//! priority — lower is preferred, so provider A at 0 and provider B at 1 — and one or
//! more keys (by [`KeyId`], their index within the endpoint). Secrets never enter the
//! core: the adapter maps a [`Target`] to a URL and a credential.
//!
//! - [`Pool::order`] lists endpoints from most to least preferred. Endpoints of equal
//!   priority form a group whose order rotates: after a key of an endpoint is picked, the
//!   next listing of its group starts just after it, so equals share the load.
//! - [`Pool::pick_key`] picks round-robin among an endpoint's usable keys;
//!   [`Pool::peek_key`] answers the same question without moving any cursor.
//! - A key is *usable*, *cooling* until an instant (a 429 told it to wait; it is usable
//!   again at exactly that instant), or *disabled* (401, 403, exhausted quota: never
//!   picked again until [`Pool::enable_key`]).
//!
//! The pool knows nothing of breakers, limiters or budgets: the engine walks
//! [`Pool::order`], skips the endpoints its breakers refuse or that have no usable key,
//! and fails over at once (or lets [`Pool::select`] do that walk). Picks allocate
//! nothing; the priority order is computed once, at construction.
//!
//! Everything but the plain data types needs the `alloc` feature.

use crate::error::ConfigError;
use crate::ids::{KeyId, Target};
use crate::time::Timestamp;

#[cfg(feature = "alloc")]
use crate::error::UsageError;
#[cfg(feature = "alloc")]
use crate::ids::EndpointId;
#[cfg(feature = "alloc")]
use crate::time::Monotonic;
#[cfg(feature = "alloc")]
use alloc::{collections::VecDeque, vec::Vec};

/// The most endpoints a pool may have (endpoint ids are `u16`).
pub const MAX_ENDPOINTS: usize = u16::MAX as usize;

/// The most keys a pool may have, summed over its endpoints (bounds its memory).
pub const MAX_KEYS: usize = u16::MAX as usize;

/// How many undrained events the pool keeps; older ones are dropped and counted
/// ([`Pool::dropped_events`]).
pub const EVENT_CAPACITY: usize = 64;

/// Configuration of the whole pool.
///
/// Default: one endpoint with priority 0 and one key.
#[cfg(feature = "alloc")]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct PoolConfig {
    /// The endpoints; the position in this list is the [`EndpointId`]. At least one, at
    /// most [`MAX_ENDPOINTS`], with at most [`MAX_KEYS`] keys in all.
    pub endpoints: Vec<EndpointConfig>,
}

#[cfg(feature = "alloc")]
impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            endpoints: alloc::vec![EndpointConfig::default()],
        }
    }
}

#[cfg(feature = "alloc")]
impl PoolConfig {
    /// A pool of these endpoints.
    pub fn new(endpoints: Vec<EndpointConfig>) -> PoolConfig {
        PoolConfig { endpoints }
    }

    /// Checks that a [`Pool`] can be built from this configuration.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.endpoints.is_empty() {
            return Err(ConfigError::Empty {
                field: "pool.endpoints",
            });
        }
        if self.endpoints.len() > MAX_ENDPOINTS {
            return Err(ConfigError::TooMany {
                field: "pool.endpoints",
                max: MAX_ENDPOINTS,
            });
        }
        let mut total: usize = 0;
        for endpoint in &self.endpoints {
            endpoint.validate()?;
            total = total.saturating_add(usize::from(endpoint.keys));
        }
        if total > MAX_KEYS {
            return Err(ConfigError::TooMany {
                field: "pool.endpoints.keys",
                max: MAX_KEYS,
            });
        }
        Ok(())
    }
}

/// One endpoint of the pool.
///
/// Defaults: `priority = 0`, `keys = 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct EndpointConfig {
    /// Preference: lower numbers are tried first; equal numbers share load round-robin.
    pub priority: u8,
    /// How many keys the endpoint has (key ids `0..keys`); at least one.
    pub keys: u16,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            priority: 0,
            keys: 1,
        }
    }
}

impl EndpointConfig {
    /// An endpoint with `priority` and `keys` keys.
    pub const fn new(priority: u8, keys: u16) -> EndpointConfig {
        EndpointConfig { priority, keys }
    }

    /// Checks this endpoint on its own (the pool checks the totals).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.keys == 0 {
            return Err(ConfigError::Zero {
                field: "pool.endpoints.keys",
            });
        }
        Ok(())
    }
}

/// Why a key was disabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum DisableReason {
    /// 401: the key is unknown or revoked.
    Unauthorized,
    /// 403: the key may not use this endpoint or model.
    Forbidden,
    /// The account behind the key is out of quota or credit.
    QuotaExhausted,
    /// Anything else that makes the key useless.
    Other,
    /// An operator took the key out of service.
    Operator,
    /// Another process sharing the key's state disabled it (see
    /// [`crate::shared::keys`]); enabled again when that disable is lifted.
    Shared,
}

/// The state of one key at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum KeyState {
    /// The key may be picked.
    Usable,
    /// The key was throttled and may be picked again from `until` on.
    Cooling {
        /// The instant the key is usable again.
        until: Timestamp,
    },
    /// The key is never picked until it is enabled again.
    Disabled {
        /// Why it was disabled (the first reason given).
        reason: DisableReason,
    },
}

/// The answer to "which key of this endpoint?".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyPick {
    /// Use this key.
    Key(KeyId),
    /// Every key that is not disabled is cooling; the earliest is usable again at this
    /// instant.
    CoolingUntil(Timestamp),
    /// Every key is disabled (or the endpoint is unknown).
    NoUsableKey,
}

/// The answer of [`Pool::select`]: a whole walk over the endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Selection {
    /// Send to this target.
    Picked(Target),
    /// No admitted endpoint has a usable key; the earliest cooling key of any endpoint
    /// is usable again at this instant.
    CoolingUntil(Timestamp),
    /// No admitted endpoint has a usable key and no key is cooling.
    Unavailable,
}

/// Something that changed in the pool, for reports and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum PoolEvent {
    /// A key started cooling, or its cooldown was extended.
    KeyCooled {
        /// When.
        at: Timestamp,
        /// The key.
        target: Target,
        /// The instant it is usable again.
        until: Timestamp,
    },
    /// A key was disabled.
    KeyDisabled {
        /// When.
        at: Timestamp,
        /// The key.
        target: Target,
        /// Why.
        reason: DisableReason,
    },
    /// A disabled or cooling key was made usable again.
    KeyEnabled {
        /// When.
        at: Timestamp,
        /// The key.
        target: Target,
    },
}

impl PoolEvent {
    /// When the event happened.
    pub fn at(&self) -> Timestamp {
        match self {
            PoolEvent::KeyCooled { at, .. }
            | PoolEvent::KeyDisabled { at, .. }
            | PoolEvent::KeyEnabled { at, .. } => *at,
        }
    }

    /// The key it concerns.
    pub fn target(&self) -> Target {
        match self {
            PoolEvent::KeyCooled { target, .. }
            | PoolEvent::KeyDisabled { target, .. }
            | PoolEvent::KeyEnabled { target, .. } => *target,
        }
    }
}

#[cfg(feature = "alloc")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeySlot {
    /// Usable from this instant on (when not disabled).
    until: Timestamp,
    disabled: Option<DisableReason>,
}

#[cfg(feature = "alloc")]
impl KeySlot {
    fn state(&self, now: Timestamp) -> KeyState {
        match self.disabled {
            Some(reason) => KeyState::Disabled { reason },
            None if self.until > now => KeyState::Cooling { until: self.until },
            None => KeyState::Usable,
        }
    }
}

#[cfg(feature = "alloc")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EndpointSlot {
    /// Index of key 0 in `Pool::keys`.
    first: usize,
    count: u16,
    /// The key the next round-robin scan starts at.
    cursor: u16,
    priority: u8,
    /// Index in `Pool::groups`.
    group: usize,
    /// Position within its group.
    pos: usize,
}

/// A run of equal-priority endpoints in `Pool::ranked`.
#[cfg(feature = "alloc")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Group {
    start: usize,
    len: usize,
    /// The position the next listing of this group starts at.
    rot: usize,
}

/// The pool's state: per-key cooldowns and disables, round-robin cursors and the
/// precomputed priority order.
#[cfg(feature = "alloc")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    keys: Vec<KeySlot>,
    endpoints: Vec<EndpointSlot>,
    /// Endpoints sorted by priority, ties by id.
    ranked: Vec<EndpointId>,
    groups: Vec<Group>,
    events: VecDeque<PoolEvent>,
    dropped_events: u64,
    clock: Monotonic,
}

#[cfg(feature = "alloc")]
impl Default for Pool {
    /// The pool of [`PoolConfig::default`]: one endpoint, one key.
    fn default() -> Self {
        Pool::build(&PoolConfig::default())
    }
}

#[cfg(feature = "alloc")]
impl Pool {
    /// A pool with every key usable, after validating `config`.
    pub fn new(config: &PoolConfig) -> Result<Pool, ConfigError> {
        config.validate()?;
        Ok(Pool::build(config))
    }

    /// Builds from a valid config; entries beyond the id space are left out.
    fn build(config: &PoolConfig) -> Pool {
        let mut keys = Vec::new();
        let mut endpoints = Vec::with_capacity(config.endpoints.len());
        for e in config.endpoints.iter().take(MAX_ENDPOINTS) {
            endpoints.push(EndpointSlot {
                first: keys.len(),
                count: e.keys,
                cursor: 0,
                priority: e.priority,
                group: 0,
                pos: 0,
            });
            keys.resize(
                keys.len().saturating_add(usize::from(e.keys)),
                KeySlot {
                    until: Timestamp::ZERO,
                    disabled: None,
                },
            );
        }
        let mut ranked: Vec<EndpointId> = (0..=u16::MAX)
            .take(endpoints.len())
            .map(EndpointId)
            .collect();
        // Stable: ties keep id order, so the first listing is deterministic.
        ranked.sort_by_key(|id| endpoints.get(usize::from(id.0)).map(|e| e.priority));
        let mut groups: Vec<Group> = Vec::new();
        let mut last_priority = None;
        for (index, id) in ranked.iter().enumerate() {
            let Some(slot) = endpoints.get_mut(usize::from(id.0)) else {
                continue;
            };
            if last_priority != Some(slot.priority) {
                groups.push(Group {
                    start: index,
                    len: 0,
                    rot: 0,
                });
                last_priority = Some(slot.priority);
            }
            let group_index = groups.len().saturating_sub(1);
            if let Some(group) = groups.last_mut() {
                slot.group = group_index;
                slot.pos = group.len;
                group.len = group.len.saturating_add(1);
            }
        }
        Pool {
            keys,
            endpoints,
            ranked,
            groups,
            events: VecDeque::with_capacity(EVENT_CAPACITY),
            dropped_events: 0,
            clock: Monotonic::default(),
        }
    }

    /// How many endpoints the pool has (ids `0..endpoint_count()`).
    pub fn endpoint_count(&self) -> u16 {
        u16::try_from(self.endpoints.len()).unwrap_or(u16::MAX)
    }

    /// How many keys `endpoint` has; 0 for an unknown endpoint (a known one has ≥ 1).
    pub fn key_count(&self, endpoint: EndpointId) -> u16 {
        self.endpoint(endpoint).map_or(0, |e| e.count)
    }

    /// The priority of `endpoint`, or `None` if it is unknown.
    pub fn priority(&self, endpoint: EndpointId) -> Option<u8> {
        self.endpoint(endpoint).map(|e| e.priority)
    }

    /// Every endpoint once, from most to least preferred. Within a group of equal
    /// priority the listing starts just after the endpoint last picked from
    /// ([`Pool::pick_key`]), so equals take turns. Cheap: no allocation.
    pub fn order(&self) -> Order<'_> {
        Order {
            ranked: &self.ranked,
            groups: &self.groups,
            group: 0,
            step: 0,
            left: self.ranked.len(),
        }
    }

    /// The key [`Pool::pick_key`] would pick now, without moving any cursor.
    pub fn peek_key(&self, now: Timestamp, endpoint: EndpointId) -> KeyPick {
        self.scan_endpoint(now.max(self.clock.latest()), endpoint)
    }

    /// Picks the next usable key of `endpoint` round-robin, starting after the key
    /// picked last, and rotates the endpoint's priority group so that the next
    /// [`Pool::order`] starts after this endpoint. Nothing moves unless a key is picked.
    /// An unknown endpoint gives [`KeyPick::NoUsableKey`].
    pub fn pick_key(&mut self, now: Timestamp, endpoint: EndpointId) -> KeyPick {
        let now = self.clock.observe(now);
        let pick = self.scan_endpoint(now, endpoint);
        if let KeyPick::Key(key) = pick {
            self.advance(endpoint, key);
        }
        pick
    }

    /// Walks [`Pool::order`] and picks a key at the first endpoint that has a usable key
    /// and that `admit` accepts (the engine's breaker, limiter and budget say yes).
    ///
    /// `admit` is asked about each usable key, endpoint by endpoint in order and key by
    /// key round-robin from the endpoint's cursor, until it accepts one; a `true`
    /// answer commits the pick, so `admit` may reserve what it grants (a half-open
    /// probe, a limiter slot). [`Selection::CoolingUntil`] is the earliest instant a
    /// cooling key of the endpoints walked comes back.
    pub fn select<F>(&mut self, now: Timestamp, mut admit: F) -> Selection
    where
        F: FnMut(Target) -> bool,
    {
        let now = self.clock.observe(now);
        let mut earliest: Option<Timestamp> = None;
        let mut chosen = None;
        'endpoints: for endpoint in self.order() {
            let Some(e) = self.endpoint(endpoint) else {
                continue;
            };
            let keys = self.keys_of_slot(e);
            // Round-robin from the cursor: every usable key is offered in turn (the
            // first may be rate-limited where the next is not).
            let cursor = usize::from(e.cursor).min(keys.len());
            let (before, after) = keys.split_at_checked(cursor).unwrap_or((keys, &[]));
            let ids = (cursor..keys.len()).chain(0..cursor);
            for (i, k) in ids.zip(after.iter().chain(before)) {
                if k.disabled.is_some() {
                    continue;
                }
                if k.until > now {
                    earliest = Some(earliest.map_or(k.until, |t| t.min(k.until)));
                    continue;
                }
                // i < keys.len() ≤ u16::MAX, so the id always fits.
                let key = KeyId(u16::try_from(i).unwrap_or(u16::MAX));
                if admit(Target { endpoint, key }) {
                    chosen = Some((endpoint, key));
                    break 'endpoints;
                }
            }
        }
        if let Some((endpoint, key)) = chosen {
            self.advance(endpoint, key);
            return Selection::Picked(Target { endpoint, key });
        }
        earliest.map_or(Selection::Unavailable, Selection::CoolingUntil)
    }

    /// A 429 (or a rate-limit hint) for `target`: the key cools until `until`. A later
    /// `until` extends a running cooldown; an earlier one does not shorten it. A
    /// disabled key stays disabled and records nothing. Emits [`PoolEvent::KeyCooled`]
    /// when the key's cooldown ends later than before and later than `now`.
    pub fn on_throttled(
        &mut self,
        now: Timestamp,
        target: Target,
        until: Timestamp,
    ) -> Result<(), UsageError> {
        let now = self.clock.observe(now);
        let slot = self.key_mut(target)?;
        if slot.disabled.is_some() || until <= slot.until {
            return Ok(());
        }
        slot.until = until;
        if until > now {
            self.push_event(PoolEvent::KeyCooled {
                at: now,
                target,
                until,
            });
        }
        Ok(())
    }

    /// A 401/403/exhausted-quota answer for `target`: the key is disabled and never
    /// picked again until [`Pool::enable_key`]. Disabling a disabled key keeps the first
    /// reason and emits nothing; otherwise emits [`PoolEvent::KeyDisabled`].
    pub fn on_key_rejected(
        &mut self,
        now: Timestamp,
        target: Target,
        reason: DisableReason,
    ) -> Result<(), UsageError> {
        let now = self.clock.observe(now);
        let slot = self.key_mut(target)?;
        if slot.disabled.is_some() {
            return Ok(());
        }
        slot.disabled = Some(reason);
        self.push_event(PoolEvent::KeyDisabled {
            at: now,
            target,
            reason,
        });
        Ok(())
    }

    /// An operator takes `target` out of service: the same as
    /// [`Pool::on_key_rejected`] with [`DisableReason::Operator`] (a key already
    /// disabled keeps its first reason).
    pub fn disable_key(&mut self, now: Timestamp, target: Target) -> Result<(), UsageError> {
        self.on_key_rejected(now, target, DisableReason::Operator)
    }

    /// Makes `target` usable now: clears a disable and any cooldown (a new key was
    /// installed, an operator lifted the block). Emits [`PoolEvent::KeyEnabled`] when
    /// the key was not usable.
    pub fn enable_key(&mut self, now: Timestamp, target: Target) -> Result<(), UsageError> {
        let now = self.clock.observe(now);
        let slot = self.key_mut(target)?;
        let was = slot.state(now);
        *slot = KeySlot {
            until: Timestamp::ZERO,
            disabled: None,
        };
        if was != KeyState::Usable {
            self.push_event(PoolEvent::KeyEnabled { at: now, target });
        }
        Ok(())
    }

    /// A success on `target`. Changes nothing: a success that was already in flight
    /// when the key was throttled or rejected must not lift the cooldown the server
    /// asked for, nor revive a revoked key. It only checks the id, so the engine can
    /// feed every outcome to the pool alike.
    pub fn on_success(&mut self, now: Timestamp, target: Target) -> Result<(), UsageError> {
        self.clock.observe(now);
        self.key_mut(target).map(|_| ())
    }

    /// The oldest undrained event.
    pub fn poll_event(&mut self) -> Option<PoolEvent> {
        self.events.pop_front()
    }

    /// Whether [`Pool::poll_event`] has an event to give.
    #[inline]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// How many events were dropped because [`EVENT_CAPACITY`] were undrained.
    pub fn dropped_events(&self) -> u64 {
        self.dropped_events
    }

    /// The state of `target` at `now`, or `None` for an unknown key.
    pub fn key_state(&self, now: Timestamp, target: Target) -> Option<KeyState> {
        let now = now.max(self.clock.latest());
        self.key(target).map(|k| k.state(now))
    }

    /// How many keys of `endpoint` are usable at `now` (0 for an unknown endpoint).
    pub fn usable_keys(&self, now: Timestamp, endpoint: EndpointId) -> u16 {
        let now = now.max(self.clock.latest());
        let count = self
            .keys_of(endpoint)
            .iter()
            .filter(|k| k.state(now) == KeyState::Usable)
            .count();
        u16::try_from(count).unwrap_or(u16::MAX)
    }

    fn endpoint(&self, endpoint: EndpointId) -> Option<&EndpointSlot> {
        self.endpoints.get(usize::from(endpoint.0))
    }

    fn keys_of(&self, endpoint: EndpointId) -> &[KeySlot] {
        self.endpoint(endpoint)
            .map_or(&[], |e| self.keys_of_slot(e))
    }

    fn keys_of_slot(&self, e: &EndpointSlot) -> &[KeySlot] {
        let end = e.first.saturating_add(usize::from(e.count));
        self.keys.get(e.first..end).unwrap_or(&[])
    }

    fn key(&self, target: Target) -> Option<&KeySlot> {
        self.keys_of(target.endpoint).get(usize::from(target.key.0))
    }

    fn key_mut(&mut self, target: Target) -> Result<&mut KeySlot, UsageError> {
        let e = self
            .endpoints
            .get(usize::from(target.endpoint.0))
            .ok_or(UsageError::UnknownId)?;
        if target.key.0 >= e.count {
            return Err(UsageError::UnknownId);
        }
        let index = e.first.saturating_add(usize::from(target.key.0));
        self.keys.get_mut(index).ok_or(UsageError::UnknownId)
    }

    /// The round-robin scan behind `peek_key` and `pick_key`, at an already clamped
    /// `now`.
    fn scan_endpoint(&self, now: Timestamp, endpoint: EndpointId) -> KeyPick {
        match self.endpoint(endpoint) {
            Some(e) => scan(self.keys_of_slot(e), e.cursor, now),
            None => KeyPick::NoUsableKey,
        }
    }

    /// Moves the endpoint's key cursor past `key` and its group's rotation past it.
    fn advance(&mut self, endpoint: EndpointId, key: KeyId) {
        let Some(e) = self.endpoints.get_mut(usize::from(endpoint.0)) else {
            return;
        };
        let next = key.0.saturating_add(1);
        e.cursor = if next >= e.count { 0 } else { next };
        let (group, pos) = (e.group, e.pos);
        if let Some(g) = self.groups.get_mut(group) {
            let next = pos.saturating_add(1);
            g.rot = if next >= g.len { 0 } else { next };
        }
    }

    fn push_event(&mut self, event: PoolEvent) {
        if self.events.len() >= EVENT_CAPACITY {
            self.events.pop_front();
            self.dropped_events = self.dropped_events.saturating_add(1);
        }
        self.events.push_back(event);
    }
}

/// Round-robin over `keys` from `cursor`: the first usable key, else the earliest
/// instant a cooling one comes back.
#[cfg(feature = "alloc")]
#[inline]
fn scan(keys: &[KeySlot], cursor: u16, now: Timestamp) -> KeyPick {
    let n = keys.len();
    let mut i = usize::from(cursor);
    let mut earliest: Option<Timestamp> = None;
    for _ in 0..n {
        if i >= n {
            i = 0;
        }
        if let Some(k) = keys.get(i)
            && k.disabled.is_none()
        {
            if k.until <= now {
                // i < n ≤ u16::MAX, so the id always fits.
                return u16::try_from(i).map_or(KeyPick::NoUsableKey, |id| KeyPick::Key(KeyId(id)));
            }
            earliest = Some(earliest.map_or(k.until, |t| t.min(k.until)));
        }
        i = i.wrapping_add(1);
    }
    earliest.map_or(KeyPick::NoUsableKey, KeyPick::CoolingUntil)
}

/// `pos` taken back into `0..len`, for `pos < 2 × len`.
#[cfg(feature = "alloc")]
#[inline]
fn wrap(pos: usize, len: usize) -> usize {
    if pos >= len {
        pos.wrapping_sub(len)
    } else {
        pos
    }
}

/// Endpoints from most to least preferred; see [`Pool::order`].
#[cfg(feature = "alloc")]
#[derive(Debug, Clone)]
pub struct Order<'a> {
    ranked: &'a [EndpointId],
    groups: &'a [Group],
    group: usize,
    step: usize,
    left: usize,
}

#[cfg(feature = "alloc")]
impl Iterator for Order<'_> {
    type Item = EndpointId;

    fn next(&mut self) -> Option<EndpointId> {
        loop {
            let g = self.groups.get(self.group)?;
            if self.step < g.len {
                let pos = wrap(g.rot.wrapping_add(self.step), g.len);
                self.step = self.step.wrapping_add(1);
                self.left = self.left.saturating_sub(1);
                return self.ranked.get(g.start.wrapping_add(pos)).copied();
            }
            self.group = self.group.wrapping_add(1);
            self.step = 0;
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

#[cfg(feature = "alloc")]
impl ExactSizeIterator for Order<'_> {}

#[cfg(feature = "alloc")]
impl core::iter::FusedIterator for Order<'_> {}

#[cfg(all(test, feature = "alloc"))]
mod tests;
