//! The session driven by hand, without a network: what it asks to send and what it
//! makes of the answers.

use std::time::Duration;

use http::HeaderMap;
use serde_json::json;
use steadfast_core::outcome::{Phase, Transport, TransportKind};
use steadfast_core::policy::Policy;
use steadfast_core::retry::GiveUpReason;

use super::*;
use crate::{EndpointDef, Fallback, FallbackKind, FallbackStep, Provider, Setup};

#[derive(Debug)]
struct FakeError;

fn setup(fallbacks: Vec<Fallback>) -> Shared {
    let mut policy = Policy::default();
    policy.backoff.base = Duration::from_millis(1);
    policy.backoff.cap = Duration::from_millis(2);
    policy.budget.enabled = false;
    let s = Setup {
        policy,
        endpoints: vec![
            EndpointDef::new("http://127.0.0.1:9/v1/", Provider::OpenAi, "sk-one")
                .model("m-forced"),
        ],
        fallbacks,
        seed: Some([7; 32]),
        max_body: 1000,
    };
    Shared::new(s).expect("setup")
}

#[test]
fn retries_carry_the_same_key_and_the_prepared_request() {
    let shared = setup(Vec::new());
    let request = json!({"model": "caller", "messages": []});
    let mut s: Session<'_, FakeError> = Session::new(&shared, None, &request, false);
    let first = s.next_send_blocking().expect("first attempt");
    assert_eq!(first.url, "http://127.0.0.1:9/v1/chat/completions");
    assert_eq!(first.headers["authorization"], "Bearer sk-one");
    assert!(first.headers["authorization"].is_sensitive());
    let key = first.headers["idempotency-key"].clone();
    assert_eq!(key.to_str().unwrap(), s.idempotency_key().to_string());
    let sent: serde_json::Value = serde_json::from_slice(&first.body).unwrap();
    assert_eq!(sent["model"], "m-forced");
    s.on_response(
        503,
        &HeaderMap::new(),
        br#"{"error":{"message":"busy sk-one"}}"#,
    );
    let second = s.next_send_blocking().expect("a retry");
    assert_eq!(second.headers["idempotency-key"], key);
    assert_eq!(second.attempt.id.0, 2);
    s.on_response(
        200,
        &HeaderMap::new(),
        br#"{"ok":true,"usage":{"total_tokens":3}}"#,
    );
    assert!(s.next_send_blocking().is_none());
    let reply = s.into_reply().expect("success");
    assert_eq!((reply.body["ok"].clone(), reply.attempts), (json!(true), 2));
    let m = shared.metrics();
    assert_eq!((m.attempts, m.retries, m.successes), (2, 1, 1));
}

#[test]
fn a_give_up_keeps_the_last_error_without_the_key() {
    let shared = setup(Vec::new());
    let request = json!({});
    let mut s: Session<'_, FakeError> = Session::new(&shared, None, &request, false);
    s.next_send_blocking().expect("attempt");
    s.on_transport(
        Transport::new(TransportKind::Reset, Phase::AfterSend),
        Some(FakeError),
    );
    s.next_send_blocking().expect("retried");
    s.on_response(
        400,
        &HeaderMap::new(),
        br#"{"error":{"message":"bad sk-one"}}"#,
    );
    assert!(s.next_send_blocking().is_none());
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
    let shared = setup(Vec::new());
    let request = json!({});
    let mut s: Session<'_, FakeError> = Session::new(&shared, None, &request, false);
    s.next_send_blocking().expect("attempt");
    s.on_response(200, &HeaderMap::new(), b"{\"cut");
    s.next_send_blocking().expect("retried");
    s.on_body_error(
        200,
        &HeaderMap::new(),
        Transport::new(TransportKind::BodyCut, Phase::AfterSend),
        FakeError,
    );
    s.next_send_blocking().expect("retried again");
    s.on_response(200, &HeaderMap::new(), b"{}");
    assert_eq!(s.next_send_blocking().map(|o| o.attempt.id), None);
    assert_eq!(s.into_reply().expect("success").attempts, 3);
}

#[test]
fn broken_limits_are_typed_and_only_for_the_last_attempt() {
    use crate::error::Exceeded;
    let shared = setup(Vec::new());
    assert_eq!(shared.max_body(), 1000);
    let request = json!({});
    let mut s: Session<'_, FakeError> = Session::new(&shared, None, &request, true);
    assert_eq!(s.max_body(), 1000);
    s.next_send_blocking().expect("attempt");
    s.on_head_too_large(Some(FakeError));
    s.next_send_blocking().expect("retried");
    s.on_body_too_large(503, &HeaderMap::new());
    s.next_send_blocking().expect("retried");
    s.on_response(400, &HeaderMap::new(), b"");
    let e = s.into_reply().expect_err("not retryable");
    assert_eq!(
        (e.exceeded, e.attempts),
        (None, 3),
        "the last attempt broke none"
    );

    // A success too large to read is not retried: the same request gets the same answer.
    let mut s: Session<'_, FakeError> = Session::new(&shared, None, &request, true);
    s.next_send_blocking().expect("attempt");
    s.on_body_too_large(200, &HeaderMap::new());
    assert_eq!(s.next_send_blocking().map(|o| o.attempt.id), None);
    let e = s.into_reply().expect_err("too large");
    assert_eq!((e.exceeded, e.attempts), (Some(Exceeded::BodyTooLarge), 1));

    let mut s: Session<'_, FakeError> = Session::new(&shared, None, &request, false);
    s.next_send_blocking().expect("attempt");
    s.on_head_too_large(Some(FakeError));
    let mut last = None;
    while s.next_send_blocking().is_some() {
        s.on_body_too_large(200, &HeaderMap::new());
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
    let shared = setup(Vec::new());
    let request = json!({});
    let mut s: Session<'_, FakeError> = Session::new(&shared, None, &request, true);
    let out = s.next_send_blocking().expect("attempt");
    assert!(s.stream_reader(503).is_none());
    assert!(s.stream_reader(200).is_some());
    assert_eq!(out.first_event_timeout(), out.timeout());
    drop(s);
    assert_eq!(shared.metrics().give_ups.cancelled, 1);
}

#[test]
fn stored_results_feed_the_stored_fallback() {
    let shared = setup(vec![Fallback::Stored, Fallback::Template(json!("t"))]);
    assert!(shared.fallback(0, Some(b"id-1")).is_none());
    let request = json!({});
    let mut s: Session<'_, FakeError> = Session::new(&shared, Some(b"id-1"), &request, false);
    s.next_send_blocking().expect("attempt");
    s.on_response(200, &HeaderMap::new(), br#"{"answer":1}"#);
    assert!(s.next_send_blocking().is_none());
    s.into_reply().expect("success");
    match shared.fallback(0, Some(b"id-1")) {
        Some(FallbackStep::Ready(v, FallbackKind::Stored)) => assert_eq!(v, json!({"answer": 1})),
        other => panic!("{other:?}"),
    }
    assert!(shared.fallback(0, None).is_none());
    assert!(shared.fallback(0, Some(b"id-2")).is_none());
    assert!(matches!(
        shared.fallback(1, None),
        Some(FallbackStep::Ready(_, FallbackKind::Template))
    ));
    assert!(shared.fallback(2, None).is_none());
}
