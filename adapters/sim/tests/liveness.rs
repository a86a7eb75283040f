//! Liveness of whole built-in scenarios: a policy's success rate and its figures
//! divided by the ideal's (what a perfect client needs, `steadfast_sim::ideal`) stay
//! within bounds. Each bound is the worst of seeds 1–3 with a small margin, and names
//! what it measures; seeds are fixed and every failure prints the seed and the report.
//!
//! The makespan of an open-loop scenario is mostly its arrivals' span, so its bound is
//! tight; latencies show the policy's waits (backoff, hints, pacing, holding), and the
//! requests its retries. Where the ideal latency is zero (instant answers), the
//! latency is capped outright instead.

use core::time::Duration;

use steadfast_core::policy::Policy;
use steadfast_sim::scenario::{Arrival, ServerLimits};
use steadfast_sim::{Report, Scenario, builtin, run, text};

const SEEDS: [u64; 3] = [1, 2, 3];

/// Bounds on a run's figures; a ratio to the ideal is checked when the ideal has one.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    /// The least success rate.
    success: f64,
    /// Upstream requests ÷ the ideal's: the least and the most.
    requests: (f64, f64),
    /// The most makespan ÷ the ideal's.
    makespan: f64,
    /// The most mean, median and 99th-percentile latency ÷ the ideal's.
    mean: f64,
    p50: f64,
    p99: f64,
    /// The most 99th-percentile latency, in milliseconds.
    p99_ms: f64,
}

const ANY: Bounds = Bounds {
    success: 0.0,
    requests: (0.0, f64::INFINITY),
    makespan: f64::INFINITY,
    mean: f64::INFINITY,
    p50: f64::INFINITY,
    p99: f64::INFINITY,
    p99_ms: f64::INFINITY,
};

fn scenario(name: &str) -> Scenario {
    builtin::scenario(name).unwrap_or_else(|| panic!("no built-in {name}"))
}

/// Runs `s` under `policy` on every seed and checks `b`; the reports, by seed.
fn check(s: &Scenario, policy: &Policy, b: Bounds) -> Vec<Report> {
    SEEDS
        .iter()
        .map(|&seed| {
            let r = Report::new(&run(s, policy, seed).expect("runs"), "checked");
            if let Err(what) = holds(&r, &b) {
                panic!(
                    "scenario {}, seed {seed}: {what}\n{}",
                    s.name,
                    text::render(&r)
                );
            }
            r
        })
        .collect()
}

fn holds(r: &Report, b: &Bounds) -> Result<(), String> {
    let v = &r.vs_ideal;
    let at_most = |what: &str, x: Option<f64>, max: f64| match x {
        Some(x) if x > max => Err(format!("{what} {x} > {max}")),
        _ => Ok(()),
    };
    if r.success_rate < b.success {
        return Err(format!("success rate {} < {}", r.success_rate, b.success));
    }
    let requests = v.upstream_requests.unwrap_or(f64::NAN);
    if !(b.requests.0..=b.requests.1).contains(&requests) {
        return Err(format!(
            "requests ÷ ideal {requests} outside {:?}",
            b.requests
        ));
    }
    at_most("makespan ÷ ideal", v.makespan, b.makespan)?;
    at_most("mean latency ÷ ideal", v.latency_mean, b.mean)?;
    at_most("p50 latency ÷ ideal", v.latency_p50, b.p50)?;
    at_most("p99 latency ÷ ideal", v.latency_p99, b.p99)?;
    at_most("p99 latency (ms)", Some(r.latency_ms.p99), b.p99_ms)
}

fn default_policy(name: &str, b: Bounds) -> Vec<Report> {
    check(&scenario(name), &Policy::default(), b)
}

/// Every call served at once by a perfect client, and by the policy.
const INSTANT: Bounds = Bounds {
    success: 1.0,
    requests: (1.0, 1.0),
    makespan: 1.0,
    p99_ms: 0.0,
    ..ANY
};

#[test]
fn ok_is_served_with_one_request_per_call_at_once() {
    default_policy("ok", INSTANT);
}

#[test]
fn ratelimit_is_paced_within_the_bucket_without_a_429() {
    // Poisson arrivals at the key's own rate: its burst absorbs them.
    default_policy("ratelimit", INSTANT);
}

#[test]
fn bad_keys_cost_one_request_each() {
    // One request to learn that a key is revoked or out of quota, then none.
    let b = Bounds {
        requests: (1.0, 1.001),
        ..INSTANT
    };
    default_policy("auth", b);
    default_policy("quota", b);
}

#[test]
fn steady_is_the_ideal_but_for_a_rare_hang() {
    // 0.05% of requests hang: one late in the run costs the 60 s attempt timeout where
    // a perfect client retries at once (seed 2: 1.51).
    default_policy(
        "steady",
        Bounds {
            success: 1.0,
            requests: (0.995, 1.01),
            makespan: 1.6,
            mean: 1.15,
            p50: 1.05,
            p99: 1.1,
            ..ANY
        },
    );
}

#[test]
fn slow_is_the_ideal() {
    default_policy(
        "slow",
        Bounds {
            success: 1.0,
            requests: (1.0, 1.0),
            makespan: 1.01,
            mean: 1.05,
            p50: 1.05,
            p99: 1.02,
            ..ANY
        },
    );
}

#[test]
fn flaky_retries_as_often_as_a_perfect_client_but_after_backoff() {
    // The ideal retries a 5xx at once and waits exactly 1 s after a 429; the policy
    // backs off (500 ms base, full jitter): the mean is 12–19 times the ideal's 69 ms
    // and the p99 5.5–7.4 times its 1 s. A stretched wait breaks the p99 bound.
    default_policy(
        "flaky",
        Bounds {
            success: 0.995,
            requests: (0.98, 1.02),
            makespan: 1.05,
            mean: 22.0,
            p99: 8.0,
            ..ANY
        },
    );
}

#[test]
fn work_done_faults_cost_one_backoff_and_one_replay() {
    // A reset or broken body after the work was done: the keyed retry gets the stored
    // success. The ideal fetches it at once; the policy after one backoff (≤ 500 ms).
    let b = Bounds {
        success: 1.0,
        requests: (0.97, 1.01),
        makespan: 1.01,
        p99_ms: 500.0,
        ..ANY
    };
    for name in ["reset", "malformed", "stream-cut"] {
        default_policy(name, b);
    }
}

#[test]
fn hang_costs_the_attempt_timeout() {
    // 30% of first attempts never answer. A perfect client knows an instant answer is
    // overdue at once; the policy waits its 60 s attempt timeout, queueing the calls
    // behind (makespan 4.0–4.3 times the ideal), and its breaker fails about 3%.
    default_policy(
        "hang",
        Bounds {
            success: 0.96,
            requests: (0.95, 1.0),
            makespan: 4.5,
            ..ANY
        },
    );
}

#[test]
fn brownout_retries_the_tail_a_perfect_client_waits_for() {
    // The ideal waits for every slow answer (median 10 s, a tail past the 60 s attempt
    // timeout); the policy times the tail out and retries: a few more requests, a
    // later end (1.22–1.24) and latencies below the ideal's.
    default_policy(
        "brownout",
        Bounds {
            success: 0.985,
            requests: (1.0, 1.06),
            makespan: 1.3,
            mean: 1.0,
            p50: 1.0,
            p99: 1.05,
            ..ANY
        },
    );
}

#[test]
fn provider_failover_is_near_the_ideal() {
    // The ideal moves every call to the secondary the instant the primary goes down;
    // the policy needs its breaker to learn it (a few hundred 503s, 1% more requests).
    default_policy(
        "provider-failover",
        Bounds {
            success: 0.999,
            requests: (1.0, 1.02),
            makespan: 1.03,
            mean: 1.1,
            p50: 1.1,
            p99: 1.12,
            ..ANY
        },
    );
}

#[test]
fn quota_exhausted_key_is_the_ideal() {
    default_policy(
        "quota-exhausted-key",
        Bounds {
            success: 1.0,
            requests: (0.995, 1.01),
            makespan: 1.02,
            mean: 1.05,
            p50: 1.06,
            p99: 1.08,
            ..ANY
        },
    );
}

#[test]
fn ratelimit_storm_waits_out_hints_without_extra_requests() {
    // 15% of requests get a 429 with a 1–4 s hint. Requests stay at the ideal and the
    // tail with it; the median is twice the ideal's: a random 429 cools its key down
    // for every call, where the ideal only delays the call it hit.
    default_policy(
        "ratelimit-storm",
        Bounds {
            success: 0.999,
            requests: (0.99, 1.02),
            makespan: 1.05,
            mean: 1.65,
            p50: 2.15,
            p99: 1.1,
            ..ANY
        },
    );
}

/// Issue 12, case 1: 200 calls at once against 600 requests a minute with a burst of
/// 20; the ideal is exactly 18 s.
#[test]
fn a_burst_is_paced_to_the_bucket() {
    let mut s = scenario("ratelimit");
    s.load.calls = 200;
    s.load.concurrency = 200;
    s.load.arrival = Arrival::Closed;
    s.endpoints[0].limits = Some(ServerLimits {
        requests_per_minute: Some(600),
        request_burst: Some(20),
        ..ServerLimits::default()
    });
    let reports = check(
        &s,
        &Policy::standard(),
        Bounds {
            success: 1.0,
            requests: (1.0, 1.05),
            makespan: 1.1,
            mean: 1.1,
            p50: 1.1,
            p99: 1.1,
            ..ANY
        },
    );
    assert!(reports.iter().all(|r| r.ideal.makespan_s == 18.0));
}

/// The outage scenario's window: 30 s of 503s from 20 s.
const OUTAGE: Duration = Duration::from_secs(30);

#[test]
fn outage_the_standard_preset_fails_fast_where_a_perfect_client_holds() {
    // By design the standard preset does not hold through an open breaker: calls
    // arriving in the window fail at once (breaker_open), about 40%, which a holding
    // client serves. Their latency is a small fraction of the ideal's holding time.
    let reports = default_policy(
        "outage",
        Bounds {
            success: 0.55,
            requests: (0.55, 0.7),
            makespan: 1.02,
            mean: 0.1,
            p99: 0.1,
            ..ANY
        },
    );
    for r in &reports {
        assert_eq!(r.ideal.success_rate, 1.0, "seed {}", r.seed);
        assert!(r.success_rate < 0.65, "seed {}: {}", r.seed, r.success_rate);
        let reasons: Vec<_> = r.give_ups.keys().collect();
        assert_eq!(reasons, ["breaker_open"], "seed {}", r.seed);
    }
}

#[test]
fn outage_the_batch_preset_holds_and_serves_every_call() {
    // The batch preset holds while the breaker is open, up to max_hold; the default
    // 30 s equals the window, so calls held from its start would stop just as it ends:
    // a minute waits it out. Held calls go out on the breaker's probes after the window
    // (it reopens for 5 s, then longer), where the ideal sends them the instant it
    // ends: mean latency about twice the ideal's, p99 1.45 times.
    let mut batch = Policy::batch();
    batch.retry.max_hold = OUTAGE * 2;
    check(
        &scenario("outage"),
        &batch,
        Bounds {
            success: 1.0,
            requests: (1.0, 1.03),
            makespan: 1.02,
            mean: 2.2,
            p99: 1.6,
            ..ANY
        },
    );
}
