//! Time as a [`Session`](crate::Session) takes it, and the faces' conversions.
//!
//! A session never reads a clock: every input carries the instant it happened at
//! ([`Now`]), read by the face from its runtime's clock (tokio's for the async client,
//! so that a paused test clock drives it; `std`'s for the blocking one). A face keeps
//! one [`Epoch`] per client: the core's [`Timestamp`] is nanoseconds since it.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use steadfast_core::time::{Timestamp, nanos_of};

/// The latest instant [`Epoch::instant`] returns: a century after the epoch.
const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// What time it is for one input: the monotonic instant, as the core counts it, and
/// the wall clock (for `Retry-After` HTTP-dates read against a response without a
/// `Date` header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// The monotonic instant.
    pub at: Timestamp,
    /// Seconds since the Unix epoch by the wall clock.
    pub wall_unix: u64,
}

impl Now {
    /// The instant `at`, with the wall clock at `wall_unix`.
    pub const fn new(at: Timestamp, wall_unix: u64) -> Now {
        Now { at, wall_unix }
    }
}

/// The origin of one client's timestamps: an [`Instant`] of the face's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Epoch(Instant);

impl Epoch {
    /// Timestamps counted from `origin`.
    pub const fn new(origin: Instant) -> Epoch {
        Epoch(origin)
    }

    /// `at` as the core counts it (zero before the origin).
    pub fn timestamp(&self, at: Instant) -> Timestamp {
        Timestamp::from_nanos(nanos_of(at.saturating_duration_since(self.0)))
    }

    /// The instant of a core timestamp (saturating a century after the origin).
    pub fn instant(&self, at: Timestamp) -> Instant {
        let span = Duration::from_nanos(at.as_nanos()).min(FAR);
        self.0.checked_add(span).unwrap_or(self.0)
    }

    /// [`Now`] at the face's instant `at`, with the wall clock read now.
    pub fn now(&self, at: Instant) -> Now {
        Now::new(self.timestamp(at), wall_unix())
    }
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
    fn timestamps_and_instants_round_trip() {
        let origin = Instant::now();
        let epoch = Epoch::new(origin);
        let later = origin + Duration::from_millis(1500);
        assert_eq!(epoch.timestamp(later), Timestamp::from_millis(1500));
        assert_eq!(epoch.instant(Timestamp::from_millis(1500)), later);
        assert_eq!(epoch.timestamp(origin), Timestamp::ZERO);
        assert_eq!(epoch.instant(Timestamp::MAX), origin + FAR);
        let before = origin.checked_sub(Duration::from_secs(1));
        if let Some(before) = before {
            assert_eq!(epoch.timestamp(before), Timestamp::ZERO);
        }
        assert_eq!(epoch.now(later).at, Timestamp::from_millis(1500));
        assert!(wall_unix() > 1_600_000_000);
    }
}
