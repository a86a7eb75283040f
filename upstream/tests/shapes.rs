//! The success shapes of both providers, exactly: the JSON objects, the order and
//! fields of the stream events, `max_tokens` and stop sequences.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::*;
use serde_json::{Value, json};
use steadfast_core::provider::Provider;
use steadfast_upstream::WALL_START;

fn openai(extra: Value) -> Value {
    send_json(Provider::OpenAi, &with(&openai_body(), extra))
}

fn anthropic(extra: Value) -> Value {
    send_json(Provider::Anthropic, &with(&anthropic_body(), extra))
}

fn send_json(p: Provider, body: &Value) -> Value {
    let a = send(p, body);
    assert_eq!(a.status(), Some(200), "{body}");
    json_of(&a)
}

fn say(text: &str) -> Value {
    json!([{"role": "user", "content": text}])
}

#[test]
fn a_chat_completion_is_openais_object() {
    let v = openai(json!({"messages": say("hello there")}));
    let id = v["id"].as_str().unwrap();
    assert!(id.starts_with("chatcmpl-") && id.len() == 38, "{id}");
    let expected = json!({
        "id": id, "object": "chat.completion", "created": WALL_START, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello there",
            "refusal": null, "annotations": []}, "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
        "service_tier": "default", "system_fingerprint": "fp_steadfast_mock"
    });
    assert_eq!(v, expected);
}

#[test]
fn a_message_is_anthropics_object() {
    let v = anthropic(json!({"messages": say("hello there")}));
    let id = v["id"].as_str().unwrap();
    assert!(id.starts_with("msg_") && id.len() == 28, "{id}");
    let expected = json!({
        "id": id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "hello there"}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 3, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 3, "service_tier": "standard"}
    });
    assert_eq!(v, expected);
}

#[test]
fn max_tokens_cuts_the_reply() {
    // 40 characters are 10 tokens; 2 tokens are 8 characters.
    let long = "abcd efgh ijkl mnop qrst uvwx yzab cdef";
    let v = openai(json!({"messages": say(long), "max_tokens": 2}));
    assert_eq!(v["choices"][0]["message"]["content"], "abcd efg");
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["usage"]["completion_tokens"], 2);
    let v = openai(json!({"messages": say(long), "max_completion_tokens": 100}));
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let v = anthropic(json!({"messages": say(long), "max_tokens": 2}));
    assert_eq!(v["content"], json!([{"type": "text", "text": "abcd efg"}]));
    assert_eq!(
        (
            v["stop_reason"].as_str(),
            v["usage"]["output_tokens"].as_u64()
        ),
        (Some("max_tokens"), Some(2))
    );
    let v = anthropic(json!({"messages": say(long), "max_tokens": 0}));
    assert_eq!(
        (v["content"].clone(), v["stop_reason"].clone()),
        (json!([]), json!("max_tokens"))
    );
    assert_eq!(v["usage"]["output_tokens"], 0);
}

#[test]
fn a_stop_sequence_ends_the_reply_before_it() {
    let text = "one. two. three";
    let v = openai(json!({"messages": say(text), "stop": ["three", ". "]}));
    assert_eq!(v["choices"][0]["message"]["content"], "one");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let v = openai(json!({"messages": say(text), "stop": "thr"}));
    assert_eq!(v["choices"][0]["message"]["content"], "one. two. ");
    let v = anthropic(json!({"messages": say(text), "stop_sequences": ["two"]}));
    assert_eq!(v["content"][0]["text"], "one. ");
    assert_eq!(
        (v["stop_reason"].as_str(), v["stop_sequence"].as_str()),
        (Some("stop_sequence"), Some("two"))
    );
    let v = anthropic(json!({"messages": say(text), "stop_sequences": ["four"]}));
    assert_eq!(
        (v["stop_reason"].as_str(), v["stop_sequence"].clone()),
        (Some("end_turn"), Value::Null)
    );
}

fn stream(p: Provider, body: Value) -> Vec<(Option<String>, Value)> {
    let a = send(p, &body);
    assert_eq!(a.status(), Some(200), "{body}");
    events(&a)
}

#[test]
fn an_openai_stream_is_role_deltas_finish_done() {
    let body = with(
        &openai_body(),
        json!({"stream": true, "messages": say("a b c")}),
    );
    let ev = stream(Provider::OpenAi, body.clone());
    assert!(
        ev.iter().all(|(name, _)| name.is_none()),
        "data-only events"
    );
    assert_eq!(ev.last().unwrap().1, "[DONE]");
    let chunks: Vec<&Value> = ev[..ev.len() - 1].iter().map(|(_, d)| d).collect();
    let id = chunks[0]["id"].as_str().unwrap();
    for c in &chunks {
        assert_eq!(
            (c["id"].as_str(), c["object"].as_str()),
            (Some(id), Some("chat.completion.chunk"))
        );
        assert_eq!(
            (c["created"].as_u64(), c["model"].as_str()),
            (Some(WALL_START), Some("gpt-4o-mini"))
        );
        assert_eq!(c["system_fingerprint"], "fp_steadfast_mock");
        assert!(c["obfuscation"].is_string(), "obfuscation on by default");
        assert!(c.get("usage").is_none(), "no usage without include_usage");
    }
    let deltas: Vec<Value> = chunks
        .iter()
        .map(|c| c["choices"][0]["delta"].clone())
        .collect();
    assert_eq!(
        deltas[0],
        json!({"role": "assistant", "content": "", "refusal": null})
    );
    let text: String = deltas[1..deltas.len() - 1]
        .iter()
        .map(|d| d["content"].as_str().unwrap())
        .collect();
    assert_eq!(text, "a b c");
    assert_eq!(deltas.last().unwrap(), &json!({}));
    let finishes: Vec<Value> = chunks
        .iter()
        .map(|c| c["choices"][0]["finish_reason"].clone())
        .collect();
    assert!(finishes[..finishes.len() - 1].iter().all(Value::is_null));
    assert_eq!(finishes.last().unwrap(), "stop");
    assert!(
        chunks
            .iter()
            .all(|c| c["choices"][0]["logprobs"].is_null() && c["choices"][0]["index"] == 0)
    );
}

#[test]
fn include_usage_adds_the_usage_chunk_before_done() {
    let body = with(
        &openai_body(),
        json!({"stream": true, "messages": say("a b c"),
        "stream_options": {"include_usage": true, "include_obfuscation": false}}),
    );
    let ev = stream(Provider::OpenAi, body);
    let n = ev.len();
    assert_eq!(ev[n - 1].1, "[DONE]");
    let usage = &ev[n - 2].1;
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        (
            usage["usage"]["prompt_tokens"].as_u64(),
            usage["usage"]["completion_tokens"].as_u64()
        ),
        (Some(2), Some(2))
    );
    assert_eq!(usage["usage"]["total_tokens"], 4);
    assert_eq!(ev[n - 3].1["choices"][0]["finish_reason"], "stop");
    for (_, c) in &ev[..n - 2] {
        assert!(
            c["usage"].is_null() && c.get("usage").is_some(),
            "usage: null on every other chunk"
        );
        assert!(c.get("obfuscation").is_none());
    }
}

#[test]
fn an_openai_stream_cut_at_max_tokens_finishes_with_length() {
    let body = with(
        &openai_body(),
        json!({"stream": true, "max_tokens": 1, "messages": say("abcdefgh")}),
    );
    let ev = stream(Provider::OpenAi, body);
    assert_eq!(ev[1].1["choices"][0]["delta"]["content"], "abcd");
    assert_eq!(ev[ev.len() - 2].1["choices"][0]["finish_reason"], "length");
}

fn names(ev: &[(Option<String>, Value)]) -> Vec<&str> {
    ev.iter().map(|(n, _)| n.as_deref().unwrap()).collect()
}

#[test]
fn an_anthropic_stream_has_the_documented_events_in_order() {
    let body = with(
        &anthropic_body(),
        json!({"stream": true, "messages": say("a b c")}),
    );
    let ev = stream(Provider::Anthropic, body);
    let n = names(&ev);
    assert_eq!(n[..3], ["message_start", "content_block_start", "ping"]);
    assert_eq!(
        n[n.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    assert!(
        n[3..n.len() - 3]
            .iter()
            .all(|e| *e == "content_block_delta")
    );
    for (name, data) in &ev {
        assert_eq!(
            data["type"].as_str(),
            name.as_deref(),
            "each event's data names its type"
        );
    }
    let start = &ev[0].1["message"];
    assert!(start["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        (start["type"].as_str(), start["role"].as_str()),
        (Some("message"), Some("assistant"))
    );
    assert_eq!(
        (start["content"].clone(), start["stop_reason"].clone()),
        (json!([]), Value::Null)
    );
    assert_eq!(
        (
            start["usage"]["input_tokens"].as_u64(),
            start["usage"]["output_tokens"].as_u64()
        ),
        (Some(2), Some(1))
    );
    assert_eq!(
        ev[1].1,
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    );
    let text: String = ev[3..ev.len() - 3]
        .iter()
        .map(|(_, d)| {
            assert_eq!(
                (d["index"].as_u64(), d["delta"]["type"].as_str()),
                (Some(0), Some("text_delta"))
            );
            d["delta"]["text"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(text, "a b c");
    assert_eq!(
        ev[ev.len() - 3].1,
        json!({"type": "content_block_stop", "index": 0})
    );
    assert_eq!(
        ev[ev.len() - 2].1,
        json!({"type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 2}})
    );
}

#[test]
fn an_anthropic_stream_tells_the_stop_sequence_and_max_tokens() {
    let body = with(
        &anthropic_body(),
        json!({"stream": true, "messages": say("a b c"), "stop_sequences": [" c"]}),
    );
    let ev = stream(Provider::Anthropic, body);
    assert_eq!(
        ev[ev.len() - 2].1["delta"],
        json!({"stop_reason": "stop_sequence", "stop_sequence": " c"})
    );
    let body = with(
        &anthropic_body(),
        json!({"stream": true, "messages": say("a b c"), "max_tokens": 0}),
    );
    let ev = stream(Provider::Anthropic, body);
    assert_eq!(
        names(&ev),
        ["message_start", "ping", "message_delta", "message_stop"]
    );
    assert_eq!(ev[2].1["delta"]["stop_reason"], "max_tokens");
    assert_eq!(ev[2].1["usage"]["output_tokens"], 0);
}

#[test]
fn a_stream_error_ends_the_stream_with_the_providers_error_event() {
    let mut u = fresh();
    u.push_faults([
        steadfast_upstream::Fault::StreamError { after_events: 3 },
        steadfast_upstream::Fault::StreamError { after_events: 2 },
        steadfast_upstream::Fault::StreamError { after_events: 0 },
    ]);
    let body = with(
        &anthropic_body(),
        json!({"stream": true, "messages": say("a b c")}),
    );
    let a = send_to(&mut u, Provider::Anthropic, &body);
    assert_eq!(a.status(), Some(200));
    let ev = events(&a);
    assert_eq!(
        names(&ev),
        ["message_start", "content_block_start", "ping", "error"]
    );
    assert_eq!(
        ev[3].1,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
    let body = with(
        &openai_body(),
        json!({"stream": true, "messages": say("a b c")}),
    );
    let ev = events(&send_to(&mut u, Provider::OpenAi, &body));
    assert_eq!(ev.len(), 3);
    assert_eq!(ev[2].1["error"]["type"], "server_error");
    assert!(ev[2].1["error"]["param"].is_null() && ev[2].1.get("choices").is_none());
    // Without a stream: the overloaded status.
    let a = send_to(&mut u, Provider::Anthropic, &anthropic_body());
    assert_eq!(a.status(), Some(529));
    assert_eq!(u.stats().processed, 0, "no work done");
}
