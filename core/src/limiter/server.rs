//! What a server's rate-limit headers teach about its buckets, so that calls are paced
//! to the server's own rate instead of going out to collect 429s.
//!
//! Both providers refill their buckets continuously. A response's window (`limit`,
//! `remaining`, `reset` = time until full) gives one unit's refill time
//! ([`RateWindow::unit_interval`]) and the bucket's capacity: a bucket holding
//! `remaining` and full `reset` later holds `remaining + reset / interval` when full
//! (kept within `[1, limit]`; less than `limit` when the provider enforces its
//! per-minute limit over a shorter span). A `retry-after` on a drained window says
//! exactly when its next unit comes.
//!
//! The model is a bucket in the same terms: the instant it is `full_at`, its
//! `capacity` and `interval`. A call needing `n` units is admitted at `t` when
//! `full_at − t ≤ (capacity − n) × interval`. Every admission is charged (`full_at`
//! moves `n` intervals later), and admissions are handed out in order: a slot reserved
//! for a later instant is never overtaken by a call asking after it.
//!
//! The server reports whole units: it holds between `remaining` and `remaining + 1`.
//! A response to the request charged last is *fresh* — nothing was charged since — and
//! sets the model to exactly `remaining` whenever the model strays out of that range
//! (either way; it never counts the fraction the server may hold). Any other response
//! may be stale (other requests were counted since), so it never loosens the model: it
//! only tightens it, to exactly `remaining`, when the model holds a whole unit more.
//! Times are nanoseconds on the engine's clock; all arithmetic saturates.

use core::time::Duration;

use crate::hints::{Hints, RateWindow};
use crate::time::{Timestamp, nanos_of};

/// The buckets of one key, as the server's headers describe them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerLimits {
    requests: Learned,
    tokens: Learned,
    /// The latest instant a call was admitted or reserved for: later calls come after.
    last_slot: Timestamp,
    /// Calls charged so far: a response to the last of them is fresh.
    charges: u64,
}

/// One learned bucket; `interval == 0` while nothing is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Learned {
    interval: u64,
    capacity: u64,
    full_at: u64,
}

impl ServerLimits {
    /// Whether the headers taught anything yet (a window with a `limit`).
    pub fn is_known(&self) -> bool {
        self.requests.is_known() || self.tokens.is_known()
    }

    /// The first instant, from `now` on, at which a call of `tokens` tokens fits the
    /// learned buckets and comes after every slot already handed out.
    pub fn first_slot(&self, now: Timestamp, tokens: u64) -> Timestamp {
        let at = now.max(self.last_slot).as_nanos();
        let at = at
            .max(self.requests.first_fit(at, 1))
            .max(self.tokens.first_fit(at, tokens));
        Timestamp::from_nanos(at)
    }

    /// Charges a call of `tokens` tokens admitted (or reserved) for instant `at`;
    /// returns the charge's number, for [`ServerLimits::on_hints`].
    pub fn charge(&mut self, at: Timestamp, tokens: u64) -> u64 {
        self.last_slot = self.last_slot.max(at);
        self.requests.charge(at.as_nanos(), 1);
        self.tokens.charge(at.as_nanos(), tokens);
        self.charges = self.charges.wrapping_add(1);
        self.charges
    }

    /// Learns from the headers of the response to the call charged as number `charge`
    /// (`None`: not known), received at `now`.
    pub fn on_hints(&mut self, now: Timestamp, hints: &Hints, charge: Option<u64>) {
        let fresh = charge == Some(self.charges);
        let retry_after = hints.retry_after.filter(|w| !w.is_zero());
        self.requests
            .observe(now, &hints.requests, retry_after, fresh);
        self.tokens.observe(now, &hints.tokens, retry_after, fresh);
    }

    /// The time between two requests the server allows, once known.
    pub fn request_interval(&self) -> Option<Duration> {
        self.requests
            .is_known()
            .then(|| Duration::from_nanos(self.requests.interval))
    }

    /// The learned request capacity (the most requests the server takes at once).
    pub fn request_capacity(&self) -> Option<u64> {
        self.requests.is_known().then_some(self.requests.capacity)
    }
}

impl Learned {
    fn is_known(&self) -> bool {
        self.interval > 0
    }

    /// The first instant (ns) at which `need` units fit; `at` when nothing is known. A
    /// call larger than the whole bucket waits for a full one.
    fn first_fit(&self, at: u64, need: u64) -> u64 {
        if !self.is_known() {
            return at;
        }
        let room = self.capacity.saturating_sub(need.min(self.capacity));
        self.full_at
            .saturating_sub(room.saturating_mul(self.interval))
            .max(at)
    }

    fn charge(&mut self, at: u64, need: u64) {
        if self.is_known() {
            let cost = need.saturating_mul(self.interval);
            self.full_at = self.full_at.max(at).saturating_add(cost);
        }
    }

    fn observe(
        &mut self,
        now: Timestamp,
        window: &RateWindow,
        retry_after: Option<Duration>,
        fresh: bool,
    ) {
        let (Some(interval), Some(remaining), Some(limit)) =
            (window.unit_interval(), window.remaining, window.limit)
        else {
            return;
        };
        let interval = nanos_of(interval).max(1);
        let capacity = match window.reset {
            Some(reset) => {
                remaining.saturating_add(nanos_of(reset).checked_div(interval).unwrap_or(0))
            }
            None => remaining.max(self.capacity),
        };
        let capacity = capacity.max(remaining).min(limit).max(1);
        let now = now.as_nanos();
        let empty = capacity.saturating_sub(remaining);
        // Exactly `remaining` left (or, drained with a `retry-after`, the next unit at
        // exactly that wait) — and the most the server might hold, a unit more.
        let (exact, most) = match retry_after.filter(|_| remaining == 0) {
            Some(wait) => {
                let next = now.saturating_add(nanos_of(wait));
                let at = next.saturating_add(capacity.saturating_sub(1).saturating_mul(interval));
                (at, at)
            }
            None => (
                now.saturating_add(empty.saturating_mul(interval)),
                now.saturating_add(empty.saturating_sub(1).saturating_mul(interval)),
            ),
        };
        // A later `full_at` holds less. Holding a whole unit more than `remaining` is
        // wrong whatever the response's age; holding less only when it is fresh.
        let too_much = self.full_at <= most;
        let too_little = fresh && self.full_at > exact;
        let reset = !self.is_known() || too_much || too_little;
        self.interval = interval;
        self.capacity = capacity;
        if reset {
            self.full_at = exact;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::arithmetic_side_effects)]

    use super::*;
    use alloc::vec::Vec;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn at(n: u64) -> Timestamp {
        Timestamp::from_millis(n)
    }

    fn requests(limit: u64, remaining: u64, reset: Duration) -> Hints {
        Hints {
            requests: RateWindow {
                limit: Some(limit),
                remaining: Some(remaining),
                reset: Some(reset),
            },
            ..Hints::default()
        }
    }

    #[test]
    fn a_drained_burst_bucket_paces_one_request_per_interval() {
        // 600 a minute, a burst of 20, drained: full in 2 s.
        let mut s = ServerLimits::default();
        s.on_hints(at(1_000), &requests(600, 0, ms(2_000)), None);
        assert_eq!(s.request_interval(), Some(ms(100)));
        assert_eq!(s.request_capacity(), Some(20));
        let mut slots = Vec::new();
        for _ in 0..5 {
            let slot = s.first_slot(at(1_000), 0);
            s.charge(slot, 0);
            slots.push(slot);
        }
        assert_eq!(
            slots,
            [at(1_100), at(1_200), at(1_300), at(1_400), at(1_500)]
        );
        // A call asking later still comes after the slots handed out.
        assert_eq!(s.first_slot(at(1_050), 0), at(1_600));
        // After an idle spell the burst is back, and no more.
        let later = at(10_000);
        for _ in 0..20 {
            assert_eq!(s.first_slot(later, 0), later);
            s.charge(later, 0);
        }
        assert_eq!(s.first_slot(later, 0), later + ms(100));
    }

    #[test]
    fn a_retry_after_on_a_drained_window_says_when_the_next_unit_comes() {
        // 60 a minute: full in 59.558 s means 0.44 of a unit is there; the server says
        // the next whole one comes in 559 ms.
        let mut s = ServerLimits::default();
        let mut h = requests(60, 0, ms(59_558));
        h.retry_after = Some(ms(559));
        s.on_hints(at(0), &h, None);
        assert_eq!(s.first_slot(at(0), 0), at(559));
        // Without it, the model waits a whole interval (never counting the fraction).
        let mut s = ServerLimits::default();
        s.on_hints(at(0), &requests(60, 0, ms(59_558)), None);
        assert_eq!(s.first_slot(at(0), 0), at(1_000));
    }

    #[test]
    fn a_stale_window_never_loosens_and_a_fresh_one_tightens() {
        let mut s = ServerLimits::default();
        s.on_hints(at(0), &requests(600, 0, ms(2_000)), None);
        let before = s.first_slot(at(0), 0);
        // A late answer saying 15 were left: stale, ignored.
        s.on_hints(at(10), &requests(600, 15, ms(500)), None);
        assert_eq!(s.first_slot(at(10), 0), before);
        // Idle for long, the model holds a full bucket; the server says 3 left: now
        // exactly 3 go at once.
        let t = at(60_000);
        s.on_hints(t, &requests(600, 3, ms(1_700)), None);
        for _ in 0..3 {
            assert_eq!(s.first_slot(t, 0), t);
            s.charge(t, 0);
        }
        assert_eq!(s.first_slot(t, 0), t + ms(100));
    }

    #[test]
    fn tokens_pace_by_the_call_size_and_nothing_is_known_without_a_limit() {
        let mut s = ServerLimits::default();
        let h = Hints {
            tokens: RateWindow {
                limit: Some(60_000),
                remaining: Some(0),
                reset: Some(ms(60_000)),
            },
            ..Hints::default()
        };
        s.on_hints(at(0), &h, None);
        // 1 000 tokens a second: a call of 500 fits half a second on.
        assert_eq!(s.first_slot(at(0), 500), at(500));
        let mut blind = ServerLimits::default();
        blind.on_hints(
            at(0),
            &Hints {
                requests: RateWindow {
                    limit: None,
                    remaining: Some(0),
                    reset: Some(ms(60_000)),
                },
                ..Hints::default()
            },
            None,
        );
        assert!(!blind.is_known());
        assert_eq!(blind.first_slot(at(0), 500), at(0));
    }
}
