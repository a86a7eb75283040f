//! Hedging on loopback, on issue #18's slow tail (the simulator's slow-tail scenario
//! served by the mock: 20 % of requests held for 3 s, the rest in 50–150 ms), 50
//! sequential calls with a 2 s attempt timeout, without and with `[hedge]`. Wall times
//! are printed, never asserted; requests and successes are.

use std::time::Instant;

use serde_json::json;
use steadfast_mock::{Fault, MockConfig, MockServer, Scenario};
use steadfast_reqwest::{Client, EndpointDef, Policy, Provider};

#[path = "support/scripted.rs"]
mod scripted;

const SCENARIO: &str = include_str!("../../sim/scenarios/slow-tail.toml");
const PLAIN: &str = include_str!("../../sim/scenarios/slow-tail.policy.toml");
const HEDGED: &str = include_str!("../../sim/scenarios/slow-tail-hedged.policy.toml");

struct Figures {
    wall_s: f64,
    ok: usize,
    requests: u64,
    attempts: u64,
}

async fn fifty_calls(policy: &str, seed: u64) -> Figures {
    let scenario = Scenario::from_toml(SCENARIO).expect("the slow-tail scenario");
    let server = MockServer::start(MockConfig::new(scenario).with_seed(seed)).expect("mock");
    let policy: Policy = toml::from_str(policy).expect("a policy file");
    let endpoint = EndpointDef::new(
        server.base_url(),
        Provider::OpenAi,
        steadfast_mock::MOCK_KEY,
    );
    let client = Client::builder()
        .endpoint(endpoint)
        .policy(policy)
        .seed_u64(seed)
        .build()
        .expect("client builds");
    let ask =
        json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello"}]});
    let start = Instant::now();
    let mut ok = 0;
    for _ in 0..50 {
        if client.chat(&ask).await.is_ok() {
            ok += 1;
        }
    }
    let wall_s = start.elapsed().as_secs_f64();
    Figures {
        wall_s,
        ok,
        requests: server.stats().total_requests,
        attempts: client.metrics().attempts,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_calls_on_a_slow_tail_with_and_without_hedging() {
    let seed = 0x18;
    eprintln!("seed {seed:#x}");
    let plain = fifty_calls(PLAIN, seed).await;
    let hedged = fifty_calls(HEDGED, seed).await;
    for (name, f) in [
        ("without hedging", &plain),
        ("hedged after 300 ms", &hedged),
    ] {
        eprintln!(
            "{name:<20} wall {:>6.2} s  requests {} (+{:.0} %)  ok {}/50",
            f.wall_s,
            f.requests,
            (f.requests as f64 / 50.0 - 1.0) * 100.0,
            f.ok
        );
    }
    eprintln!("wall ratio {:.2}", hedged.wall_s / plain.wall_s);
    assert_eq!(plain.ok, 50, "every call succeeds without hedging");
    assert_eq!(hedged.ok, 50, "every hedged call succeeds");
    // Every attempt the client started reached the mock (a cancelled loser included).
    assert_eq!(hedged.requests, hedged.attempts);
    assert!(hedged.requests > 50, "some hedge went out");
    // The hedge budget is half the calls; the rest are retries of doubly held calls.
    assert!(
        hedged.requests <= 50 + 25 + 10,
        "{} requests",
        hedged.requests
    );
}

fn stream_client(server: &MockServer, policy: Policy) -> Client {
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

/// A stream whose first request is held is hedged before its first event: the hedge
/// streams the whole answer, with the call's idempotency key, and the held request is
/// dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_stream_is_hedged_before_its_first_event() {
    let server = scripted::hedgeable(0x51, 0, vec![Fault::Latency { ms: 3_000 }]);
    let client = stream_client(&server, scripted::hedged_after(Policy::streaming(), 200));
    let ask =
        json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello"}]});
    let events = client.stream(&ask).await.expect("the hedge streams");
    let events = events.collect_events().await.expect("the whole stream");
    assert!(events.len() > 2, "{events:?}");
    let m = client.metrics();
    assert_eq!(
        (m.hedges, m.hedges_cancelled, m.retries),
        (1, 1, 0),
        "{m:?}"
    );
    assert_eq!(m.successes, 1);
    let stats = server.stats();
    assert_eq!(stats.total_requests, 2);
    assert_eq!(stats.keys.len(), 1, "one idempotency key: {:?}", stats.keys);
    assert_eq!(stats.keys.values().map(|k| k.attempts).sum::<u64>(), 2);
}

/// A stream whose first event comes at once is never hedged, however slow the events
/// after it (the caller has seen an event: the call is committed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_is_never_hedged_after_its_first_event() {
    let server = scripted::hedgeable(0x52, 150, Vec::new());
    let ask =
        json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello"}]});
    let client = stream_client(&server, scripted::hedged_after(Policy::streaming(), 50));
    let events = client
        .stream(&ask)
        .await
        .expect("a stream")
        .collect_events()
        .await
        .expect("the whole stream");
    assert!(events.len() > 2, "{events:?}");
    let m = client.metrics();
    assert_eq!((m.hedges, m.attempts, m.successes), (0, 1, 1), "{m:?}");
    assert_eq!(server.stats().total_requests, 1);
}
