//! Canonical request → Anthropic request, field by field.

use serde_json::{Value, json};

use super::canonical;
use crate::chat::{
    DEFAULT_MAX_TOKENS, ToAnthropic, TranslateError, to_anthropic, to_anthropic_with,
};

/// Each case: a name, the canonical fields added to a minimal request, and the
/// Anthropic fields expected in the translation (`null`: the field is absent).
fn forward_cases() -> Vec<(&'static str, Value, Value)> {
    vec![
        (
            "one string system message is the system string",
            json!({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}),
            json!({"system": "Be brief.", "messages": [{"role": "user", "content": "Hi"}]}),
        ),
        (
            "system and developer messages are system text blocks",
            json!({"messages": [
                {"role": "system", "content": "A"},
                {"role": "developer", "content": [{"type": "text", "text": "B"}]},
                {"role": "user", "content": "Hi"}
            ]}),
            json!({"system": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]}),
        ),
        (
            "consecutive user turns are merged into one turn of blocks",
            json!({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}),
            json!({"messages": [{"role": "user", "content": [
                {"type": "text", "text": "a"}, {"type": "text", "text": "b"}
            ]}]}),
        ),
        (
            "a data: URL image is a base64 source",
            json!({"messages": [{"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}
            ]}]}),
            json!({"messages": [{"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
            ]}]}),
        ),
        (
            "an https image URL is a url source",
            json!({"messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg", "detail": "low"}}
            ]}]}),
            json!({"messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}}
            ]}]}),
        ),
        (
            "assistant tool calls are tool_use blocks and tool messages tool_result blocks",
            json!({"messages": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": "Looking.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "rain"},
                {"role": "user", "content": "Thanks"}
            ]}),
            json!({"messages": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "rain"},
                    {"type": "text", "text": "Thanks"}
                ]}
            ]}),
        ),
        (
            "empty tool call arguments are the empty input object",
            json!({"messages": [
                {"role": "user", "content": "Now?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "now", "arguments": ""}}
                ]},
                {"role": "tool", "tool_call_id": "c", "content": "noon"}
            ]}),
            json!({"messages": [
                {"role": "user", "content": "Now?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "now", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "noon"}]}
            ]}),
        ),
        (
            "no max_tokens is the default",
            json!({}),
            json!({"max_tokens": DEFAULT_MAX_TOKENS}),
        ),
        (
            "max_tokens",
            json!({"max_tokens": 12}),
            json!({"max_tokens": 12}),
        ),
        (
            "max_completion_tokens",
            json!({"max_completion_tokens": 34}),
            json!({"max_tokens": 34}),
        ),
        (
            "stop as a string",
            json!({"stop": "END"}),
            json!({"stop_sequences": ["END"]}),
        ),
        (
            "stop as an array",
            json!({"stop": ["a", "b"]}),
            json!({"stop_sequences": ["a", "b"]}),
        ),
        (
            "temperature",
            json!({"temperature": 0.5}),
            json!({"temperature": 0.5}),
        ),
        ("top_p", json!({"top_p": 0.9}), json!({"top_p": 0.9})),
        (
            "stream",
            json!({"stream": true, "stream_options": {"include_usage": true}}),
            json!({"stream": true, "stream_options": null}),
        ),
        (
            "user is metadata.user_id",
            json!({"user": "u-1"}),
            json!({"metadata": {"user_id": "u-1"}}),
        ),
        (
            "function tools are name, description and input_schema",
            json!({"tools": [
                {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}},
                {"type": "function", "function": {"name": "g"}}
            ]}),
            json!({"tools": [
                {"name": "f", "description": "d", "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}}},
                {"name": "g", "input_schema": {"type": "object", "properties": {}}}
            ]}),
        ),
        (
            "tool_choice auto",
            json!({"tool_choice": "auto"}),
            json!({"tool_choice": {"type": "auto"}}),
        ),
        (
            "tool_choice none",
            json!({"tool_choice": "none"}),
            json!({"tool_choice": {"type": "none"}}),
        ),
        (
            "tool_choice required is any",
            json!({"tool_choice": "required"}),
            json!({"tool_choice": {"type": "any"}}),
        ),
        (
            "a named tool_choice is tool",
            json!({"tool_choice": {"type": "function", "function": {"name": "f"}}}),
            json!({"tool_choice": {"type": "tool", "name": "f"}}),
        ),
        (
            "parallel_tool_calls false disables parallel tool use",
            json!({"tools": [{"type": "function", "function": {"name": "f"}}], "parallel_tool_calls": false}),
            json!({"tool_choice": {"type": "auto", "disable_parallel_tool_use": true}}),
        ),
        (
            "harmless defaults pass",
            json!({"n": 1, "logprobs": false, "frequency_penalty": 0, "presence_penalty": 0.0, "logit_bias": {}, "response_format": {"type": "text"}}),
            json!({"n": null, "logprobs": null, "frequency_penalty": null}),
        ),
    ]
}

#[test]
fn canonical_fields_become_their_anthropic_equivalents() {
    for (name, extra, expected) in forward_cases() {
        let out = to_anthropic(&canonical(extra)).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (key, want) in expected.as_object().into_iter().flatten() {
            let got = out.get(key).unwrap_or(&Value::Null);
            assert_eq!(got, want, "{name}: `{key}` in {out}");
        }
    }
}

/// Each case: the canonical fields added to a minimal request, and the field the error
/// must name.
fn refused_cases() -> Vec<(Value, &'static str)> {
    let user_part = |part: Value| json!({"messages": [{"role": "user", "content": [part]}]});
    vec![
        (json!({"n": 2}), "n"),
        (json!({"logprobs": true}), "logprobs"),
        (json!({"top_logprobs": 3}), "top_logprobs"),
        (json!({"frequency_penalty": 0.5}), "frequency_penalty"),
        (json!({"presence_penalty": -1}), "presence_penalty"),
        (json!({"seed": 42}), "seed"),
        (json!({"logit_bias": {"50256": -100}}), "logit_bias"),
        (
            json!({"audio": {"voice": "alloy", "format": "mp3"}}),
            "audio",
        ),
        (json!({"modalities": ["text", "audio"]}), "modalities"),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}),
            "response_format",
        ),
        (json!({"reasoning_effort": "high"}), "reasoning_effort"),
        (json!({"some_future_field": 1}), "some_future_field"),
        (json!({"temperature": 1.5}), "temperature"),
        (
            json!({"tools": [{"type": "custom", "custom": {"name": "x"}}]}),
            "tools[0].type",
        ),
        (
            json!({"tools": [{"type": "function", "function": {"name": "f", "strict": true}}]}),
            "tools[0].function.strict",
        ),
        (json!({"metadata": {"team": "a"}}), "metadata.team"),
        (
            user_part(
                json!({"type": "input_audio", "input_audio": {"data": "x", "format": "wav"}}),
            ),
            "messages[0].content[0].type",
        ),
        (
            user_part(
                json!({"type": "image_url", "image_url": {"url": "data:image/bmp;base64,Qk0"}}),
            ),
            "messages[0].content[0].image_url.url",
        ),
        (
            user_part(json!({"type": "text", "text": "x", "cache": true})),
            "messages[0].content[0].cache",
        ),
        (
            json!({"messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "late"}, {"role": "user", "content": "b"}]}),
            "messages[1].role",
        ),
        (
            json!({"messages": [{"role": "user", "content": "a", "name": "ann"}]}),
            "messages[0].name",
        ),
        (
            json!({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "prefill"}]}),
            "messages[1].role",
        ),
        (
            json!({"messages": [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "a"}]}),
            "messages[0].role",
        ),
        (
            json!({"messages": [
                {"role": "user", "content": "a"},
                {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "[1]"}}]},
                {"role": "tool", "tool_call_id": "c", "content": "x"}
            ]}),
            "messages[1].tool_calls[0].function.arguments",
        ),
    ]
}

#[test]
fn untranslatable_fields_are_errors_naming_the_field() {
    for (extra, field) in refused_cases() {
        let req = canonical(extra.clone());
        match to_anthropic(&req) {
            Err(e) => assert_eq!(e.field(), field, "{extra}: {e}"),
            Ok(out) => panic!("{extra} was translated: {out}"),
        }
    }
}

#[test]
fn disagreeing_limits_and_users_are_conflicts() {
    let cases = [
        (
            json!({"max_tokens": 5, "max_completion_tokens": 6}),
            "max_tokens",
        ),
        (
            json!({"user": "a", "metadata": {"user_id": "b"}}),
            "metadata.user_id",
        ),
    ];
    for (extra, field) in cases {
        let e = to_anthropic(&canonical(extra)).unwrap_err();
        assert!(matches!(&e, TranslateError::Conflict { .. }), "{e}");
        assert_eq!(e.field(), field);
    }
}

#[test]
fn the_options_set_the_default_limit_and_clamp_the_temperature() {
    let options = ToAnthropic {
        default_max_tokens: 777,
        clamp_temperature: true,
    };
    let out = to_anthropic_with(&canonical(json!({"temperature": 2.0})), &options).unwrap();
    assert_eq!(out["max_tokens"], 777);
    assert_eq!(out["temperature"], 1.0);
}

#[test]
fn wrong_types_name_the_field_and_what_it_must_be() {
    let cases = [
        (json!({"stop": 5}), "stop"),
        (json!({"max_tokens": -1}), "max_tokens"),
        (json!({"max_tokens": 0}), "max_tokens"),
        (json!({"top_p": 1.5}), "top_p"),
        (json!({"messages": "Hi"}), "messages"),
        (
            json!({"messages": [{"role": "robot", "content": "x"}]}),
            "messages[0].role",
        ),
        (
            json!({"messages": [{"role": "tool", "content": "x"}]}),
            "messages[0].tool_call_id",
        ),
        (
            json!({"messages": [{"role": "user", "content": []}]}),
            "messages[0].content",
        ),
    ];
    for (extra, field) in cases {
        let e = to_anthropic(&canonical(extra.clone())).unwrap_err();
        assert_eq!(e.field(), field, "{extra}: {e}");
    }
}

#[test]
fn wants_usage_reads_stream_options() {
    use crate::chat::wants_usage;
    assert!(wants_usage(
        &json!({"stream_options": {"include_usage": true}})
    ));
    assert!(!wants_usage(
        &json!({"stream_options": {"include_usage": false}})
    ));
    assert!(!wants_usage(&json!({"stream": true})));
}
