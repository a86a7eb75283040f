//! The loopback suite run through `steadfast-ureq` (blocking).
// steadfast-ureq's `CallError` holds the `ureq::Error` by value (see its crate root).
#![allow(clippy::result_large_err)]

#[macro_use]
mod support;

use support::clients::Ureq;
use support::{Build, Harness};

all_scenarios!(Ureq);

#[test]
fn one_client_serves_many_threads() {
    let server = support::mock("slow");
    let client = Ureq::build(Build::new(support::openai(&server)).policy(|p| {
        p.retry.attempt_timeout = std::time::Duration::from_secs(3);
    }));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let c = client.clone();
            std::thread::spawn(move || c.chat(support::ask(&format!("call {i}"))))
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let r = h.join().expect("thread").expect("reply");
        assert_eq!(support::reply_text(&r.body), format!("call {i}"));
    }
    assert_eq!(server.stats().processed, 8);
}

#[test]
fn typed_requests_and_responses_of_steadfasts_own() {
    use steadfast_http::chat::types::{ChatRequest, ChatResponse};
    let server = support::mock("ok");
    // A canonical request (typed), to an Anthropic endpoint of a canonical client.
    let client = steadfast_ureq::Client::builder()
        .endpoint(support::anthropic(&server).model("claude-test"))
        .canonical(true)
        .seed_u64(support::SEED)
        .build()
        .expect("client");
    let request = ChatRequest::new("gpt-test")
        .system("Be brief.")
        .user("typed across")
        .max_tokens(64);
    let reply = client.chat(&request).expect("success");
    let typed: ChatResponse = reply.json().expect("a chat.completion");
    assert_eq!(typed.text(), Some("typed across"));
    assert_eq!(typed.finish_reason(), Some("stop"));
    assert_eq!(server.stats().status(400), 0);
}
