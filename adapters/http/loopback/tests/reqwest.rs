//! The loopback suite run through `steadfast-reqwest` (async; driven from a shared
//! multi-thread runtime).

#[macro_use]
mod support;

use support::clients::{Reqwest, rt};
use support::{Build, Harness};

all_scenarios!(Reqwest);

#[test]
fn calls_are_send_and_run_concurrently() {
    fn assert_send<T: Send>(t: T) -> T {
        t
    }
    let server = support::mock("slow");
    let client = Reqwest::build(Build::new(support::openai(&server)).policy(|p| {
        p.retry.attempt_timeout = std::time::Duration::from_secs(3);
    }));
    let replies = rt().block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let c = client.clone();
                tokio::spawn(assert_send(async move {
                    c.chat(support::ask(&format!("call {i}"))).await
                }))
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.expect("task").expect("reply"));
        }
        out
    });
    for (i, r) in replies.iter().enumerate() {
        assert_eq!(support::reply_text(&r.body), format!("call {i}"));
    }
    assert_eq!(server.stats().processed, 8);
    assert_eq!(client.metrics().successes, 8);
}

#[test]
fn a_dropped_call_is_cancelled_in_the_core() {
    let server = support::mock("ok");
    server.push_faults(&[steadfast_mock::Fault::Hang]);
    let client = Reqwest::build(Build::new(support::openai(&server)).policy(|p| {
        p.limiter.max_in_flight = Some(1);
    }));
    rt().block_on(async {
        let slow = client.chat(support::ask("hangs"));
        let r = tokio::time::timeout(std::time::Duration::from_millis(100), slow).await;
        assert!(r.is_err(), "the hanging call was dropped mid-flight");
        // Its in-flight slot was released: the next call goes through at once.
        let r = client.chat(support::ask("next")).await.expect("success");
        assert_eq!(r.attempts, 1);
    });
    assert_eq!(client.metrics().give_ups.cancelled, 1);
}
