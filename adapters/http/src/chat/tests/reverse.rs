//! Anthropic request → canonical request, field by field.

use serde_json::{Value, json};

use super::anthropic;
use crate::chat::from_anthropic_request;

/// Each case: a name, the Anthropic fields added to a minimal request, and the
/// canonical fields expected (`null`: absent).
fn cases() -> Vec<(&'static str, Value, Value)> {
    vec![
        (
            "system is a leading system message",
            json!({"system": "Be brief."}),
            json!({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}),
        ),
        (
            "system blocks are one system message each",
            json!({"system": [{"type": "text", "text": "A"}, {"type": "text", "text": "B", "cache_control": {"type": "ephemeral"}}]}),
            json!({"messages": [
                {"role": "system", "content": "A"}, {"role": "system", "content": "B"},
                {"role": "user", "content": "Hi"}
            ]}),
        ),
        (
            "max_tokens is max_completion_tokens",
            json!({"max_tokens": 64}),
            json!({"max_completion_tokens": 64, "max_tokens": null}),
        ),
        (
            "stop_sequences is stop",
            json!({"stop_sequences": ["x"]}),
            json!({"stop": ["x"]}),
        ),
        (
            "temperature and top_p",
            json!({"temperature": 0.2, "top_p": 0.8}),
            json!({"temperature": 0.2, "top_p": 0.8}),
        ),
        (
            "a stream asks for the usage chunk",
            json!({"stream": true}),
            json!({"stream": true, "stream_options": {"include_usage": true}}),
        ),
        (
            "metadata.user_id is user",
            json!({"metadata": {"user_id": "u"}}),
            json!({"user": "u", "metadata": null}),
        ),
        (
            "tools are function tools",
            json!({"tools": [{"name": "f", "description": "d", "input_schema": {"type": "object"}}]}),
            json!({"tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}]}),
        ),
        (
            "tool_choice any is required",
            json!({"tool_choice": {"type": "any"}}),
            json!({"tool_choice": "required"}),
        ),
        (
            "tool_choice tool is a named function, without parallel use",
            json!({"tool_choice": {"type": "tool", "name": "f", "disable_parallel_tool_use": true}}),
            json!({"tool_choice": {"type": "function", "function": {"name": "f"}}, "parallel_tool_calls": false}),
        ),
        (
            "tool_use and tool_result blocks are tool calls and tool messages",
            json!({"messages": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "w", "input": {"city": "Oslo"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "rain"}]},
                    {"type": "text", "text": "And?"}
                ]}
            ]}),
            json!({"messages": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Oslo\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "t1", "content": [{"type": "text", "text": "rain"}]},
                {"role": "user", "content": [{"type": "text", "text": "And?"}]}
            ]}),
        ),
        (
            "base64 image sources are data: URLs",
            json!({"messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"}}
            ]}]}),
            json!({"messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lG"}}
            ]}]}),
        ),
    ]
}

#[test]
fn anthropic_fields_become_their_canonical_equivalents() {
    for (name, extra, expected) in cases() {
        let out =
            from_anthropic_request(&anthropic(extra)).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (key, want) in expected.as_object().into_iter().flatten() {
            assert_eq!(
                out.get(key).unwrap_or(&Value::Null),
                want,
                "{name}: `{key}` in {out}"
            );
        }
    }
}

#[test]
fn what_openai_cannot_express_is_an_error_naming_the_field() {
    let cases = [
        (json!({"top_k": 5}), "top_k"),
        (
            json!({"thinking": {"type": "enabled", "budget_tokens": 1024}}),
            "thinking",
        ),
        (
            json!({"stop_sequences": ["1", "2", "3", "4", "5"]}),
            "stop_sequences",
        ),
        (
            json!({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
            "tools[0].type",
        ),
        (json!({"metadata": {"user_id": "u", "x": 1}}), "metadata.x"),
        (json!({"container": "c"}), "container"),
        (json!({"max_tokens": null}), "max_tokens"),
        (
            json!({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "prefill"}]}),
            "messages[1].role",
        ),
        (
            json!({"messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": "boom", "is_error": true}
            ]}]}),
            "messages[0].content[0].is_error",
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]}),
            "messages[0].content[0].type",
        ),
    ];
    for (extra, field) in cases {
        let e = from_anthropic_request(&anthropic(extra.clone())).unwrap_err();
        assert_eq!(e.field(), field, "{extra}: {e}");
    }
}
