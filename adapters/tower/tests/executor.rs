//! The executor for clients with no hook, against the mock: genai (async), plain
//! reqwest (async) and ureq (blocking), each through flaky, ratelimit and outage.

mod support;

use genai::adapter::AdapterKind;
use genai::chat::{ChatMessage, ChatRequest};
use genai::resolver::{AuthData, Endpoint, ServiceTargetResolver};
use genai::{ModelIden, ServiceTarget, WebConfig};
use steadfast_mock::MockServer;
use steadfast_tower::{Attempt, Client};
use support::*;

/// A genai client for one attempt: the attempt's endpoint and key, and its headers
/// (the idempotency key) on every request.
fn genai_for(a: &Attempt) -> genai::Client {
    let endpoint = Endpoint::from_owned(format!("{}/v1/", a.base_url.trim_end_matches('/')));
    let key = a.api_key().unwrap_or_default().to_owned();
    let resolver = ServiceTargetResolver::from_resolver_fn(
        move |t: ServiceTarget| -> Result<ServiceTarget, genai::resolver::Error> {
            Ok(ServiceTarget {
                endpoint: endpoint.clone(),
                auth: AuthData::from_single(key.clone()),
                model: ModelIden::new(AdapterKind::OpenAI, t.model.model_name),
            })
        },
    );
    let web = WebConfig::default()
        .with_default_headers(a.headers.clone())
        .with_timeout(a.timeout);
    genai::Client::builder()
        .with_service_target_resolver(resolver)
        .with_web_config(web)
        .build()
        .expect("a genai client")
}

async fn genai_calls(steadfast: &Client, calls: usize) {
    let mut set = tokio::task::JoinSet::new();
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(8));
    for i in 0..calls {
        let (steadfast, gate) = (steadfast.clone(), gate.clone());
        set.spawn(async move {
            let _slot = gate.acquire().await.expect("open");
            let text = format!("call {i}");
            let chat = ChatRequest::new(vec![ChatMessage::user(text.clone())]);
            let r = steadfast
                .run(|a| {
                    let chat = chat.clone();
                    async move { genai_for(&a).exec_chat("gpt-test", chat, None).await }
                })
                .await;
            let r = r.unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(r.first_text(), Some(text.as_str()));
        });
    }
    while let Some(done) = set.join_next().await {
        done.expect("no panic");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genai_survives_flaky() {
    let server = flaky();
    genai_calls(&client(&server), 40).await;
    each_call_kept_its_key(&server, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genai_survives_ratelimit() {
    let server = ratelimit();
    genai_calls(&client(&server), 40).await;
    assert!(server.stats().status(429) > 0, "the limit was hit");
    each_call_kept_its_key(&server, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genai_survives_outage() {
    let server = outage();
    genai_calls(&client(&server), 20).await;
    assert!(server.stats().status(503) > 0, "the outage was met");
    each_call_kept_its_key(&server, 20);
}

/// Plain reqwest calls, `calls` of them 8 at a time.
async fn reqwest_calls(server: &MockServer, calls: usize) {
    let steadfast = client(server);
    let http = reqwest13::Client::new();
    let mut set = tokio::task::JoinSet::new();
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(8));
    for i in 0..calls {
        let (steadfast, gate, http) = (steadfast.clone(), gate.clone(), http.clone());
        set.spawn(async move {
            let _slot = gate.acquire().await.expect("open");
            let text = format!("call {i}");
            let body = ask(&text);
            let r = steadfast
                .run(|a| http.post(&a.url).headers(a.headers).json(&body).send())
                .await;
            let r = r.unwrap_or_else(|e| panic!("{text}: {e}"));
            let body: serde_json::Value = r.json().await.expect("JSON");
            assert_eq!(body["choices"][0]["message"]["content"], text.as_str());
        });
    }
    while let Some(done) = set.join_next().await {
        done.expect("no panic");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reqwest_survives_flaky_and_ratelimit() {
    let server = flaky();
    reqwest_calls(&server, 30).await;
    each_call_kept_its_key(&server, 30);
    let server = ratelimit();
    reqwest_calls(&server, 30).await;
    assert!(server.stats().status(429) > 0, "the limit was hit");
    each_call_kept_its_key(&server, 30);
}

/// Blocking ureq calls from 4 threads sharing one client.
fn ureq_calls(server: &MockServer, calls: usize) {
    let steadfast = client(server);
    std::thread::scope(|s| {
        for t in 0..4 {
            let steadfast = &steadfast;
            s.spawn(move || ureq_thread(steadfast, (t..calls).step_by(4)));
        }
    });
}

fn ureq_thread(steadfast: &Client, calls: impl Iterator<Item = usize>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    for i in calls {
        let text = format!("call {i}");
        let body = ask(&text).to_string();
        let r = steadfast.run_blocking(|a| {
            let mut request = agent
                .post(&a.url)
                .config()
                .timeout_global(Some(a.timeout))
                .build();
            for (name, value) in &a.headers {
                request = request.header(name, value);
            }
            request.send(body.as_str())
        });
        let mut r = r.unwrap_or_else(|e| panic!("{text}: {e}"));
        let answer: serde_json::Value =
            serde_json::from_str(&r.body_mut().read_to_string().expect("a body")).expect("JSON");
        assert_eq!(answer["choices"][0]["message"]["content"], text.as_str());
    }
}

#[test]
fn ureq_survives_flaky_ratelimit_and_outage() {
    let server = flaky();
    ureq_calls(&server, 30);
    each_call_kept_its_key(&server, 30);
    let server = ratelimit();
    ureq_calls(&server, 30);
    assert!(server.stats().status(429) > 0, "the limit was hit");
    each_call_kept_its_key(&server, 30);
    let server = outage();
    ureq_calls(&server, 12);
    assert!(server.stats().status(503) > 0, "the outage was met");
    each_call_kept_its_key(&server, 12);
}
