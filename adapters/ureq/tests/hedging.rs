//! Hedging in the blocking client, on loopback: an attempt held by the server gets a
//! hedge on a thread of its own, for a whole call and for a stream before its first
//! event, with the call's idempotency key; a stream whose first event came is never
//! hedged. Counts are asserted, never times.

use serde_json::json;
use steadfast_mock::{Fault, MockServer};
use steadfast_ureq::{Client, EndpointDef, Policy, Provider};

#[path = "../../reqwest/tests/support/scripted.rs"]
mod scripted;

fn client(server: &MockServer, policy: Policy) -> Client {
    Client::builder()
        .endpoint(EndpointDef::new(
            server.base_url(),
            Provider::OpenAi,
            steadfast_mock::MOCK_KEY,
        ))
        .policy(policy)
        .seed_u64(0x5eed)
        .build()
        .expect("client builds")
}

fn ask() -> serde_json::Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello"}]})
}

/// Both requests of the call reached the mock with one idempotency key.
fn one_key_twice(server: &MockServer) {
    let stats = server.stats();
    assert_eq!(stats.total_requests, 2);
    assert_eq!(stats.keys.len(), 1, "one idempotency key: {:?}", stats.keys);
    assert_eq!(stats.keys.values().map(|k| k.attempts).sum::<u64>(), 2);
}

#[test]
fn a_held_call_is_hedged_and_the_hedge_answers() {
    let server = scripted::hedgeable(0x61, 0, vec![Fault::Latency { ms: 3_000 }]);
    let c = client(&server, scripted::hedged_after(Policy::default(), 100));
    let reply = c.chat(ask()).expect("the hedge answers");
    assert_eq!(reply.attempts, 2);
    let m = c.metrics();
    assert_eq!(
        (m.hedges, m.hedges_cancelled, m.retries),
        (1, 1, 0),
        "{m:?}"
    );
    one_key_twice(&server);
}

#[test]
fn a_held_stream_is_hedged_before_its_first_event() {
    let server = scripted::hedgeable(0x62, 0, vec![Fault::Latency { ms: 3_000 }]);
    let c = client(&server, scripted::hedged_after(Policy::streaming(), 100));
    let events: Vec<_> = c
        .stream(ask())
        .expect("the hedge streams")
        .collect::<Result<_, _>>()
        .expect("the whole stream");
    assert!(events.len() > 2, "{events:?}");
    let m = c.metrics();
    assert_eq!(
        (m.hedges, m.hedges_cancelled, m.successes),
        (1, 1, 1),
        "{m:?}"
    );
    one_key_twice(&server);
}

#[test]
fn a_stream_is_never_hedged_after_its_first_event() {
    let server = scripted::hedgeable(0x63, 100, Vec::new());
    let c = client(&server, scripted::hedged_after(Policy::streaming(), 50));
    let events: Vec<_> = c
        .stream(ask())
        .expect("a stream")
        .collect::<Result<_, _>>()
        .expect("the whole stream");
    assert!(events.len() > 2, "{events:?}");
    let m = c.metrics();
    assert_eq!((m.hedges, m.attempts, m.successes), (0, 1, 1), "{m:?}");
    assert_eq!(server.stats().total_requests, 1);
}
