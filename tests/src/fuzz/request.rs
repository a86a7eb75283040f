//! `request_body`: the upstream model's strict checks on arbitrary request bodies.

use serde_json::Value;
use steadfast_core::provider::Provider;
use steadfast_core::time::Timestamp;
use steadfast_upstream::{
    Body, Reply, RequestFacts, Scenario, Upstream, UpstreamConfig, WALL_START,
};

/// `request_body`: the first byte picks the provider (even: OpenAI, odd: Anthropic),
/// the rest is the body of a request to the healthy scenario.
///
/// - Nothing panics, and the answer is a 200 or a 400.
/// - A 400 carries the provider's error body (`invalid_request_error` with a message;
///   OpenAI's with `param` and `code`, Anthropic's with the `request-id` header's id).
/// - A 200 is the provider's success: a JSON object of the right `object` / `type`,
///   or a stream whose every event carries JSON (or `[DONE]`).
pub fn request_body(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let provider = match pick % 2 {
        0 => Provider::OpenAi,
        _ => Provider::Anthropic,
    };
    let mut up = Upstream::new(Scenario::healthy(), UpstreamConfig::default());
    let facts = RequestFacts::client(provider, provider.path(), "sk-fuzz", None, body);
    let answer = up.handle(Timestamp::ZERO, WALL_START, &facts);
    let Reply::Http(http) = &answer.reply else {
        panic!("not an HTTP answer: {answer:?}");
    };
    match (http.status, &http.body) {
        (400, Body::Bytes { bytes, .. }) => refusal(provider, bytes, answer.header("request-id")),
        (200, b) => success(provider, &b.rendered().expect("a success body").bytes()),
        (status, _) => panic!("status {status} for {}", String::from_utf8_lossy(body)),
    }
}

fn refusal(provider: Provider, bytes: &[u8], request_id: Option<&str>) {
    let v: Value = serde_json::from_slice(bytes).expect("a JSON error body");
    let e = &v["error"];
    assert_eq!(e["type"], "invalid_request_error", "{v}");
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    match provider {
        Provider::OpenAi => assert!(e.get("param").is_some() && e.get("code").is_some(), "{v}"),
        Provider::Anthropic => {
            assert_eq!(v["type"], "error", "{v}");
            assert_eq!(v["request_id"].as_str(), request_id, "{v}");
        }
    }
}

fn success(provider: Provider, bytes: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
        let (key, kind) = match provider {
            Provider::OpenAi => ("object", "chat.completion"),
            Provider::Anthropic => ("type", "message"),
        };
        assert_eq!(v[key], kind, "{v}");
        return;
    }
    let text = std::str::from_utf8(bytes).expect("a UTF-8 stream");
    for event in text.split("\n\n").filter(|e| !e.is_empty()) {
        let data = event
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .expect("an event with data");
        if data != "[DONE]" {
            serde_json::from_str::<Value>(data).expect("JSON event data");
        }
    }
}
