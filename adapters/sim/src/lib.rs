//! steadfast-sim: see what a retry policy does to your traffic before you ship it.
//!
//! The simulator runs N logical calls through the real core
//! [`Engine`](steadfast_core::engine::Engine) in virtual time, against the fake
//! provider of `steadfast-upstream` running a [`Scenario`]: endpoints with keys, random
//! faults by class (429 with `Retry-After`, 5xx, 529, timeouts, resets, malformed
//! bodies), outage windows, latency distributions, requests- and tokens-per-minute
//! buckets with real rate-limit headers, and keys that go bad. It is the same
//! upstream, with the same scenario file, that `steadfast mock` serves over HTTP: the
//! simulator predicts what the real clients meet. Each request goes to the upstream as
//! a client sends it, and its answer comes back through the core's own
//! `Response::from_http`, as a real adapter's would. Calls arrive at a fixed rate, as a
//! Poisson process or all at once (a closed loop: N calls at concurrency C) and queue
//! for a concurrency slot, like a real client's.
//!
//! Each [`Report`] sets the run's figures beside its [`Ideal`]: what a perfect client,
//! one that knows the upstream, would need for the same calls (see [`ideal`]).
//!
//! A run may also be several replicas of the client behind the same keys
//! ([`run_replicas`], `steadfast sim --replicas N`): engines of their own, splitting
//! the calls, whose request limit is local to each, shared through a modelled store
//! request by request, or leased from it (see [`replicas`]). Their reports end with a
//! section on what the sharing cost and saved ([`report::ReplicaReport`]), and
//! [`modes::render`] sets the three modes side by side. Issue #17's case is the
//! scenario `adapters/sim/scenarios/shared-limit.toml` with the policy
//! `shared-limit.policy.toml` beside it, on four replicas.
//!
//! Everything random comes from ChaCha8 streams derived from one `u64` seed, and events
//! are ordered by `(instant, sequence number)`: the same scenario, policy and seed give
//! the same [`Run`], and so the same [`Report`], byte for byte.
//!
//! ```
//! use steadfast_core::policy::Policy;
//! use steadfast_sim::{Report, builtin};
//!
//! let mut scenario = builtin::scenario("flaky").unwrap();
//! scenario.load.calls = 200;
//! let run = steadfast_sim::run(&scenario, &Policy::default(), 7).unwrap();
//! let report = Report::new(&run, "default");
//! assert_eq!(report.calls, 200);
//! assert!(report.success_rate > 0.9);
//! assert_eq!(report.ideal.success_rate, 1.0);
//! assert!(report.vs_ideal.upstream_requests.is_some_and(|r| r < 1.1));
//! println!("{}", steadfast_sim::text::render(&report));
//! ```

use steadfast_core::error::ConfigError;
use steadfast_core::policy::Policy;
use steadfast_core::time::Timestamp;

mod breakers;
mod checks;
pub mod compare;
mod driver;
pub mod ideal;
pub mod modes;
pub mod replicas;
pub mod reply;
pub mod report;
mod scale;
pub mod svg;
pub mod text;

pub use checks::Violation;
pub use driver::{CallRecord, Request, Run, Tally, arrival_instants, engine_seed};
pub use ideal::Ideal;
pub use replicas::{Replicas, Sharing, run_replicas, run_replicas_checked};
pub use reply::{OutcomeClass, Reply};
pub use report::Report;
pub use scale::time_scaled_policy;
pub use steadfast_upstream::{Scenario, ScenarioError, builtin, dist, scenario};

/// Why a simulation could not run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SimError {
    /// The scenario is invalid.
    Scenario(ScenarioError),
    /// The policy is invalid (the engine refused it).
    Policy(ConfigError),
    /// The replicas are invalid, or the policy gives them no limit to share.
    Replicas(replicas::ReplicaError),
    /// The run made no progress (a core bug): too many events at one point.
    Stuck {
        /// The virtual instant it stalled at.
        at: Timestamp,
    },
    /// The event queue ran dry with a call unfinished (a core or driver bug).
    Unfinished {
        /// The first unfinished call.
        call: u32,
    },
}

impl core::fmt::Display for SimError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SimError::Scenario(e) => write!(f, "scenario: {e}"),
            SimError::Policy(e) => write!(f, "policy: {e}"),
            SimError::Replicas(e) => write!(f, "{e}"),
            SimError::Stuck { at } => write!(f, "the simulation made no progress at {at}"),
            SimError::Unfinished { call } => write!(f, "call {call} never finished"),
        }
    }
}

impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimError::Scenario(e) => Some(e),
            SimError::Policy(e) => Some(e),
            SimError::Replicas(e) => Some(e),
            _ => None,
        }
    }
}

/// Runs `scenario` under `policy` with `seed`.
pub fn run(scenario: &Scenario, policy: &Policy, seed: u64) -> Result<Run, SimError> {
    scenario.validate().map_err(SimError::Scenario)?;
    driver::Driver::new(scenario, policy, seed, false, true)?.run()
}

/// Runs like [`run`], checking the core's invariants at every step; the run's
/// [`Run::violations`] lists what broke (empty when all held). Slower.
pub fn run_checked(scenario: &Scenario, policy: &Policy, seed: u64) -> Result<Run, SimError> {
    scenario.validate().map_err(SimError::Scenario)?;
    driver::Driver::new(scenario, policy, seed, true, true)?.run()
}

/// Runs like [`run`] without keeping a log: requests, calls, breaker transitions and
/// key events are counted in a [`Tally`] and dropped, so memory stays flat however many
/// calls the scenario makes (for soak runs of millions of calls). `on_progress` is
/// called with the tally each time `every` more calls have finished. The same scenario,
/// policy and seed make the same decisions as [`run`].
pub fn run_tally(
    scenario: &Scenario,
    policy: &Policy,
    seed: u64,
    every: u64,
    mut on_progress: impl FnMut(&Tally),
) -> Result<Tally, SimError> {
    scenario.validate().map_err(SimError::Scenario)?;
    driver::Driver::new(scenario, policy, seed, false, false)?.run_tally(every, &mut on_progress)
}

/// The seed of the simulated upstream in a run with `seed`: a mock server started with
/// it draws what the simulator's upstream draws for the same requests.
pub fn upstream_seed(seed: u64) -> u64 {
    split_seed(seed, 100)
}

/// The `stream`-th independent `u64` derived from `seed` (SplitMix64), so each random
/// source of a run (arrivals, each server, the engine) has its own stream.
pub fn split_seed(seed: u64, stream: u64) -> u64 {
    // SplitMix64's own step adds the golden gamma once more: stream k is its (k+1)-th.
    steadfast_upstream::splitmix(seed.wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
}
