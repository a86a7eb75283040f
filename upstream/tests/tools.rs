//! Tool-call answers: when the upstream calls a tool, in which shape, and a client's
//! whole round trip (tool call, tool result, text) for both providers.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::*;
use serde_json::{Value, json};
use steadfast_core::provider::Provider;
use steadfast_upstream::{Fault, Upstream};

const AUTO: &str =
    "[[endpoints]]\nname = \"tools\"\ntool_use = \"auto\"\nlatency = { fixed = \"0s\" }\n";

fn schema() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
           "required": ["city"]})
}

fn openai_tools() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather", "parameters": schema()}},
           {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}])
}

fn anthropic_tools() -> Value {
    json!([{"name": "get_weather", "input_schema": schema()},
           {"name": "get_time", "input_schema": {"type": "object", "properties": {}}}])
}

fn ok_json(u: &mut Upstream, p: Provider, body: &Value) -> Value {
    let a = send_to(u, p, body);
    assert_eq!(
        a.status(),
        Some(200),
        "{body}: {}",
        String::from_utf8_lossy(&bytes(&a))
    );
    json_of(&a)
}

#[test]
fn an_openai_round_trip_is_a_tool_call_then_text() {
    let mut u = fresh();
    let ask = json!([{"role": "user", "content": "Paris"}]);
    let body = with(
        &openai_body(),
        json!({"messages": ask, "tools": openai_tools(), "tool_choice": "required"}),
    );
    let v = ok_json(&mut u, Provider::OpenAi, &body);
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    let message = &choice["message"];
    assert_eq!(
        (message["role"].as_str(), message["content"].clone()),
        (Some("assistant"), Value::Null)
    );
    let call = &message["tool_calls"][0];
    let id = call["id"].as_str().unwrap();
    assert!(id.starts_with("call_") && id.len() == 29, "{id}");
    assert_eq!(
        (call["type"].as_str(), call["function"]["name"].as_str()),
        (Some("function"), Some("get_weather"))
    );
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Paris"}));
    assert_eq!(message["tool_calls"].as_array().unwrap().len(), 1);
    // The client runs the tool and sends its result back, with the assistant's turn.
    let mut turns = ask.as_array().unwrap().clone();
    turns.push(message.clone());
    turns.push(json!({"role": "tool", "tool_call_id": id, "content": "sunny, 21 C"}));
    let body = with(
        &openai_body(),
        json!({"messages": turns, "tools": openai_tools()}),
    );
    let v = ok_json(&mut u, Provider::OpenAi, &body);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["choices"][0]["message"]["content"], "sunny, 21 C");
    assert!(v["choices"][0]["message"].get("tool_calls").is_none());
}

#[test]
fn an_anthropic_round_trip_is_a_tool_use_then_text() {
    let mut u = fresh();
    let ask = json!([{"role": "user", "content": "Paris"}]);
    let body = with(
        &anthropic_body(),
        json!({"messages": ask, "tools": anthropic_tools(),
        "tool_choice": {"type": "tool", "name": "get_weather"}}),
    );
    let v = ok_json(&mut u, Provider::Anthropic, &body);
    assert_eq!(
        (v["stop_reason"].as_str(), v["stop_sequence"].clone()),
        (Some("tool_use"), Value::Null)
    );
    let content = v["content"].as_array().unwrap();
    assert_eq!(content.len(), 1);
    let id = content[0]["id"].as_str().unwrap();
    assert!(id.starts_with("toolu_") && id.len() == 30, "{id}");
    assert_eq!(
        content[0],
        json!({"type": "tool_use", "id": id, "name": "get_weather", "input": {"city": "Paris"}})
    );
    let body = with(
        &anthropic_body(),
        json!({"tools": anthropic_tools(), "messages": [
            ask[0].clone(),
            {"role": "assistant", "content": v["content"].clone()},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "sunny, 21 C"}]}
        ]}),
    );
    let v = ok_json(&mut u, Provider::Anthropic, &body);
    assert_eq!(v["stop_reason"], "end_turn");
    assert_eq!(
        v["content"],
        json!([{"type": "text", "text": "sunny, 21 C"}])
    );
}

#[test]
fn tool_choice_decides_unless_the_endpoint_calls_tools_on_its_own() {
    let openai = |choice: Value| {
        with(
            &openai_body(),
            json!({"tools": openai_tools(), "tool_choice": choice}),
        )
    };
    let finish = |u: &mut Upstream, body: &Value| {
        ok_json(u, Provider::OpenAi, body)["choices"][0]["finish_reason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // The default endpoint calls a tool only when told to.
    let mut u = fresh();
    assert_eq!(finish(&mut u, &openai(json!("auto"))), "stop");
    assert_eq!(finish(&mut u, &openai(json!(null))), "stop");
    let named = openai(json!({"type": "function", "function": {"name": "get_time"}}));
    let v = ok_json(&mut u, Provider::OpenAi, &named);
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "get_time"
    );
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        "{}"
    );
    // `tool_use = "auto"`: a call whenever tools are offered, but never against `none`.
    let mut u = of_toml(AUTO);
    assert_eq!(finish(&mut u, &openai(json!("auto"))), "tool_calls");
    assert_eq!(finish(&mut u, &openai(json!(null))), "tool_calls");
    assert_eq!(finish(&mut u, &openai(json!("none"))), "stop");
    assert_eq!(finish(&mut u, &openai_body()), "stop");
    let anthropic = with(&anthropic_body(), json!({"tools": anthropic_tools()}));
    assert_eq!(
        ok_json(&mut u, Provider::Anthropic, &anthropic)["stop_reason"],
        "tool_use"
    );
    let none = with(&anthropic, json!({"tool_choice": {"type": "none"}}));
    assert_eq!(
        ok_json(&mut u, Provider::Anthropic, &none)["stop_reason"],
        "end_turn"
    );
}

#[test]
fn an_auto_endpoint_answers_a_tool_result_with_text() {
    let mut u = of_toml(AUTO);
    let body = with(
        &anthropic_body(),
        json!({"tools": anthropic_tools(), "messages": [
            {"role": "user", "content": "Paris"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "rain"}]}]}
        ]}),
    );
    let v = ok_json(&mut u, Provider::Anthropic, &body);
    assert_eq!(
        (v["stop_reason"].as_str(), v["content"][0]["text"].as_str()),
        (Some("end_turn"), Some("rain"))
    );
}

#[test]
fn a_scripted_tool_call_names_its_tool() {
    let mut u = fresh();
    u.push_faults([
        Fault::ToolCall {
            name: Some("get_time".into()),
        },
        Fault::ToolCall { name: None },
    ]);
    let body = with(&anthropic_body(), json!({"tools": anthropic_tools()}));
    let v = ok_json(&mut u, Provider::Anthropic, &body);
    assert_eq!(v["content"][0]["name"], "get_time");
    let v = ok_json(&mut u, Provider::Anthropic, &body);
    assert_eq!(v["content"][0]["name"], "get_weather");
    let v = ok_json(&mut u, Provider::Anthropic, &body);
    assert_eq!(v["stop_reason"], "end_turn", "the script is spent");
}

#[test]
fn tool_calls_are_deterministic() {
    let body = with(
        &openai_body(),
        json!({"tools": openai_tools(), "tool_choice": "required"}),
    );
    let once = bytes(&send(Provider::OpenAi, &body));
    assert_eq!(once, bytes(&send(Provider::OpenAi, &body)));
}

#[test]
fn an_openai_tool_call_streams_its_arguments() {
    let body = with(
        &openai_body(),
        json!({"stream": true, "messages": [{"role": "user", "content": "Paris"}],
        "tools": openai_tools(), "tool_choice": "required"}),
    );
    let ev = events(&send(Provider::OpenAi, &body));
    assert_eq!(ev.last().unwrap().1, "[DONE]");
    let deltas: Vec<Value> = ev[..ev.len() - 1]
        .iter()
        .map(|(_, c)| c["choices"][0]["delta"].clone())
        .collect();
    let first = &deltas[0];
    assert_eq!(
        (first["role"].as_str(), first["content"].clone()),
        (Some("assistant"), Value::Null)
    );
    let call = &first["tool_calls"][0];
    assert_eq!(call["index"], 0);
    assert!(call["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(
        (call["type"].as_str(), call["function"]["name"].as_str()),
        (Some("function"), Some("get_weather"))
    );
    assert_eq!(call["function"]["arguments"], "");
    let args: String = deltas[1..deltas.len() - 1]
        .iter()
        .map(|d| {
            assert_eq!(d["tool_calls"][0]["index"], 0);
            assert!(d["tool_calls"][0].get("id").is_none());
            d["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({"city": "Paris"})
    );
    assert_eq!(
        ev[ev.len() - 2].1["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[test]
fn an_anthropic_tool_use_streams_input_json_deltas() {
    let body = with(
        &anthropic_body(),
        json!({"stream": true, "messages": [{"role": "user", "content": "Paris"}],
        "tools": anthropic_tools(), "tool_choice": {"type": "any"}}),
    );
    let ev = events(&send(Provider::Anthropic, &body));
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    assert_eq!(names[..3], ["message_start", "content_block_start", "ping"]);
    assert_eq!(
        names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    let start = &ev[1].1["content_block"];
    assert_eq!(
        (start["type"].as_str(), start["name"].as_str()),
        (Some("tool_use"), Some("get_weather"))
    );
    assert!(start["id"].as_str().unwrap().starts_with("toolu_"));
    assert_eq!(start["input"], json!({}));
    let partial: String = ev[3..ev.len() - 3]
        .iter()
        .map(|(_, d)| {
            assert_eq!(d["delta"]["type"], "input_json_delta");
            d["delta"]["partial_json"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&partial).unwrap(),
        json!({"city": "Paris"})
    );
    assert_eq!(
        ev[ev.len() - 2].1["delta"],
        json!({"stop_reason": "tool_use", "stop_sequence": null})
    );
}
