#![allow(clippy::arithmetic_side_effects)]

use super::*;
use crate::hints::{Hints, RateWindow};
use alloc::vec::Vec;
use proptest::prelude::*;

const SEC: u64 = 1_000_000_000;
const NS: Duration = Duration::from_nanos(1);

fn secs(s: u64) -> Timestamp {
    Timestamp::from_secs(s)
}

fn nanos(n: u64) -> Timestamp {
    Timestamp::from_nanos(n)
}

fn config(requests: Option<u32>, tokens: Option<u64>, burst: f64) -> LimiterConfig {
    LimiterConfig {
        requests,
        tokens,
        burst,
        ..LimiterConfig::default()
    }
}

fn window(remaining: u64, reset: Option<Duration>) -> RateWindow {
    RateWindow {
        limit: None,
        remaining: Some(remaining),
        reset,
    }
}

fn token_hint(remaining: u64, reset: Option<Duration>) -> Hints {
    Hints {
        tokens: window(remaining, reset),
        ..Hints::default()
    }
}

/// `acquire` at `at - 1ns` is denied with `NotBefore(at)` and at `at` admitted.
fn assert_exact(limiter: &Limiter, at: Timestamp, tokens: u64) {
    assert_eq!(limiter.check(at - NS, tokens), Admit::NotBefore(at));
    assert_eq!(limiter.check(at, tokens), Admit::Go);
}

#[test]
fn default_limiter_admits_everything() {
    let mut limiter = Limiter::new(&LimiterConfig::default());
    for _ in 0..10_000 {
        assert_eq!(limiter.acquire(Timestamp::ZERO, u64::MAX), Admit::Go);
    }
    assert_eq!(limiter.in_flight(), 10_000);
}

#[test]
fn rpm_60_without_burst_admits_one_per_second() {
    let mut limiter = Limiter::new(&config(Some(60), None, 0.0));
    assert_eq!(limiter.acquire(secs(0), 0), Admit::Go);
    for k in 1..=120 {
        let at = secs(k);
        assert_eq!(limiter.acquire(at - NS, 0), Admit::NotBefore(at));
        assert_exact(&limiter, at, 0);
        assert_eq!(limiter.acquire(at, 0), Admit::Go);
        limiter.on_finish(at, 0, None);
    }
}

#[test]
fn rpm_60_default_burst_spends_the_burst_then_paces() {
    let mut limiter = Limiter::new(&config(Some(60), None, 0.1));
    for _ in 0..6 {
        assert_eq!(limiter.acquire(secs(0), 0), Admit::Go);
    }
    // Sustained rate 60 + 1 - 6 = 55 per minute: 60 s / 55, rounded up to the ns.
    let next = nanos((60 * SEC).div_ceil(55));
    assert_eq!(next, nanos(1_090_909_091));
    assert_eq!(limiter.acquire(secs(0), 0), Admit::NotBefore(next));
    assert_exact(&limiter, next, 0);

    // A greedy caller gets exactly the limit in the first minute, then 55 a minute.
    let mut limiter = Limiter::new(&config(Some(60), None, 0.1));
    let mut now = secs(0);
    let mut admitted = Vec::new();
    while now < secs(120) {
        match limiter.acquire(now, 0) {
            Admit::Go => admitted.push(now),
            Admit::NotBefore(at) => now = at,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(admitted.iter().filter(|t| **t < secs(60)).count(), 60);
    assert_eq!(admitted.iter().filter(|t| **t >= secs(60)).count(), 55);
}

#[test]
fn a_repeated_denial_is_remembered_until_an_input_changes_the_state() {
    let mut limiter = Limiter::new(&config(Some(60), Some(1_000), 0.0));
    assert_eq!(limiter.acquire(secs(0), 10), Admit::Go);
    let first = limiter.acquire(nanos(1), 10);
    let Admit::NotBefore(at) = first else {
        panic!("{first:?}");
    };
    assert_eq!(
        limiter.acquire(nanos(2), 10),
        first,
        "asked again, nothing changed"
    );
    assert_exact(&limiter, at, 10);
    // Another size is computed afresh, and answered exactly.
    let Admit::NotBefore(at_20) = limiter.acquire(nanos(2), 20) else {
        panic!("a larger call is limited too");
    };
    assert!(at_20 > at, "{at_20:?} for 20 tokens, {at:?} for 10");
    assert_exact(&limiter, at_20, 20);
    assert_eq!(limiter.acquire(nanos(2), 10), first);
    // A reservation moves the instant; the remembered one is gone.
    let reserved = limiter.reserve(nanos(3), at, 10).unwrap();
    assert_eq!(reserved, at);
    let Admit::NotBefore(blocked) = limiter.acquire(nanos(4), 10) else {
        panic!("behind the reservation");
    };
    assert!(
        blocked > at,
        "{blocked:?} after the slot reserved at {at:?}"
    );
    assert_exact(&limiter, blocked, 10);
    // So does a finish reporting more tokens than estimated.
    limiter.on_finish(nanos(5), 10, Some(900));
    let Admit::NotBefore(later) = limiter.acquire(nanos(6), 10) else {
        panic!("still limited");
    };
    assert!(
        later > blocked,
        "{later:?} after the excess, block until {blocked:?}"
    );
    assert_exact(&limiter, later, 10);
}

#[test]
fn busy_until_a_call_finishes() {
    let mut limiter = Limiter::new(&LimiterConfig {
        max_in_flight: Some(2),
        ..LimiterConfig::default()
    });
    assert_eq!(limiter.acquire(secs(1), 10), Admit::Go);
    assert_eq!(limiter.acquire(secs(1), 10), Admit::Go);
    assert_eq!(limiter.check(secs(1), 10), Admit::Busy);
    assert_eq!(limiter.acquire(secs(2), 10), Admit::Busy);
    assert_eq!(limiter.in_flight(), 2);
    limiter.on_finish(secs(3), 10, Some(4));
    assert_eq!(limiter.in_flight(), 1);
    assert_eq!(limiter.acquire(secs(3), 10), Admit::Go);
    assert_eq!(limiter.acquire(secs(3), 10), Admit::Busy);
}

#[test]
fn busy_takes_precedence_over_a_rate_instant() {
    let mut limiter = Limiter::new(&LimiterConfig {
        requests: Some(1),
        max_in_flight: Some(1),
        ..LimiterConfig::default()
    });
    assert_eq!(limiter.acquire(secs(0), 0), Admit::Go);
    // At 60 s the rate would allow it, but the slot is still taken.
    assert_eq!(limiter.acquire(secs(1), 0), Admit::Busy);
    limiter.on_finish(secs(2), 0, None);
    assert_eq!(limiter.acquire(secs(2), 0), Admit::NotBefore(secs(60)));
    assert_exact(&limiter, secs(60), 0);
}

#[test]
fn a_reset_is_a_time_to_full_and_never_blocks() {
    // Drained, full in 59.558 s: nothing here waits for that; without a local limit the
    // limiter admits (the key's ServerLimits paces to the server's rate).
    let mut limiter = Limiter::new(&LimiterConfig::default());
    limiter.on_hints(
        secs(10),
        &token_hint(0, Some(Duration::from_millis(59_558))),
    );
    assert_eq!(limiter.acquire(secs(10), 1), Admit::Go);
    // With a local limit, a drained window empties the local bucket now and it refills
    // at its own rate: one request a second, not one in a minute.
    let mut limiter = Limiter::new(&config(Some(60), None, 0.0));
    let hints = Hints {
        requests: window(0, Some(Duration::from_millis(59_558))),
        ..Hints::default()
    };
    limiter.on_hints(secs(7), &hints);
    assert_eq!(limiter.acquire(secs(7), 0), Admit::NotBefore(secs(8)));
}

#[test]
fn reserved_slots_are_handed_out_in_order_and_nobody_overtakes_them() {
    // 60 a minute, no burst: one a second.
    let mut limiter = Limiter::new(&config(Some(60), None, 0.0));
    assert_eq!(limiter.acquire(secs(0), 0), Admit::Go);
    let Admit::NotBefore(first) = limiter.check(secs(0), 0) else {
        panic!("expected a wait")
    };
    assert_eq!(first, secs(1));
    let slots: Vec<Timestamp> = (0..4)
        .map(|_| limiter.reserve(secs(0), first, 0).unwrap())
        .collect();
    assert_eq!(slots, [secs(1), secs(2), secs(3), secs(4)]);
    assert_eq!(limiter.in_flight(), 5);
    // A call asking at 2.5 s comes after the last reservation, though the rate alone
    // would admit it at 5 s anyway, and one asking at 4 s likewise.
    assert_eq!(
        limiter.check(nanos(2_500_000_000), 0),
        Admit::NotBefore(secs(5))
    );
    assert_eq!(limiter.acquire(secs(4), 0), Admit::NotBefore(secs(5)));
    assert_eq!(limiter.acquire(secs(5), 0), Admit::Go);
    // Nothing is reserved for a call that can never go, or while every slot is taken.
    let mut busy = Limiter::new(&LimiterConfig {
        max_in_flight: Some(1),
        ..config(Some(60), Some(100), 0.0)
    });
    assert_eq!(busy.reserve(secs(0), secs(1), 101), None);
    assert_eq!(busy.reserve(secs(0), secs(1), 1), Some(secs(1)));
    assert_eq!(busy.reserve(secs(0), secs(2), 1), None);
}

#[test]
fn server_hints_are_ignored_unless_followed() {
    let mut limiter = Limiter::new(&LimiterConfig {
        tokens: Some(100),
        follow_server: false,
        ..LimiterConfig::default()
    });
    let before = limiter.clone();
    limiter.on_hints(secs(0), &token_hint(0, Some(Duration::from_secs(30))));
    limiter.on_hints(secs(0), &token_hint(1, None));
    assert_eq!(limiter, before);
    assert_eq!(limiter.acquire(secs(0), 10), Admit::Go);
}

#[test]
fn remaining_tightens_but_never_loosens() {
    // 1000 tokens a minute, burst 100: sustained 901 tokens a minute.
    let mut limiter = Limiter::new(&config(None, Some(1000), 0.1));
    limiter.on_hints(secs(0), &token_hint(10, Some(Duration::from_secs(5))));
    let refill = nanos((60 * SEC).div_ceil(901));
    assert_eq!(limiter.check(secs(0), 11), Admit::NotBefore(refill));
    assert_exact(&limiter, refill, 11);

    let before = limiter.clone();
    limiter.on_hints(secs(0), &token_hint(500, None));
    limiter.on_hints(secs(0), &token_hint(10, None));
    assert_eq!(limiter, before);

    assert_eq!(limiter.acquire(secs(0), 10), Admit::Go);
    assert_eq!(limiter.acquire(secs(0), 1), Admit::NotBefore(refill));
}

#[test]
fn lower_usage_gives_unused_tokens_back() {
    // 1000 tokens a minute, burst 500: sustained 501 a minute.
    let mut limiter = Limiter::new(&config(None, Some(1000), 0.5));
    let refill = nanos((60 * SEC).div_ceil(501));
    assert_eq!(limiter.acquire(secs(0), 500), Admit::Go);
    assert_eq!(limiter.acquire(secs(0), 1), Admit::NotBefore(refill));
    limiter.on_finish(secs(0), 500, Some(100));
    assert_eq!(limiter.in_flight(), 0);
    assert_eq!(limiter.acquire(secs(0), 400), Admit::Go);
    assert_eq!(limiter.acquire(secs(0), 1), Admit::NotBefore(refill));
    assert_exact(&limiter, refill, 1);
}

#[test]
fn higher_usage_is_charged_when_reported() {
    let mut limiter = Limiter::new(&config(None, Some(1000), 0.5));
    assert_eq!(limiter.acquire(secs(0), 100), Admit::Go);
    limiter.on_finish(secs(0), 100, Some(600));
    // 600 charged against a burst of 500: one more token needs 101 tokens of refill.
    let at = nanos((101 * 60 * SEC).div_ceil(501));
    assert_eq!(limiter.acquire(secs(0), 1), Admit::NotBefore(at));
    assert_exact(&limiter, at, 1);
    assert_eq!(
        limiter.acquire(secs(0), 0),
        Admit::NotBefore(nanos((100 * 60 * SEC).div_ceil(501)))
    );
}

/// 100 tokens per 51 s, burst 50: sustained 51 tokens per 51 s, one a second.
fn hundred_tokens_per_51s() -> LimiterConfig {
    LimiterConfig {
        tokens: Some(100),
        period: Duration::from_secs(51),
        burst: 0.5,
        ..LimiterConfig::default()
    }
}

#[test]
fn refund_never_reopens_capacity_a_later_call_used() {
    let cfg = hundred_tokens_per_51s();
    let mut limiter = Limiter::new(&cfg);
    assert_eq!(limiter.acquire(secs(0), 50), Admit::Go); // X
    // Idle until 80 s: X's charge has drained; Y arrives to an idle timeline.
    assert_eq!(limiter.acquire(secs(80), 50), Admit::Go); // Y
    // X used nothing. Giving its 50 back would let 50 more in at once, putting 150 in
    // the window [80 s, 131 s).
    limiter.on_finish(secs(80), 50, Some(0));
    assert_eq!(limiter.acquire(secs(80), 1), Admit::NotBefore(secs(81)));

    // X alone in flight: the whole refund.
    let mut limiter = Limiter::new(&cfg);
    assert_eq!(limiter.acquire(secs(0), 50), Admit::Go);
    limiter.on_finish(secs(10), 50, Some(0));
    assert_eq!(limiter.acquire(secs(10), 50), Admit::Go);
    assert_eq!(limiter.acquire(secs(10), 1), Admit::NotBefore(secs(11)));
}

#[test]
fn excess_reported_after_a_call_limits_that_calls_refund() {
    let cfg = hundred_tokens_per_51s();
    let mut limiter = Limiter::new(&cfg);
    assert_eq!(limiter.acquire(secs(0), 50), Admit::Go); // X
    assert_eq!(limiter.acquire(secs(0), 0), Admit::Go); // W
    // W reports 50 tokens at 80 s, on an idle timeline: charged then and there.
    limiter.on_finish(secs(80), 0, Some(50));
    // X's unused 50 drained long ago; giving them back would admit 50 more at 80 s.
    limiter.on_finish(secs(80), 50, Some(0));
    assert_eq!(limiter.acquire(secs(80), 1), Admit::NotBefore(secs(81)));
}

#[test]
fn refund_with_overlapping_calls_goes_as_far_as_the_later_lead() {
    let cfg = hundred_tokens_per_51s();
    let mut limiter = Limiter::new(&cfg);
    assert_eq!(limiter.acquire(secs(0), 30), Admit::Go); // X: timeline 30 s ahead
    assert_eq!(limiter.acquire(secs(10), 10), Admit::Go); // Y: lead 20 s
    // X used 0 of 30, but Y was admitted with a lead of only 20: 20 come back.
    limiter.on_finish(secs(10), 30, Some(0));
    // Timeline: 30 + 10 - 20 = 20 s ahead of 0, i.e. 10 s ahead of now; 40 available.
    assert_eq!(limiter.acquire(secs(10), 41), Admit::NotBefore(secs(11)));
    assert_eq!(limiter.acquire(secs(10), 40), Admit::Go);
}

#[test]
fn a_tightening_hint_stops_refunds_to_calls_in_flight() {
    let mut limiter = Limiter::new(&config(None, Some(1000), 0.5));
    assert_eq!(limiter.acquire(secs(0), 400), Admit::Go);
    limiter.on_hints(secs(0), &token_hint(0, None));
    let before = limiter.clone();
    limiter.on_finish(secs(0), 400, Some(0));
    assert_eq!(limiter.in_flight(), 0);
    assert_eq!(limiter.check(secs(0), 1), before.check(secs(0), 1));
}

#[test]
fn oversized_calls_are_refused_and_full_size_calls_wait_for_an_idle_window() {
    let mut limiter = Limiter::new(&config(Some(100), Some(1000), 0.1));
    assert_eq!(limiter.check(secs(0), 1001), Admit::TooLarge);
    assert_eq!(limiter.acquire(secs(0), u64::MAX), Admit::TooLarge);
    assert_eq!(limiter.in_flight(), 0);
    // A fresh limiter has been idle for a period: the whole limit goes at once...
    assert_eq!(limiter.acquire(secs(0), 1000), Admit::Go);
    // ...and the next token waits exactly one period.
    assert_eq!(limiter.acquire(secs(1), 1), Admit::NotBefore(secs(60)));
    assert_exact(&limiter, secs(60), 1);

    let mut limiter = Limiter::new(&config(None, Some(1000), 0.1));
    assert_eq!(limiter.acquire(secs(0), 100), Admit::Go);
    // 1000 more needs the 100 to have drained at 901 a minute.
    let at = nanos((1000 * 60 * SEC).div_ceil(901));
    assert_eq!(limiter.acquire(secs(0), 1000), Admit::NotBefore(at));
    assert_exact(&limiter, at, 1000);
    assert!(at > secs(60));
}

#[test]
fn clock_going_backwards_is_clamped() {
    let mut limiter = Limiter::new(&config(Some(60), Some(1000), 0.0));
    assert_eq!(limiter.acquire(secs(10), 5), Admit::Go);
    assert_eq!(limiter.acquire(secs(5), 5), Admit::NotBefore(secs(11)));
    assert_eq!(
        limiter.check(Timestamp::ZERO, 5),
        Admit::NotBefore(secs(11))
    );
    limiter.on_finish(secs(1), 5, Some(5));
    limiter.on_hints(
        Timestamp::ZERO,
        &token_hint(0, Some(Duration::from_secs(1))),
    );
    assert_eq!(limiter.acquire(secs(3), 5), Admit::NotBefore(secs(11)));
}

#[test]
fn extreme_values_saturate_without_panicking() {
    let configs = [
        LimiterConfig {
            requests: Some(u32::MAX),
            tokens: Some(u64::MAX),
            period: Duration::MAX,
            burst: 1.0,
            max_in_flight: Some(u32::MAX),
            follow_server: true,
        },
        LimiterConfig {
            requests: Some(1),
            tokens: Some(1),
            period: Duration::from_nanos(1),
            burst: 0.0,
            ..LimiterConfig::default()
        },
        // Unvalidated values.
        LimiterConfig {
            requests: Some(0),
            tokens: Some(0),
            period: Duration::ZERO,
            burst: f64::NAN,
            max_in_flight: Some(0),
            follow_server: true,
        },
    ];
    let hints = Hints {
        retry_after: Some(Duration::MAX),
        should_retry: None,
        requests: window(0, Some(Duration::MAX)),
        tokens: window(u64::MAX, Some(Duration::MAX)),
    };
    for cfg in &configs {
        let mut limiter = Limiter::new(cfg);
        for now in [Timestamp::ZERO, secs(1), Timestamp::MAX, Timestamp::ZERO] {
            for tokens in [0, 1, u64::MAX] {
                let _ = limiter.check(now, tokens);
                let _ = limiter.acquire(now, tokens);
                limiter.on_finish(now, tokens, Some(u64::MAX));
                limiter.on_finish(now, u64::MAX, Some(0));
            }
            limiter.on_hints(now, &hints);
            let _ = limiter.acquire(now, 1);
        }
    }

    let mut limiter = Limiter::new(&configs[2]);
    assert_eq!(limiter.acquire(secs(0), 0), Admit::TooLarge);
    let mut unbounded = configs[2].clone();
    unbounded.requests = None;
    unbounded.tokens = None;
    assert_eq!(Limiter::new(&unbounded).acquire(secs(0), 0), Admit::Busy);
}

#[test]
fn validate_names_the_bad_field() {
    assert_eq!(LimiterConfig::default().validate(), Ok(()));
    let field = |cfg: LimiterConfig| cfg.validate().unwrap_err().field();
    let base = LimiterConfig::default();
    assert_eq!(
        field(LimiterConfig {
            requests: Some(0),
            ..base.clone()
        }),
        "limiter.requests"
    );
    assert_eq!(
        field(LimiterConfig {
            tokens: Some(0),
            ..base.clone()
        }),
        "limiter.tokens"
    );
    assert_eq!(
        field(LimiterConfig {
            period: Duration::ZERO,
            ..base.clone()
        }),
        "limiter.period"
    );
    for burst in [-0.1, 1.5, f64::NAN, f64::INFINITY] {
        assert_eq!(
            field(LimiterConfig {
                burst,
                ..base.clone()
            }),
            "limiter.burst"
        );
    }
    assert_eq!(
        field(LimiterConfig {
            max_in_flight: Some(0),
            ..base.clone()
        }),
        "limiter.max_in_flight"
    );
    let ok = LimiterConfig {
        requests: Some(500),
        tokens: Some(30_000),
        burst: 0.0,
        max_in_flight: Some(8),
        ..base
    };
    assert_eq!(ok.validate(), Ok(()));
}

// ---------------------------------------------------------------------------------
// Property: any window of `period` holds at most the limits, against a brute force.

#[derive(Debug, Clone)]
enum Op {
    /// Advance the driver's clock by this many thousandths of the period.
    Advance(u64),
    /// Step the driver's clock back by this many thousandths of the period.
    Back(u64),
    Acquire(u64),
    /// Acquire; on `NotBefore(at)`, move the clock to `at` and acquire again there.
    AcquireWaiting(u64),
    /// Check; on `NotBefore(at)`, reserve the slot (the admission is at the slot).
    Reserve(u64),
    /// Finish the in-flight call at this index (mod the count); the actual usage is
    /// the estimate times this many thousandths (`None`: not reported).
    Finish(usize, Option<u64>),
    Hint {
        tokens: bool,
        remaining: u64,
        reset_permille: Option<u64>,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..=400).prop_map(Op::Advance),
        1 => (0u64..=1500).prop_map(Op::Advance),
        1 => (0u64..=300).prop_map(Op::Back),
        8 => prop_oneof![0u64..=20, 0u64..=120, 0u64..=400].prop_map(Op::Acquire),
        4 => prop_oneof![0u64..=20, 0u64..=120].prop_map(Op::AcquireWaiting),
        3 => prop_oneof![0u64..=20, 0u64..=120].prop_map(Op::Reserve),
        4 => (any::<usize>(), proptest::option::weighted(0.8, 0u64..=2000))
            .prop_map(|(i, a)| Op::Finish(i, a)),
        1 => (any::<bool>(), 0u64..=40, proptest::option::of(0u64..=500)).prop_map(
            |(tokens, remaining, reset_permille)| Op::Hint {
                tokens,
                remaining,
                reset_permille,
            }
        ),
    ]
}

fn limiter_config() -> impl Strategy<Value = LimiterConfig> {
    (
        proptest::option::weighted(0.7, 1u32..=12),
        proptest::option::weighted(0.8, 1u64..=300),
        1_000u64..=5_000_000,
        prop_oneof![Just(0.0), Just(0.1), Just(0.5), Just(1.0), 0.0f64..=1.0],
        proptest::option::weighted(0.5, 1u32..=4),
        proptest::bool::weighted(0.8),
    )
        .prop_map(
            |(requests, tokens, period, burst, max_in_flight, follow_server)| LimiterConfig {
                requests,
                tokens,
                period: Duration::from_nanos(period),
                burst,
                max_in_flight,
                follow_server,
            },
        )
}

#[derive(Debug, Clone, PartialEq)]
struct Admission {
    seq: usize,
    at: u64,
    estimate: u64,
    /// The estimate, or the actual usage when reported lower.
    charge: u64,
}

#[derive(Debug, Clone, PartialEq)]
struct Excess {
    seq: usize,
    at: u64,
    tokens: u64,
}

#[derive(Debug, Clone, PartialEq)]
struct Trace {
    answers: Vec<Admit>,
    admissions: Vec<Admission>,
    excess: Vec<Excess>,
    end: Limiter,
}

/// Feeds `ops` to a limiter, checking the per-step properties; returns the trace.
fn run(cfg: &LimiterConfig, ops: &[Op]) -> Trace {
    let period = nanos_of(cfg.period);
    let mut limiter = Limiter::new(cfg);
    let mut clock = 0u64;
    let mut latest = 0u64;
    let mut in_flight: Vec<usize> = Vec::new();
    let mut trace = Trace {
        answers: Vec::new(),
        admissions: Vec::new(),
        excess: Vec::new(),
        end: limiter.clone(),
    };
    for (seq, op) in ops.iter().enumerate() {
        let now = Timestamp::from_nanos(clock);
        match *op {
            Op::Advance(permille) => clock += period * permille / 1000,
            Op::Back(permille) => clock = clock.saturating_sub(period * permille / 1000),
            Op::Acquire(tokens) | Op::AcquireWaiting(tokens) => {
                let mut now = now;
                if let (Op::AcquireWaiting(_), Admit::NotBefore(at)) =
                    (op, limiter.check(now, tokens))
                {
                    trace.answers.push(Admit::NotBefore(at));
                    clock = at.as_nanos();
                    now = at;
                }
                latest = latest.max(clock);
                let checked = limiter.check(now, tokens);
                // The same question with the remembered denial forgotten: computed afresh.
                let mut fresh = limiter.clone();
                fresh.last_denial = None;
                let computed = fresh.check(now, tokens);
                let admit = limiter.acquire(now, tokens);
                assert_eq!(checked, admit, "check disagrees with acquire");
                assert_eq!(computed, admit, "a remembered denial is stale");
                match admit {
                    Admit::Go => {
                        in_flight.push(trace.admissions.len());
                        trace.admissions.push(Admission {
                            seq,
                            at: latest,
                            estimate: tokens,
                            charge: tokens,
                        });
                    }
                    Admit::NotBefore(at) => {
                        assert!(
                            at.as_nanos() > now.as_nanos().max(latest),
                            "{at} is not after {latest}"
                        );
                        assert_exact(&limiter, at, tokens);
                        assert_eq!(limiter.clone().acquire(at, tokens), Admit::Go);
                    }
                    Admit::Busy => {
                        assert_eq!(Some(limiter.in_flight()), cfg.max_in_flight);
                    }
                    Admit::TooLarge => assert!(tokens > cfg.tokens.unwrap()),
                }
                assert_eq!(limiter.in_flight() as usize, in_flight.len());
                trace.answers.push(admit);
            }
            Op::Reserve(tokens) => {
                let Admit::NotBefore(at) = limiter.check(now, tokens) else {
                    continue;
                };
                latest = latest.max(clock);
                let Some(slot) = limiter.reserve(now, at, tokens) else {
                    continue;
                };
                assert!(slot >= at, "reserved {slot} before the first instant {at}");
                // Nobody overtakes a reserved slot.
                let after = limiter.check(now, tokens);
                assert!(
                    !matches!(after, Admit::Go) && after.not_before().is_none_or(|t| t >= slot),
                    "{after:?} overtakes the slot at {slot}"
                );
                in_flight.push(trace.admissions.len());
                trace.admissions.push(Admission {
                    seq,
                    at: slot.as_nanos(),
                    estimate: tokens,
                    charge: tokens,
                });
                assert_eq!(limiter.in_flight() as usize, in_flight.len());
            }
            Op::Finish(pick, permille) => {
                if in_flight.is_empty() {
                    continue;
                }
                latest = latest.max(clock);
                let index = in_flight.remove(pick % in_flight.len());
                let admission = &mut trace.admissions[index];
                let estimate = admission.estimate;
                let actual = permille.map(|p| estimate * p / 1000);
                limiter.on_finish(now, estimate, actual);
                match actual {
                    Some(actual) if actual < estimate => admission.charge = actual,
                    Some(actual) if actual > estimate => trace.excess.push(Excess {
                        seq,
                        at: latest,
                        tokens: actual - estimate,
                    }),
                    _ => {}
                }
            }
            Op::Hint {
                tokens,
                remaining,
                reset_permille,
            } => {
                latest = latest.max(clock);
                let window = window(
                    remaining,
                    reset_permille.map(|p| Duration::from_nanos(period * p / 1000)),
                );
                let hints = if tokens {
                    Hints {
                        tokens: window,
                        ..Hints::default()
                    }
                } else {
                    Hints {
                        requests: window,
                        ..Hints::default()
                    }
                };
                limiter.on_hints(now, &hints);
            }
        }
    }
    trace.end = limiter;
    trace
}

/// Every window `[start, start + period)` by brute force. Windows starting at an event
/// dominate all others. Excess usage reported after a window's last admission is
/// forced on the limiter and not held against it.
fn check_windows(cfg: &LimiterConfig, trace: &Trace) {
    let period = nanos_of(cfg.period);
    let starts = trace
        .admissions
        .iter()
        .map(|a| a.at)
        .chain(trace.excess.iter().map(|e| e.at));
    for start in starts {
        let inside = |at: u64| at >= start && at - start < period;
        let admitted: Vec<&Admission> = trace.admissions.iter().filter(|a| inside(a.at)).collect();
        let Some(last) = admitted.iter().map(|a| a.seq).max() else {
            continue;
        };
        if let Some(limit) = cfg.requests {
            assert!(
                admitted.len() <= limit as usize,
                "{} requests in [{start}, +{period})",
                admitted.len()
            );
        }
        if let Some(limit) = cfg.tokens {
            let charged: u64 = admitted.iter().map(|a| a.charge).sum::<u64>()
                + trace
                    .excess
                    .iter()
                    .filter(|e| inside(e.at) && e.seq < last)
                    .map(|e| e.tokens)
                    .sum::<u64>();
            assert!(
                charged <= limit,
                "{charged} tokens in [{start}, +{period}) > {limit}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed_1147),
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_window_holds_at_most_the_limits(
        cfg in limiter_config(),
        ops in proptest::collection::vec(op(), 0..300),
    ) {
        let trace = run(&cfg, &ops);
        check_windows(&cfg, &trace);
        prop_assert_eq!(run(&cfg, &ops), trace, "same inputs, different answers");
    }

    #[test]
    fn busy_saturated_runs_hold_the_limits(
        tokens in 1u64..=200,
        burst in 0.0f64..=1.0,
        ops in proptest::collection::vec(
            prop_oneof![
                3 => (0u64..=60).prop_map(Op::Advance),
                3 => (0u64..=120).prop_map(Op::Acquire),
                6 => (0u64..=120).prop_map(Op::AcquireWaiting),
                4 => (any::<usize>(), proptest::option::of(0u64..=1500))
                    .prop_map(|(i, a)| Op::Finish(i, a)),
            ],
            0..400,
        ),
    ) {
        let cfg = LimiterConfig {
            tokens: Some(tokens),
            period: Duration::from_micros(100),
            burst,
            ..LimiterConfig::default()
        };
        let trace = run(&cfg, &ops);
        check_windows(&cfg, &trace);
    }
}

#[cfg(feature = "serde")]
mod serde_config {
    use super::*;
    use crate::duration::Human;

    #[test]
    fn default_serializes_to_the_snapshot() {
        let json = serde_json::to_string(&LimiterConfig::default()).unwrap();
        let expected = alloc::format!(
            r#"{{"period":"{}","burst":0.1,"follow_server":true}}"#,
            Human(Duration::from_secs(60))
        );
        assert_eq!(json, expected);
        let toml = toml::to_string(&LimiterConfig::default()).unwrap();
        let expected = alloc::format!(
            "period = \"{}\"\nburst = 0.1\nfollow_server = true\n",
            Human(Duration::from_secs(60))
        );
        assert_eq!(toml, expected);
    }

    #[test]
    fn missing_fields_take_defaults_and_unknown_ones_are_refused() {
        let cfg: LimiterConfig =
            serde_json::from_str(r#"{"requests":500,"tokens":30000,"max_in_flight":4}"#).unwrap();
        assert_eq!(cfg.requests, Some(500));
        assert_eq!(cfg.tokens, Some(30_000));
        assert_eq!(cfg.max_in_flight, Some(4));
        assert_eq!(cfg.period, Duration::from_secs(60));
        assert_eq!(cfg.burst, 0.1);
        assert!(cfg.follow_server);
        assert!(serde_json::from_str::<LimiterConfig>(r#"{"rpm":60}"#).is_err());
    }

    #[test]
    fn round_trips_through_json_and_toml() {
        let cfg = LimiterConfig {
            requests: Some(60),
            tokens: Some(90_000),
            period: Duration::from_secs(30),
            burst: 0.25,
            max_in_flight: Some(3),
            follow_server: false,
        };
        let json = serde_json::to_string(&cfg).unwrap();
        assert_eq!(serde_json::from_str::<LimiterConfig>(&json).unwrap(), cfg);
        let text = toml::to_string(&cfg).unwrap();
        assert_eq!(toml::from_str::<LimiterConfig>(&text).unwrap(), cfg);
        let cfg: LimiterConfig = toml::from_str("requests = 60\nperiod = \"1m\"\n").unwrap();
        assert_eq!(cfg.period, Duration::from_secs(60));
    }
}

#[test]
fn a_drained_limiter_earns_its_burst_again_at_the_rate() {
    // 60 a minute, burst 10: after a drain at 5 s, one call a second, then a burst
    // again once it has been idle long enough.
    let mut limiter = Limiter::new(&config(Some(60), None, 1.0 / 6.0));
    assert_eq!(limiter.acquire(secs(1), 0), Admit::Go);
    limiter.drain(secs(5));
    let Admit::NotBefore(next) = limiter.acquire(secs(5), 0) else {
        panic!("nothing is available right after a drain");
    };
    assert!(next > secs(5) && next <= secs(7), "{next:?}");
    assert_eq!(limiter.acquire(next, 0), Admit::Go);
    assert!(matches!(limiter.acquire(next, 0), Admit::NotBefore(_)));
    // Idle for a whole period: the burst is back.
    let later = secs(70);
    for _ in 0..10 {
        assert_eq!(limiter.acquire(later, 0), Admit::Go);
    }
}
