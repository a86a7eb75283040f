//! Redis faults as a policy: what a failed call means for the caller, and counters
//! of what happened.

use crate::config::FailMode;
use crate::error::StoreError;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the caller does with a limit whose store call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// Decide on the process's local limits (fail-open).
    Local,
    /// Do not admit (fail-closed, or a call that can never succeed).
    Refuse,
}

/// The policy: [`FailMode::Open`] falls back to local limits on a store fault
/// (time-out, unavailable, script error), [`FailMode::Closed`] refuses. An
/// [`StoreError::Invalid`] call is the caller's bug, not a store fault: it is
/// refused in both modes, so that a fail-open limit does not hide it.
pub fn fallback(mode: FailMode, err: &StoreError) -> Fallback {
    match (err, mode) {
        (StoreError::Invalid(_), _) | (_, FailMode::Closed) => Fallback::Refuse,
        (_, FailMode::Open) => Fallback::Local,
    }
}

/// Counts of store calls and their failures, shared by the clones of one store.
#[derive(Debug, Default)]
pub struct StoreCounters {
    calls: AtomicU64,
    timeouts: AtomicU64,
    unavailable: AtomicU64,
    script_errors: AtomicU64,
    invalid: AtomicU64,
    fallbacks: AtomicU64,
    refusals: AtomicU64,
}

/// A copy of [`StoreCounters`] at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CounterSnapshot {
    /// Calls sent to Redis.
    pub calls: u64,
    /// Calls that got no answer within `call_timeout`.
    pub timeouts: u64,
    /// Calls that found Redis unreachable.
    pub unavailable: u64,
    /// Calls Redis answered with an error.
    pub script_errors: u64,
    /// Calls refused before sending (bad arguments).
    pub invalid: u64,
    /// Failures the caller was told to decide locally ([`Fallback::Local`]).
    pub fallbacks: u64,
    /// Failures the caller was told to refuse ([`Fallback::Refuse`]).
    pub refusals: u64,
}

impl StoreCounters {
    /// The current counts.
    pub fn snapshot(&self) -> CounterSnapshot {
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CounterSnapshot {
            calls: read(&self.calls),
            timeouts: read(&self.timeouts),
            unavailable: read(&self.unavailable),
            script_errors: read(&self.script_errors),
            invalid: read(&self.invalid),
            fallbacks: read(&self.fallbacks),
            refusals: read(&self.refusals),
        }
    }

    pub(crate) fn on_call(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn on_error(&self, err: &StoreError) {
        let counter = match err {
            StoreError::Timeout { .. } => &self.timeouts,
            StoreError::Unavailable { .. } => &self.unavailable,
            StoreError::Script(_) => &self.script_errors,
            StoreError::Invalid(_) => &self.invalid,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn on_fallback(&self, f: Fallback) {
        let counter = match f {
            Fallback::Local => &self.fallbacks,
            Fallback::Refuse => &self.refusals,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Invalid;
    use std::time::Duration;

    #[test]
    fn open_falls_back_closed_refuses_and_misuse_is_always_refused() {
        let slow = StoreError::Timeout {
            after: Duration::from_millis(50),
        };
        let bad = StoreError::Invalid(Invalid::OutOfRange { field: "n" });
        assert_eq!(fallback(FailMode::Open, &slow), Fallback::Local);
        assert_eq!(fallback(FailMode::Closed, &slow), Fallback::Refuse);
        assert_eq!(fallback(FailMode::Open, &bad), Fallback::Refuse);
    }

    #[test]
    fn counters_count_each_kind() {
        let c = StoreCounters::default();
        c.on_call();
        c.on_error(&StoreError::Unavailable {
            reason: "refused".into(),
        });
        c.on_fallback(Fallback::Local);
        c.on_fallback(Fallback::Refuse);
        let s = c.snapshot();
        assert_eq!(
            (s.calls, s.unavailable, s.fallbacks, s.refusals, s.timeouts),
            (1, 1, 1, 1, 0)
        );
    }
}
