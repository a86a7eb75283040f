#![allow(clippy::arithmetic_side_effects)]

use super::*;
use crate::rng::{CoreRng, from_u64};
use proptest::prelude::*;
use rand_core::Rng;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn config(jitter: Jitter) -> BackoffConfig {
    BackoffConfig {
        jitter,
        ..BackoffConfig::default()
    }
}

/// An RNG that counts its draws: `next_u32`, and anything wider.
struct Counting {
    inner: CoreRng,
    draws: usize,
    wide: usize,
}

impl rand_core::TryRng for Counting {
    type Error = core::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        self.draws += 1;
        Ok(self.inner.next_u32())
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        self.wide += 1;
        Ok(self.inner.next_u64())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.wide += 1;
        self.inner.fill_bytes(dst);
        Ok(())
    }
}

const ALL_MODES: [Jitter; 6] = [
    Jitter::None,
    Jitter::Full,
    Jitter::Equal,
    Jitter::Decorrelated,
    Jitter::Proportional(0.2),
    Jitter::Proportional(1.0),
];

#[test]
fn none_gives_exact_exponential_delays_up_to_the_cap() {
    let mut b = Backoff::new(config(Jitter::None));
    let mut rng = from_u64(1);
    let got: std::vec::Vec<Duration> = (1..=9).map(|n| b.next_delay(n, &mut rng)).collect();
    assert_eq!(
        got,
        [
            ms(500),
            ms(1_000),
            ms(2_000),
            ms(4_000),
            ms(8_000),
            ms(16_000),
            ms(30_000),
            ms(30_000),
            ms(30_000)
        ]
    );
    assert_eq!(b.next_delay(0, &mut rng), ms(500), "retry 0 acts as 1");
    assert_eq!(b.next_delay(10_000, &mut rng), ms(30_000));
    assert_eq!(b.next_delay(u32::MAX, &mut rng), ms(30_000));
}

#[test]
fn none_draws_nothing_and_random_modes_draw_one_u32_each() {
    for mode in ALL_MODES {
        let mut rng = Counting {
            inner: from_u64(3),
            draws: 0,
            wide: 0,
        };
        let mut b = Backoff::new(config(mode));
        for n in [0, 1, 2, 7, 10_000, u32::MAX] {
            b.next_delay(n, &mut rng);
        }
        let expected = if mode == Jitter::None { 0 } else { 6 };
        assert_eq!(rng.draws, expected, "{mode:?}: one next_u32 per delay");
        assert_eq!(rng.wide, 0, "{mode:?}");
    }
}

#[test]
fn non_integer_factor_and_odd_base() {
    let c = BackoffConfig {
        base: ms(100),
        factor: 1.5,
        cap: ms(1_000),
        jitter: Jitter::None,
    };
    let b = Backoff::new(c);
    assert_eq!(b.nominal(1), ms(100));
    assert_eq!(b.nominal(2), ms(150));
    assert_eq!(b.nominal(3), ms(225));
    assert_eq!(b.nominal(4), Duration::from_micros(337_500));
    assert_eq!(b.nominal(7), ms(1_000));
    assert_eq!(b.nominal(u32::MAX), ms(1_000));
}

#[test]
fn factor_one_is_constant() {
    let c = BackoffConfig {
        factor: 1.0,
        jitter: Jitter::None,
        ..BackoffConfig::default()
    };
    let b = Backoff::new(c);
    for n in [0, 1, 2, 50, u32::MAX] {
        assert_eq!(b.nominal(n), ms(500));
    }
}

#[test]
fn factor_barely_above_one_still_grows_and_is_bounded() {
    let c = BackoffConfig {
        factor: 1.0 + f64::EPSILON,
        jitter: Jitter::None,
        ..BackoffConfig::default()
    };
    let b = Backoff::new(c);
    assert_eq!(b.nominal(2), ms(500));
    // (1 + 2^-52)^(2^32 - 1) ≈ 1 + 9.5e-7: the exponent is not clamped early.
    assert_eq!(b.nominal(u32::MAX), Duration::from_nanos(500_000_476));
    let c = BackoffConfig {
        factor: 1.001,
        jitter: Jitter::None,
        ..BackoffConfig::default()
    };
    let b = Backoff::new(c);
    assert!(b.nominal(1_000) > ms(1_350) && b.nominal(1_000) < ms(1_360));
    assert_eq!(b.nominal(u32::MAX), ms(30_000));
}

#[test]
fn full_equal_and_proportional_stay_in_their_bands() {
    let mut rng = from_u64(42);
    for n in 1..=12 {
        let d = Backoff::new(config(Jitter::None)).nominal(n);
        let mut full = Backoff::new(config(Jitter::Full));
        let mut equal = Backoff::new(config(Jitter::Equal));
        let mut prop = Backoff::new(config(Jitter::Proportional(0.2)));
        for _ in 0..200 {
            assert!(full.next_delay(n, &mut rng) <= d);
            let e = equal.next_delay(n, &mut rng);
            assert!(e >= d / 2 && e <= d, "{e:?} vs {d:?}");
            let p = prop.next_delay(n, &mut rng);
            assert!(p >= d.mul_f64(0.8) - Duration::from_nanos(1), "{p:?}");
            assert!(p <= d.mul_f64(1.2).min(ms(30_000)), "{p:?}");
        }
    }
}

#[test]
fn proportional_above_the_cap_is_clamped() {
    let mut b = Backoff::new(config(Jitter::Proportional(1.0)));
    let mut rng = from_u64(9);
    let mut saw_cap = false;
    for _ in 0..1_000 {
        let d = b.next_delay(100, &mut rng);
        assert!(d <= ms(30_000));
        saw_cap |= d == ms(30_000);
    }
    assert!(saw_cap, "half the draws land above the cap");
}

#[test]
fn decorrelated_grows_from_its_previous_delay_and_resets() {
    let mut b = Backoff::new(config(Jitter::Decorrelated));
    let mut rng = from_u64(5);
    let mut prev = ms(500);
    for _ in 0..50 {
        let d = b.next_delay(1, &mut rng);
        assert!(d >= ms(500), "{d:?}");
        assert!(d <= (prev * 3).min(ms(30_000)), "{d:?} after {prev:?}");
        prev = d;
    }
    b.reset();
    let first = b.next_delay(1, &mut rng);
    assert!(first >= ms(500) && first <= ms(1_500), "{first:?}");
}

#[test]
fn decorrelated_sequence_is_pinned() {
    // The first delay is base + 2·base·u with the first draw of seed 0.
    let mut b = Backoff::new(config(Jitter::Decorrelated));
    let mut rng = from_u64(0);
    let u = unit_fraction(&mut from_u64(0));
    let expected = Duration::from_nanos((500_000_000.0 + 1_000_000_000.0 * u) as u64);
    assert_eq!(b.next_delay(1, &mut rng), expected);
}

#[test]
fn zero_base_means_no_wait() {
    for mode in ALL_MODES {
        let c = BackoffConfig {
            base: Duration::ZERO,
            jitter: mode,
            ..BackoffConfig::default()
        };
        let mut b = Backoff::new(c);
        let mut rng = from_u64(1);
        for n in [1, 2, 1_000, u32::MAX] {
            assert_eq!(b.next_delay(n, &mut rng), Duration::ZERO, "{mode:?}");
        }
    }
}

#[test]
fn invalid_configs_still_give_bounded_delays() {
    let bad = [
        (Duration::from_secs(60), f64::NAN, ms(1)),
        (ms(1), f64::INFINITY, Duration::MAX),
        (ms(1), -3.0, ms(10)),
        (ms(1), 1e300, ms(10)),
        (Duration::MAX, 2.0, Duration::MAX),
        (ms(1), 2.0, Duration::ZERO),
    ];
    for (base, factor, cap) in bad {
        for jitter in ALL_MODES
            .into_iter()
            .chain([Jitter::Proportional(f64::NAN), Jitter::Proportional(-1.0)])
        {
            let mut b = Backoff::new(BackoffConfig {
                base,
                factor,
                cap,
                jitter,
            });
            let mut rng = from_u64(2);
            for n in [0, 1, 2, 64, 1_025, 10_000, u32::MAX] {
                assert!(
                    b.next_delay(n, &mut rng) <= cap,
                    "{base:?} {factor} {cap:?}"
                );
            }
        }
    }
}

#[test]
fn validate_names_the_bad_field() {
    assert_eq!(BackoffConfig::default().validate(), Ok(()));
    let err = |c: BackoffConfig| c.validate().unwrap_err();
    let d = BackoffConfig::default();
    assert_eq!(
        err(BackoffConfig {
            base: ms(31_000),
            ..d
        }),
        ConfigError::Order {
            lower: "backoff.base",
            upper: "backoff.cap"
        }
    );
    assert_eq!(
        err(BackoffConfig {
            cap: Duration::ZERO,
            base: Duration::ZERO,
            ..d
        }),
        ConfigError::Zero {
            field: "backoff.cap"
        }
    );
    for factor in [0.5, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(err(BackoffConfig { factor, ..d }).field(), "backoff.factor");
    }
    for f in [-0.1, 1.5, f64::NAN] {
        assert_eq!(
            err(config(Jitter::Proportional(f))).field(),
            "backoff.jitter"
        );
    }
    assert_eq!(config(Jitter::Proportional(0.0)).validate(), Ok(()));
    assert_eq!(config(Jitter::Proportional(1.0)).validate(), Ok(()));
    assert_eq!(
        BackoffConfig {
            base: Duration::ZERO,
            factor: 1.0,
            ..d
        }
        .validate(),
        Ok(())
    );
}

fn any_jitter() -> impl Strategy<Value = Jitter> {
    prop_oneof![
        Just(Jitter::None),
        Just(Jitter::Full),
        Just(Jitter::Equal),
        Just(Jitter::Decorrelated),
        (0.0..=1.0f64).prop_map(Jitter::Proportional),
    ]
}

fn any_retry() -> impl Strategy<Value = u32> {
    prop_oneof![
        0..=70u32,
        Just(10_000u32),
        Just(u32::MAX),
        Just(u32::MAX - 1),
        any::<u32>(),
    ]
}

fn any_config() -> impl Strategy<Value = BackoffConfig> {
    let factor = prop_oneof![1.0..=10.0f64, Just(2.0), Just(4.0), Just(8.0)];
    (0..=60_000u64, factor, 1..=120_000u64, any_jitter()).prop_map(|(base, factor, cap, jitter)| {
        BackoffConfig {
            base: ms(base.min(cap)),
            factor,
            cap: ms(cap),
            jitter,
        }
    })
}

proptest! {
    #[test]
    fn power_of_two_factors_shift_to_exactly_the_float_paths_delays(
        base in 1u64..(1u64 << 53),
        cap in 1u64..=(1u64 << 54),
        bits in 1u32..=4,
        retries in proptest::collection::vec(any_retry(), 1..30),
    ) {
        let c = BackoffConfig {
            base: Duration::from_nanos(base),
            factor: f64::from(1u32 << bits),
            cap: Duration::from_nanos(cap),
            jitter: Jitter::None,
        };
        let mut shifted = Backoff::new(c);
        let exact = cap < 1u64 << 53;
        prop_assert_eq!(shifted.shift, exact.then_some(bits));
        let mut float = shifted;
        float.shift = None;
        let mut rng = from_u64(0);
        for n in retries {
            prop_assert_eq!(shifted.nominal(n), float.nominal(n), "retry {}", n);
            prop_assert_eq!(shifted.next_delay(n, &mut rng), float.next_delay(n, &mut rng));
        }
    }

    #[test]
    fn delays_are_within_zero_and_cap(
        c in any_config(),
        retries in proptest::collection::vec(any_retry(), 1..40),
        seed in any::<u64>(),
    ) {
        prop_assert_eq!(c.validate(), Ok(()));
        let mut b = Backoff::new(c);
        let mut rng = from_u64(seed);
        for n in retries {
            let d = b.next_delay(n, &mut rng);
            prop_assert!(d <= c.cap, "{:?} > cap for retry {}", d, n);
            let nominal = b.nominal(n);
            prop_assert!(nominal <= c.cap);
            match c.jitter {
                Jitter::None => prop_assert_eq!(d, nominal),
                Jitter::Full => prop_assert!(d <= nominal),
                Jitter::Equal => prop_assert!(d >= nominal / 2 && d <= nominal),
                Jitter::Decorrelated => prop_assert!(d >= c.base),
                Jitter::Proportional(f) => {
                    let low = nominal.as_nanos() as f64 * (1.0 - f) - 1.0;
                    prop_assert!(d.as_nanos() as f64 >= low.min(c.cap.as_nanos() as f64));
                }
            }
        }
    }

    #[test]
    fn nominal_is_monotonic_in_the_retry_number(c in any_config(), a in any_retry(), b in any_retry()) {
        let bo = Backoff::new(c);
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        prop_assert!(bo.nominal(lo) <= bo.nominal(hi));
    }

    #[test]
    fn same_seed_same_sequence(
        c in any_config(),
        retries in proptest::collection::vec(any_retry(), 1..40),
        seed in any::<u64>(),
    ) {
        let run = || {
            let mut b = Backoff::new(c);
            let mut rng = from_u64(seed);
            retries.iter().map(|&n| b.next_delay(n, &mut rng)).collect::<std::vec::Vec<_>>()
        };
        prop_assert_eq!(run(), run());
    }
}

#[cfg(feature = "serde")]
mod serde_tests {
    use super::*;
    use crate::duration::Human;
    use alloc::string::ToString;

    #[test]
    fn jitter_modes_read_as_strings_and_a_table() {
        #[derive(serde::Deserialize, serde::Serialize, Debug, PartialEq)]
        struct Wrap {
            jitter: Jitter,
        }
        let cases = [
            ("none", Jitter::None),
            ("full", Jitter::Full),
            ("equal", Jitter::Equal),
            ("decorrelated", Jitter::Decorrelated),
        ];
        for (name, mode) in cases {
            let json = alloc::format!("\"{name}\"");
            assert_eq!(serde_json::from_str::<Jitter>(&json).unwrap(), mode);
            assert_eq!(serde_json::to_string(&mode).unwrap(), json);
            let toml_text = alloc::format!("jitter = \"{name}\"\n");
            assert_eq!(
                toml::from_str::<Wrap>(&toml_text).unwrap(),
                Wrap { jitter: mode }
            );
            assert_eq!(toml::to_string(&Wrap { jitter: mode }).unwrap(), toml_text);
        }
        let p = Jitter::Proportional(0.2);
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"proportional":0.2}"#
        );
        assert_eq!(
            serde_json::from_str::<Jitter>(r#"{"proportional":0.2}"#).unwrap(),
            p
        );
        assert_eq!(
            toml::from_str::<Wrap>("jitter = { proportional = 0.2 }").unwrap(),
            Wrap { jitter: p }
        );
        let back: Wrap = toml::from_str(&toml::to_string(&Wrap { jitter: p }).unwrap()).unwrap();
        assert_eq!(back.jitter, p);
        assert!(serde_json::from_str::<Jitter>("\"sometimes\"").is_err());
        assert!(serde_json::from_str::<Jitter>("\"proportional\"").is_err());
    }

    #[test]
    fn durations_serialize_through_the_human_formatter() {
        let v = serde_json::to_value(BackoffConfig::default()).unwrap();
        assert_eq!(v["base"], Human(ms(500)).to_string());
        assert_eq!(v["cap"], Human(ms(30_000)).to_string());
        assert_eq!(v["factor"], 2.0);
        assert_eq!(v["jitter"], "full");
    }

    #[test]
    fn default_snapshot() {
        let d = BackoffConfig::default();
        assert_eq!(
            toml::to_string(&d).unwrap(),
            "base = \"500ms\"\nfactor = 2.0\ncap = \"30s\"\njitter = \"full\"\n"
        );
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"base":"500ms","factor":2.0,"cap":"30s","jitter":"full"}"#
        );
    }

    #[test]
    fn round_trips_and_rejects_unknown_fields() {
        let c = BackoffConfig {
            base: ms(250),
            factor: 1.5,
            cap: Duration::from_secs(90),
            jitter: Jitter::Proportional(0.25),
        };
        let text = toml::to_string(&c).unwrap();
        assert_eq!(toml::from_str::<BackoffConfig>(&text).unwrap(), c);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<BackoffConfig>(&json).unwrap(), c);
        let partial: BackoffConfig = toml::from_str("cap = \"1m\"\njitter = \"equal\"").unwrap();
        assert_eq!(
            partial,
            BackoffConfig {
                cap: Duration::from_secs(60),
                jitter: Jitter::Equal,
                ..BackoffConfig::default()
            }
        );
        assert!(toml::from_str::<BackoffConfig>("bsae = \"1s\"").is_err());
    }

    #[test]
    fn defaults_fill_missing_fields_without_reading_durations() {
        let c: BackoffConfig = toml::from_str("factor = 3.0\njitter = \"none\"").unwrap();
        assert_eq!(
            c,
            BackoffConfig {
                factor: 3.0,
                jitter: Jitter::None,
                ..BackoffConfig::default()
            }
        );
        assert!(toml::from_str::<BackoffConfig>("fctor = 3.0").is_err());
    }
}
