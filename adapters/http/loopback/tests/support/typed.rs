//! The client in the SDKs' habits, generic over the adapter: typed requests and
//! replies, who served a call, per-call options and the builder's knobs.

use std::time::Duration;

use serde::Serialize;
use steadfast_core::idempotency::IdempotencyKey;
use steadfast_http::chat::types::{ChatRequest, ChatResponse};
use steadfast_http::{CallOptions, GiveUpReason, Provider, RequestError};
use steadfast_mock::Fault;

use super::capture::Capture;
use super::*;

/// A request type of the caller's own.
#[derive(Serialize)]
struct MyRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    messages: Vec<MyMessage<'a>>,
}

#[derive(Serialize)]
struct MyMessage<'a> {
    role: &'a str,
    content: &'a str,
}

fn my_request(text: &str) -> MyRequest<'_> {
    MyRequest {
        model: "caller-model",
        max_tokens: 64,
        messages: vec![MyMessage {
            role: "user",
            content: text,
        }],
    }
}

#[derive(serde::Deserialize)]
struct Completion {
    id: String,
    choices: Vec<serde_json::Value>,
}

pub fn replies_tell_text_usage_and_who_served_them<H: Harness>() {
    let server = mock("ok");
    let named = openai(&server).name("primary").model("m-forced");
    let c = H::build(Build::new(named));
    let r = H::chat(&c, my_request("typed hello")).expect("success");
    assert_eq!(r.text().as_deref(), Some("typed hello"));
    let usage = r.usage().expect("usage");
    assert!(
        usage.input_tokens > 0 && usage.output_tokens > 0,
        "{usage:?}"
    );
    assert_eq!(usage.total_tokens, usage.input_tokens + usage.output_tokens);
    let by = r.served_by().expect("served by an endpoint");
    assert_eq!(by.endpoint, "primary");
    assert_eq!(by.provider, Provider::OpenAi);
    assert_eq!(by.model.as_deref(), Some("m-forced"));
    let typed: Completion = r.json().expect("the body as a struct");
    assert!(typed.id.starts_with("chatcmpl-") && typed.choices.len() == 1);
    // An unnamed endpoint is known by its provider (another seed: other keys).
    let c = H::build(Build::new(anthropic(&server).model("claude-test")).seed(SEED + 1));
    let r = H::chat(&c, ask("bonjour")).expect("success");
    assert_eq!(r.text().as_deref(), Some("bonjour"));
    let by = r.served_by().expect("served by an endpoint");
    assert_eq!(
        (by.endpoint.as_str(), by.provider),
        ("anthropic", Provider::Anthropic)
    );
}

pub fn call_options_change_one_call_only<H: Harness>() {
    let server = mock("ok");
    let c = H::build(Build::new(openai(&server)));
    server.push_faults(&[Fault::status(503), Fault::status(503)]);
    let once = CallOptions::new().max_retries(0);
    let e = H::chat_opts(&c, ask("x"), &once).expect_err("one attempt only");
    assert_eq!((e.attempts, e.status), (1, Some(503)), "{e}");
    assert_eq!(e.reason, GiveUpReason::RetriesExhausted);
    // The next call has the client's four attempts again.
    let r = H::chat(&c, ask("y")).expect("retried");
    assert_eq!(r.attempts, 2);
    // Options that break the policy's rules refuse the call, naming the field.
    let bad = CallOptions::new().max_attempts(0);
    let e = H::chat_opts(&c, ask("z"), &bad).expect_err("refused");
    assert_eq!(e.attempts, 0);
    let Some(RequestError::Options(config)) = e.request.as_deref() else {
        panic!("expected refused options, got {e}");
    };
    assert!(
        config.to_string().contains("retry.max_attempts"),
        "{config}"
    );
    assert_eq!(
        server.stats().total_requests,
        3,
        "the refused call sent nothing"
    );
    // A deadline shorter than the server's hint ends the call at once.
    server.push_faults(&[status_retry_after_ms(429, "900")]);
    let short = CallOptions::new().deadline(Duration::from_millis(300));
    let e = H::chat_opts(&c, ask("w"), &short).expect_err("the hint is past the deadline");
    assert!(matches!(e.reason, GiveUpReason::HintTooLong { .. }), "{e}");
}

pub fn call_options_add_headers_and_the_idempotency_key<H: Harness>() {
    let server = Capture::start();
    let e = EndpointDef::new(server.base_url(), Provider::OpenAi, "sk-capture-key");
    let c = H::build(Build::new(e));
    let options = CallOptions::new()
        .header("x-trace-id", "trace-7")
        .header("authorization", "Bearer sk-other")
        .idempotency_key("order-7");
    let r = H::chat_opts(&c, ask("x"), &options).expect("success");
    assert_eq!(r.text().as_deref(), Some("ok"));
    let heads = server.heads();
    assert_eq!(heads.len(), 1);
    let head = &heads[0];
    assert!(head.contains("\r\nx-trace-id: trace-7\r\n"), "{head}");
    let key = IdempotencyKey::from_business_id(b"order-7").to_string();
    assert!(
        head.contains(&format!("\r\nidempotency-key: {key}\r\n")),
        "{head}"
    );
    // The caller's headers never replace the endpoint's authentication.
    assert!(
        head.contains("authorization: bearer sk-capture-key"),
        "{head}"
    );
    assert!(!head.contains("sk-other"), "{head}");
}

pub fn builder_knobs_apply_to_every_call<H: Harness>() {
    let server = mock("ok");
    let mut b = Build::new(openai(&server));
    b.knobs.max_retries = Some(1);
    b.knobs.timeout = Some(Duration::from_millis(250));
    b.knobs.deadline = Some(Duration::from_secs(5));
    let c = H::build(b);
    let retry = H::shared(&c).policy().retry;
    assert_eq!(retry.max_attempts, 2);
    assert_eq!(retry.attempt_timeout, Duration::from_millis(250));
    assert_eq!(retry.deadline, Some(Duration::from_secs(5)));
    server.push_faults(&[Fault::status(503), Fault::status(503)]);
    let e = H::chat(&c, ask("x")).expect_err("two attempts only");
    assert_eq!(
        (e.attempts, e.reason),
        (2, GiveUpReason::RetriesExhausted),
        "{e}"
    );
    // The attempt timeout cuts a hanging answer at 250 ms; the retry succeeds.
    server.push_faults(&[Fault::Hang]);
    let r = H::chat(&c, ask("y")).expect("the second attempt answers");
    assert_eq!(r.attempts, 2);
}

pub fn a_failover_is_counted_as_one_not_as_a_retry<H: Harness>() {
    let (a, b) = (mock("ok"), mock("ok"));
    a.set_down(true);
    let first = openai(&a).name("first");
    let second = anthropic(&b)
        .name("second")
        .model("claude-test")
        .priority(1);
    let c = H::build(Build::new(first).endpoint(second));
    let r = H::chat(&c, ask("x")).expect("the second server answers");
    assert_eq!(r.served_by().map(|s| s.endpoint.as_str()), Some("second"));
    let m = H::metrics(&c);
    assert_eq!((m.attempts, m.failovers, m.retries), (2, 1, 0), "{m:?}");
}

pub fn typed_requests_and_responses_of_steadfasts_own<H: Harness>() {
    let server = mock("ok");
    // A canonical client with one Anthropic endpoint: typed canonical requests in,
    // typed `chat.completion`s out.
    let mut b = Build::new(anthropic(&server).model("claude-test"));
    b.knobs.canonical = Some(true);
    let c = H::build(b);
    let request = ChatRequest::new("gpt-test")
        .system("Be brief.")
        .user("typed across")
        .max_tokens(64);
    let reply = H::chat(&c, &request).expect("success");
    let typed: ChatResponse = reply.json().expect("a chat.completion");
    assert_eq!(typed.text(), Some("typed across"));
    assert_eq!(typed.finish_reason(), Some("stop"));
    assert_eq!(
        server.stats().status(400),
        0,
        "the strict mock took the body"
    );
}
