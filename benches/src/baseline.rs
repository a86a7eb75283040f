//! What reading the clock costs: an adapter reads it once per decision and passes it
//! to steadfast, whereas the peers read it inside. Add this to steadfast's figures for
//! a like-for-like total.

use std::time::Instant;

use crate::{Case, Group, Target, Visitor, Workload};

/// One `Instant::now()`.
pub const CLOCK: Group = Group {
    id: "baseline_clock",
    label: "baseline: Instant::now() (one clock read)",
    per_iteration: 1,
    target: Target::None,
};

/// Reads the monotonic clock.
#[derive(Debug)]
pub struct Clock;

impl Workload for Clock {
    #[inline]
    fn step(&mut self) -> u64 {
        std::hint::black_box(Instant::now());
        0
    }
}

/// Hands the baseline workload to `v`.
pub fn visit<V: Visitor>(v: &mut V) {
    v.visit(
        Case {
            group: CLOCK.id,
            name: "std_instant_now",
        },
        || Clock,
    );
}
