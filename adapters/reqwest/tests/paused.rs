//! The client on tokio's paused clock: its waits are tokio's timers, so a paused
//! runtime runs hours of backoff at once, to the exact instant. The endpoint's URL is
//! one reqwest refuses before connecting, so no socket is involved (real sockets and a
//! paused clock do not mix: an idle runtime jumps to the next timer while a socket
//! waits).

use std::time::Duration;

use serde_json::json;
use steadfast_reqwest::{CallError, Client, EndpointDef, GiveUpReason, Policy, Provider};
use tokio::time::Instant;

/// Three attempts, 10 min then 20 min apart, without jitter.
fn client() -> Client {
    let mut policy = Policy::default().without_jitter();
    policy.retry.max_attempts = 3;
    policy.retry.deadline = Some(Duration::from_secs(3600));
    policy.backoff.base = Duration::from_secs(600);
    policy.backoff.factor = 2.0;
    policy.backoff.cap = Duration::from_secs(1200);
    // A URL reqwest cannot parse: every attempt fails before anything is sent.
    let unreachable = EndpointDef::new("http://[::1", Provider::OpenAi, "sk-paused");
    Client::builder()
        .endpoint(unreachable)
        .policy(policy)
        .seed_u64(0x5eed)
        .build()
        .expect("client builds")
}

/// Awaits `call` and checks that it gave up after its three attempts, exactly the
/// two backoffs later by the paused clock.
async fn gives_up_after_both_backoffs<T>(call: impl Future<Output = Result<T, CallError>>) {
    let t0 = Instant::now();
    let Err(e) = call.await else {
        panic!("nothing can be sent");
    };
    assert_eq!((e.reason, e.attempts), (GiveUpReason::RetriesExhausted, 3));
    assert_eq!(t0.elapsed(), Duration::from_secs(600 + 1200));
}

#[tokio::test(start_paused = true)]
async fn backoffs_wait_on_the_paused_clock() {
    let client = client();
    gives_up_after_both_backoffs(client.chat(json!({}))).await;
    assert_eq!(client.metrics().retries, 2);
}

#[tokio::test(start_paused = true)]
async fn stream_retries_wait_on_the_paused_clock() {
    let client = client();
    gives_up_after_both_backoffs(client.stream(json!({}))).await;
}

#[tokio::test(start_paused = true)]
async fn the_client_counts_time_on_the_runtime_clock() {
    let client = client();
    let before = client.now();
    tokio::time::sleep(Duration::from_secs(7200)).await;
    assert_eq!(
        client.now().saturating_duration_since(before),
        Duration::from_secs(7200)
    );
}
