//! The engine's record of every grant it issued and has not been told the end of.
//!
//! A grant is stamped with the engine's id and a slot of this ledger (with the slot's
//! generation), so a report of a stale grant (already reported, or reclaimed) or of a
//! grant from another engine is recognised and refused. A grant whose attempt is long
//! overdue — its call was dropped without being cancelled, or its driver stopped
//! polling — is reclaimed: the engine gives back what it held (a call-in-flight slot,
//! a half-open probe), so no lost call can wedge an endpoint.

use alloc::vec::Vec;
use core::time::Duration;

use crate::ids::Target;
use crate::retry::Ticket;
use crate::time::Timestamp;

/// How long past its attempt's deadline an unreported grant is reclaimed. The call
/// itself times the attempt out at the deadline and reports at once; this margin only
/// keeps a report racing the reclaim from losing.
pub const RECLAIM_GRACE: Duration = Duration::from_secs(1);

/// What an outstanding grant holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub target: Target,
    pub tokens: u64,
    /// The half-open period of the probe it holds, if it holds one.
    pub probe: Option<u32>,
    /// The number of its charge to the key's learned server limits.
    pub charge: Option<u64>,
    /// For a reserved slot not yet confirmed: its instant.
    pub reserved: Option<Timestamp>,
    /// The attempt's longest span (its timeout), for the reclaim instant.
    pub span: Duration,
    /// When it is reclaimed unless reported.
    pub reclaim_at: Timestamp,
    /// Whether it is a call's first attempt (counted by the hedge budget when sent).
    pub first: bool,
    /// Whether a shared limit's fallback admitted its reserved slot: if sharing
    /// resumed before the slot came due, the slot needs a lease then.
    pub fallback: bool,
}

#[derive(Debug, Clone)]
struct Slot {
    generation: u32,
    entry: Option<Entry>,
}

/// The outstanding grants of one engine.
#[derive(Debug, Clone)]
pub(crate) struct Ledger {
    engine: u64,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// No entry is reclaimed before this instant (a lower bound, refreshed by sweeps).
    next_reclaim: Timestamp,
}

impl Ledger {
    pub fn new(engine: u64) -> Ledger {
        Ledger {
            engine,
            slots: Vec::new(),
            free: Vec::new(),
            next_reclaim: Timestamp::MAX,
        }
    }

    /// Records a grant; its ticket.
    pub fn insert(&mut self, entry: Entry) -> Ticket {
        self.next_reclaim = self.next_reclaim.min(entry.reclaim_at);
        if let Some(index) = self.free.pop() {
            if let Some(slot) = self.slots.get_mut(index as usize) {
                slot.generation = slot.generation.wrapping_add(1);
                slot.entry = Some(entry);
                let generation = slot.generation;
                return self.ticket(index, generation);
            }
        }
        let index = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
        self.slots.push(Slot {
            generation: 0,
            entry: Some(entry),
        });
        self.ticket(index, 0)
    }

    fn ticket(&self, slot: u32, generation: u32) -> Ticket {
        Ticket {
            engine: self.engine,
            slot,
            generation,
        }
    }

    /// The live entry of `ticket`, if it is one of this ledger's and still outstanding.
    pub fn get_mut(&mut self, ticket: Ticket) -> Option<&mut Entry> {
        if ticket.engine != self.engine {
            return None;
        }
        let slot = self.slots.get_mut(ticket.slot as usize)?;
        if slot.generation != ticket.generation {
            return None;
        }
        slot.entry.as_mut()
    }

    /// Removes and returns the entry of `ticket`, if it is outstanding.
    pub fn take(&mut self, ticket: Ticket) -> Option<Entry> {
        let entry = self.get_mut(ticket).map(|e| *e)?;
        if let Some(slot) = self.slots.get_mut(ticket.slot as usize) {
            slot.entry = None;
            self.free.push(ticket.slot);
        }
        Some(entry)
    }

    /// Moves an entry's reclaim instant (after a reserved slot was confirmed).
    pub fn reschedule(&mut self, at: Timestamp) {
        self.next_reclaim = self.next_reclaim.min(at);
    }

    /// Removes every entry due for reclaim at `now`, calling `give_back` with each and
    /// its ticket.
    pub fn reclaim(&mut self, now: Timestamp, mut give_back: impl FnMut(Entry, Ticket)) {
        if now < self.next_reclaim {
            return;
        }
        let mut next = Timestamp::MAX;
        let engine = self.engine;
        for (index, slot) in self.slots.iter_mut().enumerate() {
            let Some(entry) = slot.entry else { continue };
            if entry.reclaim_at <= now {
                slot.entry = None;
                let index = u32::try_from(index).unwrap_or(u32::MAX);
                self.free.push(index);
                let ticket = Ticket {
                    engine,
                    slot: index,
                    generation: slot.generation,
                };
                give_back(entry, ticket);
            } else {
                next = next.min(entry.reclaim_at);
            }
        }
        self.next_reclaim = next;
    }

    /// No entry is due for reclaim before this instant.
    pub fn next_reclaim(&self) -> Timestamp {
        self.next_reclaim
    }

    /// Outstanding entries matching `f`.
    pub fn count(&self, f: impl Fn(&Entry) -> bool) -> usize {
        self.slots
            .iter()
            .filter_map(|s| s.entry.as_ref())
            .filter(|e| f(e))
            .count()
    }

    /// Grants outstanding.
    pub fn len(&self) -> usize {
        self.slots.len().saturating_sub(self.free.len())
    }
}

/// The reclaim instant of an attempt starting at `start` that may take `span`.
pub(crate) fn reclaim_at(start: Timestamp, span: Duration) -> Timestamp {
    start.saturating_add(span).saturating_add(RECLAIM_GRACE)
}
