//! Hedged attempts: exact instants, the race, the budget, the grants.
#![allow(clippy::arithmetic_side_effects)]

use alloc::vec::Vec;
use core::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::engine::{EndpointSpec, Engine};
use crate::hedge::HedgeConfig;
use crate::outcome::Response;
use crate::policy::Policy;
use crate::rng::{self, CoreRng};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

/// No jitter, hedges after 300 ms from a budget that pays every call.
fn policy() -> Policy {
    let mut p = Policy::default().without_jitter();
    p.hedge = HedgeConfig::after(ms(300)).with_budget(1.0);
    p
}

fn gate(p: &Policy) -> SingleEndpoint<CoreRng> {
    SingleEndpoint::new(p.classify.clone(), &p.budget, rng::from_u64(3)).with_hedge(&p.hedge)
}

fn call(p: &Policy, now: Timestamp) -> Call {
    Call::new(now, &p.retry, &p.backoff, IdempotencyKey::from_u128(9)).with_hedge(&p.hedge)
}

fn ok() -> Outcome {
    Outcome::Response(Response::new(200))
}

fn status(code: u16) -> Outcome {
    Outcome::Response(Response::new(code))
}

fn send(d: Decision) -> Attempt {
    match d {
        Decision::Send(a) => a,
        other => panic!("expected Send, got {other:?}"),
    }
}

fn done(d: Decision) -> Finish {
    match d {
        Decision::Done(f) => f,
        other => panic!("expected Done, got {other:?}"),
    }
}

#[test]
fn a_hedge_goes_out_at_its_instant_and_the_first_answer_wins() {
    let p = policy();
    let mut g = gate(&p);
    let mut c = call(&p, at(0));
    let a1 = send(c.poll_decision(at(0), &mut g));
    assert_eq!(c.poll_timeout(), Some(at(300)));
    assert_eq!(c.poll_decision(at(299), &mut g), Decision::Wait(at(300)));
    let a2 = send(c.poll_decision(at(300), &mut g));
    assert_eq!(a2.id, AttemptId(2));
    assert_eq!(a2.idempotency_key, a1.idempotency_key);
    assert_eq!(a2.deadline, at(60_300));
    assert_eq!(c.poll_decision(at(300), &mut g), Decision::Wait(at(60_000)));
    c.on_outcome(at(420), a2.id, ok()).unwrap();
    let f = done(c.poll_decision(at(420), &mut g));
    assert_eq!(f.attempts(), 2);
    assert!(f.is_success());
    assert_eq!(c.poll_cancel(), Some(a1.id));
    assert_eq!(c.poll_cancel(), None);
    assert_eq!(
        c.on_outcome(at(900), a1.id, ok()),
        Err(UsageError::Finished)
    );
    let events: Vec<CallEvent> = core::iter::from_fn(|| c.poll_event()).collect();
    assert!(events.contains(&CallEvent::HedgeSent {
        at: at(300),
        id: a2.id,
        beside: a1.id,
        target: a2.target,
    }));
    assert!(events.contains(&CallEvent::AttemptCancelled {
        at: at(420),
        id: a1.id,
        target: a1.target,
    }));
}

#[test]
fn the_first_attempt_winning_cancels_the_hedge() {
    let p = policy();
    let mut g = gate(&p);
    let mut c = call(&p, at(0));
    let a1 = send(c.poll_decision(at(0), &mut g));
    let a2 = send(c.poll_decision(at(300), &mut g));
    c.on_outcome(at(310), a1.id, ok()).unwrap();
    assert!(done(c.poll_decision(at(310), &mut g)).is_success());
    assert_eq!(c.poll_cancel(), Some(a2.id));
}

#[test]
fn an_answer_before_the_instant_sends_no_hedge() {
    let p = policy();
    let mut g = gate(&p);
    let mut c = call(&p, at(0));
    let a1 = send(c.poll_decision(at(0), &mut g));
    c.on_outcome(at(299), a1.id, ok()).unwrap();
    assert_eq!(done(c.poll_decision(at(299), &mut g)).attempts(), 1);
    assert_eq!(c.poll_cancel(), None);
    assert_eq!(c.hedges(), 0);
}

#[test]
fn a_failure_of_one_waits_for_the_other() {
    let p = policy();
    let mut g = gate(&p);
    let mut c = call(&p, at(0));
    let a1 = send(c.poll_decision(at(0), &mut g));
    let a2 = send(c.poll_decision(at(300), &mut g));
    c.on_outcome(at(350), a1.id, status(503)).unwrap();
    // No retry while the hedge runs: the call waits for its deadline.
    assert_eq!(
        c.poll_decision(at(350), &mut g),
        Decision::Wait(a2.deadline)
    );
    c.on_outcome(at(500), a2.id, ok()).unwrap();
    let f = done(c.poll_decision(at(500), &mut g));
    assert_eq!(
        f,
        Finish::Success {
            attempts: 2,
            target: a2.target
        }
    );
    assert_eq!(c.poll_cancel(), None);
}

#[test]
fn both_failing_retry_after_the_backoff_without_another_hedge() {
    let p = policy();
    let mut g = gate(&p);
    let mut c = call(&p, at(0));
    let a1 = send(c.poll_decision(at(0), &mut g));
    let a2 = send(c.poll_decision(at(300), &mut g));
    c.on_outcome(at(400), a2.id, status(503)).unwrap();
    assert_eq!(
        c.poll_decision(at(400), &mut g),
        Decision::Wait(a1.deadline)
    );
    c.on_outcome(at(600), a1.id, status(503)).unwrap();
    // Attempt 2 failed: the backoff is base × factor = 1 s from the second failure.
    assert_eq!(c.poll_decision(at(600), &mut g), Decision::Wait(at(1_600)));
    let a3 = send(c.poll_decision(at(1_600), &mut g));
    assert_eq!(a3.id, AttemptId(3));
    // max_per_call is 1: the retry is not hedged.
    assert_eq!(c.poll_timeout(), Some(a3.deadline));
}

#[test]
fn a_slow_first_attempt_timing_out_leaves_the_hedge_running() {
    let mut p = policy();
    p.retry.attempt_timeout = ms(2_000);
    let mut g = gate(&p);
    let mut c = call(&p, at(0));
    let a1 = send(c.poll_decision(at(0), &mut g));
    let a2 = send(c.poll_decision(at(300), &mut g));
    assert_eq!(c.poll_decision(at(300), &mut g), Decision::Wait(at(2_000)));
    assert_eq!(
        c.poll_decision(at(2_000), &mut g),
        Decision::Wait(at(2_300))
    );
    assert_eq!(
        c.on_outcome(at(2_100), a1.id, ok()),
        Err(UsageError::UnknownAttempt { id: a1.id })
    );
    c.on_outcome(at(2_200), a2.id, ok()).unwrap();
    assert!(done(c.poll_decision(at(2_200), &mut g)).is_success());
}

/// `policy()` with up to `n` hedges a call.
fn policy_hedging(n: u32) -> Policy {
    let mut p = policy();
    p.retry.attempt_timeout = ms(2_000);
    p.hedge.max_per_call = n;
    p
}

/// A gate whose hedge budget earlier calls (answered at once) have funded with
/// `calls` hedges.
fn funded_gate(p: &Policy, calls: u64) -> SingleEndpoint<CoreRng> {
    let mut g = gate(p);
    for _ in 0..calls {
        let mut c = call(p, at(0));
        let a = send(c.poll_decision(at(0), &mut g));
        c.on_outcome(at(1), a.id, ok()).unwrap();
        assert!(done(c.poll_decision(at(1), &mut g)).is_success());
    }
    g
}

#[test]
fn a_second_hedge_takes_the_place_of_the_older_of_two_late_attempts() {
    let p = policy_hedging(2);
    let mut g = funded_gate(&p, 1);
    let mut c = call(&p, at(0));
    let a1 = send(c.poll_decision(at(0), &mut g));
    let a2 = send(c.poll_decision(at(300), &mut g));
    // The hedge is late in turn: a third attempt goes out and the first gives way.
    assert_eq!(c.poll_decision(at(300), &mut g), Decision::Wait(at(600)));
    let a3 = send(c.poll_decision(at(600), &mut g));
    assert_eq!(a3.id, AttemptId(3));
    assert_eq!(a3.idempotency_key, a1.idempotency_key);
    assert_eq!(c.poll_cancel(), Some(a1.id));
    assert_eq!(c.poll_cancel(), None);
    assert_eq!(c.hedges(), 2);
    // No third hedge: the call waits for the earlier deadline of the two left.
    assert_eq!(
        c.poll_decision(at(600), &mut g),
        Decision::Wait(a2.deadline)
    );
    assert_eq!(
        c.on_outcome(at(650), a1.id, ok()),
        Err(UsageError::UnknownAttempt { id: a1.id })
    );
    c.on_outcome(at(700), a3.id, ok()).unwrap();
    let f = done(c.poll_decision(at(700), &mut g));
    assert_eq!(
        f,
        Finish::Success {
            attempts: 3,
            target: a3.target
        }
    );
    assert_eq!(c.poll_cancel(), Some(a2.id));
    let events: Vec<CallEvent> = core::iter::from_fn(|| c.poll_event()).collect();
    assert!(events.contains(&CallEvent::AttemptCancelled {
        at: at(600),
        id: a1.id,
        target: a1.target,
    }));
}

#[test]
fn an_attempt_left_alone_late_is_hedged_at_once() {
    let p = policy_hedging(2);
    let mut g = funded_gate(&p, 1);
    let mut c = call(&p, at(0));
    let a1 = send(c.poll_decision(at(0), &mut g));
    let a2 = send(c.poll_decision(at(300), &mut g));
    // The hedge fails fast; the first attempt, out for 350 ms, is late: hedged now.
    c.on_outcome(at(350), a2.id, status(503)).unwrap();
    let a3 = send(c.poll_decision(at(350), &mut g));
    assert_eq!(a3.id, AttemptId(3));
    assert_eq!(c.poll_cancel(), None);
    c.on_outcome(at(420), a3.id, ok()).unwrap();
    assert!(done(c.poll_decision(at(420), &mut g)).is_success());
    assert_eq!(c.poll_cancel(), Some(a1.id));
}

#[test]
fn a_late_attempt_timing_out_beside_a_late_hedge_is_replaced_at_once() {
    let p = policy_hedging(2);
    let mut g = funded_gate(&p, 1);
    let mut c = call(&p, at(0));
    let a1 = send(c.poll_decision(at(0), &mut g));
    let _a2 = send(c.poll_decision(at(300), &mut g));
    // Both held; the second hedge replaces the first at 600 ms.
    let a3 = send(c.poll_decision(at(600), &mut g));
    assert_eq!(c.poll_cancel(), Some(a1.id));
    // Hedges spent: nothing more until a deadline.
    assert_eq!(c.poll_decision(at(600), &mut g), Decision::Wait(at(2_300)));
    c.on_outcome(at(800), a3.id, ok()).unwrap();
    assert!(done(c.poll_decision(at(800), &mut g)).is_success());
}

#[test]
fn a_request_failure_ends_the_call_and_cancels_the_other() {
    let p = policy();
    let mut g = gate(&p);
    let mut c = call(&p, at(0));
    let _a1 = send(c.poll_decision(at(0), &mut g));
    let a2 = send(c.poll_decision(at(300), &mut g));
    c.on_outcome(at(310), a2.id, status(400)).unwrap();
    assert!(!done(c.poll_decision(at(310), &mut g)).is_success());
    assert_eq!(c.poll_cancel(), Some(AttemptId(1)));
}

#[test]
fn no_hedge_without_budget_for_a_non_idempotent_call_or_when_off() {
    let mut p = policy();
    p.hedge.budget = 0.0;
    let mut g = gate(&p);
    let mut c = call(&p, at(0));
    let a1 = send(c.poll_decision(at(0), &mut g));
    assert_eq!(
        c.poll_decision(at(300), &mut g),
        Decision::Wait(a1.deadline)
    );

    let mut p = policy();
    p.retry.idempotent = false;
    let mut g = gate(&p);
    let mut c = call(&p, at(0));
    let a1 = send(c.poll_decision(at(0), &mut g));
    assert_eq!(c.poll_timeout(), Some(a1.deadline));

    let p = policy();
    let mut g = gate(&p);
    let mut c = Call::new(at(0), &p.retry, &p.backoff, IdempotencyKey::from_u128(1));
    let a1 = send(c.poll_decision(at(0), &mut g));
    assert_eq!(c.poll_timeout(), Some(a1.deadline));
}

#[test]
fn a_stream_hedges_before_its_first_event_and_never_after() {
    let mut p = Policy::streaming().without_jitter();
    p.hedge = HedgeConfig::after(ms(300)).with_budget(1.0);
    let mut g = gate(&p);
    let mut c = call(&p, at(0));
    let a1 = send(c.poll_decision(at(0), &mut g));
    assert_eq!(c.poll_timeout(), Some(at(300)));
    // The first event is reported as the attempt's success: the call is over.
    c.on_outcome(at(200), a1.id, ok()).unwrap();
    assert!(done(c.poll_decision(at(200), &mut g)).is_success());
    assert!(done(c.poll_decision(at(300), &mut g)).is_success());
    assert_eq!(c.hedges(), 0);
}

#[test]
fn cancelling_the_call_cancels_both() {
    let p = policy();
    let mut g = gate(&p);
    let mut c = call(&p, at(0));
    send(c.poll_decision(at(0), &mut g));
    let a2 = send(c.poll_decision(at(300), &mut g));
    let f = c.cancel(at(350), &mut g);
    assert!(!f.is_success());
    assert_eq!(c.poll_cancel(), Some(a2.id));
}

fn engine(p: &Policy, keys: u16) -> Engine {
    Engine::new(p.clone(), &[EndpointSpec::new(0, keys)], [5; 32]).unwrap()
}

#[test]
fn on_the_engine_a_hedge_takes_another_key_and_the_loser_gives_its_grant_back() {
    let p = policy();
    let mut e = engine(&p, 2);
    let mut c = e.start_call(at(0), None).with_hedge(&p.hedge);
    let a1 = send(c.poll_decision(at(0), &mut e));
    let a2 = send(c.poll_decision(at(300), &mut e));
    assert_ne!(a1.target.key, a2.target.key);
    assert_eq!(e.outstanding(), 2);
    c.on_outcome(at(400), a2.id, ok()).unwrap();
    assert!(done(c.poll_decision(at(400), &mut e)).is_success());
    assert_eq!(e.outstanding(), 0);
    assert_eq!(
        (e.hedge_budget().calls(), e.hedge_budget().hedges()),
        (1, 1)
    );
}

#[test]
fn with_one_key_the_hedge_goes_to_the_same_key() {
    let p = policy();
    let mut e = engine(&p, 1);
    let mut c = e.start_call(at(0), None).with_hedge(&p.hedge);
    let a1 = send(c.poll_decision(at(0), &mut e));
    let a2 = send(c.poll_decision(at(300), &mut e));
    assert_eq!(a1.target, a2.target);
}

#[test]
fn the_quantile_trigger_is_the_endpoints_live_p90() {
    let mut p = policy();
    p.hedge = HedgeConfig {
        after: Some(ms(800)),
        quantile: Some(0.9),
        ..HedgeConfig::default().with_budget(1.0)
    };
    let mut e = engine(&p, 1);
    let mut now = at(0);
    // Before the window has 20 successes, `after` serves.
    let mut c = e.start_call(now, None).with_hedge(&p.hedge);
    send(c.poll_decision(now, &mut e));
    assert_eq!(c.poll_timeout(), Some(now + ms(800)));
    let _ = c.cancel(now, &mut e);
    for i in 0..20u64 {
        let mut c = e.start_call(now, None).with_hedge(&p.hedge);
        let a = send(c.poll_decision(now, &mut e));
        now = now + ms(100 + i);
        c.on_outcome(now, a.id, ok()).unwrap();
        assert!(done(c.poll_decision(now, &mut e)).is_success());
    }
    let q = e
        .latency_quantile(now, a_endpoint(), 900, 20)
        .expect("20 successes");
    assert!(q >= ms(100) && q <= ms(150), "{q:?}");
    let mut c = e.start_call(now, None).with_hedge(&p.hedge);
    send(c.poll_decision(now, &mut e));
    assert_eq!(c.poll_timeout(), Some(now + q));
}

fn a_endpoint() -> crate::ids::EndpointId {
    crate::ids::EndpointId(0)
}

// ---- properties -------------------------------------------------------------

/// What the fake upstream does with one request: answer after `latency` ms with
/// `code`, or never (`None`).
#[derive(Debug, Clone, Copy)]
struct Script {
    latency: u64,
    code: Option<u16>,
}

fn script() -> impl Strategy<Value = Script> {
    let code = prop::option::weighted(
        0.9,
        prop::sample::select(alloc::vec![200u16, 200, 200, 200, 429, 500, 503, 400, 401]),
    );
    (0u64..3_000, code).prop_map(|(latency, code)| Script { latency, code })
}

/// What a run saw: every send, as (call, attempt, instant, target).
type Trace = Vec<(usize, u32, Timestamp, crate::ids::Target)>;

/// Runs `calls` calls one after another on one engine; request `n` gets
/// `scripts[n % len]`. Checks the invariants as it goes.
fn run(
    p: &Policy,
    keys: u16,
    calls: usize,
    scripts: &[Script],
    stream: bool,
) -> Result<Trace, TestCaseError> {
    let mut e = Engine::new(p.clone(), &[EndpointSpec::new(0, keys)], [7; 32]).unwrap();
    let mut trace = Trace::new();
    let mut now = at(0);
    let mut requests = 0usize;
    for call_index in 0..calls {
        let mut c = e.start_call(now, None).with_hedge(&p.hedge);
        // In flight: (attempt id, answer instant, outcome).
        let mut flying: Vec<(AttemptId, Option<(Timestamp, Outcome)>)> = Vec::new();
        let mut deadlines: Vec<(AttemptId, Timestamp)> = Vec::new();
        let mut answered = false;
        loop {
            let d = c.poll_decision(now, &mut e);
            while let Some(id) = c.poll_cancel() {
                flying.retain(|(f, _)| *f != id);
            }
            match d {
                Decision::Send(a) => {
                    prop_assert!(!(stream && answered), "a send after the first event");
                    let s = scripts[requests % scripts.len()];
                    requests += 1;
                    trace.push((call_index, a.id.0, now, a.target));
                    let answer = s.code.map(|code| (now + ms(s.latency), status(code)));
                    flying.push((a.id, answer));
                    deadlines.push((a.id, a.deadline));
                    // What the call timed out is no longer in flight.
                    flying.retain(|(id, _)| deadlines.iter().any(|(d, t)| d == id && *t > now));
                    prop_assert!(flying.len() <= 2);
                }
                Decision::Wait(until) => {
                    let next = flying
                        .iter()
                        .filter_map(|(_, a)| a.as_ref().map(|(t, _)| *t))
                        .min();
                    match next {
                        Some(t) if t <= until => {
                            now = now.max(t);
                            let i = flying
                                .iter()
                                .position(|(_, a)| a.as_ref().is_some_and(|(t2, _)| *t2 == t))
                                .unwrap_or(0);
                            let (id, a) = flying.remove(i);
                            if let Some((_, o)) = a {
                                if c.on_outcome(now, id, o).is_ok() {
                                    answered |=
                                        matches!(o, Outcome::Response(r) if r.status == 200);
                                }
                            }
                        }
                        _ => {
                            now = now.max(until);
                            flying.retain(|(_, a)| a.as_ref().is_some_and(|(t, _)| *t > now));
                        }
                    }
                }
                Decision::Done(_) => break,
            }
        }
        prop_assert_eq!(e.outstanding(), 0, "a grant outlived call {}", call_index);
        prop_assert!(c.hedges() <= p.hedge.max_per_call, "{} hedges", c.hedges());
        let b = e.hedge_budget();
        prop_assert!(b.hedges() as f64 <= p.hedge.budget * b.calls() as f64 + 1e-9);
        now = now + ms(10);
    }
    Ok(trace)
}

fn hedged(budget: f64, after: u64, stream: bool, max_per_call: u32) -> Policy {
    let mut p = if stream {
        Policy::streaming()
    } else {
        Policy::default()
    };
    p.retry.attempt_timeout = ms(2_000);
    p.retry.first_event_timeout = stream.then_some(ms(2_000));
    p.hedge = HedgeConfig::after(ms(after)).with_budget(budget);
    p.hedge.max_per_call = max_per_call;
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn hedges_stay_within_budget_and_every_grant_comes_back(
        budget in 0.0f64..=1.0,
        after in 1u64..2_500,
        keys in 1u16..3,
        stream in any::<bool>(),
        max_per_call in 1u32..4,
        scripts in prop::collection::vec(script(), 1..40),
    ) {
        let p = hedged(budget, after, stream, max_per_call);
        run(&p, keys, 30, &scripts, stream)?;
    }

    #[test]
    fn the_same_seed_gives_the_same_hedges(
        after in 1u64..2_500,
        max_per_call in 1u32..4,
        scripts in prop::collection::vec(script(), 1..40),
    ) {
        let p = hedged(0.5, after, false, max_per_call);
        let one = run(&p, 2, 20, &scripts, false)?;
        let two = run(&p, 2, 20, &scripts, false)?;
        prop_assert_eq!(one, two);
    }
}
