#![allow(clippy::arithmetic_side_effects)]

use alloc::vec::Vec;
use core::time::Duration;

use super::*;
use crate::classify::ErrorFacts;
use crate::ids::EndpointSet;
use crate::outcome::{Outcome, Response};
use crate::pool::DisableReason;
use crate::retry::{Decision, Finish, GiveUpReason};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

/// A policy with no jitter, so instants are exact.
fn exact() -> Policy {
    Policy::default().without_jitter()
}

fn seed(n: u8) -> Seed {
    [n; 32]
}

/// One request as the fake upstream saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sent {
    at: Timestamp,
    target: Target,
    attempt: u32,
    call: usize,
}

/// A virtual-time driver: many calls on one engine, an upstream given as a function of
/// (instant, target) → (outcome, latency). It jumps from deadline to deadline.
struct Driver<F> {
    engine: Engine,
    upstream: F,
    sent: Vec<Sent>,
}

struct Slot {
    start: Timestamp,
    call: Option<Call>,
    pending: Option<(crate::ids::AttemptId, Timestamp, Outcome)>,
    wake: Timestamp,
    finish: Option<Finish>,
}

impl<F: FnMut(Timestamp, Target) -> (Outcome, Duration)> Driver<F> {
    fn new(engine: Engine, upstream: F) -> Self {
        Driver {
            engine,
            upstream,
            sent: Vec::new(),
        }
    }

    fn run(&mut self, starts: &[Timestamp]) -> Vec<Finish> {
        let mut slots: Vec<Slot> = starts
            .iter()
            .map(|&s| Slot {
                start: s,
                call: None,
                pending: None,
                wake: s,
                finish: None,
            })
            .collect();
        for _ in 0..1_000_000 {
            let next = slots
                .iter()
                .filter(|s| s.finish.is_none())
                .map(|s| s.pending.map_or(s.wake, |(_, t, _)| t.min(s.wake)))
                .min();
            let Some(now) = next else { break };
            for (i, slot) in slots.iter_mut().enumerate() {
                if slot.finish.is_some() {
                    continue;
                }
                let call = slot
                    .call
                    .get_or_insert_with(|| self.engine.start_call(slot.start, None));
                let mut delivered = false;
                if let Some((id, t, o)) = slot.pending
                    && t <= now
                {
                    let _ = call.on_outcome(t, id, o);
                    slot.pending = None;
                    delivered = true;
                }
                if !delivered && slot.wake > now {
                    continue;
                }
                {
                    match call.poll_decision(now, &mut self.engine) {
                        Decision::Send(a) => {
                            self.sent.push(Sent {
                                at: now,
                                target: a.target,
                                attempt: a.id.0,
                                call: i,
                            });
                            let (o, latency) = (self.upstream)(now, a.target);
                            slot.pending = Some((a.id, now + latency.min(a.timeout), o));
                            slot.wake = a.deadline;
                        }
                        Decision::Wait(t) => slot.wake = t,
                        Decision::Done(f) => slot.finish = Some(f),
                    }
                }
            }
        }
        slots
            .into_iter()
            .map(|s| s.finish.expect("every call finishes"))
            .collect()
    }
}

fn ok() -> (Outcome, Duration) {
    (Outcome::Response(Response::new(200)), ms(100))
}

fn down() -> (Outcome, Duration) {
    (Outcome::Response(Response::new(503)), ms(20))
}

#[test]
fn a_primary_outage_fails_over_at_once_and_traffic_returns_after_a_probe() {
    let p = exact();
    let endpoints = [EndpointSpec::new(0, 1), EndpointSpec::new(1, 1)];
    let engine = Engine::new(p, &endpoints, seed(1)).unwrap();
    // The primary is down from 0 to 10 s.
    let mut d = Driver::new(engine, |now: Timestamp, t: Target| {
        if t.endpoint.0 == 0 && now < at(10_000) {
            down()
        } else {
            ok()
        }
    });
    let starts: Vec<Timestamp> = (0..300).map(|i| at(i * 100)).collect();
    let finishes = d.run(&starts);
    assert!(
        finishes.iter().all(Finish::is_success),
        "every call succeeds"
    );
    // The first call: primary fails at 20 ms, the secondary is tried at once.
    let first: Vec<_> = d.sent.iter().filter(|s| s.call == 0).collect();
    assert_eq!(first.len(), 2);
    assert_eq!((first[0].target.endpoint.0, first[0].at), (0, at(0)));
    assert_eq!((first[1].target.endpoint.0, first[1].at), (1, at(20)));
    // Once the failure rate trips the breaker, the primary sees no more requests in the outage.
    let primary_in_outage = d
        .sent
        .iter()
        .filter(|s| s.target.endpoint.0 == 0 && s.at < at(10_000))
        .count();
    // The failure-rate model needs min_calls (20) in its window before it trips.
    assert!(
        primary_in_outage <= 25,
        "{primary_in_outage} requests reached the down primary"
    );
    // After the outage, a probe closes the breaker and new calls go to the primary again.
    let late: Vec<_> = d.sent.iter().filter(|s| s.at >= at(20_000)).collect();
    assert!(!late.is_empty());
    assert!(
        late.iter().all(|s| s.target.endpoint.0 == 0),
        "traffic returned to the primary"
    );
    let mut saw_close = false;
    while let Some(e) = d.engine.poll_event() {
        if let EngineEvent::Breaker { endpoint, event } = e {
            assert_eq!(endpoint.0, 0);
            saw_close |= event.to == crate::breaker::StateKind::Closed;
        }
    }
    assert!(saw_close, "the primary's breaker closed again");
}

#[test]
fn a_storm_of_429s_sends_nothing_before_the_hinted_time() {
    let p = exact();
    let engine = Engine::new(p, &[EndpointSpec::new(0, 1)], seed(2)).unwrap();
    // Every request before 3 s is throttled with Retry-After: 3 − now (rounded up to 1 s).
    let mut d = Driver::new(engine, |now: Timestamp, _t: Target| {
        if now < at(3_000) {
            let mut r = Response::new(429);
            let left = at(3_000).saturating_duration_since(now);
            r.hints.retry_after = Some(Duration::from_secs(left.as_secs() + 1));
            (Outcome::Response(r), ms(10))
        } else {
            ok()
        }
    });
    let starts: Vec<Timestamp> = (0..50).map(|i| at(i * 20)).collect();
    let finishes = d.run(&starts);
    assert!(finishes.iter().all(Finish::is_success));
    // Replay the hints: a 429 seen at r with hint h cools the key until r + h, for
    // every call: no request of any call goes out in [r, r + h).
    let mut cooled: Vec<(Timestamp, Timestamp)> = Vec::new();
    for s in &d.sent {
        for &(r, until) in &cooled {
            assert!(
                !(s.at >= r && s.at < until),
                "sent at {} while cooled {}..{}",
                s.at,
                r,
                until
            );
        }
        if s.at < at(3_000) {
            let left = at(3_000).saturating_duration_since(s.at);
            let r = s.at + ms(10);
            cooled.push((r, r + Duration::from_secs(left.as_secs() + 1)));
        }
    }
    assert!(
        d.sent.len() < 50 * 3,
        "{} requests for 50 calls",
        d.sent.len()
    );
}

#[test]
fn a_key_out_of_quota_is_never_used_again() {
    let p = exact();
    let engine = Engine::new(p, &[EndpointSpec::new(0, 3)], seed(3)).unwrap();
    let mut d = Driver::new(engine, |_now: Timestamp, t: Target| {
        if t.key.0 == 1 {
            let r = Response::new(429).with_error(ErrorFacts::scan(
                br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
            ));
            (Outcome::Response(r), ms(15))
        } else {
            ok()
        }
    });
    let starts: Vec<Timestamp> = (0..60).map(|i| at(i * 50)).collect();
    let finishes = d.run(&starts);
    assert!(finishes.iter().all(Finish::is_success));
    let to_bad = d.sent.iter().filter(|s| s.target.key.0 == 1).count();
    assert_eq!(to_bad, 1, "the bad key got exactly one request");
    let disabled = core::iter::from_fn(|| d.engine.poll_event())
        .filter(|e| {
            matches!(
                e,
                EngineEvent::Key(PoolEvent::KeyDisabled {
                    reason: DisableReason::QuotaExhausted,
                    ..
                })
            )
        })
        .count();
    assert_eq!(disabled, 1);
}

#[test]
fn an_open_breaker_fails_fast_or_holds_as_configured() {
    let mut p = exact();
    p.breaker.consecutive_failures = Some(2);
    p.breaker.open_for = Duration::from_secs(5);
    let engine = Engine::new(p.clone(), &[EndpointSpec::new(0, 1)], seed(4)).unwrap();
    let mut d = Driver::new(engine, |_n: Timestamp, _t: Target| down());
    let finishes = d.run(&[at(0), at(5_000), at(5_000)]);
    match finishes[1] {
        Finish::GaveUp(g) => assert!(
            matches!(g.reason, GiveUpReason::BreakerOpen { .. }),
            "{g:?}"
        ),
        f => panic!("{f:?}"),
    }
    // With hold, a call waits out a short outage instead.
    p.retry.hold = true;
    p.retry.max_attempts = 10;
    let engine = Engine::new(p, &[EndpointSpec::new(0, 1)], seed(4)).unwrap();
    let mut d = Driver::new(
        engine,
        |now: Timestamp, _t: Target| if now < at(3_000) { down() } else { ok() },
    );
    let finishes = d.run(&[at(0), at(1_000)]);
    assert!(finishes.iter().all(Finish::is_success), "{finishes:?}");
}

#[test]
fn same_seed_same_trace_and_different_seeds_differ() {
    let trace = |s: u8| {
        let mut p = Policy::default();
        p.breaker.enabled = false;
        let engine = Engine::new(p, &[EndpointSpec::new(0, 2)], seed(s)).unwrap();
        let mut n = 0u64;
        let mut d = Driver::new(engine, move |_now: Timestamp, _t: Target| {
            n += 1;
            if n % 3 == 0 { ok() } else { down() }
        });
        let starts: Vec<Timestamp> = (0..40).map(|i| at(i * 30)).collect();
        let f = d.run(&starts);
        (d.sent, f)
    };
    assert_eq!(trace(7), trace(7));
    assert_ne!(trace(7).0, trace(8).0);
}

#[test]
fn a_bad_config_names_the_field() {
    let mut p = Policy::default();
    p.retry.max_attempts = 0;
    assert_eq!(
        Engine::new(p, &[EndpointSpec::default()], seed(0))
            .err()
            .map(|e| e.field()),
        Some("retry.max_attempts")
    );
    assert_eq!(
        Engine::new(Policy::default(), &[], seed(0))
            .err()
            .map(|e| e.field()),
        Some("pool.endpoints")
    );
}

/// One endpoint whose breaker opens for 4 s after two failures, under calls that hold
/// for it for at most 10 s.
fn holding_engine() -> Engine {
    let mut p = exact();
    p.breaker.consecutive_failures = Some(2);
    p.breaker.open_for = Duration::from_secs(4);
    p.retry.hold = true;
    p.retry.max_attempts = 50;
    p.retry.max_hold = Duration::from_secs(10);
    Engine::new(p, &[EndpointSpec::new(0, 1)], seed(4)).unwrap()
}

#[test]
fn a_holding_call_stops_holding_once_the_endpoint_has_failed_for_max_hold() {
    let engine = holding_engine();
    let mut d = Driver::new(engine, |_n: Timestamp, _t: Target| down());
    let finishes = d.run(&[at(0), at(12_000)]);
    for f in &finishes {
        let Finish::GaveUp(g) = f else {
            panic!("{f:?}")
        };
        assert!(
            matches!(g.reason, GiveUpReason::BreakerOpen { .. }),
            "{g:?}"
        );
    }
    // The first call held until the endpoint had failed for 10 s, not for its 50
    // attempts or its 180 s deadline; the second one, later, did not wait at all.
    assert_eq!(finishes[1].attempts(), 0);
    let last = d.sent.iter().map(|s| s.at).max().unwrap();
    assert!(last < at(10_000), "{:?}", d.sent);
    // The failing instant is the first failure; a success clears it.
    assert_eq!(d.engine.failing_since(EndpointId(0)), Some(at(20)));
}

#[test]
fn a_short_outage_is_still_held_through() {
    let engine = holding_engine();
    let mut d = Driver::new(
        engine,
        |now: Timestamp, _t: Target| if now < at(4_000) { down() } else { ok() },
    );
    let finishes = d.run(&[at(0), at(1_000), at(7_000)]);
    assert!(finishes.iter().all(Finish::is_success), "{finishes:?}");
    assert_eq!(d.engine.failing_since(EndpointId(0)), None);
}

#[test]
fn a_standby_endpoint_serves_only_the_calls_restricted_to_it() {
    let specs = [
        EndpointSpec::new(0, 1),
        EndpointSpec::new(0, 1).on_standby(),
    ];
    let mut engine = Engine::new(exact(), &specs, seed(1)).unwrap();
    for i in 0..6 {
        let mut call = engine.start_call(at(i), None);
        match call.poll_decision(at(i), &mut engine) {
            Decision::Send(a) => assert_eq!(a.target.endpoint, EndpointId(0)),
            d => panic!("{d:?}"),
        }
        let _ = call.cancel(at(i), &mut engine);
    }
    let mut call = engine.start_call(at(10), None).restricted_to(EndpointId(1));
    match call.poll_decision(at(10), &mut engine) {
        Decision::Send(a) => assert_eq!(a.target.endpoint, EndpointId(1)),
        d => panic!("{d:?}"),
    }
    let _ = call.cancel(at(10), &mut engine);
    // With the standby endpoint the only one left, an ordinary call finds nothing.
    let mut down = Engine::new(exact(), &specs, seed(1)).unwrap();
    let target = Target::new(0, 0);
    down.pool
        .on_key_rejected(at(0), target, DisableReason::Unauthorized)
        .unwrap();
    let mut call = down.start_call(at(1), None);
    assert_eq!(
        call.poll_decision(at(1), &mut down),
        Decision::Done(Finish::GaveUp(crate::retry::GiveUp {
            reason: GiveUpReason::NoUsableKey,
            attempts: 0,
            last_failure: None,
            last_status: None,
        }))
    );
}

/// Drives one call on `engine` against `answers` (one per attempt, each 20 ms away).
fn lone_call(engine: &mut Engine, answers: &[Outcome]) -> Finish {
    let mut now = at(0);
    let mut call = engine.start_call(now, None);
    let mut answers = answers.iter().copied();
    loop {
        match call.poll_decision(now, engine) {
            Decision::Send(a) => {
                now = now + ms(20);
                let o = answers
                    .next()
                    .unwrap_or(Outcome::Response(Response::new(200)));
                call.on_outcome(now, a.id, o).unwrap();
            }
            Decision::Wait(t) => now = t,
            Decision::Done(f) => return f,
        }
    }
}

#[test]
fn a_fresh_client_always_gets_its_configured_attempts() {
    let status = |s| Outcome::Response(Response::new(s));
    let refused = Outcome::Transport(crate::outcome::Transport::new(
        crate::outcome::TransportKind::ConnectRefused,
        crate::outcome::Phase::BeforeSend,
    ));
    for n in 0..1_000u32 {
        let mut s: Seed = [0; 32];
        s[..4].copy_from_slice(&n.to_le_bytes());
        let mut engine = Engine::new(Policy::default(), &[EndpointSpec::new(0, 1)], s).unwrap();
        let f = lone_call(&mut engine, &[status(503), status(503), status(200)]);
        assert!(f.is_success(), "seed {n}: {f:?}");
        assert_eq!(f.attempts(), 3, "seed {n}");
        let mut engine = Engine::new(Policy::default(), &[EndpointSpec::new(0, 1)], s).unwrap();
        let f = lone_call(&mut engine, &[refused, refused, refused, refused]);
        let Finish::GaveUp(g) = f else {
            panic!("seed {n}: {f:?}")
        };
        assert_eq!(
            (g.reason, g.attempts),
            (GiveUpReason::RetriesExhausted, 4),
            "seed {n}"
        );
    }
}

#[test]
fn throttled_retries_do_not_drain_the_budget_but_blind_ones_do() {
    let mut p = Policy::default();
    p.budget.ratio = 0.0;
    p.budget.min_per_sec = 0;
    p.breaker.enabled = false;
    let throttled = {
        let mut r = Response::new(429);
        r.hints.retry_after = Some(ms(100));
        Outcome::Response(r)
    };
    let mut engine = Engine::new(p.clone(), &[EndpointSpec::new(0, 1)], seed(3)).unwrap();
    for _ in 0..20 {
        let f = lone_call(&mut engine, &[throttled, throttled]);
        assert!(f.is_success(), "{f:?}");
    }
    let mut engine = Engine::new(p, &[EndpointSpec::new(0, 1)], seed(3)).unwrap();
    let f = lone_call(&mut engine, &[Outcome::Response(Response::new(503))]);
    let Finish::GaveUp(g) = f else {
        panic!("{f:?}")
    };
    assert_eq!((g.reason, g.attempts), (GiveUpReason::BudgetExhausted, 1));
}

#[test]
fn a_call_restricted_to_a_set_fails_over_within_it_and_never_leaves_it() {
    // Endpoint 0 is the pool's first choice; the set names 1 (failing) and 2.
    let specs = [
        EndpointSpec::new(0, 1),
        EndpointSpec::new(1, 1),
        EndpointSpec::new(2, 1),
    ];
    let engine = Engine::new(exact(), &specs, seed(3)).unwrap();
    let mut d = Driver::new(engine, |_: Timestamp, t: Target| match t.endpoint.0 {
        1 => down(),
        _ => ok(),
    });
    let set = EndpointSet::of([EndpointId(1), EndpointId(2)]).unwrap();
    let mut now = at(0);
    let mut call = d.engine.start_call(now, None).restricted_to_set(set);
    let mut went = Vec::new();
    let finish = loop {
        match call.poll_decision(now, &mut d.engine) {
            Decision::Send(a) => {
                went.push(a.target.endpoint.0);
                let (o, latency) = (d.upstream)(now, a.target);
                now = now + latency;
                call.on_outcome(now, a.id, o).unwrap();
            }
            Decision::Wait(until) => now = until,
            Decision::Done(f) => break f,
        }
    };
    assert!(finish.is_success(), "{finish:?} after {went:?}");
    assert_eq!(
        went.first(),
        Some(&1),
        "the set's first endpoint by priority"
    );
    assert_eq!(went.last(), Some(&2), "failed over within the set");
    assert!(!went.contains(&0), "never outside the set: {went:?}");
}

mod control;
