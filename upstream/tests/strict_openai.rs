//! OpenAI's Chat Completions rules, one body breaking each: the exact 400 (message,
//! `param`, `code`), and valid bodies served.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::*;
use serde_json::{Value, json};
use steadfast_core::provider::Provider;

/// An assistant turn calling `call_1`, then its tool result.
fn round_trip() -> Value {
    json!([
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
    ])
}

fn tools() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])
}

fn user(content: Value) -> Value {
    with(
        &openai_body(),
        json!({"messages": [{"role": "user", "content": content}]}),
    )
}

/// (what, body, message, param, code).
fn cases() -> Vec<(&'static str, Value, &'static str, Value, Value)> {
    let b = openai_body();
    let null = Value::Null;
    let s = |x: &str| json!(x);
    vec![
        (
            "no model",
            with(&b, json!({"model": null})),
            "you must provide a model parameter",
            null.clone(),
            null.clone(),
        ),
        (
            "model not a string",
            with(&b, json!({"model": 4})),
            "Invalid type for 'model': expected a string, but got an integer instead.",
            s("model"),
            s("invalid_type"),
        ),
        (
            "no messages",
            with(&b, json!({"messages": null})),
            "Missing required parameter: 'messages'.",
            s("messages"),
            s("missing_required_parameter"),
        ),
        (
            "an unknown field",
            with(&b, json!({"foo": 1})),
            "Unrecognized request argument supplied: foo",
            null.clone(),
            null.clone(),
        ),
        (
            "unknown fields",
            with(&b, json!({"foo": 1, "bar": 2})),
            "Unrecognized request arguments supplied: bar, foo",
            null.clone(),
            null.clone(),
        ),
        (
            "Anthropic's top_k",
            with(&b, json!({"top_k": 5})),
            "Unrecognized request argument supplied: top_k",
            null.clone(),
            null.clone(),
        ),
        (
            "messages not a list",
            with(&b, json!({"messages": "hi"})),
            "Invalid type for 'messages': expected an array of objects, but got a string instead.",
            s("messages"),
            s("invalid_type"),
        ),
        (
            "no message",
            with(&b, json!({"messages": []})),
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
            s("messages"),
            s("empty_array"),
        ),
        (
            "a message not an object",
            with(&b, json!({"messages": ["hi"]})),
            "Invalid type for 'messages[0]': expected an object, but got a string instead.",
            s("messages[0]"),
            s("invalid_type"),
        ),
        (
            "no role",
            with(&b, json!({"messages": [{"content": "hi"}]})),
            "Missing required parameter: 'messages[0].role'.",
            s("messages[0].role"),
            s("missing_required_parameter"),
        ),
        (
            "an unknown role",
            with(&b, json!({"messages": [{"role": "bot", "content": "hi"}]})),
            "Invalid value: 'bot'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.",
            s("messages[0].role"),
            s("invalid_value"),
        ),
        (
            "content a number",
            user(json!(3)),
            "Invalid type for 'messages[0].content': expected one of a string or array of objects, but got an integer instead.",
            s("messages[0].content"),
            s("invalid_type"),
        ),
        (
            "no content",
            with(&b, json!({"messages": [{"role": "user"}]})),
            "Invalid value for 'content': expected a string, got null.",
            s("messages.[0].content"),
            null.clone(),
        ),
        (
            "a developer message without content",
            with(
                &b,
                json!({"messages": [{"role": "developer"}, {"role": "user", "content": "x"}]}),
            ),
            "Missing required parameter: 'messages[0].content'.",
            s("messages[0].content"),
            s("missing_required_parameter"),
        ),
        (
            "a part without type",
            user(json!([{"text": "hi"}])),
            "Missing required parameter: 'messages[0].content[0].type'.",
            s("messages[0].content[0].type"),
            s("missing_required_parameter"),
        ),
        (
            "a part type the role does not take",
            user(json!([{"type": "refusal", "refusal": "no"}])),
            "Invalid value: 'refusal'. Supported values are: 'text', 'image_url', 'input_audio', and 'file'.",
            s("messages[0].content[0].type"),
            s("invalid_value"),
        ),
        (
            "a text part without text",
            user(json!([{"type": "text"}])),
            "Missing required parameter: 'messages[0].content[0].text'.",
            s("messages[0].content[0].text"),
            s("missing_required_parameter"),
        ),
        (
            "an image without url",
            user(json!([{"type": "image_url", "image_url": {}}])),
            "Missing required parameter: 'messages[0].content[0].image_url.url'.",
            s("messages[0].content[0].image_url.url"),
            s("missing_required_parameter"),
        ),
        (
            "audio of an unknown format",
            user(json!([{"type": "input_audio", "input_audio": {"data": "AA", "format": "ogg"}}])),
            "Invalid value: 'ogg'. Supported values are: 'wav' and 'mp3'.",
            s("messages[0].content[0].input_audio.format"),
            s("invalid_value"),
        ),
        (
            "a function message without name",
            with(
                &b,
                json!({"messages": [{"role": "function", "content": "x"}]}),
            ),
            "Missing required parameter: 'messages[0].name'.",
            s("messages[0].name"),
            s("missing_required_parameter"),
        ),
        (
            "a tool message without tool_call_id",
            with(&b, json!({"messages": [{"role": "tool", "content": "x"}]})),
            "Missing required parameter: 'messages[0].tool_call_id'.",
            s("messages[0].tool_call_id"),
            s("missing_required_parameter"),
        ),
        (
            "a tool message answering nothing",
            with(
                &b,
                json!({"messages": [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "call_1", "content": "y"}]}),
            ),
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            s("messages.[1].role"),
            null.clone(),
        ),
        (
            "a tool message answering another id",
            with(
                &b,
                json!({"messages": [round_trip()[0].clone(), round_trip()[1].clone(),
            {"role": "tool", "tool_call_id": "call_9", "content": "y"}]}),
            ),
            "Invalid parameter: 'tool_call_id' of 'call_9' not found in 'tool_calls' of previous message.",
            s("messages.[2].tool_call_id"),
            null.clone(),
        ),
        (
            "a tool call left unanswered",
            with(
                &b,
                json!({"messages": [round_trip()[0].clone(), round_trip()[1].clone(), {"role": "user", "content": "and?"}]}),
            ),
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
            s("messages.[2].role"),
            null.clone(),
        ),
        (
            "tool calls ending the list",
            with(
                &b,
                json!({"messages": [round_trip()[0].clone(), round_trip()[1].clone()]}),
            ),
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
            s("messages"),
            null.clone(),
        ),
        (
            "empty tool calls",
            with(
                &b,
                json!({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": []}]}),
            ),
            "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.",
            s("messages[1].tool_calls"),
            s("empty_array"),
        ),
        (
            "a tool call without arguments",
            with(
                &b,
                json!({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f"}}]}]}),
            ),
            "Missing required parameter: 'messages[1].tool_calls[0].function.arguments'.",
            s("messages[1].tool_calls[0].function.arguments"),
            s("missing_required_parameter"),
        ),
        (
            "temperature a string",
            with(&b, json!({"temperature": "hot"})),
            "Invalid type for 'temperature': expected a decimal, but got a string instead.",
            s("temperature"),
            s("invalid_type"),
        ),
        (
            "temperature above 2",
            with(&b, json!({"temperature": 2.5})),
            "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 2.5 instead.",
            s("temperature"),
            s("decimal_above_max_value"),
        ),
        (
            "top_p below 0",
            with(&b, json!({"top_p": -0.5})),
            "Invalid 'top_p': decimal below minimum value. Expected a value >= 0, but got -0.5 instead.",
            s("top_p"),
            s("decimal_below_min_value"),
        ),
        (
            "n of 0",
            with(&b, json!({"n": 0})),
            "Invalid 'n': integer below minimum value. Expected a value >= 1, but got 0 instead.",
            s("n"),
            s("integer_below_min_value"),
        ),
        (
            "n a string",
            with(&b, json!({"n": "2"})),
            "Invalid type for 'n': expected an integer, but got a string instead.",
            s("n"),
            s("invalid_type"),
        ),
        (
            "max_completion_tokens of 0",
            with(&b, json!({"max_completion_tokens": 0})),
            "Invalid 'max_completion_tokens': integer below minimum value. Expected a value >= 1, but got 0 instead.",
            s("max_completion_tokens"),
            s("integer_below_min_value"),
        ),
        (
            "max_tokens a decimal",
            with(&b, json!({"max_tokens": 1.5})),
            "Invalid type for 'max_tokens': expected an integer, but got a decimal number instead.",
            s("max_tokens"),
            s("invalid_type"),
        ),
        (
            "stop a number",
            with(&b, json!({"stop": 1})),
            "Invalid type for 'stop': expected one of a string or array of strings, but got an integer instead.",
            s("stop"),
            s("invalid_type"),
        ),
        (
            "five stop sequences",
            with(&b, json!({"stop": ["a", "b", "c", "d", "e"]})),
            "Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length 5 instead.",
            s("stop"),
            s("array_above_max_length"),
        ),
        (
            "stream a string",
            with(&b, json!({"stream": "yes"})),
            "Invalid type for 'stream': expected a boolean, but got a string instead.",
            s("stream"),
            s("invalid_type"),
        ),
        (
            "stream_options without stream",
            with(&b, json!({"stream_options": {"include_usage": true}})),
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            s("stream_options"),
            null.clone(),
        ),
        (
            "an unknown stream option",
            with(
                &b,
                json!({"stream": true, "stream_options": {"bogus": true}}),
            ),
            "Unknown parameter: 'stream_options.bogus'.",
            s("stream_options.bogus"),
            s("unknown_parameter"),
        ),
        (
            "top_logprobs without logprobs",
            with(&b, json!({"top_logprobs": 2})),
            "The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled.",
            s("top_logprobs"),
            null.clone(),
        ),
        (
            "an unknown verbosity",
            with(&b, json!({"verbosity": "loud"})),
            "Invalid value: 'loud'. Supported values are: 'low', 'medium', and 'high'.",
            s("verbosity"),
            s("invalid_value"),
        ),
        (
            "metadata of a number",
            with(&b, json!({"metadata": {"k": 1}})),
            "Invalid type for 'metadata.k': expected a string, but got an integer instead.",
            s("metadata.k"),
            s("invalid_type"),
        ),
        (
            "an unknown response format",
            with(&b, json!({"response_format": {"type": "yaml"}})),
            "Invalid value: 'yaml'. Supported values are: 'json_object', 'json_schema', and 'text'.",
            s("response_format.type"),
            s("invalid_value"),
        ),
        (
            "a JSON schema without name",
            with(
                &b,
                json!({"response_format": {"type": "json_schema", "json_schema": {}}}),
            ),
            "Missing required parameter: 'response_format.json_schema.name'.",
            s("response_format.json_schema.name"),
            s("missing_required_parameter"),
        ),
        (
            "tools not a list",
            with(&b, json!({"tools": "f"})),
            "Invalid type for 'tools': expected an array of objects, but got a string instead.",
            s("tools"),
            s("invalid_type"),
        ),
        (
            "a tool of another type",
            with(&b, json!({"tools": [{"type": "retrieval"}]})),
            "Invalid value: 'retrieval'. Supported values are: 'function' and 'custom'.",
            s("tools[0].type"),
            s("invalid_value"),
        ),
        (
            "an Anthropic-shaped tool",
            with(&b, json!({"tools": [{"name": "f", "input_schema": {}}]})),
            "Missing required parameter: 'tools[0].type'.",
            s("tools[0].type"),
            s("missing_required_parameter"),
        ),
        (
            "a function tool without function",
            with(&b, json!({"tools": [{"type": "function"}]})),
            "Missing required parameter: 'tools[0].function'.",
            s("tools[0].function"),
            s("missing_required_parameter"),
        ),
        (
            "a function without name",
            with(&b, json!({"tools": [{"type": "function", "function": {}}]})),
            "Missing required parameter: 'tools[0].function.name'.",
            s("tools[0].function.name"),
            s("missing_required_parameter"),
        ),
        (
            "a function of an empty name",
            with(
                &b,
                json!({"tools": [{"type": "function", "function": {"name": ""}}]}),
            ),
            "Invalid 'tools[0].function.name': empty string. Expected a string with minimum length 1, but got an empty string instead.",
            s("tools[0].function.name"),
            s("empty_string"),
        ),
        (
            "parameters not an object",
            with(
                &b,
                json!({"tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]}),
            ),
            "Invalid type for 'tools[0].function.parameters': expected an object, but got an array instead.",
            s("tools[0].function.parameters"),
            s("invalid_type"),
        ),
        (
            "tool_choice without tools",
            with(&b, json!({"tool_choice": "auto"})),
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            s("tool_choice"),
            null.clone(),
        ),
        (
            "an unknown tool_choice",
            with(&b, json!({"tools": tools(), "tool_choice": "always"})),
            "Invalid value: 'always'. Supported values are: 'none', 'auto', and 'required'.",
            s("tool_choice"),
            s("invalid_value"),
        ),
        (
            "a tool_choice naming no tool",
            with(
                &b,
                json!({"tools": tools(), "tool_choice": {"type": "function", "function": {"name": "nope"}}}),
            ),
            "Invalid value for 'function_call': no function named 'nope' was specified in the 'functions' parameter.",
            s("function_call"),
            null.clone(),
        ),
        (
            "parallel_tool_calls without tools",
            with(&b, json!({"parallel_tool_calls": false})),
            "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.",
            s("parallel_tool_calls"),
            null.clone(),
        ),
    ]
}

#[test]
fn each_rule_is_answered_with_openais_400() {
    let mut wrong = Vec::new();
    for (what, body, message, param, code) in cases() {
        let got = openai_refusal(&body);
        if got != (message.to_owned(), param.clone(), code.clone()) {
            wrong.push(format!("{what}: {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_body_that_is_not_json_or_not_an_object_is_refused() {
    let facts = |body: &'static [u8]| {
        steadfast_upstream::RequestFacts::client(
            Provider::OpenAi,
            "/v1/chat/completions",
            "k",
            None,
            body,
        )
    };
    let mut u = fresh();
    let a = u.handle(steadfast_core::time::Timestamp::ZERO, 0, &facts(b"{"));
    assert_eq!(a.status(), Some(400));
    let v = json_of(&a);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("We could not parse the JSON body of your request.")
    );
    let a = u.handle(steadfast_core::time::Timestamp::ZERO, 0, &facts(b"[1]"));
    assert_eq!(
        json_of(&a)["error"]["message"],
        "The request body must be a JSON object."
    );
}

#[test]
fn valid_bodies_are_served() {
    let b = openai_body();
    for body in [
        b.clone(),
        with(
            &b,
            json!({"messages": [
                {"role": "system", "content": "be brief"},
                {"role": "developer", "content": [{"type": "text", "text": "really"}]},
                {"role": "user", "content": [{"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}}]},
                {"role": "assistant", "content": "ok", "refusal": null},
                {"role": "user", "content": "again"}
            ]}),
        ),
        with(
            &b,
            json!({"messages": round_trip(), "tools": tools(), "tool_choice": "auto", "parallel_tool_calls": true}),
        ),
        with(
            &b,
            json!({"temperature": 0.2, "top_p": 1, "n": 1, "max_tokens": 50, "max_completion_tokens": 50,
            "stop": ["\n"], "seed": 7, "user": "u", "metadata": {"k": "v"}, "logprobs": true, "top_logprobs": 2,
            "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {}}},
            "stream": true, "stream_options": {"include_usage": true}, "frequency_penalty": null}),
        ),
    ] {
        let a = send(Provider::OpenAi, &body);
        assert_eq!(
            a.status(),
            Some(200),
            "{body}: {}",
            String::from_utf8_lossy(&bytes(&a))
        );
    }
}

#[test]
fn a_lax_endpoint_serves_what_the_api_would_refuse() {
    let mut u =
        of_toml("[[endpoints]]\nname = \"loose\"\nstrict = false\nlatency = { fixed = \"0s\" }\n");
    let a = send_to(&mut u, Provider::OpenAi, &json!({"messages": [], "foo": 1}));
    assert_eq!(a.status(), Some(200));
    let config = steadfast_upstream::UpstreamConfig {
        strict: false,
        ..steadfast_upstream::UpstreamConfig::default()
    };
    let mut u = steadfast_upstream::Upstream::new(
        steadfast_upstream::builtin::scenario("ok").unwrap(),
        config,
    );
    assert_eq!(
        send_to(&mut u, Provider::Anthropic, &json!({"stop": "x"})).status(),
        Some(200)
    );
}
