//! With the `tracing` feature: one `tracing` event per core event, and no secret in
//! any of them. (Its own test binary: tracing caches per-callsite interest process-wide,
//! so a recorder must not share the process with concurrent tests.)
#![cfg(feature = "tracing")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::HeaderMap;
use serde_json::json;
use steadfast_core::policy::Policy;
use steadfast_core::time::Timestamp;
use steadfast_http::{EndpointDef, Now, Provider, Session, Setup, Shared};

#[path = "support/recorder.rs"]
mod recorder;

use recorder::Recorder;

/// Whether the session has another attempt to send; its sleeps jump the virtual
/// clock `at` (the backoff is a jump, not a sleep).
fn next(s: &mut Session<'_, ()>, at: &mut Timestamp) -> bool {
    s.next_send(*at, |until| {
        *at = until;
        until
    })
    .is_some()
}

#[test]
fn one_tracing_event_per_core_event_and_no_secret() {
    let rec = Arc::new(Mutex::new(Vec::new()));
    let lines = Arc::clone(&rec);
    let recorder = Recorder(move |_, line| lines.lock().unwrap().push(line));
    tracing::subscriber::set_global_default(recorder).expect("first subscriber");
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
    let mut at = Timestamp::ZERO;
    let now = |at| Now::new(at, 1_800_000_000);
    let mut s: Session<'_, ()> = Session::new(&shared, at, None, &request, false);
    assert!(next(&mut s, &mut at));
    s.on_response(
        now(at),
        429,
        &HeaderMap::new(),
        br#"{"error":{"message":"sk-secret"}}"#,
    );
    assert!(next(&mut s, &mut at));
    s.on_response(now(at), 200, &HeaderMap::new(), b"{}");
    assert!(!next(&mut s, &mut at));
    s.into_reply().expect("success");
    let lines = rec.lock().unwrap().clone();
    // Two attempts started, a key cooled, a retry scheduled, a success.
    assert_eq!(lines.len(), 5, "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.contains("call succeeded")),
        "{lines:#?}"
    );
    assert!(lines.iter().all(|l| !l.contains("secret")), "{lines:#?}");
}
