//! The session driven by hand, without a network and on a virtual clock: what it asks
//! to send, when, and what it makes of the answers.

use std::time::Duration;

use http::HeaderMap;
use serde_json::json;
use steadfast_core::ids::Target;
use steadfast_core::outcome::{Phase, Transport, TransportKind};
use steadfast_core::policy::Policy;
use steadfast_core::retry::GiveUpReason;
use steadfast_core::time::Timestamp;

use super::*;
use crate::shared::FallbackStep;
use crate::{EndpointDef, Fallback, FallbackKind, Now, Provider, RawRequest, Setup};

#[cfg(feature = "tracing")]
#[path = "../tests/support/recorder.rs"]
mod recorder;

#[derive(Debug)]
struct FakeError;

/// The wall clock of every report (no test reads a `Retry-After` date).
const WALL: u64 = 1_800_000_000;
const T0: Timestamp = Timestamp::from_secs(1000);

/// A virtual clock: a sleep jumps to the instant it asks for.
struct Clock(Timestamp);

impl Clock {
    fn new() -> Clock {
        Clock(T0)
    }

    /// The next attempt to send, sleeping (in virtual time) as the session says.
    fn next<'c>(&mut self, s: &mut Session<'c, FakeError>) -> Option<Outgoing<'c>> {
        s.next_send(self.0, |until| {
            self.0 = self.0.max(until);
            self.0
        })
    }

    fn now(&self) -> Now {
        Now::new(self.0, WALL)
    }
}

fn setup(fallbacks: Vec<Fallback>) -> Shared {
    setup_with(fallbacks, |_| {})
}

fn setup_with(fallbacks: Vec<Fallback>, f: impl FnOnce(&mut Policy)) -> Shared {
    let mut policy = Policy::default().without_jitter();
    policy.backoff.base = Duration::from_millis(1);
    policy.backoff.cap = Duration::from_millis(2);
    policy.budget.enabled = false;
    f(&mut policy);
    let s = Setup {
        policy,
        endpoints: vec![
            EndpointDef::new("http://127.0.0.1:9/v1/", Provider::OpenAi, "sk-one")
                .model("m-forced"),
        ],
        fallbacks,
        seed: Some([7; 32]),
        max_body: 1000,
        ..Setup::default()
    };
    Shared::new(s).expect("setup")
}

#[test]
fn retries_carry_the_same_key_and_the_prepared_request() {
    let mut clock = Clock::new();
    let shared = setup(Vec::new());
    let request = json!({"model": "caller", "messages": []});
    let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &request, false);
    let first = clock.next(&mut s).expect("first attempt");
    assert_eq!(first.url, "http://127.0.0.1:9/v1/chat/completions");
    assert_eq!(first.headers["authorization"], "Bearer sk-one");
    assert!(first.headers["authorization"].is_sensitive());
    let key = first.headers["idempotency-key"].clone();
    assert_eq!(key.to_str().unwrap(), s.idempotency_key().to_string());
    assert_eq!(first.headers.get_all("idempotency-key").iter().count(), 1);
    let sent: serde_json::Value = serde_json::from_slice(&first.body).unwrap();
    assert_eq!(sent["model"], "m-forced");
    s.on_response(
        clock.now(),
        503,
        &HeaderMap::new(),
        br#"{"error":{"message":"busy sk-one"}}"#,
    );
    let second = clock.next(&mut s).expect("a retry");
    assert_eq!(
        clock.0,
        T0 + Duration::from_millis(1),
        "after the backoff, exactly"
    );
    assert_eq!(second.headers["idempotency-key"], key);
    assert_eq!(second.attempt.id.0, 2);
    s.on_response(
        clock.now(),
        200,
        &HeaderMap::new(),
        br#"{"ok":true,"usage":{"total_tokens":3}}"#,
    );
    assert!(clock.next(&mut s).is_none());
    let reply = s.into_reply().expect("success");
    assert_eq!((reply.body["ok"].clone(), reply.attempts), (json!(true), 2));
    let m = shared.metrics();
    assert_eq!((m.attempts, m.retries, m.successes), (2, 1, 1));
}

#[test]
fn a_raw_request_goes_as_it_came_unless_the_endpoint_renames_its_model() {
    let text = br#"{"model": "m-forced",  "messages": [{"role": "user", "content": "Hi"}]}"#;
    let renamed = br#"{"model":"caller","messages":[]}"#;
    let shared = setup(Vec::new());
    for (body, as_it_came) in [(&text[..], true), (&renamed[..], false)] {
        let raw = RawRequest::parse(Bytes::copy_from_slice(body)).expect("a request");
        let mut clock = Clock::new();
        let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &raw, false);
        let first = clock.next(&mut s).expect("first attempt");
        let sent: serde_json::Value = serde_json::from_slice(&first.body).expect("JSON");
        assert_eq!(sent["model"], "m-forced");
        assert_eq!(
            first.body == body,
            as_it_came,
            "{}",
            String::from_utf8_lossy(body)
        );
        s.on_response(clock.now(), 503, &HeaderMap::new(), b"");
        let second = clock.next(&mut s).expect("a retry");
        assert_eq!(second.body, first.body, "the retry sends the same bytes");
    }
}

#[test]
fn a_passed_through_answer_is_read_for_its_facts_and_checked_as_json() {
    let shared = setup(Vec::new());
    let raw = RawRequest::parse(Bytes::from_static(br#"{"model":"m-forced","messages":[]}"#))
        .expect("a request");
    let answer = br#"{"id":"c1","model":"m-served","choices":[{"message":{"content":"Hi"}}],
                      "usage":{"prompt_tokens":5,"completion_tokens":2}}"#;
    let mut clock = Clock::new();
    let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &raw, false);
    s.passing_through();
    assert!(clock.next(&mut s).is_some());
    // Not JSON: retried, as for a session that reads its answers whole.
    s.on_response(clock.now(), 200, &HeaderMap::new(), b"{\"id\": ");
    assert!(
        clock.next(&mut s).is_some(),
        "a malformed answer is retried"
    );
    s.on_response(clock.now(), 200, &HeaderMap::new(), answer);
    assert!(clock.next(&mut s).is_none());
    let reply = s.into_reply().expect("success");
    assert!(reply.is_passed_through());
    assert_eq!(
        (reply.body.clone(), reply.attempts),
        (serde_json::Value::Null, 2)
    );
    let usage = reply.usage().expect("usage");
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.total_tokens),
        (5, 2, 7)
    );
    let by = reply.served_by().expect("served by");
    assert_eq!(
        (by.endpoint.as_str(), by.model.as_deref()),
        ("openai", Some("m-served"))
    );

    // The same answer read whole, by a session that does not pass it on.
    let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &raw, false);
    assert!(clock.next(&mut s).is_some());
    s.on_response(clock.now(), 200, &HeaderMap::new(), answer);
    assert!(clock.next(&mut s).is_none());
    let whole = s.into_reply().expect("success");
    assert!(!whole.is_passed_through());
    assert_eq!(whole.body["id"], "c1");
    assert_eq!(
        (whole.usage(), whole.served_by()),
        (reply.usage(), reply.served_by())
    );
}

#[test]
fn a_give_up_keeps_the_last_error_without_the_key() {
    let mut clock = Clock::new();
    let shared = setup(Vec::new());
    let request = json!({});
    let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &request, false);
    clock.next(&mut s).expect("attempt");
    s.on_transport(
        clock.now(),
        Transport::new(TransportKind::Reset, Phase::AfterSend),
        Some(FakeError),
    );
    clock.next(&mut s).expect("retried");
    s.on_response(
        clock.now(),
        400,
        &HeaderMap::new(),
        br#"{"error":{"message":"bad sk-one"}}"#,
    );
    assert!(clock.next(&mut s).is_none());
    let e = s.into_reply().expect_err("not retryable");
    assert_eq!(
        (e.reason, e.status, e.attempts),
        (GiveUpReason::NotRetryable, Some(400), 2)
    );
    assert_eq!(e.message.as_deref(), Some("bad ****"));
    assert!(e.source.is_none(), "the last attempt had a response");
}

#[test]
fn a_2xx_body_that_is_not_json_is_retried() {
    let mut clock = Clock::new();
    let shared = setup(Vec::new());
    let request = json!({});
    let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &request, false);
    clock.next(&mut s).expect("attempt");
    s.on_response(clock.now(), 200, &HeaderMap::new(), b"{\"cut");
    clock.next(&mut s).expect("retried");
    s.on_body_error(
        clock.now(),
        200,
        &HeaderMap::new(),
        Transport::new(TransportKind::BodyCut, Phase::AfterSend),
        FakeError,
    );
    clock.next(&mut s).expect("retried again");
    s.on_response(clock.now(), 200, &HeaderMap::new(), b"{}");
    assert_eq!(clock.next(&mut s).map(|o| o.attempt.id), None);
    assert_eq!(s.into_reply().expect("success").attempts, 3);
}

#[test]
fn broken_limits_are_typed_and_only_for_the_last_attempt() {
    use crate::error::Exceeded;
    let mut clock = Clock::new();
    let shared = setup(Vec::new());
    assert_eq!(shared.max_body(), 1000);
    let request = json!({});
    let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &request, true);
    assert_eq!(s.max_body(), 1000);
    clock.next(&mut s).expect("attempt");
    s.on_head_too_large(clock.now(), Some(FakeError));
    clock.next(&mut s).expect("retried");
    s.on_body_too_large(clock.now(), 503, &HeaderMap::new());
    clock.next(&mut s).expect("retried");
    s.on_response(clock.now(), 400, &HeaderMap::new(), b"");
    let e = s.into_reply().expect_err("not retryable");
    assert_eq!(
        (e.exceeded, e.attempts),
        (None, 3),
        "the last attempt broke none"
    );

    // A success too large to read is not retried: the same request gets the same answer.
    let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &request, true);
    clock.next(&mut s).expect("attempt");
    s.on_body_too_large(clock.now(), 200, &HeaderMap::new());
    assert_eq!(clock.next(&mut s).map(|o| o.attempt.id), None);
    let e = s.into_reply().expect_err("too large");
    assert_eq!((e.exceeded, e.attempts), (Some(Exceeded::BodyTooLarge), 1));

    let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &request, false);
    clock.next(&mut s).expect("attempt");
    s.on_head_too_large(clock.now(), Some(FakeError));
    let mut last = None;
    while clock.next(&mut s).is_some() {
        s.on_body_too_large(clock.now(), 200, &HeaderMap::new());
        last = Some(Exceeded::BodyTooLarge);
    }
    let e = s.into_reply().expect_err("not retried");
    assert_eq!(e.exceeded, last);
    assert_eq!(
        e.class,
        Some(steadfast_core::classify::Class::ResponseTooLarge)
    );
    let text = e.exceeded.map(|x| x.to_string()).unwrap_or_default();
    assert_eq!(text, "response body over the size limit");
}

#[test]
fn a_dropped_session_is_cancelled() {
    let mut clock = Clock::new();
    let shared = setup(Vec::new());
    let request = json!({});
    let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &request, true);
    let out = clock.next(&mut s).expect("attempt");
    assert!(s.stream_reader(Now::new(Timestamp::ZERO, 0), 503).is_none());
    assert!(s.stream_reader(Now::new(Timestamp::ZERO, 0), 200).is_some());
    assert_eq!(out.first_event_timeout(), out.timeout());
    drop(s);
    assert_eq!(shared.metrics().give_ups.cancelled, 1);
}

#[test]
fn stored_results_feed_the_stored_fallback() {
    let mut clock = Clock::new();
    let shared = setup(vec![Fallback::Stored, Fallback::Template(json!("t"))]);
    assert!(matches!(
        shared.fallback(0, clock.0, Some(b"id-1")),
        Some(None)
    ));
    let request = json!({});
    let mut s: Session<'_, FakeError> =
        Session::new(&shared, clock.0, Some(b"id-1"), &request, false);
    clock.next(&mut s).expect("attempt");
    s.on_response(clock.now(), 200, &HeaderMap::new(), br#"{"answer":1}"#);
    assert!(clock.next(&mut s).is_none());
    s.into_reply().expect("success");
    match shared.fallback(0, clock.0, Some(b"id-1")) {
        Some(Some(FallbackStep::Ready(v, FallbackKind::Stored))) => {
            assert_eq!(v, json!({"answer": 1}))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(shared.fallback(0, clock.0, None), Some(None)));
    assert!(matches!(
        shared.fallback(0, clock.0, Some(b"id-2")),
        Some(None)
    ));
    assert!(matches!(
        shared.fallback(1, clock.0, None),
        Some(Some(FallbackStep::Ready(_, FallbackKind::Template)))
    ));
    assert!(shared.fallback(2, clock.0, None).is_none());
}

#[test]
fn a_long_retry_after_is_waited_in_virtual_time() {
    let mut clock = Clock::new();
    let shared = setup(Vec::new());
    let request = json!({});
    let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &request, false);
    clock.next(&mut s).expect("attempt");
    let mut headers = HeaderMap::new();
    headers.insert("retry-after", http::HeaderValue::from_static("30"));
    s.on_response(clock.now(), 429, &headers, b"");
    clock.next(&mut s).expect("retried after the hint");
    assert_eq!(clock.0, T0 + Duration::from_secs(30));
    s.on_response(clock.now(), 200, &HeaderMap::new(), b"{}");
    assert!(clock.next(&mut s).is_none());
    assert_eq!(s.into_reply().expect("success").attempts, 2);
}

#[test]
fn a_fallback_endpoint_is_a_standby_endpoint_of_the_same_engine() {
    let mut clock = Clock::new();
    let fallback =
        EndpointDef::new("http://127.0.0.1:9", Provider::Anthropic, "sk-two").model("m-small");
    let shared = setup(vec![Fallback::Endpoint(fallback)]);
    let request = json!({"messages": [{"role": "user", "content": "hi"}]});
    let id = Some(b"order-1".as_slice());
    let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, id, &request, false);
    let key = s.idempotency_key();
    // The primary call never fails over to the standby endpoint.
    let mut primary = 0;
    while let Some(out) = clock.next(&mut s) {
        if out.attempt.target.endpoint.0 == 1 {
            assert_eq!(out.url, "http://127.0.0.1:9/v1/messages");
            assert_eq!(out.attempt.idempotency_key, key, "the same business id");
            let sent: serde_json::Value = serde_json::from_slice(&out.body).unwrap();
            assert_eq!(sent["model"], "m-small");
            // Two APIs: the call is canonical, translated for the Anthropic standby.
            assert_eq!(sent["max_tokens"], crate::chat::DEFAULT_MAX_TOKENS);
            let answer = br#"{"id":"msg_1","type":"message","role":"assistant","model":"m-small","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}"#;
            s.on_response(clock.now(), 200, &HeaderMap::new(), answer);
            continue;
        }
        primary += 1;
        assert_eq!(out.attempt.target, Target::new(0, 0));
        s.on_response(clock.now(), 503, &HeaderMap::new(), b"");
    }
    let reply = s.into_reply().expect("the fallback endpoint answers");
    assert_eq!(reply.body["object"], "chat.completion");
    assert_eq!(reply.text().as_deref(), Some("hello"));
    assert_eq!(primary, shared.policy().retry.max_attempts);
    assert_eq!(reply.target, Some(Target::new(1, 0)));
    assert_eq!(reply.attempts, primary + 1);
    let d = reply.degraded.expect("degraded");
    assert_eq!(
        (d.via, d.reason),
        (FallbackKind::Endpoint, GiveUpReason::RetriesExhausted)
    );
    let m = shared.metrics();
    assert_eq!((m.fallbacks.endpoint, m.successes), (1, 1));
    assert_eq!(m.give_ups.retries_exhausted, 1);
}

#[test]
fn no_fallback_answering_returns_the_primary_error() {
    let mut clock = Clock::new();
    let fallback = EndpointDef::new("http://127.0.0.1:9", Provider::OpenAi, "sk-two");
    let shared = setup(vec![Fallback::Endpoint(fallback), Fallback::Stored]);
    let request = json!({});
    let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &request, false);
    let mut attempts = 0;
    while let Some(out) = clock.next(&mut s) {
        attempts += 1;
        let status = if out.attempt.target.endpoint.0 == 0 {
            400
        } else {
            503
        };
        s.on_response(clock.now(), status, &HeaderMap::new(), b"");
    }
    let e = s.into_reply().expect_err("nothing answered");
    assert_eq!(
        (e.reason, e.status, e.attempts),
        (GiveUpReason::NotRetryable, Some(400), 1)
    );
    assert_eq!(e.target, Some(Target::new(0, 0)));
    assert_eq!(attempts, 1 + shared.policy().retry.max_attempts);
    assert_eq!(shared.metrics().fallbacks.total(), 0);
}

/// With `tracing`: every event is emitted with the engine unlocked.
#[cfg(feature = "tracing")]
mod events_after_the_lock {
    use std::sync::{Arc, Mutex};

    use tracing::Level;

    use super::recorder::Recorder;
    use super::*;

    // The only test of this binary that sets a subscriber. It is the global one (a
    // scoped subscriber may miss events whose callsites other tests' threads
    // registered first) and keeps only this test's thread's events.
    #[test]
    fn no_event_is_emitted_under_the_engine_lock() {
        let shared = Arc::new(setup_with(Vec::new(), |p| {
            p.breaker.consecutive_failures = Some(2);
            p.breaker.failure_rate = None;
        }));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (engine, notes) = (Arc::clone(&shared), Arc::clone(&seen));
        let here = std::thread::current().id();
        let recorder = Recorder(move |level: Level, _| {
            if std::thread::current().id() == here {
                let locked = engine.engine_locked();
                notes.lock().unwrap().push((level, locked));
            }
        });
        tracing::subscriber::set_global_default(recorder).expect("the only subscriber");
        let mut clock = Clock::new();
        let request = json!({});
        let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &request, false);
        while clock.next(&mut s).is_some() {
            s.on_response(clock.now(), 503, &HeaderMap::new(), b"");
        }
        let e = s.into_reply().expect_err("the breaker opened");
        assert!(
            matches!(e.reason, GiveUpReason::BreakerOpen { .. }),
            "{e:?}"
        );
        let seen = seen.lock().unwrap().clone();
        assert_eq!(shared.metrics().breaker_opened, 1);
        let warnings = seen.iter().filter(|(l, _)| *l == Level::WARN).count();
        assert!(warnings >= 2, "breaker transition and give-up: {seen:?}");
        assert!(seen.iter().all(|&(_, locked)| !locked), "{seen:?}");
    }
}

#[test]
fn the_first_event_timeout_bounds_streams_only() {
    let shared = setup_with(Vec::new(), |p| {
        p.retry.attempt_timeout = Duration::from_secs(10);
        p.retry.first_event_timeout = Some(Duration::from_secs(1));
    });
    let request = json!({});
    for (stream, first) in [(true, Some(Duration::from_secs(1))), (false, None)] {
        let mut clock = Clock::new();
        let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &request, stream);
        let out = clock.next(&mut s).expect("attempt");
        assert_eq!(out.attempt.first_event_timeout, first, "stream {stream}");
        let by = clock
            .0
            .saturating_add(first.unwrap_or(Duration::from_secs(10)));
        assert_eq!(
            out.attempt.deadline, by,
            "stream {stream}: a whole answer has its 10 s"
        );
    }
}

#[test]
fn an_attempt_s_key_replaces_the_placeholder_in_place_or_else_by_name() {
    use http::header::{ACCEPT, CONTENT_TYPE};
    let mut prepared = HeaderMap::new();
    prepared.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    prepared.insert(IDEMPOTENCY_KEY, HeaderValue::from_static("placeholder"));
    prepared.insert(ACCEPT, HeaderValue::from_static("*/*"));
    let key = HeaderValue::from_static("the-key");
    // 1 is the placeholder's place; the others are wrong, past the end, or unknown.
    for at in [Some(1), Some(0), Some(2), Some(3), Some(usize::MAX), None] {
        let mut headers = prepared.clone();
        set_at(&mut headers, at, &IDEMPOTENCY_KEY, key.clone());
        let keys: Vec<_> = headers.get_all(IDEMPOTENCY_KEY).iter().collect();
        assert_eq!(keys, [&key], "at {at:?}");
        assert_eq!(headers.len(), 3, "at {at:?}");
        assert_eq!(headers[ACCEPT], "*/*", "at {at:?}");
    }
}

#[test]
fn the_attempts_carry_their_host_and_length_only_when_the_setup_asks() {
    for complete_headers in [true, false] {
        let setup = Setup {
            endpoints: vec![EndpointDef::new(
                "http://127.0.0.1:9/v1/",
                Provider::OpenAi,
                "sk",
            )],
            seed: Some([7; 32]),
            complete_headers,
            ..Setup::default()
        };
        let shared = Shared::new(setup).expect("setup");
        assert_eq!(shared.complete_headers(), complete_headers);
        let mut clock = Clock::new();
        let request = json!({"model": "m", "messages": []});
        let mut s: Session<'_, FakeError> = Session::new(&shared, clock.0, None, &request, false);
        let out = clock.next(&mut s).expect("an attempt");
        let text = |name| {
            let value: Option<&HeaderValue> = out.headers.get(name);
            value.map(|v| v.to_str().unwrap().to_owned())
        };
        let (host, length) = (text(http::header::HOST), text(CONTENT_LENGTH));
        if complete_headers {
            assert_eq!(host.as_deref(), Some("127.0.0.1:9"));
            assert_eq!(length, Some(out.body.len().to_string()));
            assert_ne!(out.body.len(), 0);
        } else {
            assert_eq!((host, length), (None, None));
        }
        assert_eq!(out.headers.get_all("idempotency-key").iter().count(), 1);
        assert_eq!(
            out.headers["idempotency-key"].to_str().unwrap(),
            s.idempotency_key().to_string()
        );
    }
}
