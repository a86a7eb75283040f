//! The ideal on scenarios small enough to compute by hand.

use core::time::Duration;

use steadfast_core::time::Timestamp;
use steadfast_upstream::Scenario;

use super::Ideal;
use super::schedule::{Plan, schedule};

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Calls `0, 1, … n − 1` seconds from the start.
fn every_second(n: u64) -> Vec<Timestamp> {
    (0..n).map(Timestamp::from_secs).collect()
}

fn sent_at(p: &Plan) -> Option<Duration> {
    p.sent.map(|(t, _, _)| Duration::from_nanos(t.as_nanos()))
}

const ONE: &str = r#"
[load]
concurrency = 100
[[endpoints]]
name = "a"
latency = { fixed = "200ms" }
error_latency = { fixed = "10ms" }
"#;

#[test]
fn one_endpoint_without_faults_needs_one_request_per_call() {
    let ideal = Ideal::compute(&scenario(ONE), &every_second(10), None);
    assert_eq!(ideal.success_rate, 1.0);
    assert_eq!(ideal.upstream_requests, 10.0);
    assert_eq!(ideal.makespan_s, 9.2);
    let l = ideal.latency_ms;
    assert_eq!((l.mean, l.p50, l.p95, l.p99), (200.0, 200.0, 200.0, 200.0));
}

#[test]
fn a_failure_rate_costs_one_over_one_minus_p_requests() {
    let text = format!("{ONE}[endpoints.faults]\nrate_5xx = 0.2\n");
    let ideal = Ideal::compute(&scenario(&text), &every_second(100), None);
    assert!((ideal.upstream_requests - 125.0).abs() < 0.05, "{ideal:?}");
    // Each failure adds its 10 ms answer: 0.25 failures per call on average.
    assert!((ideal.latency_ms.mean - 202.5).abs() < 0.05, "{ideal:?}");
    assert_eq!(ideal.latency_ms.p50, 200.0);
}

const BURST: &str = r#"
[load]
calls = 200
arrival = "closed"
concurrency = 200
[[endpoints]]
name = "a"
latency = { fixed = "0s" }
[endpoints.limits]
requests_per_minute = 600
request_burst = 20
"#;

#[test]
fn a_bucket_paces_a_burst_exactly() {
    let s = scenario(BURST);
    let arrivals = vec![Timestamp::ZERO; 200];
    let plans = schedule(&s, &arrivals, None).plans;
    // Twenty at once, then one every 100 ms: the 200th at 18 s.
    for (i, p) in plans.iter().enumerate() {
        let want = Duration::from_millis(100 * (i.saturating_sub(19)) as u64);
        assert_eq!(sent_at(p), Some(want), "call {i}");
    }
    let ideal = Ideal::compute(&s, &arrivals, None);
    assert_eq!(ideal.makespan_s, 18.0);
    assert_eq!(ideal.upstream_requests, 200.0);
    assert_eq!(ideal.latency_ms.p50, 8000.0);
}

#[test]
fn a_token_bucket_paces_by_the_calls_tokens() {
    // 6000 tokens a minute and 500 a call: twelve at once, then one every 5 s.
    let text = BURST.replace(
        "requests_per_minute = 600\nrequest_burst = 20",
        "tokens_per_minute = 6000",
    );
    let mut s = scenario(&text);
    s.load.calls = 20;
    let ideal = Ideal::compute(&s, &[Timestamp::ZERO; 20], None);
    assert_eq!(ideal.makespan_s, 40.0);
}

/// One endpoint answering in 100 ms, with an outage window of `kind`.
fn with_outage(start: &str, end: &str, kind: &str) -> String {
    format!(
        "[load]\nconcurrency = 100\n[[endpoints]]\nname = \"a\"\nlatency = {{ fixed = \"100ms\" }}\n\
         [[endpoints.outages]]\nstart = \"{start}\"\nend = \"{end}\"\nkind = \"{kind}\"\n"
    )
}

fn outage() -> String {
    with_outage("3s", "6s", "status")
}

#[test]
fn no_request_goes_into_a_full_outage() {
    let s = scenario(&outage());
    let plans = schedule(&s, &every_second(10), None).plans;
    let window = Duration::from_secs(3)..Duration::from_secs(6);
    for (i, p) in plans.iter().enumerate() {
        let at = sent_at(p).unwrap_or_else(|| panic!("call {i} not sent"));
        assert!(!window.contains(&at), "call {i} sent at {at:?}");
    }
    assert_eq!(sent_at(&plans[3]), Some(Duration::from_secs(6)));
    let ideal = Ideal::compute(&s, &every_second(10), None);
    assert_eq!(ideal.success_rate, 1.0);
    assert_eq!(ideal.makespan_s, 9.1);
    // Ten answers of 100 ms, and waits of 3, 2 and 1 s.
    assert_eq!(ideal.latency_ms.mean, 700.0);
}

#[test]
fn a_call_that_cannot_be_sent_within_its_deadline_is_not_sent() {
    let s = scenario(&outage());
    let ideal = Ideal::compute(&s, &every_second(10), Some(Duration::from_secs(2)));
    // The calls of 3 s and 4 s would wait until 6 s: too late for an answer by 5 s
    // and 6 s.
    assert_eq!(ideal.success_rate, 0.8);
    assert_eq!(ideal.upstream_requests, 8.0);
}

/// `a`, down for its first 10 s, and `b`, lower in priority, answering in `b_latency`.
fn failover(b_latency: &str) -> Scenario {
    let b = format!(
        "[[endpoints]]\nname = \"b\"\npriority = 1\nlatency = {{ fixed = \"{b_latency}\" }}\n"
    );
    scenario(&(with_outage("0s", "10s", "timeout") + &b))
}

fn endpoints(s: &Scenario, n: u64) -> Vec<usize> {
    let plans = schedule(s, &every_second(n), None).plans;
    plans
        .iter()
        .map(|p| p.sent.map_or(99, |(_, e, _)| e))
        .collect()
}

#[test]
fn a_call_fails_over_or_waits_whichever_answers_sooner() {
    let s = failover("1s");
    // b answers within 1 s; a only after its outage, at 10.1 s.
    assert_eq!(endpoints(&s, 12), [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0]);
    let ideal = Ideal::compute(&s, &every_second(12), None);
    assert_eq!(ideal.latency_ms.p99, 1000.0);
    // With b at 5 s, waiting for a is sooner from 6 s on (10.1 s < 11 s).
    let slow = failover("5s");
    assert_eq!(endpoints(&slow, 12), [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
}

const KEYS: &str = r#"
[load]
concurrency = 100
[[endpoints]]
name = "a"
keys = 2
latency = { fixed = "0s" }
[[endpoints.bad_keys]]
key = 0
kind = "revoked"
from = "5s"
"#;

#[test]
fn bad_keys_are_never_used() {
    let s = scenario(KEYS);
    let plans = schedule(&s, &every_second(10), None).plans;
    let keys: Vec<usize> = plans.iter().map(|p| p.sent.map_or(9, |x| x.2)).collect();
    assert_eq!(keys, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
    let both = format!("{KEYS}[[endpoints.bad_keys]]\nkey = 1\nkind = \"quota_exhausted\"\n");
    let ideal = Ideal::compute(&scenario(&both), &every_second(10), None);
    assert_eq!((ideal.success_rate, ideal.upstream_requests), (0.5, 5.0));
}

#[test]
fn a_partial_outage_doubles_the_requests_at_half_rate() {
    let text = outage() + "rate = 0.5\n";
    let ideal = Ideal::compute(&scenario(&text), &every_second(10), None);
    // Three calls in the window need two requests each on average.
    assert!((ideal.upstream_requests - 13.0).abs() < 1e-3, "{ideal:?}");
}

#[test]
fn latency_quantiles_follow_the_distribution() {
    let text = ONE.replace(
        "{ fixed = \"200ms\" }",
        "{ lognormal = { median = \"800ms\", sigma = 0.5 } }",
    );
    let ideal = Ideal::compute(&scenario(&text), &every_second(100), None);
    let l = ideal.latency_ms;
    assert!((l.mean - 906.5).abs() < 0.1, "{l:?}");
    assert!((l.p50 - 800.0).abs() < 5.0, "{l:?}");
    // 800 ms × e^(0.5 × 2.326) = 2.56 s, to an atom's width.
    assert!((l.p99 / 2559.0 - 1.0).abs() < 0.03, "{l:?}");
}

#[test]
fn the_flaky_builtin_needs_the_decay_models_expected_requests() {
    let s = crate::builtin::scenario("flaky").expect("flaky");
    let ideal = Ideal::of_scenario(&s, 1, Some(Duration::from_secs(180)));
    // Per call: 1 + 0.03 (a reset's replay) + 0.27 × (1 + 0.015 + 0.135 × (1 + …)).
    assert!((ideal.upstream_requests - 1343.3).abs() < 0.1, "{ideal:?}");
    assert_eq!(
        ideal,
        Ideal::of_scenario(&s, 1, Some(Duration::from_secs(180)))
    );
}
