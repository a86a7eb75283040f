//! The loopback suite run through `steadfast-ureq` (blocking).

#[macro_use]
mod support;

use serde_json::Value;
use steadfast_http::{CallError, MetricsSnapshot, Reply, Shared};
use steadfast_ureq::Client;
use support::{Build, Harness, Streamed};

struct Ureq;

impl Harness for Ureq {
    type Client = Client;
    type Source = ureq::Error;
    const NAME: &'static str = "ureq";

    fn build(b: Build) -> Client {
        let mut builder = Client::builder().policy(b.policy).seed_u64(b.seed);
        for e in b.endpoints {
            builder = builder.endpoint(e);
        }
        for f in b.fallbacks {
            builder = builder.fallback(f);
        }
        builder.build().expect("client builds")
    }

    fn chat(c: &Client, body: Value) -> Result<Reply, CallError<ureq::Error>> {
        c.chat(body)
    }

    fn chat_with(c: &Client, id: &str, body: Value) -> Result<Reply, CallError<ureq::Error>> {
        c.chat_with(id, body)
    }

    fn stream(c: &Client, body: Value) -> Streamed<ureq::Error> {
        Ok(c.stream(body)?.collect())
    }

    fn metrics(c: &Client) -> MetricsSnapshot {
        c.metrics()
    }

    fn shared(c: &Client) -> &Shared {
        c.shared()
    }
}

all_scenarios!(Ureq);

#[test]
fn one_client_serves_many_threads() {
    let server = support::mock(steadfast_mock::Scenario::Slow);
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
