//! Time scaling of a policy, the twin of
//! [`Scenario::time_scaled`](steadfast_upstream::Scenario::time_scaled): a scaled
//! scenario run under the scaled policy is the same world on a faster (or slower) clock,
//! so a run of minutes can be replayed over real HTTP in seconds.

use core::time::Duration;

use steadfast_core::breaker::Window;
use steadfast_core::policy::Policy;

/// `policy` with its clock running `factor` times as long: every span (deadlines,
/// timeouts, backoffs, waits, breaker and limiter periods, TTLs) multiplied by `factor`,
/// the budget's floor per second divided by it; counts and ratios stay. A `factor` that
/// is not finite and positive leaves the policy as it is.
pub fn time_scaled_policy(policy: &Policy, factor: f64) -> Policy {
    let mut p = policy.clone();
    if !(factor.is_finite() && factor > 0.0) {
        return p;
    }
    let s = |d: &mut Duration| *d = d.mul_f64(factor);
    let r = &mut p.retry;
    for d in [r.deadline.as_mut(), r.first_event_timeout.as_mut()]
        .into_iter()
        .flatten()
    {
        s(d);
    }
    s(&mut r.attempt_timeout);
    s(&mut r.connect_timeout);
    s(&mut r.max_retry_after);
    s(&mut r.hint_jitter_max);
    s(&mut p.backoff.base);
    s(&mut p.backoff.cap);
    s(&mut p.budget.ttl);
    let floor = f64::from(p.budget.min_per_sec) / factor;
    p.budget.min_per_sec = floor.round().clamp(0.0, f64::from(u32::MAX)) as u32;
    let b = &mut p.breaker;
    if let Some(d) = b.slow_call.as_mut() {
        s(d);
    }
    s(&mut b.open_for);
    s(&mut b.open_max);
    if let Window::Time(w) = &mut b.window {
        s(w);
    }
    s(&mut p.limiter.period);
    s(&mut p.health.window);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_shrink_and_the_floor_grows() {
        let p = time_scaled_policy(&Policy::default(), 0.05);
        assert_eq!(p.backoff.base, Duration::from_millis(25));
        assert_eq!(p.breaker.open_for, Duration::from_millis(250));
        assert_eq!(p.retry.max_retry_after, Duration::from_secs(3));
        assert_eq!(p.budget.min_per_sec, 200);
        assert_eq!(p.retry.max_attempts, Policy::default().retry.max_attempts);
        p.validate().unwrap();
        assert_eq!(time_scaled_policy(&p, -1.0), p);
    }
}
