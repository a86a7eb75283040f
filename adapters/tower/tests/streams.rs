//! Streams through the layer: retried until the response head arrives, never after
//! its body started.

mod openai_request;
mod support;

use async_openai::config::OpenAIConfig;
use async_openai::middleware::ReqwestService;
use futures_util::StreamExt;
use openai_request::request;
use steadfast_mock::{Fault, MockServer};
use steadfast_tower::SteadfastLayer;
use support::*;

/// The chunks' text, and whether the stream ended in an error.
async fn collect(mut s: async_openai::types::chat::ChatCompletionResponseStream) -> (String, bool) {
    let mut text = String::new();
    while let Some(item) = s.next().await {
        let Ok(chunk) = item else {
            return (text, true);
        };
        let delta = chunk.choices.first().and_then(|c| c.delta.content.clone());
        text.push_str(&delta.unwrap_or_default());
    }
    (text, false)
}

fn openai(server: &MockServer) -> async_openai::Client<OpenAIConfig> {
    let service = tower::ServiceBuilder::new()
        .layer(SteadfastLayer::new(&client(server)))
        .service(ReqwestService::new(reqwest13::Client::new()));
    let config = OpenAIConfig::new().with_api_base(format!("{}/v1", server.base_url()));
    async_openai::Client::with_config(config).with_http_service(service)
}

fn unavailable() -> Fault {
    Fault::Status {
        status: 503,
        retry_after: None,
        retry_after_ms: None,
        body: None,
        headers: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_is_retried_before_its_body_starts() {
    let server = mock("ok", |c| {
        c.script = vec![unavailable(), Fault::ResetBeforeRequest]
    });
    let text = "alpha beta gamma delta";
    let stream = openai(&server)
        .chat()
        .create_stream(request(text, true))
        .await;
    let (got, failed) = collect(stream.expect("the stream starts")).await;
    assert!(!failed, "the stream ended cleanly");
    assert_eq!(got, text);
    let s = server.stats();
    assert_eq!(s.status(503), 1, "{s:?}");
    assert_eq!(s.keys.len(), 1, "one key on every attempt: {s:?}");
    assert_eq!(s.status(200), 1, "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_after_its_body_started_is_not_retried() {
    let server = mock("ok", |c| {
        c.script = vec![Fault::StreamCut { after_events: 2 }]
    });
    let text = "alpha beta gamma delta epsilon";
    let stream = openai(&server)
        .chat()
        .create_stream(request(text, true))
        .await;
    let (got, failed) = collect(stream.expect("the stream starts")).await;
    assert!(failed, "the cut reaches the caller");
    assert!(text.starts_with(&got) && got.len() < text.len(), "{got:?}");
    assert_eq!(
        server.stats().total_requests,
        1,
        "never retried after the head"
    );
}
