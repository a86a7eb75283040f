//! The invariants the harness checks, a broken one, and which ones to check.

use core::fmt;

/// An invariant of the engine and its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Invariant {
    /// A `Send` at or after the call's deadline.
    SendAfterDeadline,
    /// An attempt's own deadline after the call's, or not after now.
    AttemptDeadline,
    /// An attempt number above `max_attempts`.
    TooManyAttempts,
    /// Attempt numbers not 1, 2, 3, … within a call.
    AttemptNumbering,
    /// A grant on an endpoint whose breaker `peek` denied just before.
    BreakerBypassed,
    /// A grant on an endpoint whose limiter `check` did not admit just before.
    LimiterBypassed,
    /// A call that does not hold on open breakers told to wait for one.
    BreakerHold,
    /// A `Wait` for another instant than the engine's "not before" (or the attempt's
    /// deadline while one is in flight).
    WaitMismatch,
    /// More half-open probes in flight than configured.
    TooManyProbes,
    /// Probes granted and reported do not match the breaker's count.
    ProbeAccounting,
    /// Attempts granted and reported do not match the limiter's in-flight count.
    InFlightAccounting,
    /// A grant on a disabled key.
    DisabledKey,
    /// A grant on a key still cooling down.
    CooledKey,
    /// A grant on the target the call's last failure ruled out until later.
    AvoidIgnored,
    /// A grant on an endpoint or key that does not exist.
    UnknownTarget,
    /// An attempt without the call's one idempotency key.
    IdempotencyKey,
    /// `poll_timeout` before the call's clamped clock while the call waits.
    PollTimeoutInPast,
    /// `poll_timeout` differs from the instant of the `Wait` just returned.
    PollTimeoutMismatch,
    /// A `Wait` not after the call's clamped clock (a driver would spin).
    WaitNotAhead,
    /// A `Wait` past the call's deadline.
    WaitPastDeadline,
    /// A give-up reason (or success) that the call's history does not support.
    FinishInconsistent,
    /// A finished call answered differently later.
    FinishChanged,
    /// The verdict reported to the gate is not the classification of the outcome.
    Classification,
    /// A `UsageError` where none was due, or none where one was.
    Usage,
    /// The call's events disagree with its decisions.
    Events,
    /// A poll did not settle on `Wait` or `Done`.
    Livelock,
}

/// A broken invariant, with the step it broke at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The 1-based index of the operation after which it was seen.
    pub step: usize,
    /// Which invariant.
    pub invariant: Invariant,
    /// What was seen.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "step {}: {:?}: {}",
            self.step, self.invariant, self.detail
        )
    }
}

impl std::error::Error for Violation {}

/// Which invariants to check; all by default. Turning one off is for an invariant
/// the core is known to break, until it is fixed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checks {
    /// The invariants not checked.
    pub skip: Vec<Invariant>,
}

impl Checks {}
