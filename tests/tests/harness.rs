//! Scripted runs of the harness with a fixed policy: known stories end as they must,
//! with every invariant checked along the way.

use steadfast_core::engine::EndpointSpec;
use steadfast_core::ids::{EndpointId, Target};
use steadfast_core::outcome::{BodyState, Phase, TransportKind};
use steadfast_core::policy::Policy;
use steadfast_core::retry::{Finish, GiveUpReason};
use steadfast_tests::harness::{Checks, Harness};
use steadfast_tests::ops::{Answer, Body, Header, HttpAnswer, NewCall, Op, Status};

fn exact() -> Policy {
    Policy::default().without_jitter()
}

fn call() -> Op {
    Op::NewCall(NewCall {
        tokens: 100,
        business_id: None,
        rules: None,
    })
}

fn http(status: u16, headers: Vec<Header>, body: Body) -> Op {
    Op::Answer {
        call: 0,
        answer: Answer::Http(HttpAnswer {
            status: Status(status),
            headers,
            body,
            body_state: BodyState::Complete,
            tokens_used: None,
        }),
    }
}

fn harness(endpoints: &[EndpointSpec]) -> Harness {
    Harness::new(exact(), endpoints, 1)
        .unwrap()
        .with_checks(Checks::default())
}

#[test]
fn overloads_then_success_take_three_attempts_and_the_hinted_wait() {
    let mut h = harness(&[EndpointSpec::new(0, 1)]);
    h.apply_all(&[
        call(),
        http(529, vec![], Body::Empty),
        Op::Sleep,
        http(503, vec![Header::RetryAfterSecs(3)], Body::Empty),
        Op::Sleep,
        http(200, vec![], Body::Empty),
    ])
    .unwrap();
    let Some(Finish::Success { attempts, target }) = h.finishes()[0] else {
        panic!("{:?}", h.finishes());
    };
    assert_eq!((attempts, target), (3, Target::new(0, 0)));
    // 500 ms of backoff, then the 3 s the server asked for (longer than 1 s of backoff).
    assert_eq!(h.now().as_nanos(), 3_500_000_000);
}

#[test]
fn a_revoked_key_fails_over_to_the_next_endpoint() {
    let mut h = harness(&[EndpointSpec::new(0, 1), EndpointSpec::new(1, 1)]);
    let body = Body::OpenAi {
        kind: 3, // invalid_api_key
        message: 5,
    };
    h.apply_all(&[
        call(),
        http(401, vec![], body),
        http(200, vec![], Body::Empty),
    ])
    .unwrap();
    let Some(Finish::Success { attempts, target }) = h.finishes()[0] else {
        panic!("{:?}", h.finishes());
    };
    assert_eq!((attempts, target), (2, Target::new(1, 0)));
    assert_eq!(h.engine().pool().usable_keys(h.now(), EndpointId(0)), 0);
}

#[test]
fn a_context_too_long_body_is_not_retried() {
    let mut h = harness(&[EndpointSpec::new(0, 2)]);
    let body = Body::Anthropic {
        kind: 8, // invalid_request_error, with a "prompt is too long" message
        message: 3,
    };
    h.apply_all(&[call(), http(400, vec![], body)]).unwrap();
    let Some(Finish::GaveUp(g)) = h.finishes()[0] else {
        panic!("{:?}", h.finishes());
    };
    assert_eq!((g.reason, g.attempts), (GiveUpReason::NotRetryable, 1));
}

#[test]
fn cancelling_in_flight_releases_the_limiter_slot() {
    let mut p = exact();
    p.limiter.max_in_flight = Some(1);
    let mut h = Harness::new(p, &[EndpointSpec::new(0, 1)], 3)
        .unwrap()
        .with_checks(Checks::default());
    // The second call re-checks the busy limiter every 5 ms; it is woken by Sleep.
    h.apply_all(&[call(), call(), Op::Cancel { call: 0 }, Op::Sleep])
        .unwrap();
    let limiter = h.engine().limiter(EndpointId(0)).unwrap();
    assert_eq!(
        limiter.in_flight(),
        1,
        "the second call took the freed slot"
    );
    assert!(matches!(
        h.finishes()[0],
        Some(Finish::GaveUp(g)) if g.reason == GiveUpReason::Cancelled
    ));
}

#[test]
fn an_unsafe_retry_is_refused_for_a_non_idempotent_call() {
    let mut p = exact();
    p.retry.idempotent = false;
    let mut h = Harness::new(p, &[EndpointSpec::new(0, 1)], 4).unwrap();
    h.apply_all(&[
        call(),
        Op::Answer {
            call: 0,
            answer: Answer::Transport {
                kind: TransportKind::Reset,
                phase: Phase::AfterSend,
            },
        },
    ])
    .unwrap();
    assert!(matches!(
        h.finishes()[0],
        Some(Finish::GaveUp(g)) if g.reason == GiveUpReason::UnsafeToRetry
    ));
}
