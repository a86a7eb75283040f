//! With the `tracing` and `otel` features, through the client against the mock on
//! loopback, into OpenTelemetry's in-memory exporters (spans through
//! `tracing-opentelemetry`, metrics through the meter): the spans, attributes, events
//! and histograms of a call that retried once and of a call that hedged, and no key in
//! any attribute. Its own test binary: the subscriber is this thread's.
#![cfg(all(feature = "otel", feature = "tracing"))]

use std::collections::BTreeMap;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Meter, MeterProvider};
use opentelemetry::trace::{SpanId, SpanKind, Status, TracerProvider};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, Metric, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use steadfast_core::hedge::HedgeConfig;
use steadfast_mock::{Fault, MockServer};
use steadfast_reqwest::{Client, EndpointDef, Policy, Provider};
use tracing_subscriber::layer::SubscriberExt;

#[path = "support/scripted.rs"]
mod scripted;

const KEY: &str = "sk-otel-spans-secret-92f0";
const SEED: u64 = 0x07e2;

fn client(server: &MockServer, policy: Policy, meter: opentelemetry::metrics::Meter) -> Client {
    Client::builder()
        .endpoint(EndpointDef::new(server.base_url(), Provider::OpenAi, KEY).name("primary"))
        .policy(policy)
        .seed_u64(SEED)
        .meter(meter)
        .build()
        .expect("client builds")
}

/// Backoff 50 ms, no jitter.
fn retrying() -> Policy {
    let mut p = Policy::default().without_jitter();
    p.backoff.base = Duration::from_millis(50);
    p.backoff.cap = Duration::from_millis(50);
    p
}

/// Hedges an attempt unanswered after 100 ms, from a budget that pays every call.
fn hedging() -> Policy {
    let mut p = Policy::default().without_jitter();
    p.hedge = HedgeConfig::after(Duration::from_millis(100)).with_budget(1.0);
    p
}

fn ask() -> serde_json::Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello"}]})
}

fn attrs(span: &SpanData) -> BTreeMap<String, String> {
    span.attributes
        .iter()
        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect()
}

fn attr<'a>(a: &'a BTreeMap<String, String>, k: &str) -> Option<&'a str> {
    a.get(k).map(String::as_str)
}

/// The call spans (no parent) and each one's attempt spans, in start order.
fn tree(spans: &[SpanData]) -> Vec<(&SpanData, Vec<&SpanData>)> {
    let mut calls: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.parent_span_id == SpanId::INVALID)
        .collect();
    calls.sort_by_key(|s| s.start_time);
    calls
        .into_iter()
        .map(|c| {
            let mut attempts: Vec<&SpanData> = spans
                .iter()
                .filter(|s| s.parent_span_id == c.span_context.span_id())
                .collect();
            attempts.sort_by_key(|s| attrs(s)["steadfast.attempt"].parse::<u32>().ok());
            (c, attempts)
        })
        .collect()
}

/// Every string an exporter got: span and event names and attributes, and the
/// metrics' attributes.
fn everything(
    spans: &[SpanData],
    metrics: &[opentelemetry_sdk::metrics::data::ResourceMetrics],
) -> Vec<String> {
    let mut all = Vec::new();
    for s in spans {
        all.push(s.name.to_string());
        all.extend(attrs(s).into_iter().flat_map(|(k, v)| [k, v]));
        for e in s.events.iter() {
            all.push(e.name.to_string());
            all.extend(
                e.attributes
                    .iter()
                    .map(|kv| format!("{}={}", kv.key, kv.value)),
            );
        }
    }
    for rm in metrics {
        for sm in rm.scope_metrics() {
            for m in sm.metrics() {
                all.push(m.name().to_owned());
                all.push(format!("{:?}", m.data()));
            }
        }
    }
    all
}

/// OpenTelemetry's in-memory exporters, fed by `tracing-opentelemetry` (spans) and by
/// the meter given to the clients (metrics).
struct Exported {
    spans: InMemorySpanExporter,
    tracers: SdkTracerProvider,
    metrics: InMemoryMetricExporter,
    meters: SdkMeterProvider,
}

impl Exported {
    fn new() -> Exported {
        let spans = InMemorySpanExporter::default();
        let metrics = InMemoryMetricExporter::default();
        Exported {
            tracers: SdkTracerProvider::builder()
                .with_simple_exporter(spans.clone())
                .build(),
            meters: SdkMeterProvider::builder()
                .with_reader(PeriodicReader::builder(metrics.clone()).build())
                .build(),
            spans,
            metrics,
        }
    }

    /// Runs `f` (given the meter) on a current-thread runtime with the exporting
    /// subscriber as this thread's.
    fn run<T, F: Future<Output = T>>(&self, f: impl FnOnce(Meter) -> F) -> T {
        let subscriber = tracing_subscriber::registry().with(
            tracing_opentelemetry::layer().with_tracer(self.tracers.tracer("steadfast-test")),
        );
        let _guard = tracing::subscriber::set_default(subscriber);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(f(self.meters.meter("steadfast-test")))
    }

    /// What the exporters got: the spans, and the metrics by name.
    fn finished(&self) -> (Vec<SpanData>, Vec<ResourceMetrics>) {
        self.tracers.force_flush().expect("spans flushed");
        self.meters.force_flush().expect("metrics flushed");
        (
            self.spans.get_finished_spans().expect("spans"),
            self.metrics.get_finished_metrics().expect("metrics"),
        )
    }
}

/// The metrics by name.
fn by_name(metrics: &[ResourceMetrics]) -> BTreeMap<String, &Metric> {
    metrics
        .iter()
        .flat_map(|rm| rm.scope_metrics())
        .flat_map(|sm| sm.metrics())
        .map(|m| (m.name().to_owned(), m))
        .collect()
}

/// The `server.port` attribute of a data point.
fn port_of<'a>(mut attributes: impl Iterator<Item = &'a KeyValue>) -> String {
    attributes
        .find(|kv| kv.key.as_str() == "server.port")
        .map(|kv| kv.value.to_string())
        .unwrap_or_default()
}

#[test]
fn spans_and_metrics_of_a_retried_and_a_hedged_call_carry_no_key() {
    let exported = Exported::new();
    let retried = scripted::mock(SEED, vec![Fault::status(500)]);
    let held = scripted::hedgeable(SEED, 0, vec![Fault::Latency { ms: 3_000 }]);
    let (hedged_metrics, retried_port, held_port) = exported.run(|meter| async move {
        let reply = client(&retried, retrying(), meter.clone())
            .chat(ask())
            .await
            .expect("retried to a success");
        assert_eq!(reply.attempts, 2);
        let hedger = client(&held, hedging(), meter.clone());
        let reply = hedger.chat(ask()).await.expect("the hedge answers");
        assert_eq!(reply.attempts, 2);
        (
            hedger.metrics(),
            retried.addr().port().to_string(),
            held.addr().port().to_string(),
        )
    });
    assert_eq!(hedged_metrics.hedges, 1);
    assert_eq!(hedged_metrics.hedges_cancelled, 1);
    assert_eq!(hedged_metrics.retries, 0, "a hedge is not a retry");
    let (finished, metrics) = exported.finished();

    let calls = tree(&finished);
    assert_eq!(calls.len(), 2, "{finished:#?}");
    for ((call, attempts), port) in calls.iter().zip([&retried_port, &held_port]) {
        assert_eq!(call.name, "chat gpt-4o-mini");
        assert_eq!(call.span_kind, SpanKind::Client);
        assert_eq!(call.status, Status::Unset);
        let a = attrs(call);
        assert_eq!(attr(&a, "gen_ai.operation.name"), Some("chat"));
        assert_eq!(attr(&a, "gen_ai.provider.name"), Some("openai"));
        assert_eq!(attr(&a, "gen_ai.request.model"), Some("gpt-4o-mini"));
        assert!(attr(&a, "gen_ai.response.model").is_some(), "{a:#?}");
        assert!(attr(&a, "gen_ai.usage.input_tokens").is_some(), "{a:#?}");
        assert!(attr(&a, "gen_ai.usage.output_tokens").is_some(), "{a:#?}");
        assert_eq!(attr(&a, "server.address"), Some("127.0.0.1"));
        assert_eq!(attr(&a, "server.port"), Some(port.as_str()));
        assert_eq!(attr(&a, "http.response.status_code"), Some("200"));
        assert_eq!(attr(&a, "steadfast.attempts"), Some("2"));
        assert_eq!(attempts.len(), 2, "{attempts:#?}");
        for s in attempts {
            assert_eq!(s.name, "chat gpt-4o-mini");
            assert_eq!(s.span_kind, SpanKind::Client);
        }
    }

    // The retried call: a 500, then a resend that succeeded, the retry between them.
    let (call, attempts) = &calls[0];
    let (first, second) = (attrs(attempts[0]), attrs(attempts[1]));
    assert_eq!(attr(&first, "http.response.status_code"), Some("500"));
    assert_eq!(attr(&first, "error.type"), Some("500"));
    assert!(matches!(attempts[0].status, Status::Error { .. }));
    assert_eq!(attr(&first, "http.request.resend_count"), None);
    assert_eq!(attr(&second, "http.response.status_code"), Some("200"));
    assert_eq!(attr(&second, "http.request.resend_count"), Some("1"));
    assert_eq!(attr(&second, "steadfast.hedge"), Some("false"));
    let events: Vec<&str> = call.events.iter().map(|e| e.name.as_ref()).collect();
    assert!(events.contains(&"steadfast.retry.scheduled"), "{events:?}");
    assert!(!events.contains(&"steadfast.hedge.sent"), "{events:?}");

    // The hedged call: the first attempt, held, lost to the hedge and was dropped
    // unanswered; the hedge answered.
    let (call, attempts) = &calls[1];
    let (held_attempt, hedge) = (attrs(attempts[0]), attrs(attempts[1]));
    assert_eq!(attr(&held_attempt, "steadfast.cancelled"), Some("true"));
    assert_eq!(attr(&held_attempt, "http.response.status_code"), None);
    assert_eq!(attr(&held_attempt, "error.type"), None);
    assert_eq!(attr(&hedge, "steadfast.hedge"), Some("true"));
    assert_eq!(attr(&hedge, "http.response.status_code"), Some("200"));
    assert_eq!(attr(&hedge, "http.request.resend_count"), Some("1"));
    assert_eq!(attr(&hedge, "steadfast.cancelled"), None);
    assert!(attr(&hedge, "gen_ai.usage.output_tokens").is_some());
    let sent: Vec<_> = call
        .events
        .iter()
        .filter(|e| e.name == "steadfast.hedge.sent")
        .collect();
    assert_eq!(sent.len(), 1, "{:#?}", call.events);
    let sent: BTreeMap<String, String> = sent[0]
        .attributes
        .iter()
        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect();
    assert_eq!(attr(&sent, "attempt"), Some("2"));
    assert_eq!(attr(&sent, "beside"), Some("1"));
    assert!(
        !call
            .events
            .iter()
            .any(|e| e.name == "steadfast.retry.scheduled"),
        "{:#?}",
        call.events
    );

    // Both calls in the conventions' histograms, one point each (their ports differ).
    let by_name = by_name(&metrics);
    let duration = by_name["gen_ai.client.operation.duration"];
    let AggregatedMetrics::F64(MetricData::Histogram(h)) = duration.data() else {
        panic!("not an f64 histogram: {duration:?}");
    };
    let ports: Vec<String> = h
        .data_points()
        .map(|p| {
            assert_eq!(p.count(), 1);
            port_of(p.attributes())
        })
        .collect();
    assert_eq!(ports.len(), 2, "{ports:?}");
    assert!(ports.contains(&retried_port) && ports.contains(&held_port));
    let tokens = by_name["gen_ai.client.token.usage"];
    let AggregatedMetrics::U64(MetricData::Histogram(h)) = tokens.data() else {
        panic!("not a u64 histogram: {tokens:?}");
    };
    assert_eq!(h.data_points().count(), 4, "input and output of each call");

    // No key, no Authorization header, in anything either exporter got.
    let all = everything(&finished, &metrics);
    assert!(all.len() > 50, "{}", all.len());
    for v in &all {
        assert!(!v.contains(KEY) && !v.contains("Bearer"), "a secret in {v}");
    }
}

#[test]
fn a_streams_span_and_duration_cover_the_whole_stream_and_its_usage() {
    let exported = Exported::new();
    let whole = scripted::hedgeable(SEED, 30, Vec::new());
    let cut = scripted::hedgeable(SEED, 30, vec![Fault::StreamCut { after_events: 3 }]);
    let ask = json!({
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Say hello"}],
        "stream_options": {"include_usage": true},
    });
    let (whole, cut) = (&whole, &cut);
    exported.run(|meter| async move {
        let events = client(whole, Policy::streaming(), meter.clone())
            .stream(&ask)
            .await
            .expect("a stream")
            .collect_events()
            .await
            .expect("the whole stream");
        assert!(events.len() > 3, "{events:?}");
        let stream = client(cut, Policy::streaming(), meter.clone())
            .stream(&ask)
            .await
            .expect("a stream");
        assert!(
            stream.collect_events().await.is_err(),
            "the cut reaches the caller"
        );
    });
    let (finished, metrics) = exported.finished();

    let calls = tree(&finished);
    assert_eq!(calls.len(), 2, "{finished:#?}");
    // The whole stream: usage and the model from its chunks; its span ends after its
    // attempt's (which ends at the first event).
    let (call, attempts) = &calls[0];
    let a = attrs(call);
    assert_eq!(attr(&a, "steadfast.stream"), Some("true"));
    assert!(attr(&a, "gen_ai.response.model").is_some(), "{a:#?}");
    assert!(attr(&a, "gen_ai.usage.input_tokens").is_some(), "{a:#?}");
    assert!(attr(&a, "gen_ai.usage.output_tokens").is_some(), "{a:#?}");
    assert_eq!(attr(&a, "error.type"), None);
    assert_eq!(call.status, Status::Unset);
    assert_eq!(attempts.len(), 1);
    assert!(call.end_time > attempts[0].end_time);
    // The cut stream: the interruption is the call's error.
    let (call, attempts) = &calls[1];
    let a = attrs(call);
    assert_eq!(attr(&a, "error.type"), Some("stream_cut"), "{a:#?}");
    assert!(matches!(call.status, Status::Error { .. }));
    assert!(call.end_time > attempts[0].end_time);

    let by_name = by_name(&metrics);
    let sums = |name: &str| -> BTreeMap<String, (u64, f64)> {
        let AggregatedMetrics::F64(MetricData::Histogram(h)) = by_name[name].data() else {
            panic!("{name}: not an f64 histogram");
        };
        h.data_points()
            .map(|p| (port_of(p.attributes()), (p.count(), p.sum())))
            .collect()
    };
    let durations = sums("gen_ai.client.operation.duration");
    let firsts = sums("gen_ai.client.operation.time_to_first_chunk");
    for server in [whole, cut] {
        let port = server.addr().port().to_string();
        let (n, whole_s) = durations[&port];
        let (m, first_s) = firsts[&port];
        assert_eq!((n, m), (1, 1));
        assert!(
            whole_s > first_s,
            "{whole_s} s in all, {first_s} s to the first"
        );
    }
    let AggregatedMetrics::U64(MetricData::Histogram(tokens)) =
        by_name["gen_ai.client.token.usage"].data()
    else {
        panic!("not a u64 histogram");
    };
    let whole_port = whole.addr().port().to_string();
    let whole_tokens = tokens
        .data_points()
        .filter(|p| port_of(p.attributes()) == whole_port)
        .count();
    assert_eq!(whole_tokens, 2, "input and output of the whole stream");
}
