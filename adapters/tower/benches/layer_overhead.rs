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
//! After criterion's report, an interleaved A/B run prints the overhead ratio (the
//! median over rounds of the layer's mean / the bare service's mean) and, for scale,
//! the same ratio for the bare service under one `tokio::time::timeout`. A run with
//! `--profile-time` skips it.

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

struct Fixture {
    bare: Side<ReqwestService>,
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
            async move { r.map_err(async_openai::error::OpenAIError::Reqwest) }
        })
    }

    fn bare_call(&self, n: u64) -> usize {
        let s = &self.bare;
        s.rt.block_on(async {
            let call = s.service.clone().oneshot(self.factory(&s.http, n));
            let r = call.await.expect("sent");
            r.bytes().await.expect("a body").len()
        })
    }

    fn layered_call(&self, n: u64) -> usize {
        let s = &self.layered;
        s.rt.block_on(async {
            let call = s.service.clone().oneshot(self.factory(&s.http, n));
            let r = call.await.expect("sent");
            r.bytes().await.expect("a body").len()
        })
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
        Ok::<_, async_openai::error::OpenAIError>(reqwest::Response::from(r))
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

/// The three ways a call is made in the interleaved run.
#[derive(Clone, Copy)]
enum Mode {
    Bare,
    Layered,
    TimedBare,
}

/// Interleaved rounds of `calls` calls each (the bare service, the layer, and the bare
/// service under one timer, in rotating order); the median of the per-round ratios.
fn ratio(rounds: usize, calls: u64) {
    let f = fixture();
    let mut n = 1u64 << 40;
    for _ in 0..200 {
        n += 3;
        f.bare_call(n);
        f.layered_call(n + 1);
        f.timed_bare_call(n + 2);
    }
    let (mut layer_ratios, mut timer_ratios) = (Vec::new(), Vec::new());
    let mut totals = [Duration::ZERO; 3];
    let mut cpu = [Duration::ZERO; 3];
    let orders = [
        [Mode::Bare, Mode::Layered, Mode::TimedBare],
        [Mode::Layered, Mode::TimedBare, Mode::Bare],
        [Mode::TimedBare, Mode::Bare, Mode::Layered],
    ];
    for round in 0..rounds {
        let mut took = [Duration::ZERO; 3];
        for mode in orders[round % orders.len()] {
            let (t, cpu0) = (Instant::now(), thread_cpu());
            for _ in 0..calls {
                n += 1;
                match mode {
                    Mode::Bare => f.bare_call(n),
                    Mode::Layered => f.layered_call(n),
                    Mode::TimedBare => f.timed_bare_call(n),
                };
            }
            took[mode as usize] = t.elapsed();
            if let (Some(a), Some(b)) = (cpu0, thread_cpu()) {
                cpu[mode as usize] += b.saturating_sub(a);
            }
        }
        for (total, t) in totals.iter_mut().zip(took) {
            *total += t;
        }
        let bare = took[Mode::Bare as usize].as_secs_f64();
        layer_ratios.push(took[Mode::Layered as usize].as_secs_f64() / bare);
        timer_ratios.push(took[Mode::TimedBare as usize].as_secs_f64() / bare);
    }
    layer_ratios.sort_by(f64::total_cmp);
    timer_ratios.sort_by(f64::total_cmp);
    let median = |r: &[f64]| r[r.len() / 2];
    let per = |d: Duration| d.as_secs_f64() * 1e6 / (rounds as f64 * calls as f64);
    let [bare_total, layered_total, timed_total] = totals;
    let m = median(&layer_ratios);
    println!(
        "interleaved A/B ({rounds} rounds x {calls} calls each): bare service {:.1} us/call, \
         steadfast layer {:.1} us/call, overhead ratio (median of rounds) {:.3} ({:+.1}%), \
         ratio of totals {:.3}, min {:.3}, max {:.3}",
        per(bare_total),
        per(layered_total),
        m,
        (m - 1.0) * 100.0,
        layered_total.as_secs_f64() / bare_total.as_secs_f64(),
        layer_ratios[0],
        layer_ratios[layer_ratios.len() - 1],
    );
    let t = median(&timer_ratios);
    println!(
        "  for scale, the bare service under one tokio::time::timeout: {:.1} us/call, \
         ratio (median of rounds) {:.3} ({:+.1}%), ratio of totals {:.3}",
        per(timed_total),
        t,
        (t - 1.0) * 100.0,
        timed_total.as_secs_f64() / bare_total.as_secs_f64(),
    );
    if cpu.iter().all(|c| !c.is_zero()) {
        let [bare, layered, timed] = cpu.map(per);
        println!(
            "  the calling thread's CPU time per call (the rest is waiting): bare {bare:.1} us, \
             layer {layered:.1} us, bare under one timer {timed:.1} us"
        );
    }
}

/// The CPU time the calling thread has used (Linux's schedstat), when known.
fn thread_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
    let skip = ["--list", "--test", "--profile-time"];
    if !std::env::args().any(|a| skip.contains(&a.as_str())) {
        ratio(40, 100);
    }
}
