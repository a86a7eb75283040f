//! The bounded in-memory store: a `BTreeMap` index over a slab with two index-linked lists.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::{Begin, IdempotencyKey, IdempotencyStore, StoreConfig};
use crate::error::ConfigError;
use crate::time::{Monotonic, Timestamp};

const NIL: usize = usize::MAX;

/// A bounded in-memory [`IdempotencyStore`].
///
/// - A done result is returned for `ttl` after `complete`; after that the key is
///   forgotten and the next `begin` gets [`Begin::New`].
/// - An owner holds a key for `lease` after its `begin`; if it neither completes nor
///   abandons by then (it crashed, hung, lost the result), the next `begin` takes the
///   work over with [`Begin::New`] and a fresh lease.
/// - At most `capacity` records are held. To make room for a new key the store drops,
///   in this order: the oldest in-flight record if its lease has lapsed, else the
///   least recently used done record (a `begin` answered `Done` uses it). In-flight
///   records are never dropped before their lease lapses: when every record is a live
///   in-flight one, `begin` answers [`Begin::Busy`] and records nothing.
/// - `complete` on a key with a live done record keeps the first result (answers
///   already given stay true); on any other key it records the result, even one
///   never begun or whose lease lapsed, making room as above or, when it cannot,
///   dropping the result.
/// - `abandon` forgets an in-flight record (live or not) and never a done one.
/// - A `now` earlier than one already seen is taken as that latest instant.
///
/// Every operation is O(log n) (a `BTreeMap` index over a slab of records linked
/// into an in-flight list in lease order and a done list in recency order). Memory is
/// bounded by `capacity` records; the slab grows on demand up to `capacity` and is
/// then reused, so only the index allocates once warm.
#[derive(Debug, Clone)]
pub struct MemoryStore<V> {
    config: StoreConfig,
    clock: Monotonic,
    index: BTreeMap<IdempotencyKey, usize>,
    slots: Vec<Slot<V>>,
    /// Head of the list of vacant slots, linked through `next`.
    free: usize,
    /// In-flight records, newest lease at the head: the tail lapses first, because
    /// `now` never goes backwards and every lease has the same length.
    flight: Ends,
    /// Done records, most recently used at the head.
    done: Ends,
}

#[derive(Debug, Clone)]
struct Slot<V> {
    key: IdempotencyKey,
    state: State<V>,
    prev: usize,
    next: usize,
}

#[derive(Debug, Clone)]
enum State<V> {
    Vacant,
    Flight { lease_until: Timestamp },
    Done { expires: Timestamp, value: V },
}

#[derive(Debug, Clone, Copy)]
struct Ends {
    head: usize,
    tail: usize,
}

const EMPTY: Ends = Ends {
    head: NIL,
    tail: NIL,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Flight,
    Done,
}

fn list_of<V>(state: &State<V>) -> Option<List> {
    match state {
        State::Vacant => None,
        State::Flight { .. } => Some(List::Flight),
        State::Done { .. } => Some(List::Done),
    }
}

impl<V> MemoryStore<V> {
    /// An empty store, or the first configuration error.
    pub fn new(config: &StoreConfig) -> Result<MemoryStore<V>, ConfigError> {
        config.validate()?;
        Ok(MemoryStore {
            config: *config,
            clock: Monotonic::default(),
            index: BTreeMap::new(),
            slots: Vec::new(),
            free: NIL,
            flight: EMPTY,
            done: EMPTY,
        })
    }

    /// The configuration the store runs on.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    fn ends_mut(&mut self, list: List) -> &mut Ends {
        match list {
            List::Flight => &mut self.flight,
            List::Done => &mut self.done,
        }
    }

    fn set_prev(&mut self, idx: usize, prev: usize) {
        if let Some(slot) = self.slots.get_mut(idx) {
            slot.prev = prev;
        }
    }

    fn set_next(&mut self, idx: usize, next: usize) {
        if let Some(slot) = self.slots.get_mut(idx) {
            slot.next = next;
        }
    }

    /// Takes a record out of the list its state puts it in (none for a vacant slot).
    fn unlink(&mut self, idx: usize) {
        let Some(slot) = self.slots.get(idx) else {
            return;
        };
        let Some(list) = list_of(&slot.state) else {
            return;
        };
        let (prev, next) = (slot.prev, slot.next);
        if prev == NIL {
            self.ends_mut(list).head = next;
        } else {
            self.set_next(prev, next);
        }
        if next == NIL {
            self.ends_mut(list).tail = prev;
        } else {
            self.set_prev(next, prev);
        }
        self.set_prev(idx, NIL);
        self.set_next(idx, NIL);
    }

    fn push_front(&mut self, list: List, idx: usize) {
        let old_head = self.ends_mut(list).head;
        self.set_prev(idx, NIL);
        self.set_next(idx, old_head);
        if old_head == NIL {
            self.ends_mut(list).tail = idx;
        } else {
            self.set_prev(old_head, idx);
        }
        self.ends_mut(list).head = idx;
    }

    /// Gives a record a new state and puts it at the head of that state's list.
    fn place(&mut self, idx: usize, state: State<V>) {
        self.unlink(idx);
        let list = list_of(&state);
        if let Some(slot) = self.slots.get_mut(idx) {
            slot.state = state;
        }
        if let Some(list) = list {
            self.push_front(list, idx);
        }
    }

    /// Forgets the record in an occupied slot and returns the slot to the free list.
    fn release(&mut self, idx: usize) {
        self.unlink(idx);
        let free = self.free;
        let Some(slot) = self.slots.get_mut(idx) else {
            return;
        };
        self.index.remove(&slot.key);
        slot.state = State::Vacant;
        slot.next = free;
        self.free = idx;
    }

    /// Adds a record for a key not in the index; `false` when no slot is left.
    fn insert(&mut self, key: IdempotencyKey, state: State<V>) -> bool {
        let idx = if let Some(slot) = self.slots.get_mut(self.free) {
            let idx = self.free;
            self.free = slot.next;
            slot.key = key;
            idx
        } else if self.slots.len() < self.config.capacity {
            if self.slots.len() == self.slots.capacity() {
                // Grow geometrically, but never past the configured capacity.
                let room = self.config.capacity.saturating_sub(self.slots.len());
                self.slots
                    .reserve_exact(self.slots.len().clamp(8, 1 << 16).min(room));
            }
            self.slots.push(Slot {
                key,
                state: State::Vacant,
                prev: NIL,
                next: NIL,
            });
            self.slots.len().saturating_sub(1)
        } else {
            return false;
        };
        self.index.insert(key, idx);
        self.place(idx, state);
        true
    }

    /// Frees one slot if the store is full: `Err` with the instant the oldest lease
    /// lapses when every record is a live in-flight one.
    fn make_room(&mut self, now: Timestamp) -> Result<(), Timestamp> {
        if self.index.len() < self.config.capacity {
            return Ok(());
        }
        let oldest = self.flight.tail;
        let lease_until = match self.slots.get(oldest).map(|s| &s.state) {
            Some(State::Flight { lease_until }) => Some(*lease_until),
            _ => None,
        };
        if let Some(lease_until) = lease_until {
            if lease_until <= now {
                self.release(oldest);
                return Ok(());
            }
        }
        if self.done.tail != NIL {
            self.release(self.done.tail);
            return Ok(());
        }
        Err(lease_until.unwrap_or(now))
    }
}

impl<V: Clone> IdempotencyStore<V> for MemoryStore<V> {
    fn begin(&mut self, now: Timestamp, key: IdempotencyKey) -> Begin<V> {
        let now = self.clock.observe(now);
        let lease = State::Flight {
            lease_until: now.saturating_add(self.config.lease),
        };
        if let Some(&idx) = self.index.get(&key) {
            match self.slots.get(idx).map(|s| &s.state) {
                Some(State::Flight { lease_until }) if now < *lease_until => {
                    return Begin::InFlight {
                        lease_until: *lease_until,
                    };
                }
                Some(State::Done { expires, value }) if now < *expires => {
                    let value = value.clone();
                    self.unlink(idx);
                    self.push_front(List::Done, idx);
                    return Begin::Done(value);
                }
                // A lapsed lease or an expired result: the caller takes the work.
                _ => {}
            }
            self.place(idx, lease);
            return Begin::New;
        }
        if let Err(retry_at) = self.make_room(now) {
            return Begin::Busy { retry_at };
        }
        if self.insert(key, lease) {
            Begin::New
        } else {
            Begin::Busy { retry_at: now }
        }
    }

    fn complete(&mut self, now: Timestamp, key: IdempotencyKey, value: V) {
        let now = self.clock.observe(now);
        let done = State::Done {
            expires: now.saturating_add(self.config.ttl),
            value,
        };
        if let Some(&idx) = self.index.get(&key) {
            if let Some(State::Done { expires, .. }) = self.slots.get(idx).map(|s| &s.state) {
                if now < *expires {
                    return;
                }
            }
            self.place(idx, done);
            return;
        }
        if self.make_room(now).is_ok() {
            self.insert(key, done);
        }
    }

    fn abandon(&mut self, now: Timestamp, key: IdempotencyKey) {
        self.clock.observe(now);
        let Some(&idx) = self.index.get(&key) else {
            return;
        };
        if let Some(State::Flight { .. }) = self.slots.get(idx).map(|s| &s.state) {
            self.release(idx);
        }
    }

    fn len(&self) -> usize {
        self.index.len()
    }
}
