//! With the `tracing` feature: one `tracing` event per core event, and no secret in
//! any of them. (Its own test binary: tracing caches per-callsite interest process-wide,
//! so a recorder must not share the process with concurrent tests.)
#![cfg(feature = "tracing")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::HeaderMap;
use serde_json::json;
use steadfast_core::policy::Policy;
use steadfast_http::{EndpointDef, Provider, Session, Setup, Shared};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Records every event's fields as text.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

struct Text<'a>(&'a mut String);

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={:?} ", field.name(), value));
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = String::new();
        event.record(&mut Text(&mut line));
        self.0.lock().unwrap().push(line);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn one_tracing_event_per_core_event_and_no_secret() {
    let rec = Recorder::default();
    tracing::subscriber::set_global_default(rec.clone()).expect("first subscriber");
    let mut policy = Policy::default();
    policy.backoff.base = Duration::from_millis(1);
    policy.backoff.cap = Duration::from_millis(2);
    let mut setup = Setup::default();
    setup.policy = policy;
    setup.endpoints = vec![EndpointDef::new(
        "http://127.0.0.1:9",
        Provider::OpenAi,
        "sk-secret",
    )];
    setup.seed = Some([1; 32]);
    let shared = Shared::new(setup).expect("setup");
    let request = json!({});
    let mut s: Session<'_, ()> = Session::new(&shared, None, &request, false);
    assert!(s.next_send_blocking().is_some());
    s.on_response(
        429,
        &HeaderMap::new(),
        br#"{"error":{"message":"sk-secret"}}"#,
    );
    assert!(s.next_send_blocking().is_some());
    s.on_response(200, &HeaderMap::new(), b"{}");
    assert!(s.next_send_blocking().is_none());
    s.into_reply().expect("success");
    let lines = rec.0.lock().unwrap().clone();
    // Two attempts started, a key cooled, a retry scheduled, a success.
    assert_eq!(lines.len(), 5, "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.contains("call succeeded")),
        "{lines:#?}"
    );
    assert!(lines.iter().all(|l| !l.contains("secret")), "{lines:#?}");
}
