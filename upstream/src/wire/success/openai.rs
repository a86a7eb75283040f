//! OpenAI's success shapes: the `chat.completion` object and the
//! `chat.completion.chunk` stream, as OpenAI's OpenAPI spec shows them (the examples
//! of "The chat completion object", the streamed "Default" and "Functions" responses,
//! 2026-08).

use serde_json::{Value, json};

use super::super::tool::ToolCall;
use super::{Finish, Plan, data_event, put};
use crate::draw::{alnum_id, splitmix};

/// The fingerprint every answer carries (`system_fingerprint`).
const FINGERPRINT: &str = "fp_steadfast_mock";

/// `usage` with the details the API reports: `prompt_tokens_details` (`cached_tokens`,
/// `audio_tokens`) and `completion_tokens_details` (`reasoning_tokens`,
/// `audio_tokens`, `accepted_prediction_tokens`, `rejected_prediction_tokens`).
fn usage(p: &Plan) -> Value {
    json!({
        "prompt_tokens": p.input, "completion_tokens": p.output,
        "total_tokens": p.input.saturating_add(p.output),
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0
        }
    })
}

/// `finish_reason`: `stop` for a whole reply or one cut at a stop sequence, `length` at
/// `max_tokens`, `tool_calls` after a tool call (the spec's `finish_reason` enum).
fn finish(p: &Plan) -> &'static str {
    match p.finish {
        Finish::End | Finish::Sequence(_) => "stop",
        Finish::Length => "length",
        Finish::Tool => "tool_calls",
    }
}

fn tool_calls(t: &ToolCall) -> Value {
    json!([{"id": t.id, "type": "function",
            "function": {"name": t.name, "arguments": t.arguments_text()}}])
}

/// The `chat.completion` object.
pub(super) fn completion(p: &Plan) -> Value {
    let mut message = json!({
        "role": "assistant", "content": p.text, "refusal": null, "annotations": []
    });
    if let Some(t) = p.tool {
        put(&mut message, "content", Value::Null);
        put(&mut message, "tool_calls", tool_calls(t));
    }
    json!({
        "id": p.id, "object": "chat.completion", "created": p.created, "model": p.model,
        "choices": [{
            "index": 0, "message": message, "logprobs": null, "finish_reason": finish(p)
        }],
        "usage": usage(p), "service_tier": "default", "system_fingerprint": FINGERPRINT
    })
}

/// The chunks: the role chunk (naming the tool call, if any, with empty arguments, as
/// the spec's streamed "Functions" example), a delta per piece (of text, or of the tool
/// call's arguments), the chunk with `finish_reason`, with
/// `include_usage` the usage chunk (`choices` empty; the other chunks carry `"usage":
/// null`), then `data: [DONE]`. Each chunk has an `obfuscation` string unless
/// `include_obfuscation` is false.
pub(super) fn events(p: &Plan, pieces: Vec<String>) -> Vec<Vec<u8>> {
    let mut deltas = Vec::with_capacity(pieces.len().saturating_add(1));
    match p.tool {
        Some(t) => {
            deltas.push(
                json!({"role": "assistant", "content": null, "refusal": null,
                "tool_calls": [{"index": 0, "id": t.id, "type": "function",
                    "function": {"name": t.name, "arguments": ""}}]}),
            );
            deltas.extend(
                pieces
                    .into_iter()
                    .map(|a| json!({"tool_calls": [{"index": 0, "function": {"arguments": a}}]})),
            );
        }
        None => {
            deltas.push(json!({"role": "assistant", "content": "", "refusal": null}));
            deltas.extend(pieces.into_iter().map(|t| json!({"content": t})));
        }
    }
    let mut events: Vec<Vec<u8>> = Vec::with_capacity(deltas.len().saturating_add(3));
    for (i, d) in deltas.into_iter().enumerate() {
        events.push(data_event(&chunk(p, i, d, Value::Null)));
    }
    let last = events.len();
    events.push(data_event(&chunk(p, last, json!({}), json!(finish(p)))));
    if p.call.include_usage {
        let mut c = chunk(p, last.saturating_add(1), Value::Null, Value::Null);
        put(&mut c, "choices", json!([]));
        put(&mut c, "usage", usage(p));
        events.push(data_event(&c));
    }
    events.push(b"data: [DONE]\n\n".to_vec());
    events
}

fn chunk(p: &Plan, i: usize, delta: Value, finish: Value) -> Value {
    let mut c = json!({
        "id": p.id, "object": "chat.completion.chunk", "created": p.created,
        "model": p.model, "service_tier": "default", "system_fingerprint": FINGERPRINT,
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
    });
    if p.call.include_usage {
        put(&mut c, "usage", Value::Null);
    }
    if p.call.include_obfuscation {
        let i = u64::try_from(i).unwrap_or(u64::MAX);
        let seed = splitmix(p.seed ^ splitmix(i));
        let len = usize::try_from(seed % 16).unwrap_or(0);
        put(&mut c, "obfuscation", Value::String(alnum_id(seed, len)));
    }
    c
}
