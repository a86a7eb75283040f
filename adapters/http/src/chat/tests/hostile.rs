//! The property: a valid request with one value replaced by any other is translated or
//! refused with an error naming a field of the input (the parent of a missing one), and
//! nothing panics, in either direction; the same for a damaged Anthropic request or
//! answer.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::roundtrip::{config, request};
use crate::chat::{
    ChunkCollector, EventError, FromAnthropicStream, StreamChunk, ToAnthropicStream,
    TranslateError, from_anthropic_request, from_anthropic_response, to_anthropic,
};

/// Every JSON pointer in `v`, the root included.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => o
            .iter()
            .for_each(|(k, x)| pointers(x, format!("{at}/{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| pointers(x, format!("{at}/{i}"), out)),
        _ => {}
    }
    out.push(at);
}

/// `v` with the value at one of its pointers replaced by `with`.
fn damage(v: &Value, pick: prop::sample::Index, with: Value) -> Value {
    let mut all = Vec::new();
    pointers(v, String::new(), &mut all);
    let at = &all[pick.index(all.len())];
    let mut damaged = v.clone();
    match damaged.pointer_mut(at) {
        Some(slot) if !at.is_empty() => *slot = with,
        _ => damaged = with,
    }
    damaged
}

/// Whether the error names something in `input`: the field itself, or for a missing
/// field its parent.
fn names_a_field_of(e: &TranslateError, input: &Value) -> bool {
    let p = e.pointer();
    if input.pointer(&p).is_some() {
        return true;
    }
    let parent = p.rsplit_once('/').map_or("", |(head, _)| head);
    matches!(e, TranslateError::Missing { .. }) && input.pointer(parent).is_some()
}

fn replacement() -> impl Strategy<Value = Value> {
    let word = prop::sample::select(vec![
        "",
        "text",
        "image_url",
        "function",
        "user",
        "assistant",
        "tool",
        "system",
        "auto",
        "required",
        "none",
        "tool_use",
        "end_turn",
        "data:image/png;base64,AA",
        "{",
        "[1]",
    ]);
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-3.0f64..3.0).prop_map(Value::from),
        word.clone().prop_map(Value::from),
        Just(json!([])),
        Just(json!({})),
        word.prop_map(|w| json!({"type": w})),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_damaged_request_is_translated_or_refused_by_a_field_it_has(
        req in request(),
        pick in any::<prop::sample::Index>(),
        with in replacement(),
    ) {
        let damaged = damage(&req, pick, with);
        match to_anthropic(&damaged) {
            Err(e) => prop_assert!(names_a_field_of(&e, &damaged), "{e} for {damaged}"),
            Ok(there) => {
                if let Err(e) = from_anthropic_request(&there) {
                    prop_assert!(names_a_field_of(&e, &there), "{e} for {there}");
                }
            }
        }
    }

    #[test]
    fn a_damaged_anthropic_body_is_translated_or_refused_by_a_field_it_has(
        req in request(),
        pick in any::<prop::sample::Index>(),
        with in replacement(),
        response in any::<bool>(),
    ) {
        let body = if response { answer() } else { to_anthropic(&req).map_err(|e| TestCaseError::fail(e.to_string()))? };
        let damaged = damage(&body, pick, with);
        let result = if response {
            from_anthropic_response(&damaged, 0)
        } else {
            from_anthropic_request(&damaged)
        };
        if let Err(e) = result {
            prop_assert!(names_a_field_of(&e, &damaged), "{e} for {damaged}");
        }
    }
}

/// An Anthropic answer with every kind of block and usage field.
fn answer() -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"city": "Oslo"}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 1, "cache_creation_input_tokens": 2}
    })
}

/// The data of a canonical stream's chunks.
fn chunks() -> Vec<Value> {
    super::stream::translate(&super::stream::events(), true)
        .into_iter()
        .filter_map(|c| match c {
            StreamChunk::Data(v) => Some(v),
            StreamChunk::Done => None,
        })
        .collect()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_damaged_stream_is_translated_or_refused_by_a_field_of_the_event(
        event in any::<prop::sample::Index>(),
        pick in any::<prop::sample::Index>(),
        with in replacement(),
    ) {
        let mut events = super::stream::events();
        let k = event.index(events.len());
        events[k] = damage(&events[k], pick, with.clone());
        let mut from = FromAnthropicStream::new(0, true);
        for e in &events {
            if let Err(EventError::Translate(t)) = from.push_value(e) {
                prop_assert!(names_a_field_of(&t, e), "{t} for {e}");
            }
            while from.next_chunk().is_some() {}
        }
        let mut chunks = chunks();
        let k = event.index(chunks.len());
        chunks[k] = damage(&chunks[k], pick, with);
        let mut to = ToAnthropicStream::new();
        let mut collector = ChunkCollector::new();
        for c in &chunks {
            for result in [to.push_chunk(c), collector.push_chunk(c).map_err(EventError::from)] {
                if let Err(EventError::Translate(t)) = result {
                    prop_assert!(names_a_field_of(&t, c), "{t} for {c}");
                }
            }
        }
        let _ = to.finish();
        let _ = collector.into_response();
    }
}
