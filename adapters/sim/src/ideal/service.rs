//! What one call costs a perfect client on one endpoint in one regime (the outage
//! windows covering the instant it is sent): the time from its first request to its
//! answer, the requests it needs and how many of them the key's buckets count.
//!
//! The attempts follow the upstream's order: a partial outage window fails a request
//! first (not counted by the buckets), then the random faults, their rates multiplied
//! by `decay` per failure so far. A failure with no work done (429, 5xx, 529, a hang,
//! an outage answer) costs its answer's latency, and a 429 its `retry_after` besides,
//! then the call tries again; a failure after the work was done (a reset, a malformed,
//! truncated or cut body) costs its answer's latency, and one more request fetches the
//! stored success at once. A hang costs what a success would: a client that knows the
//! latencies knows when an answer is overdue.

use steadfast_upstream::dist::Dist;
use steadfast_upstream::scenario::{EndpointSpec, Faults, Outage, OutageKind};

use super::spread::Spread;

/// Failure chains whose probability falls below this are cut (their mass is lost).
const NEGLIGIBLE: f64 = 1e-6;

/// The longest chain of failures followed.
const MAX_FAILURES: usize = 40;

/// The atoms kept of what follows a failure, before it is added to the failure's
/// cost: the retried share of a call is small, so its detail matters less, and sums
/// cost the product of their atoms.
const RETRIED_ATOMS: usize = 64;

/// One call's cost in one regime.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Service {
    /// From the first request to the answer.
    pub time: Spread,
    /// The expected requests.
    pub requests: f64,
    /// The expected requests the key's buckets count.
    pub units: f64,
}

/// The prices of one attempt's outcomes.
struct Costs {
    success: Spread,
    error: Spread,
    throttle: Spread,
}

/// One attempt's odds after `failures` failures.
#[derive(Debug, Clone, Copy)]
struct Odds {
    ok: f64,
    /// Work done and the answer lost on the way: an error answer / a broken body.
    lost_error: f64,
    lost_body: f64,
    /// No work done: a 429, an error answer, a hang.
    throttle: f64,
    error: f64,
    hang: f64,
}

impl Odds {
    fn retry(&self) -> f64 {
        self.throttle + self.error + self.hang
    }

    fn lost(&self) -> f64 {
        self.lost_error + self.lost_body
    }
}

/// The cost of a call on `spec` while `covering` (its outage windows that cover the
/// instant and let some requests through) apply.
pub(crate) fn service(spec: &EndpointSpec, covering: &[&Outage]) -> Service {
    let error = Spread::of(&spec.error_latency);
    let hint = spec
        .faults
        .retry_after
        .map_or_else(|| Spread::point(0.0), |d| Spread::of(&d));
    let costs = Costs {
        success: success_latency(spec.latency, covering),
        throttle: error.plus(&hint),
        error,
    };
    let (outage_error, outage_hang) = outage_failures(covering);
    let odds = |failures: usize| odds(&spec.faults, failures, outage_error, outage_hang);
    let mut chain = 1.0;
    let mut depth = 0;
    while depth < MAX_FAILURES && chain >= NEGLIGIBLE {
        chain *= odds(depth).retry();
        depth += 1;
    }
    let mut time = Spread::never();
    let (mut requests, mut units) = (0.0, 0.0);
    for failures in (0..=depth).rev() {
        let o = odds(failures);
        let passed = 1.0 - outage_error - outage_hang;
        let (retried, more, counted) = match failures == depth {
            true => (Spread::never(), 0.0, 0.0),
            false => (time, requests, units),
        };
        time = attempt(&costs, &o, &retried);
        requests = 1.0 + o.lost() + o.retry() * more;
        units = passed + o.retry() * counted;
    }
    Service {
        time,
        requests,
        units,
    }
}

/// One attempt's time: its outcome's cost, then `retried` for a failure with no work
/// done.
fn attempt(c: &Costs, o: &Odds, retried: &Spread) -> Spread {
    let retried = &retried.coarse(RETRIED_ATOMS);
    let then = |odds: f64, cost: &Spread| match odds > 0.0 {
        true => cost.plus(retried),
        false => Spread::never(),
    };
    let (throttle, error) = (then(o.throttle, &c.throttle), then(o.error, &c.error));
    let hang = then(o.hang, &c.success);
    Spread::mix(&[
        (o.ok + o.lost_body, &c.success),
        (o.lost_error, &c.error),
        (o.throttle, &throttle),
        (o.error, &error),
        (o.hang, &hang),
    ])
}

/// The odds of one attempt after `failures` failures, when partial outages fail it
/// with an error answer (`outage_error`) or a hang (`outage_hang`) first.
fn odds(f: &Faults, failures: usize, outage_error: f64, outage_hang: f64) -> Odds {
    let weight = f.decay.powi(i32::try_from(failures.min(60)).unwrap_or(60));
    let passed = (1.0 - outage_error - outage_hang) * weight;
    let body = f.rate_malformed + f.rate_truncated + f.rate_stream_cut;
    Odds {
        ok: (1.0 - outage_error - outage_hang) * (1.0 - f.total() * weight),
        lost_error: passed * f.rate_reset,
        lost_body: passed * body,
        throttle: passed * f.rate_429,
        error: outage_error + passed * (f.rate_5xx + f.rate_529),
        hang: outage_hang + passed * f.rate_timeout,
    }
}

/// The probabilities that a partial outage window fails a request with an answer, and
/// with silence: the first window whose draw hits decides, as in the upstream.
fn outage_failures(covering: &[&Outage]) -> (f64, f64) {
    let (mut error, mut hang, mut through) = (0.0, 0.0, 1.0);
    for o in covering.iter().filter(|o| o.kind != OutageKind::Slow) {
        let hit = through * o.rate;
        match o.kind {
            OutageKind::Timeout => hang += hit,
            _ => error += hit,
        }
        through -= hit;
    }
    (error, hang)
}

/// A success's latency: the first slow window whose draw hits sets it, else the
/// endpoint's own.
fn success_latency(normal: Dist, covering: &[&Outage]) -> Spread {
    let mut parts = Vec::new();
    let mut through = 1.0;
    for o in covering.iter().filter(|o| o.kind == OutageKind::Slow) {
        let Some(latency) = o.latency else { continue };
        parts.push((through * o.rate, Spread::of(&latency)));
        through -= through * o.rate;
    }
    parts.push((through, Spread::of(&normal)));
    let weighted: Vec<_> = parts.iter().map(|(w, s)| (*w, s)).collect();
    Spread::mix(&weighted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn endpoint() -> EndpointSpec {
        let mut e = EndpointSpec::named("e");
        e.latency = Dist::Fixed(Duration::from_millis(100));
        e.error_latency = Dist::Fixed(Duration::from_millis(10));
        e
    }

    #[test]
    fn without_faults_a_call_is_one_request_of_its_latency() {
        let s = service(&endpoint(), &[]);
        assert_eq!((s.requests, s.units), (1.0, 1.0));
        assert_eq!(s.time, Spread::point(0.1));
    }

    #[test]
    fn a_failure_rate_without_decay_costs_one_over_one_minus_p() {
        let mut e = endpoint();
        e.faults.rate_5xx = 0.2;
        let s = service(&e, &[]);
        assert!((s.requests - 1.25).abs() < 1e-5, "{}", s.requests);
        assert!((s.units - 1.25).abs() < 1e-5);
        // Each failure adds its 10 ms answer.
        assert!((s.time.mean() - (0.1 + 0.25 * 0.01)).abs() < 1e-6);
        assert!(s.time.served() > 1.0 - 1e-5);
    }

    #[test]
    fn decay_and_work_done_faults_follow_the_upstream() {
        let mut e = endpoint();
        e.faults.rate_5xx = 0.4;
        e.faults.decay = 0.5;
        // 1 + 0.4 (1 + 0.2 (1 + 0.1 (1 + ...)))
        let s = service(&e, &[]);
        let want = 1.0 + 0.4 * (1.0 + 0.2 * (1.0 + 0.1 * (1.0 + 0.05 * 1.025)));
        assert!((s.requests - want).abs() < 1e-4, "{}", s.requests);
        let mut e = endpoint();
        e.faults.rate_reset = 0.3;
        let s = service(&e, &[]);
        // A reset is answered in 10 ms and its replay is free: never a third request.
        assert!((s.requests - 1.3).abs() < 1e-12);
        assert!((s.units - 1.0).abs() < 1e-12);
        assert!((s.time.mean() - (0.7 * 0.1 + 0.3 * 0.01)).abs() < 1e-12);
    }

    #[test]
    fn partial_outages_fail_before_the_buckets_and_slow_windows_stretch() {
        let e = endpoint();
        let status = Outage {
            rate: 0.5,
            ..Outage::status(Duration::ZERO, Duration::from_secs(1))
        };
        let slow = Outage {
            kind: OutageKind::Slow,
            latency: Some(Dist::Fixed(Duration::from_secs(2))),
            ..Outage::status(Duration::ZERO, Duration::from_secs(1))
        };
        let s = service(&e, &[&status, &slow]);
        assert!((s.requests - 2.0).abs() < 1e-5, "{}", s.requests);
        assert!((s.units - 1.0).abs() < 1e-5, "{}", s.units);
        assert!((s.time.mean() - (2.0 + 0.01)).abs() < 1e-4);
    }
}
