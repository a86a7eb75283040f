//! Anthropic's Messages rules, one body breaking each: the exact 400 (pydantic-style
//! messages, several joined by `; `), and valid bodies served.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::*;
use serde_json::{Value, json};
use steadfast_core::provider::Provider;

fn tool() -> Value {
    json!({"name": "get_weather", "description": "Weather of a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
}

fn use_turn(id: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": "let me see"},
        {"type": "tool_use", "id": id, "name": "get_weather", "input": {"city": "Paris"}}]})
}

fn result_turn(id: &str) -> Value {
    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "sunny"}]})
}

fn messages(list: Value) -> Value {
    with(&anthropic_body(), json!({"messages": list}))
}

fn block(b: Value) -> Value {
    messages(json!([{"role": "user", "content": [b]}]))
}

/// (what, body, message).
fn cases() -> Vec<(&'static str, Value, &'static str)> {
    let b = anthropic_body();
    let hi = json!({"role": "user", "content": "hi"});
    vec![
        (
            "issue 14's body",
            json!({"model": "claude-sonnet-4-5", "stop": ["\n"],
            "messages": [{"role": "system", "content": "be brief"}, hi]}),
            "max_tokens: Field required; stop: Extra inputs are not permitted; messages.0.role: Input should be 'user' or 'assistant'",
        ),
        (
            "an OpenAI body with tools",
            json!({"model": "gpt-4o", "stop": "\n", "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}),
            "max_tokens: Field required; stop: Extra inputs are not permitted; tools.0: Input tag 'function' found using 'type' does not match any of the expected tags: 'custom'",
        ),
        (
            "no model",
            with(&b, json!({"model": null})),
            "model: Field required",
        ),
        (
            "no messages",
            with(&b, json!({"messages": null})),
            "messages: Field required",
        ),
        (
            "nothing",
            json!({}),
            "model: Field required; max_tokens: Field required; messages: Field required",
        ),
        (
            "an unknown field",
            with(&b, json!({"n": 1})),
            "n: Extra inputs are not permitted",
        ),
        (
            "a beta field",
            with(&b, json!({"context_management": {}})),
            "context_management: Extra inputs are not permitted",
        ),
        (
            "model a number",
            with(&b, json!({"model": 1})),
            "model: Input should be a valid string",
        ),
        (
            "max_tokens a string",
            with(&b, json!({"max_tokens": "64"})),
            "max_tokens: Input should be a valid integer",
        ),
        (
            "max_tokens below 0",
            with(&b, json!({"max_tokens": -1})),
            "max_tokens: Input should be greater than or equal to 0",
        ),
        (
            "temperature a string",
            with(&b, json!({"temperature": "hot"})),
            "temperature: Input should be a valid number",
        ),
        (
            "temperature above 1",
            with(&b, json!({"temperature": 1.5})),
            "temperature: range: 0..1",
        ),
        (
            "top_k a decimal",
            with(&b, json!({"top_k": 1.5})),
            "top_k: Input should be a valid integer",
        ),
        (
            "stream a string",
            with(&b, json!({"stream": "yes"})),
            "stream: Input should be a valid boolean",
        ),
        (
            "stop_sequences a string",
            with(&b, json!({"stop_sequences": "\n"})),
            "stop_sequences: Input should be a valid list",
        ),
        (
            "a stop sequence a number",
            with(&b, json!({"stop_sequences": [1]})),
            "stop_sequences.0: Input should be a valid string",
        ),
        (
            "system a number",
            with(&b, json!({"system": 1})),
            "system: Input should be a valid list",
        ),
        (
            "a system block of an empty text",
            with(&b, json!({"system": [{"type": "text", "text": ""}]})),
            "system: text content blocks must be non-empty",
        ),
        (
            "metadata with another member",
            with(&b, json!({"metadata": {"user": "u"}})),
            "metadata.user: Extra inputs are not permitted",
        ),
        (
            "an unknown service tier",
            with(&b, json!({"service_tier": "flex"})),
            "service_tier: Input should be 'auto' or 'standard_only'",
        ),
        (
            "a small thinking budget",
            with(
                &b,
                json!({"thinking": {"type": "enabled", "budget_tokens": 100}}),
            ),
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        ),
        (
            "thinking without budget",
            with(&b, json!({"thinking": {"type": "enabled"}})),
            "thinking.enabled.budget_tokens: Field required",
        ),
        (
            "an unknown cache type",
            with(&b, json!({"cache_control": {"type": "persistent"}})),
            "cache_control: Input tag 'persistent' found using 'type' does not match any of the expected tags: 'ephemeral'",
        ),
        (
            "several fields at once",
            with(&b, json!({"temperature": "hot", "top_k": "3"})),
            "top_k: Input should be a valid integer; temperature: Input should be a valid number",
        ),
        (
            "messages not a list",
            messages(json!("hi")),
            "messages: Input should be a valid list",
        ),
        (
            "no message",
            messages(json!([])),
            "messages: at least one message is required",
        ),
        (
            "a message not an object",
            messages(json!(["hi"])),
            "messages.0: Input should be a valid dictionary",
        ),
        (
            "a message without content",
            messages(json!([{"role": "user"}])),
            "messages.0.content: Field required",
        ),
        (
            "a message with a name",
            messages(json!([{"role": "user", "content": "hi", "name": "bob"}])),
            "messages.0.name: Extra inputs are not permitted",
        ),
        (
            "a system message",
            messages(json!([{"role": "system", "content": "x"}, hi])),
            "messages.0.role: Input should be 'user' or 'assistant'",
        ),
        (
            "a tool message",
            messages(json!([hi, {"role": "tool", "content": "x"}])),
            "messages.1.role: Input should be 'user' or 'assistant'",
        ),
        (
            "faults in two messages",
            messages(json!([{"role": "system", "content": "x"}, {"role": "user", "content": 3}])),
            "messages.0.role: Input should be 'user' or 'assistant'; messages.1.content: Input should be a valid list",
        ),
        (
            "content a number",
            messages(json!([{"role": "user", "content": 3}])),
            "messages.0.content: Input should be a valid list",
        ),
        (
            "an empty turn",
            messages(
                json!([{"role": "user", "content": ""}, {"role": "assistant", "content": "x"}]),
            ),
            "messages.0: all messages must have non-empty content except for the optional final assistant message",
        ),
        (
            "a block without type",
            block(json!({"text": "hi"})),
            "messages.0.content.0: Unable to extract tag using discriminator 'type'",
        ),
        (
            "a block not an object",
            block(json!("hi")),
            "messages.0.content.0: Input should be a valid dictionary or object to extract fields from",
        ),
        (
            "OpenAI's image part",
            block(json!({"type": "image_url", "image_url": {"url": "u"}})),
            "messages.0.content.0: Input tag 'image_url' found using 'type' does not match any of the expected tags: 'bash_code_execution_tool_result', 'code_execution_tool_result', 'container_upload', 'document', 'image', 'mid_conv_system', 'redacted_thinking', 'search_result', 'server_tool_use', 'text', 'text_editor_code_execution_tool_result', 'thinking', 'tool_result', 'tool_search_tool_result', 'tool_use', 'web_fetch_tool_result', 'web_search_tool_result'",
        ),
        (
            "a text block without text",
            block(json!({"type": "text"})),
            "messages.0.content.0.text.text: Field required",
        ),
        (
            "a text block with more",
            block(json!({"type": "text", "text": "hi", "foo": 1})),
            "messages.0.content.0.text.foo: Extra inputs are not permitted",
        ),
        (
            "an empty text block",
            block(json!({"type": "text", "text": ""})),
            "messages: text content blocks must be non-empty",
        ),
        (
            "an image of another type",
            block(
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "AA"}}),
            ),
            "messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
        ),
        (
            "an image from a file",
            block(json!({"type": "image", "source": {"type": "file", "file_id": "f"}})),
            "messages.0.content.0.image.source: Input tag 'file' found using 'type' does not match any of the expected tags: 'base64', 'url'",
        ),
        (
            "a tool use without input",
            messages(
                json!([hi, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f"}]}]),
            ),
            "messages.1.content.0.tool_use.input: Field required",
        ),
        (
            "a tool use of a string input",
            messages(
                json!([hi, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": "{}"}]}]),
            ),
            "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
        ),
        (
            "a tool result without id",
            messages(
                json!([hi, use_turn("toolu_1"), {"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]),
            ),
            "messages.2.content.0.tool_result.tool_use_id: Field required",
        ),
        (
            "a tool result answering nothing",
            messages(json!([result_turn("toolu_1")])),
            "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
        ),
        (
            "a tool result answering another id",
            messages(json!([hi, use_turn("toolu_1"), result_turn("toolu_2")])),
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        ),
        (
            "an extra tool result",
            messages(
                json!([hi, use_turn("toolu_1"), {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "rain"}]}]),
            ),
            "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_2. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
        ),
        (
            "a tool use left unanswered",
            messages(json!([hi, use_turn("toolu_1"), {"role": "user", "content": "and?"}])),
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        ),
        (
            "tools not a list",
            with(&b, json!({"tools": {}})),
            "tools: Input should be a valid list",
        ),
        (
            "a tool without schema",
            with(&b, json!({"tools": [{"name": "f"}]})),
            "tools.0.custom.input_schema: Field required",
        ),
        (
            "a tool of a bad name",
            with(
                &b,
                json!({"tools": [{"name": "get weather", "input_schema": {}}]}),
            ),
            "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'",
        ),
        (
            "a tool with more",
            with(
                &b,
                json!({"tools": [{"name": "f", "input_schema": {}, "parameters": {}}]}),
            ),
            "tools.0.custom.parameters: Extra inputs are not permitted",
        ),
        (
            "tool_choice a string",
            with(&b, json!({"tools": [tool()], "tool_choice": "auto"})),
            "tool_choice: Input should be a valid dictionary or object to extract fields from",
        ),
        (
            "OpenAI's tool_choice",
            with(
                &b,
                json!({"tools": [tool()], "tool_choice": {"type": "required"}}),
            ),
            "tool_choice: Input tag 'required' found using 'type' does not match any of the expected tags: 'any', 'auto', 'none', 'tool'",
        ),
        (
            "a tool choice without name",
            with(
                &b,
                json!({"tools": [tool()], "tool_choice": {"type": "tool"}}),
            ),
            "tool_choice.tool.name: Field required",
        ),
    ]
}

#[test]
fn each_rule_is_answered_with_anthropics_400() {
    let mut wrong = Vec::new();
    for (what, body, message) in cases() {
        let got = anthropic_refusal(&body);
        if got != message {
            wrong.push(format!("{what}: {got}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_refusal_is_the_real_body() {
    let a = send(
        Provider::Anthropic,
        &with(&anthropic_body(), json!({"max_tokens": null})),
    );
    let id = a.header("request-id").unwrap();
    let expected = json!({"type": "error", "request_id": id,
        "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"}});
    assert_eq!(json_of(&a), expected);
}

#[test]
fn valid_bodies_are_served() {
    let b = anthropic_body();
    let hi = json!({"role": "user", "content": "hi"});
    for body in [
        b.clone(),
        with(
            &b,
            json!({"system": "be brief", "temperature": 0.5, "top_p": 0.9, "top_k": 5,
            "stop_sequences": ["\n\nHuman:"], "metadata": {"user_id": "u-1"}, "service_tier": "auto", "stream": true}),
        ),
        with(
            &b,
            json!({"system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}),
        ),
        with(
            &b,
            json!({"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 4096}),
        ),
        with(
            &b,
            json!({"tools": [tool()], "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
            "messages": [hi, use_turn("toolu_1"), result_turn("toolu_1")]}),
        ),
        with(
            &b,
            json!({"tools": [tool(), {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}],
            "tool_choice": {"type": "tool", "name": "get_weather"}}),
        ),
        messages(
            json!([{"role": "user", "content": [{"type": "text", "text": "what is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]),
        ),
        messages(json!([hi, {"role": "assistant", "content": ""}])),
        with(&b, json!({"max_tokens": 0})),
    ] {
        let a = send(Provider::Anthropic, &body);
        assert_eq!(
            a.status(),
            Some(200),
            "{body}: {}",
            String::from_utf8_lossy(&bytes(&a))
        );
    }
}
