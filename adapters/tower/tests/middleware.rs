//! A `reqwest_middleware::ClientWithMiddleware` with steadfast's middleware, against
//! the mock: flaky, ratelimit and outage, and a request error handed back once.

mod support;

use reqwest_middleware::ClientWithMiddleware;
use steadfast_tower::{Client, GaveUpNote, GiveUpReason, SteadfastMiddleware};
use support::*;

fn http(steadfast: &Client) -> ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest13::Client::new())
        .with(SteadfastMiddleware::new(steadfast))
        .build()
}

async fn many(http: &ClientWithMiddleware, url: &str, calls: usize) {
    let mut set = tokio::task::JoinSet::new();
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(8));
    for i in 0..calls {
        let (http, gate, url) = (http.clone(), gate.clone(), url.to_owned());
        set.spawn(async move {
            let _slot = gate.acquire().await.expect("open");
            let text = format!("call {i}");
            let r = http.post(url).json(&ask(&text)).send().await;
            let r = r.unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(r.status(), 200, "{text}");
            let body: serde_json::Value = r.json().await.expect("JSON");
            assert_eq!(body["choices"][0]["message"]["content"], text.as_str());
        });
    }
    while let Some(done) = set.join_next().await {
        done.expect("no panic");
    }
}

fn url(server: &steadfast_mock::MockServer) -> String {
    format!("{}/v1/chat/completions", server.base_url())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_with_middleware_survives_flaky() {
    let server = flaky();
    many(&http(&client(&server)), &url(&server), 40).await;
    each_call_kept_its_key(&server, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_with_middleware_survives_ratelimit() {
    let server = ratelimit();
    many(&http(&client(&server)), &url(&server), 40).await;
    assert!(server.stats().status(429) > 0, "the limit was hit");
    each_call_kept_its_key(&server, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_with_middleware_survives_outage() {
    let server = outage();
    many(&http(&client(&server)), &url(&server), 20).await;
    assert!(server.stats().status(503) > 0, "the outage was met");
    each_call_kept_its_key(&server, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_error_is_handed_back_once_with_a_note() {
    let server = mock("ok", |c| {
        c.script = vec![steadfast_mock::Fault::Status {
            status: 400,
            retry_after: None,
            retry_after_ms: None,
            body: None,
            headers: Vec::new(),
        }]
    });
    let r = http(&client(&server))
        .post(url(&server))
        .json(&ask("refused"))
        .send()
        .await
        .expect("the error response");
    assert_eq!(r.status(), 400);
    let note = r.extensions().get::<GaveUpNote>().copied().expect("a note");
    assert_eq!(
        (note.reason, note.attempts),
        (GiveUpReason::NotRetryable, 1)
    );
    assert!(r.text().await.expect("the body").contains("error"));
    assert_eq!(server.stats().total_requests, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_rotates_past_a_revoked_one() {
    let server = mock("ok", |c| {
        c.script = vec![steadfast_mock::Fault::Status {
            status: 401,
            retry_after: None,
            retry_after_ms: None,
            body: None,
            headers: Vec::new(),
        }]
    });
    let endpoint = steadfast_tower::EndpointDef::new(
        server.base_url(),
        steadfast_tower::Provider::OpenAi,
        "sk-revoked",
    )
    .key("sk-good");
    let steadfast = Client::builder()
        .endpoint(endpoint)
        .policy(policy())
        .seed_u64(SEED)
        .build()
        .expect("builds");
    let r = http(&steadfast)
        .post(url(&server))
        .header("authorization", "Bearer sk-callers-own")
        .json(&ask("rotated"))
        .send()
        .await
        .expect("answered");
    assert_eq!(r.status(), 200);
    let s = server.stats();
    assert_eq!((s.status(401), s.status(200)), (1, 1), "{s:?}");
    assert_eq!(steadfast.metrics().keys_disabled, 1);
}
