//! The stall timeout on loopback: once a stream's first event is in, a gap longer than
//! `retry.stall_timeout` between events ends it with `Interruption::Stalled` and the
//! text so far, even while bytes that make no event keep coming; and a stream that keeps
//! producing events runs past the attempt timeout.

use std::time::Duration;

use serde_json::json;
use steadfast_mock::{Fault, MockConfig, MockServer};
use steadfast_reqwest::{Client, EndpointDef, Interruption, Policy, Provider, StreamExt};

/// A client whose seed (and so whose idempotency keys) is its own.
fn client(server: &MockServer, policy: Policy, seed: u64) -> Client {
    let endpoint = EndpointDef::new(
        server.base_url(),
        Provider::OpenAi,
        steadfast_mock::MOCK_KEY,
    );
    Client::builder()
        .endpoint(endpoint)
        .policy(policy)
        .seed_u64(seed)
        .build()
        .expect("client builds")
}

fn ask() -> serde_json::Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_whose_events_stop_ends_stalled_though_bytes_still_flow() {
    // The first event, then one byte of filler (no event) every 20 ms, forever.
    let drip = Fault::Filler {
        bytes: None,
        piece: 1,
        every_ms: 20,
        chunked: true,
        after_first_event: true,
    };
    let server = MockServer::start(MockConfig::builtin("ok").unwrap().with_script([drip]))
        .expect("mock starts");
    let mut policy = Policy::default();
    policy.retry.stall_timeout = Some(Duration::from_millis(300));
    let client = client(&server, policy, 1);
    let mut events = client.stream(ask()).await.expect("the stream starts");
    let first = events
        .next()
        .await
        .expect("an event")
        .expect("the first event");
    assert!(first.json().is_some(), "{first:?}");
    let end = events.next().await.expect("an end, not a hang");
    let Err(steadfast_reqwest::StreamError::Interrupted { cause, .. }) = end else {
        panic!("expected an interruption: {end:?}");
    };
    assert_eq!(cause, Interruption::Stalled);
    assert!(
        events.next().await.is_none(),
        "nothing after the interruption"
    );
    assert!(
        server.stats().filler_bytes > 0,
        "bytes flowed during the stall"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_stall_timeout_a_live_stream_outlasts_the_attempt_timeout() {
    // About 1.5 KB trickled at 1.5 KB/s: the first event after a third of a second,
    // the whole stream after about a second; the attempt timeout is 700 ms.
    let trickle = || Fault::Trickle {
        bytes_per_sec: 1500,
    };
    let server = MockServer::start(
        MockConfig::builtin("ok")
            .unwrap()
            .with_script([trickle(), trickle()]),
    )
    .expect("mock starts");
    let mut policy = Policy::default();
    policy.retry.max_attempts = 1;
    policy.retry.attempt_timeout = Duration::from_millis(700);
    policy.retry.first_event_timeout = Some(Duration::from_secs(2));
    let cut = client(&server, policy.clone(), 2).stream(ask()).await;
    let cut: Vec<_> = cut.expect("starts").collect().await;
    assert!(
        matches!(
            cut.last(),
            Some(Err(steadfast_reqwest::StreamError::Interrupted {
                cause: Interruption::Timeout,
                ..
            }))
        ),
        "without a stall timeout the attempt timeout bounds the stream: {cut:?}"
    );
    policy.retry.stall_timeout = Some(Duration::from_secs(2));
    let text = client(&server, policy, 3)
        .stream(ask())
        .await
        .expect("starts")
        .text();
    let done: Vec<_> = text.collect().await;
    assert!(
        matches!(done.last(), Some(Ok(steadfast_reqwest::TextEvent::Done(_)))),
        "{done:?}"
    );
}
