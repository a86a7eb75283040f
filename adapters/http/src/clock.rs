//! The adapters' clock: the core's [`Timestamp`] is nanoseconds since a process-wide
//! [`Instant`] taken the first time any clock is read; wall time (for `Retry-After`
//! HTTP-dates) comes from [`SystemTime`].

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use steadfast_core::time::{Timestamp, nanos_of};

static EPOCH: OnceLock<Instant> = OnceLock::new();

fn epoch() -> Instant {
    *EPOCH.get_or_init(Instant::now)
}

/// The monotonic instant now, as the core counts it.
pub fn now() -> Timestamp {
    Timestamp::from_nanos(nanos_of(Instant::now().saturating_duration_since(epoch())))
}

/// The [`Instant`] of a core timestamp (saturating far in the future).
pub fn instant(at: Timestamp) -> Instant {
    let base = epoch();
    base.checked_add(Duration::from_nanos(at.as_nanos()))
        .unwrap_or_else(|| base + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// The span from now until `at` (zero when it has passed).
pub fn until(at: Timestamp) -> Duration {
    at.saturating_duration_since(now())
}

/// Seconds since the Unix epoch by the wall clock (0 if the clock is before 1970).
pub fn wall_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_round_trip() {
        let a = now();
        let b = now();
        assert!(b >= a);
        let i = instant(a);
        assert_eq!(
            i.saturating_duration_since(epoch()).as_nanos(),
            u128::from(a.as_nanos())
        );
        assert!(instant(Timestamp::MAX) > Instant::now());
        assert_eq!(until(Timestamp::ZERO), Duration::ZERO);
        assert!(wall_unix() > 1_600_000_000);
    }
}
