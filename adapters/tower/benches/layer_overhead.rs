//! The cost of the tower layer on the success path: async-openai's `ReqwestService`
//! bare, and under `SteadfastLayer`, in the same run, against steadfast-mock's `ok`
//! scenario on loopback. Both send the same request from the same kind of factory,
//! each call with a fresh `Idempotency-Key` (the bare one sets its own, the layer its
//! call's), and read the whole body. Each side runs on its own runtime and connection
//! pool, so that neither sees the other's timers, tasks or connections.
//!
//! A second group, `no_network`, puts both over an inner service that answers at once:
//! the layer's own work per call (session, engine decisions, headers, the rebuilt
//! factory, the attempt timeout) alone.
//!
//! After criterion's report, an interleaved A/B run makes one call of each mode per
//! round, in a rotating order, and prints the overhead ratio (the layer's median call
//! over the bare service's, and the same for trimmed means) and, for scale, the same
//! for the bare service under one `tokio::time::timeout` and under a layer that only
//! boxes its future. Calls interleaved one by one see the same machine: on a shared
//! host, blocks of calls drift apart by more than the layer costs. A run with
//! `--profile-time` skips it.

use std::time::{Duration, Instant};

use async_openai::error::OpenAIError;
use async_openai::middleware::{HttpRequestFactory, ReqwestService};
use criterion::Criterion;
use reqwest13 as reqwest;
use steadfast_mock::{MockConfig, MockServer};
use steadfast_tower::{Client, EndpointDef, Policy, Provider, SteadfastLayer, SteadfastService};
use tower::{Layer, ServiceExt};

const KEY: &str = "sk-bench-key";
const BODY: &str =
    r#"{"model":"bench-model","messages":[{"role":"user","content":"Say something short."}]}"#;

/// One way of calling, on its own runtime and connection pool: neither side sees the
/// other's timers, tasks or connections.
struct Side<S> {
    rt: tokio::runtime::Runtime,
    http: reqwest::Client,
    service: S,
}

fn runtime() -> tokio::runtime::Runtime {
    let mut rt = tokio::runtime::Builder::new_current_thread();
    rt.enable_all().build().expect("runtime")
}

fn side<S>(service: impl FnOnce(&reqwest::Client) -> S) -> Side<S> {
    let http = reqwest::Client::new();
    Side {
        rt: runtime(),
        service: service(&http),
        http,
    }
}

/// async-openai's service under a layer that only boxes its future.
type Boxed = tower::util::BoxCloneService<HttpRequestFactory, reqwest::Response, OpenAIError>;

struct Fixture {
    bare: Side<ReqwestService>,
    boxed: Side<Boxed>,
    layered: Side<SteadfastService<ReqwestService>>,
    timed: Side<ReqwestService>,
    url: String,
    steadfast: Client,
    _server: MockServer,
}

fn fixture() -> Fixture {
    let server = MockServer::start(MockConfig::default()).expect("mock");
    let steadfast = Client::builder()
        .policy(Policy::standard())
        .endpoint(EndpointDef::new(server.base_url(), Provider::OpenAi, KEY))
        .seed_u64(1)
        .build()
        .expect("client");
    let layer = SteadfastLayer::new(&steadfast);
    Fixture {
        bare: side(|http| ReqwestService::new(http.clone())),
        layered: side(|http| layer.layer(ReqwestService::new(http.clone()))),
        timed: side(|http| ReqwestService::new(http.clone())),
        boxed: side(|http| Boxed::new(ReqwestService::new(http.clone()))),
        steadfast,
        url: format!("{}/v1/chat/completions", server.base_url()),
        _server: server,
    }
}

impl Fixture {
    /// The request as async-openai makes it: a factory that builds it afresh.
    fn factory(&self, http: &reqwest::Client, n: u64) -> HttpRequestFactory {
        let (http, url) = (http.clone(), self.url.clone());
        let key = format!("00000000-0000-4000-8000-{n:012x}");
        HttpRequestFactory::new(move || {
            let r = http
                .post(&url)
                .bearer_auth(KEY)
                .header("content-type", "application/json")
                .header("idempotency-key", &key)
                .body(BODY)
                .build();
            async move { r.map_err(OpenAIError::Reqwest) }
        })
    }

    /// One call through `side`'s service, its whole body read.
    fn call_through<S>(&self, side: &Side<S>, n: u64) -> usize
    where
        S: tower::Service<HttpRequestFactory, Response = reqwest::Response> + Clone,
        S::Error: std::fmt::Debug,
    {
        side.rt.block_on(async {
            let call = side.service.clone().oneshot(self.factory(&side.http, n));
            let r = call.await.expect("sent");
            r.bytes().await.expect("a body").len()
        })
    }

    fn bare_call(&self, n: u64) -> usize {
        self.call_through(&self.bare, n)
    }

    fn layered_call(&self, n: u64) -> usize {
        self.call_through(&self.layered, n)
    }

    /// The bare call under a layer that does nothing but box the call's future: what
    /// any layer of this shape costs.
    fn boxed_bare_call(&self, n: u64) -> usize {
        self.call_through(&self.boxed, n)
    }

    /// The bare call under one `tokio::time::timeout`, as the layer bounds an
    /// attempt: what one armed timer costs on this path.
    fn timed_bare_call(&self, n: u64) -> usize {
        let s = &self.timed;
        s.rt.block_on(async {
            let call = s.service.clone().oneshot(self.factory(&s.http, n));
            let r = tokio::time::timeout(Duration::from_secs(60), call).await;
            let r = r.expect("in time").expect("sent");
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
        Ok::<_, OpenAIError>(reqwest::Response::from(r))
    });
    let layered_ready = SteadfastLayer::new(&f.steadfast).layer(ready);
    let mut g = c.benchmark_group("no_network");
    let (bare, layered) = (&f.bare, &f.layered);
    g.bench_function("bare_ready_service", |b| {
        b.iter(|| {
            let call = ready.oneshot(f.factory(&bare.http, 1));
            bare.rt.block_on(call).expect("ready")
        })
    });
    g.bench_function("steadfast_layer_ready", |b| {
        b.iter(|| {
            let call = layered_ready.clone().oneshot(f.factory(&layered.http, 1));
            layered.rt.block_on(call).expect("ready")
        })
    });
    g.finish();
}

/// The ways a call is made in the interleaved run.
#[derive(Clone, Copy)]
enum Mode {
    Bare,
    Layered,
    TimedBare,
    BoxedBare,
}

const MODES: [Mode; 4] = [Mode::Bare, Mode::Layered, Mode::TimedBare, Mode::BoxedBare];

impl Fixture {
    fn call(&self, mode: Mode, n: u64) -> usize {
        match mode {
            Mode::Bare => self.bare_call(n),
            Mode::Layered => self.layered_call(n),
            Mode::TimedBare => self.timed_bare_call(n),
            Mode::BoxedBare => self.boxed_bare_call(n),
        }
    }
}

/// One mode's call times, sorted, in microseconds.
struct Times(Vec<f64>);

impl Times {
    fn quantile(&self, q: f64) -> f64 {
        let i = ((self.0.len().saturating_sub(1)) as f64 * q) as usize;
        self.0.get(i).copied().unwrap_or(f64::NAN)
    }

    /// The mean of the middle 80 %: a host's stalls, which land on any call, left out.
    fn trimmed_mean(&self) -> f64 {
        let (a, b) = (self.0.len() / 10, self.0.len() * 9 / 10);
        let middle = &self.0[a..b];
        middle.iter().sum::<f64>() / middle.len().max(1) as f64
    }
}

/// `calls` rounds in which each mode makes one call, in an order that rotates each
/// round, so that a drift of the machine's speed lands on every mode alike; then each
/// mode's median and trimmed mean, and their ratios to the bare service's.
fn ratio(calls: u64) {
    let f = fixture();
    let mut n = 1u64 << 40;
    for _ in 0..200 {
        for mode in MODES {
            n += 1;
            f.call(mode, n);
        }
    }
    let mut times: Vec<Vec<f64>> = MODES.iter().map(|_| Vec::new()).collect();
    for round in 0..calls {
        for k in 0..MODES.len() {
            let k = (k + round as usize) % MODES.len();
            n += 1;
            let t = Instant::now();
            f.call(MODES[k], n);
            times[k].push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    let times: Vec<Times> = times
        .into_iter()
        .map(|mut v| {
            v.sort_by(f64::total_cmp);
            Times(v)
        })
        .collect();
    let bare = &times[Mode::Bare as usize];
    let names = [
        "bare service",
        "steadfast layer",
        "bare under one tokio::time::timeout",
        "bare under a do-nothing boxing layer",
    ];
    println!("interleaved A/B ({calls} rounds, one call of each mode per round, rotating order):");
    for (name, t) in names.iter().zip(&times) {
        println!(
            "  {name}: p25 {:.1} us, p50 {:.1} us, trimmed mean {:.1} us; ratio to bare: p50 {:.3}, trimmed mean {:.3}",
            t.quantile(0.25),
            t.quantile(0.5),
            t.trimmed_mean(),
            t.quantile(0.5) / bare.quantile(0.5),
            t.trimmed_mean() / bare.trimmed_mean(),
        );
    }
    let layer = &times[Mode::Layered as usize];
    let m = layer.quantile(0.5) / bare.quantile(0.5);
    println!(
        "overhead ratio (median call): {m:.3} ({:+.1}%), of trimmed means {:.3}",
        (m - 1.0) * 100.0,
        layer.trimmed_mean() / bare.trimmed_mean()
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
    let skip = ["--list", "--test", "--profile-time"];
    if !std::env::args().any(|a| skip.contains(&a.as_str())) {
        ratio(4000);
    }
}
