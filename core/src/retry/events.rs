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
