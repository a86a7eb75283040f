//! Benchmarks of steadfast-core's decisions beside the peer crates that do the same job.
//!
//! Every measured operation is a [`Workload`]: a state object built once (per criterion
//! sample) and a `step` that performs one operation on it. The same workloads feed
//! three consumers, so they can never drift apart:
//!
//! - the criterion bench (`cargo bench -p steadfast-bench`), one criterion group per
//!   [`Group`], one function per implementation;
//! - the allocation counter ([`alloc_count`]), used by the `report` binary to print
//!   allocations per operation and by a `#[test]` that requires zero for steadfast;
//! - the `report` binary, which reads criterion's `estimates.json` files and prints the
//!   README table ([`report`]).
//!
//! Steadfast takes `now` as an argument; its workloads advance a counter (no clock
//! read). The peers read their clock inside, as their APIs require. The
//! [`baseline`] group measures what reading the clock costs, so a reader can add it
//! back: an adapter reads the clock once per decision.
//!
//! Criterion times the benchmark thread's CPU time by default (see
//! `benches/decisions.rs`), so other processes on a shared machine do not inflate the
//! figures. For repeatable instruction counts, `examples/profile.rs` runs one
//! workload under callgrind.
//!
//! ```text
//! cargo bench -p steadfast-bench && cargo run -p steadfast-bench --release --bin report
//! ```

pub mod alloc_count;
pub mod backoff;
pub mod baseline;
pub mod breaker;
pub mod budget;
pub mod engine;
pub mod limiter;
pub mod parsing;
pub mod report;
pub mod sizes;

/// The name every steadfast implementation has inside its group.
pub const STEADFAST: &str = "steadfast";

/// One measured operation on a state object.
pub trait Workload {
    /// Performs one operation (as many as the [`Group`] says it counts) and returns
    /// something derived from its result, for `black_box`.
    fn step(&mut self) -> u64;
}

/// Identifies one workload: its group (the operation) and the implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// The [`Group::id`] it belongs to.
    pub group: &'static str,
    /// The implementation: [`STEADFAST`] or a peer's name.
    pub name: &'static str,
}

impl Case {
    /// Whether this is steadfast's implementation.
    pub fn is_steadfast(&self) -> bool {
        self.name == STEADFAST
    }
}

/// Receives every workload, monomorphised, so a consumer can run it without dynamic
/// dispatch in the measured loop.
pub trait Visitor {
    /// Called once per workload with a constructor for its state.
    fn visit<W: Workload>(&mut self, case: Case, make: fn() -> W);
}

/// One operation compared across implementations: a criterion group and a row of the
/// README table.
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// The criterion group name (also the directory under `target/criterion`).
    pub id: &'static str,
    /// The operation as the README table names it.
    pub label: &'static str,
    /// Operations per criterion iteration: the report divides the median by it.
    pub per_iteration: u32,
    /// The target for steadfast, if the issue sets one.
    pub target: Target,
}

/// What steadfast must achieve in a group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// No target: reported only.
    None,
    /// At most `ratio` × a peer and at most `ns` nanoseconds.
    Peer {
        /// The largest allowed steadfast / peer ratio.
        ratio: f64,
        /// The largest allowed median, in nanoseconds (`f64::INFINITY` for none).
        ns: f64,
        /// The peer the ratio is taken against, when the target names one; otherwise
        /// the fastest peer.
        against: Option<&'static str>,
    },
    /// At most `ns` nanoseconds.
    Absolute {
        /// The largest allowed median, in nanoseconds.
        ns: f64,
    },
}

/// Every group, in the order of the README table.
pub const GROUPS: &[Group] = &[
    breaker::SUCCESS,
    breaker::FAILURE,
    backoff::FIRST_FIVE,
    backoff::STEADY,
    limiter::ALLOWED,
    limiter::REJECTED,
    limiter::CHECK,
    budget::DEPOSIT,
    budget::WITHDRAW_SPENT,
    budget::CYCLE,
    parsing::POOL_PICK_KEY,
    parsing::POOL_SELECT,
    parsing::CLASSIFY_503,
    parsing::CLASSIFY_429,
    parsing::HINTS_OPENAI,
    parsing::HINTS_ANTHROPIC,
    parsing::ERROR_BODY,
    engine::ROUND,
    engine::RETRIED_CALL,
    baseline::CLOCK,
];

/// Hands every workload to `v`, group by group in [`GROUPS`] order.
pub fn visit_all<V: Visitor>(v: &mut V) {
    breaker::visit(v);
    backoff::visit(v);
    limiter::visit(v);
    budget::visit(v);
    parsing::visit(v);
    engine::visit(v);
    baseline::visit(v);
}

/// The group with this id.
pub fn group(id: &str) -> Option<&'static Group> {
    GROUPS.iter().find(|g| g.id == id)
}
