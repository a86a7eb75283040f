//! The one place the mock reads time: its monotonic clock, as the upstream's `now`, and
//! the wall clock it started at plus that, as `wall`.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use steadfast_core::time::Timestamp;

/// The mock's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    start: Instant,
    /// The wall clock at `start`, in Unix nanoseconds.
    wall_start: u128,
}

impl Clock {
    pub(crate) fn start() -> Clock {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH);
        Clock {
            start: Instant::now(),
            wall_start: wall.map_or(0, |d| d.as_nanos()),
        }
    }

    /// `now` (since the start) and `wall` (Unix seconds).
    pub(crate) fn now(&self) -> (Timestamp, u64) {
        let elapsed = self.start.elapsed().as_nanos();
        let now = Timestamp::from_nanos(u64::try_from(elapsed).unwrap_or(u64::MAX));
        let wall = (self.wall_start + elapsed) / 1_000_000_000;
        (now, u64::try_from(wall).unwrap_or(u64::MAX))
    }
}
