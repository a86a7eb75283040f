//! With the `tracing` feature: the resilience decisions come out as the named
//! `steadfast.*` events (the name is the event's and its message), driven through a
//! session on a virtual clock. (Its own test binary: it sets the process's subscriber.)
#![cfg(feature = "tracing")]

use std::sync::{Arc, Mutex};

use http::HeaderMap;
use serde_json::json;
use steadfast_core::policy::Policy;
use steadfast_core::time::Timestamp;
use steadfast_http::{EndpointDef, Now, Provider, Session, Setup, Shared};

#[path = "support/recorder.rs"]
mod recorder;

use recorder::Recorder;

fn shared(policy: Policy) -> Shared {
    let mut setup = Setup::default();
    setup.policy = policy;
    setup.endpoints = vec![EndpointDef::new(
        "http://127.0.0.1:9",
        Provider::OpenAi,
        "sk-events-secret",
    )];
    setup.seed = Some([2; 32]);
    Shared::new(setup).expect("setup")
}

/// Runs one call answered by `statuses` in turn (each with `headers`), jumping the
/// virtual clock over every wait.
fn call(shared: &Shared, answers: &[(u16, HeaderMap)]) {
    let request = json!({"model": "m"});
    let mut at = Timestamp::from_secs(1);
    let mut s: Session<'_, ()> = Session::new(shared, at, None, &request, false);
    let mut answers = answers.iter();
    while next(&mut s, &mut at) {
        let Some((status, headers)) = answers.next() else {
            break;
        };
        s.on_response(Now::new(at, 1_800_000_000), *status, headers, b"{}");
    }
    let _ = s.into_reply();
}

/// Whether the session has another attempt to send; its sleeps jump the virtual
/// clock `at`.
fn next(s: &mut Session<'_, ()>, at: &mut Timestamp) -> bool {
    s.next_send(*at, |until| {
        *at = until;
        until
    })
    .is_some()
}

fn lines_with(lines: &[String], name: &str) -> Vec<String> {
    let message = format!("message={name} ");
    lines
        .iter()
        .filter(|l| l.contains(&message))
        .cloned()
        .collect()
}

#[test]
fn decisions_are_named_steadfast_events() {
    let rec = Arc::new(Mutex::new(Vec::new()));
    let lines = Arc::clone(&rec);
    let recorder = Recorder(move |_, line| lines.lock().unwrap().push(line));
    tracing::subscriber::set_global_default(recorder).expect("first subscriber");

    // A 429 asking for 250 ms cools the key down; a success follows.
    let mut policy = Policy::default().without_jitter();
    policy.breaker.enabled = false;
    let s = shared(policy);
    let mut hinted = HeaderMap::new();
    hinted.insert("retry-after-ms", "250".parse().unwrap());
    call(&s, &[(429, hinted), (200, HeaderMap::new())]);

    // One 503 opens a breaker set to open on the first failure.
    let mut policy = Policy::default().without_jitter();
    policy.breaker.consecutive_failures = Some(1);
    policy.breaker.failure_rate = None;
    policy.breaker.min_calls = 1;
    policy.retry.max_attempts = 1;
    let s = shared(policy);
    call(&s, &[(503, HeaderMap::new())]);

    // A spent retry budget (no deposits, no floor) denies the retry of a 503.
    let mut policy = Policy::default().without_jitter();
    policy.breaker.enabled = false;
    policy.budget.ratio = 0.0;
    policy.budget.min_per_sec = 0;
    let s = shared(policy);
    call(&s, &[(503, HeaderMap::new())]);

    let lines = rec.lock().unwrap().clone();
    let cooled = lines_with(&lines, "steadfast.key.cooldown");
    assert_eq!(cooled.len(), 1, "{lines:#?}");
    assert!(cooled[0].contains("wait_ms=250 "), "{cooled:?}");
    let retry = lines_with(&lines, "steadfast.retry.scheduled");
    assert!(retry.iter().any(|l| l.contains("wait_ms=")), "{lines:#?}");
    let opened = lines_with(&lines, "steadfast.breaker.transition");
    assert!(
        opened
            .iter()
            .any(|l| l.contains("from=Closed") && l.contains("to=Open")),
        "{lines:#?}"
    );
    assert_eq!(
        lines_with(&lines, "steadfast.budget.denied").len(),
        1,
        "{lines:#?}"
    );
    let gave_up = lines_with(&lines, "steadfast.give_up");
    assert!(
        gave_up
            .iter()
            .any(|l| l.contains("reason=\"budget_exhausted\"")),
        "{gave_up:#?}"
    );
    assert!(lines.iter().all(|l| !l.contains("secret")), "{lines:#?}");
}
