//! Operator control: breaker modes and resets, keys taken out and put back, and the
//! status snapshot, driven through real calls in virtual time.

use super::*;
use crate::breaker::{BreakerMode, BreakerState, StateKind};
use crate::pool::KeyState;
use crate::retry::{Admit, Gate, GiveUp, Query, Report};

fn status(s: u16) -> Outcome {
    Outcome::Response(Response::new(s))
}

fn throttled(wait: Duration) -> Outcome {
    let mut r = Response::new(429);
    r.hints.retry_after = Some(wait);
    Outcome::Response(r)
}

fn events(engine: &mut Engine) -> Vec<EngineEvent> {
    core::iter::from_fn(|| engine.poll_event()).collect()
}

fn sent_to(d: Decision) -> crate::retry::Attempt {
    match d {
        Decision::Send(a) => a,
        d => panic!("expected a send, got {d:?}"),
    }
}

/// A policy whose breaker trips on one endpoint failure and opens for 5 s, without a
/// retry budget in the way.
fn touchy() -> Policy {
    let mut p = exact();
    p.breaker.consecutive_failures = Some(1);
    p.breaker.open_for = Duration::from_secs(5);
    p.budget.enabled = false;
    p
}

fn give_up_reason(f: &Finish) -> GiveUpReason {
    match f {
        Finish::GaveUp(g) => g.reason,
        f => panic!("expected a give-up, got {f:?}"),
    }
}

#[test]
fn forced_open_sends_every_call_elsewhere_until_the_mode_changes() {
    let specs = [EndpointSpec::new(0, 1), EndpointSpec::new(1, 1)];
    let mut engine = Engine::new(exact(), &specs, seed(1)).unwrap();
    engine
        .set_breaker_mode(at(0), EndpointId(0), BreakerMode::ForcedOpen)
        .unwrap();
    assert_eq!(
        events(&mut engine),
        [EngineEvent::BreakerModeChanged {
            at: at(0),
            endpoint: EndpointId(0),
            from: BreakerMode::Auto,
            to: BreakerMode::ForcedOpen,
        }]
    );
    let mut d = Driver::new(engine, |_n: Timestamp, _t: Target| ok());
    let starts: Vec<Timestamp> = (0..20).map(|i| at(i * 50)).collect();
    assert!(d.run(&starts).iter().all(Finish::is_success));
    assert!(d.sent.iter().all(|s| s.target.endpoint == EndpointId(1)));
    // Setting the mode it has changes nothing and says nothing.
    let mut engine = d.engine;
    engine
        .set_breaker_mode(at(2_000), EndpointId(0), BreakerMode::ForcedOpen)
        .unwrap();
    assert!(events(&mut engine).is_empty());
    engine
        .set_breaker_mode(at(2_000), EndpointId(0), BreakerMode::Auto)
        .unwrap();
    let mut call = engine.start_call(at(2_000), None);
    let a = sent_to(call.poll_decision(at(2_000), &mut engine));
    assert_eq!(a.target.endpoint, EndpointId(0));
    let _ = call.cancel(at(2_000), &mut engine);
}

#[test]
fn forced_open_on_the_only_endpoint_gives_up_at_once_or_holds_until_lifted() {
    let mut engine = Engine::new(exact(), &[EndpointSpec::new(0, 1)], seed(2)).unwrap();
    engine
        .set_breaker_mode(at(0), EndpointId(0), BreakerMode::ForcedOpen)
        .unwrap();
    let mut call = engine.start_call(at(100), None);
    let Decision::Done(f) = call.poll_decision(at(100), &mut engine) else {
        panic!("a call that does not hold gives up")
    };
    // No lift instant is known: the give-up names a recheck `open_for` away.
    let until = at(100) + engine.policy().breaker.open_for;
    assert_eq!(give_up_reason(&f), GiveUpReason::BreakerOpen { until });
    assert_eq!(f.attempts(), 0);
    // A holding call waits, re-asking every `open_for`, and goes once it lifts.
    let mut p = exact();
    p.retry.hold = true;
    let open_for = p.breaker.open_for;
    let mut engine = Engine::new(p, &[EndpointSpec::new(0, 1)], seed(2)).unwrap();
    engine
        .set_breaker_mode(at(0), EndpointId(0), BreakerMode::ForcedOpen)
        .unwrap();
    let mut call = engine.start_call(at(0), None);
    assert_eq!(
        call.poll_decision(at(0), &mut engine),
        Decision::Wait(at(0) + open_for)
    );
    assert_eq!(
        call.poll_decision(at(0) + open_for, &mut engine),
        Decision::Wait(at(0) + open_for * 2)
    );
    engine
        .set_breaker_mode(at(6_000), EndpointId(0), BreakerMode::Auto)
        .unwrap();
    let a = sent_to(call.poll_decision(at(0) + open_for * 2, &mut engine));
    call.on_outcome(at(10_100), a.id, status(200)).unwrap();
    assert!(
        call.poll_decision(at(10_100), &mut engine).is_done(),
        "the call ends with its success"
    );
}

/// Calls against an endpoint that always fails, under `mode`: their finishes, the
/// engine after them, and how many attempts went out.
fn outage_under(mode: BreakerMode) -> (Vec<Finish>, Engine, usize) {
    let mut engine = Engine::new(touchy(), &[EndpointSpec::new(0, 1)], seed(3)).unwrap();
    engine.set_breaker_mode(at(0), EndpointId(0), mode).unwrap();
    let mut d = Driver::new(engine, |_n: Timestamp, _t: Target| down());
    let starts: Vec<Timestamp> = (0..10).map(|i| at(i * 1_000)).collect();
    let finishes = d.run(&starts);
    let sent = d.sent.len();
    (finishes, d.engine, sent)
}

#[test]
fn a_disabled_breaker_never_trips_and_never_denies() {
    let (finishes, mut engine, sent) = outage_under(BreakerMode::Disabled);
    let attempts = engine.policy().retry.max_attempts;
    for f in &finishes {
        assert_eq!(give_up_reason(f), GiveUpReason::RetriesExhausted);
        assert_eq!(f.attempts(), attempts);
    }
    assert_eq!(sent, finishes.len() * attempts as usize);
    let b = engine.breaker(EndpointId(0)).unwrap();
    assert_eq!((b.state(), b.trips()), (BreakerState::Closed, 0));
    let breaker_events = events(&mut engine)
        .into_iter()
        .filter(|e| matches!(e, EngineEvent::Breaker { .. }))
        .count();
    assert_eq!(breaker_events, 0);
}

#[test]
fn a_metrics_only_breaker_trips_and_reports_but_lets_every_attempt_go() {
    let (auto, _, auto_sent) = outage_under(BreakerMode::Auto);
    assert!(
        auto.iter()
            .any(|f| matches!(give_up_reason(f), GiveUpReason::BreakerOpen { .. })),
        "the same outage in auto mode is cut short by the breaker"
    );
    let (finishes, mut engine, sent) = outage_under(BreakerMode::MetricsOnly);
    let attempts = engine.policy().retry.max_attempts;
    for f in &finishes {
        assert_eq!(give_up_reason(f), GiveUpReason::RetriesExhausted);
        assert_eq!(f.attempts(), attempts);
    }
    assert_eq!(sent, finishes.len() * attempts as usize);
    assert!(sent > auto_sent);
    assert!(engine.breaker(EndpointId(0)).unwrap().trips() > 0);
    let opened = events(&mut engine)
        .into_iter()
        .any(|e| matches!(e, EngineEvent::Breaker { event, .. } if event.to == StateKind::Open));
    assert!(opened, "dashboards see the transitions");
}

#[test]
fn reset_from_open_closes_at_once_and_forgets_the_failing_time() {
    let mut p = touchy();
    p.retry.max_attempts = 1;
    let mut engine = Engine::new(p, &[EndpointSpec::new(0, 1)], seed(4)).unwrap();
    let f = lone_call(&mut engine, &[status(503)]);
    assert_eq!(give_up_reason(&f), GiveUpReason::RetriesExhausted);
    let until = at(20) + Duration::from_secs(5);
    let b = engine.breaker(EndpointId(0)).unwrap();
    assert_eq!(b.state(), BreakerState::Open { until });
    assert_eq!(engine.failing_since(EndpointId(0)), Some(at(20)));
    events(&mut engine);
    engine.reset_breaker(at(1_000), EndpointId(0)).unwrap();
    assert_eq!(
        events(&mut engine),
        [
            EngineEvent::BreakerReset {
                at: at(1_000),
                endpoint: EndpointId(0),
                from: StateKind::Open,
            },
            EngineEvent::Breaker {
                endpoint: EndpointId(0),
                event: crate::breaker::BreakerEvent {
                    at: at(1_000),
                    from: StateKind::Open,
                    to: StateKind::Closed,
                },
            },
        ]
    );
    assert_eq!(engine.failing_since(EndpointId(0)), None);
    assert_eq!(engine.breaker(EndpointId(0)).unwrap().poll_timeout(), None);
    let mut call = engine.start_call(at(1_000), None);
    let a = sent_to(call.poll_decision(at(1_000), &mut engine));
    assert_eq!(a.target, Target::new(0, 0));
    let _ = call.cancel(at(1_000), &mut engine);
    // A reset of a closed breaker still says so, with no transition.
    engine.reset_breaker(at(1_001), EndpointId(0)).unwrap();
    assert_eq!(
        events(&mut engine),
        [EngineEvent::BreakerReset {
            at: at(1_001),
            endpoint: EndpointId(0),
            from: StateKind::Closed,
        }]
    );
}

fn query(deadline: Timestamp) -> Query {
    Query {
        attempt: 1,
        avoid: None,
        tokens: 0,
        hold: false,
        max_hold: ms(1),
        only: None,
        deadline,
        span: ms(1_000),
        hedge: false,
    }
}

#[test]
fn reset_from_half_open_ends_a_probe_cleanly_and_a_replay_is_stale() {
    let mut p = touchy();
    p.retry.max_attempts = 1;
    let mut engine = Engine::new(p, &[EndpointSpec::new(0, 1)], seed(5)).unwrap();
    lone_call(&mut engine, &[status(503)]);
    let half_open = at(20) + Duration::from_secs(5);
    let Admit::Go(grant) = engine.admit(half_open, &query(Timestamp::MAX)) else {
        panic!("the open time is over: a probe goes")
    };
    assert!(grant.probe.is_some());
    assert_eq!(engine.breaker(EndpointId(0)).unwrap().probes_in_flight(), 1);
    events(&mut engine);
    engine.reset_breaker(half_open, EndpointId(0)).unwrap();
    let b = engine.breaker(EndpointId(0)).unwrap();
    assert_eq!((b.state(), b.probes_in_flight()), (BreakerState::Closed, 0));
    assert_eq!(
        events(&mut engine).first(),
        Some(&EngineEvent::BreakerReset {
            at: half_open,
            endpoint: EndpointId(0),
            from: StateKind::HalfOpen,
        })
    );
    // The probe is still in flight: its grant holds its call-in-flight slot.
    assert_eq!(engine.outstanding_on(EndpointId(0)), 1);
    assert_eq!(engine.limiter(EndpointId(0)).unwrap().in_flight(), 1);
    let report = Report {
        grant,
        verdict: crate::classify::Verdict::Success,
        latency: ms(30),
        hints: &crate::hints::Hints::NONE,
        tokens_used: None,
        retry_at: None,
    };
    let later = half_open + ms(30);
    engine.on_attempt_end(later, &report);
    // Its end is taken as a plain call's: no stale report, nothing left outstanding.
    assert_eq!((engine.stale_reports(), engine.outstanding()), (0, 0));
    assert_eq!(engine.limiter(EndpointId(0)).unwrap().in_flight(), 0);
    let b = engine.breaker(EndpointId(0)).unwrap();
    assert_eq!((b.state(), b.counts().calls), (BreakerState::Closed, 1));
    engine.on_attempt_end(later + ms(1), &report);
    assert_eq!((engine.stale_reports(), engine.outstanding()), (1, 0));
}

#[test]
fn a_probe_call_in_flight_across_a_reset_still_succeeds() {
    let mut p = touchy();
    p.retry.max_attempts = 1;
    let mut engine = Engine::new(p, &[EndpointSpec::new(0, 1)], seed(6)).unwrap();
    lone_call(&mut engine, &[status(503)]);
    let half_open = at(20) + Duration::from_secs(5);
    let mut call = engine.start_call(half_open, None);
    let a = sent_to(call.poll_decision(half_open, &mut engine));
    engine
        .reset_breaker(half_open + ms(5), EndpointId(0))
        .unwrap();
    call.on_outcome(half_open + ms(30), a.id, status(200))
        .unwrap();
    let Decision::Done(f) = call.poll_decision(half_open + ms(30), &mut engine) else {
        panic!("the call ends with its answer")
    };
    assert!(f.is_success(), "{f:?}");
    assert_eq!((engine.stale_reports(), engine.outstanding()), (0, 0));
}

#[test]
fn unknown_ids_are_usage_errors() {
    let mut engine = Engine::new(exact(), &[EndpointSpec::new(0, 2)], seed(7)).unwrap();
    let unknown = Err(crate::error::UsageError::UnknownId);
    assert_eq!(
        engine.set_breaker_mode(at(0), EndpointId(1), BreakerMode::Disabled),
        unknown
    );
    assert_eq!(engine.reset_breaker(at(0), EndpointId(1)), unknown);
    assert_eq!(engine.disable_key(at(0), Target::new(0, 2)), unknown);
    assert_eq!(engine.enable_key(at(0), Target::new(1, 0)), unknown);
    assert!(events(&mut engine).is_empty());
}

#[test]
fn keys_disabled_and_enabled_mid_call_steer_its_next_attempts() {
    let mut engine = Engine::new(touchy(), &[EndpointSpec::new(0, 3)], seed(8)).unwrap();
    // The breaker must not be what moves the call: keep it out of the way.
    engine
        .set_breaker_mode(at(0), EndpointId(0), BreakerMode::Disabled)
        .unwrap();
    let mut call = engine.start_call(at(0), None);
    let first = sent_to(call.poll_decision(at(0), &mut engine));
    assert_eq!(first.target, Target::new(0, 0));
    // While it is in flight, the operator takes out its key and the next in turn.
    engine.disable_key(at(5), Target::new(0, 0)).unwrap();
    engine.disable_key(at(5), Target::new(0, 1)).unwrap();
    call.on_outcome(at(20), first.id, status(503)).unwrap();
    let mut now = at(20);
    let second = loop {
        match call.poll_decision(now, &mut engine) {
            Decision::Wait(t) => now = t,
            d => break sent_to(d),
        }
    };
    assert_eq!(second.target, Target::new(0, 2));
    let enabled_at = now;
    engine.enable_key(enabled_at, Target::new(0, 0)).unwrap();
    call.on_outcome(now + ms(20), second.id, status(503))
        .unwrap();
    now = now + ms(20);
    let third = loop {
        match call.poll_decision(now, &mut engine) {
            Decision::Wait(t) => now = t,
            d => break sent_to(d),
        }
    };
    assert_eq!(third.target, Target::new(0, 0));
    call.on_outcome(now + ms(20), third.id, status(200))
        .unwrap();
    assert!(matches!(
        call.poll_decision(now + ms(20), &mut engine),
        Decision::Done(Finish::Success { attempts: 3, .. })
    ));
    let keys: Vec<PoolEvent> = events(&mut engine)
        .into_iter()
        .filter_map(|e| match e {
            EngineEvent::Key(k) => Some(k),
            _ => None,
        })
        .collect();
    assert_eq!(
        keys,
        [
            PoolEvent::KeyDisabled {
                at: at(5),
                target: Target::new(0, 0),
                reason: DisableReason::Operator,
            },
            PoolEvent::KeyDisabled {
                at: at(5),
                target: Target::new(0, 1),
                reason: DisableReason::Operator,
            },
            PoolEvent::KeyEnabled {
                at: enabled_at,
                target: Target::new(0, 0),
            },
        ]
    );
}

#[test]
fn disabling_the_last_key_mid_call_ends_it_with_no_usable_key() {
    let mut engine = Engine::new(touchy(), &[EndpointSpec::new(0, 1)], seed(9)).unwrap();
    let mut call = engine.start_call(at(0), None);
    let a = sent_to(call.poll_decision(at(0), &mut engine));
    engine.disable_key(at(5), a.target).unwrap();
    call.on_outcome(at(20), a.id, status(503)).unwrap();
    let Decision::Done(f) = call.poll_decision(at(20), &mut engine) else {
        panic!("nothing is left to try")
    };
    assert_eq!(
        f,
        Finish::GaveUp(GiveUp {
            reason: GiveUpReason::NoUsableKey,
            attempts: 1,
            last_failure: f_last_failure(&f),
            last_status: Some(503),
        })
    );
    assert_eq!(engine.outstanding(), 0);
    assert_eq!(
        engine.pool().key_state(at(20), a.target),
        Some(KeyState::Disabled {
            reason: DisableReason::Operator
        })
    );
}

fn f_last_failure(f: &Finish) -> Option<crate::classify::Failure> {
    match f {
        Finish::GaveUp(g) => {
            assert!(g.last_failure.is_some());
            g.last_failure
        }
        Finish::Success { .. } => None,
    }
}

fn with_rate_headers() -> Outcome {
    let headers: [(&[u8], &[u8]); 3] = [
        (b"x-ratelimit-limit-requests", b"60"),
        (b"x-ratelimit-remaining-requests", b"59"),
        (b"x-ratelimit-reset-requests", b"1s"),
    ];
    Outcome::Response(Response::from_http(200, headers, b"{}", 0))
}

/// Polls until the call sends, jumping to each wait.
fn next_send(call: &mut Call, engine: &mut Engine, now: &mut Timestamp) -> crate::retry::Attempt {
    loop {
        match call.poll_decision(*now, engine) {
            Decision::Wait(t) => *now = t,
            d => return sent_to(d),
        }
    }
}

/// Two endpoints after a little traffic: the primary's breaker open after a 503, one
/// key cooling after a 429, one taken out by the operator, one that has seen the
/// server's rate headers; the secondary in metrics-only mode with an attempt in flight.
fn busy_engine() -> (Engine, Call) {
    let specs = [EndpointSpec::new(0, 3), EndpointSpec::new(1, 1)];
    let mut engine = Engine::new(touchy(), &specs, seed(10)).unwrap();
    let mut now = at(0);
    let mut first = engine.start_call(now, None);
    let a = next_send(&mut first, &mut engine, &mut now);
    assert_eq!(a.target, Target::new(0, 0));
    first.on_outcome(at(20), a.id, with_rate_headers()).unwrap();
    assert!(first.poll_decision(at(20), &mut engine).is_done());
    now = at(100);
    let mut second = engine.start_call(now, None);
    let a = next_send(&mut second, &mut engine, &mut now);
    assert_eq!(a.target, Target::new(0, 1));
    now = at(120);
    second
        .on_outcome(now, a.id, throttled(Duration::from_millis(3_200)))
        .unwrap();
    let a = next_send(&mut second, &mut engine, &mut now);
    assert_eq!((a.target, now), (Target::new(0, 2), at(120)));
    now = at(140);
    second.on_outcome(now, a.id, status(503)).unwrap();
    let a = next_send(&mut second, &mut engine, &mut now);
    assert_eq!((a.target, now), (Target::new(1, 0), at(140)));
    engine.disable_key(at(200), Target::new(0, 2)).unwrap();
    engine
        .set_breaker_mode(at(200), EndpointId(1), BreakerMode::MetricsOnly)
        .unwrap();
    (engine, second)
}

#[test]
fn the_status_snapshot_shows_breakers_limits_grants_and_keys() {
    let (engine, _in_flight) = busy_engine();
    let now = at(1_000);
    let all = engine.status(now);
    assert_eq!(all.len(), 2);
    let primary = engine.endpoint_status(now, EndpointId(0)).unwrap();
    assert_eq!(all[0], primary);
    assert_eq!(engine.endpoint_status(now, EndpointId(2)), None);
    let tripped_at = at(140);
    let open_for = engine.policy().breaker.open_for;
    assert_eq!((primary.at, primary.endpoint), (now, EndpointId(0)));
    assert_eq!((primary.priority, primary.standby), (0, false));
    let b = primary.breaker;
    assert_eq!(
        (b.mode, b.state, b.admits),
        (BreakerMode::Auto, StateKind::Open, false)
    );
    assert_eq!(
        b.probe_in,
        Some(open_for - now.saturating_duration_since(tripped_at))
    );
    assert_eq!((b.probes_in_flight, b.trips), (0, 1));
    // The 200 and the 503 count; the 429 is the key's, not the endpoint's.
    assert_eq!((b.window.calls, b.window.failures), (2, 1));
    assert_eq!(
        primary.failing_for,
        Some(now.saturating_duration_since(tripped_at))
    );
    assert_eq!(primary.outstanding, 0);
    assert_eq!(
        (primary.limiter.in_flight, primary.limiter.next_slot_in),
        (0, Some(Duration::ZERO))
    );
    let conditions: Vec<KeyCondition> = primary.keys.iter().map(|k| k.condition).collect();
    let cooled_until = at(120) + Duration::from_millis(3_200);
    assert_eq!(
        conditions,
        [
            KeyCondition::Usable,
            KeyCondition::Cooling {
                left: cooled_until.saturating_duration_since(now)
            },
            KeyCondition::Disabled {
                reason: DisableReason::Operator
            },
        ]
    );
    let taught = primary.keys[0].server.unwrap();
    assert!(taught.known);
    assert!(taught.request_interval.is_some());
    assert_eq!(taught.request_capacity.map(|c| c <= 60), Some(true));
    assert!(!primary.keys[1].server.unwrap().known);

    let secondary = engine.endpoint_status(now, EndpointId(1)).unwrap();
    let b = secondary.breaker;
    assert_eq!(
        (b.mode, b.state, b.admits, b.probe_in),
        (BreakerMode::MetricsOnly, StateKind::Closed, true, None)
    );
    assert_eq!((secondary.outstanding, secondary.limiter.in_flight), (1, 1));
    assert_eq!(secondary.failing_for, None);
    assert_eq!(secondary.keys.len(), 1);
    assert_eq!(secondary.keys[0].condition, KeyCondition::Usable);
}

#[test]
fn the_status_snapshot_reads_at_the_engines_latest_instant_and_changes_nothing() {
    let (engine, _in_flight) = busy_engine();
    let earlier = engine.endpoint_status(at(0), EndpointId(0)).unwrap();
    assert_eq!(earlier.at, at(200));
    // Reading past the open time reports the probe as due, without half-opening.
    let late = at(60_000);
    let s = engine.endpoint_status(late, EndpointId(0)).unwrap();
    assert_eq!(s.breaker.state, StateKind::Open);
    assert_eq!(
        (s.breaker.probe_in, s.breaker.admits),
        (Some(Duration::ZERO), true)
    );
    assert_eq!(s.keys[1].condition, KeyCondition::Usable);
    assert!(matches!(
        engine.breaker(EndpointId(0)).unwrap().state(),
        BreakerState::Open { .. }
    ));
}

#[cfg(feature = "serde")]
#[test]
fn the_status_snapshot_serializes_with_human_spans() {
    let (engine, _in_flight) = busy_engine();
    let s = engine.endpoint_status(at(1_000), EndpointId(0)).unwrap();
    let json = serde_json::to_value(&s).unwrap();
    // Tripped at 140 ms for 5 s, read at 1 s; the key cools from 120 ms for 3.2 s.
    let b = &json["breaker"];
    assert_eq!(
        (b["mode"].as_str(), b["state"].as_str()),
        (Some("auto"), Some("open"))
    );
    assert_eq!(b["probe_in"].as_str(), Some("4.14s"));
    assert_eq!(json["failing_for"].as_str(), Some("860ms"));
    assert_eq!(json["keys"][0]["condition"].as_str(), Some("usable"));
    assert_eq!(
        json["keys"][1]["condition"]["cooling"]["left"].as_str(),
        Some("2.32s")
    );
    assert_eq!(
        json["keys"][2]["condition"]["disabled"]["reason"].as_str(),
        Some("operator")
    );
    let back: EndpointStatus = serde_json::from_value(json).unwrap();
    assert_eq!(back, s);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, Copy)]
    enum Answer {
        Ok,
        Down,
        Throttled(u64),
        Reset,
    }

    fn answer() -> impl Strategy<Value = Answer> {
        prop_oneof![
            2 => Just(Answer::Ok),
            4 => Just(Answer::Down),
            1 => (1u64..3_000).prop_map(Answer::Throttled),
            1 => Just(Answer::Reset),
        ]
    }

    fn outcome(a: Answer) -> Outcome {
        match a {
            Answer::Ok => status(200),
            Answer::Down => status(503),
            Answer::Throttled(wait) => throttled(ms(wait)),
            Answer::Reset => Outcome::Transport(crate::outcome::Transport::new(
                crate::outcome::TransportKind::Reset,
                crate::outcome::Phase::AfterSend,
            )),
        }
    }

    fn mode() -> impl Strategy<Value = BreakerMode> {
        prop_oneof![
            Just(BreakerMode::ForcedOpen),
            Just(BreakerMode::Disabled),
            Just(BreakerMode::MetricsOnly),
        ]
    }

    /// Calls one after another, each driven to its end against `answers` (cycled),
    /// with the primary's breaker in `mode` (from the policy or set at run time). Checks
    /// the mode's promise at every decision.
    fn run_under(
        mode: BreakerMode,
        from_policy: bool,
        consecutive: u32,
        answers: &[Answer],
        gaps: &[u64],
        seed_byte: u8,
    ) -> Result<(), TestCaseError> {
        let mut p = Policy::default();
        p.breaker.consecutive_failures = Some(consecutive);
        p.budget.enabled = false;
        if from_policy {
            p.breaker.mode = mode;
        }
        let specs = [EndpointSpec::new(0, 2), EndpointSpec::new(1, 1)];
        let mut engine = Engine::new(p, &specs, seed(seed_byte)).unwrap();
        let primary = EndpointId(0);
        if !from_policy {
            engine
                .set_breaker_mode(Timestamp::ZERO, primary, mode)
                .unwrap();
        }
        let mut next = answers.iter().copied().cycle();
        let mut now = Timestamp::ZERO;
        for gap in gaps {
            now = now + ms(*gap);
            let mut call = engine.start_call(now, None);
            let finish = loop {
                let granted = engine.breaker(primary).unwrap().peek(now).is_granted();
                match mode {
                    BreakerMode::ForcedOpen => prop_assert!(!granted),
                    _ => prop_assert!(granted, "{mode} denied at {now}"),
                }
                match call.poll_decision(now, &mut engine) {
                    Decision::Send(a) => {
                        if mode == BreakerMode::ForcedOpen {
                            prop_assert_ne!(a.target.endpoint, primary);
                        }
                        now = now + ms(20);
                        let o = outcome(next.next().unwrap_or(Answer::Ok));
                        call.on_outcome(now, a.id, o).unwrap();
                    }
                    Decision::Wait(t) => now = t,
                    Decision::Done(f) => break f,
                }
            };
            if let Finish::GaveUp(g) = finish {
                // Only the secondary's own breaker may be open: never for the primary
                // unless forced.
                if mode != BreakerMode::ForcedOpen {
                    prop_assert!(
                        !matches!(g.reason, GiveUpReason::BreakerOpen { .. })
                            || engine.breaker(EndpointId(1)).unwrap().state()
                                != BreakerState::Closed,
                        "{g:?}"
                    );
                }
            }
        }
        prop_assert_eq!(engine.outstanding(), 0);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x0c0e_7201),
            ..ProptestConfig::default()
        })]

        /// Under `ForcedOpen` no attempt is ever admitted to the endpoint; under
        /// `Disabled` and `MetricsOnly` its breaker never denies one.
        #[test]
        fn a_breaker_mode_holds_whatever_the_endpoint_answers(
            mode in mode(),
            from_policy in any::<bool>(),
            consecutive in 1u32..4,
            answers in proptest::collection::vec(answer(), 1..12),
            gaps in proptest::collection::vec(0u64..4_000, 1..25),
            seed_byte in any::<u8>(),
        ) {
            run_under(mode, from_policy, consecutive, &answers, &gaps, seed_byte)?;
        }
    }
}
