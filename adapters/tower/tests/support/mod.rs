//! What the loopback suites share: the mock started in-process, the test policies,
//! and the checks read from the mock's own counters.
#![allow(dead_code)]

use std::time::Duration;

use steadfast_mock::{Fault, MockConfig, MockServer};
use steadfast_tower::{Client, EndpointDef, Policy, Provider};

/// The seed of every client and server here (printed by each test).
pub const SEED: u64 = 0x70e7_fa57;

/// The key the clients are given (the mock accepts any).
pub const KEY: &str = "sk-tower-test-key";

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A built-in scenario with the knobs `f` sets, on a free port of 127.0.0.1.
pub fn mock(scenario: &str, f: impl FnOnce(&mut MockConfig)) -> MockServer {
    eprintln!("scenario {scenario}, seed {SEED:#x}");
    let mut c = MockConfig::builtin(scenario).expect("a built-in scenario");
    c = c.with_seed(SEED);
    f(&mut c);
    MockServer::start(c).expect("the mock starts")
}

/// flaky, its 429s asking for 150 ms.
pub fn flaky() -> MockServer {
    mock("flaky", |c| c.knobs.retry_after = Some(ms(150)))
}

/// ratelimit at 1200 requests a minute, a burst of 4: the bucket alone.
pub fn ratelimit_bucket() -> MockServer {
    mock("ratelimit", |c| {
        c.knobs.rpm = Some(1200);
        c.knobs.rate_burst = Some(4);
    })
}

/// [`ratelimit_bucket`] whose first answer is a 429 asking for 200 ms. A client that
/// learns the bucket from its first answer can pace its calls so well that none meets
/// a 429; this way the limit is always met and waited out, however the calls happen to
/// be scheduled.
pub fn ratelimit() -> MockServer {
    let server = ratelimit_bucket();
    server.push_faults(&[Fault::Status {
        status: 429,
        retry_after: None,
        retry_after_ms: Some("200".into()),
        body: None,
        headers: Vec::new(),
    }]);
    server
}

/// outage: every request 503 for the first 1.5 s, fast answers otherwise.
pub fn outage() -> MockServer {
    mock("outage", |c| {
        c.knobs.outage_for = Some(ms(1500));
        c.knobs.latency_min = Some(ms(1));
        c.knobs.latency_max = Some(ms(5));
    })
}

/// Short waits, a generous deadline; calls hold while the breaker is open.
pub fn policy() -> Policy {
    let mut p = Policy::batch();
    p.retry.max_attempts = 8;
    p.retry.deadline = Some(Duration::from_secs(30));
    p.retry.attempt_timeout = Duration::from_secs(5);
    p.retry.connect_timeout = ms(500);
    p.retry.max_retry_after = Duration::from_secs(10);
    p.backoff.base = ms(20);
    p.backoff.cap = ms(200);
    p.breaker.open_for = ms(300);
    p.breaker.open_max = Duration::from_secs(1);
    p
}

/// A client of `server` with one key.
pub fn client(server: &MockServer) -> Client {
    Client::builder()
        .endpoint(EndpointDef::new(server.base_url(), Provider::OpenAi, KEY))
        .policy(policy())
        .seed_u64(SEED)
        .build()
        .expect("the client builds")
}

/// A chat request whose answer (the mock echoes the last user message) is `text`.
pub fn ask(text: &str) -> serde_json::Value {
    serde_json::json!({"model": "gpt-test", "messages": [{"role": "user", "content": text}]})
}

/// The server saw `calls` calls, each under one idempotency key on every attempt,
/// none done twice, none back before the wait it was told; some were retried.
pub fn each_call_kept_its_key(server: &MockServer, calls: usize) {
    let s = server.stats();
    eprintln!(
        "requests {}, by status {:?}, early {}",
        s.total_requests, s.by_status, s.early
    );
    assert_eq!(
        s.early, 0,
        "a request came back before its Retry-After: {s:?}"
    );
    assert_eq!(s.keys.len(), calls, "one idempotency key per call: {s:?}");
    let attempts: u64 = s.keys.values().map(|k| k.attempts).sum();
    assert_eq!(
        attempts, s.total_requests,
        "every request carried its call's key"
    );
    assert!(
        s.total_requests > calls as u64,
        "some calls were retried: {s:?}"
    );
    assert!(
        s.keys.values().all(|k| k.processed <= 1),
        "no call done twice: {s:?}"
    );
    assert!(s.keys.values().any(|k| k.attempts > 1), "{s:?}");
}
