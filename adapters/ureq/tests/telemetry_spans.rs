//! With the `tracing` feature, through the blocking client against the mock on
//! loopback: the call's span and its attempts' spans, the retry's event inside the
//! call's span, and no key or prompt in any field.
#![cfg(feature = "tracing")]

use std::time::Duration;

use serde_json::json;
use steadfast_mock::{Fault, MockConfig, MockServer};
use steadfast_ureq::{Client, EndpointDef, Policy, Provider};

#[path = "../../reqwest/tests/support/layer.rs"]
mod layer;

const KEY: &str = "sk-ureq-telemetry-secret";
const PROMPT: &str = "a blocking zebra prompt";
const SEED: u64 = 0x0e1e;

#[test]
fn a_retried_call_has_a_span_per_attempt_and_no_secret() {
    eprintln!("seed {SEED:#x}");
    let failure = Fault::Status {
        status: 503,
        retry_after: None,
        retry_after_ms: None,
        body: None,
        headers: Vec::new(),
    };
    let config = MockConfig::builtin("ok")
        .expect("built-in")
        .with_seed(SEED)
        .with_script([failure]);
    let server = MockServer::start(config).expect("the mock starts");
    let mut policy = Policy::default().without_jitter();
    policy.backoff.base = Duration::from_millis(10);
    policy.backoff.cap = Duration::from_millis(10);
    let client = Client::builder()
        .endpoint(EndpointDef::new(server.base_url(), Provider::OpenAi, KEY))
        .policy(policy)
        .seed_u64(SEED)
        .build()
        .expect("client builds");
    let rec = layer::Rec::default();
    tracing::subscriber::with_default(layer::subscriber(&rec), || {
        let ask =
            json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": PROMPT}]});
        let reply = client.chat(ask).expect("retried to a success");
        assert_eq!(reply.attempts, 2);
    });
    let rec = rec.0.lock().unwrap();
    let calls = rec.calls();
    assert_eq!(calls.len(), 1, "{:#?}", rec.spans);
    let call = &calls[0].fields;
    assert_eq!(
        call.get("otel.name").map(String::as_str),
        Some("chat gpt-4o-mini")
    );
    assert_eq!(
        call.get("gen_ai.provider.name").map(String::as_str),
        Some("openai")
    );
    assert!(call.contains_key("gen_ai.usage.output_tokens"), "{call:#?}");
    let call_index = rec.spans.iter().position(|s| std::ptr::eq(s, calls[0]));
    let attempts = rec.attempts();
    assert_eq!(attempts.len(), 2, "{:#?}", rec.spans);
    assert!(attempts.iter().all(|a| a.parent == call_index));
    let resend = |i: usize| attempts[i].fields.get("http.request.resend_count").cloned();
    assert_eq!((resend(0), resend(1)), (None, Some("1".to_owned())));
    assert_eq!(
        attempts[0].fields.get("error.type").map(String::as_str),
        Some("503")
    );
    let retry = rec.events("steadfast.retry.scheduled");
    assert_eq!(retry.len(), 1, "{:#?}", rec.events);
    assert_eq!(retry[0].span, call_index);
    for v in rec.all_values() {
        assert!(
            !v.contains(KEY) && !v.contains(PROMPT),
            "a secret or the prompt in {v}"
        );
    }
}
