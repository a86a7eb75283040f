//! Request limits shared through a real `redis-server` on 127.0.0.1: four clients in
//! this process, each with a store of its own (as four processes would be), against
//! one mock key limited to 600 requests a minute with a burst of 20.
//!
//! Shared, the four send at the key's pace together; each on its own limit, they
//! send four bursts at once and meet the server's 429s. Killing Redis mid-run puts
//! the clients on their fallback (fail open: local limits; fail closed: nothing
//! admitted, calls end by their deadline) and sharing resumes when it is back. No
//! assertion is about time: elapsed times are printed beside the ideal.

use std::time::{Duration, Instant};

use serde_json::json;
use steadfast_mock::{MockConfig, MockServer};
use steadfast_redis::testing::{
    Redis, Server, bucket_policy, mock_endpoint, stall, store, unique_prefix,
};
use steadfast_reqwest::{Client, EndpointDef, FailMode, GiveUpReason, Policy, Provider};

const CLIENTS: usize = 4;
const CALLS: usize = 30;
const RPM: u32 = 600;
const BURST: u32 = 20;

/// The mock: one key, `RPM` a minute, `BURST` at once, quick answers.
fn bucket() -> MockServer {
    let mut config = MockConfig::builtin("ok")
        .expect("the ok scenario")
        .with_seed(5);
    config.knobs.rpm = Some(u64::from(RPM));
    config.knobs.rate_burst = Some(u64::from(BURST));
    config.knobs.latency_min = Some(Duration::from_millis(2));
    config.knobs.latency_max = Some(Duration::from_millis(10));
    MockServer::start(config).expect("mock")
}

/// The batch preset with the key's limit as the endpoint's (`RPM`, burst `BURST`).
fn policy(fail: FailMode) -> Policy {
    let mut p = bucket_policy(RPM, BURST);
    p.shared.fail = fail;
    p
}

/// A client named `shared-key` on the mock, sharing through `redis` when given.
fn client(server: &MockServer, policy: Policy, seed: u64, redis: Option<(&str, &str)>) -> Client {
    let endpoint = mock_endpoint(server, "shared-key");
    let builder = Client::builder()
        .endpoint(endpoint)
        .policy(policy)
        .seed_u64(seed);
    let builder = match redis {
        Some((url, prefix)) => builder.shared_store(store(url, prefix)),
        None => builder,
    };
    builder.build().expect("client builds")
}

fn ask(i: usize) -> serde_json::Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": format!("call {i}")}]})
}

/// Runs `CALLS` calls on each client at once; returns how many succeeded.
async fn run_all(clients: &[Client]) -> usize {
    let mut tasks = tokio::task::JoinSet::new();
    for (c, client) in clients.iter().enumerate() {
        for i in 0..CALLS {
            let client = client.clone();
            tasks.spawn(async move { client.chat(ask(c * CALLS + i)).await.is_ok() });
        }
    }
    let mut ok = 0;
    while let Some(done) = tasks.join_next().await {
        ok += usize::from(done.unwrap_or(false));
    }
    ok
}

/// The ideal: the burst at once, then the rest at the key's rate.
fn ideal(calls: usize) -> Duration {
    let after_burst = calls.saturating_sub(BURST as usize) as f64;
    Duration::from_secs_f64(after_burst * 60.0 / f64::from(RPM))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_clients_share_one_key_limit_through_redis() {
    let redis = Redis::shared();
    let prefix = unique_prefix("four");
    let server = bucket();
    let clients: Vec<Client> = (0..CLIENTS as u64)
        .map(|i| {
            client(
                &server,
                policy(FailMode::Open),
                10 + i,
                Some((&redis.url, &prefix)),
            )
        })
        .collect();
    let started = Instant::now();
    let ok = run_all(&clients).await;
    let took = started.elapsed();
    let stats = server.stats();
    let (requests, throttled) = (stats.total_requests, stats.status(429));
    let total = CLIENTS * CALLS;
    println!(
        "shared: {ok}/{total} ok, {requests} requests, {throttled} 429s, {:.2} s ({:.3}x the ideal {:.1} s)",
        took.as_secs_f64(),
        took.as_secs_f64() / ideal(total).as_secs_f64(),
        ideal(total).as_secs_f64()
    );
    assert_eq!(ok, total, "every call succeeds");
    assert!(
        throttled * 10 <= requests,
        "429s at most 10% of requests: {throttled} of {requests}"
    );
    assert_eq!(stats.early, 0, "no request before the server's hint");
    for c in &clients {
        let m = c.metrics();
        assert_eq!(m.shared_fallbacks, 0, "Redis answered every ask");
    }
    // The contrast: the same four clients each on its own limit.
    let alone = bucket();
    let clients: Vec<Client> = (0..CLIENTS as u64)
        .map(|i| client(&alone, policy(FailMode::Open), 20 + i, None))
        .collect();
    let started = Instant::now();
    let ok = run_all(&clients).await;
    let took = started.elapsed();
    let stats = alone.stats();
    println!(
        "local limits only: {ok}/{total} ok, {} requests, {} 429s, {:.2} s",
        stats.total_requests,
        stats.status(429),
        took.as_secs_f64()
    );
    assert!(
        stats.status(429) > throttled,
        "without sharing the four bursts meet more 429s ({} vs {throttled})",
        stats.status(429)
    );
}

/// Starts one call per client every 50 ms for `span`; returns (ok, failed).
async fn trickle(clients: &[Client], span: Duration) -> (usize, usize) {
    let mut tasks = tokio::task::JoinSet::new();
    let started = Instant::now();
    let mut i = 0;
    while started.elapsed() < span {
        for client in clients {
            let client = client.clone();
            i += 1;
            let n = i;
            tasks.spawn(async move { client.chat(ask(n)).await.is_ok() });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (mut ok, mut failed) = (0, 0);
    while let Some(done) = tasks.join_next().await {
        match done.unwrap_or(false) {
            true => ok += 1,
            false => failed += 1,
        }
    }
    (ok, failed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_killed_fail_open_keeps_going_on_local_limits_and_sharing_resumes() {
    let redis = Server::start();
    let (url, prefix) = (redis.url(), unique_prefix("open"));
    let server = bucket();
    let clients: Vec<Client> = (0..2)
        .map(|i| {
            client(
                &server,
                policy(FailMode::Open),
                30 + i,
                Some((&url, &prefix)),
            )
        })
        .collect();
    let (ok, failed) = trickle(&clients, Duration::from_millis(500)).await;
    assert_eq!((ok, failed), (ok, 0), "shared: every call succeeds");
    let port = redis.kill();
    let down = trickle(&clients, Duration::from_millis(1500)).await;
    let fell: u64 = clients.iter().map(|c| c.metrics().shared_fallbacks).sum();
    println!(
        "Redis down: {} ok, {} failed, {fell} fallbacks",
        down.0, down.1
    );
    assert_eq!(
        down.1, 0,
        "fail open: calls keep succeeding on local limits"
    );
    assert!(fell > 0, "the fallback is reported");
    let _back = Server::start_on(port);
    let up = trickle(&clients, Duration::from_millis(2500)).await;
    let resumed: u64 = clients.iter().map(|c| c.metrics().shared_resumed).sum();
    println!(
        "Redis back: {} ok, {} failed, {resumed} resumed",
        up.0, up.1
    );
    assert_eq!(up.1, 0);
    assert!(resumed > 0, "sharing resumes once Redis answers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_killed_fail_closed_admits_nothing_and_calls_end_by_their_deadline() {
    let redis = Server::start();
    let (url, prefix) = (redis.url(), unique_prefix("closed"));
    let server = bucket();
    let mut p = policy(FailMode::Closed);
    p.retry.deadline = Some(Duration::from_secs(2));
    let c = client(&server, p, 40, Some((&url, &prefix)));
    assert!(c.chat(ask(0)).await.is_ok(), "shared: the call succeeds");
    let port = redis.kill();
    // What is left of the lease the first call took expires (5 requests of a
    // 600-a-minute limit: 500 ms); only the store can admit after that.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let before = server.stats().total_requests;
    let started = Instant::now();
    let outcome = c.chat(ask(1)).await;
    let took = started.elapsed();
    println!(
        "fail closed with Redis down: {:?} after {took:?}",
        outcome.as_ref().err()
    );
    let Err(e) = outcome else {
        panic!("nothing is admitted while Redis is down");
    };
    // Ended by the policy (its wait passed the deadline), not by a hung store call.
    assert!(
        matches!(
            e.reason,
            GiveUpReason::RateLimited { .. } | GiveUpReason::DeadlineExceeded
        ),
        "{e:?}"
    );
    assert_eq!(server.stats().total_requests, before, "no request went out");
    assert!(c.metrics().shared_fallbacks > 0, "the fallback is reported");
    let _back = Server::start_on(port);
    // After the fallback period the store is asked again.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(
        c.chat(ask(2)).await.is_ok(),
        "admitted again once Redis answers"
    );
    assert!(c.metrics().shared_resumed > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_one_client_found_revoked_is_left_alone_by_the_others() {
    let redis = Redis::shared();
    let prefix = unique_prefix("keys");
    // One of the two keys is revoked (its text says so): 401 from the mock.
    let server =
        MockServer::start(MockConfig::builtin("auth").expect("auth").with_seed(6)).expect("mock");
    let make = |seed: u64| {
        let endpoint = EndpointDef::new(server.base_url(), Provider::OpenAi, "sk-revoked-1")
            .key(steadfast_mock::MOCK_KEY)
            .name("two-keys");
        let mut policy = Policy::standard();
        policy.shared.key_sync = Duration::from_millis(50);
        Client::builder()
            .endpoint(endpoint)
            .policy(policy)
            .seed_u64(seed)
            .shared_store(store(&redis.url, &prefix))
            .build()
            .expect("client builds")
    };
    let (a, b) = (make(50), make(51));
    // The first client meets the revoked key (round robin: within two calls).
    for i in 0..2 {
        assert!(a.chat(ask(i)).await.is_ok(), "the other key serves it");
    }
    assert_eq!(
        server.stats().status(401),
        1,
        "one 401, then the key is out"
    );
    // After a sync round or two, the second client knows without asking.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..10 {
        assert!(b.chat(ask(10 + i)).await.is_ok());
    }
    let stats = server.stats();
    println!("two clients, one revoked key: {:?}", stats.by_status);
    assert_eq!(
        stats.status(401),
        1,
        "the second client never sent the revoked key"
    );
    assert_eq!(
        b.metrics().keys_disabled,
        1,
        "it was disabled from the shared state"
    );
}

/// One call; whether it succeeded.
async fn one(client: &Client, i: usize) -> bool {
    client.chat(ask(i)).await.is_ok()
}

/// Two clients on one endpoint `flaky` of a mock that goes down: client A meets the
/// outage (3 failures in a row open its breaker for 2 s); client B then makes ten
/// calls. Returns the requests B's calls sent while A's breaker was open, and
/// whether both served again after the outage.
async fn outage_seen_by_b(shared: Option<(&str, &str)>) -> (u64, bool) {
    let server =
        MockServer::start(MockConfig::builtin("ok").expect("ok").with_seed(8)).expect("mock");
    let make = |seed: u64| {
        let endpoint = mock_endpoint(&server, "flaky");
        let mut policy = Policy::standard().without_jitter();
        policy.breaker.consecutive_failures = Some(3);
        policy.breaker.failure_rate = None;
        policy.breaker.open_for = Duration::from_secs(2);
        policy.retry.max_attempts = 1;
        policy.shared.key_sync = Duration::from_millis(50);
        policy.shared.breaker = true;
        let builder = Client::builder()
            .endpoint(endpoint)
            .policy(policy)
            .seed_u64(seed);
        match shared {
            Some((url, prefix)) => builder.shared_store(store(url, prefix)),
            None => builder,
        }
        .build()
        .expect("client builds")
    };
    let (a, b) = (make(60), make(61));
    assert!(
        one(&a, 0).await && one(&b, 1).await,
        "both serve before the outage"
    );
    server.set_down(true);
    for i in 0..3 {
        assert!(!one(&a, 10 + i).await, "the outage fails A's calls");
    }
    // A few sync rounds: A's open reaches the store, and B reads it back.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = server.stats().total_requests;
    for i in 0..10 {
        assert!(
            !one(&b, 20 + i).await,
            "B's calls fail: the endpoint is down or shut"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let sent = server.stats().total_requests - before;
    server.set_down(false);
    // Past A's open-until (2 s after its third failure), both probe and serve again.
    let mut resumed = true;
    for client in [&a, &b] {
        let mut ok = false;
        for i in 0..40 {
            if one(client, 100 + i).await {
                ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        resumed &= ok;
    }
    (sent, resumed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breaker_one_client_opened_keeps_the_other_from_sending_until_its_probe() {
    let redis = Redis::shared();
    let prefix = unique_prefix("breaker");
    let (shared, resumed) = outage_seen_by_b(Some((&redis.url, &prefix))).await;
    let (alone, resumed_alone) = outage_seen_by_b(None).await;
    println!(
        "B's requests to the failed endpoint while A's breaker was open: shared breaker {shared}, own breaker only {alone}"
    );
    assert_eq!(
        shared, 0,
        "B sent nothing while the shared breaker was open"
    );
    assert_eq!(
        alone, 3,
        "alone, B finds the outage itself: 3 failures open its breaker"
    );
    assert!(
        resumed && resumed_alone,
        "both serve again after the outage"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_from_a_slow_redis_ends_the_fallback() {
    // A Redis of its own: stalling it must not stall the other tests' asks.
    let redis = Server::start();
    let server = bucket();
    let mut p = policy(FailMode::Open);
    p.shared.fallback_for = Duration::from_secs(60);
    let c = client(&server, p, 40, Some((&redis.url(), &unique_prefix("late"))));
    // Redis busy for 600 ms, past the 250 ms ask timeout: the first call's ask fails
    // and the call goes on the local limits (fail open). A lost race (the ask got in
    // before the script) is tried again.
    for _ in 0..3 {
        let busy = stall(redis.port, Duration::from_millis(600));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(c.chat(ask(0)).await.is_ok(), "fail open: the call succeeds");
        let _ = busy.join();
        if c.metrics().shared_fallbacks > 0 {
            break;
        }
    }
    assert_eq!(c.metrics().shared_fallbacks, 1, "one ask timed out");
    // Its answer came late; the next key sync reports it, and the grant ends the
    // fallback long before its 60 s are up.
    let guard = Instant::now() + Duration::from_secs(20);
    let mut calls = 1;
    while c.metrics().shared_resumed == 0 {
        assert!(Instant::now() < guard, "sharing resumes on the late grant");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(c.chat(ask(calls)).await.is_ok());
        calls += 1;
    }
    let m = c.metrics();
    println!(
        "late answer: {} fallback, resumed after {calls} calls, {} requests",
        m.shared_fallbacks,
        server.stats().total_requests
    );
    assert_eq!(m.shared_fallbacks, 1, "no second failure");
    // The fallback's calls went at the local rate, within the key's limit.
    let stats = server.stats();
    assert_eq!(stats.status(429), 0, "no request over the key's limit");
    assert_eq!(stats.early, 0, "no request before the server's hint");
}
