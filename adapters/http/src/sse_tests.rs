use super::*;

fn all(p: &mut SseParser) -> Vec<SseEvent> {
    std::iter::from_fn(|| p.next_event()).collect()
}

#[test]
fn openai_data_lines_and_done() {
    let mut p = SseParser::new();
    p.push(b"data: {\"choices\":[{\"delta\":{\"content\":\"he\"}}]}\n\ndata: [DONE]\n\n");
    let evs = all(&mut p);
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[0].event, None);
    assert!(evs[1].is_done_marker());
    let mut t = StreamText::new(Provider::OpenAi);
    assert_eq!(t.observe(&evs[0]), Ok(EventKind::Content));
    assert_eq!(t.text(), "he");
    assert!(!t.is_done());
    assert_eq!(t.observe(&evs[1]), Ok(EventKind::Done));
    assert!(t.is_done());
}

#[test]
fn anthropic_event_data_pairs() {
    let text = "event: message_start\ndata: {\"type\":\"message_start\"}\n\n\
                event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n\
                event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let mut p = SseParser::new();
    p.push(text.as_bytes());
    let evs = all(&mut p);
    assert_eq!(evs.len(), 3);
    assert_eq!(evs[1].event.as_deref(), Some("content_block_delta"));
    let mut t = StreamText::new(Provider::Anthropic);
    for e in &evs {
        t.observe(e).unwrap();
    }
    assert_eq!(t.text(), "Hi");
    assert!(t.is_done());
}

#[test]
fn any_split_gives_the_same_events() {
    let text: &[u8] = b": comment\r\nevent: a\r\ndata: 1\r\ndata:2\r\nid: 7\r\n\r\ndata: x\rdata: y\r\rdata: last\n\n";
    let mut whole = SseParser::new();
    whole.push(text);
    let expected = all(&mut whole);
    assert_eq!(
        expected,
        vec![
            SseEvent {
                event: Some("a".into()),
                data: "1\n2".into(),
                id: Some("7".into())
            },
            SseEvent {
                event: None,
                data: "x\ny".into(),
                id: None
            },
            SseEvent {
                event: None,
                data: "last".into(),
                id: None
            },
        ]
    );
    for split in 0..=text.len() {
        for step in 1..4 {
            let mut p = SseParser::new();
            let (a, b) = text.split_at(split);
            for piece in a.chunks(step).chain(b.chunks(step)) {
                p.push(piece);
            }
            assert_eq!(all(&mut p), expected, "split {split} step {step}");
        }
    }
}

#[test]
fn partial_events_wait_for_the_blank_line() {
    let mut p = SseParser::new();
    p.push(b"data: {\"a\"");
    assert!(p.next_event().is_none());
    assert!(p.has_partial());
    p.push(b":1}\n");
    assert!(p.next_event().is_none());
    p.push(b"\n");
    assert_eq!(p.next_event().unwrap().data, "{\"a\":1}");
    assert!(!p.has_partial());
    p.push(b"event: only\n\n");
    assert!(
        p.next_event().is_none(),
        "an event without data is not dispatched"
    );
}

#[test]
fn garbage_is_an_interruption_not_a_panic() {
    let mut t = StreamText::new(Provider::OpenAi);
    let bad = SseEvent {
        data: "{\"choices\":[{\"del".into(),
        ..SseEvent::default()
    };
    assert_eq!(t.observe(&bad), Err(Interruption::Malformed));
    let err = SseEvent {
        event: Some("error".into()),
        data: "{\"type\":\"error\"}".into(),
        id: None,
    };
    assert_eq!(
        StreamText::new(Provider::Anthropic).observe(&err),
        Err(Interruption::ErrorEvent)
    );
    let mut p = SseParser::new();
    p.push(&[
        0xff, 0xfe, b':', b'\n', b'd', b'a', b't', b'a', b':', 0xc3, b'\n', b'\n',
    ]);
    assert_eq!(p.next_event().unwrap().data, "\u{fffd}");
}

#[test]
fn an_event_on_the_wire_parses_back_to_itself() {
    let events = [
        SseEvent {
            event: Some("content_block_delta".into()),
            data: "{\"a\":1}".into(),
            id: None,
        },
        SseEvent {
            event: None,
            data: "two\nlines".into(),
            id: Some("7".into()),
        },
        SseEvent {
            event: None,
            data: "[DONE]".into(),
            id: None,
        },
    ];
    let wire: String = events.iter().map(SseEvent::to_wire).collect();
    let mut p = SseParser::new();
    p.push(wire.as_bytes());
    let back: Vec<SseEvent> = std::iter::from_fn(|| p.next_event()).collect();
    assert_eq!(back, events);
}

/// Feeds `text` (SSE) to a [`StreamText`] of `provider`.
fn followed(provider: Provider, text: &str) -> StreamText {
    let mut p = SseParser::new();
    p.push(text.as_bytes());
    let mut t = StreamText::new(provider);
    for e in all(&mut p) {
        t.observe(&e).unwrap();
    }
    t
}

#[test]
fn an_openai_stream_tells_its_model_and_with_include_usage_its_tokens() {
    let chunks = "data: {\"model\":\"gpt-4o-mini-2024\",\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":null}\n\n\
                  data: {\"model\":\"other\",\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n";
    let t = followed(Provider::OpenAi, chunks);
    assert_eq!(
        t.model(),
        Some("gpt-4o-mini-2024"),
        "the first chunk's model"
    );
    assert_eq!(t.usage(), (None, None));
    let usage = "data: {\"model\":\"gpt-4o-mini-2024\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":7}}\n\ndata: [DONE]\n\n";
    let t = followed(Provider::OpenAi, &format!("{chunks}{usage}"));
    assert_eq!(t.usage(), (Some(12), Some(7)));
    assert_eq!(t.text(), "ab");
}

#[test]
fn an_anthropic_stream_tells_its_model_and_tokens() {
    let text = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n\
                event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n\
                event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n\
                event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let t = followed(Provider::Anthropic, text);
    assert_eq!(t.model(), Some("claude-x"));
    // The input from message_start, the output from the last message_delta.
    assert_eq!(t.usage(), (Some(25), Some(15)));
}
