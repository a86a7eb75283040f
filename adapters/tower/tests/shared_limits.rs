//! The executor sharing a key's limit through a real `redis-server` on 127.0.0.1:
//! two clients (as two processes) against one mock key limited to 600 requests a
//! minute with a burst of 20. Elapsed time is printed, never asserted.

use std::time::Instant;

use steadfast_mock::MockServer;
use steadfast_redis::testing::{Redis, bucket_policy, mock_bucket, mock_endpoint, unique_prefix};
use steadfast_tower::Client;

const CALLS: usize = 30;

fn client(server: &MockServer, redis: &Redis, prefix: &str, seed: u64) -> Client {
    let endpoint = mock_endpoint(server, "shared-key");
    Client::builder()
        .endpoint(endpoint)
        .policy(bucket_policy(600, 20))
        .seed_u64(seed)
        .shared_store(redis.store(prefix))
        .build()
        .expect("client builds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_executors_share_one_key_limit_through_redis() {
    let redis = Redis::shared();
    let prefix = unique_prefix("tower");
    let server = mock_bucket(13, 600, 20);
    let clients = [
        client(&server, &redis, &prefix, 1),
        client(&server, &redis, &prefix, 2),
    ];
    let http = reqwest13::Client::new();
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for (c, client) in clients.iter().enumerate() {
        for i in 0..CALLS {
            let (client, http) = (client.clone(), http.clone());
            set.spawn(async move {
                let body = serde_json::json!({"model": "m",
                    "messages": [{"role": "user", "content": format!("{c}-{i}")}]});
                client
                    .run(|a| http.post(&a.url).headers(a.headers).json(&body).send())
                    .await
                    .is_ok()
            });
        }
    }
    let mut ok = 0;
    while let Some(done) = set.join_next().await {
        ok += usize::from(done.unwrap_or(false));
    }
    let stats = server.stats();
    let (requests, throttled) = (stats.total_requests, stats.status(429));
    println!(
        "two executors: {ok}/{} ok, {requests} requests, {throttled} 429s, {:?}",
        2 * CALLS,
        started.elapsed()
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
