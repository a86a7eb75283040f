#![allow(clippy::arithmetic_side_effects)]

use core::time::Duration;

use super::*;

#[test]
fn off_by_default_and_valid() {
    let c = HedgeConfig::default();
    assert!(!c.is_on());
    assert_eq!(c.validate(), Ok(()));
    assert_eq!(c.delay(Some(Duration::from_millis(5))), None);
}

#[test]
fn the_quantile_serves_once_known_and_after_until_then() {
    let c = HedgeConfig {
        after: Some(Duration::from_millis(800)),
        quantile: Some(0.9),
        ..HedgeConfig::default()
    };
    assert_eq!(c.permille(), Some(900));
    assert_eq!(c.delay(None), Some(Duration::from_millis(800)));
    assert_eq!(
        c.delay(Some(Duration::from_millis(120))),
        Some(Duration::from_millis(120))
    );
    let fixed = HedgeConfig::after(Duration::from_millis(300));
    assert_eq!(
        fixed.delay(Some(Duration::from_millis(120))),
        Some(Duration::from_millis(300))
    );
    assert_eq!(HedgeConfig::quantile(0.9).delay(None), None);
}

#[test]
fn validation_names_the_bad_field() {
    let bad = |c: HedgeConfig| c.validate().map_err(|e| e.field());
    let mut c = HedgeConfig::after(Duration::ZERO);
    assert_eq!(bad(c), Err("hedge.after"));
    c = HedgeConfig::quantile(1.0);
    assert_eq!(bad(c), Err("hedge.quantile"));
    c = HedgeConfig::quantile(0.0);
    assert_eq!(bad(c), Err("hedge.quantile"));
    c = HedgeConfig::quantile(0.9).with_budget(1.5);
    assert_eq!(bad(c), Err("hedge.budget"));
    c = HedgeConfig::quantile(0.9);
    c.max_per_call = 0;
    assert_eq!(bad(c), Err("hedge.max_per_call"));
    c = HedgeConfig::quantile(0.9);
    c.min_samples = 0;
    assert_eq!(bad(c), Err("hedge.min_samples"));
}

#[test]
fn a_tenth_funds_one_hedge_per_ten_calls() {
    let mut b = HedgeBudget::new(&HedgeConfig::after(Duration::from_millis(1)));
    for _ in 0..9 {
        b.on_call();
        assert!(!b.try_spend());
    }
    b.on_call();
    assert!(b.try_spend());
    assert!(!b.try_spend());
    assert_eq!((b.calls(), b.hedges()), (10, 1));
}

#[test]
fn a_quiet_spell_saves_up_at_most_the_burst() {
    let mut b = HedgeBudget::new(&HedgeConfig::after(Duration::from_millis(1)).with_budget(1.0));
    for _ in 0..100 {
        b.on_call();
    }
    let paid = (0..100).filter(|_| b.try_spend()).count();
    assert_eq!(paid as u64, BURST);
}

#[test]
fn a_zero_budget_never_hedges() {
    let mut b = HedgeBudget::new(&HedgeConfig::after(Duration::from_millis(1)).with_budget(0.0));
    for _ in 0..1000 {
        b.on_call();
        assert!(!b.try_spend());
    }
}

proptest::proptest! {
    #[test]
    fn hedges_never_exceed_the_share_of_calls(
        budget in 0.0f64..=1.0,
        ops in proptest::collection::vec(proptest::bool::ANY, 0..500),
    ) {
        let mut b = HedgeBudget::new(&HedgeConfig::after(Duration::from_millis(1)).with_budget(budget));
        for call in ops {
            if call { b.on_call() } else { let _ = b.try_spend(); }
            proptest::prop_assert!(b.hedges() as f64 <= budget * b.calls() as f64 + 1e-9);
        }
    }
}

#[cfg(feature = "serde")]
#[test]
fn the_policy_takes_a_hedge_table() {
    let p: crate::policy::Policy = toml::from_str(
        "[hedge]\nafter = \"800ms\"\nquantile = 0.9\nbudget = 0.25\nmax_per_call = 1\n",
    )
    .unwrap();
    assert_eq!(p.hedge.after, Some(Duration::from_millis(800)));
    assert_eq!(p.hedge.quantile, Some(0.9));
    assert_eq!(p.hedge.budget, 0.25);
    assert_eq!(p.validate(), Ok(()));
    let bad: Result<crate::policy::Policy, _> = toml::from_str("[hedge]\nafterr = \"1s\"\n");
    assert!(bad.is_err());
}
