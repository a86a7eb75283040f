//! Anthropic's success shapes: the `message` object and its server-sent events, as
//! the Messages API reference and its streaming guide show them (`message_start`,
//! `content_block_start`, `ping`, `content_block_delta` with `text_delta` or
//! `input_json_delta`, `content_block_stop`, `message_delta`, `message_stop`).

use serde_json::{Value, json};

use super::{Plan, named_event};

/// `usage` as the API reports it (anthropic-sdk-python's `Usage`): the cache counters
/// and the service tier beside the input and output tokens.
fn usage(p: &Plan, output: u64) -> Value {
    json!({
        "input_tokens": p.input,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": output, "service_tier": "standard"
    })
}

/// `stop_reason`: `tool_use` after a tool call, `max_tokens` when nothing may be
/// generated (`"max_tokens": 0`), else `end_turn`.
fn stop_reason(p: &Plan) -> &'static str {
    match (p.tool, p.call.generates_nothing()) {
        (Some(_), _) => "tool_use",
        (None, true) => "max_tokens",
        (None, false) => "end_turn",
    }
}

/// The content blocks: a `tool_use` block, or a text block (none when nothing may be
/// generated).
fn content(p: &Plan) -> Value {
    match p.tool {
        Some(t) => json!([{"type": "tool_use", "id": t.id, "name": t.name, "input": t.arguments}]),
        None if p.call.generates_nothing() => json!([]),
        None => json!([{"type": "text", "text": p.text}]),
    }
}

/// The `message` object.
pub(super) fn message(p: &Plan) -> Value {
    json!({
        "id": p.id, "type": "message", "role": "assistant", "model": p.model,
        "content": content(p), "stop_reason": stop_reason(p), "stop_sequence": null,
        "usage": usage(p, p.output)
    })
}

/// The events: `message_start` (empty content, one output token so far), a `ping`, the
/// block's `content_block_start`, its deltas and `content_block_stop` (no block when
/// nothing may be generated), `message_delta` with the stop reason and the output
/// tokens, `message_stop`.
pub(super) fn events(p: &Plan, pieces: Vec<String>) -> Vec<Vec<u8>> {
    let mut start = message(p);
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"] = usage(p, 1);
    let mut events = vec![
        named_event("message_start", &json!({"type": "message_start", "message": start})),
        named_event("ping", &json!({"type": "ping"})),
    ];
    if !(p.tool.is_none() && p.call.generates_nothing()) {
        block(p, pieces, &mut events);
    }
    events.push(named_event(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason(p), "stop_sequence": null},
                "usage": {"output_tokens": p.output}}),
    ));
    events.push(named_event("message_stop", &json!({"type": "message_stop"})));
    events
}

fn block(p: &Plan, pieces: Vec<String>, events: &mut Vec<Vec<u8>>) {
    let (first, delta): (Value, fn(String) -> Value) = match p.tool {
        Some(t) => (
            json!({"type": "tool_use", "id": t.id, "name": t.name, "input": {}}),
            |s| json!({"type": "input_json_delta", "partial_json": s}),
        ),
        None => (
            json!({"type": "text", "text": ""}),
            |s| json!({"type": "text_delta", "text": s}),
        ),
    };
    events.push(named_event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0, "content_block": first}),
    ));
    for piece in pieces {
        events.push(named_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0, "delta": delta(piece)}),
        ));
    }
    events.push(named_event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    ));
}
