//! Anthropic's success shapes: the `message` object and its server-sent events, as
//! the Messages API reference and its streaming guide show them (`message_start`,
//! `content_block_start`, `ping`, `content_block_delta` with `text_delta` or
//! `input_json_delta`, `content_block_stop`, `message_delta`, `message_stop`).

use serde_json::{Value, json};

use super::{Finish, Plan, named_event, put};

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

/// `stop_reason` and `stop_sequence`: `end_turn`, `max_tokens`, `stop_sequence` with
/// the sequence met, or `tool_use` (the SDK's `StopReason`).
fn stop(p: &Plan) -> (&'static str, Value) {
    match &p.finish {
        Finish::End => ("end_turn", Value::Null),
        Finish::Length => ("max_tokens", Value::Null),
        Finish::Sequence(s) => ("stop_sequence", Value::String(s.clone())),
        Finish::Tool => ("tool_use", Value::Null),
    }
}

/// Whether the answer has a content block: a tool call, or text that is not empty
/// (`"max_tokens": 0` populates the prompt cache "without generating a response", the
/// SDK's doc of `max_tokens`).
fn has_block(p: &Plan) -> bool {
    p.tool.is_some() || !p.text.is_empty()
}

/// The content blocks: a `tool_use` block, a text block, or none.
fn content(p: &Plan) -> Value {
    match p.tool {
        Some(t) => json!([{"type": "tool_use", "id": t.id, "name": t.name, "input": t.arguments}]),
        None if !has_block(p) => json!([]),
        None => json!([{"type": "text", "text": p.text}]),
    }
}

/// The `message` object.
pub(super) fn message(p: &Plan) -> Value {
    json!({
        "id": p.id, "type": "message", "role": "assistant", "model": p.model,
        "content": content(p), "stop_reason": stop(p).0, "stop_sequence": stop(p).1,
        "usage": usage(p, p.output)
    })
}

/// The events: `message_start` (empty content, one output token so far), the block's
/// `content_block_start`, a `ping`, the block's deltas and `content_block_stop` (no
/// block when nothing is generated: the `ping` follows `message_start`),
/// `message_delta` with the stop reason and the output tokens, `message_stop` (the
/// order of the streaming guide's examples).
pub(super) fn events(p: &Plan, pieces: Vec<String>) -> Vec<Vec<u8>> {
    let mut start = message(p);
    put(&mut start, "content", json!([]));
    put(&mut start, "stop_reason", Value::Null);
    put(&mut start, "stop_sequence", Value::Null);
    put(&mut start, "usage", usage(p, 1));
    let mut events = vec![named_event(
        "message_start",
        &json!({"type": "message_start", "message": start}),
    )];
    match has_block(p) {
        true => block(p, pieces, &mut events),
        false => events.push(ping()),
    }
    let (reason, sequence) = stop(p);
    events.push(named_event(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": sequence},
                "usage": {"output_tokens": p.output}}),
    ));
    events.push(named_event(
        "message_stop",
        &json!({"type": "message_stop"}),
    ));
    events
}

fn ping() -> Vec<u8> {
    named_event("ping", &json!({"type": "ping"}))
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
    events.push(ping());
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
