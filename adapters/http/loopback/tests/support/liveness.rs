//! Liveness on loopback, generic over the adapter: a call that could succeed within its
//! deadline does, and no later than the server allows (issue 12's measured cases).
//! Bounds on waits carry a scheduling allowance; the exact instants are asserted in
//! the core's virtual-time tests.

use std::time::{Duration, Instant};

use steadfast_core::policy::Policy;
use steadfast_http::{EndpointDef, GiveUpReason, Provider};
use steadfast_mock::Fault;

use super::tap::Tap;
use super::*;

/// What the operating system may add to a wait on a loaded machine.
const SCHEDULING: Duration = Duration::from_millis(250);

/// One endpoint on the standard preset, with its jitter (what a new user gets).
fn standard(endpoint: EndpointDef) -> Build {
    Build::new(endpoint).policy(|p| *p = Policy::default())
}

/// [`standard`] with backoffs of milliseconds (the budget and jitter unchanged).
fn standard_quick(endpoint: EndpointDef, seed: u64) -> Build {
    standard(endpoint).seed(seed).policy(|p| {
        p.backoff.base = Duration::from_millis(5);
        p.backoff.cap = Duration::from_millis(20);
    })
}

/// An endpoint through `tap` to its server.
fn tapped(tap: &Tap) -> EndpointDef {
    EndpointDef::new(tap.base_url(), Provider::OpenAi, "sk-test-key-one")
}

/// Runs `n` calls of `c` at once, each on its own thread; how each ended (`Ok` or the
/// give-up reason).
fn burst<H: Harness>(c: &H::Client, n: usize) -> Vec<Result<Reply, GiveUpReason>>
where
    H::Client: Sync,
{
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| s.spawn(move || H::chat(c, ask(&format!("burst {i}"))).map_err(|e| e.reason)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("call thread"))
            .collect()
    })
}

/// Case 1: 200 calls at once on the standard preset against 600 a minute with a burst
/// of 20 all succeed: a first wave of 200 (no rate is configured) and one paced retry
/// each for the 180 refused; none goes out before the server allows.
pub fn a_burst_is_paced_instead_of_failing<H: Harness>()
where
    H::Client: Sync,
{
    let server = mock_with(|c| {
        c.scenario = steadfast_mock::builtin::scenario("ratelimit").expect("a built-in");
        c.knobs.rpm = Some(600);
        c.knobs.rate_burst = Some(20);
    });
    let c = H::build(standard(openai(&server)));
    let started = Instant::now();
    let results = burst::<H>(&c, 200);
    let took = started.elapsed();
    let failed: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} failed, first: {:?}",
        failed.len(),
        failed.first()
    );
    let stats = server.stats();
    eprintln!(
        "200/200 in {took:?} ({:.2}× the ideal 18 s), {} requests, {} early",
        took.as_secs_f64() / 18.0,
        stats.total_requests,
        stats.early
    );
    assert!(
        stats.total_requests <= 420,
        "{} requests",
        stats.total_requests
    );
    assert_eq!(stats.early, 0, "a request went out before its hint");
}

/// Case 2: a bucket of 60 a minute drained by another client: a fresh client's call
/// is told a wait under a second (`retry-after-ms`, with `reset` near 59 s) and its
/// retry reaches the server within 1.5× that wait, not at the reset.
pub fn a_drained_window_is_retried_at_the_hint_not_at_the_reset<H: Harness>()
where
    H::Client: Sync,
{
    let server = mock_with(|c| {
        c.scenario = steadfast_mock::builtin::scenario("ratelimit").expect("a built-in");
        c.knobs.rpm = Some(60);
    });
    let drainer = H::build(standard(openai(&server)).seed(SEED + 1));
    let drained = burst::<H>(&drainer, 60);
    assert!(drained.iter().all(Result::is_ok));
    let tap = Tap::start(server.addr());
    let c = H::build(standard(tapped(&tap)).seed(SEED + 2));
    let r = H::chat(&c, ask("after the drain")).expect("served after the hint");
    assert_eq!(r.attempts, 2);
    let a = tap.arrivals();
    let gap = a[1].duration_since(a[0]);
    eprintln!("retried {gap:?} after a hint of at most 1 s (the reset said ~59 s)");
    assert!(gap <= Duration::from_millis(1_500) + SCHEDULING, "{gap:?}");
    assert_eq!(server.stats().early, 0);
}

/// Case 3: alternating `retry-after: 1` and `retry-after-ms: 300` on one 429 per call:
/// each retry waits its hint (plus at most 5 %), not the backoff.
pub fn alternating_hints_are_waited_exactly<H: Harness>() {
    let server = mock("ok");
    let tap = Tap::start(server.addr());
    let c = H::build(standard(tapped(&tap)).policy(|p| p.backoff.base = Duration::from_secs(5)));
    let hints: Vec<Duration> = (0..6)
        .map(|i| Duration::from_millis(if i % 2 == 0 { 1_000 } else { 300 }))
        .collect();
    for (i, hint) in hints.iter().enumerate() {
        let fault = if hint.as_millis() == 1_000 {
            Fault::status_retry_after(429, "1")
        } else {
            status_retry_after_ms(429, "300")
        };
        server.push_faults(&[fault]);
        let r = H::chat(&c, ask(&format!("call {i}"))).expect("served after the hint");
        assert_eq!(r.attempts, 2);
    }
    let a = tap.arrivals();
    let mut waited = Duration::ZERO;
    for (i, hint) in hints.iter().enumerate() {
        let gap = a[2 * i + 1].duration_since(a[2 * i]);
        assert!(gap >= *hint, "call {i}: {gap:?} before its hint {hint:?}");
        assert!(
            gap <= hint.mul_f64(1.05) + SCHEDULING,
            "call {i}: {gap:?} for {hint:?}"
        );
        waited += gap;
    }
    let sum: Duration = hints.iter().sum();
    eprintln!(
        "waited {waited:?} for hints summing to {sum:?} ({:.3}×)",
        waited.as_secs_f64() / sum.as_secs_f64()
    );
}

/// Case 4: fresh clients whose one call meets failures get every configured attempt:
/// never `BudgetExhausted`, however close their jittered backoffs fall.
pub fn a_fresh_client_always_gets_its_attempts<H: Harness>()
where
    H::Client: Sync,
{
    // Against a refused port: 4 attempts and RetriesExhausted, 1 000 times.
    let url = format!("http://127.0.0.1:{}", dead_port());
    std::thread::scope(|s| {
        for t in 0..10u64 {
            let url = url.clone();
            s.spawn(move || {
                for n in 0..100u64 {
                    let e = EndpointDef::new(url.clone(), Provider::OpenAi, "sk-x");
                    let c = H::build(standard_quick(e, SEED ^ (t * 100 + n)));
                    let e = H::chat(&c, ask("x")).expect_err("nothing listens");
                    assert_eq!((e.reason, e.attempts), (GiveUpReason::RetriesExhausted, 4));
                }
            });
        }
    });
    // Against a server answering 503, 503, 200: every call succeeds on its third.
    let server = mock("ok");
    for n in 0..100u64 {
        let c = H::build(standard_quick(openai(&server), SEED ^ (1_000 + n)));
        server.push_faults(&[status_body(503, "{}"), status_body(503, "{}")]);
        let r = H::chat(&c, ask("x")).expect("the third attempt succeeds");
        assert_eq!(r.attempts, 3, "client {n}");
    }
}
