//! Events a call emits for logs and metrics.

use crate::classify::Failure;
use crate::ids::{AttemptId, Target};
use crate::retry::GiveUpReason;
use crate::time::Timestamp;

/// Something a call did, with the instant it did it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallEvent {
    /// An attempt was handed to the driver.
    AttemptStarted {
        /// When.
        at: Timestamp,
        /// Which attempt.
        id: AttemptId,
        /// Where it goes.
        target: Target,
    },
    /// A hedge goes out beside an attempt still in flight (its own
    /// [`CallEvent::AttemptStarted`] follows at once).
    HedgeSent {
        /// When.
        at: Timestamp,
        /// The hedge.
        id: AttemptId,
        /// The attempt it races.
        beside: AttemptId,
        /// Where it goes.
        target: Target,
    },
    /// An attempt lost its race (the other one answered first, or the call ended) and
    /// was cancelled: its grant was given back, its answer will be refused.
    AttemptCancelled {
        /// When.
        at: Timestamp,
        /// Which attempt.
        id: AttemptId,
        /// Where it went.
        target: Target,
    },
    /// An attempt failed and another will follow.
    RetryScheduled {
        /// When the failure was seen.
        at: Timestamp,
        /// The failure.
        failure: Failure,
        /// The failed target is not used again before this instant (another may be).
        until: Timestamp,
    },
    /// An attempt went to another endpoint than the previous one.
    Failover {
        /// When.
        at: Timestamp,
        /// The previous target.
        from: Target,
        /// The new target.
        to: Target,
    },
    /// The call succeeded.
    Succeeded {
        /// When.
        at: Timestamp,
        /// Attempts made.
        attempts: u32,
    },
    /// The call gave up.
    GaveUp {
        /// When.
        at: Timestamp,
        /// Why.
        reason: GiveUpReason,
    },
}
