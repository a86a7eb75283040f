//! async-openai's own retry layer beside steadfast's, on the ratelimit scenario: the
//! same calls, the same server settings, each figure from the server's counters.

mod openai_request;
mod support;

use std::sync::Arc;

use async_openai::config::OpenAIConfig;
use async_openai::middleware::retry::OpenAIRetryLayer;
use async_openai::middleware::{HttpRequestFactory, ReqwestService};
use openai_request::request;
use steadfast_mock::MockServer;
use steadfast_tower::SteadfastLayer;
use support::*;

const CALLS: usize = 60;
const CONCURRENCY: usize = 12;

type OpenAi = async_openai::Client<OpenAIConfig>;

fn config(server: &MockServer) -> OpenAIConfig {
    OpenAIConfig::new()
        .with_api_base(format!("{}/v1", server.base_url()))
        .with_api_key(KEY)
}

/// One `Idempotency-Key` per call, set before async-openai's retry layer replays the
/// factory: the server can then tell a retry that came back before its Retry-After.
fn keyed(factory: HttpRequestFactory) -> HttpRequestFactory {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let key = format!("openai-retry-layer-call-{n}");
    HttpRequestFactory::new(move || {
        let (factory, key) = (factory.clone(), key.clone());
        async move {
            let mut r = factory.build().await?;
            let v = reqwest13::header::HeaderValue::from_str(&key).expect("a header value");
            r.headers_mut().insert("idempotency-key", v);
            Ok(r)
        }
    })
}

fn theirs(server: &MockServer) -> OpenAi {
    let service = tower::ServiceBuilder::new()
        .map_request(keyed)
        .layer(OpenAIRetryLayer::default())
        .service(ReqwestService::new(reqwest13::Client::new()));
    async_openai::Client::with_config(config(server)).with_http_service(service)
}

fn ours(server: &MockServer) -> OpenAi {
    let service = tower::ServiceBuilder::new()
        .layer(SteadfastLayer::new(&client(server)))
        .service(ReqwestService::new(reqwest13::Client::new()));
    async_openai::Client::with_config(config(server)).with_http_service(service)
}

/// Requests the server saw, of them early, and calls that succeeded.
#[derive(Debug, Clone, Copy)]
struct Figures {
    requests: u64,
    early: u64,
    successes: usize,
}

async fn run(openai: OpenAi, server: &MockServer) -> Figures {
    let gate = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    let mut set = tokio::task::JoinSet::new();
    for i in 0..CALLS {
        let (openai, gate) = (openai.clone(), gate.clone());
        set.spawn(async move {
            let _slot = gate.acquire().await.expect("open");
            openai
                .chat()
                .create(request(&format!("call {i}"), false))
                .await
                .is_ok()
        });
    }
    let mut successes = 0;
    while let Some(ok) = set.join_next().await {
        successes += usize::from(ok.expect("no panic"));
    }
    let s = server.stats();
    Figures {
        requests: s.total_requests,
        early: s.early,
        successes,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_openais_retry_layer_beside_steadfasts_on_ratelimit() {
    let (a, b) = (ratelimit_bucket(), ratelimit_bucket());
    let theirs = run(theirs(&a), &a).await;
    let ours = run(ours(&b), &b).await;
    println!("ratelimit, {CALLS} calls, {CONCURRENCY} at a time");
    for (name, f) in [
        ("OpenAIRetryLayer (3 retries)", theirs),
        ("SteadfastLayer", ours),
    ] {
        let (requests, early, ok) = (f.requests, f.early, f.successes);
        println!("{name:<30} requests {requests:>4}, early {early:>3}, successes {ok}/{CALLS}");
    }
    assert_eq!(ours.successes, CALLS, "{ours:?}");
    assert_eq!(ours.early, 0, "{ours:?}");
    assert!(
        ours.requests <= 8 * CALLS as u64,
        "at most max_attempts each: {ours:?}"
    );
    assert!(ours.successes >= theirs.successes, "{ours:?} {theirs:?}");
    assert!(ours.early <= theirs.early, "{ours:?} {theirs:?}");
}
