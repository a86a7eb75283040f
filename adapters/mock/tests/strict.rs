//! Strict bodies over HTTP: a body the real API refuses gets the provider's 400 with
//! its real body; a tool round trip; `strict = false` serves loose bodies.

mod common;

use common::*;
use serde_json::{Value, json};
use steadfast_mock::ToolUse;
use steadfast_mock::{MockConfig, MockServer};

fn post_anthropic(s: &MockServer, body: &Value) -> Resp {
    let mut c = Client::connect(s.addr()).unwrap();
    let headers = [
        ("x-api-key", "sk-ant-test"),
        ("anthropic-version", "2023-06-01"),
    ];
    c.request(
        "POST",
        "/v1/messages",
        &headers,
        body.to_string().as_bytes(),
    )
    .unwrap()
}

fn post_openai(s: &MockServer, body: &Value) -> Resp {
    let mut c = Client::connect(s.addr()).unwrap();
    let headers = [("authorization", "Bearer sk-test")];
    c.request(
        "POST",
        "/v1/chat/completions",
        &headers,
        body.to_string().as_bytes(),
    )
    .unwrap()
}

#[test]
fn an_openai_body_sent_to_anthropic_gets_anthropics_400() {
    let s = MockServer::start(MockConfig::default()).unwrap();
    let body = json!({"model": "gpt-4o", "stop": ["\n"],
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]});
    let r = post_anthropic(&s, &body);
    assert_eq!(r.status, 400);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("x-should-retry"), Some("false"));
    let id = r.header("request-id").unwrap().to_owned();
    assert!(id.starts_with("req_"));
    assert_eq!(
        r.json(),
        json!({"type": "error", "request_id": id, "error": {"type": "invalid_request_error",
            "message": "max_tokens: Field required; stop: Extra inputs are not permitted; messages.0.role: Input should be 'user' or 'assistant'"}})
    );
    assert_eq!(s.stats().status(400), 1);
    assert_eq!(s.stats().processed, 0, "a refused body does no work");
}

#[test]
fn an_unknown_openai_argument_gets_openais_400() {
    let s = MockServer::start(MockConfig::default()).unwrap();
    let body =
        json!({"model": "gpt-4o", "top_k": 3, "messages": [{"role": "user", "content": "hi"}]});
    let r = post_openai(&s, &body);
    assert_eq!(r.status, 400);
    assert!(r.header("x-request-id").unwrap().starts_with("req_"));
    assert_eq!(
        r.json(),
        json!({"error": {"message": "Unrecognized request argument supplied: top_k",
            "type": "invalid_request_error", "param": null, "code": null}})
    );
}

#[test]
fn a_tool_round_trip_over_http() {
    let mut config = MockConfig::default();
    config.knobs = steadfast_mock::Knobs {
        tool_use: Some(ToolUse::Auto),
        ..config.knobs
    };
    let s = MockServer::start(config).unwrap();
    let tools = json!([{"name": "get_weather", "input_schema": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}}]);
    let ask = json!({"role": "user", "content": "Paris"});
    let body = json!({"model": "claude-test", "max_tokens": 64, "tools": tools, "messages": [ask]});
    let r = post_anthropic(&s, &body);
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["stop_reason"], "tool_use");
    let call = &v["content"][0];
    assert_eq!(
        (call["name"].as_str(), call["input"].clone()),
        (Some("get_weather"), json!({"city": "Paris"}))
    );
    let result = json!({"role": "user", "content": [{"type": "tool_result",
        "tool_use_id": call["id"], "content": "sunny"}]});
    let body = json!({"model": "claude-test", "max_tokens": 64, "tools": tools,
        "messages": [ask, {"role": "assistant", "content": v["content"]}, result]});
    let r = post_anthropic(&s, &body);
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["stop_reason"], "end_turn");
    assert_eq!(v["content"][0]["text"], "sunny");
}

#[test]
fn a_lax_mock_serves_loose_bodies() {
    let config = MockConfig::from_toml_str("strict = false").unwrap();
    assert!(!config.strict);
    let s = MockServer::start(config).unwrap();
    let r = post_anthropic(
        &s,
        &json!({"messages": [{"role": "system", "content": "hi"}], "stop": "x"}),
    );
    assert_eq!(r.status, 200);
}
