//! The cost steadfast adds to a successful call: `steadfast-reqwest` against plain
//! reqwest with identical client settings, in the same run, against steadfast-mock's
//! `ok` scenario on loopback. Both send the same body with a fresh `Idempotency-Key`
//! (so the server does the same work) and parse the reply as JSON.
//!
//! After criterion's own report, an interleaved A/B run prints the overhead ratio
//! (the median over rounds of steadfast's mean / plain's mean).

use std::time::{Duration, Instant};

use criterion::Criterion;
use serde_json::{Value, json};
use steadfast_http::clock::wall_unix;
use steadfast_http::{Now, Session, Step};
use steadfast_mock::{MockConfig, MockServer};
use steadfast_reqwest::{Client, EndpointDef, Policy, Provider};

const KEY: &str = "sk-bench-key";

struct Fixture {
    rt: tokio::runtime::Runtime,
    plain: reqwest::Client,
    url: String,
    steadfast: Client,
    body: Value,
    _server: MockServer,
}

fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .expect("reqwest client")
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
        .http_client(http_client())
        .seed_u64(1)
        .build()
        .expect("client");
    Fixture {
        plain: http_client(),
        url: format!("{}/v1/chat/completions", server.base_url()),
        steadfast,
        body: json!({
            "model": "bench-model",
            "messages": [{"role": "user", "content": "Say something short."}]
        }),
        rt,
        _server: server,
    }
}

impl Fixture {
    fn plain_call(&self, n: u64) -> Value {
        self.rt.block_on(async {
            let key = format!("00000000-0000-4000-8000-{n:012x}");
            self.plain
                .post(&self.url)
                .bearer_auth(KEY)
                .header("idempotency-key", key)
                .json(&self.body)
                .timeout(Duration::from_secs(60))
                .send()
                .await
                .expect("send")
                .json::<Value>()
                .await
                .expect("json")
        })
    }

    fn steadfast_call(&self) -> Value {
        self.rt
            .block_on(self.steadfast.chat(self.body.clone()))
            .expect("reply")
            .body
    }
}

fn bench(c: &mut Criterion) {
    let f = fixture();
    let mut n = 0u64;
    let mut g = c.benchmark_group("loopback_ok");
    g.bench_function("plain_reqwest", |b| {
        b.iter(|| {
            n += 1;
            f.plain_call(n)
        })
    });
    g.bench_function("steadfast_reqwest", |b| b.iter(|| f.steadfast_call()));
    g.finish();

    // The client-side work alone, without the network: what both paths do with the
    // JSON (serialize the request, parse the reply), and steadfast's whole session
    // around the same work (engine decisions, headers, outcome mapping, counters).
    let reply = f.plain_call(0);
    let reply_bytes = serde_json::to_vec(&reply).expect("json");
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "content-type",
        http::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        "x-request-id",
        http::HeaderValue::from_static("req_0123456789"),
    );
    let shared = f.steadfast.shared();
    let mut g = c.benchmark_group("no_network");
    g.bench_function("json_only", |b| {
        b.iter(|| {
            let sent = serde_json::to_vec(&f.body).expect("json");
            let got: Value = serde_json::from_slice(&reply_bytes).expect("json");
            (sent, got)
        })
    });
    g.bench_function("steadfast_session", |b| {
        b.iter(|| {
            let now = f.steadfast.now();
            let mut s: Session<'_, ()> = Session::new(shared, now, None, &f.body, false);
            let Step::Send(out) = s.poll(now) else {
                unreachable!("a fresh call sends")
            };
            drop(out);
            let now = f.steadfast.now();
            s.on_response(Now::new(now, wall_unix()), 200, &headers, &reply_bytes);
            let Step::Done = s.poll(now) else {
                unreachable!("a success ends the call")
            };
            s.into_reply().expect("reply")
        })
    });
    g.finish();
}

/// Interleaved rounds of `calls` calls each; the median of the per-round ratios.
fn ratio(rounds: usize, calls: u64) {
    let f = fixture();
    let mut n = 1u64 << 40;
    for _ in 0..200 {
        n += 1;
        f.plain_call(n);
        f.steadfast_call();
    }
    let mut ratios = Vec::with_capacity(rounds);
    let (mut plain_total, mut steadfast_total) = (Duration::ZERO, Duration::ZERO);
    for round in 0..rounds {
        let mut time_plain = || {
            let t = Instant::now();
            for _ in 0..calls {
                n += 1;
                f.plain_call(n);
            }
            t.elapsed()
        };
        let (p, s) = if round % 2 == 0 {
            let p = time_plain();
            let t = Instant::now();
            (0..calls).for_each(|_| drop(f.steadfast_call()));
            (p, t.elapsed())
        } else {
            let t = Instant::now();
            (0..calls).for_each(|_| drop(f.steadfast_call()));
            let s = t.elapsed();
            (time_plain(), s)
        };
        plain_total += p;
        steadfast_total += s;
        ratios.push(s.as_secs_f64() / p.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    let per = |d: Duration| d.as_secs_f64() * 1e6 / (rounds as f64 * calls as f64);
    println!(
        "interleaved A/B ({rounds} rounds x {calls} calls each): plain reqwest {:.1} us/call, \
         steadfast-reqwest {:.1} us/call, overhead ratio (median of rounds) {:.3} \
         ({:+.1}%), ratio of totals {:.3}, min {:.3}, max {:.3}",
        per(plain_total),
        per(steadfast_total),
        median,
        (median - 1.0) * 100.0,
        steadfast_total.as_secs_f64() / plain_total.as_secs_f64(),
        ratios[0],
        ratios[ratios.len() - 1],
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
    if !std::env::args().any(|a| a == "--list" || a == "--test") {
        ratio(60, 100);
    }
}
