//! Shared breakers in virtual time: engines that share one endpoint's breaker through
//! a modelled store (a map of "open until" instants on the store's clock, which is
//! the engines' clock here).

#![allow(clippy::arithmetic_side_effects)]

use alloc::collections::BTreeMap;
use core::time::Duration;

use super::breakers::{BreakerPublish, SharedOpen};
use super::{FailMode, SharedEvent};
use crate::breaker::{BreakerState, StateKind};
use crate::engine::{EndpointSpec, Engine, EngineEvent};
use crate::ids::EndpointId;
use crate::outcome::{Outcome, Response};
use crate::policy::Policy;
use crate::retry::Decision;
use crate::time::Timestamp;

const E0: EndpointId = EndpointId(0);
const OPEN_FOR: Duration = Duration::from_secs(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

/// The store: each endpoint's open-until and whole open; it only ever extends one.
#[derive(Default)]
struct Store {
    open: BTreeMap<u16, (Timestamp, Duration)>,
    down: bool,
}

impl Store {
    /// Writes what `engine` published, at `now`; false when the store is down.
    fn publish(&mut self, now: Timestamp, engine: &mut Engine) -> bool {
        let mut wrote = true;
        while let Some(p) = engine.poll_breaker_publish() {
            wrote &= self.write(now, p);
        }
        wrote
    }

    fn write(&mut self, now: Timestamp, p: BreakerPublish) -> bool {
        if self.down {
            return false;
        }
        let until = now + p.open_for(now);
        let e = self.open.entry(p.endpoint.0).or_insert((until, p.whole()));
        if until > e.0 {
            *e = (until, p.whole());
        }
        true
    }

    /// Hands the store's state of E0 to `engine` at `now` (nothing when it is down).
    fn sync(&self, now: Timestamp, engine: &mut Engine) {
        if self.down {
            return;
        }
        let open = self
            .open
            .get(&E0.0)
            .filter(|(u, _)| *u > now)
            .map(|(u, whole)| SharedOpen {
                left: u.saturating_duration_since(now),
                whole: *whole,
            });
        engine.handle_shared_breaker(now, E0, open);
    }
}

fn policy(fail: FailMode) -> Policy {
    let mut p = Policy::default().without_jitter();
    p.breaker.consecutive_failures = Some(3);
    p.breaker.failure_rate = None;
    p.breaker.open_for = OPEN_FOR;
    p.retry.max_attempts = 1;
    p.shared.fail = fail;
    p
}

fn engine(seed: u8, fail: FailMode, share: bool) -> Engine {
    let mut spec = EndpointSpec::new(0, 1);
    spec.share_breaker = share;
    Engine::new(policy(fail), &[spec], [seed; 32]).expect("engine")
}

/// One call of one attempt answered with `status` 5 ms later; whether it was sent.
fn attempt(engine: &mut Engine, now: Timestamp, status: u16) -> bool {
    let mut call = engine.start_call(now, None);
    let Decision::Send(a) = call.poll_decision(now, engine) else {
        let _ = call.cancel(now, engine);
        return false;
    };
    call.on_outcome(now + ms(5), a.id, Outcome::Response(Response::new(status)))
        .expect("in flight");
    let _ = call.poll_decision(now + ms(5), engine);
    true
}

/// Three 503s in a row from 0 ms: the breaker opens at 25 ms until 1025 ms.
fn outage(engine: &mut Engine) -> Timestamp {
    for i in 0..3 {
        assert!(
            attempt(engine, at(10 * i), 503),
            "closed until the third failure"
        );
    }
    let Some(BreakerState::Open { until }) = engine.breaker(E0).map(|b| b.state()) else {
        panic!("three failures open the breaker");
    };
    assert_eq!(until, at(25) + OPEN_FOR);
    until
}

fn events(engine: &mut Engine) -> alloc::vec::Vec<EngineEvent> {
    core::iter::from_fn(|| engine.poll_event()).collect()
}

#[test]
fn an_open_breaker_reaches_the_other_engine_until_its_next_probe() {
    let mut store = Store::default();
    let mut a = engine(1, FailMode::Open, true);
    let mut b = engine(2, FailMode::Open, true);
    let until = outage(&mut a);
    assert!(store.publish(at(40), &mut a));
    assert_eq!(store.open.get(&0), Some(&(until, OPEN_FOR)));
    let _ = events(&mut b);
    store.sync(at(250), &mut b);
    assert_eq!(
        b.breaker(E0).map(|b| b.state()),
        Some(BreakerState::Open { until })
    );
    let seen = events(&mut b);
    assert!(
        seen.contains(&EngineEvent::Shared(SharedEvent::BreakerOpened {
            at: at(250),
            endpoint: E0,
            until,
        }))
    );
    assert!(seen.iter().any(|e| matches!(
        e,
        EngineEvent::Breaker { event, .. } if event.to == StateKind::Open
    )));
    // Nothing goes from the other engine before the instant, and it is not echoed.
    for t in (260..until.as_nanos() / 1_000_000).step_by(100) {
        assert!(!attempt(&mut b, at(t), 200), "sent at {t} ms");
    }
    assert_eq!(
        b.poll_breaker_publish(),
        None,
        "what came from the store goes not back"
    );
    assert_eq!(
        b.breaker(E0).map(|b| b.trips()),
        Some(0),
        "no trip of its own"
    );
    // At the instant both probe, and two good probes close each.
    for e in [&mut a, &mut b] {
        assert!(attempt(e, until, 200), "a probe at the instant");
        assert!(attempt(e, until + ms(10), 200));
        assert_eq!(e.breaker(E0).map(|b| b.state()), Some(BreakerState::Closed));
    }
    // The store's key is over: reading it again opens nothing.
    store.sync(until + ms(250), &mut b);
    assert_eq!(b.breaker(E0).map(|b| b.state()), Some(BreakerState::Closed));
    assert!(attempt(&mut b, until + ms(260), 200));
}

#[test]
fn an_engine_reading_its_own_open_back_does_not_reopen_its_probes() {
    let mut store = Store::default();
    let mut a = engine(3, FailMode::Open, true);
    let until = outage(&mut a);
    // Written late (a slow round trip): the store's open ends 30 ms after the engine's.
    let p = a.poll_breaker_publish().expect("the open goes out");
    assert_eq!((p.endpoint, p.at, p.until), (E0, at(25), until));
    assert!(store.write(
        at(55),
        BreakerPublish {
            until: until + ms(30),
            ..p
        }
    ));
    store.sync(at(300), &mut a);
    assert_eq!(
        a.breaker(E0).map(|b| b.state()),
        Some(BreakerState::Open { until })
    );
    // Half-open at its own instant; the store's last 30 ms do not cut the probes short.
    assert!(attempt(&mut a, until, 200));
    store.sync(until + ms(10), &mut a);
    assert_eq!(
        a.breaker(E0).map(|b| b.state()),
        Some(BreakerState::HalfOpen)
    );
    assert!(attempt(&mut a, until + ms(20), 200));
    assert_eq!(a.breaker(E0).map(|b| b.state()), Some(BreakerState::Closed));
    assert_eq!(a.poll_breaker_publish(), None);
    assert!(
        !events(&mut a)
            .iter()
            .any(|e| matches!(e, EngineEvent::Shared(SharedEvent::BreakerOpened { .. })))
    );
}

#[test]
fn a_failed_probe_elsewhere_extends_the_open_here() {
    let mut store = Store::default();
    let mut a = engine(4, FailMode::Open, true);
    let mut b = engine(5, FailMode::Open, true);
    let until = outage(&mut a);
    assert!(store.publish(at(40), &mut a));
    store.sync(at(250), &mut b);
    // A probes first and fails: it reopens for twice as long (the growth).
    assert!(attempt(&mut a, until, 503));
    let again = match a.breaker(E0).map(|b| b.state()) {
        Some(BreakerState::Open { until }) => until,
        other => panic!("a failed probe reopens: {other:?}"),
    };
    assert_eq!(again, until + ms(5) + 2 * OPEN_FOR);
    assert!(store.publish(until + ms(5), &mut a));
    // B's instant has come but it has not probed yet: the store's later open reaches
    // it before it sends.
    let _ = events(&mut b);
    store.sync(until + ms(250), &mut b);
    assert!(
        events(&mut b).contains(&EngineEvent::Shared(SharedEvent::BreakerOpened {
            at: until + ms(250),
            endpoint: E0,
            until: again,
        }))
    );
    assert!(!attempt(&mut b, until + ms(260), 200));
    assert_eq!(
        b.breaker(E0).map(|b| b.state()),
        Some(BreakerState::Open { until: again })
    );
}

#[test]
fn a_store_that_fails_leaves_every_breaker_to_itself_open_or_closed() {
    for fail in [FailMode::Open, FailMode::Closed] {
        let mut store = Store::default();
        let mut a = engine(6, fail, true);
        let mut b = engine(7, fail, true);
        store.down = true;
        let until = outage(&mut a);
        assert!(!store.publish(at(40), &mut a), "{fail:?}: the write fails");
        store.sync(at(250), &mut b);
        // The other engine sends on (its own breaker is closed) in either mode.
        assert!(attempt(&mut b, at(260), 200), "{fail:?}");
        assert_eq!(b.breaker(E0).map(|b| b.state()), Some(BreakerState::Closed));
        // The failing one keeps its own open, and probes at its instant.
        assert!(!attempt(&mut a, at(300), 200), "{fail:?}");
        // The store is back: the next open (a failed probe) reaches the other.
        store.down = false;
        assert!(attempt(&mut a, until, 503));
        assert!(store.publish(until + ms(5), &mut a));
        store.sync(until + ms(250), &mut b);
        assert!(!attempt(&mut b, until + ms(260), 200), "{fail:?}");
    }
}

#[test]
fn an_endpoint_that_does_not_share_its_breaker_neither_publishes_nor_reads() {
    let mut store = Store::default();
    let mut a = engine(8, FailMode::Open, false);
    let until = outage(&mut a);
    assert_eq!(a.poll_breaker_publish(), None);
    store.open.insert(0, (until, OPEN_FOR));
    let mut b = engine(9, FailMode::Open, false);
    store.sync(at(250), &mut b);
    assert_eq!(b.breaker(E0).map(|b| b.state()), Some(BreakerState::Closed));
    assert!(attempt(&mut b, at(260), 200));
}

#[test]
fn an_open_that_only_counts_is_not_published() {
    let mut spec = EndpointSpec::new(0, 1);
    spec.share_breaker = true;
    let mut p = policy(FailMode::Open);
    p.breaker.mode = crate::breaker::BreakerMode::MetricsOnly;
    let mut a = Engine::new(p, &[spec], [10; 32]).expect("engine");
    for i in 0..3 {
        assert!(attempt(&mut a, at(10 * i), 503));
    }
    assert!(matches!(
        a.breaker(E0).map(|b| b.state()),
        Some(BreakerState::Open { .. })
    ));
    assert!(attempt(&mut a, at(40), 200), "metrics only: still sent");
    assert_eq!(a.poll_breaker_publish(), None);
}

#[test]
fn a_probe_that_failed_before_the_endpoint_came_back_does_not_reopen_the_others() {
    let mut store = Store::default();
    let mut a = engine(11, FailMode::Open, true);
    let mut b = engine(12, FailMode::Open, true);
    let until = outage(&mut a);
    assert!(store.publish(at(40), &mut a));
    store.sync(at(250), &mut b);
    // A probes first and fails (the endpoint is still down): open for 2 s more.
    assert!(attempt(&mut a, until, 503));
    // B probes a little later, once the endpoint is back: two good probes close it.
    assert!(attempt(&mut b, until + ms(100), 200));
    assert!(attempt(&mut b, until + ms(110), 200));
    assert_eq!(b.breaker(E0).map(|b| b.state()), Some(BreakerState::Closed));
    // A's reopen reaches the store after B's successes: older news, B stays closed.
    assert!(store.publish(until + ms(200), &mut a));
    let _ = events(&mut b);
    store.sync(until + ms(250), &mut b);
    assert_eq!(b.breaker(E0).map(|b| b.state()), Some(BreakerState::Closed));
    assert!(events(&mut b).is_empty());
    assert!(attempt(&mut b, until + ms(260), 200));
}
