//! What the canonical shape costs per call: a typical request (system message, three
//! turns, a tool, `stop`) translated to Anthropic's body, its answer translated back,
//! and a 40-event stream translated and folded, against serializing the request alone
//! (what any client does per call).
//!
//! `cargo bench -p steadfast-http --bench translate`

use std::hint::black_box;

use criterion::Criterion;
use serde_json::{Value, json};
use steadfast_http::chat::{FromAnthropicStream, from_anthropic_response, to_anthropic};
use steadfast_http::{Provider, SseEvent, TextFold};

fn request() -> Value {
    json!({
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are a terse assistant. Answer in one sentence."},
            {"role": "user", "content": "What does a retry budget protect against?"},
            {"role": "assistant", "content": "Retry storms: every client retrying at once multiplies the load."},
            {"role": "user", "content": "And a circuit breaker?"}
        ],
        "stop": ["\n\n"],
        "temperature": 0.3,
        "tools": [{"type": "function", "function": {
            "name": "lookup",
            "description": "Looks a term up in the glossary.",
            "parameters": {"type": "object", "properties": {"term": {"type": "string"}}, "required": ["term"]}
        }}]
    })
}

fn answer() -> Value {
    json!({
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
        "model": "claude-3-5-haiku-latest",
        "content": [{"type": "text", "text": "It stops calls to a failing service so it can recover instead of drowning."}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 61, "output_tokens": 18}
    })
}

fn stream_events() -> Vec<SseEvent> {
    let ev = |name: &str, data: Value| SseEvent {
        event: Some(name.to_owned()),
        data: data.to_string(),
        id: None,
    };
    let mut out = vec![
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 61, "output_tokens": 1}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
    ];
    for i in 0..36 {
        out.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("word{i} ")}})));
    }
    out.push(ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    out.push(ev("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 36}})));
    out.push(ev("message_stop", json!({"type": "message_stop"})));
    out
}

fn bench(c: &mut Criterion) {
    let req = request();
    let ans = answer();
    let events = stream_events();
    c.bench_function("serialize the request (baseline)", |b| {
        b.iter(|| serde_json::to_vec(black_box(&req)))
    });
    c.bench_function("request to Anthropic", |b| {
        b.iter(|| to_anthropic(black_box(&req)))
    });
    c.bench_function("answer from Anthropic", |b| {
        b.iter(|| from_anthropic_response(black_box(&ans), 1_700_000_000))
    });
    c.bench_function("40-event stream from Anthropic, folded", |b| {
        b.iter(|| {
            let mut t = FromAnthropicStream::new(1_700_000_000, true);
            let mut fold = TextFold::new(Provider::OpenAi);
            for e in black_box(&events) {
                let _ = t.push(e);
                while let Some(chunk) = t.next_chunk() {
                    let _ = fold.push(&chunk.to_sse());
                }
            }
            fold.finish()
        })
    });
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
