//! The loopback suite run through `steadfast-ureq` (blocking).
// steadfast-ureq's `CallError` holds the `ureq::Error` by value (see its crate root).
#![allow(clippy::result_large_err)]

#[macro_use]
mod support;

use support::clients::Ureq;
use support::{Build, Harness};

all_scenarios!(Ureq);

#[test]
fn one_client_serves_many_threads() {
    let server = support::mock("slow");
    let client = Ureq::build(Build::new(support::openai(&server)).policy(|p| {
        p.retry.attempt_timeout = std::time::Duration::from_secs(3);
    }));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let c = client.clone();
            std::thread::spawn(move || c.chat(support::ask(&format!("call {i}"))))
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let r = h.join().expect("thread").expect("reply");
        assert_eq!(support::reply_text(&r.body), format!("call {i}"));
    }
    assert_eq!(server.stats().processed, 8);
}
