//! Responses, stop reasons and usage, both ways.

use serde_json::{Value, json};

use crate::chat::{finish_reason, from_anthropic_response, stop_reason, to_anthropic_response};

fn message(content: Value, stop: &str, usage: Value) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage
    })
}

#[test]
fn every_stop_reason_has_a_finish_reason() {
    let cases = [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
    ];
    for (stop, finish) in cases {
        assert_eq!(finish_reason(stop), Ok(finish), "{stop}");
        let usage = json!({"input_tokens": 1, "output_tokens": 1});
        let out = from_anthropic_response(&message(json!([]), stop, usage), 0).unwrap();
        assert_eq!(out["choices"][0]["finish_reason"], finish, "{stop}");
    }
    assert_eq!(
        finish_reason("nonsense").unwrap_err().field(),
        "stop_reason"
    );
}

#[test]
fn every_finish_reason_has_a_stop_reason() {
    let cases = [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("tool_calls", "tool_use"),
        ("function_call", "tool_use"),
        ("content_filter", "refusal"),
    ];
    for (finish, stop) in cases {
        assert_eq!(stop_reason(finish), Ok(stop), "{finish}");
    }
    assert_eq!(stop_reason("eos").unwrap_err().field(), "finish_reason");
}

#[test]
fn usage_counts_cache_tokens_in_the_prompt() {
    let cases = [
        (
            json!({"input_tokens": 10, "output_tokens": 3}),
            json!({"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}),
        ),
        (
            json!({"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5}),
            json!({"prompt_tokens": 115, "completion_tokens": 3, "total_tokens": 118, "prompt_tokens_details": {"cached_tokens": 100}}),
        ),
    ];
    for (anthropic, openai) in cases {
        let out = from_anthropic_response(&message(json!([]), "end_turn", anthropic), 0).unwrap();
        assert_eq!(out["usage"], openai);
        let back = to_anthropic_response(&out).unwrap();
        let cached = openai
            .pointer("/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64);
        assert_eq!(back["usage"]["cache_read_input_tokens"].as_u64(), cached);
        assert_eq!(back["usage"]["output_tokens"], 3);
    }
}

#[test]
fn text_and_tool_use_blocks_are_content_and_tool_calls() {
    let content = json!([
        {"type": "text", "text": "Let me "},
        {"type": "text", "text": "check."},
        {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"city": "Oslo"}}
    ]);
    let usage = json!({"input_tokens": 1, "output_tokens": 2});
    let out = from_anthropic_response(&message(content, "tool_use", usage), 1_700_000_000).unwrap();
    assert_eq!(out["id"], "msg_1");
    assert_eq!(out["created"], 1_700_000_000);
    assert_eq!(out["model"], "claude");
    let m = &out["choices"][0]["message"];
    assert_eq!(m["content"], "Let me check.");
    assert_eq!(
        m["tool_calls"],
        json!([{"id": "toolu_1", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Oslo\"}"}}])
    );
}

#[test]
fn a_response_of_tool_calls_only_has_null_content() {
    let content = json!([{"type": "tool_use", "id": "t", "name": "f", "input": {}}]);
    let out = from_anthropic_response(&message(content, "tool_use", json!({})), 0).unwrap();
    assert_eq!(out["choices"][0]["message"]["content"], Value::Null);
}

#[test]
fn blocks_a_chat_completion_cannot_hold_are_refused() {
    let content = json!([{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "hm", "signature": "s"}]);
    let e = from_anthropic_response(&message(content, "end_turn", json!({})), 0).unwrap_err();
    assert_eq!(e.field(), "content[1].type");
}

#[test]
fn a_chat_completion_becomes_an_anthropic_message() {
    let done = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
            "role": "assistant", "content": "Sure.", "refusal": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]
        }}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13,
                  "prompt_tokens_details": {"cached_tokens": 2}}
    });
    let out = to_anthropic_response(&done).unwrap();
    assert_eq!(
        out["content"],
        json!([{"type": "text", "text": "Sure."}, {"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 1}}])
    );
    assert_eq!(out["stop_reason"], "tool_use");
    assert_eq!(
        out["usage"],
        json!({"input_tokens": 7, "output_tokens": 4, "cache_read_input_tokens": 2})
    );
}

#[test]
fn a_refusal_is_a_text_block_with_the_refusal_stop_reason() {
    let done = json!({"id": "c", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": null, "refusal": "I can't."}}]});
    let out = to_anthropic_response(&done).unwrap();
    assert_eq!(
        out["content"],
        json!([{"type": "text", "text": "I can't."}])
    );
    assert_eq!(out["stop_reason"], "refusal");
}

#[test]
fn what_an_anthropic_message_cannot_hold_is_refused() {
    let choice = json!({"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "x"}});
    let cases = [
        (
            json!({"id": "c", "choices": [choice.clone(), choice.clone()]}),
            "choices",
        ),
        (
            json!({"id": "c", "choices": [{"index": 0, "finish_reason": "stop", "logprobs": {"content": []},
                "message": {"role": "assistant", "content": "x"}}]}),
            "choices[0].logprobs",
        ),
        (json!({"id": "c"}), "choices"),
    ];
    for (body, field) in cases {
        assert_eq!(
            to_anthropic_response(&body).unwrap_err().field(),
            field,
            "{body}"
        );
    }
}
