//! Server-side idempotency: a stored success for an `Idempotency-Key` is replayed, a key
//! whose attempt is in progress is refused, and the waits told to each key are kept to
//! count requests that come back early.

use std::collections::{HashMap, VecDeque};

use steadfast_core::time::Timestamp;

use crate::wire::success::Success;

enum Entry {
    InProgress,
    Done(Box<Success>),
}

/// What a key's earlier attempts left.
pub(crate) enum Seen<'a> {
    /// Nothing: process the request.
    New,
    /// An attempt is in progress.
    InProgress,
    /// A success is stored.
    Done(&'a Success),
}

/// One endpoint's memory of idempotency keys, bounded by `max` keys.
pub(crate) struct Idem {
    entries: HashMap<String, Entry>,
    order: VecDeque<String>,
    not_before: HashMap<String, Timestamp>,
    max: usize,
}

impl Idem {
    pub(crate) fn new(max: usize) -> Idem {
        Idem {
            entries: HashMap::new(),
            order: VecDeque::new(),
            not_before: HashMap::new(),
            max: max.max(1),
        }
    }

    pub(crate) fn seen(&self, key: &str) -> Seen<'_> {
        match self.entries.get(key) {
            None => Seen::New,
            Some(Entry::InProgress) => Seen::InProgress,
            Some(Entry::Done(s)) => Seen::Done(s),
        }
    }

    pub(crate) fn begin(&mut self, key: &str) {
        self.entries.insert(key.to_owned(), Entry::InProgress);
    }

    /// Ends an attempt: stores its success, or forgets the key.
    pub(crate) fn finish(&mut self, key: String, store: Option<Success>) {
        let Some(success) = store else {
            if matches!(self.entries.get(&key), Some(Entry::InProgress)) {
                self.entries.remove(&key);
            }
            return;
        };
        self.entries
            .insert(key.clone(), Entry::Done(Box::new(success)));
        self.order.push_back(key);
        while self.order.len() > self.max {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if matches!(self.entries.get(&old), Some(Entry::Done(_))) {
                self.entries.remove(&old);
            }
        }
    }

    /// Whether a request with `key` comes before the wait it was told.
    pub(crate) fn early(&self, key: &str, now: Timestamp) -> bool {
        self.not_before.get(key).is_some_and(|t| now < *t)
    }

    /// `key` was told not to come back before `until`.
    pub(crate) fn hinted(&mut self, key: &str, until: Timestamp) {
        if self.not_before.len() < self.max || self.not_before.contains_key(key) {
            self.not_before.insert(key.to_owned(), until);
        }
    }
}
