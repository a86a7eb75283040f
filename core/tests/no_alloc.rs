//! One classification, one backoff delay and one retry-sequence decision allocate nothing.
//!
//! A counting global allocator counts allocations made by the current thread only, so
//! the test harness's own threads cannot disturb the figures.

#![allow(unsafe_code, clippy::unwrap_used, clippy::arithmetic_side_effects)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use steadfast_core::backoff::{Backoff, BackoffConfig};
use steadfast_core::classify::ClassifyConfig;
use steadfast_core::idempotency::IdempotencyKey;
use steadfast_core::outcome::{Outcome, Response};
use steadfast_core::policy::Policy;
use steadfast_core::retry::{Call, Decision, SingleEndpoint};
use steadfast_core::rng;
use steadfast_core::time::Timestamp;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATIONS.with(Cell::get);
    let out = f();
    (out, ALLOCATIONS.with(Cell::get) - before)
}

#[test]
fn classification_allocates_nothing() {
    let rules = ClassifyConfig::default();
    let outcome = Outcome::Response(Response::from_http(
        429,
        [(&b"retry-after"[..], &b"2"[..])],
        br#"{"error":{"type":"requests","code":"rate_limit_exceeded"}}"#,
        1_700_000_000,
    ));
    let (_, n) = allocations_during(|| std::hint::black_box(rules.classify(&outcome)));
    assert_eq!(n, 0);
}

#[test]
fn parsing_a_response_allocates_nothing() {
    let (_, n) = allocations_during(|| {
        std::hint::black_box(Response::from_http(
            529,
            [
                (&b"Retry-After"[..], &b"Sun, 06 Nov 1994 08:49:37 GMT"[..]),
                (
                    &b"anthropic-ratelimit-requests-reset"[..],
                    &b"2024-01-01T00:00:30Z"[..],
                ),
            ],
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            784_111_777,
        ))
    });
    assert_eq!(n, 0);
}

#[test]
fn a_backoff_delay_allocates_nothing() {
    let mut rng = rng::from_u64(1);
    let mut backoff = Backoff::new(BackoffConfig::default());
    let (_, n) = allocations_during(|| std::hint::black_box(backoff.next_delay(3, &mut rng)));
    assert_eq!(n, 0);
}

#[test]
fn retry_decisions_allocate_nothing() {
    let policy = Policy::default();
    let mut gate = SingleEndpoint::new(policy.classify.clone(), &policy.budget, rng::from_u64(2));
    let mut call = Call::new(
        Timestamp::ZERO,
        &policy.retry,
        &policy.backoff,
        IdempotencyKey::from_u128(9),
    );
    let (first, n) = allocations_during(|| call.poll_decision(Timestamp::ZERO, &mut gate));
    assert_eq!(n, 0);
    let Decision::Send(attempt) = first else {
        panic!("expected a send, got {first:?}");
    };
    let now = Timestamp::ZERO + Duration::from_millis(30);
    let (decision, n) = allocations_during(|| {
        call.on_outcome(now, attempt.id, Outcome::Response(Response::new(503)))
            .unwrap();
        call.poll_decision(now, &mut gate)
    });
    assert_eq!(n, 0);
    assert!(matches!(decision, Decision::Wait(_)), "{decision:?}");
}
