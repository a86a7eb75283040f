//! The blocking client sharing a key's limit through a real `redis-server` on
//! 127.0.0.1: two clients on their own threads against one mock key limited to 600
//! requests a minute with a burst of 20. Elapsed time is printed, never asserted.

use std::time::{Duration, Instant};

use serde_json::json;
use steadfast_redis::testing::{Redis, bucket_policy, mock_bucket, mock_endpoint, unique_prefix};
use steadfast_ureq::Client;

const CALLS: usize = 30;

#[test]
fn two_blocking_clients_share_one_key_limit_through_redis() {
    let redis = Redis::shared();
    let prefix = unique_prefix("ureq");
    let server = mock_bucket(12, 600, 20);
    let client = |seed: u64| {
        let endpoint = mock_endpoint(&server, "shared-key");
        Client::builder()
            .endpoint(endpoint)
            .policy(bucket_policy(600, 20))
            .seed_u64(seed)
            .shared_redis(redis.config(&prefix))
            .build()
            .expect("client builds")
    };
    let clients = [client(1), client(2)];
    let started = Instant::now();
    let ok: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = clients
            .iter()
            .flat_map(|c| (0..4).map(move |t| (c, t)))
            .map(|(c, t)| {
                scope.spawn(move || {
                    (0..CALLS / 4 + usize::from(t < CALLS % 4))
                        .filter(|i| {
                            let ask = json!({"model": "m", "messages": [{"role": "user", "content": format!("{t}-{i}")}]});
                            c.chat(ask).is_ok()
                        })
                        .count()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or(0)).sum()
    });
    let took = started.elapsed();
    let stats = server.stats();
    let (requests, throttled) = (stats.total_requests, stats.status(429));
    println!(
        "two blocking clients: {ok}/{} ok, {requests} requests, {throttled} 429s, {took:?} (ideal {:?})",
        2 * CALLS,
        Duration::from_millis(100 * (2 * CALLS as u64 - 20))
    );
    assert_eq!(ok, 2 * CALLS, "every call succeeds");
    assert!(
        throttled * 10 <= requests,
        "429s at most 10%: {throttled} of {requests}"
    );
    assert!(
        clients.iter().all(|c| c.metrics().shared_fallbacks == 0),
        "Redis answered"
    );
}
