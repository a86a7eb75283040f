#![allow(clippy::arithmetic_side_effects)]

use super::*;
use alloc::string::ToString;
use proptest::prelude::*;

const fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn parse_table() {
    let max = Duration::MAX;
    let cases: &[(&str, Option<Duration>)] = &[
        // OpenAI's x-ratelimit-reset-* shapes.
        ("6m0s", Some(s(360))),
        ("1.5s", Some(ms(1500))),
        ("20ms", Some(ms(20))),
        ("1h2m3.5s", Some(Duration::new(3723, 500_000_000))),
        ("0s", Some(Duration::ZERO)),
        ("2m59.56s", Some(Duration::new(179, 560_000_000))),
        ("7.66s", Some(ms(7660))),
        // Every unit.
        ("7ns", Some(ns(7))),
        ("7us", Some(ns(7_000))),
        ("7µs", Some(ns(7_000))),
        ("7μs", Some(ns(7_000))),
        ("7ms", Some(ms(7))),
        ("7s", Some(s(7))),
        ("7m", Some(s(420))),
        ("7h", Some(s(7 * 3600))),
        ("2d", Some(s(2 * 86_400))),
        ("1d1h1m1s1ms1us1ns", Some(Duration::new(90_061, 1_001_001))),
        // Fractions, exact to the nanosecond, sub-nanosecond rounded up.
        ("1.000000001s", Some(ns(1_000_000_001))),
        ("0.1s", Some(ms(100))),
        (".5s", Some(ms(500))),
        ("1.s", Some(s(1))),
        ("1.5us", Some(ns(1500))),
        ("0.5ns", Some(ns(1))),
        ("0.0000000001s", Some(ns(1))),
        ("0.333333333333333333333333333333s", Some(ns(333_333_334))),
        ("0.5h", Some(s(1800))),
        ("1.25m", Some(s(75))),
        (
            "0.00000000000000000000000000000000000000000000000000d",
            Some(Duration::ZERO),
        ),
        ("000012s", Some(s(12))),
        // Order and repetition are free.
        ("1s1s", Some(s(2))),
        ("30s1m", Some(s(90))),
        // Surrounding whitespace.
        ("  250ms\t", Some(ms(250))),
        ("\n1s\r\n", Some(s(1))),
        // Bare zero.
        ("0", Some(Duration::ZERO)),
        // The edge of the range.
        ("18446744073709551615.999999999s", Some(max)),
        ("18446744073709551615s999999999ns", Some(max)),
        ("18446744073709551616s", None),
        ("18446744073709551615.9999999991s", None),
        ("5124095576030432h", None),
        ("99999999999999999999999999999999999999999999h", None),
        // Rejected.
        ("", None),
        ("   ", None),
        ("0.0", None),
        ("00", None),
        ("5", None),
        ("1.5", None),
        ("s", None),
        (".s", None),
        ("1..5s", None),
        ("1.5.5s", None),
        ("-1s", None),
        ("+1s", None),
        ("1e3s", None),
        ("1E3ms", None),
        ("NaN", None),
        ("inf", None),
        ("infs", None),
        ("1 s", None),
        ("1s 2s", None),
        ("1S", None),
        ("1sec", None),
        ("1y", None),
        ("1µ", None),
        ("1s\0", None),
        ("\u{b5}s", None),
    ];
    for &(text, want) in cases {
        assert_eq!(parse(text.as_bytes()), want, "parse({text:?})");
    }
}

#[test]
fn human_table() {
    let cases: &[(Duration, &str)] = &[
        (Duration::ZERO, "0s"),
        (ns(1), "1ns"),
        (ns(999), "999ns"),
        (ns(1_000), "1us"),
        (ns(1_500), "1.5us"),
        (ns(1_001), "1.001us"),
        (ns(999_999), "999.999us"),
        (ms(1), "1ms"),
        (ms(250), "250ms"),
        (ns(1_000_001), "1.000001ms"),
        (ns(999_999_999), "999.999999ms"),
        (s(1), "1s"),
        (ms(1500), "1.5s"),
        (ns(1_000_000_001), "1.000000001s"),
        (s(60), "1m"),
        (s(90), "1m30s"),
        (s(360), "6m"),
        (s(3600), "1h"),
        (Duration::new(3600, 500_000_000), "1h0.5s"),
        (Duration::new(3723, 500_000_000), "1h2m3.5s"),
        (s(86_400), "24h"),
        (Duration::MAX, "5124095576030431h15.999999999s"),
    ];
    for &(d, want) in cases {
        assert_eq!(Human(d).to_string(), want, "Human({d:?})");
        assert_eq!(parse(want.as_bytes()), Some(d), "parse({want:?})");
    }
}

#[test]
fn human_writes_into_a_fixed_buffer() {
    // The formatter writes straight into the sink; a fixed buffer is enough.
    use core::fmt::Write;
    struct Buf([u8; 64], usize);
    impl Write for Buf {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let end = self.1 + s.len();
            self.0
                .get_mut(self.1..end)
                .ok_or(core::fmt::Error)?
                .copy_from_slice(s.as_bytes());
            self.1 = end;
            Ok(())
        }
    }
    let mut buf = Buf([0; 64], 0);
    write!(buf, "{}", Human(Duration::new(3723, 500_000_000))).unwrap();
    assert_eq!(&buf.0[..buf.1], b"1h2m3.5s");
}

fn any_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        (0u64..100_000, 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        (0u64..1_000_000_000).prop_map(Duration::from_nanos),
        (0u64..10_000).prop_map(Duration::from_secs),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn human_round_trips(d in any_duration()) {
        let text = Human(d).to_string();
        prop_assert_eq!(parse(text.as_bytes()), Some(d), "{}", text);
    }

    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = parse(&bytes);
    }

    #[test]
    fn parse_never_panics_on_near_grammar(text in "[ 0-9.nsuµmhd+eE-]{0,40}") {
        if let Some(d) = parse(text.as_bytes()) {
            // Whatever parses formats back to the same value.
            prop_assert_eq!(parse(Human(d).to_string().as_bytes()), Some(d));
        }
    }

    #[test]
    fn fractions_are_exact_ceilings(int in 0u64..1_000_000, frac in "[0-9]{1,30}") {
        // value = int.frac seconds; parse must give ceil(value) in nanoseconds.
        let text = alloc::format!("{int}.{frac}s");
        let got = parse(text.as_bytes()).unwrap();
        let nine: alloc::string::String = frac.chars().chain(core::iter::repeat('0')).take(9).collect();
        let floor = u128::from(int) * 1_000_000_000 + nine.parse::<u128>().unwrap();
        let exact = frac.len() <= 9 || frac[9..].bytes().all(|b| b == b'0');
        let want = if exact { floor } else { floor + 1 };
        prop_assert_eq!(got.as_nanos(), want);
    }
}

#[cfg(feature = "serde")]
mod serde_tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Config {
        #[serde(with = "crate::duration::serde_human")]
        timeout: Duration,
        #[serde(with = "crate::duration::serde_human::option", default)]
        cap: Option<Duration>,
    }

    #[test]
    fn json_round_trip() {
        let c = Config {
            timeout: Duration::new(90, 500_000_000),
            cap: Some(ms(250)),
        };
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(text, r#"{"timeout":"1m30.5s","cap":"250ms"}"#);
        assert_eq!(serde_json::from_str::<Config>(&text).unwrap(), c);
        let none: Config = serde_json::from_str(r#"{"timeout":"6m0s","cap":null}"#).unwrap();
        assert_eq!(
            none,
            Config {
                timeout: s(360),
                cap: None
            }
        );
        let absent: Config = serde_json::from_str(r#"{"timeout":"0"}"#).unwrap();
        assert_eq!(
            absent,
            Config {
                timeout: Duration::ZERO,
                cap: None
            }
        );
        let err = serde_json::from_str::<Config>(r#"{"timeout":"5"}"#).unwrap_err();
        assert!(err.to_string().contains("a duration such as"), "{err}");
    }

    #[test]
    fn toml_round_trip() {
        let c = Config {
            timeout: s(2),
            cap: Some(Duration::from_micros(1500)),
        };
        let text = toml::to_string(&c).unwrap();
        assert_eq!(text, "timeout = \"2s\"\ncap = \"1.5ms\"\n");
        assert_eq!(toml::from_str::<Config>(&text).unwrap(), c);
        let c = Config {
            timeout: s(2),
            cap: None,
        };
        assert_eq!(
            toml::from_str::<Config>(&toml::to_string(&c).unwrap()).unwrap(),
            c
        );
    }
}
