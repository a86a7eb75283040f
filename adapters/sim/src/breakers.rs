//! The store's shared breakers, for replicas that share them
//! ([`Replicas::share_breaker`](crate::Replicas::share_breaker)): per endpoint, the
//! "open until" instants replicas wrote, each visible once it reached the store
//! (`store_lag / 2` after it was written). Replicas write and read it on the
//! policy's `shared.key_sync` cadence, as steadfast-redis's clients do.

use core::time::Duration;

use steadfast_core::shared::breakers::{BreakerPublish, SharedOpen};
use steadfast_core::time::Timestamp;

/// Per endpoint: (visible from, open until, whole open) of each write not yet over.
pub(crate) struct BreakerStore {
    open: Vec<Vec<(Timestamp, Timestamp, Duration)>>,
    there: Duration,
}

impl BreakerStore {
    /// No breaker open on `endpoints` endpoints; a write reaches the store `there`
    /// after it was sent.
    pub(crate) fn new(endpoints: usize, there: Duration) -> BreakerStore {
        BreakerStore {
            open: vec![Vec::new(); endpoints],
            there,
        }
    }

    /// A replica writes an open at `now`.
    pub(crate) fn write(&mut self, now: Timestamp, p: BreakerPublish) {
        if let Some(writes) = self.open.get_mut(usize::from(p.endpoint.0)) {
            writes.push((now.saturating_add(self.there), p.until, p.whole()));
        }
    }

    /// `endpoint`'s breaker open at `now`, as a read that reaches the store `there`
    /// from now finds it: the latest-ending write that reached it.
    pub(crate) fn open(&mut self, now: Timestamp, endpoint: usize) -> Option<SharedOpen> {
        let at = now.saturating_add(self.there);
        let writes = self.open.get_mut(endpoint)?;
        writes.retain(|(_, until, _)| *until > at);
        let (_, until, whole) = writes
            .iter()
            .filter(|(visible, _, _)| *visible <= at)
            .max_by_key(|(_, until, _)| *until)?;
        Some(SharedOpen {
            left: until.saturating_duration_since(at),
            whole: *whole,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use steadfast_core::ids::EndpointId;

    #[test]
    fn an_open_is_read_once_it_reached_the_store_and_until_it_ends() {
        let ms = Timestamp::from_millis;
        let mut s = BreakerStore::new(1, Duration::from_millis(1));
        s.write(
            ms(100),
            BreakerPublish {
                endpoint: EndpointId(0),
                at: ms(99),
                until: ms(1_000),
            },
        );
        assert_eq!(s.open(ms(98), 0), None, "not there yet");
        assert_eq!(
            s.open(ms(100), 0),
            Some(SharedOpen {
                left: Duration::from_millis(899),
                whole: Duration::from_millis(901),
            })
        );
        assert_eq!(s.open(ms(999), 0), None, "over");
        assert_eq!(s.open(ms(100), 1), None);
    }
}
