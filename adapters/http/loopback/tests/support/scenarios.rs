//! Non-stream scenarios, generic over the adapter.

use std::time::Duration;

use serde_json::json;
use steadfast_core::classify::{Class, Scope};
use steadfast_core::date::ImfFixdate;
use steadfast_core::idempotency::IdempotencyKey;
use steadfast_core::ids::Target;
use steadfast_http::{EndpointDef, Fallback, FallbackKind, GiveUpReason, Provider};
use steadfast_mock::Fault;

use super::tap::Tap;
use super::*;

fn key_of(business_id: &str) -> String {
    IdempotencyKey::from_business_id(business_id.as_bytes()).to_string()
}

pub fn success_openai<H: Harness>() {
    let server = mock("ok");
    let c = H::build(Build::new(openai(&server).model("forced-model")));
    let r = H::chat(&c, ask("hello there")).expect("success");
    assert_eq!(reply_text(&r.body), "hello there");
    assert_eq!(
        r.body["model"], "forced-model",
        "the endpoint's model is sent"
    );
    assert_eq!((r.attempts, r.target), (1, Some(Target::new(0, 0))));
    assert!(!r.is_degraded());
    let stats = server.stats();
    assert_eq!((stats.total_requests, stats.processed), (1, 1));
    assert_eq!(stats.keys.len(), 1, "an Idempotency-Key was sent");
    let m = H::metrics(&c);
    assert_eq!((m.attempts, m.retries, m.successes), (1, 0, 1));
}

pub fn success_anthropic<H: Harness>() {
    let server = mock("ok");
    // The mock answers 401 without x-api-key and 400 without anthropic-version.
    let c = H::build(Build::new(anthropic(&server).model("claude-test")));
    let r = H::chat(&c, ask("bonjour")).expect("success");
    assert_eq!(reply_text(&r.body), "bonjour");
    assert_eq!(r.body["model"], "claude-test");
    assert_eq!(r.attempts, 1);
    assert_eq!(server.stats().by_path.get("/v1/messages"), Some(&1));
}

pub fn business_id_sets_the_idempotency_key<H: Harness>() {
    let server = mock("ok");
    let c = H::build(Build::new(openai(&server)));
    H::chat_with(&c, "order-42", ask("x")).expect("success");
    let stats = server.stats();
    let k = stats.key(&key_of("order-42")).expect("derived key sent");
    assert_eq!((k.attempts, k.processed), (1, 1));
}

pub fn request_errors_are_not_retried<H: Harness>() {
    let server = mock("ok");
    let c = H::build(Build::new(openai(&server)));
    for (i, status) in [400u16, 404, 413, 422].into_iter().enumerate() {
        server.push_faults(&[Fault::status(status)]);
        let e = H::chat(&c, ask("x")).expect_err("request error");
        assert_eq!(e.reason, GiveUpReason::NotRetryable, "{status}");
        assert_eq!((e.status, e.attempts), (Some(status), 1));
        assert_eq!(e.scope, Some(Scope::Request));
        assert!(e.message.is_some(), "the error body's message is kept");
        assert_eq!(
            server.stats().total_requests,
            i as u64 + 1,
            "{status} not retried"
        );
    }
    assert_eq!(H::metrics(&c).give_ups.not_retryable, 4);
}

pub fn key_errors_disable_the_key_and_rotate<H: Harness>() {
    for status in [401u16, 403] {
        let server = mock("ok");
        let c = H::build(Build::new(openai(&server).key("sk-test-key-two")));
        server.push_faults(&[Fault::status(status)]);
        let r = H::chat(&c, ask("x")).expect("the second key succeeds");
        assert_eq!(r.attempts, 2, "{status}");
        assert_eq!(r.target, Some(Target::new(0, 1)), "{status}");
        assert_eq!(H::metrics(&c).keys_disabled, 1, "{status}");
        // The disabled key stays out: the next call goes to the second key at once.
        let r = H::chat(&c, ask("y")).expect("success");
        assert_eq!((r.attempts, r.target), (1, Some(Target::new(0, 1))));
        assert_eq!(server.stats().total_requests, 3);
    }
}

pub fn insufficient_quota_rotates_keys<H: Harness>() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let server = mock("quota");
        let e = EndpointDef::new(server.base_url(), provider, "sk-quota-spent").key("sk-fine-key");
        let c = H::build(Build::new(e));
        let r = H::chat(&c, ask("x")).expect("rotates to the funded key");
        assert_eq!(r.attempts, 2, "{provider}");
        assert_eq!(r.target, Some(Target::new(0, 1)));
        assert_eq!(H::metrics(&c).keys_disabled, 1);
        assert_eq!(server.stats().fault("quota"), 1);
        // With only spent keys the call ends with no usable key.
        let spent = EndpointDef::new(server.base_url(), provider, "sk-quota-x");
        let c = H::build(Build::new(spent).seed(SEED + 1));
        let e = H::chat(&c, ask("x")).expect_err("no funded key");
        assert_eq!(e.reason, GiveUpReason::NoUsableKey);
        assert_eq!(e.class, Some(Class::QuotaExhausted));
    }
}

pub fn retryable_statuses_are_retried_with_the_same_key<H: Harness>() {
    let server = mock("ok");
    let c = H::build(Build::new(openai(&server)));
    let statuses = [408u16, 409, 429, 500, 502, 503, 504, 529];
    for (i, status) in statuses.into_iter().enumerate() {
        server.push_faults(&[Fault::status(status)]);
        let id = format!("retry-{status}");
        let r = H::chat_with(&c, &id, ask("x")).expect("retried to success");
        assert_eq!(r.attempts, 2, "{status}");
        let stats = server.stats();
        assert_eq!(stats.status(status), 1);
        assert_eq!(stats.total_requests, 2 * (i as u64 + 1));
        let k = stats.key(&key_of(&id)).expect("key");
        assert_eq!(
            (k.attempts, k.processed),
            (2, 1),
            "one key for both attempts"
        );
    }
    let m = H::metrics(&c);
    assert_eq!((m.retries, m.successes), (8, 8));
}

/// Sends through a tap, with `fault` first, and returns the gap between the two
/// request arrivals at the server.
fn gap_after<H: Harness>(fault: Fault) -> Duration {
    let server = mock("ok");
    let tap = Tap::start(server.addr());
    let e = EndpointDef::new(tap.base_url(), Provider::OpenAi, "sk-test-key-one");
    let c = H::build(Build::new(e));
    server.push_faults(&[fault]);
    let r = H::chat(&c, ask("x")).expect("success after the wait");
    assert_eq!(r.attempts, 2);
    let a = tap.arrivals();
    assert_eq!(a.len(), 2, "two requests reached the server");
    let gap = a[1].duration_since(a[0]);
    eprintln!("the retry reached the server {gap:?} after the first attempt");
    gap
}

pub fn retry_after_seconds_is_honoured<H: Harness>() {
    let gap = gap_after::<H>(Fault::status_retry_after(429, "1"));
    assert!(gap >= Duration::from_secs(1), "retried after {gap:?}");
}

pub fn retry_after_http_date_is_honoured<H: Harness>() {
    let unix = steadfast_http::clock::wall_unix();
    // Against the response's Date (this second or the next), this asks for 2-3 s;
    // without the hint the retry would follow within milliseconds.
    let gap = gap_after::<H>(Fault::status_retry_after(
        503,
        &ImfFixdate(unix + 3).to_string(),
    ));
    assert!(gap >= Duration::from_secs(1), "retried after {gap:?}");
}

pub fn retry_after_ms_is_honoured<H: Harness>() {
    let gap = gap_after::<H>(status_retry_after_ms(529, "700"));
    assert!(gap >= Duration::from_millis(700), "retried after {gap:?}");
}

pub fn hang_is_retried_with_the_same_idempotency_key<H: Harness>() {
    let server = mock("ok");
    let c = H::build(Build::new(openai(&server)));
    server.push_faults(&[Fault::Hang]);
    let r = H::chat_with(&c, "hang-1", ask("x")).expect("retried after the timeout");
    assert_eq!(r.attempts, 2);
    let stats = server.stats();
    assert_eq!(stats.fault("hang"), 1);
    let k = stats.key(&key_of("hang-1")).expect("key");
    assert_eq!((k.attempts, k.processed), (2, 1));
}

pub fn connection_refused_is_retried_then_given_up<H: Harness>() {
    let url = format!("http://127.0.0.1:{}", dead_port());
    let c = H::build(Build::new(EndpointDef::new(url, Provider::OpenAi, "sk-x")));
    let e = H::chat(&c, ask("x")).expect_err("nothing listens");
    assert_eq!(e.reason, GiveUpReason::RetriesExhausted);
    assert_eq!(e.attempts, 4);
    assert_eq!((e.class, e.status), (Some(Class::Connect), None));
    assert!(e.source.is_some(), "the client error is the source");
    assert!(std::error::Error::source(&e).is_some());
    let m = H::metrics(&c);
    assert_eq!((m.attempts, m.give_ups.retries_exhausted), (4, 1));
}

pub fn failover_to_a_second_server_while_the_first_is_down<H: Harness>() {
    let (a, b) = (mock("ok"), mock("ok"));
    a.set_down(true);
    let c = H::build(Build::new(openai(&a)).endpoint(openai(&b).priority(1)));
    let r = H::chat(&c, ask("x")).expect("the second server answers");
    assert_eq!(r.target, Some(Target::new(1, 0)));
    assert_eq!(r.attempts, 2);
    assert_eq!((a.stats().status(503), b.stats().processed), (1, 1));
    assert_eq!(H::metrics(&c).failovers, 1);
}

pub fn open_breaker_fails_fast_without_reaching_the_server<H: Harness>() {
    let server = mock("ok");
    server.set_down(true);
    let c = H::build(Build::new(openai(&server)).policy(|p| {
        p.breaker.consecutive_failures = Some(2);
        p.breaker.failure_rate = None;
        p.breaker.open_for = Duration::from_secs(30);
    }));
    let e = H::chat(&c, ask("x")).expect_err("down");
    assert!(matches!(e.reason, GiveUpReason::BreakerOpen { .. }), "{e}");
    assert_eq!(e.attempts, 2);
    assert_eq!(server.stats().total_requests, 2);
    for _ in 0..3 {
        let e = H::chat(&c, ask("x")).expect_err("breaker open");
        assert!(matches!(e.reason, GiveUpReason::BreakerOpen { .. }));
        assert_eq!(e.attempts, 0);
    }
    assert_eq!(
        server.stats().total_requests,
        2,
        "nothing reached the server"
    );
    let m = H::metrics(&c);
    assert_eq!((m.breaker_opened, m.give_ups.breaker_open), (1, 4));
}

pub fn template_fallback_marks_the_reply_degraded<H: Harness>() {
    let server = mock("ok");
    server.set_down(true);
    let template = json!({"choices": [{"message": {"content": "Please try again later."}}]});
    let c = H::build(Build::new(openai(&server)).fallback(Fallback::Template(template.clone())));
    let r = H::chat(&c, ask("x")).expect("the template answers");
    assert_eq!(r.body, template);
    let d = r.degraded.expect("degraded");
    assert_eq!(
        (d.via, d.reason),
        (FallbackKind::Template, GiveUpReason::RetriesExhausted)
    );
    assert_eq!((r.attempts, r.target), (4, None));
    assert_eq!(H::metrics(&c).fallbacks.template, 1);
}

pub fn stored_fallback_returns_the_last_result_degraded<H: Harness>() {
    let server = mock("ok");
    let c = H::build(Build::new(openai(&server)).fallback(Fallback::Stored));
    let first = H::chat_with(&c, "order-7", ask("remember me")).expect("success");
    assert!(!first.is_degraded());
    server.set_down(true);
    let r = H::chat_with(&c, "order-7", ask("something new")).expect("the stored result");
    assert_eq!(r.body, first.body);
    assert_eq!(r.degraded.map(|d| d.via), Some(FallbackKind::Stored));
    // Nothing stored for another id, and nothing without an id.
    assert!(H::chat_with(&c, "order-8", ask("x")).is_err());
    assert!(H::chat(&c, ask("x")).is_err());
    assert_eq!(H::metrics(&c).fallbacks.stored, 1);
}

pub fn endpoint_fallback_answers_from_another_server<H: Harness>() {
    let (a, b) = (mock("ok"), mock("ok"));
    a.set_down(true);
    let c = H::build(
        Build::new(openai(&a)).fallback(Fallback::Endpoint(anthropic(&b).model("small-model"))),
    );
    let r = H::chat(&c, ask("degrade me")).expect("the fallback endpoint answers");
    assert_eq!(reply_text(&r.body), "degrade me");
    assert_eq!(r.body["model"], "small-model");
    let d = r.degraded.expect("degraded");
    assert_eq!(
        (d.via, d.reason),
        (FallbackKind::Endpoint, GiveUpReason::RetriesExhausted)
    );
    assert_eq!(
        r.target,
        Some(Target::new(1, 0)),
        "numbered after the primary endpoint"
    );
    assert_eq!(r.attempts, 5);
    assert_eq!(b.stats().processed, 1);
}

/// Every scripted fault, each followed by normal service: every call recovers.
pub fn all_faults() -> Vec<Fault> {
    vec![
        Fault::Ok,
        Fault::status(500),
        Fault::status_retry_after(429, "garbage"),
        Fault::Latency { ms: 30 },
        Fault::Hang,
        Fault::Reset,
        Fault::ResetBeforeRequest,
        Fault::Malformed,
        Fault::TruncatedBody,
        Fault::StreamCut { after_events: 1 },
        Fault::Trickle {
            bytes_per_sec: 50_000,
        },
        Fault::HugeBody { bytes: 1_000_000 },
        Fault::HugeHeader { bytes: 16_000 },
    ]
}

pub fn no_panic_on_any_fault<H: Harness>() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let server = mock("ok");
        let e = EndpointDef::new(server.base_url(), provider, "sk-test-key-one");
        let c = H::build(Build::new(e));
        for fault in all_faults() {
            let name = fault.kind_name();
            server.push_faults(&[fault]);
            let r = H::chat(&c, ask("resilient"));
            let r = r.unwrap_or_else(|e| panic!("{provider} {name}: {e}"));
            assert!(!reply_text(&r.body).is_empty(), "{provider} {name}");
        }
        assert_eq!(server.stats().script_remaining, 0);
    }
}

/// Every scenario of the mock, a few calls and a stream each: whatever the outcome,
/// no panic, and every error is a typed give-up.
pub fn no_panic_in_any_scenario<H: Harness>() {
    for scenario in steadfast_mock::builtin::names() {
        let server = mock_with(|c| {
            c.scenario = steadfast_mock::builtin::scenario(scenario).expect("a built-in");
            let k = &mut c.knobs;
            k.fault_rate = Some(0.5);
            k.outage_for = Some(Duration::from_millis(300));
            k.latency_min = Some(Duration::ZERO);
            k.latency_max = Some(Duration::from_millis(100));
            k.rpm = Some(2);
        });
        let e = EndpointDef::new(server.base_url(), Provider::Anthropic, "sk-quota-revoked")
            .key("sk-test-key-two");
        let c = H::build(Build::new(e));
        for i in 0..3 {
            match H::chat(&c, ask(&format!("call {i}"))) {
                Ok(r) => assert!(r.attempts >= 1),
                Err(e) => assert!(e.attempts <= 4, "{scenario}: {e}"),
            }
        }
        if let Ok(items) = H::stream(&c, ask("a stream")) {
            assert!(!items.is_empty(), "{scenario}");
        }
        assert!(server.stats().total_requests >= 1, "{scenario}");
    }
}

pub fn keys_never_appear_in_debug_or_errors<H: Harness>() {
    const SECRET: &str = "sk-SECRET-0123456789";
    let server = mock("ok");
    let c = H::build(Build::new(EndpointDef::new(
        server.base_url(),
        Provider::OpenAi,
        SECRET,
    )));
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {SECRET}","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
    );
    server.push_faults(&[status_body(401, &body)]);
    let e = H::chat(&c, ask("x")).expect_err("the only key is rejected");
    assert_eq!(e.reason, GiveUpReason::NoUsableKey);
    let message = e.message.clone().expect("message");
    assert!(message.contains("****"), "{message}");
    let dead = format!("http://127.0.0.1:{}", dead_port());
    let refused = H::build(Build::new(EndpointDef::new(
        dead,
        Provider::Anthropic,
        SECRET,
    )));
    let e2 = H::chat(&refused, ask("x")).expect_err("refused");
    for text in [
        format!("{c:?}"),
        format!("{refused:?}"),
        format!("{e:?}"),
        format!("{e}"),
        format!("{e2:?}"),
        format!("{e2}"),
        format!("{:?}", H::shared(&c)),
        format!("{:?}", H::metrics(&c)),
    ] {
        assert!(!text.contains("SECRET"), "leaked: {text}");
    }
}
