//! The typed structs against the translation.

use serde_json::{Value, json};

use crate::chat::types::{
    ChatChunk, ChatMessage, ChatRequest, ChatResponse, Content, ContentPart, Role, Tool, ToolCall,
    ToolChoice, Usage,
};
use crate::chat::{FromAnthropicStream, StreamChunk, from_anthropic_response, to_anthropic};

fn value<T: serde::Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

#[test]
fn a_typed_request_translates_like_its_json() {
    let req = ChatRequest::new("m")
        .system("Be brief.")
        .user("Weather?")
        .message(ChatMessage::tool_calls(vec![ToolCall::new(
            "c1",
            "w",
            &json!({"city": "Oslo"}),
        )]))
        .message(ChatMessage::tool("c1", "rain"))
        .message(ChatMessage::user_parts(vec![
            ContentPart::text("and this?"),
            ContentPart::image_url("https://example.com/a.png"),
        ]))
        .tool(Tool::function("w", "weather", json!({"type": "object"})))
        .tool_choice(ToolChoice::function("w"))
        .stop(["x"])
        .max_tokens(50)
        .temperature(0.3)
        .top_p(0.5)
        .end_user("u");
    let out = to_anthropic(&value(&req)).unwrap();
    assert_eq!(out["system"], "Be brief.");
    assert_eq!(
        out["messages"][1]["content"][0]["input"],
        json!({"city": "Oslo"})
    );
    assert_eq!(out["messages"][2]["content"][0]["type"], "tool_result");
    assert_eq!(out["messages"][2]["content"][2]["source"]["type"], "url");
    assert_eq!(out["tool_choice"], json!({"type": "tool", "name": "w"}));
    assert_eq!(out["stop_sequences"], json!(["x"]));
    assert_eq!(out["max_tokens"], 50);
    assert_eq!(out["metadata"], json!({"user_id": "u"}));
}

#[test]
fn extra_fields_are_kept_and_refused_by_name() {
    let req: ChatRequest = serde_json::from_value(json!({
        "model": "m", "messages": [{"role": "user", "content": "Hi"}], "seed": 7
    }))
    .unwrap();
    assert_eq!(req.extra.get("seed"), Some(&json!(7)));
    assert_eq!(to_anthropic(&value(&req)).unwrap_err().field(), "seed");
}

#[test]
fn unknown_content_is_kept_as_it_came() {
    let m: ChatMessage = serde_json::from_value(json!({
        "role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "x", "format": "wav"}}]
    }))
    .unwrap();
    assert!(matches!(m.content, Some(Content::Other(_))));
    assert_eq!(value(&m)["content"][0]["type"], "input_audio");
}

#[test]
fn a_translated_response_reads_as_a_chat_response() {
    let msg = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [{"type": "text", "text": "Hi"}, {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 4}
    });
    let r: ChatResponse =
        serde_json::from_value(from_anthropic_response(&msg, 9).unwrap()).unwrap();
    assert_eq!(r.text(), Some("Hi"));
    assert_eq!(r.finish_reason(), Some("tool_calls"));
    assert_eq!(r.tool_calls()[0].arguments().unwrap(), json!({"a": 1}));
    assert_eq!(r.choices[0].message.role, Role::Assistant);
    assert_eq!(
        r.usage,
        Some(Usage {
            prompt_tokens: 3,
            completion_tokens: 4,
            total_tokens: 7,
            prompt_tokens_details: None
        })
    );
}

#[test]
fn translated_chunks_read_as_chat_chunks() {
    let mut s = FromAnthropicStream::new(1, false);
    let events = [
        json!({"type": "message_start", "message": {"id": "m", "model": "c", "usage": {"input_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hey"}}),
    ];
    let mut chunks = Vec::new();
    for e in &events {
        s.push_value(e).unwrap();
        chunks.extend(std::iter::from_fn(|| s.next_chunk()));
    }
    let typed: Vec<ChatChunk> = chunks
        .iter()
        .filter_map(|c| match c {
            StreamChunk::Data(v) => serde_json::from_value(v.clone()).ok(),
            StreamChunk::Done => None,
        })
        .collect();
    assert_eq!(typed.len(), 2);
    assert_eq!(typed[0].choices[0].delta.role, Some(Role::Assistant));
    assert_eq!(typed[1].text(), Some("Hey"));
}

#[test]
fn a_message_without_a_role_is_refused() {
    assert!(serde_json::from_value::<ChatMessage>(json!({"content": "Hi"})).is_err());
}

proptest::proptest! {
    #![proptest_config(super::roundtrip::config())]

    #[test]
    fn a_request_read_into_the_typed_structs_translates_the_same(req in super::roundtrip::request()) {
        let typed: ChatRequest = serde_json::from_value(req.clone())
            .map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
        proptest::prop_assert_eq!(to_anthropic(&value(&typed)), to_anthropic(&req));
    }
}
