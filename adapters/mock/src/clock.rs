//! The one place the mock reads time. The scenario's clock (the upstream's `now`)
//! starts at the first API request, so that a client meets the scenario's instants
//! (an outage 20 s in) however long it took to start; `wall` is the wall clock.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use steadfast_core::time::Timestamp;

/// The mock's clock.
#[derive(Debug)]
pub(crate) struct Clock {
    boot: Instant,
    /// The wall clock at `boot`, in Unix nanoseconds.
    wall_boot: u128,
    /// The instant of the first API request: the scenario's zero.
    zero: OnceLock<Instant>,
}

impl Clock {
    pub(crate) fn start() -> Clock {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH);
        Clock {
            boot: Instant::now(),
            wall_boot: wall.map_or(0, |d| d.as_nanos()),
            zero: OnceLock::new(),
        }
    }

    /// The wall clock now, in Unix seconds.
    pub(crate) fn wall(&self) -> u64 {
        let wall = self.wall_boot + self.boot.elapsed().as_nanos();
        u64::try_from(wall / 1_000_000_000).unwrap_or(u64::MAX)
    }

    /// An API request arrived: `now` on the scenario's clock (started by the first)
    /// and `wall`.
    pub(crate) fn request(&self) -> (Timestamp, u64) {
        let zero = *self.zero.get_or_init(Instant::now);
        let since = zero.elapsed().as_nanos();
        let now = Timestamp::from_nanos(u64::try_from(since).unwrap_or(u64::MAX));
        (now, self.wall())
    }
}
