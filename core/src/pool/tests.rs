// Helpers outside #[test] fns are test code too.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::unwrap_used,
    clippy::indexing_slicing
)]

use super::*;
use alloc::vec;
use alloc::vec::Vec;
use proptest::prelude::*;

fn ms(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

fn ep(n: u16) -> EndpointId {
    EndpointId(n)
}

fn key(n: u16) -> KeyPick {
    KeyPick::Key(KeyId(n))
}

fn pool(endpoints: &[(u8, u16)]) -> Pool {
    let config = PoolConfig::new(
        endpoints
            .iter()
            .map(|&(p, k)| EndpointConfig::new(p, k))
            .collect(),
    );
    Pool::new(&config).unwrap()
}

fn order(p: &Pool) -> Vec<u16> {
    p.order().map(|e| e.0).collect()
}

fn events(p: &mut Pool) -> Vec<PoolEvent> {
    core::iter::from_fn(|| p.poll_event()).collect()
}

#[test]
fn round_robin_over_three_keys() {
    let mut p = pool(&[(0, 3)]);
    let picks: Vec<_> = (0..4).map(|_| p.pick_key(ms(0), ep(0))).collect();
    assert_eq!(picks, vec![key(0), key(1), key(2), key(0)]);
}

#[test]
fn peek_has_no_side_effect() {
    let mut p = pool(&[(0, 3), (0, 1)]);
    assert_eq!(p.peek_key(ms(0), ep(0)), key(0));
    assert_eq!(p.peek_key(ms(0), ep(0)), key(0));
    assert_eq!(order(&p), vec![0, 1]);
    assert_eq!(p.pick_key(ms(0), ep(0)), key(0));
    assert_eq!(p.peek_key(ms(0), ep(0)), key(1));
}

#[test]
fn cooled_key_is_skipped_until_exactly_its_until() {
    let mut p = pool(&[(0, 3)]);
    p.on_throttled(ms(0), Target::new(0, 1), ms(1500)).unwrap();
    assert_eq!(
        p.key_state(ms(0), Target::new(0, 1)),
        Some(KeyState::Cooling { until: ms(1500) })
    );
    assert_eq!(p.usable_keys(ms(0), ep(0)), 2);
    assert_eq!(p.pick_key(ms(0), ep(0)), key(0));
    assert_eq!(p.pick_key(ms(1), ep(0)), key(2));
    assert_eq!(p.pick_key(ms(1499), ep(0)), key(0));
    assert_eq!(p.pick_key(ms(1499), ep(0)), key(2));
    // Usable at exactly its until.
    assert_eq!(
        p.key_state(ms(1500), Target::new(0, 1)),
        Some(KeyState::Usable)
    );
    assert_eq!(p.pick_key(ms(1500), ep(0)), key(0));
    assert_eq!(p.pick_key(ms(1500), ep(0)), key(1));
    assert_eq!(
        events(&mut p),
        vec![PoolEvent::KeyCooled {
            at: ms(0),
            target: Target::new(0, 1),
            until: ms(1500)
        }]
    );
}

#[test]
fn later_until_extends_earlier_does_not_shorten() {
    let mut p = pool(&[(0, 1)]);
    let t = Target::new(0, 0);
    p.on_throttled(ms(0), t, ms(1000)).unwrap();
    p.on_throttled(ms(10), t, ms(500)).unwrap();
    assert_eq!(p.peek_key(ms(600), ep(0)), KeyPick::CoolingUntil(ms(1000)));
    p.on_throttled(ms(20), t, ms(2000)).unwrap();
    assert_eq!(p.peek_key(ms(1000), ep(0)), KeyPick::CoolingUntil(ms(2000)));
    assert_eq!(p.peek_key(ms(2000), ep(0)), key(0));
    // A hint already in the past cools nothing.
    p.on_throttled(ms(3000), t, ms(2500)).unwrap();
    assert_eq!(p.peek_key(ms(3000), ep(0)), key(0));
    assert_eq!(
        events(&mut p),
        vec![
            PoolEvent::KeyCooled {
                at: ms(0),
                target: t,
                until: ms(1000)
            },
            PoolEvent::KeyCooled {
                at: ms(20),
                target: t,
                until: ms(2000)
            },
        ]
    );
}

#[test]
fn disabled_key_is_never_chosen_again() {
    let mut p = pool(&[(0, 3)]);
    p.on_key_rejected(ms(0), Target::new(0, 1), DisableReason::Unauthorized)
        .unwrap();
    for i in 0..100 {
        assert_ne!(p.pick_key(ms(i * 1000), ep(0)), key(1));
    }
    // A late success does not revive it; a second rejection keeps the first reason.
    p.on_success(ms(200_000), Target::new(0, 1)).unwrap();
    p.on_key_rejected(ms(200_000), Target::new(0, 1), DisableReason::Forbidden)
        .unwrap();
    assert_eq!(
        p.key_state(ms(200_000), Target::new(0, 1)),
        Some(KeyState::Disabled {
            reason: DisableReason::Unauthorized
        })
    );
    // Throttling a disabled key records nothing.
    p.on_throttled(ms(200_000), Target::new(0, 1), ms(900_000))
        .unwrap();
    assert_eq!(
        events(&mut p),
        vec![PoolEvent::KeyDisabled {
            at: ms(0),
            target: Target::new(0, 1),
            reason: DisableReason::Unauthorized
        }]
    );
}

#[test]
fn an_operator_disable_takes_a_key_out_until_enabled() {
    let mut p = pool(&[(0, 2)]);
    let (k0, k1) = (Target::new(0, 0), Target::new(0, 1));
    p.on_throttled(ms(0), k0, ms(9000)).unwrap();
    p.disable_key(ms(1), k0).unwrap();
    p.on_key_rejected(ms(2), k1, DisableReason::Unauthorized)
        .unwrap();
    // A key already disabled keeps its first reason.
    p.disable_key(ms(3), k1).unwrap();
    let operator = KeyState::Disabled {
        reason: DisableReason::Operator,
    };
    assert_eq!(p.key_state(ms(3), k0), Some(operator));
    assert_eq!(p.pick_key(ms(10_000), ep(0)), KeyPick::NoUsableKey);
    assert_eq!(
        p.disable_key(ms(3), Target::new(0, 2)),
        Err(UsageError::UnknownId)
    );
    assert_eq!(
        p.disable_key(ms(3), Target::new(1, 0)),
        Err(UsageError::UnknownId)
    );
    p.enable_key(ms(10_001), k0).unwrap();
    assert_eq!(p.pick_key(ms(10_001), ep(0)), key(0));
    assert_eq!(
        events(&mut p),
        vec![
            PoolEvent::KeyCooled {
                at: ms(0),
                target: k0,
                until: ms(9000)
            },
            PoolEvent::KeyDisabled {
                at: ms(1),
                target: k0,
                reason: DisableReason::Operator
            },
            PoolEvent::KeyDisabled {
                at: ms(2),
                target: k1,
                reason: DisableReason::Unauthorized
            },
            PoolEvent::KeyEnabled {
                at: ms(10_001),
                target: k0
            },
        ]
    );
}

#[test]
fn enable_clears_disable_and_cooldown() {
    let mut p = pool(&[(0, 2)]);
    p.on_key_rejected(ms(0), Target::new(0, 0), DisableReason::QuotaExhausted)
        .unwrap();
    p.on_throttled(ms(0), Target::new(0, 1), ms(9000)).unwrap();
    assert_eq!(p.pick_key(ms(1), ep(0)), KeyPick::CoolingUntil(ms(9000)));
    p.enable_key(ms(2), Target::new(0, 0)).unwrap();
    p.enable_key(ms(2), Target::new(0, 1)).unwrap();
    // Enabling a usable key is a no-op without an event.
    p.enable_key(ms(3), Target::new(0, 1)).unwrap();
    assert_eq!(p.usable_keys(ms(3), ep(0)), 2);
    assert_eq!(p.pick_key(ms(3), ep(0)), key(0));
    assert_eq!(p.pick_key(ms(3), ep(0)), key(1));
    let ev = events(&mut p);
    assert_eq!(ev.len(), 4);
    assert_eq!(
        ev[2],
        PoolEvent::KeyEnabled {
            at: ms(2),
            target: Target::new(0, 0)
        }
    );
    assert_eq!(ev[3].target(), Target::new(0, 1));
    assert_eq!(ev[3].at(), ms(2));
}

#[test]
fn all_cooling_gives_earliest_until() {
    let mut p = pool(&[(0, 3)]);
    p.on_throttled(ms(0), Target::new(0, 0), ms(3000)).unwrap();
    p.on_throttled(ms(0), Target::new(0, 1), ms(1200)).unwrap();
    p.on_throttled(ms(0), Target::new(0, 2), ms(2000)).unwrap();
    assert_eq!(p.peek_key(ms(5), ep(0)), KeyPick::CoolingUntil(ms(1200)));
    assert_eq!(p.pick_key(ms(5), ep(0)), KeyPick::CoolingUntil(ms(1200)));
    assert_eq!(p.usable_keys(ms(5), ep(0)), 0);
    assert_eq!(p.pick_key(ms(1200), ep(0)), key(1));
    // A disabled key does not count as "coming back".
    p.on_key_rejected(ms(1200), Target::new(0, 1), DisableReason::Other)
        .unwrap();
    assert_eq!(p.pick_key(ms(1300), ep(0)), KeyPick::CoolingUntil(ms(2000)));
}

#[test]
fn all_disabled_gives_no_usable_key() {
    let mut p = pool(&[(0, 2)]);
    p.on_key_rejected(ms(0), Target::new(0, 0), DisableReason::Unauthorized)
        .unwrap();
    p.on_throttled(ms(0), Target::new(0, 1), ms(1000)).unwrap();
    p.on_key_rejected(ms(0), Target::new(0, 1), DisableReason::Forbidden)
        .unwrap();
    assert_eq!(p.peek_key(ms(0), ep(0)), KeyPick::NoUsableKey);
    assert_eq!(p.pick_key(ms(5000), ep(0)), KeyPick::NoUsableKey);
}

#[test]
fn priority_order_with_ties_rotating() {
    // Ids 0..5 with priorities 1, 0, 1, 0, 2.
    let mut p = pool(&[(1, 1), (0, 1), (1, 1), (0, 1), (2, 1)]);
    assert_eq!(order(&p), vec![1, 3, 0, 2, 4]);
    assert_eq!(p.order().len(), 5);
    assert_eq!(p.pick_key(ms(0), ep(1)), key(0));
    assert_eq!(order(&p), vec![3, 1, 0, 2, 4]);
    assert_eq!(p.pick_key(ms(0), ep(3)), key(0));
    assert_eq!(order(&p), vec![1, 3, 0, 2, 4]);
    // Failing over into the second group rotates that group only.
    assert_eq!(p.pick_key(ms(0), ep(0)), key(0));
    assert_eq!(order(&p), vec![1, 3, 2, 0, 4]);
    // A failed pick rotates nothing.
    p.on_key_rejected(ms(0), Target::new(2, 0), DisableReason::Other)
        .unwrap();
    assert_eq!(p.pick_key(ms(0), ep(2)), KeyPick::NoUsableKey);
    assert_eq!(order(&p), vec![1, 3, 2, 0, 4]);
    assert_eq!(p.priority(ep(4)), Some(2));
}

#[test]
fn three_equal_endpoints_take_turns() {
    let mut p = pool(&[(0, 1), (0, 1), (0, 1)]);
    let mut firsts = Vec::new();
    for _ in 0..6 {
        let first = p.order().next().unwrap();
        firsts.push(first.0);
        p.pick_key(ms(0), first);
    }
    assert_eq!(firsts, vec![0, 1, 2, 0, 1, 2]);
}

#[test]
fn select_fails_over_without_waiting() {
    let mut p = pool(&[(0, 2), (1, 1)]);
    assert_eq!(
        p.select(ms(0), |_| true),
        Selection::Picked(Target::new(0, 0))
    );
    // Endpoint 0 refused (both its keys are offered: one may be rate-limited where the
    // other is not): on to endpoint 1 without waiting.
    let mut asked = Vec::new();
    let s = p.select(ms(0), |e| {
        asked.push((e.endpoint.0, e.key.0));
        e.endpoint.0 != 0
    });
    assert_eq!(s, Selection::Picked(Target::new(1, 0)));
    assert_eq!(asked, vec![(0, 1), (0, 0), (1, 0)]);
    // Endpoint 0 cooling, endpoint 1 disabled.
    p.on_throttled(ms(0), Target::new(0, 0), ms(700)).unwrap();
    p.on_throttled(ms(0), Target::new(0, 1), ms(400)).unwrap();
    p.on_key_rejected(ms(0), Target::new(1, 0), DisableReason::Unauthorized)
        .unwrap();
    let mut asked = 0;
    let s = p.select(ms(10), |_| {
        asked += 1;
        true
    });
    assert_eq!(s, Selection::CoolingUntil(ms(400)));
    assert_eq!(asked, 0);
    assert_eq!(
        p.select(ms(400), |_| true),
        Selection::Picked(Target::new(0, 1))
    );
    p.on_key_rejected(ms(400), Target::new(0, 0), DisableReason::Other)
        .unwrap();
    p.on_key_rejected(ms(400), Target::new(0, 1), DisableReason::Other)
        .unwrap();
    assert_eq!(p.select(ms(400), |_| true), Selection::Unavailable);
}

#[test]
fn invalid_ids_are_harmless() {
    let mut p = pool(&[(0, 2)]);
    let before = p.clone();
    let bad = [
        Target::new(0, 2),
        Target::new(1, 0),
        Target::new(u16::MAX, u16::MAX),
    ];
    for t in bad {
        assert_eq!(
            p.on_throttled(ms(0), t, ms(100)),
            Err(UsageError::UnknownId)
        );
        assert_eq!(
            p.on_key_rejected(ms(0), t, DisableReason::Other),
            Err(UsageError::UnknownId)
        );
        assert_eq!(p.enable_key(ms(0), t), Err(UsageError::UnknownId));
        assert_eq!(p.on_success(ms(0), t), Err(UsageError::UnknownId));
        assert_eq!(p.key_state(ms(0), t), None);
    }
    assert_eq!(p.pick_key(ms(0), ep(1)), KeyPick::NoUsableKey);
    assert_eq!(p.peek_key(ms(0), ep(9)), KeyPick::NoUsableKey);
    assert_eq!(p.key_count(ep(1)), 0);
    assert_eq!(p.usable_keys(ms(0), ep(1)), 0);
    assert_eq!(p.priority(ep(1)), None);
    assert_eq!(p, before);
    assert_eq!(p.poll_event(), None);
    assert_eq!(p.on_success(ms(0), Target::new(0, 1)), Ok(()));
}

#[test]
fn backwards_now_is_clamped() {
    let mut p = pool(&[(0, 1)]);
    p.on_throttled(ms(0), Target::new(0, 0), ms(1000)).unwrap();
    assert_eq!(p.pick_key(ms(1000), ep(0)), key(0));
    // The clock steps back: the key stays usable.
    assert_eq!(p.pick_key(ms(500), ep(0)), key(0));
    assert_eq!(p.peek_key(ms(500), ep(0)), key(0));
}

#[test]
fn event_queue_is_bounded() {
    let mut p = pool(&[(0, 1)]);
    let t = Target::new(0, 0);
    for i in 0..100u64 {
        p.on_throttled(ms(i), t, ms(1000 + i)).unwrap();
    }
    assert_eq!(p.dropped_events(), 100 - EVENT_CAPACITY as u64);
    let ev = events(&mut p);
    assert_eq!(ev.len(), EVENT_CAPACITY);
    assert_eq!(ev[0].at(), ms(100 - EVENT_CAPACITY as u64));
    assert_eq!(ev.last().unwrap().at(), ms(99));
}

#[test]
fn config_validation_names_the_field() {
    assert_eq!(PoolConfig::default().validate(), Ok(()));
    assert_eq!(
        PoolConfig::new(vec![]).validate(),
        Err(ConfigError::Empty {
            field: "pool.endpoints"
        })
    );
    let err = PoolConfig::new(vec![EndpointConfig::new(0, 2), EndpointConfig::new(1, 0)])
        .validate()
        .unwrap_err();
    assert_eq!(err.field(), "pool.endpoints.keys");
    assert!(matches!(err, ConfigError::Zero { .. }));
    assert_eq!(
        PoolConfig::new(vec![
            EndpointConfig::new(0, u16::MAX),
            EndpointConfig::new(0, 1)
        ])
        .validate(),
        Err(ConfigError::TooMany {
            field: "pool.endpoints.keys",
            max: MAX_KEYS
        })
    );
    assert_eq!(
        PoolConfig::new(vec![EndpointConfig::new(0, 1); MAX_ENDPOINTS + 1]).validate(),
        Err(ConfigError::TooMany {
            field: "pool.endpoints",
            max: MAX_ENDPOINTS
        })
    );
    assert!(Pool::new(&PoolConfig::new(vec![])).is_err());
}

#[test]
fn default_pool_has_one_endpoint_one_key() {
    let mut p = Pool::default();
    assert_eq!(p.endpoint_count(), 1);
    assert_eq!(p.key_count(ep(0)), 1);
    assert_eq!(p.pick_key(ms(0), ep(0)), key(0));
    assert_eq!(p.pick_key(ms(0), ep(0)), key(0));
}

#[cfg(feature = "serde")]
mod serde_tests {
    use super::*;

    #[test]
    fn default_snapshot_json_and_toml() {
        let c = PoolConfig::default();
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"endpoints":[{"priority":0,"keys":1}]}"#
        );
        assert_eq!(
            toml::to_string(&c).unwrap(),
            "[[endpoints]]\npriority = 0\nkeys = 1\n"
        );
    }

    #[test]
    fn round_trip_and_defaults_fill_in() {
        let c = PoolConfig::new(vec![EndpointConfig::new(0, 3), EndpointConfig::new(1, 2)]);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<PoolConfig>(&json).unwrap(), c);
        let text = toml::to_string(&c).unwrap();
        assert_eq!(toml::from_str::<PoolConfig>(&text).unwrap(), c);

        let partial: PoolConfig =
            toml::from_str("[[endpoints]]\nkeys = 3\n\n[[endpoints]]\npriority = 1\n").unwrap();
        assert_eq!(partial, c.clone_with(&[(0, 3), (1, 1)]));
        assert_eq!(
            serde_json::from_str::<PoolConfig>("{}").unwrap(),
            PoolConfig::default()
        );
        assert!(serde_json::from_str::<PoolConfig>(r#"{"endpoint":[]}"#).is_err());
        assert!(serde_json::from_str::<PoolConfig>(r#"{"endpoints":[{"name":"a"}]}"#).is_err());
    }

    #[test]
    fn events_serialize_snake_case() {
        let e = PoolEvent::KeyDisabled {
            at: ms(1),
            target: Target::new(0, 2),
            reason: DisableReason::QuotaExhausted,
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"key_disabled":{"at":1000000,"target":{"endpoint":0,"key":2},"reason":"quota_exhausted"}}"#
        );
    }

    impl PoolConfig {
        fn clone_with(&self, endpoints: &[(u8, u16)]) -> PoolConfig {
            PoolConfig::new(
                endpoints
                    .iter()
                    .map(|&(p, k)| EndpointConfig::new(p, k))
                    .collect(),
            )
        }
    }
}

// ---- properties ----

#[derive(Debug, Clone)]
enum Op {
    Step(u64),
    Pick(u16),
    Throttle(u16, u16, u64),
    Reject(u16, u16),
    Enable(u16, u16),
}

fn op() -> impl Strategy<Value = Op> {
    // Ids range one past the largest pool generated, so invalid ids occur too.
    prop_oneof![
        3 => (0u64..500).prop_map(Op::Step),
        6 => (0u16..5).prop_map(Op::Pick),
        2 => (0u16..5, 0u16..5, 0u64..2000).prop_map(|(e, k, d)| Op::Throttle(e, k, d)),
        1 => (0u16..5, 0u16..5).prop_map(|(e, k)| Op::Reject(e, k)),
        1 => (0u16..5, 0u16..5).prop_map(|(e, k)| Op::Enable(e, k)),
    ]
}

fn shape() -> impl Strategy<Value = Vec<(u8, u16)>> {
    proptest::collection::vec((0u8..3, 1u16..5), 1..5)
}

/// What the test believes about one key.
#[derive(Debug, Clone, Copy)]
struct Model {
    disabled: bool,
    until: Timestamp,
    /// Consecutive picks at its endpoint during which it was usable but not picked.
    passed_over: u32,
}

#[derive(Debug, PartialEq)]
enum Trace {
    Pick(KeyPick),
    Event(PoolEvent),
}

/// Runs `ops`, checking every pick against the model; returns the trace.
fn run(shape: &[(u8, u16)], ops: &[Op]) -> Result<Vec<Trace>, TestCaseError> {
    let mut p = pool(shape);
    let mut model: Vec<Vec<Model>> = shape
        .iter()
        .map(|&(_, k)| {
            vec![
                Model {
                    disabled: false,
                    until: Timestamp::ZERO,
                    passed_over: 0
                };
                usize::from(k)
            ]
        })
        .collect();
    let mut now = Timestamp::ZERO;
    let mut trace = Vec::new();
    let reasons = [
        DisableReason::Unauthorized,
        DisableReason::Forbidden,
        DisableReason::QuotaExhausted,
        DisableReason::Other,
    ];
    for (step, op) in ops.iter().enumerate() {
        let valid = |e: u16, k: u16| {
            model
                .get(usize::from(e))
                .is_some_and(|m| usize::from(k) < m.len())
        };
        match *op {
            Op::Step(d) => now = now + core::time::Duration::from_millis(d),
            Op::Pick(e) => {
                let peeked = p.peek_key(now, ep(e));
                let pick = p.pick_key(now, ep(e));
                prop_assert_eq!(peeked, pick);
                trace.push(Trace::Pick(pick));
                let Some(keys) = model.get_mut(usize::from(e)) else {
                    prop_assert_eq!(pick, KeyPick::NoUsableKey);
                    continue;
                };
                let n = keys.len() as u32;
                let usable: Vec<bool> =
                    keys.iter().map(|m| !m.disabled && m.until <= now).collect();
                let expected_wait = keys.iter().filter(|m| !m.disabled).map(|m| m.until).min();
                match pick {
                    KeyPick::Key(KeyId(k)) => {
                        let m = keys[usize::from(k)];
                        prop_assert!(!m.disabled, "picked disabled key {} at step {}", k, step);
                        prop_assert!(
                            m.until <= now,
                            "picked key {} cooling until {} at {}",
                            k,
                            m.until,
                            now
                        );
                    }
                    KeyPick::CoolingUntil(t) => {
                        prop_assert!(usable.iter().all(|u| !u));
                        prop_assert_eq!(Some(t), expected_wait);
                        prop_assert!(t > now);
                    }
                    KeyPick::NoUsableKey => prop_assert!(keys.iter().all(|m| m.disabled)),
                }
                for (k, m) in keys.iter_mut().enumerate() {
                    if !usable[k] || pick == KeyPick::Key(KeyId(k as u16)) {
                        m.passed_over = 0;
                    } else {
                        m.passed_over += 1;
                        prop_assert!(
                            m.passed_over < n,
                            "usable key {} of endpoint {} passed over {} times",
                            k,
                            e,
                            m.passed_over
                        );
                    }
                }
            }
            Op::Throttle(e, k, d) => {
                let until = now + core::time::Duration::from_millis(d);
                let r = p.on_throttled(now, Target::new(e, k), until);
                prop_assert_eq!(r.is_ok(), valid(e, k));
                if let Some(m) = model
                    .get_mut(usize::from(e))
                    .and_then(|v| v.get_mut(usize::from(k)))
                {
                    if !m.disabled {
                        m.until = m.until.max(until);
                    }
                }
            }
            Op::Reject(e, k) => {
                let reason = reasons[usize::from(k) % reasons.len()];
                let r = p.on_key_rejected(now, Target::new(e, k), reason);
                prop_assert_eq!(r.is_ok(), valid(e, k));
                if let Some(m) = model
                    .get_mut(usize::from(e))
                    .and_then(|v| v.get_mut(usize::from(k)))
                {
                    m.disabled = true;
                }
            }
            Op::Enable(e, k) => {
                let r = p.enable_key(now, Target::new(e, k));
                prop_assert_eq!(r.is_ok(), valid(e, k));
                if let Some(m) = model
                    .get_mut(usize::from(e))
                    .and_then(|v| v.get_mut(usize::from(k)))
                {
                    m.disabled = false;
                    m.until = Timestamp::ZERO;
                }
            }
        }
        while let Some(ev) = p.poll_event() {
            trace.push(Trace::Event(ev));
        }
    }
    prop_assert_eq!(p.dropped_events(), 0);
    Ok(trace)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed_9001), ..ProptestConfig::default() })]

    #[test]
    fn picks_respect_state_and_are_fair(shape in shape(), ops in proptest::collection::vec(op(), 0..200)) {
        run(&shape, &ops)?;
    }

    #[test]
    fn same_inputs_same_picks(shape in shape(), ops in proptest::collection::vec(op(), 0..200)) {
        let a = run(&shape, &ops)?;
        let b = run(&shape, &ops)?;
        prop_assert_eq!(a, b);
    }

    #[test]
    fn order_lists_every_endpoint_once_by_priority(
        shape in shape(),
        picks in proptest::collection::vec(0u16..5, 0..50),
    ) {
        let mut p = pool(&shape);
        for e in picks {
            p.pick_key(Timestamp::ZERO, ep(e));
            let listed = order(&p);
            let mut sorted = listed.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..shape.len() as u16).collect::<Vec<_>>());
            let priorities: Vec<u8> = listed.iter().map(|&e| p.priority(ep(e)).unwrap()).collect();
            prop_assert!(priorities.windows(2).all(|w| w[0] <= w[1]));
            prop_assert_eq!(p.order().len(), shape.len());
        }
    }
}
