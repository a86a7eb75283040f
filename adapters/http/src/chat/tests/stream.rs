//! Stream events both ways, and the collector.

use serde_json::{Value, json};

use crate::chat::{
    ApiErrorKind, ChunkCollector, EventError, FromAnthropicStream, StreamChunk, ToAnthropicStream,
    from_anthropic_response,
};
use crate::sse::SseEvent;

const CREATED: u64 = 1_700_000_000;

/// A whole Anthropic stream: text, then a tool call in two argument pieces.
pub(super) fn events() -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 12, "output_tokens": 1, "cache_read_input_tokens": 4}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "an_event_of_a_later_version", "index": 0}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "check."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"city\":"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"Oslo\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]
}

pub(super) fn translate(events: &[Value], include_usage: bool) -> Vec<StreamChunk> {
    let mut s = FromAnthropicStream::new(CREATED, include_usage);
    let mut out = Vec::new();
    for e in events {
        s.push_value(e).unwrap_or_else(|err| panic!("{e}: {err}"));
        out.extend(std::iter::from_fn(|| s.next_chunk()));
    }
    assert!(s.is_done());
    out
}

fn data(chunks: &[StreamChunk]) -> Vec<&Value> {
    chunks
        .iter()
        .filter_map(|c| match c {
            StreamChunk::Data(v) => Some(v),
            StreamChunk::Done => None,
        })
        .collect()
}

#[test]
fn each_event_type_yields_its_chunks() {
    let chunks = translate(&events(), true);
    let all = data(&chunks);
    let deltas: Vec<&Value> = all.iter().map(|c| &c["choices"][0]["delta"]).collect();
    let expected = [
        json!({"role": "assistant", "content": ""}),
        json!({"content": "Let me "}),
        json!({"content": "check."}),
        json!({"tool_calls": [{"index": 0, "id": "toolu_1", "type": "function", "function": {"name": "w", "arguments": ""}}]}),
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}),
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]}),
        json!({}),
    ];
    assert_eq!(
        deltas[..expected.len()],
        expected.iter().collect::<Vec<_>>()[..]
    );
    assert_eq!(all[6]["choices"][0]["finish_reason"], "tool_calls");
    let usage = all[7];
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 16, "completion_tokens": 9, "total_tokens": 25, "prompt_tokens_details": {"cached_tokens": 4}})
    );
    assert_eq!(chunks.last(), Some(&StreamChunk::Done));
    assert_eq!(chunks.len(), 9);
    for c in &all {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["id"], "msg_1");
        assert_eq!(c["created"], CREATED);
        assert_eq!(c["model"], "claude");
    }
}

#[test]
fn without_include_usage_there_is_no_usage_chunk() {
    let chunks = translate(&events(), false);
    assert_eq!(chunks.len(), 8);
    assert!(data(&chunks).iter().all(|c| c.get("usage").is_none()));
    let mut s = FromAnthropicStream::new(CREATED, false);
    assert_eq!(s.usage(), None);
    for e in events() {
        s.push_value(&e).unwrap();
    }
    assert_eq!(s.usage().unwrap()["total_tokens"], 25);
}

#[test]
fn the_collected_stream_is_the_translated_response() {
    let mut c = ChunkCollector::new();
    for chunk in translate(&events(), true) {
        c.push(&chunk).unwrap();
    }
    assert!(c.is_done());
    assert_eq!(c.text(), "Let me check.");
    let whole = c.into_response().unwrap();
    let message = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"city": "Oslo"}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 9, "cache_read_input_tokens": 4}
    });
    assert_eq!(whole, from_anthropic_response(&message, CREATED).unwrap());
}

#[test]
fn the_collector_assembles_interleaved_tool_calls_by_index() {
    let head = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"});
    let deltas = [
        json!({"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": ""}},
                              {"index": 1, "id": "b", "type": "function", "function": {"name": "g", "arguments": "{"}}]}),
        json!({"tool_calls": [{"index": 1, "function": {"arguments": "}"}}, {"index": 0, "function": {"arguments": "{}"}}]}),
    ];
    let mut c = ChunkCollector::new();
    for d in deltas {
        let mut chunk = head.clone();
        chunk["choices"] = json!([{"index": 0, "delta": d, "finish_reason": null}]);
        c.push_chunk(&chunk).unwrap();
    }
    let whole = c.into_response().unwrap();
    let calls = &whole["choices"][0]["message"]["tool_calls"];
    assert_eq!(
        calls[0]["function"],
        json!({"name": "f", "arguments": "{}"})
    );
    assert_eq!(
        calls[1],
        json!({"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}})
    );
    assert_eq!(whole["choices"][0]["message"]["content"], Value::Null);
    assert_eq!(whole["choices"][0]["finish_reason"], Value::Null);
    assert_eq!(
        ChunkCollector::new().into_response().unwrap_err().field(),
        "id"
    );
}

#[test]
fn each_stop_reason_reaches_the_final_chunk() {
    for (stop, finish) in [
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("refusal", "content_filter"),
        ("pause_turn", "stop"),
    ] {
        let mut e = events();
        e[11]["delta"]["stop_reason"] = json!(stop);
        let chunks = translate(&e, false);
        assert_eq!(
            data(&chunks)[6]["choices"][0]["finish_reason"],
            finish,
            "{stop}"
        );
    }
}

#[test]
fn an_error_event_is_the_upstream_error() {
    let mut s = FromAnthropicStream::new(CREATED, false);
    s.push_value(&events()[0]).unwrap();
    let error =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let sse = SseEvent {
        event: Some("error".into()),
        data: error.to_string(),
        id: None,
    };
    match s.push(&sse) {
        Err(EventError::Upstream(e)) => {
            assert_eq!(e.kind, ApiErrorKind::Overloaded);
            assert_eq!(e.message, "Overloaded");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_or_untranslatable_events_name_the_field() {
    let start = events()[0].clone();
    let text_start = events()[1].clone();
    let cases = [
        (
            vec![
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}),
            ],
            "type",
        ),
        (
            vec![
                start.clone(),
                json!({"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}}),
            ],
            "index",
        ),
        (
            vec![
                start.clone(),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            ],
            "content_block.type",
        ),
        (
            vec![
                start.clone(),
                text_start.clone(),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{"}}),
            ],
            "delta.type",
        ),
        (
            vec![
                start.clone(),
                json!({"type": "message_delta", "delta": {"stop_reason": "eh"}}),
            ],
            "delta.stop_reason",
        ),
        (vec![start.clone(), start.clone()], "type"),
        (
            vec![json!({"type": "message_start", "message": {"model": "m"}})],
            "message.id",
        ),
    ];
    for (events, field) in cases {
        let mut s = FromAnthropicStream::new(CREATED, false);
        let last = events.len() - 1;
        for e in &events[..last] {
            s.push_value(e).unwrap();
        }
        match s.push_value(&events[last]) {
            Err(EventError::Translate(t)) => assert_eq!(t.field(), field, "{}", events[last]),
            other => panic!("{}: {other:?}", events[last]),
        }
    }
}

#[test]
fn canonical_chunks_become_anthropic_events_and_back() {
    let chunks = translate(&events(), true);
    let mut to = ToAnthropicStream::new();
    let mut back = Vec::new();
    for c in &chunks {
        to.push(&c.to_sse()).unwrap();
        back.extend(std::iter::from_fn(|| to.next_event()));
    }
    let names: Vec<&str> = back.iter().map(|e| e.name).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    assert_eq!(
        back[5].data["content_block"],
        json!({"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}})
    );
    assert_eq!(back[9].data["delta"]["stop_reason"], "tool_use");
    assert_eq!(back[9].data["usage"]["output_tokens"], 9);
    let again: Vec<Value> = back.iter().map(|e| e.to_sse().json().unwrap()).collect();
    let collect = |chunks: Vec<StreamChunk>| {
        let mut c = ChunkCollector::new();
        chunks.iter().try_for_each(|k| c.push(k)).unwrap();
        c.into_response().unwrap()
    };
    let first = collect(chunks);
    let second = collect(translate(&again, true));
    assert_eq!(first["choices"], second["choices"]);
    assert_eq!(first["usage"], second["usage"]);
}

#[test]
fn an_error_chunk_in_a_canonical_stream_is_the_upstream_error() {
    let mut to = ToAnthropicStream::new();
    let body = json!({"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}});
    match to.push_chunk(&body) {
        Err(EventError::Upstream(e)) => assert_eq!(e.kind, ApiErrorKind::RateLimit),
        other => panic!("{other:?}"),
    }
}

#[test]
fn done_without_a_finish_reason_names_it() {
    let mut to = ToAnthropicStream::new();
    to.push_chunk(&json!({"id": "c", "choices": [{"index": 0, "delta": {"content": "x"}}]}))
        .unwrap();
    match to.finish() {
        Err(EventError::Translate(t)) => assert_eq!(t.field(), "choices[0].finish_reason"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_collector_reads_an_openai_event_stream() {
    let lines = [
        r#"{"id":"c","object":"chat.completion.chunk","created":3,"model":"gpt","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        r#"{"id":"c","object":"chat.completion.chunk","created":3,"model":"gpt","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"length"}],"usage":null}"#,
        r#"{"id":"c","object":"chat.completion.chunk","created":3,"model":"gpt","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}"#,
        "[DONE]",
    ];
    let mut c = ChunkCollector::new();
    for data in lines {
        let event = SseEvent {
            event: None,
            data: data.into(),
            id: None,
        };
        c.push_event(&event).unwrap();
    }
    assert!(c.is_done());
    let whole = c.into_response().unwrap();
    assert_eq!(whole["system_fingerprint"], "fp");
    assert_eq!(whole["created"], 3);
    assert_eq!(whole["choices"][0]["finish_reason"], "length");
    assert_eq!(whole["usage"]["total_tokens"], 3);
    let mut c = ChunkCollector::new();
    let error = SseEvent {
        event: None,
        data: r#"{"error":{"message":"boom","type":"server_error"}}"#.into(),
        id: None,
    };
    assert!(
        matches!(c.push_event(&error), Err(EventError::Upstream(e)) if e.kind == ApiErrorKind::Server)
    );
}

#[test]
fn a_refusal_delta_streams_as_text_with_the_refusal_stop_reason() {
    let mut to = ToAnthropicStream::new();
    let chunks = [
        json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "refusal": "I can't"}}]}),
        json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ];
    for c in &chunks {
        to.push_chunk(c).unwrap();
    }
    to.finish().unwrap();
    let events: Vec<_> = std::iter::from_fn(|| to.next_event()).collect();
    assert_eq!(
        events[2].data["delta"],
        json!({"type": "text_delta", "text": "I can't"})
    );
    let delta = events
        .iter()
        .find(|e| e.name == "message_delta")
        .map(|e| &e.data);
    assert_eq!(
        delta.map(|d| &d["delta"]["stop_reason"]),
        Some(&json!("refusal"))
    );
}

#[test]
fn a_second_choice_cannot_stream_to_anthropic() {
    let mut to = ToAnthropicStream::new();
    let chunk = json!({"id": "c", "choices": [{"index": 1, "delta": {"content": "x"}}]});
    match to.push_chunk(&chunk) {
        Err(EventError::Translate(t)) => assert_eq!(t.field(), "choices[0].index"),
        other => panic!("{other:?}"),
    }
}
