#![allow(clippy::arithmetic_side_effects)]

use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::budget::BudgetConfig;
use crate::outcome::{Response, Transport};
use crate::policy::Policy;
use crate::rng::{self, CoreRng};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

/// A policy with no jitter anywhere, so every instant is exact.
fn exact_policy() -> Policy {
    Policy::default().without_jitter()
}

fn gate(policy: &Policy, seed: u64) -> SingleEndpoint<CoreRng> {
    SingleEndpoint::new(policy.classify.clone(), &policy.budget, rng::from_u64(seed))
}

fn call(policy: &Policy, now: Timestamp) -> Call {
    Call::new(
        now,
        &policy.retry,
        &policy.backoff,
        IdempotencyKey::from_u128(42),
    )
}

fn status(code: u16) -> Outcome {
    Outcome::Response(Response::new(code))
}

fn throttled(code: u16, retry_after: Duration) -> Outcome {
    let mut r = Response::new(code);
    r.hints.retry_after = Some(retry_after);
    Outcome::Response(r)
}

fn expect_send(d: Decision) -> Attempt {
    match d {
        Decision::Send(a) => a,
        other => panic!("expected Send, got {other:?}"),
    }
}

fn expect_done(d: Decision) -> Finish {
    match d {
        Decision::Done(f) => f,
        other => panic!("expected Done, got {other:?}"),
    }
}

fn reason(f: Finish) -> GiveUpReason {
    match f {
        Finish::GaveUp(g) => g.reason,
        Finish::Success { .. } => panic!("expected a give-up, got {f:?}"),
    }
}

#[test]
fn backoff_waits_are_exact_and_success_ends_the_call() {
    let p = exact_policy();
    let mut g = gate(&p, 1);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    assert_eq!(a1.id, AttemptId(1));
    assert_eq!(a1.timeout, Duration::from_secs(60));
    assert_eq!(a1.deadline, at(60_000));
    assert_eq!(c.poll_decision(at(10), &mut g), Decision::Wait(at(60_000)));
    c.on_outcome(at(100), a1.id, status(529)).unwrap();
    // First retry after base = 500 ms, measured from the failure.
    assert_eq!(c.poll_decision(at(100), &mut g), Decision::Wait(at(600)));
    assert_eq!(c.poll_timeout(), Some(at(600)));
    assert_eq!(c.poll_decision(at(599), &mut g), Decision::Wait(at(600)));
    let a2 = expect_send(c.poll_decision(at(600), &mut g));
    assert_eq!(a2.idempotency_key, a1.idempotency_key);
    c.on_outcome(at(700), a2.id, status(503)).unwrap();
    // Second retry after base × factor = 1 s.
    assert_eq!(c.poll_decision(at(700), &mut g), Decision::Wait(at(1_700)));
    let a3 = expect_send(c.poll_decision(at(1_700), &mut g));
    c.on_outcome(at(1_800), a3.id, status(200)).unwrap();
    let f = expect_done(c.poll_decision(at(1_800), &mut g));
    assert_eq!(
        f,
        Finish::Success {
            attempts: 3,
            target: Target::default()
        }
    );
    assert_eq!(c.poll_timeout(), None);
}

#[test]
fn retry_after_is_honoured_exactly_and_never_early() {
    let p = exact_policy();
    let mut g = gate(&p, 2);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    c.on_outcome(at(50), a1.id, throttled(429, Duration::from_secs(2)))
        .unwrap();
    // The hint, 2 s from the response.
    assert_eq!(c.poll_decision(at(50), &mut g), Decision::Wait(at(2_050)));
    assert_eq!(
        c.poll_decision(at(2_049), &mut g),
        Decision::Wait(at(2_050))
    );
    expect_send(c.poll_decision(at(2_050), &mut g));
}

#[test]
fn a_short_hint_shortens_the_wait_below_the_backoff() {
    let mut p = exact_policy();
    p.backoff.base = Duration::from_secs(5);
    let mut g = gate(&p, 2);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    c.on_outcome(at(10), a1.id, throttled(429, ms(300)))
        .unwrap();
    assert_eq!(c.poll_decision(at(10), &mut g), Decision::Wait(at(310)));
    let a2 = expect_send(c.poll_decision(at(310), &mut g));
    // Without a hint the backoff applies; a zero hint asks for nothing.
    c.on_outcome(at(320), a2.id, throttled(503, Duration::ZERO))
        .unwrap();
    assert_eq!(c.poll_decision(at(320), &mut g), Decision::Wait(at(10_320)));
}

#[test]
fn a_hint_of_exactly_max_retry_after_waits_and_one_nanosecond_more_gives_up() {
    let p = exact_policy();
    let max = p.retry.max_retry_after;
    let mut g = gate(&p, 2);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    c.on_outcome(at(0), a1.id, throttled(429, max)).unwrap();
    assert_eq!(
        c.poll_decision(at(0), &mut g),
        Decision::Wait(Timestamp::ZERO + max)
    );
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    let longer = max + Duration::from_nanos(1);
    c.on_outcome(at(0), a1.id, throttled(429, longer)).unwrap();
    assert_eq!(
        reason(expect_done(c.poll_decision(at(0), &mut g))),
        GiveUpReason::HintTooLong { hint: longer }
    );
}

#[test]
fn hint_jitter_is_positive_and_bounded() {
    let mut p = exact_policy();
    p.retry.hint_jitter = 0.1;
    for seed in 0..50 {
        let mut g = gate(&p, seed);
        let mut c = call(&p, at(0));
        let a1 = expect_send(c.poll_decision(at(0), &mut g));
        c.on_outcome(at(0), a1.id, throttled(429, Duration::from_secs(4)))
            .unwrap();
        let Decision::Wait(until) = c.poll_decision(at(0), &mut g) else {
            panic!("seed {seed}: expected a wait");
        };
        assert!(until >= at(4_000), "seed {seed}: {until} is early");
        assert!(until <= at(4_400), "seed {seed}: {until} is past 10 %");
    }
}

#[test]
fn a_hint_past_max_retry_after_gives_up_at_once() {
    let p = exact_policy();
    let mut g = gate(&p, 3);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    c.on_outcome(at(10), a1.id, throttled(429, Duration::from_secs(61)))
        .unwrap();
    let f = expect_done(c.poll_decision(at(10), &mut g));
    assert_eq!(
        reason(f),
        GiveUpReason::HintTooLong {
            hint: Duration::from_secs(61)
        }
    );
    assert_eq!(f.attempts(), 1);
}

#[test]
fn a_hint_past_the_deadline_gives_up_at_once() {
    let mut p = exact_policy();
    p.retry.deadline = Some(Duration::from_secs(10));
    let mut g = gate(&p, 4);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    c.on_outcome(at(1_000), a1.id, throttled(503, Duration::from_secs(9)))
        .unwrap();
    assert_eq!(
        reason(expect_done(c.poll_decision(at(1_000), &mut g))),
        GiveUpReason::HintTooLong {
            hint: Duration::from_secs(9)
        }
    );
}

#[test]
fn request_scope_failures_are_never_retried() {
    let p = exact_policy();
    for code in [400u16, 404, 413, 422, 501, 505] {
        let mut g = gate(&p, 5);
        let mut c = call(&p, at(0));
        let a1 = expect_send(c.poll_decision(at(0), &mut g));
        c.on_outcome(at(5), a1.id, status(code)).unwrap();
        let f = expect_done(c.poll_decision(at(5), &mut g));
        assert_eq!(reason(f), GiveUpReason::NotRetryable, "status {code}");
        let Finish::GaveUp(g) = f else { unreachable!() };
        assert_eq!(g.last_status, Some(code));
        assert_eq!(g.attempts, 1);
    }
}

#[test]
fn attempts_stop_at_max_attempts() {
    let p = exact_policy();
    let mut g = gate(&p, 6);
    let mut c = call(&p, at(0));
    let mut now = at(0);
    let mut sent = 0;
    let f = loop {
        match c.poll_decision(now, &mut g) {
            Decision::Send(a) => {
                sent += 1;
                now = now + ms(10);
                c.on_outcome(now, a.id, status(500)).unwrap();
            }
            Decision::Wait(t) => now = t,
            Decision::Done(f) => break f,
        }
    };
    assert_eq!(sent, 4);
    assert_eq!(reason(f), GiveUpReason::RetriesExhausted);
    assert_eq!(f.attempts(), 4);
}

#[test]
fn a_backoff_past_the_deadline_ends_the_call_without_sleeping() {
    let mut p = exact_policy();
    p.retry.deadline = Some(ms(1_200));
    let mut g = gate(&p, 7);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    c.on_outcome(at(100), a1.id, status(502)).unwrap();
    let a2 = expect_send(c.poll_decision(at(600), &mut g));
    // The attempt is cut to the time left: 1 200 − 600 ms.
    assert_eq!(a2.timeout, ms(600));
    c.on_outcome(at(700), a2.id, status(502)).unwrap();
    // The next wait (1 s) would end at 1 700 ms, past the deadline: give up now.
    assert_eq!(
        reason(expect_done(c.poll_decision(at(700), &mut g))),
        GiveUpReason::DeadlineExceeded
    );
}

#[test]
fn an_unreported_attempt_times_out_and_a_late_outcome_is_refused() {
    let mut p = exact_policy();
    p.retry.attempt_timeout = Duration::from_secs(2);
    let mut g = gate(&p, 8);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    assert_eq!(c.poll_timeout(), Some(at(2_000)));
    // Nothing reported by the deadline: counted as a timeout after sending.
    assert_eq!(
        c.poll_decision(at(2_000), &mut g),
        Decision::Wait(at(2_500))
    );
    assert_eq!(
        c.on_outcome(at(2_100), a1.id, status(200)),
        Err(UsageError::UnknownAttempt { id: a1.id })
    );
}

#[test]
fn a_failure_after_sending_is_not_retried_for_a_non_idempotent_call() {
    let mut p = exact_policy();
    p.retry.idempotent = false;
    let mut g = gate(&p, 9);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    let cut = Outcome::Transport(Transport::new(TransportKind::Reset, Phase::AfterSend));
    c.on_outcome(at(10), a1.id, cut).unwrap();
    assert_eq!(
        reason(expect_done(c.poll_decision(at(10), &mut g))),
        GiveUpReason::UnsafeToRetry
    );
    // Before sending, it is always safe.
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    let refused = Outcome::Transport(Transport::new(
        TransportKind::ConnectRefused,
        Phase::BeforeSend,
    ));
    c.on_outcome(at(10), a1.id, refused).unwrap();
    assert_eq!(c.poll_decision(at(10), &mut g), Decision::Wait(at(510)));
}

#[test]
fn a_bad_key_leaves_a_single_endpoint_with_no_usable_key() {
    let p = exact_policy();
    let mut g = gate(&p, 10);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    c.on_outcome(at(10), a1.id, status(401)).unwrap();
    assert_eq!(
        reason(expect_done(c.poll_decision(at(10), &mut g))),
        GiveUpReason::NoUsableKey
    );
}

#[test]
fn an_empty_budget_refuses_retries_but_not_first_attempts() {
    let mut p = exact_policy();
    p.budget = BudgetConfig {
        ratio: 0.0,
        min_per_sec: 0,
        ..BudgetConfig::default()
    };
    let mut g = gate(&p, 11);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    c.on_outcome(at(10), a1.id, status(500)).unwrap();
    assert_eq!(
        reason(expect_done(c.poll_decision(at(510), &mut g))),
        GiveUpReason::BudgetExhausted
    );
    let mut c = call(&p, at(600));
    expect_send(c.poll_decision(at(600), &mut g));
}

#[test]
fn cancel_releases_the_attempt_and_finishes() {
    let p = exact_policy();
    let mut g = gate(&p, 12);
    let mut c = call(&p, at(0));
    expect_send(c.poll_decision(at(0), &mut g));
    let f = c.cancel(at(5), &mut g);
    assert_eq!(reason(f), GiveUpReason::Cancelled);
    assert!(c.is_done());
    assert_eq!(c.poll_decision(at(6), &mut g), Decision::Done(f));
}

#[test]
fn streams_bound_only_the_first_event_by_the_deadline() {
    let p = Policy::streaming();
    let mut g = gate(&p, 13);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    assert_eq!(a1.first_event_timeout, Some(Duration::from_secs(20)));
    assert_eq!(a1.timeout, Duration::from_secs(600));
    assert_eq!(a1.deadline, at(20_000));
}

#[test]
fn time_going_backwards_is_clamped() {
    let p = exact_policy();
    let mut g = gate(&p, 14);
    let mut c = call(&p, at(1_000));
    let a1 = expect_send(c.poll_decision(at(1_000), &mut g));
    c.on_outcome(at(500), a1.id, status(500)).unwrap();
    // The outcome is taken as at 1 000 ms, so the retry is at 1 500 ms.
    assert_eq!(c.poll_decision(at(0), &mut g), Decision::Wait(at(1_500)));
}

#[test]
fn events_tell_the_story() {
    let p = exact_policy();
    let mut g = gate(&p, 15);
    let mut c = call(&p, at(0));
    let a1 = expect_send(c.poll_decision(at(0), &mut g));
    c.on_outcome(at(10), a1.id, status(503)).unwrap();
    let _ = c.poll_decision(at(10), &mut g);
    let mut kinds = Vec::new();
    while let Some(e) = c.poll_event() {
        kinds.push(e);
    }
    assert!(matches!(
        kinds.first(),
        Some(CallEvent::AttemptStarted {
            id: AttemptId(1),
            ..
        })
    ));
    assert!(matches!(
        kinds.get(1),
        Some(CallEvent::RetryScheduled { until, .. }) if *until == at(510)
    ));
}

// ---- properties -------------------------------------------------------------

/// One scripted answer from the fake upstream.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Status(u16),
    Hinted(u16, u64),
    Transport(TransportKind, bool),
    Silence,
}

fn answer() -> impl Strategy<Value = Answer> {
    let statuses = prop::sample::select(vec![
        200u16, 400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 501, 502, 503, 504, 505, 529,
    ]);
    let kinds = prop::sample::select(vec![
        TransportKind::Dns,
        TransportKind::ConnectRefused,
        TransportKind::ConnectTimeout,
        TransportKind::Tls,
        TransportKind::Timeout,
        TransportKind::Reset,
        TransportKind::BodyCut,
        TransportKind::Other,
    ]);
    prop_oneof![
        statuses.clone().prop_map(Answer::Status),
        (statuses, 0u64..90_000).prop_map(|(s, h)| Answer::Hinted(s, h)),
        (kinds, any::<bool>()).prop_map(|(k, after)| Answer::Transport(k, after)),
        Just(Answer::Silence),
    ]
}

fn to_outcome(a: Answer) -> Option<Outcome> {
    Some(match a {
        Answer::Status(s) => status(s),
        Answer::Hinted(s, h) => throttled(s, ms(h)),
        Answer::Transport(k, after) => Outcome::Transport(Transport::new(
            k,
            if after {
                Phase::AfterSend
            } else {
                Phase::BeforeSend
            },
        )),
        Answer::Silence => return None,
    })
}

/// What the harness saw, for the properties and the determinism check.
#[derive(Debug, PartialEq)]
struct Trace {
    decisions: Vec<(Timestamp, Decision)>,
    finish: Finish,
}

fn drive(policy: &Policy, seed: u64, script: &[(Answer, u64)], early_polls: bool) -> Trace {
    let mut g = gate(policy, seed);
    let start = at(1_000);
    let mut c = call(policy, start);
    let mut now = start;
    let mut decisions = Vec::new();
    let mut answers = script.iter().cycle();
    // Every wait the call asks for; the driver may poll early, the call must not send.
    let mut earliest_next: Option<Timestamp> = None;
    let mut hinted_from: Option<Timestamp> = None;
    let mut last_request_scope = false;
    for _ in 0..200 {
        let d = c.poll_decision(now, &mut g);
        decisions.push((now, d));
        match d {
            Decision::Send(a) => {
                assert!(
                    now < c.deadline(),
                    "seed {seed}: sent at {now}, deadline {}",
                    c.deadline()
                );
                assert!(
                    a.id.0 <= policy.retry.max_attempts,
                    "seed {seed}: attempt {} > max",
                    a.id.0
                );
                assert!(
                    !last_request_scope,
                    "seed {seed}: retried a request-scope failure"
                );
                if let Some(t) = hinted_from {
                    assert!(now >= t, "seed {seed}: sent at {now} before the hint {t}");
                }
                let (answer, latency) = *answers.next().unwrap();
                match to_outcome(answer) {
                    Some(o) => {
                        now = now + ms(latency);
                        c.on_outcome(now, a.id, o).unwrap();
                        let verdict = policy.classify.classify(&o);
                        last_request_scope = matches!(
                            verdict,
                            crate::classify::Verdict::Failure(f) if f.scope == Scope::Request
                        );
                        hinted_from = match o {
                            Outcome::Response(r) => r.hints.wait_hint(0).map(|h| now + h),
                            _ => None,
                        };
                    }
                    None => now = a.deadline,
                }
            }
            Decision::Wait(t) => {
                assert!(t >= now, "seed {seed}: wait into the past");
                // An early driver wakes once halfway before waking on time.
                let halfway = early_polls && earliest_next != Some(t) && t > now;
                earliest_next = Some(t);
                now = if halfway {
                    now + (t.saturating_duration_since(now) / 2)
                } else {
                    t
                };
            }
            Decision::Done(finish) => return Trace { decisions, finish },
        }
    }
    panic!("seed {seed}: the call did not finish in 200 steps");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn sequence_invariants_hold(
        seed in any::<u64>(),
        script in prop::collection::vec((answer(), 0u64..5_000), 1..12),
        early in any::<bool>(),
        attempts in 1u32..8,
        deadline_ms in prop::option::of(1u64..400_000),
    ) {
        let mut p = Policy::default();
        p.retry.max_attempts = attempts;
        p.retry.deadline = deadline_ms.map(ms);
        let t = drive(&p, seed, &script, early);
        prop_assert!(t.finish.attempts() <= attempts);
    }

    #[test]
    fn same_seed_same_trace(
        seed in any::<u64>(),
        script in prop::collection::vec((answer(), 0u64..5_000), 1..12),
    ) {
        let p = Policy::default();
        prop_assert_eq!(drive(&p, seed, &script, false), drive(&p, seed, &script, false));
    }
}

/// In a run where every attempt fails, the retries reaching the endpoint stay within the
/// budget's floor: with no successes to fund them, only `min_per_sec` per second.
#[test]
fn a_total_outage_is_not_amplified_past_the_budget() {
    let mut p = exact_policy();
    p.budget = BudgetConfig {
        ratio: 0.2,
        min_per_sec: 2,
        ..BudgetConfig::default()
    };
    p.retry.max_attempts = 10;
    p.backoff.base = ms(100);
    p.backoff.cap = ms(100);
    let mut g = gate(&p, 16);
    let (mut retries, mut firsts) = (0u64, 0u64);
    // 200 calls one after another; every attempt fails 10 ms after it is sent.
    let mut now = at(0);
    for _ in 0..200 {
        let mut c = call(&p, now);
        loop {
            match c.poll_decision(now, &mut g) {
                Decision::Send(a) => {
                    if a.id.0 == 1 {
                        firsts += 1
                    } else {
                        retries += 1
                    }
                    now = now + ms(10);
                    c.on_outcome(now, a.id, status(503)).unwrap();
                }
                Decision::Wait(t) => now = t,
                Decision::Done(_) => break,
            }
        }
    }
    assert_eq!(firsts, 200);
    let elapsed_secs = now.as_nanos() / 1_000_000_000;
    assert!(
        retries <= 2 * (elapsed_secs + 1),
        "{retries} retries in {elapsed_secs} s"
    );
    assert!(retries < 200 * 9, "the budget did not bite: {retries}");
}
