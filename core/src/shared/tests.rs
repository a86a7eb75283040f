#![allow(clippy::arithmetic_side_effects)]

use alloc::vec::Vec;
use core::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::engine::{EndpointSpec, Engine, EngineEvent};
use crate::limiter::LimiterConfig;
use crate::outcome::{Outcome, Response};
use crate::policy::Policy;
use crate::retry::{Call, Decision, Finish, GiveUpReason};

const E0: EndpointId = EndpointId(0);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

fn granted(requests: u32, valid_ms: u64) -> LeaseAnswer {
    LeaseAnswer::Granted {
        requests,
        valid_for: ms(valid_ms),
        retry_in: Duration::ZERO,
    }
}

#[test]
fn no_lease_means_a_short_wait_and_one_ask() {
    let mut q = SharedQuota::new(&SharedConfig::default(), None);
    assert_eq!(q.check(at(0), 0), QuotaCheck::Wait(at(0) + ms(1)));
    let ask = q.poll_ask(at(0), E0).expect("an ask");
    assert_eq!(ask.want, 8);
    // A second call waits for the same ask, capped by its timeout.
    assert_eq!(q.check(at(0), 0), QuotaCheck::Wait(at(1)));
    assert_eq!(q.poll_ask(at(0), E0), None, "one ask at a time");
    assert_eq!(
        q.handle_answer(at(1), E0, ask.ticket, granted(2, 200)),
        None
    );
    assert_eq!(q.check(at(1), 0), QuotaCheck::Go);
    q.spend(at(1), 0);
    q.spend(at(2), 0);
    assert_eq!(q.available(at(2)), 0);
    assert_eq!(q.check(at(2), 0), QuotaCheck::Wait(at(3)));
    assert_eq!(q.counters().spent, 2);
    assert_eq!(q.counters().leased, 2);
}

#[test]
fn an_empty_bucket_is_not_asked_again_before_its_instant() {
    let mut q = SharedQuota::new(&SharedConfig::default(), None);
    let _ = q.check(at(0), 0);
    let ask = q.poll_ask(at(0), E0).expect("an ask");
    let empty = LeaseAnswer::Granted {
        requests: 0,
        valid_for: Duration::ZERO,
        retry_in: ms(100),
    };
    let _ = q.handle_answer(at(1), E0, ask.ticket, empty);
    assert_eq!(q.check(at(50), 0), QuotaCheck::Wait(at(101)));
    assert_eq!(q.poll_ask(at(50), E0), None, "nothing wanted before 101 ms");
    assert_eq!(q.check(at(101), 0), QuotaCheck::Wait(at(102)));
    assert!(q.poll_ask(at(101), E0).is_some(), "asked again at 101 ms");
    assert_eq!(q.counters().empty, 1);
}

#[test]
fn a_lease_is_never_spent_after_it_expires() {
    let mut q = SharedQuota::new(&SharedConfig::default(), None);
    let _ = q.check(at(0), 0);
    let ask = q.poll_ask(at(0), E0).expect("an ask");
    let _ = q.handle_answer(at(0), E0, ask.ticket, granted(5, 100));
    assert_eq!(q.check(at(99), 0), QuotaCheck::Go);
    q.spend(at(99), 0);
    assert_eq!(q.available(at(100)), 0);
    assert_eq!(q.check(at(100), 0), QuotaCheck::Wait(at(101)));
    q.spend(at(100), 0);
    assert_eq!(q.counters().spent, 1);
    let ask = q.poll_ask(at(100), E0).expect("a new ask");
    let _ = q.handle_answer(at(100), E0, ask.ticket, granted(1, 100));
    assert_eq!(q.counters().expired, 4, "the four left over expired");
}

#[test]
fn a_lost_answer_times_out_into_the_fallback_and_sharing_resumes() {
    let config = SharedConfig::default();
    let mut q = SharedQuota::new(&config, None);
    let _ = q.check(at(0), 0);
    let ask = q.poll_ask(at(0), E0).expect("an ask");
    assert_eq!(
        ask.expires,
        at(250),
        "the driver bounds its store call by this"
    );
    assert_eq!(q.poll_timeout(at(0)), Some(at(250)));
    assert_eq!(q.handle_timeout(at(249), E0), None);
    let fell = q.handle_timeout(at(250), E0);
    assert_eq!(
        fell,
        Some(SharedEvent::Fallback {
            at: at(250),
            endpoint: E0,
            mode: FailMode::Open,
            until: at(1250),
        })
    );
    // Fail open: the local limits alone decide.
    assert_eq!(q.check(at(300), 0), QuotaCheck::Go);
    q.spend(at(300), 0);
    assert_eq!(q.counters().fallback_admissions, 1);
    // A late failure of the timed-out ask changes nothing.
    assert_eq!(
        q.handle_answer(at(400), E0, ask.ticket, LeaseAnswer::Failed),
        None
    );
    assert!(q.on_fallback(at(400)));
    assert_eq!(q.poll_ask(at(1000), E0), None, "no ask on the fallback");
    // After it: asked again; an answer resumes sharing.
    assert_eq!(q.check(at(1250), 0), QuotaCheck::Wait(at(1251)));
    let ask = q.poll_ask(at(1250), E0).expect("asked again");
    let resumed = q.handle_answer(at(1251), E0, ask.ticket, granted(3, 300));
    assert_eq!(
        resumed,
        Some(SharedEvent::Resumed {
            at: at(1251),
            endpoint: E0,
        })
    );
    assert_eq!(q.available(at(1251)), 3);
}

#[test]
fn a_late_grant_ends_the_fallback_unless_a_newer_ask_is_out() {
    let mut q = SharedQuota::new(&SharedConfig::default(), None);
    let _ = q.check(at(0), 0);
    let ask = q.poll_ask(at(0), E0).expect("an ask");
    assert!(q.handle_timeout(at(250), E0).is_some(), "timed out");
    // The store was slow, not gone: its grant resumes sharing at once.
    let resumed = q.handle_answer(at(400), E0, ask.ticket, granted(5, 500));
    assert_eq!(
        resumed,
        Some(SharedEvent::Resumed {
            at: at(400),
            endpoint: E0,
        })
    );
    assert!(!q.on_fallback(at(400)));
    assert_eq!(q.available(at(400)), 5);
    // Answered once: the same answer again changes nothing.
    assert_eq!(
        q.handle_answer(at(401), E0, ask.ticket, granted(5, 500)),
        None
    );
    assert_eq!(q.available(at(401)), 5);

    // A driver that stopped waiting at the deadline answered a failure: the store's
    // own answer, when it comes, still counts.
    let mut q = SharedQuota::new(&SharedConfig::default(), None);
    let _ = q.check(at(0), 0);
    let ask = q.poll_ask(at(0), E0).expect("an ask");
    let fell = q.handle_answer(at(250), E0, ask.ticket, LeaseAnswer::Failed);
    assert!(
        matches!(fell, Some(SharedEvent::Fallback { .. })),
        "{fell:?}"
    );
    let resumed = q.handle_answer(at(600), E0, ask.ticket, granted(4, 500));
    assert!(
        matches!(resumed, Some(SharedEvent::Resumed { .. })),
        "{resumed:?}"
    );
    assert_eq!(q.available(at(600)), 4);

    // Past the fallback a new ask is out: the old ask's answer no longer counts.
    let mut q = SharedQuota::new(&SharedConfig::default(), None);
    let _ = q.check(at(0), 0);
    let old = q.poll_ask(at(0), E0).expect("an ask");
    assert!(q.handle_timeout(at(250), E0).is_some());
    let _ = q.check(at(1250), 0);
    let new = q.poll_ask(at(1250), E0).expect("asked again");
    assert_eq!(
        q.handle_answer(at(1300), E0, old.ticket, granted(5, 500)),
        None
    );
    assert_eq!(q.available(at(1300)), 0);
    let _ = q.handle_answer(at(1301), E0, new.ticket, granted(2, 500));
    assert_eq!(q.available(at(1301)), 2);
}

#[test]
fn fail_closed_admits_nothing_until_the_store_is_asked_again() {
    let config = SharedConfig {
        fail: FailMode::Closed,
        ..SharedConfig::default()
    };
    let mut q = SharedQuota::new(&config, None);
    let _ = q.check(at(0), 0);
    let ask = q.poll_ask(at(0), E0).expect("an ask");
    let _ = q.handle_answer(at(5), E0, ask.ticket, LeaseAnswer::Failed);
    assert_eq!(q.check(at(6), 0), QuotaCheck::Wait(at(1005)));
    assert_eq!(q.counters().failures, 1);
}

#[test]
fn the_config_names_a_bad_field() {
    let bad = SharedConfig {
        lease: 0,
        ..SharedConfig::default()
    };
    let err = bad.validate().expect_err("lease 0");
    assert!(alloc::format!("{err}").contains("shared.lease"), "{err}");
    assert!(SharedConfig::default().validate().is_ok());
}

/// A model of the store: a GCRA bucket of `per_sec` requests a second and `burst`,
/// leasing `min(want, max(1, ⌊available / 4⌋))` valid for the time it takes the
/// bucket to earn them back.
struct Bucket {
    interval: Duration,
    burst: u64,
    tat: Timestamp,
    granted: Vec<Timestamp>,
}

impl Bucket {
    fn new(per_sec: u64, burst: u64) -> Bucket {
        Bucket {
            interval: Duration::from_nanos(1_000_000_000 / per_sec),
            burst,
            tat: Timestamp::ZERO,
            granted: Vec::new(),
        }
    }

    fn lease(&mut self, now: Timestamp, want: u32) -> LeaseAnswer {
        let tat = self.tat.max(now);
        let room = now.saturating_add(self.interval * self.burst as u32);
        let available = room.saturating_duration_since(tat).as_nanos() / self.interval.as_nanos();
        let available = u32::try_from(available).unwrap_or(u32::MAX);
        if available == 0 {
            let free_at = tat
                .saturating_add(self.interval)
                .saturating_sub(self.interval * self.burst as u32);
            return LeaseAnswer::Granted {
                requests: 0,
                valid_for: Duration::ZERO,
                retry_in: free_at.saturating_duration_since(now),
            };
        }
        let n = want.min((available / 4).max(1));
        self.tat = tat.saturating_add(self.interval * n);
        self.granted.extend(core::iter::repeat_n(now, n as usize));
        LeaseAnswer::Granted {
            requests: n,
            valid_for: self.interval * n,
            retry_in: Duration::ZERO,
        }
    }
}

/// `replicas` engines, each with `calls` calls started at 0 on one shared endpoint
/// (local limit `per_sec`, burst `burst`), the store answering ask `n` (0 for the
/// first) after `lag(n)`, its lease counted from when the store decided it; every
/// request succeeds in 10 ms. Returns the send instants and every call's finish.
fn replicas_run(
    replicas: usize,
    calls: usize,
    per_sec: u32,
    burst: f64,
    lag: &dyn Fn(usize) -> Duration,
    seed: u8,
) -> (Vec<Timestamp>, Vec<Finish>, Bucket) {
    let mut policy = Policy::default().without_jitter();
    policy.limiter = LimiterConfig {
        requests: Some(per_sec * 60),
        burst,
        ..LimiterConfig::default()
    };
    let spec = EndpointSpec::new(0, 1).with_shared_limit();
    let burst_units = ((f64::from(per_sec) * 60.0 * burst) as u64).max(1);
    let mut bucket = Bucket::new(u64::from(per_sec), burst_units);
    let mut engines: Vec<Engine> = (0..replicas)
        .map(|r| {
            Engine::new(
                policy.clone(),
                core::slice::from_ref(&spec),
                [seed + r as u8; 32],
            )
            .expect("engine")
        })
        .collect();
    struct Slot {
        engine: usize,
        call: Call,
        wake: Timestamp,
        pending: Option<(crate::ids::AttemptId, Timestamp)>,
        finish: Option<Finish>,
    }
    let mut slots: Vec<Slot> = (0..replicas * calls)
        .map(|i| {
            let engine = i % replicas;
            let call = engines[engine].start_call(Timestamp::ZERO, None);
            Slot {
                engine,
                call,
                wake: Timestamp::ZERO,
                pending: None,
                finish: None,
            }
        })
        .collect();
    // Asks on their way to the store: (answer instant, engine, ask, round trip).
    let mut asks: Vec<(Timestamp, usize, LeaseAsk, Duration)> = Vec::new();
    let mut asked = 0;
    let mut sent = Vec::new();
    for _ in 0..200_000 {
        let next_call = slots
            .iter()
            .filter(|s| s.finish.is_none())
            .map(|s| s.pending.map_or(s.wake, |(_, t)| t))
            .min();
        let next_ask = asks.iter().map(|a| a.0).min();
        let Some(now) = [next_call, next_ask].into_iter().flatten().min() else {
            break;
        };
        if let Some(i) = asks.iter().position(|a| a.0 == now) {
            let (_, e, ask, lag) = asks.swap_remove(i);
            // The store decides when the ask reaches it, half way; the lease's time
            // runs from there (as `StoreReply::lease_answer` counts it).
            let answer = match bucket.lease(now.saturating_sub(lag / 2), ask.want) {
                LeaseAnswer::Granted {
                    requests,
                    valid_for,
                    retry_in,
                } => LeaseAnswer::Granted {
                    requests,
                    valid_for: valid_for.saturating_sub(lag / 2),
                    retry_in: retry_in.saturating_sub(lag / 2),
                },
                other => other,
            };
            engines[e].handle_lease(now, &ask, answer);
            continue;
        }
        for s in slots.iter_mut().filter(|s| s.finish.is_none()) {
            let engine = &mut engines[s.engine];
            if let Some((id, t)) = s.pending.filter(|(_, t)| *t == now) {
                let _ = t;
                s.call
                    .on_outcome(now, id, Outcome::Response(Response::new(200)))
                    .expect("the attempt is in flight");
                s.pending = None;
            }
            if s.pending.is_some() || s.wake > now {
                continue;
            }
            match s.call.poll_decision(now, engine) {
                Decision::Send(a) => {
                    sent.push(now);
                    s.pending = Some((a.id, now + ms(10)));
                }
                Decision::Wait(until) => s.wake = until,
                Decision::Done(f) => s.finish = Some(f),
            }
            while let Some(ask) = engine.poll_lease_ask(now) {
                let lag = lag(asked);
                asked += 1;
                asks.push((now + lag, s.engine, ask, lag));
            }
        }
    }
    let finishes = slots.into_iter().filter_map(|s| s.finish).collect();
    (sent, finishes, bucket)
}

/// Requests in the busiest window of `window` among sorted `sent`.
fn busiest(sent: &[Timestamp], window: Duration) -> usize {
    let mut sorted = sent.to_vec();
    sorted.sort();
    let mut best = 0;
    let mut lo = 0;
    for hi in 0..sorted.len() {
        while sorted[hi].saturating_duration_since(sorted[lo]) >= window {
            lo += 1;
        }
        best = best.max(hi + 1 - lo);
    }
    best
}

#[test]
fn four_replicas_share_one_limit_and_lose_no_throughput() {
    // 10 requests a second, burst 20, 30 calls on each of four replicas.
    let (sent, finishes, bucket) = replicas_run(4, 30, 10, 1.0 / 30.0, &|_| ms(1), 7);
    assert_eq!(finishes.len(), 120);
    assert!(
        finishes.iter().all(|f| matches!(f, Finish::Success { .. })),
        "seed 7"
    );
    assert_eq!(sent.len(), 120, "one request per call");
    // Safety: no more requests than the store leased, and no second's window holds
    // more than the burst plus the rate.
    assert!(sent.len() <= bucket.granted.len());
    assert!(
        busiest(&sent, ms(1000)) <= 20 + 10,
        "busiest second: {}",
        busiest(&sent, ms(1000))
    );
    // Liveness: the last request goes out within 1.1× the ideal (the burst at once,
    // then the rest at the rate: 100 at 10/s = 10 s).
    let last = sent.iter().max().copied().unwrap_or(Timestamp::ZERO);
    assert!(last <= at(11_000), "last request at {last:?}");
}

#[test]
fn a_store_answering_late_costs_no_burst() {
    // Two replicas, 10 requests a second, burst 20; the store's answer to the fifth
    // ask comes after 400 ms, past the 250 ms ask timeout.
    let slow = |n: usize| if n == 4 { ms(400) } else { ms(1) };
    let (sent, finishes, bucket) = replicas_run(2, 30, 10, 1.0 / 30.0, &slow, 11);
    assert_eq!(finishes.len(), 60);
    assert!(
        finishes.iter().all(|f| matches!(f, Finish::Success { .. })),
        "seed 11"
    );
    // Safety: the replica that fell back admits at the limit's rate, not a burst;
    // the late grant ends its fallback, and the slots the fallback had reserved past
    // it wait for leases. One request went out on the fallback alone (before, a
    // whole burst did: 52 in the busiest second).
    let busiest_second = busiest(&sent, ms(1000));
    assert!(
        busiest_second <= 20 + 10 + 1,
        "busiest second: {busiest_second}"
    );
    let beyond = sent.len().saturating_sub(bucket.granted.len());
    assert!(
        beyond <= 1,
        "{beyond} requests beyond what the store leased"
    );
    // Liveness: the last request within 1.1× the ideal (40 at 10/s after the burst).
    let last = sent.iter().max().copied().unwrap_or(Timestamp::ZERO);
    assert!(last <= at(4_400), "last request at {last:?}");
}

#[test]
fn without_sharing_the_replicas_send_four_times_the_burst() {
    // The contrast: the same four replicas, each with only its local limit.
    let mut policy = Policy::default().without_jitter();
    policy.limiter = LimiterConfig {
        requests: Some(600),
        burst: 1.0 / 30.0,
        ..LimiterConfig::default()
    };
    let spec = EndpointSpec::new(0, 1);
    let mut first_instant = 0;
    for r in 0..4u8 {
        let mut engine =
            Engine::new(policy.clone(), core::slice::from_ref(&spec), [r; 32]).expect("engine");
        for _ in 0..30 {
            let mut call = engine.start_call(Timestamp::ZERO, None);
            if let Decision::Send(_) = call.poll_decision(Timestamp::ZERO, &mut engine) {
                first_instant += 1;
            }
        }
    }
    assert_eq!(first_instant, 80, "each replica spends its own burst of 20");
}

#[test]
fn a_fail_closed_call_gives_up_at_its_deadline() {
    let mut policy = Policy::default().without_jitter();
    policy.shared.fail = FailMode::Closed;
    policy.shared.fallback_for = Duration::from_secs(60);
    policy.retry.deadline = Some(Duration::from_secs(5));
    let spec = EndpointSpec::new(0, 1).with_shared_limit();
    let mut engine = Engine::new(policy, &[spec], [3; 32]).expect("engine");
    let mut call = engine.start_call(Timestamp::ZERO, None);
    let Decision::Wait(recheck) = call.poll_decision(Timestamp::ZERO, &mut engine) else {
        panic!("no lease yet: a wait");
    };
    assert_eq!(recheck, at(1));
    let ask = engine.poll_lease_ask(Timestamp::ZERO).expect("an ask");
    engine.handle_lease(at(1), &ask, LeaseAnswer::Failed);
    let event = engine.poll_event();
    assert!(
        matches!(
            event,
            Some(EngineEvent::Shared(SharedEvent::Fallback {
                mode: FailMode::Closed,
                ..
            }))
        ),
        "{event:?}"
    );
    match call.poll_decision(at(1), &mut engine) {
        Decision::Done(Finish::GaveUp(g)) => {
            assert!(
                matches!(g.reason, GiveUpReason::RateLimited { .. }),
                "{:?}",
                g.reason
            );
        }
        other => panic!("fail closed past the deadline gives up at once: {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the lag, the replica count and the seed: every call succeeds, no
    /// request goes out that the store did not lease, and the store is asked at most
    /// once per request plus once per empty answer window.
    #[test]
    fn shared_limits_hold_for_any_lag(
        replicas in 1usize..5,
        calls in 1usize..20,
        lag_ms in 0u64..20,
        seed in 0u8..200,
    ) {
        let (sent, finishes, bucket) = replicas_run(replicas, calls, 20, 0.05, &|_| ms(lag_ms), seed);
        prop_assert_eq!(finishes.len(), replicas * calls, "seed {}", seed);
        prop_assert!(finishes.iter().all(|f| matches!(f, Finish::Success { .. })), "seed {}", seed);
        prop_assert!(sent.len() <= bucket.granted.len(), "seed {}", seed);
        // The store's own bound: any second holds at most burst + rate leased requests.
        prop_assert!(busiest(&bucket.granted, ms(1000)) <= 60 + 20, "seed {}", seed);
    }
}

mod key_states {
    use super::*;
    use crate::ids::Target;
    use crate::pool::{DisableReason, KeyState};
    use crate::shared::keys::{KeyPublish, SharedKeyState};

    fn sharing_engine(seed: u8) -> Engine {
        let mut spec = EndpointSpec::new(0, 2);
        spec.share_keys = true;
        Engine::new(Policy::default().without_jitter(), &[spec], [seed; 32]).expect("engine")
    }

    /// Sends one attempt of a new call and answers it with `status`.
    fn answer(engine: &mut Engine, now: Timestamp, status: u16) -> Target {
        let mut call = engine.start_call(now, None);
        let Decision::Send(a) = call.poll_decision(now, engine) else {
            panic!("a first attempt goes at once");
        };
        call.on_outcome(now + ms(5), a.id, Outcome::Response(Response::new(status)))
            .expect("in flight");
        let _ = call.poll_decision(now + ms(5), engine);
        a.target
    }

    #[test]
    fn a_key_revoked_here_is_disabled_everywhere_and_never_echoed() {
        let mut a = sharing_engine(1);
        let mut b = sharing_engine(2);
        let revoked = answer(&mut a, at(0), 401);
        assert_eq!(
            a.poll_key_publish(),
            Some(KeyPublish::Disable {
                target: revoked,
                reason: DisableReason::Unauthorized,
            })
        );
        assert_eq!(a.poll_key_publish(), None);
        // The store's view, read back by the other engine.
        let mut states = [SharedKeyState::default(); 2];
        states[usize::from(revoked.key.0)].disabled = true;
        b.handle_shared_keys(at(10), revoked.endpoint, &states);
        assert_eq!(
            b.pool().key_state(at(10), revoked),
            Some(KeyState::Disabled {
                reason: DisableReason::Shared
            })
        );
        assert_eq!(
            b.poll_key_publish(),
            None,
            "what came from the store goes not back"
        );
        // Every call of the other engine now goes to the good key.
        for i in 0..4 {
            let used = answer(&mut b, at(20 + i), 200);
            assert_ne!(used, revoked);
        }
        // The disable is lifted in the store: enabled again here, and still not echoed.
        b.handle_shared_keys(at(100), revoked.endpoint, &[SharedKeyState::default(); 2]);
        assert_eq!(b.pool().key_state(at(100), revoked), Some(KeyState::Usable));
        assert_eq!(b.poll_key_publish(), None);
    }

    #[test]
    fn a_cooldown_reaches_the_others_until_the_same_instant() {
        let mut a = sharing_engine(3);
        let mut b = sharing_engine(4);
        let target = Target::new(0, 1);
        let mut states = [SharedKeyState::default(); 2];
        states[1].cooling_for = Some(ms(750));
        b.handle_shared_keys(at(250), E0, &states);
        assert_eq!(
            b.pool().key_state(at(250), target),
            Some(KeyState::Cooling { until: at(1000) })
        );
        assert_eq!(b.poll_key_publish(), None);
        // A 429 with Retry-After here goes out as a cooldown of its length.
        let mut call = a.start_call(at(0), None);
        let Decision::Send(first) = call.poll_decision(at(0), &mut a) else {
            panic!("sent at once");
        };
        let hints = crate::hints::Hints {
            retry_after: Some(ms(2000)),
            ..crate::hints::Hints::default()
        };
        let throttled = Response::new(429).with_hints(hints);
        call.on_outcome(at(10), first.id, Outcome::Response(throttled))
            .expect("in flight");
        let _ = call.poll_decision(at(10), &mut a);
        match a.poll_key_publish() {
            Some(KeyPublish::Cool { target, for_ }) => {
                assert_eq!(target, first.target);
                assert!(for_ >= ms(2000), "at least the server's hint: {for_:?}");
            }
            other => panic!("a cooldown to publish: {other:?}"),
        }
    }

    #[test]
    fn an_endpoint_that_does_not_share_its_keys_ignores_the_store() {
        let mut engine =
            Engine::new(Policy::default(), &[EndpointSpec::new(0, 1)], [5; 32]).expect("engine");
        let revoked = answer(&mut engine, at(0), 401);
        assert_eq!(engine.poll_key_publish(), None);
        let states = [SharedKeyState {
            cooling_for: Some(ms(100)),
            disabled: false,
        }];
        let before = engine.pool().key_state(at(1), revoked);
        engine.handle_shared_keys(at(1), revoked.endpoint, &states);
        assert_eq!(engine.pool().key_state(at(1), revoked), before);
    }
}

mod tokens {
    use super::*;
    use crate::shared::{LeaseKind, TokenSettle};

    /// An endpoint sharing 60 000 tokens a minute (bucket 6 000) and 600 requests.
    fn token_engine() -> Engine {
        let mut policy = Policy::default().without_jitter();
        policy.limiter = LimiterConfig {
            requests: Some(600),
            tokens: Some(60_000),
            ..LimiterConfig::default()
        };
        let mut spec = EndpointSpec::new(0, 1).with_shared_limit();
        spec.shared_tokens = true;
        Engine::new(policy, core::slice::from_ref(&spec), [9; 32]).expect("engine")
    }

    fn grant(n: u32, valid_ms: u64) -> LeaseAnswer {
        granted(n, valid_ms)
    }

    #[test]
    fn tokens_are_leased_spent_by_estimates_and_settled_with_the_actual_usage() {
        let mut engine = token_engine();
        let mut call = engine.start_call(at(0), None).with_tokens(500);
        assert!(matches!(
            call.poll_decision(at(0), &mut engine),
            Decision::Wait(_)
        ));
        // Both dimensions are asked for: requests first, then tokens.
        let requests = engine.poll_lease_ask(at(0)).expect("a request lease");
        assert_eq!(requests.kind, LeaseKind::Requests);
        let tokens = engine.poll_lease_ask(at(0)).expect("a token lease");
        assert_eq!(tokens.kind, LeaseKind::Tokens);
        assert_eq!(
            tokens.want, 1_500,
            "a quarter of the bucket, at least the estimate"
        );
        engine.handle_lease(at(1), &requests, grant(4, 400));
        engine.handle_lease(at(1), &tokens, grant(1_500, 1_500));
        let Decision::Send(a) = call.poll_decision(at(1), &mut engine) else {
            panic!("both leases cover the call");
        };
        // The answer used 800 tokens, 300 over the estimate: charged to the lease.
        let mut done = Response::new(200);
        done.tokens_used = Some(800);
        call.on_outcome(at(50), a.id, Outcome::Response(done))
            .expect("in flight");
        assert!(matches!(
            call.poll_decision(at(50), &mut engine),
            Decision::Done(_)
        ));
        assert_eq!(
            engine.poll_token_settle(),
            None,
            "nothing ends while the lease runs"
        );
        // The lease expires: settled with what was used of it.
        engine.handle_timeout(at(1_501));
        assert_eq!(
            engine.poll_token_settle(),
            Some(TokenSettle {
                endpoint: E0,
                reserved: 1_500,
                spent: 800,
            })
        );
        assert_eq!(engine.outstanding(), 0);
    }

    #[test]
    fn a_call_larger_than_the_leased_tokens_asks_again_for_what_it_needs() {
        let mut engine = token_engine();
        let mut small = engine.start_call(at(0), None).with_tokens(100);
        let _ = small.poll_decision(at(0), &mut engine);
        let requests = engine.poll_lease_ask(at(0)).expect("requests");
        let tokens = engine.poll_lease_ask(at(0)).expect("tokens");
        engine.handle_lease(at(1), &requests, grant(8, 800));
        // The store had only 200 free: an empty answer, then a smaller ask.
        let empty = LeaseAnswer::Granted {
            requests: 0,
            valid_for: Duration::ZERO,
            retry_in: ms(20),
        };
        engine.handle_lease(at(1), &tokens, empty);
        assert!(
            matches!(small.poll_decision(at(2), &mut engine), Decision::Wait(w) if w == at(21))
        );
        let _ = small.poll_decision(at(21), &mut engine);
        let again = engine.poll_lease_ask(at(21)).expect("asked again");
        assert_eq!(
            (again.kind, again.want),
            (LeaseKind::Tokens, 100),
            "just the need"
        );
        engine.handle_lease(at(22), &again, grant(100, 100));
        assert!(matches!(
            small.poll_decision(at(22), &mut engine),
            Decision::Send(_)
        ));
    }
}
