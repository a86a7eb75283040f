//! Regression tests for bugs the fuzz targets and the operation proptest found in the
//! core, each fixed: they keep the fixes in place.
//!
//! The reproducers are also committed under `fuzz/regressions/<target>/`.

use core::time::Duration;
use std::sync::mpsc;

use steadfast_core::engine::{EndpointSpec, Engine};
use steadfast_core::hints::{Hints, parse_http_date_at};
use steadfast_core::limiter::LimiterConfig;
use steadfast_core::outcome::{Outcome, Response};
use steadfast_core::policy::Policy;
use steadfast_core::retry::{Attempt, Call, CallEvent, Decision};
use steadfast_core::time::Timestamp;
use steadfast_tests::harness::{Checks, Harness};
use steadfast_tests::ops::Scenario;

fn at(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

/// No jitter anywhere, so every instant is exact.
fn exact() -> Policy {
    Policy::default().without_jitter()
}

fn engine(policy: Policy) -> Engine {
    Engine::new(policy, &[EndpointSpec::new(0, 1)], [7; 32]).unwrap()
}

fn send(d: Decision) -> Attempt {
    match d {
        Decision::Send(a) => a,
        other => panic!("expected Send, got {other:?}"),
    }
}

/// The instant of the last `RetryScheduled` event: the call's own "not before".
fn retry_at(call: &mut Call) -> Timestamp {
    let mut until = None;
    while let Some(e) = call.poll_event() {
        if let CallEvent::RetryScheduled { until: u, .. } = e {
            until = Some(u);
        }
    }
    until.expect("a retry was scheduled")
}

fn with_headers(status: u16, headers: &[(&str, &str)]) -> Outcome {
    let hints = Hints::from_headers(headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())), 0);
    Outcome::Response(Response::new(status).with_hints(hints))
}

/// `Engine::admit` honours the call's `Avoid` only for endpoint-scope failures. A
/// retryable request-scope failure (a 4xx with `x-should-retry: true`) is retried on
/// the same key at once, without the backoff the call scheduled (`SingleEndpoint`
/// waits it out). Found by `engine_ops` / the ops proptest (`AvoidIgnored`).
#[test]

fn a_retryable_request_failure_backs_off_before_the_same_key() {
    let mut engine = engine(exact());
    let mut call = engine.start_call(at(0), None);
    let a = send(call.poll_decision(at(0), &mut engine));
    let answer = with_headers(400, &[("x-should-retry", "true")]);
    call.on_outcome(at(100), a.id, answer).unwrap();
    let decision = call.poll_decision(at(100), &mut engine);
    let until = retry_at(&mut call);
    assert_eq!(until, at(600), "the call plans the 500 ms base backoff");
    assert_eq!(
        decision,
        Decision::Wait(until),
        "the only key is ruled out until the backoff ends"
    );
}

/// The same seam for a throttle: the key's pool cooldown is the bare hint, so the
/// positive hint jitter (and a backoff longer than the hint) the call planned is
/// skipped: many clients told the same instant all come back at exactly that instant.
#[test]

fn a_throttled_key_is_not_reused_before_the_calls_jittered_retry_instant() {
    let mut p = Policy::default();
    p.retry.hint_jitter = 0.5;
    p.retry.hint_jitter_max = Duration::from_secs(1);
    let mut engine = engine(p);
    let mut call = engine.start_call(at(0), None);
    let a = send(call.poll_decision(at(0), &mut engine));
    call.on_outcome(at(100), a.id, with_headers(429, &[("retry-after", "2")]))
        .unwrap();
    let Decision::Wait(first) = call.poll_decision(at(100), &mut engine) else {
        panic!("a throttled call waits");
    };
    let until = retry_at(&mut call);
    assert!(
        until > at(2_100),
        "seed 7 draws a positive jitter: {until:?}"
    );
    // The driver wakes at the instant it was given; the call must not go before its own.
    let decision = call.poll_decision(first, &mut engine);
    assert!(
        first >= until || !matches!(decision, Decision::Send(_)),
        "sent at {first:?}, before the call's own retry instant {until:?}"
    );
}

/// `poll_timeout` reports the call's last `Avoid` instant (or the clock) instead of
/// the instant of the `Wait` it just returned. While a first attempt waits on the rate
/// limiter it says "now", so a driver that sleeps until `poll_timeout` spins.
#[test]

fn poll_timeout_is_the_instant_of_the_wait() {
    let mut p = exact();
    p.limiter = LimiterConfig::default();
    p.limiter.requests = Some(1);
    p.limiter.burst = 0.0;
    let mut engine = engine(p);
    let mut first = engine.start_call(at(0), None);
    let a = send(first.poll_decision(at(0), &mut engine));
    first
        .on_outcome(at(10), a.id, Outcome::Response(Response::new(200)))
        .unwrap();
    assert!(first.poll_decision(at(10), &mut engine) != Decision::Wait(at(10)));
    let mut second = engine.start_call(at(10), None);
    let Decision::Wait(until) = second.poll_decision(at(10), &mut engine) else {
        panic!("the limiter admits one request a minute");
    };
    assert!(until > at(10));
    assert_eq!(second.poll_timeout(), Some(until));
}

/// After a backoff, a wait for something else (here the rate limiter) leaves
/// `poll_timeout` at the backoff's end: once the driver polls later than that, it is
/// in the past.
#[test]

fn poll_timeout_is_never_in_the_past_while_waiting() {
    let mut p = exact();
    p.limiter.requests = Some(1);
    p.limiter.burst = 0.0;
    let mut engine = engine(p);
    let mut call = engine.start_call(at(0), None);
    let a = send(call.poll_decision(at(0), &mut engine));
    call.on_outcome(at(100), a.id, Outcome::Response(Response::new(503)))
        .unwrap();
    let Decision::Wait(backoff_end) = call.poll_decision(at(100), &mut engine) else {
        panic!("a 503 backs off");
    };
    assert_eq!(backoff_end, at(600));
    // The limiter (1 request a minute) holds the retry back.
    let Decision::Wait(limiter_end) = call.poll_decision(at(600), &mut engine) else {
        panic!("the limiter holds the retry");
    };
    assert!(limiter_end > at(1_000));
    let Decision::Wait(_) = call.poll_decision(at(1_000), &mut engine) else {
        panic!("still held");
    };
    let timeout = call.poll_timeout().unwrap();
    assert!(
        timeout >= at(1_000),
        "poll_timeout {timeout:?} is in the past at 1 s"
    );
}

/// `hints::year_of` (behind two-digit RFC 850 years) compares against the unclamped
/// wall clock: past year ~4·10^9 it never ends, from year 10 000 on it is slow. Found
/// by `ratelimit_headers` (a libFuzzer timeout); reproducer in
/// `fuzz/regressions/retry_after/`.
#[test]

fn an_rfc850_date_against_a_huge_wall_clock_returns() {
    let file = regression("retry_after", "hang-rfc850-huge-wall-clock");
    let (now, value) = file.split_at(8);
    let now = u64::from_le_bytes(now.try_into().unwrap());
    assert_eq!(now, u64::MAX);
    let value = value.to_vec();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let got = parse_http_date_at(&value, now);
        let _ = tx.send(got);
    });
    // A correct parse takes microseconds; the thread is left spinning if it hangs.
    let got = rx.recv_timeout(Duration::from_secs(5));
    assert!(got.is_ok(), "parse_http_date_at did not return within 5 s");
}

/// The same through the public header parser, which an adapter calls with its wall
/// clock.
#[test]

fn a_date_header_against_a_huge_wall_clock_returns() {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let headers = [(
            b"retry-after".as_slice(),
            b"Sunday, 06-Nov-94 08:49:37 GMT".as_slice(),
        )];
        let _ = tx.send(Hints::from_headers(headers, 1 << 60));
    });
    assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok());
}

fn regression(target: &str, name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../fuzz/regressions/{target}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The smallest `engine_ops` inputs the explorer found for each invariant above (one
/// file per invariant under `fuzz/regressions/engine_ops/`), run with every invariant
/// checked.
#[test]

fn the_engine_ops_reproducers_pass_every_check() {
    let dir = format!(
        "{}/../fuzz/regressions/engine_ops",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert!(names.len() >= 3, "{names:?}");
    let mut broken = Vec::new();
    for name in names {
        let scenario = Scenario::from_bytes(&regression("engine_ops", &name));
        if let Err(v) = Harness::run(&scenario, Checks::default()) {
            broken.push(format!("{name}: {v}"));
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

/// A call's own `RetryConfig` is not validated (`Engine::start_call_with`,
/// `Call::new`), and a NaN `hint_jitter` reaches `Duration::mul_f64`, which panics, on
/// the first hinted retry. The budget, breaker and limiter promise that no config makes
/// them panic; the retry sequence does not. Found while auditing the harness's
/// per-call rules (`CallRules` always builds valid ones).
#[test]

fn an_unvalidated_nan_hint_jitter_does_not_panic() {
    let mut engine = engine(Policy::default());
    let mut rules = Policy::default().retry;
    rules.hint_jitter = f64::NAN;
    assert!(rules.validate().is_err());
    let mut call = engine.start_call_with(at(0), &rules, None);
    let a = send(call.poll_decision(at(0), &mut engine));
    call.on_outcome(at(10), a.id, with_headers(429, &[("retry-after", "2")]))
        .unwrap();
    let decided = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        call.poll_decision(at(10), &mut engine)
    }));
    assert!(decided.is_ok(), "poll_decision panicked");
}
