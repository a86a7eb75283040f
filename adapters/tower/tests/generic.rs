//! The layer over a plain `tower::Service<http::Request<Bytes>>`: retries against the
//! mock's flaky scenario, and failover from a dead endpoint (the request, made for the
//! first endpoint, moves to the second).

mod support;

use bytes::Bytes;
use steadfast_tower::{Client, EndpointDef, Provider, SteadfastLayer};
use support::*;
use tower::{Layer, Service, ServiceExt};

type Response = http::Response<reqwest13::Body>;

/// reqwest as a tower service of `http` types.
fn inner()
-> impl Service<http::Request<Bytes>, Response = Response, Error = reqwest13::Error, Future = impl Send>
+ Clone
+ Send {
    let http = reqwest13::Client::new();
    tower::service_fn(move |req: http::Request<Bytes>| {
        let http = http.clone();
        async move {
            let req = reqwest13::Request::try_from(req)?;
            Ok(Response::from(http.execute(req).await?))
        }
    })
}

fn post(url: &str, text: &str) -> http::Request<Bytes> {
    http::Request::post(url)
        .header("content-type", "application/json")
        .body(Bytes::from(ask(text).to_string()))
        .expect("a request")
}

async fn answer(r: Response) -> serde_json::Value {
    let body = reqwest13::Response::from(r).bytes().await.expect("a body");
    serde_json::from_slice(&body).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_requests_survive_flaky() {
    let server = flaky();
    let svc = tower::ServiceBuilder::new()
        .layer(SteadfastLayer::new(&client(&server)))
        .service(inner());
    let url = format!("{}/v1/chat/completions", server.base_url());
    for i in 0..30 {
        let text = format!("call {i}");
        let r = svc.clone().oneshot(post(&url, &text)).await;
        let r = r.unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(r.status(), 200);
        assert_eq!(
            answer(r).await["choices"][0]["message"]["content"],
            text.as_str()
        );
    }
    each_call_kept_its_key(&server, 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_moves_to_the_next_endpoint_when_the_first_is_dead() {
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", l.local_addr().expect("addr"))
    };
    let up = mock("ok", |_| {});
    let steadfast = Client::builder()
        .endpoint(EndpointDef::new(&dead, Provider::OpenAi, KEY).name("dead"))
        .endpoint(EndpointDef::new(up.base_url(), Provider::OpenAi, KEY).priority(1))
        .policy(policy())
        .seed_u64(SEED)
        .build()
        .expect("builds");
    let svc = SteadfastLayer::new(&steadfast).layer(inner());
    let url = format!("{dead}/v1/chat/completions");
    let r = svc.oneshot(post(&url, "moved")).await.expect("failed over");
    assert_eq!(answer(r).await["choices"][0]["message"]["content"], "moved");
    let s = up.stats();
    assert_eq!(s.by_path.get("/v1/chat/completions"), Some(&1), "{s:?}");
    assert!(steadfast.metrics().failovers >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_never_show_in_attempts_or_give_ups() {
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", l.local_addr().expect("addr"))
    };
    let steadfast = Client::builder()
        .endpoint(EndpointDef::new(&dead, Provider::OpenAi, KEY))
        .policy(policy())
        .max_retries(1)
        .seed_u64(SEED)
        .build()
        .expect("builds");
    let mut shown = Vec::new();
    let http = reqwest13::Client::new();
    let e = steadfast
        .run(|a| {
            shown.push(format!("{a:?}"));
            http.post(&a.url).headers(a.headers).body("{}").send()
        })
        .await
        .expect_err("nothing listens");
    shown.push(format!("{e} {e:?} {:?}", steadfast.shared()));
    assert_eq!(shown.len(), 3, "two attempts and the give-up");
    for text in &shown {
        assert!(!text.contains(KEY), "{text}");
    }
}
