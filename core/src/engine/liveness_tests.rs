//! Liveness in virtual time: calls that could succeed within their deadlines do, and
//! no later than needed, against a server that behaves like the providers.

#![allow(clippy::arithmetic_side_effects)]

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use super::*;
use crate::ids::AttemptId;
use crate::outcome::{Outcome, Response};
use crate::retry::{Decision, Finish, Gate, GiveUpReason};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

fn seed(n: u8) -> Seed {
    [n; 32]
}

/// A provider's continuously refilled request bucket: `limit` a minute, holding at
/// most `burst`, with OpenAI's headers on every answer and a 429 past the limit.
struct Bucket {
    limit: u64,
    burst: f64,
    level: f64,
    last: Timestamp,
    requests: u64,
    early: u64,
}

impl Bucket {
    fn new(limit: u64, burst: u64) -> Bucket {
        Bucket {
            limit,
            burst: burst as f64,
            level: burst as f64,
            last: Timestamp::ZERO,
            requests: 0,
            early: 0,
        }
    }

    fn rate(&self) -> f64 {
        self.limit as f64 / 60.0
    }

    fn handle(&mut self, now: Timestamp) -> Outcome {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.level = (self.level + elapsed * self.rate()).min(self.burst);
        self.requests += 1;
        let status = if self.level >= 1.0 {
            self.level -= 1.0;
            200
        } else {
            self.early += 1;
            429
        };
        let reset = (self.burst - self.level) / self.rate();
        let mut headers: Vec<(String, String)> = Vec::from([
            (
                "x-ratelimit-limit-requests".into(),
                format!("{}", self.limit),
            ),
            (
                "x-ratelimit-remaining-requests".into(),
                format!("{}", self.level.floor() as u64),
            ),
            ("x-ratelimit-reset-requests".into(), format!("{reset:.3}s")),
        ]);
        if status == 429 {
            let wait = (1.0 - self.level) / self.rate();
            headers.push((
                "retry-after-ms".into(),
                format!("{}", (wait * 1e3).ceil() as u64),
            ));
            headers.push((
                "retry-after".into(),
                format!("{}", wait.ceil().max(1.0) as u64),
            ));
        }
        let pairs = headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
        Outcome::Response(Response::from_http(status, pairs, b"{}", 0))
    }
}

/// Runs calls starting at `starts` on `engine` against `bucket`, each answer `latency`
/// after its request, in virtual time; returns each call's finish and instant.
fn run(
    engine: &mut Engine,
    bucket: &mut Bucket,
    starts: &[Timestamp],
    latency: Duration,
) -> Vec<(Finish, Timestamp)> {
    struct Slot {
        call: Option<Call>,
        wake: Timestamp,
        pending: Option<(AttemptId, Timestamp, Outcome)>,
        done: Option<(Finish, Timestamp)>,
    }
    let mut slots: Vec<Slot> = starts
        .iter()
        .map(|&s| Slot {
            call: None,
            wake: s,
            pending: None,
            done: None,
        })
        .collect();
    while let Some(now) = slots
        .iter()
        .filter(|s| s.done.is_none())
        .map(|s| s.pending.as_ref().map_or(s.wake, |p| p.1.min(s.wake)))
        .min()
    {
        for slot in slots.iter_mut().filter(|s| s.done.is_none()) {
            let call = slot
                .call
                .get_or_insert_with(|| engine.start_call(slot.wake, None));
            let due = slot.pending.as_ref().is_some_and(|p| p.1 <= now);
            if due {
                let (id, t, o) = slot.pending.take().unwrap();
                let _ = call.on_outcome(t, id, o);
            } else if slot.wake > now {
                continue;
            }
            match call.poll_decision(now, engine) {
                Decision::Send(a) => {
                    slot.pending = Some((a.id, now + latency, bucket.handle(now)));
                    slot.wake = a.deadline;
                }
                Decision::Wait(t) => slot.wake = t,
                Decision::Done(f) => slot.done = Some((f, now)),
            }
        }
    }
    slots.into_iter().map(|s| s.done.unwrap()).collect()
}

#[test]
fn a_burst_waits_for_its_slots_instead_of_failing() {
    // 200 calls at once on the standard policy, against 600 a minute with a burst of
    // 20. A perfect client needs 18 s (20 at once, then 10 a second) and 200 requests;
    // one that knows no rate up front must also spend a first wave of 200.
    for s in 0..5u8 {
        let mut engine =
            Engine::new(Policy::default(), &[EndpointSpec::new(0, 1)], seed(s)).unwrap();
        let mut bucket = Bucket::new(600, 20);
        let starts = [Timestamp::ZERO; 200];
        let done = run(&mut engine, &mut bucket, &starts, ms(5));
        let ok = done.iter().filter(|(f, _)| f.is_success()).count();
        let end = done.iter().map(|(_, t)| *t).max().unwrap();
        assert_eq!(
            ok,
            200,
            "seed {s}: {:?}",
            done.iter().find(|(f, _)| !f.is_success())
        );
        let ideal = 18.0;
        let ratio = end.as_nanos() as f64 / 1e9 / ideal;
        assert!(ratio <= 1.3, "seed {s}: {end} is {ratio:.2}× the ideal");
        assert!(
            bucket.requests <= 420,
            "seed {s}: {} requests",
            bucket.requests
        );
        assert_eq!(engine.outstanding(), 0, "seed {s}");
    }
}

#[test]
fn the_retry_after_a_drained_window_goes_out_as_soon_as_the_server_said() {
    // 60 a minute, drained by another client at 0: a call at 441 ms is told 559 ms
    // (the bucket holds 0.441 of a unit; full in 59.559 s). Its retry goes within
    // 1.5× of the hint, not at the 59.6 s the reset says.
    let mut engine = Engine::new(Policy::default(), &[EndpointSpec::new(0, 1)], seed(9)).unwrap();
    let mut bucket = Bucket::new(60, 60);
    for _ in 0..60 {
        let _ = bucket.handle(Timestamp::ZERO);
    }
    let done = run(&mut engine, &mut bucket, &[at(441)], Duration::ZERO);
    let (f, end) = done[0];
    assert!(f.is_success());
    assert_eq!((f.attempts(), bucket.early), (2, 1));
    let waited = end.saturating_duration_since(at(441));
    assert!(waited >= ms(559) && waited <= ms(559 * 3 / 2), "{waited:?}");
    // A client that saw the bucket drain paces its next call to the slot: no 429.
    let mut engine = Engine::new(Policy::default(), &[EndpointSpec::new(0, 1)], seed(9)).unwrap();
    let mut bucket = Bucket::new(60, 60);
    let starts: Vec<Timestamp> = (0..60).map(|_| Timestamp::ZERO).chain([at(441)]).collect();
    let done = run(&mut engine, &mut bucket, &starts, ms(1));
    assert!(done.iter().all(|(f, _)| f.is_success()));
    assert_eq!((done[60].0.attempts(), bucket.early), (1, 0));
    assert!(done[60].1 <= at(1_002), "{}", done[60].1);
}

#[test]
fn a_call_gives_up_for_rate_reasons_only_when_its_deadline_cannot_be_met() {
    let mut p = Policy::default();
    p.retry.deadline = Some(Duration::from_secs(5));
    let mut engine = Engine::new(p, &[EndpointSpec::new(0, 1)], seed(2)).unwrap();
    // 60 a minute, a burst of 1: the 2nd call waits a second, the 7th would need 6 s.
    let mut bucket = Bucket::new(60, 1);
    let done = run(&mut engine, &mut bucket, &[Timestamp::ZERO; 2], ms(1));
    assert!(done.iter().all(|(f, _)| f.is_success()), "{done:?}");
    let done = run(&mut engine, &mut bucket, &[at(3_000); 7], ms(1));
    let mut reasons: Vec<_> = done
        .iter()
        .filter_map(|(f, _)| match f {
            Finish::GaveUp(g) => Some(g.reason),
            Finish::Success { .. } => None,
        })
        .collect();
    assert!(!reasons.is_empty(), "{done:?}");
    let GiveUpReason::RateLimited { until } = reasons.remove(0) else {
        panic!("{done:?}")
    };
    assert!(
        until >= at(8_000),
        "{until}: the instant it would have needed"
    );
    assert!(
        reasons
            .iter()
            .all(|r| matches!(r, GiveUpReason::RateLimited { .. }))
    );
    assert!(done.iter().filter(|(f, _)| f.is_success()).count() >= 4);
}

#[test]
fn a_lost_half_open_probe_is_reclaimed_after_its_attempt_timeout() {
    let mut p = Policy::default().without_jitter();
    p.breaker.consecutive_failures = Some(1);
    p.breaker.half_open_probes = 1;
    p.retry.max_attempts = 1;
    let timeout = p.retry.attempt_timeout;
    let mut engine = Engine::new(p, &[EndpointSpec::new(0, 1)], seed(1)).unwrap();
    let mut call = engine.start_call(at(0), None);
    let Decision::Send(a) = call.poll_decision(at(0), &mut engine) else {
        panic!()
    };
    call.on_outcome(at(10), a.id, Outcome::Response(Response::new(503)))
        .unwrap();
    assert!(call.poll_decision(at(10), &mut engine).is_done());
    // Half-open at 5 s: a probe goes out, and its call is dropped without a cancel.
    let half_open = at(5_010);
    let mut lost = engine.start_call(half_open, None);
    send(lost.poll_decision(half_open, &mut engine));
    // The call is forgotten: never reported, never cancelled.
    let _ = lost;
    let mut next = engine.start_call(half_open, None);
    assert!(!matches!(
        next.poll_decision(half_open, &mut engine),
        Decision::Send(_)
    ));
    // After the probe's timeout (and the grace), its slot is back.
    let later = half_open + timeout + RECLAIM_GRACE;
    let mut next = engine.start_call(later, None);
    send(next.poll_decision(later, &mut engine));
    assert_eq!(engine.reclaims(), 1);
}

#[test]
fn a_stale_or_foreign_grant_is_refused() {
    let mut a = Engine::new(Policy::default(), &[EndpointSpec::new(0, 1)], seed(1)).unwrap();
    let mut b = Engine::new(Policy::default(), &[EndpointSpec::new(0, 1)], seed(2)).unwrap();
    let query = crate::retry::Query {
        attempt: 1,
        avoid: None,
        tokens: 0,
        hold: false,
        max_hold: ms(1),
        only: None,
        deadline: Timestamp::MAX,
        span: ms(100),
        hedge: false,
    };
    let crate::retry::Admit::Go(grant) = a.admit(at(0), &query) else {
        panic!()
    };
    let report = crate::retry::Report {
        grant,
        verdict: crate::classify::Verdict::Success,
        latency: ms(1),
        hints: &crate::hints::Hints::NONE,
        tokens_used: None,
        retry_at: None,
    };
    b.on_attempt_end(at(1), &report);
    assert_eq!((b.stale_reports(), a.outstanding()), (1, 1));
    a.on_attempt_end(at(1), &report);
    a.on_attempt_end(at(2), &report);
    assert_eq!((a.stale_reports(), a.outstanding()), (1, 0));
}

fn send(d: Decision) -> crate::retry::Attempt {
    match d {
        Decision::Send(a) => a,
        d => panic!("expected a send, got {d:?}"),
    }
}

fn drained_minute_window() -> Outcome {
    let headers: [(&[u8], &[u8]); 3] = [
        (b"x-ratelimit-limit-requests", b"60"),
        (b"x-ratelimit-remaining-requests", b"0"),
        (b"x-ratelimit-reset-requests", b"60s"),
    ];
    Outcome::Response(Response::from_http(200, headers, b"{}", 0))
}

#[test]
fn a_reserved_slot_whose_breaker_opened_is_given_back_and_asked_again() {
    let mut p = Policy::default().without_jitter();
    p.breaker.consecutive_failures = Some(1);
    p.retry.max_attempts = 1;
    let mut engine = Engine::new(p, &[EndpointSpec::new(0, 1)], seed(4)).unwrap();
    let mut x = engine.start_call(at(0), None);
    let ax = send(x.poll_decision(at(0), &mut engine));
    let mut w = engine.start_call(at(0), None);
    let aw = send(w.poll_decision(at(0), &mut engine));
    // The server says a minute's 60 are spent: the next one comes a second later.
    w.on_outcome(at(1), aw.id, drained_minute_window()).unwrap();
    assert!(w.poll_decision(at(1), &mut engine).is_done());
    let mut a = engine.start_call(at(10), None);
    assert_eq!(
        a.poll_decision(at(10), &mut engine),
        Decision::Wait(at(1_001))
    );
    assert_eq!(engine.outstanding(), 2);
    // The call in flight fails: the breaker opens before the slot comes.
    x.on_outcome(at(20), ax.id, Outcome::Response(Response::new(503)))
        .unwrap();
    assert!(x.poll_decision(at(20), &mut engine).is_done());
    // At its slot the call finds the breaker open: the slot is given back and the call
    // asks again, and (not holding) gives up without sending.
    let Decision::Done(Finish::GaveUp(g)) = a.poll_decision(at(1_001), &mut engine) else {
        panic!()
    };
    assert!(
        matches!(g.reason, GiveUpReason::BreakerOpen { .. }),
        "{g:?}"
    );
    assert_eq!(g.attempts, 0);
    assert_eq!(engine.outstanding(), 0);
    assert_eq!(engine.limiter(EndpointId(0)).unwrap().in_flight(), 0);
}

#[test]
fn a_cancelled_reservation_gives_back_its_slot() {
    let mut engine = Engine::new(Policy::default(), &[EndpointSpec::new(0, 1)], seed(4)).unwrap();
    let mut w = engine.start_call(at(0), None);
    let aw = send(w.poll_decision(at(0), &mut engine));
    w.on_outcome(at(1), aw.id, drained_minute_window()).unwrap();
    let _ = w.poll_decision(at(1), &mut engine);
    let mut a = engine.start_call(at(10), None);
    assert!(matches!(
        a.poll_decision(at(10), &mut engine),
        Decision::Wait(_)
    ));
    assert_eq!(engine.outstanding(), 1);
    let f = a.cancel(at(20), &mut engine);
    assert!(matches!(f, Finish::GaveUp(g) if g.reason == GiveUpReason::Cancelled));
    assert_eq!(engine.outstanding(), 0);
    assert_eq!(engine.limiter(EndpointId(0)).unwrap().in_flight(), 0);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// What the server answers one attempt.
    #[derive(Debug, Clone, Copy)]
    enum Answer {
        /// 429 asking for this many milliseconds.
        Throttled(u64),
        Unavailable,
        Overloaded,
        Ok,
    }

    fn answer() -> impl Strategy<Value = Answer> {
        prop_oneof![
            3 => (1u64..5_000).prop_map(Answer::Throttled),
            1 => Just(Answer::Unavailable),
            1 => Just(Answer::Overloaded),
            1 => Just(Answer::Ok),
        ]
    }

    fn outcome(a: Answer) -> Outcome {
        match a {
            Answer::Throttled(ms) => {
                let value = format!("{ms}");
                let headers = [(&b"retry-after-ms"[..], value.as_bytes())];
                Outcome::Response(Response::from_http(429, headers, b"{}", 0))
            }
            Answer::Unavailable => Outcome::Response(Response::new(503)),
            Answer::Overloaded => Outcome::Response(Response::new(529)),
            Answer::Ok => Outcome::Response(Response::new(200)),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed_1234),
            ..ProptestConfig::default()
        })]

        /// A call whose deadline allows waiting out every hint ends only by its attempts
        /// or with a success — never for budget, rate, breaker or hint reasons — and
        /// each hinted retry goes out no earlier than asked and no later than the
        /// hint's jitter allows.
        #[test]
        fn a_call_that_can_wait_out_every_hint_ends_only_by_its_attempts(
            answers in proptest::collection::vec(answer(), 1..8),
            seed_byte in any::<u8>(),
        ) {
            let policy = Policy::default();
            let spread = policy.retry.hint_jitter;
            let mut engine = Engine::new(policy, &[EndpointSpec::new(0, 1)], seed(seed_byte)).unwrap();
            let mut now = Timestamp::ZERO;
            let mut call = engine.start_call(now, None);
            let mut asked: Option<(Timestamp, u64)> = None;
            let mut next = answers.iter().copied();
            let finish = loop {
                match call.poll_decision(now, &mut engine) {
                    Decision::Send(a) => {
                        if let Some((told, wait)) = asked.take() {
                            let waited = now.saturating_duration_since(told);
                            prop_assert!(waited >= ms(wait), "retried after {waited:?}, told {wait} ms");
                            let most = ms(wait).mul_f64(1.0 + spread) + Duration::from_nanos(1);
                            prop_assert!(waited <= most, "retried after {waited:?}, told {wait} ms");
                        }
                        now = now + ms(20);
                        let answer = next.next().unwrap_or(Answer::Ok);
                        if let Answer::Throttled(wait) = answer {
                            asked = Some((now, wait));
                        }
                        call.on_outcome(now, a.id, outcome(answer)).unwrap();
                    }
                    Decision::Wait(t) => now = t,
                    Decision::Done(f) => break f,
                }
            };
            match finish {
                Finish::Success { .. } => {}
                Finish::GaveUp(g) => prop_assert_eq!(g.reason, GiveUpReason::RetriesExhausted, "{:?}", g),
            }
            prop_assert_eq!(engine.outstanding(), 0);
        }
    }
}
