#![allow(clippy::arithmetic_side_effects)]

use super::*;
use crate::rng::{CoreRng, from_u64};
use alloc::vec::Vec;
use proptest::prelude::*;

fn ms(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// The default config with the consecutive model at 5 (off by default), so both
/// models are exercised.
fn five_in_a_row() -> BreakerConfig {
    BreakerConfig {
        consecutive_failures: Some(5),
        ..BreakerConfig::default()
    }
}

/// `five_in_a_row` without jitter, so open instants are exact.
fn exact() -> BreakerConfig {
    BreakerConfig {
        open_jitter: 0.0,
        ..five_in_a_row()
    }
}

struct Fixture {
    b: Breaker,
    rng: CoreRng,
}

impl Fixture {
    fn new(config: BreakerConfig) -> Fixture {
        config.validate().unwrap();
        Fixture {
            b: Breaker::new(&config),
            rng: from_u64(7),
        }
    }
    fn fail(&mut self, at: Timestamp) {
        self.b
            .on_result(at, BreakerInput::Failure, false, &mut self.rng);
    }
    fn ok(&mut self, at: Timestamp, latency: Duration) {
        self.b
            .on_result(at, BreakerInput::Success { latency }, false, &mut self.rng);
    }
    fn probe(&mut self, at: Timestamp, input: BreakerInput) {
        self.b.on_result(at, input, true, &mut self.rng);
    }
    fn events(&mut self) -> Vec<BreakerEvent> {
        core::iter::from_fn(|| self.b.poll_event()).collect()
    }
    /// Trips with the default consecutive model: five failures at `at`.
    fn trip(&mut self, at: Timestamp) {
        for _ in 0..5 {
            self.fail(at);
        }
        assert!(matches!(self.b.state(), BreakerState::Open { .. }));
    }
}

fn ev(at: Timestamp, from: StateKind, to: StateKind) -> BreakerEvent {
    BreakerEvent { at, from, to }
}

const OK: BreakerInput = BreakerInput::Success {
    latency: Duration::from_millis(100),
};

#[test]
fn trips_at_the_fifth_consecutive_failure() {
    let mut f = Fixture::new(exact());
    for i in 1..=4 {
        f.fail(ms(i));
        assert_eq!(f.b.state(), BreakerState::Closed);
        assert_eq!(f.b.permit(ms(i)), Permit::Allow);
    }
    f.fail(ms(5));
    let until = ms(5) + secs(5);
    assert_eq!(f.b.state(), BreakerState::Open { until });
    assert_eq!(f.b.trips(), 1);
    assert_eq!(f.b.poll_timeout(), Some(until));
    assert_eq!(f.b.permit(ms(6)), Permit::Deny { until });
    assert_eq!(f.events(), [ev(ms(5), StateKind::Closed, StateKind::Open)]);
}

#[test]
fn a_success_resets_the_consecutive_count() {
    let mut f = Fixture::new(exact());
    for i in 0..4 {
        f.fail(ms(i));
    }
    f.ok(ms(4), Duration::from_millis(10));
    for i in 5..9 {
        f.fail(ms(i));
    }
    assert_eq!(f.b.state(), BreakerState::Closed);
    f.fail(ms(9));
    assert_eq!(
        f.b.state(),
        BreakerState::Open {
            until: ms(9) + secs(5)
        }
    );
}

fn rate_only() -> BreakerConfig {
    BreakerConfig {
        consecutive_failures: None,
        window: Window::Count(100),
        ..exact()
    }
}

#[test]
fn the_rate_trips_only_once_min_calls_are_in_the_window() {
    let mut f = Fixture::new(rate_only());
    // 19 failures: a rate of 1.0 but fewer than min_calls (20) calls.
    for i in 0..19 {
        f.fail(ms(i));
    }
    assert_eq!(f.b.state(), BreakerState::Closed);
    assert_eq!(f.b.counts().failures, 19);
    f.fail(ms(19));
    assert_eq!(
        f.b.state(),
        BreakerState::Open {
            until: ms(19) + secs(5)
        }
    );
}

#[test]
fn the_rate_trips_at_exactly_the_threshold() {
    let mut f = Fixture::new(rate_only());
    // 9 failures in 20 calls: below 0.5.
    for i in 0..20 {
        if i % 2 == 0 && i < 18 {
            f.fail(ms(i));
        } else {
            f.ok(ms(i), Duration::from_millis(1));
        }
    }
    assert_eq!(f.b.counts().calls, 20);
    assert_eq!(f.b.counts().failures, 9);
    assert_eq!(f.b.state(), BreakerState::Closed);
    // The 10th failure in 21 calls: 10 / 21 < 0.5 still.
    f.fail(ms(20));
    assert_eq!(f.b.state(), BreakerState::Closed);
    // 11 / 22 = 0.5: trips.
    f.fail(ms(21));
    assert_eq!(
        f.b.state(),
        BreakerState::Open {
            until: ms(21) + secs(5)
        }
    );
}

#[test]
fn a_success_can_trip_the_rate() {
    // The success that brings the window to min_calls.
    let mut f = Fixture::new(rate_only());
    for i in 0..19 {
        f.fail(ms(i));
    }
    f.ok(ms(19), Duration::ZERO);
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(5019) });

    // A success whose arrival evicts older successes from a time window.
    let mut f = Fixture::new(BreakerConfig {
        window: Window::Time(secs(16)),
        min_calls: 4,
        ..rate_only()
    });
    for _ in 0..10 {
        f.ok(ms(0), Duration::ZERO);
    }
    for _ in 0..3 {
        f.fail(ms(5000));
    }
    assert_eq!(f.b.state(), BreakerState::Closed);
    f.ok(ms(16_000), Duration::ZERO);
    assert_eq!(
        f.b.counts(),
        WindowCounts {
            calls: 4,
            failures: 3,
            slow: 0
        }
    );
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(21_000) });
}

#[test]
fn the_count_window_is_exact_up_to_sixteen_calls() {
    let mut f = Fixture::new(BreakerConfig {
        window: Window::Count(10),
        min_calls: 10,
        ..rate_only()
    });
    for i in 0..50 {
        f.ok(ms(i), Duration::ZERO);
        assert_eq!(f.b.counts().calls, (i + 1).min(10));
    }
}

#[test]
fn the_count_window_stays_within_one_bucket_of_its_size() {
    // 100 calls: buckets of 7 in a ring of 15, so between 99 and 105 calls.
    let mut f = Fixture::new(rate_only());
    let mut seen = Vec::new();
    for i in 0..400 {
        f.ok(ms(i), Duration::ZERO);
        if i >= 105 {
            seen.push(f.b.counts().calls);
        }
    }
    assert_eq!(seen.iter().min(), Some(&99));
    assert_eq!(seen.iter().max(), Some(&105));
}

#[test]
fn the_time_window_forgets_calls_older_than_its_span() {
    let config = BreakerConfig {
        window: Window::Time(secs(16)),
        min_calls: 4,
        ..rate_only()
    };
    // Buckets of 1s: three failures in [0, 1s) are still in the window at 15.5s ...
    let mut f = Fixture::new(config);
    for _ in 0..3 {
        f.fail(ms(0));
    }
    f.ok(ms(15_500), Duration::ZERO);
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(20_500) });

    // ... and gone at 16s.
    let mut f = Fixture::new(config);
    for _ in 0..3 {
        f.fail(ms(0));
    }
    f.fail(ms(16_000));
    assert_eq!(
        f.b.counts(),
        WindowCounts {
            calls: 1,
            failures: 1,
            slow: 0
        }
    );
    assert_eq!(f.b.state(), BreakerState::Closed);
}

#[test]
fn slow_successes_trip_the_slow_call_model() {
    let mut f = Fixture::new(BreakerConfig {
        consecutive_failures: None,
        failure_rate: None,
        slow_call: Some(secs(1)),
        slow_rate: 0.5,
        min_calls: 4,
        ..exact()
    });
    // Exactly at the threshold is not slow.
    for i in 0..10 {
        f.ok(ms(i), secs(1));
    }
    assert_eq!(f.b.counts().slow, 0);
    for i in 10..19 {
        f.ok(ms(i), ms(1001).saturating_duration_since(Timestamp::ZERO));
    }
    // 9 slow of 19.
    assert_eq!(f.b.state(), BreakerState::Closed);
    f.ok(ms(19), secs(2));
    assert_eq!(f.b.counts().slow, 10);
    assert_eq!(
        f.b.state(),
        BreakerState::Open {
            until: ms(19) + secs(5)
        }
    );
}

#[test]
fn a_slow_rate_of_one_is_off() {
    let mut f = Fixture::new(BreakerConfig {
        slow_call: Some(secs(1)),
        ..exact()
    });
    for i in 0..100 {
        f.ok(ms(i), secs(10));
    }
    assert_eq!(f.b.state(), BreakerState::Closed);
    assert!(f.b.counts().slow > 0);
}

#[test]
fn open_becomes_half_open_exactly_at_until() {
    let mut f = Fixture::new(exact());
    f.trip(ms(1000));
    let until = ms(6000);
    let just_before = until - Duration::from_nanos(1);
    assert_eq!(f.b.peek(just_before), Permit::Deny { until });
    assert_eq!(f.b.permit(just_before), Permit::Deny { until });
    assert_eq!(f.b.peek(until), Permit::Probe);
    assert_eq!(
        f.b.state(),
        BreakerState::Open { until },
        "peek changes nothing"
    );
    assert_eq!(f.b.permit(until), Permit::Probe);
    assert_eq!(f.b.state(), BreakerState::HalfOpen);
    assert_eq!(f.b.poll_timeout(), None);
    assert_eq!(
        f.events(),
        [
            ev(ms(1000), StateKind::Closed, StateKind::Open),
            ev(until, StateKind::Open, StateKind::HalfOpen),
        ]
    );
}

#[test]
fn handle_timeout_moves_to_half_open_at_until() {
    let mut f = Fixture::new(exact());
    f.trip(ms(0));
    f.b.handle_timeout(ms(4999));
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(5000) });
    f.b.handle_timeout(ms(5000));
    assert_eq!(f.b.state(), BreakerState::HalfOpen);
    assert_eq!(f.b.probes_in_flight(), 0);
}

#[test]
fn half_open_admits_at_most_the_probe_limit() {
    let mut f = Fixture::new(exact());
    f.trip(ms(0));
    let t = ms(5000);
    for _ in 0..3 {
        assert_eq!(f.b.permit(t), Permit::Probe);
    }
    assert_eq!(f.b.probes_in_flight(), 3);
    assert_eq!(f.b.peek(ms(5100)), Permit::Deny { until: ms(10_100) });
    assert_eq!(f.b.permit(ms(5100)), Permit::Deny { until: ms(10_100) });
    // An ignored probe frees its slot without closing or reopening.
    f.probe(ms(5200), BreakerInput::Ignored);
    assert_eq!(f.b.state(), BreakerState::HalfOpen);
    assert_eq!(f.b.permit(ms(5200)), Permit::Probe);
    assert_eq!(f.b.permit(ms(5200)), Permit::Deny { until: ms(10_200) });
}

#[test]
fn closes_after_close_after_probe_successes() {
    let mut f = Fixture::new(exact());
    f.trip(ms(0));
    assert_eq!(f.b.permit(ms(5000)), Permit::Probe);
    assert_eq!(f.b.permit(ms(5000)), Permit::Probe);
    f.probe(ms(5100), OK);
    assert_eq!(f.b.state(), BreakerState::HalfOpen);
    f.probe(ms(5200), OK);
    assert_eq!(f.b.state(), BreakerState::Closed);
    assert_eq!(f.b.permit(ms(5200)), Permit::Allow);
    assert_eq!(f.b.counts(), WindowCounts::default());
    assert_eq!(
        f.events(),
        [
            ev(ms(0), StateKind::Closed, StateKind::Open),
            ev(ms(5000), StateKind::Open, StateKind::HalfOpen),
            ev(ms(5200), StateKind::HalfOpen, StateKind::Closed),
        ]
    );
}

#[test]
fn a_probe_failure_reopens_with_the_grown_time_up_to_open_max() {
    let mut f = Fixture::new(exact());
    f.trip(ms(0));
    let mut now = ms(5000);
    let mut expected = Vec::new();
    for open in [10u64, 20, 40, 60, 60] {
        assert_eq!(f.b.permit(now), Permit::Probe);
        f.probe(now + Duration::from_millis(100), BreakerInput::Failure);
        let at = now + Duration::from_millis(100);
        let until = at + secs(open);
        assert_eq!(f.b.state(), BreakerState::Open { until });
        expected.push(until);
        now = until;
    }
    assert_eq!(f.b.trips(), 6);
    assert_eq!(expected.len(), 5);
}

#[test]
fn growth_resets_after_staying_closed_for_open_max() {
    let close = |f: &mut Fixture, at: Timestamp| {
        assert_eq!(f.b.permit(at), Permit::Probe);
        assert_eq!(f.b.permit(at), Permit::Probe);
        f.probe(at, OK);
        f.probe(at, OK);
        assert_eq!(f.b.state(), BreakerState::Closed);
    };
    let mut f = Fixture::new(exact());
    f.trip(ms(0));
    close(&mut f, ms(5000));
    // Closed 59.999s: the next trip is grown.
    f.trip(ms(64_999));
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(74_999) });
    close(&mut f, ms(74_999));
    // Closed exactly 60s: back to open_for.
    f.trip(ms(134_999));
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(139_999) });
}

#[test]
fn fixed_open_time_with_growth_one() {
    let mut f = Fixture::new(BreakerConfig {
        open_growth: 1.0,
        ..exact()
    });
    f.trip(ms(0));
    assert_eq!(f.b.permit(ms(5000)), Permit::Probe);
    f.probe(ms(5000), BreakerInput::Failure);
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(10_000) });
}

#[test]
fn jitter_never_shortens_and_is_seeded() {
    let config = five_in_a_row();
    let mut longer = 0;
    for seed in 0..200 {
        let mut b = Breaker::new(&config);
        let mut rng = from_u64(seed);
        for _ in 0..5 {
            b.on_result(ms(1000), BreakerInput::Failure, false, &mut rng);
        }
        let BreakerState::Open { until } = b.state() else {
            panic!("not open")
        };
        assert!(until >= ms(6000), "{until}");
        assert!(until <= ms(6500), "{until}");
        longer += usize::from(until > ms(6000));

        let mut again = Breaker::new(&config);
        let mut rng = from_u64(seed);
        for _ in 0..5 {
            again.on_result(ms(1000), BreakerInput::Failure, false, &mut rng);
        }
        assert_eq!(again.state(), b.state());
    }
    assert!(longer > 190);
}

#[test]
fn ignored_outcomes_neither_trip_nor_close() {
    let mut f = Fixture::new(exact());
    for i in 0..4 {
        f.fail(ms(i));
    }
    for i in 0..100 {
        f.b.on_result(ms(10 + i), BreakerInput::Ignored, false, &mut f.rng);
    }
    assert_eq!(f.b.state(), BreakerState::Closed);
    assert_eq!(f.b.counts().calls, 4);
    // The ignored outcomes did not reset the consecutive count either.
    f.fail(ms(200));
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(5200) });

    for _ in 0..3 {
        assert_eq!(f.b.permit(ms(5200)), Permit::Probe);
    }
    for _ in 0..3 {
        f.probe(ms(5300), BreakerInput::Ignored);
    }
    assert_eq!(f.b.state(), BreakerState::HalfOpen);
    assert_eq!(f.b.probes_in_flight(), 0);
}

#[test]
fn stale_results_are_not_recorded_and_free_their_slots() {
    let mut f = Fixture::new(exact());
    f.trip(ms(0));
    // A call admitted before the trip reports while open: nothing changes.
    f.ok(ms(100), Duration::ZERO);
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(5000) });
    for _ in 0..3 {
        assert_eq!(f.b.permit(ms(5000)), Permit::Probe);
    }
    // A non-probe success while half-open does not count toward closing.
    f.ok(ms(5001), Duration::ZERO);
    f.ok(ms(5001), Duration::ZERO);
    assert_eq!(f.b.state(), BreakerState::HalfOpen);
    // One probe fails: reopen; the two others are still in flight, but the next
    // half-open period starts with every slot free, and their late answers are not
    // probes of it.
    let period = f.b.probe_period();
    f.probe(ms(5002), BreakerInput::Failure);
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(15_002) });
    f.probe(ms(5003), OK);
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(15_002) });
    for _ in 0..3 {
        assert_eq!(f.b.permit(ms(15_002)), Permit::Probe);
    }
    assert_eq!(f.b.permit(ms(15_002)), Permit::Deny { until: ms(20_002) });
    assert_eq!(f.b.probe_period(), period + 1);
    // A probe that will never be answered gives its slot back; one of the earlier
    // period gives back nothing.
    f.b.release_probe(period);
    assert_eq!(f.b.probes_in_flight(), 3);
    f.b.release_probe(period + 1);
    assert_eq!(f.b.probes_in_flight(), 2);
    assert_eq!(f.b.permit(ms(15_003)), Permit::Probe);
}

#[test]
fn a_slow_probe_reopens_only_when_the_slow_model_is_on() {
    let slow = BreakerInput::Success { latency: secs(3) };
    for (rate, closes) in [(1.0, true), (0.5, false)] {
        let mut f = Fixture::new(BreakerConfig {
            slow_call: Some(secs(1)),
            slow_rate: rate,
            close_after: 1,
            ..exact()
        });
        f.trip(ms(0));
        assert_eq!(f.b.permit(ms(5000)), Permit::Probe);
        f.probe(ms(8000), slow);
        assert_eq!(f.b.state() == BreakerState::Closed, closes, "rate {rate}");
    }
}

#[test]
fn a_probe_result_after_closing_counts_as_a_closed_call() {
    let mut f = Fixture::new(exact());
    f.trip(ms(0));
    for _ in 0..3 {
        assert_eq!(f.b.permit(ms(5000)), Permit::Probe);
    }
    f.probe(ms(5001), OK);
    f.probe(ms(5002), OK);
    assert_eq!(f.b.state(), BreakerState::Closed);
    f.probe(ms(5003), BreakerInput::Failure);
    assert_eq!(f.b.probes_in_flight(), 0);
    assert_eq!(f.b.counts().failures, 1);
}

#[test]
fn events_drop_the_oldest_when_not_drained() {
    let mut f = Fixture::new(BreakerConfig {
        consecutive_failures: Some(1),
        open_growth: 1.0,
        ..exact()
    });
    // Each round: closed → open (fail), open → half-open (permit), half-open → open.
    let mut now = ms(0);
    f.fail(now);
    for _ in 0..3 {
        now = now + secs(5);
        assert_eq!(f.b.permit(now), Permit::Probe);
        f.probe(now, BreakerInput::Failure);
    }
    // 7 events so far; three more make 10.
    now = now + secs(5);
    assert_eq!(f.b.permit(now), Permit::Probe);
    f.probe(now, OK);
    f.probe(now, OK);
    f.fail(now + secs(1));
    assert_eq!(f.b.dropped_events(), 2);
    let events = f.events();
    assert_eq!(events.len(), EVENT_CAPACITY);
    assert_eq!(
        events[0],
        ev(ms(5000), StateKind::HalfOpen, StateKind::Open)
    );
    assert_eq!(
        events[7],
        ev(ms(21_000), StateKind::Closed, StateKind::Open)
    );
    assert_eq!(f.b.poll_event(), None);
}

#[test]
fn time_going_backwards_counts_as_no_time_passed() {
    let mut f = Fixture::new(BreakerConfig {
        window: Window::Time(secs(16)),
        ..rate_only()
    });
    f.fail(ms(10_000));
    f.fail(ms(3_000));
    f.ok(Timestamp::ZERO, Duration::ZERO);
    assert_eq!(f.b.counts().calls, 3);
    f.ok(ms(25_999), Duration::ZERO);
    assert_eq!(
        f.b.counts().calls,
        4,
        "all in the bucket of 10s..11s or later"
    );
    f.ok(ms(26_000), Duration::ZERO);
    assert_eq!(f.b.counts().calls, 2);

    let mut f = Fixture::new(exact());
    f.trip(ms(10_000));
    assert_eq!(f.b.permit(ms(20_000)), Permit::Probe);
    f.probe(ms(1), BreakerInput::Failure);
    // Reopened at the latest instant seen, 20s.
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(30_000) });
    assert_eq!(f.b.peek(ms(0)), Permit::Deny { until: ms(30_000) });
}

#[test]
fn a_disabled_breaker_always_allows() {
    let mut f = Fixture::new(BreakerConfig {
        enabled: false,
        ..exact()
    });
    for i in 0..100 {
        f.fail(ms(i));
        assert_eq!(f.b.permit(ms(i)), Permit::Allow);
    }
    assert_eq!(f.b.state(), BreakerState::Closed);
    assert_eq!(f.b.trips(), 0);
    assert_eq!(f.b.poll_event(), None);
}

#[test]
fn validate_names_the_bad_field() {
    let bad = |c: BreakerConfig| c.validate().unwrap_err().field();
    let d = BreakerConfig::default();
    assert_eq!(d.validate(), Ok(()));
    let cases: [(BreakerConfig, &str); 17] = [
        (
            BreakerConfig {
                consecutive_failures: Some(0),
                ..d
            },
            "breaker.consecutive_failures",
        ),
        (
            BreakerConfig {
                failure_rate: Some(0.0),
                ..d
            },
            "breaker.failure_rate",
        ),
        (
            BreakerConfig {
                failure_rate: Some(1.5),
                ..d
            },
            "breaker.failure_rate",
        ),
        (
            BreakerConfig {
                failure_rate: Some(f64::NAN),
                ..d
            },
            "breaker.failure_rate",
        ),
        (
            BreakerConfig {
                window: Window::Count(0),
                ..d
            },
            "breaker.window.calls",
        ),
        (
            BreakerConfig {
                window: Window::Time(Duration::ZERO),
                ..d
            },
            "breaker.window.time",
        ),
        (BreakerConfig { min_calls: 0, ..d }, "breaker.min_calls"),
        (
            BreakerConfig {
                window: Window::Count(10),
                ..d
            },
            "breaker.min_calls",
        ),
        (
            BreakerConfig {
                slow_call: Some(Duration::ZERO),
                ..d
            },
            "breaker.slow_call",
        ),
        (
            BreakerConfig {
                slow_rate: -0.1,
                ..d
            },
            "breaker.slow_rate",
        ),
        (
            BreakerConfig {
                open_for: Duration::ZERO,
                ..d
            },
            "breaker.open_for",
        ),
        (
            BreakerConfig {
                open_growth: 0.5,
                ..d
            },
            "breaker.open_growth",
        ),
        (
            BreakerConfig {
                open_for: secs(61),
                ..d
            },
            "breaker.open_for",
        ),
        (
            BreakerConfig {
                open_jitter: 1.5,
                ..d
            },
            "breaker.open_jitter",
        ),
        (
            BreakerConfig {
                open_jitter: f64::NAN,
                ..d
            },
            "breaker.open_jitter",
        ),
        (
            BreakerConfig {
                half_open_probes: 0,
                ..d
            },
            "breaker.half_open_probes",
        ),
        (
            BreakerConfig {
                close_after: 0,
                ..d
            },
            "breaker.close_after",
        ),
    ];
    for (config, field) in cases {
        assert_eq!(bad(config), field);
    }
    assert_eq!(
        BreakerConfig {
            open_for: secs(61),
            ..d
        }
        .validate(),
        Err(ConfigError::Order {
            lower: "breaker.open_for",
            upper: "breaker.open_max"
        })
    );
    assert_eq!(
        BreakerConfig {
            window: Window::Count(10),
            ..d
        }
        .validate(),
        Err(ConfigError::Order {
            lower: "breaker.min_calls",
            upper: "breaker.window.calls"
        })
    );
}

#[test]
fn the_breaker_has_a_fixed_size() {
    // No heap anywhere: the whole machine is this many bytes, whatever happens to it.
    assert!(core::mem::size_of::<Breaker>() < 1024);
}

// --- properties ---

#[derive(Debug, Clone)]
enum Op {
    Step(u64),
    Back(u64),
    Permit,
    Resolve {
        pick: usize,
        kind: u8,
        latency_ms: u64,
    },
    Timeout,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u64..3000).prop_map(Op::Step),
        1 => (0u64..2000).prop_map(Op::Back),
        4 => Just(Op::Permit),
        4 => (any::<usize>(), 0u8..4, 0u64..3000)
            .prop_map(|(pick, kind, latency_ms)| Op::Resolve { pick, kind, latency_ms }),
        1 => Just(Op::Timeout),
    ]
}

fn config() -> impl Strategy<Value = BreakerConfig> {
    (
        proptest::option::of(1u32..8),
        proptest::option::of(0.1f64..=1.0),
        prop_oneof![
            (1u32..60).prop_map(Window::Count),
            (1u64..20_000).prop_map(|m| Window::Time(Duration::from_millis(m))),
        ],
        1u32..30,
        proptest::option::of((1u64..2000).prop_map(Duration::from_millis)),
        0.1f64..=1.0,
        (100u64..5000, 1.0f64..3.0, 0u64..20_000, 0.0f64..=1.0),
        (1u32..5, 1u32..5),
    )
        .prop_map(
            |(consecutive, rate, window, min_calls, slow_call, slow_rate, open, probes)| {
                let min_calls = match window {
                    Window::Count(n) => min_calls.min(n),
                    Window::Time(_) => min_calls,
                };
                let (open_ms, growth, extra_ms, jitter) = open;
                BreakerConfig {
                    enabled: true,
                    mode: BreakerMode::Auto,
                    consecutive_failures: consecutive,
                    failure_rate: rate,
                    window,
                    min_calls,
                    slow_call,
                    slow_rate,
                    open_for: Duration::from_millis(open_ms),
                    open_growth: growth,
                    open_max: Duration::from_millis(open_ms + extra_ms),
                    open_jitter: jitter,
                    half_open_probes: probes.0,
                    close_after: probes.1,
                }
            },
        )
}

/// Drives a breaker through `ops`, checking the invariants, and returns its events.
fn drive(config: &BreakerConfig, ops: &[Op], seed: u64) -> Vec<BreakerEvent> {
    assert_eq!(config.validate(), Ok(()));
    let mut b = Breaker::new(config);
    let mut rng = from_u64(seed);
    let mut now = Timestamp::ZERO;
    let mut latest = Timestamp::ZERO;
    // Permitted calls not yet reported, with the half-open period of a probe.
    let mut outstanding: Vec<Option<u32>> = Vec::new();
    let mut events = Vec::new();
    for op in ops {
        match *op {
            Op::Step(d) => now = now + Duration::from_millis(d),
            Op::Back(d) => now = now - Duration::from_millis(d),
            Op::Permit => {
                latest = latest.max(now);
                let before = b.state();
                let peeked = b.peek(now);
                let permit = b.permit(now);
                assert_eq!(peeked, permit);
                if let BreakerState::Open { until } = before {
                    if latest < until {
                        assert_eq!(permit, Permit::Deny { until });
                    }
                }
                match permit {
                    Permit::Allow => {
                        assert_eq!(before, BreakerState::Closed);
                        outstanding.push(None);
                    }
                    Permit::Probe => {
                        assert_eq!(b.state(), BreakerState::HalfOpen);
                        outstanding.push(Some(b.probe_period()));
                    }
                    Permit::Deny { until } => assert!(until > latest),
                }
                let current = Some(b.probe_period());
                let probes = outstanding.iter().filter(|p| **p == current).count();
                assert!(probes <= config.half_open_probes as usize);
            }
            Op::Resolve {
                pick,
                kind,
                latency_ms,
            } => {
                if outstanding.is_empty() {
                    continue;
                }
                latest = latest.max(now);
                let period = outstanding.swap_remove(pick % outstanding.len());
                let was_probe = period == Some(b.probe_period());
                let input = match kind {
                    0 => BreakerInput::Failure,
                    1 => BreakerInput::Ignored,
                    _ => BreakerInput::Success {
                        latency: Duration::from_millis(latency_ms),
                    },
                };
                let (before, counts, trips) = (b.state(), b.counts(), b.trips());
                b.on_result(now, input, was_probe, &mut rng);
                if config.consecutive_failures.is_none()
                    && before == BreakerState::Closed
                    && b.trips() > trips
                {
                    assert!(counts.calls + 1 >= u64::from(config.min_calls));
                }
            }
            Op::Timeout => {
                if let Some(t) = b.poll_timeout() {
                    now = now.max(t);
                }
                latest = latest.max(now);
                b.handle_timeout(now);
            }
        }
        let current = Some(b.probe_period());
        let probes = outstanding.iter().filter(|p| **p == current).count();
        if b.state() == BreakerState::HalfOpen {
            assert_eq!(b.probes_in_flight() as usize, probes);
        }
        if let Window::Count(n) = config.window {
            let per = u64::from(n.div_ceil(16));
            assert!(b.counts().calls < u64::from(n) + per);
        }
        while let Some(e) = b.poll_event() {
            if let Some(last) = events.last() {
                let last: &BreakerEvent = last;
                assert_eq!(last.to, e.from);
                assert!(last.at <= e.at);
            }
            assert!(e.at <= latest);
            if e.to == StateKind::Open {
                let BreakerState::Open { until } = b.state() else {
                    panic!("open event but not open")
                };
                // One input makes at most one transition, so this open is the state.
                let open = until.saturating_duration_since(e.at);
                assert!(open >= config.open_for, "{open:?}");
                let max = config.open_max.as_secs_f64() * (1.0 + config.open_jitter);
                assert!(open.as_secs_f64() <= max + 1e-9, "{open:?}");
            }
            events.push(e);
        }
    }
    events
}

proptest! {
    #[test]
    fn invariants_hold_for_any_sequence(
        config in config(),
        ops in proptest::collection::vec(op(), 1..300),
        seed in any::<u64>(),
    ) {
        drive(&config, &ops, seed);
    }

    #[test]
    fn the_same_seed_and_inputs_give_the_same_trace(
        config in config(),
        ops in proptest::collection::vec(op(), 1..300),
        seed in any::<u64>(),
    ) {
        prop_assert_eq!(drive(&config, &ops, seed), drive(&config, &ops, seed));
    }

    #[test]
    fn trips_are_reachable_in_failure_heavy_runs(seed in any::<u64>()) {
        // A sanity check that the properties above are not vacuous.
        let config = five_in_a_row();
        let ops: Vec<Op> = (0..200)
            .flat_map(|i| [Op::Permit, Op::Resolve { pick: i, kind: 0, latency_ms: 1 }, Op::Step(500)])
            .collect();
        let events = drive(&config, &ops, seed);
        prop_assert!(events.iter().any(|e| e.to == StateKind::Open));
        prop_assert!(events.iter().any(|e| e.to == StateKind::HalfOpen));
    }
}

#[cfg(feature = "serde")]
mod serde_tests {
    use super::*;
    use crate::duration::Human;
    use alloc::format;

    #[test]
    fn default_serializes_as_expected() {
        let h = |d: u64| Human(secs(d));
        let expected = format!(
            "{{\"enabled\":true,\"mode\":\"auto\",\"consecutive_failures\":\"off\",\"failure_rate\":0.5,\
             \"window\":{{\"calls\":50}},\"min_calls\":20,\"slow_call\":null,\
             \"slow_rate\":1.0,\"open_for\":\"{}\",\"open_growth\":2.0,\"open_max\":\"{}\",\
             \"open_jitter\":0.1,\"half_open_probes\":3,\"close_after\":2}}",
            h(5),
            h(60)
        );
        assert_eq!(
            serde_json::to_string(&BreakerConfig::default()).unwrap(),
            expected
        );
    }

    #[test]
    fn off_turns_a_model_off_and_counts_read_without_durations() {
        let c: BreakerConfig = toml::from_str(
            "consecutive_failures = \"off\"\nfailure_rate = 0.25\nwindow = { calls = 100 }\n",
        )
        .unwrap();
        assert_eq!(c.consecutive_failures, None);
        assert_eq!(c.failure_rate, Some(0.25));
        assert_eq!(c.window, Window::Count(100));
        assert_eq!(c.min_calls, 20);
        let c: BreakerConfig =
            serde_json::from_str(r#"{"failure_rate":"off","consecutive_failures":3}"#).unwrap();
        assert_eq!(c.failure_rate, None);
        assert_eq!(c.consecutive_failures, Some(3));
        assert!(toml::from_str::<BreakerConfig>("consecutive_failures = \"on\"").is_err());
        assert!(toml::from_str::<BreakerConfig>("consecutive_failures = -1").is_err());
        assert!(toml::from_str::<BreakerConfig>("typo = 1").is_err());
        let off = BreakerConfig {
            consecutive_failures: None,
            ..BreakerConfig::default()
        };
        let json = serde_json::to_string(&off).unwrap();
        assert!(json.contains("\"consecutive_failures\":\"off\""), "{json}");
    }

    #[test]
    fn round_trips_through_toml_and_json() {
        let c = BreakerConfig {
            consecutive_failures: None,
            slow_call: Some(Duration::from_millis(1500)),
            slow_rate: 0.8,
            window: Window::Time(secs(90)),
            ..BreakerConfig::default()
        };
        for c in [c, BreakerConfig::default()] {
            let text = toml::to_string(&c).unwrap();
            assert_eq!(toml::from_str::<BreakerConfig>(&text).unwrap(), c);
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<BreakerConfig>(&json).unwrap(), c);
        }
        let read: BreakerConfig =
            toml::from_str("window = { time = \"30s\" }\nopen_for = \"2s\"").unwrap();
        assert_eq!(read.window, Window::Time(secs(30)));
        assert_eq!(read.open_for, secs(2));
    }
}

mod modes;

#[test]
fn an_open_from_elsewhere_opens_until_its_instant_and_then_probes() {
    let mut b = Breaker::new(&exact());
    assert!(b.open_until(ms(100), ms(1_100)));
    assert_eq!(b.state(), BreakerState::Open { until: ms(1_100) });
    assert_eq!(b.permit(ms(1_099)), Permit::Deny { until: ms(1_100) });
    // An earlier instant changes nothing; a later one keeps it open longer.
    assert!(!b.open_until(ms(200), ms(900)));
    assert!(b.open_until(ms(200), ms(1_200)));
    assert_eq!(b.poll_timeout(), Some(ms(1_200)));
    assert_eq!(b.trips(), 0, "no trip of its own");
    let kinds: Vec<_> = core::iter::from_fn(|| b.poll_event())
        .map(|e| e.to)
        .collect();
    assert_eq!(kinds, [StateKind::Open]);
    assert_eq!(b.permit(ms(1_200)), Permit::Probe);
    // A past instant, or a frozen mode, opens nothing.
    assert!(!b.open_until(ms(1_300), ms(1_300)));
    let mut off = Breaker::new(&exact());
    off.set_mode(ms(0), BreakerMode::Disabled);
    assert!(!off.open_until(ms(0), ms(1_000)));
    assert_eq!(off.permit(ms(1)), Permit::Allow);
}
