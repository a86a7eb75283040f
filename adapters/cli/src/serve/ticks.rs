//! Work done once a period, for as long as what it works on is alive.

use std::sync::Weak;
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};

/// The period of the looks that stand in for a timer each: the idle watch's over the
/// connections and the deadlines' over the exchanges.
pub const TICK: Duration = Duration::from_secs(1);

/// Runs `f` on `what` once every `period`, the first time at `first`, until `what` is
/// dropped. A late tick is run late, never bunched with the next: the n-th run comes
/// no earlier than `first` plus n − 1 periods.
pub async fn every<T: ?Sized>(period: Duration, first: Instant, what: Weak<T>, f: impl Fn(&T)) {
    let mut ticks = tokio::time::interval_at(first, period);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match what.upgrade() {
            Some(what) => f(&what),
            None => return,
        }
    }
}
