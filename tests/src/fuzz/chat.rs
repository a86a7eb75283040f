//! `chat`: the canonical ⇄ Anthropic translation of `steadfast_http::chat` on any JSON.

use serde_json::Value;
use steadfast_http::chat::{
    ChunkCollector, EventError, FromAnthropicStream, ToAnthropicStream, TranslateError,
    from_anthropic_request, from_anthropic_response, to_anthropic, to_anthropic_response,
};

/// `chat`: the first byte picks a translation, the rest is its JSON input (bytes that
/// are not JSON are skipped).
///
/// - Nothing panics.
/// - Every refusal names a field of its input (a missing field: its parent), so the
///   JSON path in the error can be followed.
/// - A translated request translates back, or is refused by a field it has.
/// - An Anthropic answer that translates is a fixed point after one round:
///   `chat.completion` → Anthropic → `chat.completion` gives it again (an empty text
///   and no text read alike, and an answer without usage gets a zero one).
/// - A stream (a JSON array of events) translates event by event; every chunk out of
///   `FromAnthropicStream` is read by `ChunkCollector`, and by `ToAnthropicStream`
///   or refused by a field it has.
pub fn chat(data: &[u8]) {
    let Some((&pick, json)) = data.split_first() else {
        return;
    };
    let Ok(input) = serde_json::from_slice::<Value>(json) else {
        return;
    };
    match pick % 4 {
        0 => request(&input, to_anthropic, from_anthropic_request),
        1 => request(&input, from_anthropic_request, to_anthropic),
        2 => answer(&input),
        _ => stream(&input),
    }
}

type Translate = fn(&Value) -> Result<Value, TranslateError>;

fn request(input: &Value, there: Translate, back: Translate) {
    match there(input) {
        Err(e) => refused(&e, input),
        Ok(out) => {
            if let Err(e) = back(&out) {
                refused(&e, &out);
            }
        }
    }
}

fn answer(input: &Value) {
    if let Err(e) = to_anthropic_response(input) {
        refused(&e, input);
    }
    let done = match from_anthropic_response(input, 7) {
        Err(e) => return refused(&e, input),
        Ok(done) => done,
    };
    let again = to_anthropic_response(&done)
        .and_then(|back| from_anthropic_response(&back, 7))
        .unwrap_or_else(|e| panic!("{e}: {done} does not round-trip"));
    let usage = done.get("usage").is_some();
    assert_eq!(
        normal(again, usage),
        normal(done.clone(), usage),
        "{done} does not round-trip"
    );
}

/// An empty text reads as no text; an Anthropic answer always counts usage, so one
/// made from an answer without usage counts zero, which is dropped unless `usage`.
fn normal(mut done: Value, usage: bool) -> Value {
    if let (false, Some(o)) = (usage, done.as_object_mut()) {
        o.remove("usage");
    }
    if let Some(c) = done.pointer_mut("/choices/0/message/content") {
        if c == "" {
            *c = Value::Null;
        }
    }
    done
}

fn stream(input: &Value) {
    let Some(events) = input.as_array() else {
        return;
    };
    let mut from = FromAnthropicStream::new(7, true);
    let mut to = ToAnthropicStream::new();
    let mut collector = ChunkCollector::new();
    for event in events {
        if let Err(EventError::Translate(e)) = from.push_value(event) {
            refused(&e, event);
        }
        while let Some(chunk) = from.next_chunk() {
            collector
                .push(&chunk)
                .unwrap_or_else(|e| panic!("{e}: the collector refuses {chunk:?}"));
            let steadfast_http::chat::StreamChunk::Data(data) = &chunk else {
                continue;
            };
            if let Err(EventError::Translate(e)) = to.push_chunk(data) {
                refused(&e, data);
            }
        }
    }
    let _ = to.finish();
    while to.next_event().is_some() {}
    let _ = collector.into_response();
}

/// Panics unless `e` names a field of `input` (or, for a missing field, its parent).
fn refused(e: &TranslateError, input: &Value) {
    let p = e.pointer();
    if input.pointer(&p).is_some() {
        return;
    }
    let parent = p.rsplit_once('/').map_or("", |(head, _)| head);
    let missing = matches!(e, TranslateError::Missing { .. });
    assert!(
        missing && input.pointer(parent).is_some(),
        "`{e}` names no field of {input}"
    );
}
