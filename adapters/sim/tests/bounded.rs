//! The core's bounded structures hold their bounds under long, hostile use: the
//! idempotency store never exceeds its capacity, the engine's and a call's event
//! rings drop (and count) what nobody drains, and health windows are fixed-size.

use core::time::Duration;

use steadfast_core::engine::{EVENT_CAPACITY, EndpointSpec, Engine};
use steadfast_core::health::{HealthConfig, HealthWindow, Sample, SampleResult, SlaTargets};
use steadfast_core::idempotency::{
    Begin, IdempotencyKey, IdempotencyStore, MemoryStore, StoreConfig,
};
use steadfast_core::outcome::{Outcome, Response};
use steadfast_core::policy::Policy;
use steadfast_core::retry::Decision;
use steadfast_core::time::Timestamp;

const SEED: [u8; 32] = [7; 32];

fn at_ms(ms: u64) -> Timestamp {
    Timestamp::from_nanos(ms * 1_000_000)
}

#[test]
fn the_idempotency_store_never_exceeds_its_capacity() {
    let mut config = StoreConfig::default();
    config.capacity = 1000;
    config.lease = Duration::from_secs(1);
    let mut store: MemoryStore<u64> = MemoryStore::new(&config).expect("config");
    let mut busy = 0u64;
    for i in 0..1_000_000u64 {
        let now = at_ms(i);
        let key = IdempotencyKey::from_u128(u128::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        match store.begin(now, key) {
            // Two in three complete, one in three is left in flight (a crashed owner).
            Begin::New if i % 3 != 0 => store.complete(now, key, i),
            Begin::New => {}
            Begin::Busy { .. } => busy += 1,
            other => panic!("key {i}: {other:?}"),
        }
        assert!(
            store.len() <= 1000,
            "{} records after {i} keys",
            store.len()
        );
    }
    assert_eq!(store.len(), 1000);
    println!("1M keys through a 1000-record store: {busy} refused as busy");
    // Full of live in-flight records, it refuses rather than grows.
    let mut store: MemoryStore<u64> = MemoryStore::new(&config).expect("config");
    for i in 0..1000u128 {
        assert!(matches!(
            store.begin(at_ms(0), IdempotencyKey::from_u128(i)),
            Begin::New
        ));
    }
    let refused = store.begin(at_ms(1), IdempotencyKey::from_u128(5000));
    assert!(matches!(refused, Begin::Busy { .. }), "{refused:?}");
    assert_eq!(store.len(), 1000);
}

/// A 429 asking for one second.
fn throttled() -> Outcome {
    let headers = [(b"retry-after".as_slice(), b"1".as_slice())];
    Outcome::Response(Response::from_http(429, headers, b"", 0))
}

#[test]
fn the_engine_event_ring_drops_and_counts_when_nobody_drains() {
    let spec = EndpointSpec::new(0, 4);
    let mut engine = Engine::new(Policy::default(), &[spec], SEED).expect("engine");
    let calls = 10_000u64;
    let mut throttles = 0u64;
    for i in 0..calls {
        // Two seconds apart: every cooled key has recovered by the next call.
        let now = at_ms(i * 2000);
        let mut call = engine.start_call(now, None);
        let Decision::Send(attempt) = call.poll_decision(now, &mut engine) else {
            panic!("call {i}: nothing sent");
        };
        call.on_outcome(now, attempt.id, throttled())
            .expect("outcome");
        throttles += 1;
        // The engine learns of the outcome (and cools the key) at the next decision;
        // a retry it starts is cancelled.
        let _ = call.poll_decision(now, &mut engine);
        call.cancel(now, &mut engine);
    }
    let dropped = engine.dropped_events();
    let mut kept = 0u64;
    while engine.poll_event().is_some() {
        kept += 1;
    }
    println!("{throttles} throttles: {kept} engine events kept, {dropped} dropped");
    assert!(kept <= EVENT_CAPACITY as u64, "{kept} kept");
    assert!(
        dropped > 0 && dropped + kept >= throttles,
        "{dropped} dropped"
    );
}

#[test]
fn a_calls_event_ring_is_bounded() {
    let mut policy = Policy::default();
    policy.retry.max_attempts = 200;
    policy.retry.deadline = None;
    policy.budget.enabled = false;
    policy.breaker.enabled = false;
    let mut engine = Engine::new(policy, &[EndpointSpec::new(0, 1)], SEED).expect("engine");
    let mut now = Timestamp::ZERO;
    let mut call = engine.start_call(now, None);
    let mut attempts = 0;
    loop {
        match call.poll_decision(now, &mut engine) {
            Decision::Send(a) => {
                attempts += 1;
                let o = Outcome::Response(Response::new(500));
                call.on_outcome(now, a.id, o).expect("outcome");
            }
            Decision::Wait(until) => now = until,
            Decision::Done(_) => break,
        }
        while engine.poll_event().is_some() {}
    }
    let mut kept = 0;
    while call.poll_event().is_some() {
        kept += 1;
    }
    println!("{attempts} attempts: {kept} call events kept");
    assert_eq!(attempts, 200);
    assert!(kept <= 8, "{kept} call events kept");
}

#[test]
fn health_windows_are_fixed_size() {
    let size = std::mem::size_of::<HealthWindow>();
    println!("a health window is {size} bytes, with no heap");
    assert!(size <= 4096, "{size} bytes");
    let config = HealthConfig::default();
    let mut w = HealthWindow::new(&config);
    // A million samples, one per millisecond for 1000 s: the 60 s window holds the
    // last 12 slots of 5 s at most.
    for i in 0..1_000_000u64 {
        let result = if i % 10 == 0 {
            SampleResult::EndpointError
        } else {
            SampleResult::Success
        };
        w.on_sample(
            at_ms(i),
            Sample::new(result, Duration::from_millis(i % 900)),
        );
    }
    let report = w.report(at_ms(999_999), &SlaTargets::default());
    println!("after 1M samples the window counts {}", report.samples);
    assert!(
        (55_000..=60_000).contains(&report.samples),
        "{}",
        report.samples
    );
    assert_eq!(std::mem::size_of_val(&w), size);
}
