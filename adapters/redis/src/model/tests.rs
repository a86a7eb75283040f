use super::*;
use crate::rate::{Rate, TokenRate, UNIT};

const T0: u64 = 1_700_000_000_000_000;

fn gcra(per_minute: u32, burst: u32) -> GcraParams {
    Rate { per_minute, burst }.params().unwrap()
}

fn bucket(per_minute: u32, burst: u32) -> BucketParams {
    TokenRate { per_minute, burst }.params().unwrap()
}

#[test]
fn gcra_grants_the_burst_then_paces_at_the_interval() {
    let p = gcra(600, 3); // T = 100 ms
    let mut tat = None;
    for left in [2, 1, 0] {
        let a = gcra_reserve(tat, T0, p, 1);
        assert_eq!((a.granted, a.remaining), (1, left));
        tat = Some(a.tat_us);
    }
    let denied = gcra_reserve(tat, T0, p, 1);
    assert_eq!((denied.granted, denied.wait_us), (0, 100_000));
    let later = gcra_reserve(tat, T0 + 100_000, p, 1);
    assert_eq!(later.granted, 1);
}

#[test]
fn gcra_interval_rounds_up_so_the_rate_is_never_exceeded() {
    assert_eq!(gcra(7, 1).interval_us, 8_571_429);
}

#[test]
fn gcra_wait_for_several_is_until_all_fit() {
    let p = gcra(600, 4);
    let a = gcra_reserve(None, T0, p, 3);
    let b = gcra_reserve(Some(a.tat_us), T0, p, 3);
    assert_eq!((b.granted, b.wait_us, b.remaining), (0, 200_000, 1));
}

#[test]
fn lease_takes_a_quarter_of_what_is_left_and_at_least_one() {
    let p = gcra(600, 20);
    let a = lease(None, T0, p, 100);
    assert_eq!((a.granted, a.expires_us), (5, T0 + 500_000));
    let b = lease(Some(a.tat_us), T0, p, 100);
    assert_eq!(b.granted, 3); // 15 left
    let small = lease(Some(T0 + 18 * 100_000), T0, p, 100);
    assert_eq!(small.granted, 1); // 2 left
    let want = lease(None, T0, p, 2);
    assert_eq!(want.granted, 2);
}

#[test]
fn lease_on_an_empty_bucket_says_when_one_is_free() {
    let p = gcra(600, 2);
    let empty = lease(Some(T0 + 250_000), T0, p, 1);
    assert_eq!((empty.granted, empty.wait_us), (0, 150_000));
}

#[test]
fn release_gives_back_only_while_the_lease_is_valid() {
    let p = gcra(600, 20);
    let l = lease(None, T0, p, 100);
    let back = release(Some(l.tat_us), T0 + 1, p, 2, l.expires_us);
    assert_eq!(
        back,
        ReleaseAnswer {
            refunded: 2,
            tat_us: l.tat_us - 200_000
        }
    );
    let stale = release(Some(l.tat_us), l.expires_us, p, 2, l.expires_us);
    assert_eq!(stale.refunded, 0);
    let clamped = release(Some(T0 + 100_000), T0, p, 5, T0 + 1);
    assert_eq!(clamped.tat_us, T0);
}

#[test]
fn bucket_refills_exactly_per_microsecond_and_caps() {
    let p = bucket(60_000, 1_000); // 1 token per ms = 60_000 units per µs
    let b = Bucket {
        level: 0,
        last_us: T0,
    };
    assert_eq!(refill(Some(b), T0 + 1, p), 60_000);
    assert_eq!(refill(Some(b), T0 + 1_000, p), UNIT);
    assert_eq!(refill(Some(b), T0 + 10_000_000, p), p.cap);
    assert_eq!(refill(Some(b), T0 - 5, p), 0);
}

#[test]
fn tokens_reserve_then_wait_for_the_shortfall() {
    let p = bucket(60_000, 1_000);
    let a = reserve_tokens(None, T0, p, 800 * UNIT);
    assert_eq!((a.granted, a.level), (true, 200 * UNIT));
    let b = reserve_tokens(
        Some(Bucket {
            level: a.level,
            last_us: T0,
        }),
        T0,
        p,
        500 * UNIT,
    );
    assert_eq!((b.granted, b.wait_us), (false, 300_000));
}

#[test]
fn reconcile_refunds_up_to_the_cap_and_carries_an_overrun_as_debt() {
    let p = bucket(60_000, 1_000);
    let b = Some(Bucket {
        level: 100 * UNIT,
        last_us: T0,
    });
    assert_eq!(reconcile_tokens(b, T0, p, 300 * UNIT), 400 * UNIT);
    assert_eq!(reconcile_tokens(b, T0, p, 2_000 * UNIT), p.cap);
    assert_eq!(reconcile_tokens(b, T0, p, -600 * UNIT), -500 * UNIT);
    assert_eq!(reconcile_tokens(b, T0, p, -2_000 * UNIT), -p.cap);
    let debt = Some(Bucket {
        level: -500 * UNIT,
        last_us: T0,
    });
    let w = reserve_tokens(debt, T0, p, 10 * UNIT);
    assert_eq!((w.granted, w.wait_us), (false, 510_000));
}

#[test]
fn the_bucket_key_lives_until_the_bucket_is_full() {
    let p = bucket(60_000, 1_000);
    assert_eq!(until_full_us(p.cap - 1, p), 1);
    assert_eq!(until_full_us(0, p), 1_000_000);
    assert_eq!(until_full_us(p.cap, p), 0);
}
