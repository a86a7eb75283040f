//! async-openai's typed `chat().create(..)` through the layer, against the mock: the
//! flaky, ratelimit and outage scenarios, and a request error handed back as
//! async-openai reads it.

mod openai_request;
mod support;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::ReqwestService;
use openai_request::request;
use steadfast_tower::{Client, GaveUp, GiveUpReason, SteadfastLayer};
use support::*;

type OpenAi = async_openai::Client<OpenAIConfig>;

fn openai(server: &steadfast_mock::MockServer, steadfast: &Client) -> OpenAi {
    let service = tower::ServiceBuilder::new()
        .layer(SteadfastLayer::new(steadfast))
        .service(ReqwestService::new(reqwest13::Client::new()));
    let config = OpenAIConfig::new()
        .with_api_base(format!("{}/v1", server.base_url()))
        .with_api_key("sk-replaced-by-the-layer");
    async_openai::Client::with_config(config).with_http_service(service)
}

/// `calls` calls, 8 at a time; each answer echoes its own text.
async fn many(openai: &OpenAi, calls: usize) {
    let mut set = tokio::task::JoinSet::new();
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(8));
    for i in 0..calls {
        let (openai, gate) = (openai.clone(), gate.clone());
        set.spawn(async move {
            let _slot = gate.acquire().await.expect("open");
            let text = format!("call {i}");
            let r = openai.chat().create(request(&text, false)).await;
            (text, r)
        });
    }
    while let Some(done) = set.join_next().await {
        let (text, r) = done.expect("no panic");
        let r = r.unwrap_or_else(|e| panic!("{text}: {e}"));
        let answer = r.choices[0].message.content.as_deref();
        assert_eq!(answer, Some(text.as_str()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_create_survives_flaky() {
    let server = flaky();
    let steadfast = client(&server);
    many(&openai(&server, &steadfast), 40).await;
    each_call_kept_its_key(&server, 40);
    assert!(steadfast.metrics().retries > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_create_survives_ratelimit() {
    let server = ratelimit();
    let steadfast = client(&server);
    many(&openai(&server, &steadfast), 40).await;
    assert!(server.stats().status(429) > 0, "the limit was hit");
    each_call_kept_its_key(&server, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_create_survives_outage() {
    let server = outage();
    let steadfast = client(&server);
    many(&openai(&server, &steadfast), 20).await;
    let s = server.stats();
    assert!(s.status(503) > 0, "the outage was met: {s:?}");
    // Holding on the open breaker, the calls did not hammer the server.
    assert!(s.status(503) < 20 * 8, "{s:?}");
    each_call_kept_its_key(&server, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_error_comes_back_as_async_openais_own_error_once() {
    let server = mock("ok", |c| c.script = vec![support_status(400)]);
    let steadfast = client(&server);
    let e = openai(&server, &steadfast)
        .chat()
        .create(request("refused", false))
        .await
        .expect_err("a 400");
    let OpenAIError::ApiError(api) = e else {
        panic!("async-openai's API error: {e:?}");
    };
    assert_eq!(api.status_code.as_u16(), 400);
    assert_eq!(server.stats().total_requests, 1, "not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_port_gives_up_typed_inside_async_openais_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let server = mock("ok", |_| {});
    let dead = Client::builder()
        .endpoint(steadfast_tower::EndpointDef::new(
            format!("http://127.0.0.1:{port}"),
            steadfast_tower::Provider::OpenAi,
            KEY,
        ))
        .policy(policy())
        .max_retries(2)
        .seed_u64(SEED)
        .build()
        .expect("builds");
    let service = tower::ServiceBuilder::new()
        .layer(SteadfastLayer::new(&dead))
        .service(ReqwestService::new(reqwest13::Client::new()));
    let config = OpenAIConfig::new().with_api_base(format!("http://127.0.0.1:{port}/v1"));
    let openai = async_openai::Client::with_config(config).with_http_service(service);
    let e = openai
        .chat()
        .create(request("x", false))
        .await
        .expect_err("refused");
    let OpenAIError::Boxed(b) = e else {
        panic!("a boxed give-up: {e:?}");
    };
    let g = b
        .downcast_ref::<GaveUp<OpenAIError>>()
        .expect("steadfast's give-up");
    assert_eq!(g.reason(), GiveUpReason::RetriesExhausted, "{g}");
    assert_eq!(g.0.attempts, 3);
    assert!(matches!(g.0.source, Some(OpenAIError::Reqwest(_))), "{g:?}");
    drop(server);
}

fn support_status(status: u16) -> steadfast_mock::Fault {
    steadfast_mock::Fault::Status {
        status,
        retry_after: None,
        retry_after_ms: None,
        body: None,
        headers: Vec::new(),
    }
}
