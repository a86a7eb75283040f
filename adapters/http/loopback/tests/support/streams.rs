//! Stream scenarios, generic over the adapter.

use std::time::Duration;

use steadfast_http::{EndpointDef, Interruption, Provider, SseEvent, StreamError};
use steadfast_mock::Fault;

use super::scenarios::all_faults;
use super::*;

/// The text of a stream's events, read the way each provider sends it.
fn text_of(provider: Provider, events: &[SseEvent]) -> String {
    let mut t = steadfast_http::StreamText::new(provider);
    for e in events {
        t.observe(e).expect("well-formed event");
    }
    t.text().to_owned()
}

fn ok_events<E: std::fmt::Debug>(items: Vec<Result<SseEvent, StreamError<E>>>) -> Vec<SseEvent> {
    items
        .into_iter()
        .map(|i| i.expect("no interruption"))
        .collect()
}

fn streaming_policy(p: &mut steadfast_core::policy::Policy) {
    p.retry.first_event_timeout = Some(Duration::from_millis(400));
    p.retry.attempt_timeout = Duration::from_secs(5);
}

const TEXT: &str = "alpha beta gamma delta epsilon zeta eta theta iota kappa";

pub fn stream_succeeds_with_every_event<H: Harness>() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let server = mock("ok");
        let e = EndpointDef::new(server.base_url(), provider, "sk-test-key-one");
        let c = H::build(Build::new(e).policy(streaming_policy));
        let events = ok_events(H::stream(&c, ask(TEXT)).expect("stream starts"));
        assert_eq!(text_of(provider, &events), TEXT, "{provider}");
        let last = events.last().expect("events");
        match provider {
            Provider::OpenAi => assert!(last.is_done_marker()),
            Provider::Anthropic => assert_eq!(last.event.as_deref(), Some("message_stop")),
        }
        assert_eq!(server.stats().total_requests, 1);
        assert_eq!(H::metrics(&c).successes, 1);
    }
}

pub fn stream_cut_before_the_first_event_is_retried<H: Harness>() {
    let server = mock("ok");
    let c = H::build(Build::new(openai(&server)).policy(streaming_policy));
    server.push_faults(&[Fault::StreamCut { after_events: 0 }]);
    let events = ok_events(H::stream(&c, ask(TEXT)).expect("retried"));
    assert_eq!(text_of(Provider::OpenAi, &events), TEXT);
    assert_eq!(server.stats().total_requests, 2);
    assert_eq!(H::metrics(&c).retries, 1);
}

pub fn stream_hang_before_the_first_event_is_retried<H: Harness>() {
    let server = mock("ok");
    let c = H::build(Build::new(anthropic(&server)).policy(streaming_policy));
    server.push_faults(&[Fault::Hang]);
    let events = ok_events(H::stream(&c, ask(TEXT)).expect("retried after the timeout"));
    assert_eq!(text_of(Provider::Anthropic, &events), TEXT);
    assert_eq!(server.stats().total_requests, 2);
}

pub fn stream_cut_after_the_first_event_is_interrupted<H: Harness>() {
    let server = mock("ok");
    let c = H::build(Build::new(openai(&server)).policy(streaming_policy));
    server.push_faults(&[Fault::StreamCut { after_events: 3 }]);
    let items = H::stream(&c, ask(TEXT)).expect("the first event arrived");
    assert_eq!(items.len(), 4, "three events, then the interruption");
    assert!(items.iter().take(3).all(Result::is_ok));
    let Some(Err(StreamError::Interrupted { partial, cause, .. })) = items.last() else {
        panic!("expected an interruption, got {:?}", items.last());
    };
    assert_eq!(*cause, Interruption::Cut);
    assert!(
        !partial.is_empty() && partial.len() < TEXT.len(),
        "{partial:?}"
    );
    assert!(TEXT.starts_with(partial.as_str()), "{partial:?}");
    assert_eq!(
        server.stats().total_requests,
        1,
        "never retried after the first event"
    );
    let m = H::metrics(&c);
    assert_eq!(m.stream_interruptions, 1);
    assert_eq!(m.successes, 0, "a cut stream is not a success");
}

pub fn stream_error_status_is_retried<H: Harness>() {
    let server = mock("ok");
    let c = H::build(Build::new(anthropic(&server)).policy(streaming_policy));
    server.push_faults(&[Fault::status(529)]);
    let events = ok_events(H::stream(&c, ask(TEXT)).expect("retried"));
    assert_eq!(text_of(Provider::Anthropic, &events), TEXT);
    assert_eq!(server.stats().status(529), 1);
    assert_eq!(server.stats().total_requests, 2);
}

pub fn no_panic_on_any_fault_while_streaming<H: Harness>() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let server = mock("ok");
        let e = EndpointDef::new(server.base_url(), provider, "sk-test-key-one");
        let c = H::build(Build::new(e).policy(streaming_policy));
        for fault in all_faults() {
            let name = fault.kind_name();
            server.push_faults(&[fault]);
            let items = H::stream(&c, ask(TEXT))
                .unwrap_or_else(|e| panic!("{provider} {name}: the stream did not start: {e}"));
            assert!(!items.is_empty(), "{provider} {name}");
            // Either the whole answer, or an interruption with a prefix of it.
            match items.last() {
                Some(Err(err)) => {
                    assert!(TEXT.starts_with(err.partial()), "{provider} {name}: {err}");
                }
                _ => {
                    let events = ok_events(items);
                    // A huge body pads the answer after the echoed text.
                    let text = text_of(provider, &events);
                    assert!(text.starts_with(TEXT), "{provider} {name}: {text:.80}");
                }
            }
        }
    }
}
