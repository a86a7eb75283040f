//! Whether the way a call finished is supported by what happened to it.

use steadfast_core::classify::Verdict;
use steadfast_core::pool::KeyState;
use steadfast_core::retry::{Admit, Finish, GiveUpReason, WaitCause};

use crate::harness::{Harness, Invariant, Violation};
use crate::watch::AdmitRecord;

/// Checks the first `Done` of call `i`. `admit` is the engine's last answer in the
/// finishing poll when it was not a grant (the give-up then came from it).
pub(crate) fn check(
    h: &Harness,
    i: usize,
    finish: Finish,
    admit: Option<&AdmitRecord>,
) -> Result<(), Violation> {
    let slot = &h.calls[i];
    let admit = admit.filter(|r| !matches!(r.answer, Admit::Go(_)));
    let fail = |why: &str| {
        h.fail(
            Invariant::FinishInconsistent,
            format!(
                "call {i}: {finish:?}: {why} (last verdict {:?}, last admit {:?}, attempts {}, rules max {} idempotent {}, now {:?}, deadline {:?})",
                slot.last_verdict,
                admit.map(|a| (a.at, a.answer)),
                slot.attempts,
                slot.rules.max_attempts,
                slot.rules.idempotent,
                slot.latest,
                slot.call.deadline(),
            ),
        )
    };
    let g = match finish {
        Finish::Success { attempts, target } => {
            if slot.last_verdict != Some(Verdict::Success) {
                return fail("success without a successful attempt");
            }
            if attempts != slot.attempts || Some(target) != slot.last_target {
                return fail("success names another attempt");
            }
            return Ok(());
        }
        Finish::GaveUp(g) => g,
    };
    if g.attempts != slot.attempts {
        return fail("attempt count differs from the attempts sent");
    }
    if g.last_failure != slot.last_failure || g.last_status != slot.last_status {
        return fail("last failure or status differs from the last outcome");
    }
    let last = slot.last_failure;
    let retryable = last.is_none_or(|f| f.retryable);
    let unsafe_retry = last.is_some_and(|f| f.after_send) && !slot.rules.idempotent;
    let max = slot.rules.max_attempts;
    let deadline = slot.call.deadline();
    let hold = slot.rules.hold;
    let ok = match g.reason {
        GiveUpReason::Cancelled => slot.cancelled || slot.delivered_cancel,
        GiveUpReason::NotRetryable => admit.is_none() && !retryable && !slot.delivered_cancel,
        GiveUpReason::UnsafeToRetry => admit.is_none() && retryable && unsafe_retry,
        GiveUpReason::RetriesExhausted => {
            admit.is_none() && retryable && !unsafe_retry && slot.attempts >= max
        }
        GiveUpReason::DeadlineExceeded => {
            let past = slot.latest >= deadline;
            let backoff_past = admit.is_some_and(|a| {
                matches!(a.answer, Admit::NotBefore(at, WaitCause::Backoff) if at >= deadline)
            });
            retryable && slot.attempts < max && (past || backoff_past)
        }
        GiveUpReason::HintTooLong { hint } => admit.is_some_and(|a| {
            matches!(a.answer, Admit::NotBefore(at, WaitCause::Hint(h))
                if h == hint && (h > slot.rules.max_retry_after || at >= deadline))
        }),
        GiveUpReason::BreakerOpen { until } => admit.is_some_and(|a| match a.answer {
            Admit::Refuse(GiveUpReason::BreakerOpen { until: u }) => {
                // A holding call stops holding for an endpoint failing for max_hold.
                let max_hold = h.engine.policy().retry.max_hold;
                let held_out = a.failing.iter().flatten().any(|since| *since + max_hold <= a.at);
                (!hold || held_out)
                    && u == until
                    && a.peeks.iter().any(|p| {
                        matches!(p, steadfast_core::breaker::Permit::Deny { until: d } if *d == until)
                    })
            }
            Admit::NotBefore(at, WaitCause::Breaker) => at == until && at >= deadline,
            _ => false,
        }),
        GiveUpReason::BudgetExhausted => admit.is_some_and(|a| {
            let spent = match a.answer {
                Admit::Refuse(GiveUpReason::BudgetExhausted) => true,
                Admit::NotBefore(at, WaitCause::Budget) => a.query.hold && at >= deadline,
                _ => false,
            };
            spent && a.query.attempt > 1 && h.engine.policy().budget.enabled
        }),
        GiveUpReason::NoUsableKey => admit.is_some_and(|a| {
            a.answer == Admit::Refuse(GiveUpReason::NoUsableKey)
                && a.keys
                    .iter()
                    .flatten()
                    .all(|k| matches!(k, KeyState::Disabled { .. }))
        }),
        GiveUpReason::RateLimited { until } => admit.is_some_and(|a| match a.answer {
            Admit::Refuse(GiveUpReason::RateLimited { until: u }) => u == until,
            Admit::NotBefore(at, WaitCause::RateLimit | WaitCause::Busy) => {
                at == until && at >= deadline
            }
            _ => false,
        }),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        fail("the reason does not follow from the call's history")
    }
}
