//! Calls in the canonical shape (OpenAI Chat Completions) across providers, generic
//! over the adapter: a down OpenAI endpoint fails over to the strict Anthropic mock,
//! which refuses any body the real API would.

use std::time::Duration;

use steadfast_http::{GiveUpReason, Provider, RequestError, TextEvent};

use super::*;

const SYSTEM: &str = "You answer in one line.";
const TEXT: &str = "alpha beta gamma delta epsilon zeta eta theta iota kappa";

/// A canonical request Anthropic cannot take as it is: a system message, `stop`,
/// a tool, and no `max_tokens`.
fn canonical(text: &str) -> Value {
    json!({
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": text}
        ],
        "stop": ["\n\n"],
        "temperature": 0.2,
        "tools": [{"type": "function", "function": {
            "name": "lookup",
            "description": "Looks a word up.",
            "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
        }}]
    })
}

/// A down OpenAI endpoint first, the Anthropic mock after it; and their servers.
fn failover_client<H: Harness>() -> (H::Client, MockServer, MockServer) {
    failover_client_shaped::<H>(None)
}

fn failover_client_shaped<H: Harness>(
    canonical: Option<bool>,
) -> (H::Client, MockServer, MockServer) {
    let (down, up) = (mock("ok"), mock("ok"));
    down.set_down(true);
    let first = openai(&down).name("openai-primary");
    let second = anthropic(&up)
        .name("claude-standby")
        .model("claude-test")
        .priority(1);
    // Timeouts far above a loopback exchange's: on a loaded machine the fast suite's
    // 300 ms connect (or a 400 ms first event) can pass, and the retry that follows
    // goes back to the failed endpoint, which these tests count.
    let mut b = Build::new(first).endpoint(second).policy(|p| {
        p.retry.first_event_timeout = Some(Duration::from_secs(5));
        p.retry.connect_timeout = Duration::from_secs(5);
        p.retry.attempt_timeout = Duration::from_secs(5);
    });
    b.knobs.canonical = canonical;
    (H::build(b), down, up)
}

pub fn a_canonical_call_fails_over_to_the_strict_anthropic_mock<H: Harness>() {
    let (c, down, up) = failover_client::<H>();
    assert!(
        H::shared(&c).is_canonical(),
        "two APIs: canonical by default"
    );
    let r = H::chat(&c, canonical("hello from the canonical shape")).expect("failed over");
    assert_eq!(r.body["object"], "chat.completion", "{}", r.body);
    assert_eq!(r.body["choices"][0]["message"]["role"], "assistant");
    assert_eq!(r.body["choices"][0]["finish_reason"], "stop");
    assert_eq!(r.text().as_deref(), Some("hello from the canonical shape"));
    let by = r.served_by().expect("served by an endpoint");
    assert_eq!(by.endpoint, "claude-standby");
    assert_eq!(by.provider, Provider::Anthropic);
    assert_eq!(by.model.as_deref(), Some("claude-test"));
    let usage = r.usage().expect("usage");
    assert_eq!(usage.total_tokens, usage.input_tokens + usage.output_tokens);
    assert_eq!(down.stats().status(503), 1);
    let s = up.stats();
    assert_eq!((s.status(200), s.status(400)), (1, 0), "{s:?}");
    assert_eq!(s.by_path.get("/v1/messages"), Some(&1));
}

pub fn sent_natively_the_same_call_is_refused_by_the_strict_mock<H: Harness>() {
    // What failover did before the canonical shape: the OpenAI body, unchanged.
    let (c, _down, up) = failover_client_shaped::<H>(Some(false));
    let e = H::chat(&c, canonical("hello")).expect_err("Anthropic refuses the OpenAI body");
    assert_eq!(
        (e.status, e.reason),
        (Some(400), GiveUpReason::NotRetryable),
        "{e}"
    );
    let message = e.message.as_deref().unwrap_or_default();
    assert!(message.contains("max_tokens: Field required"), "{message}");
    assert!(
        message.contains("Extra inputs are not permitted"),
        "{message}"
    );
    assert!(
        message.contains("messages.0.role: Input should be 'user' or 'assistant'"),
        "{message}"
    );
    assert_eq!(e.endpoint.as_deref(), Some("claude-standby"));
    assert_eq!(up.stats().status(400), 1);
}

pub fn a_canonical_stream_fails_over_with_text_deltas_in_order<H: Harness>() {
    let (c, _down, up) = failover_client::<H>();
    let mut request = canonical(TEXT);
    request["stream_options"] = json!({"include_usage": true});
    let items = H::stream_text(&c, request).expect("failed over");
    let events: Vec<TextEvent> = items
        .into_iter()
        .map(|i| i.expect("no interruption"))
        .collect();
    let Some((TextEvent::Done(message), deltas)) = events.split_last() else {
        panic!("the stream ends with the whole message: {events:?}");
    };
    let deltas: Vec<&str> = deltas
        .iter()
        .map(|e| match e {
            TextEvent::Delta(d) => d.as_str(),
            other => panic!("only deltas before the end: {other:?}"),
        })
        .collect();
    assert!(deltas.len() > 1, "the text arrived in pieces: {deltas:?}");
    assert_eq!(deltas.concat(), TEXT, "in order");
    assert_eq!(message["object"], "chat.completion");
    assert_eq!(message["choices"][0]["message"]["content"], TEXT);
    assert_eq!(message["choices"][0]["finish_reason"], "stop");
    assert!(
        message["usage"]["completion_tokens"].as_u64() > Some(0),
        "{message}"
    );
    assert_eq!(up.stats().status(400), 0);
    assert_eq!(H::metrics(&c).successes, 1);
}

pub fn a_tool_call_round_trip_through_anthropic<H: Harness>() {
    let (c, _down, up) = failover_client::<H>();
    let mut request = canonical("look up 'steadfast'");
    request["tool_choice"] = json!("required");
    let r = H::chat(&c, request).expect("a tool call");
    let choice = &r.body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{}", r.body);
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "lookup");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().expect("a string"))
            .expect("the arguments are JSON");
    assert!(args.is_object(), "{args}");
    assert_eq!(r.text(), None, "a tool call alone has no text");
    // The tool's result goes back in the canonical shape; the answer is text.
    let mut next = canonical("look up 'steadfast'");
    let messages = next["messages"].as_array_mut().expect("messages");
    messages.push(json!({"role": "assistant", "content": null, "tool_calls": [call]}));
    messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": "steadfast: firm, unwavering"}));
    let r = H::chat(&c, next).expect("the answer after the tool");
    assert_eq!(r.body["choices"][0]["finish_reason"], "stop", "{}", r.body);
    assert!(r.text().is_some_and(|t| !t.is_empty()));
    assert_eq!(
        up.stats().status(400),
        0,
        "the strict mock took both bodies"
    );
}

pub fn an_untranslatable_field_is_refused_before_any_attempt<H: Harness>() {
    let (c, down, up) = failover_client::<H>();
    let mut request = canonical("x");
    request["logit_bias"] = json!({"50256": -100});
    let e = H::chat(&c, request).expect_err("refused");
    assert_eq!(e.attempts, 0);
    let Some(RequestError::Untranslatable(t)) = e.request.as_deref() else {
        panic!("expected an untranslatable request, got {e}");
    };
    assert_eq!(t.field(), "logit_bias", "{t}");
    assert!(e.to_string().contains("logit_bias"), "{e}");
    assert_eq!(down.stats().total_requests + up.stats().total_requests, 0);
    let m = H::metrics(&c);
    assert_eq!((m.attempts, m.give_ups.total()), (0, 0), "{m:?}");
}
