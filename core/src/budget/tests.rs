#![allow(clippy::arithmetic_side_effects)]

use super::*;
use proptest::prelude::*;
use std::vec::Vec;

fn ms(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

fn cfg(ratio: f64, min_per_sec: u32) -> BudgetConfig {
    BudgetConfig {
        ratio,
        min_per_sec,
        ..BudgetConfig::default()
    }
}

/// Grants at `now` until the budget refuses; returns how many.
fn drain(b: &mut RetryBudget, now: Timestamp) -> u64 {
    let mut n = 0;
    while b.try_withdraw(now) {
        n += 1;
        assert!(n < 1_000_000, "budget never ran out");
    }
    n
}

#[test]
fn ten_successes_at_a_tenth_fund_exactly_one_retry() {
    let mut b = RetryBudget::new(cfg(0.1, 0));
    for _ in 0..9 {
        b.on_success(ms(0));
    }
    assert_eq!(b.balance(ms(0)), 0);
    assert!(!b.can_withdraw(ms(0)));
    assert!(!b.try_withdraw(ms(0)));
    b.on_success(ms(0));
    assert_eq!(b.balance(ms(0)), 1);
    assert_eq!(drain(&mut b, ms(0)), 1);
    for _ in 0..19 {
        b.on_success(ms(1));
    }
    assert_eq!(drain(&mut b, ms(1)), 1, "19 successes fund one, not two");
    b.on_success(ms(1));
    assert_eq!(drain(&mut b, ms(1)), 1, "the 20th completes the second");
}

#[test]
fn hundred_successes_at_a_fifth_fund_twenty() {
    let mut b = RetryBudget::new(cfg(0.2, 0));
    for i in 0..100 {
        b.on_success(ms(i * 10));
    }
    assert_eq!(b.balance(ms(1_000)), 20);
    assert_eq!(drain(&mut b, ms(1_000)), 20);
    assert_eq!(b.balance(ms(1_000)), 0);
}

#[test]
fn a_third_rounds_down() {
    let mut b = RetryBudget::new(cfg(1.0 / 3.0, 0));
    for _ in 0..3 {
        b.on_success(ms(0));
    }
    assert_eq!(b.balance(ms(0)), 0, "3 × 333 333 < 1 000 000");
    b.on_success(ms(0));
    assert_eq!(b.balance(ms(0)), 1);
    for _ in 0..2 {
        b.on_success(ms(0));
    }
    assert_eq!(b.balance(ms(0)), 1, "6 × 333 333 < 2 000 000");
    b.on_success(ms(0));
    assert_eq!(b.balance(ms(0)), 2);
}

#[test]
fn decimal_ratios_are_exact() {
    for (ratio, units) in [
        (0.1, 100_000),
        (0.2, 200_000),
        (0.7, 700_000),
        (0.29, 290_000),
        (1.0, 1_000_000),
        (0.000_001, 1),
        (1000.0, 1_000_000_000),
        (0.0, 0),
        (2.0 / 3.0, 666_666),
        (f64::NAN, 0),
        (-1.0, 0),
        (f64::INFINITY, 1_000_000_000),
    ] {
        assert_eq!(units_of(ratio), units, "{ratio}");
    }
    // Every ratio k/100 funds exactly k retries per hundred successes.
    for k in 0..=100u64 {
        let mut b = RetryBudget::new(cfg(k as f64 / 100.0, 0));
        for _ in 0..100 {
            b.on_success(ms(0));
        }
        assert_eq!(b.balance(ms(0)), k, "ratio {k}/100");
    }
}

#[test]
fn deposits_expire_after_ttl() {
    // ttl 10 s: slices of 1 s; a deposit in slice 0 lives until t = 10 s.
    let mut b = RetryBudget::new(cfg(0.1, 0));
    for _ in 0..10 {
        b.on_success(ms(0));
    }
    assert_eq!(b.balance(ms(9_999)), 1);
    assert_eq!(b.balance(ms(10_000)), 0);
    assert!(!b.try_withdraw(ms(10_000)));
    // A deposit made late in its slice lives 9 to 10 slices: here 9.001 s.
    let mut b = RetryBudget::new(cfg(0.1, 0));
    for _ in 0..10 {
        b.on_success(ms(999));
    }
    assert_eq!(b.balance(ms(9_999)), 1);
    assert_eq!(b.balance(ms(10_000)), 0);
}

#[test]
fn retries_spend_the_oldest_deposits_first() {
    let mut b = RetryBudget::new(cfg(0.1, 0));
    for _ in 0..10 {
        b.on_success(ms(0));
    }
    for _ in 0..10 {
        b.on_success(ms(5_000));
    }
    assert!(b.try_withdraw(ms(6_000)));
    // The t = 0 deposit paid; the t = 5 s one survives its predecessor's expiry.
    assert_eq!(b.balance(ms(10_000)), 1);
    assert_eq!(b.balance(ms(14_999)), 1);
    assert_eq!(b.balance(ms(15_000)), 0);
}

#[test]
fn a_retry_can_be_paid_from_several_slices() {
    let mut b = RetryBudget::new(cfg(0.1, 0));
    for t in [0, 1_000, 2_000, 3_000, 4_000] {
        b.on_success(ms(t));
        b.on_success(ms(t));
    }
    assert_eq!(b.balance(ms(4_000)), 1);
    assert!(b.try_withdraw(ms(4_000)));
    assert_eq!(b.deposits(b.slice_of(ms(4_000))), 0);
}

#[test]
fn floor_allows_min_per_sec_in_a_total_outage() {
    let mut b = RetryBudget::new(cfg(0.2, 10));
    let mut per_second = [0u32; 10];
    for t in (0..10_000).step_by(10) {
        if b.try_withdraw(ms(t)) {
            per_second[(t / 1_000) as usize] += 1;
        }
    }
    assert_eq!(per_second, [10; 10]);
    // The floor's ten may come at once; the eleventh waits for the first to be a
    // second old.
    let mut b = RetryBudget::new(cfg(0.2, 10));
    for t in 0..10 {
        assert!(b.try_withdraw(ms(t)), "floor retry {t}");
    }
    assert!(!b.try_withdraw(ms(999)));
    assert_eq!(b.available_at(ms(50)), Some(ms(1_000)));
    assert_eq!(b.balance(ms(999)), 0);
    assert!(b.try_withdraw(ms(1_000)));
    assert_eq!(b.balance(ms(1_000)), 0);
    assert_eq!(
        b.balance(ms(1_001)),
        1,
        "the second grant turned a second old"
    );
    assert_eq!(b.balance(ms(5_000)), 10);
}

#[test]
fn a_lone_call_gets_its_retries_however_close_its_jittered_backoffs_fall() {
    // A fresh budget, one call, retries 1 ms apart: the floor covers a whole
    // sequence of attempts (the standard 4 and the batch preset's 10).
    let mut b = RetryBudget::new(BudgetConfig::default());
    for t in 0..9 {
        assert!(b.try_withdraw(ms(t)), "retry {t}");
    }
}

#[test]
fn the_floor_window_slides_exactly() {
    let mut b = RetryBudget::new(cfg(0.0, 3));
    let mut granted = Vec::new();
    for t in 0..2_500 {
        if b.try_withdraw(ms(t)) {
            granted.push(t);
        }
    }
    assert_eq!(granted, [0, 1, 2, 1_000, 1_001, 1_002, 2_000, 2_001, 2_002]);
    // Above the burst, the window is cut: 64 a second is 32 per half second.
    let mut b = RetryBudget::new(cfg(0.0, 64));
    let granted: Vec<u64> = (0..1_000).filter(|&t| b.try_withdraw(ms(t))).collect();
    assert_eq!(granted.len(), 64);
    assert_eq!(granted[31], 31);
    assert_eq!(granted[32], 500);
}

#[test]
fn deposits_are_used_before_the_floor() {
    let mut b = RetryBudget::new(cfg(0.5, 1));
    b.on_success(ms(0));
    b.on_success(ms(0));
    assert_eq!(
        b.balance(ms(0)),
        2,
        "one paid by deposits, one by the floor"
    );
    assert!(b.try_withdraw(ms(0)));
    assert_eq!(b.floor.next_at(), Some(ms(0)), "the floor was not touched");
    assert!(b.try_withdraw(ms(0)));
    assert_eq!(b.floor.next_at(), Some(ms(1_000)));
    assert!(!b.try_withdraw(ms(500)));
    assert_eq!(b.available_at(ms(500)), Some(ms(1_000)));
}

#[test]
fn without_a_floor_only_successes_help() {
    let mut b = RetryBudget::new(cfg(0.2, 0));
    assert_eq!(b.balance(ms(0)), 0);
    assert!(!b.try_withdraw(ms(0)));
    assert_eq!(b.available_at(ms(0)), None);
    for _ in 0..5 {
        b.on_success(ms(1));
    }
    assert_eq!(b.available_at(ms(0)), Some(ms(1)), "now is clamped forward");
}

#[test]
fn time_going_backwards_never_refunds() {
    let mut b = RetryBudget::new(cfg(0.1, 1));
    assert!(b.try_withdraw(ms(5_000)));
    assert!(
        !b.try_withdraw(ms(1_000)),
        "treated as 5 s: the floor is spent"
    );
    assert!(!b.can_withdraw(ms(0)));
    assert_eq!(b.balance(ms(0)), 0);
    // A success reported late lands at the latest instant seen, not in the past.
    for _ in 0..10 {
        b.on_success(ms(20_000));
    }
    for _ in 0..10 {
        b.on_success(ms(2_000));
    }
    assert_eq!(
        b.balance(ms(2_000)),
        2 + 1,
        "two funded, floor ready at 20 s"
    );
    assert_eq!(b.balance(ms(29_999)), 2 + 1);
    assert_eq!(b.balance(ms(30_000)), 1, "both deposits expire together");
}

#[test]
fn disabled_always_allows_and_keeps_no_state() {
    let c = BudgetConfig {
        enabled: false,
        min_per_sec: 0,
        ..BudgetConfig::default()
    };
    let mut b = RetryBudget::new(c);
    let before = b.clone();
    for t in 0..1_000 {
        assert!(b.try_withdraw(ms(t)));
    }
    b.on_success(ms(5));
    assert!(b.can_withdraw(ms(0)));
    assert_eq!(b.balance(ms(0)), u64::MAX);
    assert_eq!(b.available_at(ms(7)), Some(ms(7)));
    assert_eq!(b, before);
}

#[test]
fn extreme_times_and_configs_do_not_panic() {
    for c in [
        BudgetConfig::default(),
        BudgetConfig {
            ttl: Duration::ZERO,
            ..BudgetConfig::default()
        },
        BudgetConfig {
            ttl: Duration::MAX,
            ratio: f64::NAN,
            min_per_sec: u32::MAX,
            ..BudgetConfig::default()
        },
        cfg(1e300, 1),
    ] {
        let mut b = RetryBudget::new(c);
        for t in [0, 1, u64::MAX / 2, u64::MAX - 1, u64::MAX, 3] {
            let t = Timestamp::from_nanos(t);
            b.on_success(t);
            b.try_withdraw(t);
            b.can_withdraw(t);
            b.balance(t);
            b.available_at(t);
        }
    }
    // At the end of time the floor grants once, then never again.
    let mut b = RetryBudget::new(cfg(0.0, 10));
    assert!(b.try_withdraw(Timestamp::MAX));
    assert!(!b.try_withdraw(Timestamp::MAX));
    assert_eq!(b.available_at(Timestamp::MAX), None);
}

#[test]
fn validate_names_the_bad_field() {
    assert_eq!(BudgetConfig::default().validate(), Ok(()));
    for ratio in [-0.1, 1000.5, f64::NAN, f64::INFINITY] {
        assert_eq!(
            cfg(ratio, 10).validate().unwrap_err().field(),
            "budget.ratio"
        );
    }
    for ratio in [0.0, 1000.0] {
        assert_eq!(cfg(ratio, 10).validate(), Ok(()));
    }
    let c = BudgetConfig {
        ttl: Duration::ZERO,
        ..BudgetConfig::default()
    };
    assert_eq!(
        c.validate(),
        Err(ConfigError::Zero {
            field: "budget.ttl"
        })
    );
    assert_eq!(cfg(0.2, u32::MAX).validate(), Ok(()));
    assert_eq!(cfg(0.2, 0).validate(), Ok(()));
}

#[derive(Debug, Clone, Copy)]
enum Op {
    /// Let time pass (milliseconds; may be zero).
    Wait(u64),
    /// Let time go back (milliseconds): the budget must treat it as no time passing.
    Back(u64),
    Success,
    Retry,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..3_000u64).prop_map(Op::Wait),
        1 => (0..3_000u64).prop_map(Op::Back),
        4 => Just(Op::Success),
        4 => Just(Op::Retry),
    ]
}

fn any_config() -> impl Strategy<Value = BudgetConfig> {
    (
        prop_oneof![Just(0.1), Just(0.2), Just(1.0 / 3.0), 0.0..=5.0f64],
        prop_oneof![Just(0u32), Just(1), Just(10), 0..50u32],
        1..30_000u64,
    )
        .prop_map(|(ratio, min_per_sec, ttl_ms)| BudgetConfig {
            enabled: true,
            ratio,
            min_per_sec,
            ttl: Duration::from_millis(ttl_ms),
        })
}

/// Runs `ops` and returns every answer (each retry's grant and the balance after it).
fn run(c: BudgetConfig, ops: &[Op]) -> Vec<(bool, u64)> {
    let mut b = RetryBudget::new(c);
    let mut clock = ms(1_000);
    let mut out = Vec::new();
    for op in ops {
        match *op {
            Op::Wait(d) => clock = clock + Duration::from_millis(d),
            Op::Back(d) => clock = clock - Duration::from_millis(d),
            Op::Success => b.on_success(clock),
            Op::Retry => {
                let granted = b.try_withdraw(clock);
                out.push((granted, b.balance(clock)));
            }
        }
    }
    out
}

proptest! {
    /// The bound asserted: over a whole run with `S` successes, retries granted
    /// ≤ floor(S × per_success / 1 000 000)               (paid by deposits)
    ///   + F × (floor(E / 1 s) + 1)                        (paid by the floor)
    /// where per_success is the ratio in millionths, E the span between the first and
    /// the last effective instant, and F the most floor retries one second may hold:
    /// `min_per_sec`, rounded up to a multiple of `FLOOR_BURST` above it.
    #[test]
    fn grants_never_exceed_deposits_plus_floor(
        c in any_config(),
        ops in proptest::collection::vec(op(), 0..400),
    ) {
        let mut b = RetryBudget::new(c);
        let mut clock = ms(1_000);
        let (mut first, mut last) = (None, ms(0));
        let (mut successes, mut granted, mut from_deposits) = (0u128, 0u128, 0u128);
        for op in &ops {
            match *op {
                Op::Wait(d) => clock = clock + Duration::from_millis(d),
                Op::Back(d) => clock = clock - Duration::from_millis(d),
                Op::Success => {
                    b.on_success(clock);
                    successes += 1;
                }
                Op::Retry => {
                    let effective = clock.max(b.latest);
                    let deposits_before = b.deposits(b.slice_of(effective));
                    if b.try_withdraw(clock) {
                        granted += 1;
                        if deposits_before >= UNIT {
                            from_deposits += 1;
                            // Exactly one retry left the deposits.
                            prop_assert_eq!(b.deposits(b.slice_of(effective)), deposits_before - UNIT);
                        }
                    } else {
                        prop_assert_eq!(b.deposits(b.slice_of(effective)), deposits_before);
                    }
                }
            }
            if matches!(op, Op::Success | Op::Retry) {
                first.get_or_insert(b.latest);
                last = b.latest;
            }
            // The live deposits never exceed what successes put in.
            let live = u128::from(b.deposits(b.slice_of(last)));
            prop_assert!(live + from_deposits * u128::from(UNIT) <= successes * u128::from(b.per_success));
        }
        let elapsed = u128::from(last.as_nanos() - first.map_or(0, Timestamp::as_nanos));
        let per_sec = u128::from(c.min_per_sec);
        let burst = FLOOR_BURST as u128;
        let per_second = if per_sec > burst { per_sec.div_ceil(burst) * burst } else { per_sec };
        let floor_bound = per_second * (elapsed / 1_000_000_000 + 1);
        let bound = successes * u128::from(b.per_success) / u128::from(UNIT) + floor_bound;
        prop_assert!(granted <= bound, "granted {} > bound {}", granted, bound);
    }

    /// In any half-open second the floor alone grants at most `min_per_sec`.
    #[test]
    fn floor_alone_respects_min_per_sec_in_every_second(
        min_per_sec in 1..=FLOOR_BURST as u32,
        steps in proptest::collection::vec(0..200u64, 1..600),
    ) {
        let mut b = RetryBudget::new(cfg(0.0, min_per_sec));
        let mut t = 0u64;
        let mut grants = Vec::new();
        for s in steps {
            t += s;
            if b.try_withdraw(ms(t)) {
                grants.push(t);
            }
        }
        for (i, &start) in grants.iter().enumerate() {
            let in_window = grants[i..].iter().take_while(|&&g| g < start + 1_000).count();
            prop_assert!(in_window <= min_per_sec as usize, "{} in [{}, {}+1s)", in_window, start, start);
        }
    }

    /// Without expiry and without a floor the budget is exactly the ratio: a retry is
    /// granted iff the successes so far fund one more than was granted.
    #[test]
    fn without_expiry_grants_are_exactly_funded(
        ratio in prop_oneof![Just(0.1), Just(0.2), Just(1.0 / 3.0), 0.0..=3.0f64],
        ops in proptest::collection::vec(prop_oneof![Just(true), Just(false)], 0..300),
    ) {
        let mut b = RetryBudget::new(BudgetConfig { ttl: Duration::from_secs(3_600), ..cfg(ratio, 0) });
        let per = u128::from(units_of(ratio));
        let (mut successes, mut granted) = (0u128, 0u128);
        for (i, success) in ops.into_iter().enumerate() {
            let now = ms(i as u64);
            if success {
                b.on_success(now);
                successes += 1;
            } else {
                let funded = successes * per / u128::from(UNIT) > granted;
                prop_assert_eq!(b.try_withdraw(now), funded);
                granted += u128::from(funded);
            }
        }
    }

    /// `balance` is the number of retries `try_withdraw` would grant in a row, and
    /// `can_withdraw` / `available_at` agree with it.
    #[test]
    fn balance_counts_what_try_withdraw_grants(
        c in any_config(),
        ops in proptest::collection::vec(op(), 0..200),
        probe in 0..40_000u64,
    ) {
        let c = BudgetConfig { ratio: c.ratio.min(2.0), ..c };
        let mut b = RetryBudget::new(c);
        let mut clock = ms(1_000);
        for op in &ops {
            match *op {
                Op::Wait(d) => clock = clock + Duration::from_millis(d),
                Op::Back(d) => clock = clock - Duration::from_millis(d),
                Op::Success => b.on_success(clock),
                Op::Retry => { b.try_withdraw(clock); }
            }
        }
        let at = clock + Duration::from_millis(probe);
        let balance = b.balance(at);
        prop_assert_eq!(b.can_withdraw(at), balance > 0);
        prop_assert_eq!(b.available_at(at) == Some(at.max(b.latest)), balance > 0);
        let mut copy = b.clone();
        prop_assert_eq!(drain(&mut copy, at), balance);
        if let Some(when) = b.available_at(at) {
            prop_assert!(b.clone().try_withdraw(when));
        }
    }

    #[test]
    fn same_inputs_same_answers(c in any_config(), ops in proptest::collection::vec(op(), 0..300)) {
        prop_assert_eq!(run(c, &ops), run(c, &ops));
    }
}

#[cfg(feature = "serde")]
mod serde_tests {
    use super::*;
    use crate::duration::Human;
    use alloc::string::ToString;

    #[test]
    fn fields_serialize_with_human_durations() {
        let v = serde_json::to_value(BudgetConfig::default()).unwrap();
        assert_eq!(v["enabled"], true);
        assert_eq!(v["ratio"], 0.2);
        assert_eq!(v["min_per_sec"], 10);
        assert_eq!(v["ttl"], Human(Duration::from_secs(10)).to_string());
    }

    #[test]
    fn defaults_fill_missing_fields_without_reading_durations() {
        let c: BudgetConfig = toml::from_str("ratio = 0.1\nmin_per_sec = 0").unwrap();
        assert_eq!(c, cfg(0.1, 0));
        let c: BudgetConfig = serde_json::from_str(r#"{"enabled":false}"#).unwrap();
        assert_eq!(
            c,
            BudgetConfig {
                enabled: false,
                ..BudgetConfig::default()
            }
        );
        assert!(toml::from_str::<BudgetConfig>("ratoi = 0.1").is_err());
    }

    #[test]
    fn default_snapshot() {
        let d = BudgetConfig::default();
        assert_eq!(
            toml::to_string(&d).unwrap(),
            "enabled = true\nratio = 0.2\nmin_per_sec = 10\nttl = \"10s\"\n"
        );
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"enabled":true,"ratio":0.2,"min_per_sec":10,"ttl":"10s"}"#
        );
    }

    #[test]
    fn round_trips() {
        let c = BudgetConfig {
            enabled: false,
            ratio: 0.35,
            min_per_sec: 3,
            ttl: Duration::from_millis(2_500),
        };
        let text = toml::to_string(&c).unwrap();
        assert_eq!(toml::from_str::<BudgetConfig>(&text).unwrap(), c);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<BudgetConfig>(&json).unwrap(), c);
        let c: BudgetConfig = toml::from_str("ttl = \"1m30s\"").unwrap();
        assert_eq!(c.ttl, Duration::from_secs(90));
    }
}
