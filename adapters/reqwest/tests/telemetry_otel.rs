//! With the `otel` feature, through the client against the mock on loopback: the
//! `gen_ai.client.*` histograms as an in-memory OpenTelemetry exporter sees them, for
//! a call that retried once, one that gave up, and a stream.
#![cfg(feature = "otel")]

use std::collections::BTreeMap;
use std::time::Duration;

use opentelemetry::metrics::MeterProvider;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, HistogramDataPoint, Metric, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde_json::json;
use steadfast_mock::{Fault, MockServer};

#[path = "support/scripted.rs"]
mod scripted;
use scripted::mock;
use steadfast_reqwest::{Client, EndpointDef, Policy, Provider};

const SEED: u64 = 0x07e1;
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

fn client(server: &MockServer, meter: opentelemetry::metrics::Meter, retries: u32) -> Client {
    let mut policy = Policy::default().without_jitter();
    policy.backoff.base = Duration::from_millis(50);
    policy.backoff.cap = Duration::from_millis(50);
    Client::builder()
        .endpoint(EndpointDef::new(
            server.base_url(),
            Provider::OpenAi,
            "sk-otel-test",
        ))
        .policy(policy)
        .max_retries(retries)
        .seed_u64(SEED)
        .meter(meter)
        .build()
        .expect("client builds")
}

fn ask() -> serde_json::Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello"}]})
}

fn attrs<T>(p: &HistogramDataPoint<T>) -> BTreeMap<String, String> {
    p.attributes()
        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect()
}

fn f64_points(m: &Metric) -> Vec<&HistogramDataPoint<f64>> {
    match m.data() {
        AggregatedMetrics::F64(MetricData::Histogram(h)) => h.data_points().collect(),
        other => panic!("{}: not an f64 histogram: {other:?}", m.name()),
    }
}

fn u64_points(m: &Metric) -> Vec<&HistogramDataPoint<u64>> {
    match m.data() {
        AggregatedMetrics::U64(MetricData::Histogram(h)) => h.data_points().collect(),
        other => panic!("{}: not a u64 histogram: {other:?}", m.name()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histograms_after_the_genai_conventions() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let meter = provider.meter("steadfast-test");

    // A call that retried once (500, then 200).
    let retried = mock(SEED, vec![Fault::status(500)]);
    let reply = client(&retried, meter.clone(), 2)
        .chat(ask())
        .await
        .expect("a success");
    assert_eq!(reply.attempts, 2);
    let usage = reply.usage().expect("the mock reports usage");
    let response_model = reply.body["model"].as_str().expect("a model").to_owned();
    // A call that gave up (500 twice, one retry allowed).
    let failing = mock(SEED, vec![Fault::status(500), Fault::status(500)]);
    let e = client(&failing, meter.clone(), 1)
        .chat(ask())
        .await
        .expect_err("gives up");
    assert_eq!(e.status, Some(500));
    // A stream.
    let streaming = mock(SEED, Vec::new());
    let events = client(&streaming, meter, 0)
        .stream(ask())
        .await
        .expect("a stream");
    events.collect_events().await.expect("the whole stream");

    let flushed = tokio::task::spawn_blocking(move || {
        provider.force_flush().expect("flush");
        exporter.get_finished_metrics().expect("metrics")
    })
    .await
    .expect("flushed");
    let mut metrics = BTreeMap::new();
    for rm in &flushed {
        for sm in rm.scope_metrics() {
            for m in sm.metrics() {
                metrics.insert(m.name().to_owned(), m);
            }
        }
    }
    let base = |server: &MockServer| {
        BTreeMap::from([
            ("gen_ai.operation.name".to_owned(), "chat".to_owned()),
            ("gen_ai.provider.name".to_owned(), "openai".to_owned()),
            ("gen_ai.request.model".to_owned(), "gpt-4o-mini".to_owned()),
            ("server.address".to_owned(), "127.0.0.1".to_owned()),
            ("server.port".to_owned(), server.addr().port().to_string()),
        ])
    };

    let duration = metrics["gen_ai.client.operation.duration"];
    assert_eq!(duration.unit(), "s");
    let points = f64_points(duration);
    assert_eq!(points.len(), 3, "{points:#?}");
    let mut ok = base(&retried);
    ok.insert("gen_ai.response.model".into(), response_model.clone());
    let p = points
        .iter()
        .find(|p| attrs(p) == ok)
        .expect("the retried call's point");
    assert_eq!(p.count(), 1);
    assert_eq!(p.bounds().collect::<Vec<_>>(), DURATION_BUCKETS);
    // It waited out its backoff between the attempts.
    assert!(p.sum() >= 0.05, "{}", p.sum());
    let mut failed = base(&failing);
    failed.insert("error.type".into(), "500".into());
    let p = points
        .iter()
        .find(|p| attrs(p) == failed)
        .expect("the failed call's point");
    assert_eq!(p.count(), 1);

    let tokens = metrics["gen_ai.client.token.usage"];
    assert_eq!(tokens.unit(), "{token}");
    let points = u64_points(tokens);
    assert_eq!(
        points.len(),
        2,
        "a stream without stream_options.include_usage reports none: {points:#?}"
    );
    for (kind, n) in [
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
    ] {
        let mut want = ok.clone();
        want.insert("gen_ai.token.type".into(), kind.into());
        let p = points.iter().find(|p| attrs(p) == want).expect(kind);
        assert_eq!((p.count(), p.sum()), (1, n), "{kind}");
        assert_eq!(p.bounds().next(), Some(1.0));
        assert_eq!(p.bounds().last(), Some(67108864.0));
    }

    let first = metrics["gen_ai.client.operation.time_to_first_chunk"];
    assert_eq!(first.unit(), "s");
    let points = f64_points(first);
    assert_eq!(points.len(), 1, "streams only: {points:#?}");
    // A stream's point names the model its chunks named.
    let mut streamed = base(&streaming);
    streamed.insert("gen_ai.response.model".into(), response_model);
    assert_eq!(attrs(points[0]), streamed);
    assert_eq!(points[0].count(), 1);
    assert_eq!(points[0].bounds().collect::<Vec<_>>(), DURATION_BUCKETS);
}
