//! Monotonic time as the core sees it: a [`Timestamp`] the driver passes in.
//!
//! The core never reads a clock. Adapters pick an epoch (process start, say) and pass
//! nanoseconds since it; spans are plain [`core::time::Duration`]. Every operation here
//! saturates instead of wrapping, so no time value can overflow.

use core::time::Duration;

/// An instant on the driver's monotonic clock, in nanoseconds since an epoch it picks.
///
/// `u64` nanoseconds cover 584 years. All arithmetic saturates at [`Timestamp::ZERO`]
/// and [`Timestamp::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Timestamp(u64);

impl Timestamp {
    /// The epoch.
    pub const ZERO: Timestamp = Timestamp(0);
    /// The latest representable instant; "never" where an instant is required.
    pub const MAX: Timestamp = Timestamp(u64::MAX);

    /// An instant `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Timestamp {
        Timestamp(nanos)
    }

    /// An instant `millis` milliseconds after the epoch (saturating).
    pub const fn from_millis(millis: u64) -> Timestamp {
        Timestamp(millis.saturating_mul(1_000_000))
    }

    /// An instant `secs` seconds after the epoch (saturating).
    pub const fn from_secs(secs: u64) -> Timestamp {
        Timestamp(secs.saturating_mul(1_000_000_000))
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// `self + d`, saturating at [`Timestamp::MAX`].
    #[must_use]
    pub const fn saturating_add(self, d: Duration) -> Timestamp {
        Timestamp(self.0.saturating_add(nanos_of(d)))
    }

    /// `self - d`, saturating at [`Timestamp::ZERO`].
    #[must_use]
    pub const fn saturating_sub(self, d: Duration) -> Timestamp {
        Timestamp(self.0.saturating_sub(nanos_of(d)))
    }

    /// The span from `earlier` to `self`, or zero when `earlier` is later.
    pub const fn saturating_duration_since(self, earlier: Timestamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// The later of two instants.
    #[must_use]
    pub fn max(self, other: Timestamp) -> Timestamp {
        Ord::max(self, other)
    }

    /// The earlier of two instants.
    #[must_use]
    pub fn min(self, other: Timestamp) -> Timestamp {
        Ord::min(self, other)
    }
}

impl core::ops::Add<Duration> for Timestamp {
    type Output = Timestamp;
    /// Saturating: see [`Timestamp::saturating_add`].
    fn add(self, d: Duration) -> Timestamp {
        self.saturating_add(d)
    }
}

impl core::ops::Sub<Duration> for Timestamp {
    type Output = Timestamp;
    /// Saturating: see [`Timestamp::saturating_sub`].
    fn sub(self, d: Duration) -> Timestamp {
        self.saturating_sub(d)
    }
}

impl core::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let secs = self.0 / 1_000_000_000;
        let millis = (self.0 % 1_000_000_000) / 1_000_000;
        write!(f, "{secs}.{millis:03}s")
    }
}

/// A duration in nanoseconds, saturating at `u64::MAX` (584 years).
pub const fn nanos_of(d: Duration) -> u64 {
    let n = d.as_nanos();
    if n > u64::MAX as u128 {
        u64::MAX
    } else {
        n as u64
    }
}

/// A clamp for instants that must not go backwards: the driver's `now` is raised to the
/// latest instant seen so far, so a clock that steps back cannot reorder events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Monotonic {
    latest: Timestamp,
}

impl Monotonic {
    /// Feeds `now` and returns it, or the latest instant seen if `now` is earlier.
    pub fn observe(&mut self, now: Timestamp) -> Timestamp {
        self.latest = self.latest.max(now);
        self.latest
    }

    /// The latest instant seen.
    pub fn latest(&self) -> Timestamp {
        self.latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(Timestamp::MAX + Duration::from_secs(1), Timestamp::MAX);
        assert_eq!(Timestamp::ZERO - Duration::from_secs(1), Timestamp::ZERO);
        assert_eq!(Timestamp::from_secs(1) + Duration::MAX, Timestamp::MAX);
        assert_eq!(
            Timestamp::ZERO.saturating_duration_since(Timestamp::from_secs(3)),
            Duration::ZERO
        );
        assert_eq!(
            Timestamp::from_millis(1500).saturating_duration_since(Timestamp::from_secs(1)),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn monotonic_clamps_backwards_steps() {
        let mut m = Monotonic::default();
        assert_eq!(m.observe(Timestamp::from_secs(5)), Timestamp::from_secs(5));
        assert_eq!(m.observe(Timestamp::from_secs(2)), Timestamp::from_secs(5));
        assert_eq!(m.observe(Timestamp::from_secs(7)), Timestamp::from_secs(7));
    }

    #[test]
    fn display_is_seconds_with_millis() {
        assert_eq!(
            alloc::format!("{}", Timestamp::from_millis(12_345)),
            "12.345s"
        );
    }
}
