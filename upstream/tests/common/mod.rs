//! What the strict-body tests share: one request to a fresh upstream, its body read
//! back as JSON, and the 400s of both providers taken apart.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use serde_json::{Map, Value, json};
use steadfast_core::provider::Provider;
use steadfast_core::time::Timestamp;
use steadfast_upstream::{Answer, Body, Reply, RequestFacts, Scenario, Upstream, UpstreamConfig};
use steadfast_upstream::{WALL_START, builtin};

/// A fresh upstream on the built-in `ok` scenario.
pub fn fresh() -> Upstream {
    Upstream::new(builtin::scenario("ok").unwrap(), UpstreamConfig::default())
}

/// An upstream on a scenario written in TOML.
pub fn of_toml(text: &str) -> Upstream {
    Upstream::new(
        Scenario::from_toml(text).unwrap(),
        UpstreamConfig::default(),
    )
}

/// `body` sent to `u` as `provider` at the start.
pub fn send_to(u: &mut Upstream, provider: Provider, body: &Value) -> Answer {
    let bytes = serde_json::to_vec(body).unwrap();
    let facts = RequestFacts::client(provider, provider.path(), "sk-test", None, &bytes);
    u.handle(Timestamp::ZERO, WALL_START, &facts)
}

/// `body` sent to a fresh upstream as `provider`.
pub fn send(provider: Provider, body: &Value) -> Answer {
    send_to(&mut fresh(), provider, body)
}

/// The bytes of an answer's body (a success rendered).
pub fn bytes(a: &Answer) -> Vec<u8> {
    let Reply::Http(h) = &a.reply else {
        panic!("not HTTP: {a:?}")
    };
    match &h.body {
        Body::Bytes { bytes, .. } => bytes.clone(),
        b => b.rendered().unwrap().bytes(),
    }
}

/// An answer's body as JSON.
pub fn json_of(a: &Answer) -> Value {
    serde_json::from_slice(&bytes(a)).unwrap()
}

/// The SSE events of a streamed answer: (event name, data as JSON; `[DONE]` as a
/// string).
pub fn events(a: &Answer) -> Vec<(Option<String>, Value)> {
    let text = String::from_utf8(bytes(a)).unwrap();
    text.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let mut name = None;
            let mut data = Value::Null;
            for line in e.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(d).unwrap_or_else(|_| Value::String(d.into()));
                }
            }
            (name, data)
        })
        .collect()
}

/// `base` with the members of `extra` set (a `null` member removes the key).
pub fn with(base: &Value, extra: Value) -> Value {
    let mut map: Map<String, Value> = base.as_object().unwrap().clone();
    for (k, v) in extra.as_object().unwrap() {
        match v {
            Value::Null => {
                map.remove(k);
            }
            v => {
                map.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(map)
}

/// A valid Chat Completions body.
pub fn openai_body() -> Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
}

/// A valid Messages body.
pub fn anthropic_body() -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 64,
           "messages": [{"role": "user", "content": "hi"}]})
}

/// OpenAI's 400 for `body`: checks the status, the error type and the request id, and
/// returns (message, param, code).
pub fn openai_refusal(body: &Value) -> (String, Value, Value) {
    let a = send(Provider::OpenAi, body);
    assert_eq!(a.status(), Some(400), "{body}: {a:?}");
    assert!(a.header("x-request-id").unwrap().starts_with("req_"));
    let v = json_of(&a);
    let e = v["error"].as_object().unwrap();
    let mut keys: Vec<&str> = e.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "message", "param", "type"], "{v}");
    assert_eq!(v.as_object().unwrap().len(), 1, "{v}");
    assert_eq!(e["type"], "invalid_request_error");
    (
        e["message"].as_str().unwrap().to_owned(),
        e["param"].clone(),
        e["code"].clone(),
    )
}

/// Anthropic's 400 for `body`: checks the status, the body's shape and its request
/// id (the `request-id` header's), and returns the message.
pub fn anthropic_refusal(body: &Value) -> String {
    let a = send(Provider::Anthropic, body);
    assert_eq!(a.status(), Some(400), "{body}: {a:?}");
    let id = a.header("request-id").unwrap().to_owned();
    assert!(id.starts_with("req_"));
    assert_eq!(a.header("x-should-retry"), Some("false"));
    let v = json_of(&a);
    assert_eq!(v["type"], "error", "{v}");
    assert_eq!(v["request_id"], id.as_str(), "{v}");
    assert_eq!(v["error"]["type"], "invalid_request_error", "{v}");
    assert_eq!(v["error"].as_object().unwrap().len(), 2, "{v}");
    v["error"]["message"].as_str().unwrap().to_owned()
}
