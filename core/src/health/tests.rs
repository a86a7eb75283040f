#![allow(clippy::arithmetic_side_effects)]

use super::*;
use SampleResult::*;
use alloc::vec::Vec;
use proptest::prelude::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at_ms(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

fn window() -> HealthWindow {
    HealthWindow::new(&HealthConfig::default())
}

fn feed(w: &mut HealthWindow, now: Timestamp, result: SampleResult, latency: Duration, n: u32) {
    for _ in 0..n {
        w.on_sample(now, Sample::new(result, latency));
    }
}

/// The largest relative error the bins allow for a latency in [1 ms, 652.5 s).
const BIN_ERROR: f64 = 0.125;

fn within_bin_error(estimate: Duration, truth: Duration) -> bool {
    let (e, t) = (nanos_of(estimate) as f64, nanos_of(truth) as f64);
    if nanos_of(truth) < LATENCY_BOUNDS[0] {
        (e - t).abs() <= 500_000.0
    } else if nanos_of(truth) >= LATENCY_BOUNDS[60] {
        nanos_of(estimate) == LATENCY_BOUNDS[60]
    } else {
        (e - t).abs() <= BIN_ERROR * t + 1.0
    }
}

#[test]
fn bounds_grow_by_a_quarter() {
    assert_eq!(LATENCY_BOUNDS[0], 1_000_000);
    for pair in LATENCY_BOUNDS.windows(2) {
        assert_eq!(pair[1], pair[0] + pair[0] / 4);
    }
    assert!(LATENCY_BOUNDS[60] >= 600_000_000_000);
    assert_eq!(LATENCY_BINS, 62);
}

#[test]
fn bins_match_a_search_over_the_bounds() {
    let search = |nanos: u64| LATENCY_BOUNDS.partition_point(|&bound| bound <= nanos);
    let mut values = alloc::vec![0, 1, u64::MAX];
    for &bound in &LATENCY_BOUNDS {
        values.extend([bound - 1, bound, bound + 1]);
    }
    for k in 0..64 {
        let p = 1u64 << k;
        values.extend([p - 1, p, p.saturating_add(1)]);
    }
    // A fixed-step walk through the whole range as well (no RNG needed).
    let mut v: u64 = 7;
    for _ in 0..100_000 {
        values.push(v);
        v = v
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        values.push(v >> (v % 64));
    }
    for nanos in values {
        assert_eq!(
            bin_of(Duration::from_nanos(nanos)),
            search(nanos),
            "{nanos} ns"
        );
    }
}

#[test]
fn bins_and_their_estimates() {
    assert_eq!(bin_of(Duration::ZERO), 0);
    assert_eq!(bin_of(Duration::from_nanos(999_999)), 0);
    assert_eq!(bin_of(ms(1)), 1);
    assert_eq!(bin_of(Duration::from_nanos(1_249_999)), 1);
    assert_eq!(bin_of(Duration::from_nanos(1_250_000)), 2);
    assert_eq!(bin_of(Duration::from_nanos(LATENCY_BOUNDS[60])), 61);
    assert_eq!(bin_of(Duration::MAX), 61);
    assert_eq!(bin_estimate(0), Duration::from_micros(500));
    assert_eq!(bin_estimate(1), Duration::from_nanos(1_125_000));
    assert_eq!(bin_estimate(61), Duration::from_nanos(652_529_979_765));
    for bin in 1..=60 {
        let lo = LATENCY_BOUNDS[bin - 1];
        let hi = LATENCY_BOUNDS[bin] - 1;
        for v in [lo, hi] {
            let d = Duration::from_nanos(v);
            assert_eq!(bin_of(d), bin);
            assert!(
                within_bin_error(bin_estimate(bin), d),
                "bin {bin} value {v}"
            );
        }
    }
}

#[test]
fn empty_window() {
    let r = window().report(at_ms(5_000), &SlaTargets::default());
    assert_eq!(r.samples, 0);
    assert_eq!(r.availability, 1.0);
    assert_eq!(r.error_rate, 0.0);
    assert_eq!(r.rate(Success), 0.0);
    assert_eq!((r.p50, r.p95, r.p99), (None, None, None));
    assert!(r.violations.is_empty());
}

#[test]
fn crafted_figures() {
    let mut w = window();
    let t = at_ms(1_000);
    feed(&mut w, t, Success, ms(100), 90);
    feed(&mut w, t, Throttled, ms(5), 5);
    feed(&mut w, t, KeyError, ms(5), 2);
    feed(&mut w, t, EndpointError, ms(3_000), 2);
    feed(&mut w, t, Timeout, ms(30_000), 1);
    feed(&mut w, t, RequestError, ms(5), 10);
    let r = w.report(t, &SlaTargets::default());
    assert_eq!(r.samples, 110);
    assert_eq!(r.counts.get(Success), 90);
    assert_eq!(r.counts.get(RequestError), 10);
    assert_eq!(r.counts.total(), 110);
    assert_eq!(r.availability, 0.9);
    assert_eq!(r.error_rate, 0.03);
    assert_eq!(r.rate(Throttled), 5.0 / 110.0);
    let shares: f64 = SampleResult::ALL.iter().map(|&k| r.rate(k)).sum();
    assert!((shares - 1.0).abs() < 1e-12);
    // 100 ms lies in [86.736113 ms, 108.420141 ms): reported as the middle.
    let expected = Duration::from_nanos(97_578_127);
    assert_eq!(
        (r.p50, r.p95, r.p99),
        (Some(expected), Some(expected), Some(expected))
    );
    assert!(within_bin_error(expected, ms(100)));
}

#[test]
fn percentiles_of_a_spread() {
    let mut w = window();
    for i in 1..=100 {
        w.on_sample(at_ms(0), Sample::new(Success, ms(i)));
    }
    let r = w.report(at_ms(0), &SlaTargets::default());
    let (p50, p95, p99) = (r.p50.unwrap(), r.p95.unwrap(), r.p99.unwrap());
    assert!(within_bin_error(p50, ms(50)), "{p50:?}");
    assert!(within_bin_error(p95, ms(95)), "{p95:?}");
    assert!(within_bin_error(p99, ms(99)), "{p99:?}");
    assert!(p50 <= p95 && p95 <= p99);
}

#[test]
fn extremes_are_clamped_to_the_outer_bins() {
    let mut w = window();
    w.on_sample(at_ms(0), Sample::new(Success, Duration::from_micros(10)));
    assert_eq!(
        w.report(at_ms(0), &SlaTargets::default()).p99,
        Some(Duration::from_micros(500))
    );
    w.on_sample(at_ms(0), Sample::new(Success, Duration::from_secs(3_600)));
    let r = w.report(at_ms(0), &SlaTargets::default());
    assert_eq!(r.p50, Some(Duration::from_micros(500)));
    assert_eq!(r.p99, Some(Duration::from_nanos(LATENCY_BOUNDS[60])));
}

#[test]
fn old_buckets_leave_the_window() {
    // 60 s window: 12 slots of 5 s.
    let mut w = window();
    feed(&mut w, at_ms(4_999), EndpointError, ms(1), 3);
    feed(&mut w, at_ms(5_000), Success, ms(1), 2);
    let count = |w: &HealthWindow, now| w.report(at_ms(now), &SlaTargets::default()).samples;
    assert_eq!(count(&w, 5_000), 5);
    // Slot 0 counts up to the end of slot 11 (59.999 s), and not from 60 s on.
    assert_eq!(count(&w, 59_999), 5);
    assert_eq!(count(&w, 60_000), 2);
    assert_eq!(count(&w, 64_999), 2);
    assert_eq!(count(&w, 65_000), 0);
    assert_eq!(count(&w, 1_000_000), 0);
    // Reusing slot 0's bucket clears what it held.
    feed(&mut w, at_ms(60_001), Timeout, ms(1), 1);
    let r = w.report(at_ms(60_001), &SlaTargets::default());
    assert_eq!(r.samples, 3);
    assert_eq!(r.counts.get(EndpointError), 0);
    assert_eq!(r.counts.get(Timeout), 1);
}

#[test]
fn a_clock_stepping_back_is_clamped() {
    let mut w = window();
    feed(&mut w, at_ms(100_000), Success, ms(1), 1);
    // Counted at 100 s, the latest instant seen.
    feed(&mut w, at_ms(0), EndpointError, ms(1), 1);
    let r = w.report(at_ms(0), &SlaTargets::default());
    assert_eq!(r.samples, 2);
    assert_eq!(w.report(at_ms(160_000), &SlaTargets::default()).samples, 0);
    feed(&mut w, Timestamp::MAX, Success, Duration::MAX, 1);
    feed(&mut w, at_ms(0), Success, ms(1), 1);
    assert_eq!(w.report(at_ms(0), &SlaTargets::default()).samples, 2);
}

#[test]
fn tiny_windows_do_not_divide_by_zero() {
    let mut w = HealthWindow::new(&HealthConfig {
        window: Duration::ZERO,
    });
    feed(&mut w, Timestamp::from_nanos(5), Success, ms(1), 1);
    assert_eq!(
        w.report(Timestamp::from_nanos(16), &SlaTargets::default())
            .samples,
        1
    );
    assert_eq!(
        w.report(Timestamp::from_nanos(17), &SlaTargets::default())
            .samples,
        0
    );
}

fn sla(availability: f64) -> SlaTargets {
    SlaTargets {
        availability,
        ..SlaTargets::default()
    }
}

#[test]
fn violations_in_order() {
    let mut w = window();
    let t = at_ms(0);
    feed(&mut w, t, Success, ms(2_000), 90);
    feed(&mut w, t, Success, ms(100), 5);
    feed(&mut w, t, EndpointError, ms(100), 5);
    let targets = SlaTargets {
        availability: 0.99,
        p95: Some(ms(1_000)),
        p99: Some(ms(10_000)),
        max_error_rate: Some(0.01),
        min_samples: 10,
    };
    let r = w.report(t, &targets);
    let p95 = bin_estimate(bin_of(ms(2_000)));
    let got: Vec<Violation> = r.violations.iter().copied().collect();
    assert_eq!(
        got,
        [
            Violation::Availability {
                target: 0.99,
                actual: 0.95
            },
            Violation::ErrorRate {
                target: 0.01,
                actual: 0.05
            },
            Violation::P95 {
                target: ms(1_000),
                actual: p95
            },
        ]
    );
    assert_eq!(r.violations.len(), 3);
    assert!(w.report(t, &sla(0.95)).violations.is_empty());
    let lax = SlaTargets {
        p95: Some(ms(2_500)),
        ..targets
    };
    assert_eq!(w.report(t, &lax).violations.len(), 2);
}

#[test]
fn too_few_samples_are_not_judged() {
    let mut w = window();
    let t = at_ms(0);
    feed(&mut w, t, EndpointError, ms(1), 9);
    // Request errors do not count toward availability, nor toward the minimum.
    feed(&mut w, t, RequestError, ms(1), 50);
    assert!(w.report(t, &SlaTargets::default()).violations.is_empty());
    feed(&mut w, t, Timeout, ms(1), 1);
    let r = w.report(t, &SlaTargets::default());
    assert_eq!(r.availability, 0.0);
    assert_eq!(r.error_rate, 1.0);
    assert_eq!(
        r.violations.iter().copied().collect::<Vec<_>>(),
        [Violation::Availability {
            target: 0.99,
            actual: 0.0
        }]
    );
    // Latency targets wait for min_samples successes.
    let slow = SlaTargets {
        availability: 0.0,
        p99: Some(ms(1)),
        ..SlaTargets::default()
    };
    feed(&mut w, t, Success, ms(50), 9);
    assert!(w.report(t, &slow).violations.is_empty());
    feed(&mut w, t, Success, ms(50), 1);
    assert!(matches!(
        w.report(t, &slow).violations.iter().next(),
        Some(Violation::P99 { .. })
    ));
    let eager = SlaTargets {
        min_samples: 0,
        ..SlaTargets::default()
    };
    assert!(window().report(t, &eager).violations.is_empty());
}

#[test]
fn config_defaults_and_validation() {
    assert_eq!(HealthConfig::default().window, Duration::from_secs(60));
    assert_eq!(HealthConfig::default().validate(), Ok(()));
    assert_eq!(
        HealthConfig {
            window: Duration::ZERO
        }
        .validate()
        .map_err(|e| e.field()),
        Err("health.window")
    );
    let d = SlaTargets::default();
    assert_eq!(
        (
            d.availability,
            d.p95,
            d.p99,
            d.max_error_rate,
            d.min_samples
        ),
        (0.99, None, None, None, 10)
    );
    assert_eq!(d.validate(), Ok(()));
    let field = |s: SlaTargets| s.validate().map_err(|e| e.field());
    assert_eq!(field(sla(1.5)), Err("sla.availability"));
    assert_eq!(field(sla(f64::NAN)), Err("sla.availability"));
    assert_eq!(field(sla(1.0)), Ok(()));
    let with = |f: fn(&mut SlaTargets)| {
        let mut s = SlaTargets::default();
        f(&mut s);
        field(s)
    };
    assert_eq!(
        with(|s| s.max_error_rate = Some(-0.1)),
        Err("sla.max_error_rate")
    );
    assert_eq!(with(|s| s.p95 = Some(Duration::ZERO)), Err("sla.p95"));
    assert_eq!(with(|s| s.p99 = Some(Duration::ZERO)), Err("sla.p99"));
    let order = SlaTargets {
        p95: Some(ms(2)),
        p99: Some(ms(1)),
        ..d
    }
    .validate();
    assert_eq!(
        order,
        Err(ConfigError::Order {
            lower: "sla.p95",
            upper: "sla.p99"
        })
    );
}

#[cfg(feature = "serde")]
mod serde_tests {
    use super::*;
    use crate::duration::Human;
    use alloc::format;

    #[test]
    fn defaults_serialize() {
        assert_eq!(
            serde_json::to_string(&HealthConfig::default()).unwrap(),
            format!("{{\"window\":\"{}\"}}", Human(Duration::from_secs(60)))
        );
        assert_eq!(
            serde_json::to_string(&SlaTargets::default()).unwrap(),
            "{\"availability\":0.99,\"min_samples\":10}"
        );
        assert_eq!(
            toml::to_string(&SlaTargets::default()).unwrap(),
            "availability = 0.99\nmin_samples = 10\n"
        );
        assert_eq!(
            serde_json::to_string(&EndpointError).unwrap(),
            "\"endpoint_error\""
        );
    }

    #[test]
    fn sla_reads_without_durations() {
        let s: SlaTargets = toml::from_str("availability = 0.995\nmax_error_rate = 0.05").unwrap();
        assert_eq!(
            s,
            SlaTargets {
                availability: 0.995,
                max_error_rate: Some(0.05),
                ..SlaTargets::default()
            }
        );
        assert!(toml::from_str::<SlaTargets>("p96 = \"1s\"").is_err());
        assert!(toml::from_str::<HealthConfig>("windoe = \"1s\"").is_err());
    }

    #[test]
    fn configs_round_trip() {
        let s = SlaTargets {
            p95: Some(ms(800)),
            p99: Some(ms(2_500)),
            ..SlaTargets::default()
        };
        assert_eq!(
            toml::from_str::<SlaTargets>(&toml::to_string(&s).unwrap()).unwrap(),
            s
        );
        let c = HealthConfig { window: ms(90_000) };
        assert_eq!(
            toml::from_str::<HealthConfig>(&toml::to_string(&c).unwrap()).unwrap(),
            c
        );
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Advance(u64),
    StepBack(u64),
    Sample(SampleResult, Duration),
    Report,
}

fn result_kind() -> impl Strategy<Value = SampleResult> {
    prop_oneof![
        4 => Just(Success),
        1 => Just(Throttled),
        1 => Just(KeyError),
        1 => Just(EndpointError),
        1 => Just(Timeout),
        1 => Just(RequestError),
    ]
}

/// Latencies spread over every decade from 0.1 ms to 600 s.
fn latency() -> impl Strategy<Value = Duration> {
    (1_000u64..10_000, 2u32..9)
        .prop_map(|(m, e)| Duration::from_nanos((m * 10u64.pow(e - 2)).min(600_000_000_000)))
}

fn op(step_ms: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0..step_ms).prop_map(Op::Advance),
        1 => (0..step_ms).prop_map(Op::StepBack),
        8 => (result_kind(), latency()).prop_map(|(r, l)| Op::Sample(r, l)),
        1 => Just(Op::Report),
    ]
}

fn scenario() -> impl Strategy<Value = (u64, Vec<Op>)> {
    (1_000u64..120_000).prop_flat_map(|window_ms| {
        (
            Just(window_ms),
            proptest::collection::vec(op(window_ms / 4 + 1), 0..300),
        )
    })
}

/// Checks one report against a brute-force pass over every sample fed.
fn check(
    w: &HealthWindow,
    fed: &[(Timestamp, Sample)],
    now: Timestamp,
    latest: Timestamp,
    window: Duration,
) -> Result<(), TestCaseError> {
    let r = w.report(now, &SlaTargets::default());
    let slot = nanos_of(window) / TIME_BUCKETS as u64;
    let current = latest.as_nanos() / slot;
    let mut in_window: Vec<Sample> = Vec::new();
    for &(t, s) in fed {
        let age = latest.saturating_duration_since(t);
        let counted = t.as_nanos() / slot + TIME_BUCKETS as u64 > current;
        if counted {
            prop_assert!(age < window, "a sample older than the window is counted");
            in_window.push(s);
        } else {
            prop_assert!(age.as_nanos() >= u128::from(slot) * 11);
        }
    }
    prop_assert!(r.samples <= fed.len() as u64);
    prop_assert_eq!(r.samples, in_window.len() as u64);
    for kind in SampleResult::ALL {
        let n = in_window.iter().filter(|s| s.result == kind).count() as u64;
        prop_assert_eq!(r.counts.get(kind), n);
    }
    let mut ok: Vec<Duration> = in_window
        .iter()
        .filter(|s| s.result == Success)
        .map(|s| s.latency)
        .collect();
    ok.sort();
    let eligible = r.samples - r.counts.get(RequestError);
    if eligible > 0 {
        prop_assert_eq!(r.availability, ok.len() as f64 / eligible as f64);
    }
    let got = [r.p50, r.p95, r.p99];
    for (p, estimate) in [50u64, 95, 99].into_iter().zip(got) {
        if ok.is_empty() {
            prop_assert_eq!(estimate, None);
            continue;
        }
        let rank = (ok.len() as u64 * p).div_ceil(100).max(1);
        let truth = ok[rank as usize - 1];
        let estimate = estimate.unwrap();
        prop_assert!(
            within_bin_error(estimate, truth),
            "p{} {:?} vs {:?}",
            p,
            estimate,
            truth
        );
    }
    prop_assert!(got[0] <= got[1] && got[1] <= got[2]);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x4ea1_7001),
        ..ProptestConfig::default()
    })]

    #[test]
    fn reports_match_a_brute_force_reference((window_ms, ops) in scenario()) {
        let window = ms(window_ms);
        let mut w = HealthWindow::new(&HealthConfig { window });
        let mut fed: Vec<(Timestamp, Sample)> = Vec::new();
        let mut now = at_ms(10_000_000);
        let mut latest = Timestamp::ZERO;
        for op in ops {
            match op {
                Op::Advance(d) => now = now + ms(d),
                Op::StepBack(d) => now = now - ms(d),
                Op::Sample(result, latency) => {
                    let sample = Sample::new(result, latency);
                    w.on_sample(now, sample);
                    latest = latest.max(now);
                    fed.push((latest, sample));
                }
                Op::Report => check(&w, &fed, now, latest.max(now), window)?,
            }
        }
        check(&w, &fed, now, latest.max(now), window)?;
    }
}
