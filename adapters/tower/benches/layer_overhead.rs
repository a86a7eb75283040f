//! The cost of the tower layer on the success path: async-openai's `ReqwestService`
//! bare, and under `SteadfastLayer`, in the same run, against steadfast-mock's `ok`
//! scenario on loopback. Both send the same request from the same kind of factory,
//! each call with a fresh `Idempotency-Key` (the bare one sets its own, the layer its
//! call's), and read the whole body.
//!
//! A second group, `no_network`, puts both over an inner service that answers at once:
//! the layer's own work per call (session, engine decisions, headers, the rebuilt
//! factory, the attempt timeout) alone.
//!
//! After criterion's report, an interleaved A/B run prints the overhead ratio (the
//! median over rounds of the layer's mean / the bare service's mean).

use std::time::{Duration, Instant};

use async_openai::middleware::{HttpRequestFactory, ReqwestService};
use criterion::Criterion;
use reqwest13 as reqwest;
use steadfast_mock::{MockConfig, MockServer};
use steadfast_tower::{Client, EndpointDef, Policy, Provider, SteadfastLayer, SteadfastService};
use tower::{Layer, ServiceExt};

const KEY: &str = "sk-bench-key";
const BODY: &str =
    r#"{"model":"bench-model","messages":[{"role":"user","content":"Say something short."}]}"#;

struct Fixture {
    rt: tokio::runtime::Runtime,
    bare: ReqwestService,
    layered: SteadfastService<ReqwestService>,
    http: reqwest::Client,
    url: String,
    steadfast: Client,
    _server: MockServer,
}

fn fixture() -> Fixture {
    let server = MockServer::start(MockConfig::default()).expect("mock");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = rt.enter();
    let steadfast = Client::builder()
        .policy(Policy::standard())
        .endpoint(EndpointDef::new(server.base_url(), Provider::OpenAi, KEY))
        .seed_u64(1)
        .build()
        .expect("client");
    let http = reqwest::Client::new();
    Fixture {
        bare: ReqwestService::new(http.clone()),
        layered: SteadfastLayer::new(&steadfast).layer(ReqwestService::new(http.clone())),
        steadfast,
        http,
        url: format!("{}/v1/chat/completions", server.base_url()),
        rt,
        _server: server,
    }
}

impl Fixture {
    /// The request as async-openai makes it: a factory that builds it afresh.
    fn factory(&self, n: u64) -> HttpRequestFactory {
        let (http, url) = (self.http.clone(), self.url.clone());
        let key = format!("00000000-0000-4000-8000-{n:012x}");
        HttpRequestFactory::new(move || {
            let r = http
                .post(&url)
                .bearer_auth(KEY)
                .header("content-type", "application/json")
                .header("idempotency-key", &key)
                .body(BODY)
                .build();
            async move { r.map_err(async_openai::error::OpenAIError::Reqwest) }
        })
    }

    fn bare_call(&self, n: u64) -> usize {
        self.rt.block_on(async {
            let r = self
                .bare
                .clone()
                .oneshot(self.factory(n))
                .await
                .expect("sent");
            r.bytes().await.expect("a body").len()
        })
    }

    fn layered_call(&self, n: u64) -> usize {
        self.rt.block_on(async {
            let r = self
                .layered
                .clone()
                .oneshot(self.factory(n))
                .await
                .expect("sent");
            r.bytes().await.expect("a body").len()
        })
    }
}

fn bench(c: &mut Criterion) {
    let f = fixture();
    let mut n = 0u64;
    let mut g = c.benchmark_group("loopback_ok");
    g.bench_function("bare_reqwest_service", |b| {
        b.iter(|| {
            n += 1;
            f.bare_call(n)
        })
    });
    g.bench_function("steadfast_layer", |b| {
        b.iter(|| {
            n += 1;
            f.layered_call(n)
        })
    });
    g.finish();

    // Without the network: an inner service that answers at once, bare and layered,
    // so the layer's own work (session, engine decisions, headers, the rebuilt
    // factory, the attempt timeout) shows alone.
    let ready = tower::service_fn(|f: HttpRequestFactory| async move {
        let request = f.build().await?;
        let mut r = http::Response::new(reqwest::Body::from(""));
        *r.headers_mut() = request.headers().clone();
        Ok::<_, async_openai::error::OpenAIError>(reqwest::Response::from(r))
    });
    let layered_ready = SteadfastLayer::new(&f.steadfast).layer(ready);
    let mut g = c.benchmark_group("no_network");
    g.bench_function("bare_ready_service", |b| {
        b.iter(|| f.rt.block_on(ready.oneshot(f.factory(1))).expect("ready"))
    });
    g.bench_function("steadfast_layer_ready", |b| {
        b.iter(|| {
            let call = layered_ready.clone().oneshot(f.factory(1));
            f.rt.block_on(call).expect("ready")
        })
    });
    g.finish();
}

/// Interleaved rounds of `calls` calls each; the median of the per-round ratios.
fn ratio(rounds: usize, calls: u64) {
    let f = fixture();
    let mut n = 1u64 << 40;
    for _ in 0..200 {
        n += 2;
        f.bare_call(n);
        f.layered_call(n + 1);
    }
    let mut ratios = Vec::with_capacity(rounds);
    let (mut bare_total, mut layered_total) = (Duration::ZERO, Duration::ZERO);
    for round in 0..rounds {
        let mut time = |layered: bool| {
            let t = Instant::now();
            for _ in 0..calls {
                n += 1;
                if layered {
                    f.layered_call(n);
                } else {
                    f.bare_call(n);
                }
            }
            t.elapsed()
        };
        let (b, l) = if round % 2 == 0 {
            let b = time(false);
            (b, time(true))
        } else {
            let l = time(true);
            (time(false), l)
        };
        bare_total += b;
        layered_total += l;
        ratios.push(l.as_secs_f64() / b.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    let per = |d: Duration| d.as_secs_f64() * 1e6 / (rounds as f64 * calls as f64);
    println!(
        "interleaved A/B ({rounds} rounds x {calls} calls each): bare service {:.1} us/call, \
         steadfast layer {:.1} us/call, overhead ratio (median of rounds) {:.3} ({:+.1}%), \
         ratio of totals {:.3}, min {:.3}, max {:.3}",
        per(bare_total),
        per(layered_total),
        median,
        (median - 1.0) * 100.0,
        layered_total.as_secs_f64() / bare_total.as_secs_f64(),
        ratios[0],
        ratios[ratios.len() - 1],
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
    if !std::env::args().any(|a| a == "--list" || a == "--test") {
        ratio(40, 100);
    }
}
