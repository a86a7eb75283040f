//! With the `tracing` feature, through the client against the mock on loopback: a
//! span per call and per attempt after the OpenTelemetry GenAI conventions, the
//! `steadfast.*` events inside the call's span, and neither the key nor the prompt in
//! any span or event field (unless prompts are opted in). Its own test binary: tracing
//! caches per-callsite interest process-wide.
#![cfg(feature = "tracing")]

use std::time::Duration;

use serde_json::json;
use steadfast_mock::{Fault, MockServer};

#[path = "support/scripted.rs"]
mod scripted;
use scripted::mock;
use steadfast_reqwest::{Client, EndpointDef, Policy, Provider};

#[path = "support/layer.rs"]
mod layer;

use layer::{Rec, Recorded};

const KEY: &str = "sk-telemetry-secret-4c1d";
const PROMPT: &str = "the zebra prompt 7731";
const SEED: u64 = 0x7e1e;

fn client(server: &MockServer, prompts: bool) -> Client {
    let mut policy = Policy::default().without_jitter();
    policy.backoff.base = Duration::from_millis(20);
    policy.backoff.cap = Duration::from_millis(40);
    Client::builder()
        .endpoint(EndpointDef::new(server.base_url(), Provider::OpenAi, KEY).name("primary"))
        .policy(policy)
        .seed_u64(SEED)
        .record_prompts(prompts)
        .build()
        .expect("client builds")
}

fn ask() -> serde_json::Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": PROMPT}]})
}

fn field<'a>(fields: &'a std::collections::BTreeMap<String, String>, k: &str) -> Option<&'a str> {
    fields.get(k).map(String::as_str)
}

/// Runs `f` on a current-thread runtime with the recorder as this thread's subscriber.
fn recorded<F: Future<Output = ()>>(f: impl FnOnce() -> F) -> Recorded {
    let rec = Rec::default();
    let _guard = tracing::subscriber::set_default(layer::subscriber(&rec));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(f());
    drop(rt);
    std::sync::Arc::try_unwrap(rec.0)
        .map(|m| m.into_inner().unwrap())
        .unwrap_or_else(|arc| std::mem::take(&mut *arc.lock().unwrap()))
}

#[test]
fn spans_and_events_follow_the_conventions_and_hold_no_secret() {
    let server = mock(SEED, vec![Fault::status(500)]);
    let port = server.addr().port().to_string();
    let failing = mock(SEED, vec![Fault::status(401)]);
    let rec = recorded(|| async {
        let reply = client(&server, false)
            .chat(ask())
            .await
            .expect("retried to a success");
        assert_eq!(reply.attempts, 2);
        let e = client(&failing, false)
            .chat(ask())
            .await
            .expect_err("a 401 gives up");
        assert_eq!(e.status, Some(401));
    });

    let calls = rec.calls();
    assert_eq!(calls.len(), 2, "{:#?}", rec.spans);
    let ok = &calls[0].fields;
    assert_eq!(field(ok, "otel.name"), Some("chat gpt-4o-mini"));
    assert_eq!(field(ok, "otel.kind"), Some("client"));
    assert_eq!(field(ok, "gen_ai.operation.name"), Some("chat"));
    assert_eq!(field(ok, "gen_ai.provider.name"), Some("openai"));
    assert_eq!(field(ok, "gen_ai.request.model"), Some("gpt-4o-mini"));
    assert!(field(ok, "gen_ai.response.model").is_some(), "{ok:#?}");
    assert!(field(ok, "gen_ai.usage.input_tokens").is_some(), "{ok:#?}");
    assert!(field(ok, "gen_ai.usage.output_tokens").is_some(), "{ok:#?}");
    assert_eq!(field(ok, "server.address"), Some("127.0.0.1"));
    assert_eq!(field(ok, "server.port"), Some(port.as_str()));
    assert_eq!(field(ok, "http.response.status_code"), Some("200"));
    assert_eq!(field(ok, "steadfast.attempts"), Some("2"));
    assert_eq!(field(ok, "error.type"), None);

    // The first call's two attempts are children of its span.
    let attempts = rec.attempts();
    assert_eq!(attempts.len(), 3, "{:#?}", rec.spans);
    let (first, second) = (&attempts[0], &attempts[1]);
    let call_index = rec.spans.iter().position(|s| std::ptr::eq(s, calls[0]));
    assert_eq!((first.parent, second.parent), (call_index, call_index));
    assert_eq!(field(&first.fields, "otel.name"), Some("chat gpt-4o-mini"));
    assert_eq!(
        field(&first.fields, "http.response.status_code"),
        Some("500")
    );
    assert_eq!(field(&first.fields, "error.type"), Some("500"));
    assert_eq!(field(&first.fields, "otel.status_code"), Some("error"));
    assert_eq!(field(&first.fields, "http.request.resend_count"), None);
    assert_eq!(
        field(&second.fields, "http.response.status_code"),
        Some("200")
    );
    assert_eq!(
        field(&second.fields, "http.request.resend_count"),
        Some("1")
    );
    assert_eq!(field(&second.fields, "error.type"), None);
    assert_eq!(field(&second.fields, "steadfast.endpoint"), Some("primary"));
    assert!(field(&second.fields, "gen_ai.usage.output_tokens").is_some());

    // The failed call: error.type is the status, the give-up's reason is kept.
    let failed = &calls[1].fields;
    assert_eq!(field(failed, "error.type"), Some("401"));
    assert_eq!(field(failed, "otel.status_code"), Some("error"));
    assert!(
        field(failed, "steadfast.give_up.reason").is_some(),
        "{failed:#?}"
    );

    // The decisions, as named events inside the call's span.
    // (The 401 also schedules one: its key is out for good, another key might do.)
    let retry: Vec<_> = rec
        .events("steadfast.retry.scheduled")
        .into_iter()
        .filter(|e| e.span == call_index)
        .collect();
    assert_eq!(retry.len(), 1, "{:#?}", rec.events);
    assert_eq!(field(&retry[0].fields, "wait_ms"), Some("20"));
    assert_eq!(
        rec.events("steadfast.key.disabled").len(),
        1,
        "{:#?}",
        rec.events
    );
    let give_up = rec.events("steadfast.give_up");
    assert_eq!(give_up.len(), 1, "{:#?}", rec.events);
    assert_eq!(
        field(&give_up[0].fields, "reason"),
        field(failed, "steadfast.give_up.reason")
    );

    // No key, no Authorization header and no prompt anywhere.
    let values = rec.all_values();
    assert!(!values.is_empty());
    for v in &values {
        assert!(!v.contains(KEY) && !v.contains("Bearer"), "a secret in {v}");
        assert!(!v.contains(PROMPT), "the prompt in {v}");
    }
    assert!(
        rec.calls()
            .iter()
            .all(|s| !s.fields.contains_key("gen_ai.input.messages"))
    );
}

#[test]
fn the_prompt_is_recorded_only_when_opted_in() {
    let server = mock(SEED, Vec::new());
    let rec = recorded(|| async {
        client(&server, true).chat(ask()).await.expect("a success");
    });
    let calls = rec.calls();
    assert_eq!(calls.len(), 1, "{:#?}", rec.spans);
    let messages = field(&calls[0].fields, "gen_ai.input.messages").expect("opted in");
    assert!(messages.contains(PROMPT), "{messages}");
    // The key still appears nowhere, and the completion is not recorded.
    for v in rec.all_values() {
        assert!(!v.contains(KEY), "a secret in {v}");
    }
    assert!(!calls[0].fields.contains_key("gen_ai.output.messages"));
}
