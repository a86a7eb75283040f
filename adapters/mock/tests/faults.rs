//! Every fault and scenario observed from the client side; determinism; idempotency.

mod common;

use common::*;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use steadfast_mock::{Fault, Knobs, MockConfig, MockServer};

fn with_script(faults: Vec<Fault>) -> MockServer {
    MockServer::start(MockConfig::default().with_script(faults)).unwrap()
}

/// The built-in `name` with some knobs turned.
fn knobs(name: &str, turn: impl FnOnce(&mut Knobs)) -> MockConfig {
    let mut c = MockConfig::builtin(name).unwrap();
    turn(&mut c.knobs);
    c
}

fn is_reset(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe
    )
}

#[test]
fn scripted_faults_come_in_order() {
    let s = with_script(vec![
        Fault::status_retry_after(429, "2"),
        Fault::status(500),
        Fault::Ok,
        Fault::Status {
            status: 503,
            retry_after: Some("soon, maybe".to_owned()),
            retry_after_ms: Some("-5".to_owned()),
            body: Some("{\"custom\":true}".to_owned()),
            headers: vec![("x-should-retry".to_owned(), "false".to_owned())],
        },
    ]);
    let a = s.addr();
    let r = openai(a, "k", "x", &[]).unwrap();
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("2"));
    assert_eq!(r.json()["error"]["code"], "rate_limit_exceeded");
    let r = anthropic(a, "k", "x", &[]).unwrap();
    assert_eq!(r.status, 500);
    assert_eq!(r.json()["error"]["type"], "api_error");
    assert_eq!(openai(a, "k", "x", &[]).unwrap().status, 200);
    let r = openai(a, "k", "x", &[]).unwrap();
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("soon, maybe"));
    assert_eq!(r.header("retry-after-ms"), Some("-5"));
    assert_eq!(r.header("x-should-retry"), Some("false"));
    assert_eq!(r.json()["custom"], true);
    // Script exhausted: the scenario (ok) applies.
    assert_eq!(openai(a, "k", "x", &[]).unwrap().status, 200);
    let stats = s.stats();
    assert_eq!(stats.fault("status"), 3);
    assert_eq!(stats.script_remaining, 0);
}

#[test]
fn push_faults_at_runtime() {
    let s = MockServer::start(MockConfig::default()).unwrap();
    assert_eq!(openai(s.addr(), "k", "x", &[]).unwrap().status, 200);
    s.push_faults(&[Fault::status(529), Fault::status(402)]);
    let r = anthropic(s.addr(), "k", "x", &[]).unwrap();
    assert_eq!(r.status, 529);
    assert_eq!(r.json()["error"]["type"], "overloaded_error");
    let r = anthropic(s.addr(), "k", "x", &[]).unwrap();
    assert_eq!(r.status, 402);
    assert_eq!(r.json()["error"]["type"], "billing_error");
}

#[test]
fn reset_after_request() {
    let s = with_script(vec![Fault::Reset]);
    let err = openai(s.addr(), "k", "x", &[]).unwrap_err();
    assert!(is_reset(&err), "{err:?}");
    assert_eq!(openai(s.addr(), "k", "x", &[]).unwrap().status, 200);
    assert_eq!(s.stats().fault("reset"), 1);
}

#[test]
fn reset_before_request_on_accept_and_on_reused_connection() {
    let s = with_script(vec![Fault::ResetBeforeRequest]);
    // Claimed at accept: the connection is reset before anything is read.
    let mut c = Client::connect(s.addr()).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let outcome = c.chat("k", "x", false).unwrap_err();
    assert!(
        is_reset(&outcome) || outcome.kind() == ErrorKind::UnexpectedEof,
        "{outcome:?}"
    );
    assert_eq!(s.stats().total_requests, 0);

    // On a kept-alive connection: the next request is met by a reset.
    let mut c = Client::connect(s.addr()).unwrap();
    let body = chat_body("x", false);
    let headers = [("authorization", "Bearer k")];
    assert_eq!(
        c.request("POST", "/v1/chat/completions", &headers, body.as_bytes())
            .unwrap()
            .status,
        200
    );
    s.push_faults(&[Fault::ResetBeforeRequest]);
    let err = c
        .request("POST", "/v1/chat/completions", &headers, body.as_bytes())
        .unwrap_err();
    assert!(is_reset(&err), "{err:?}");
    let stats = s.stats();
    assert_eq!(stats.fault("reset_before_request"), 2);
    assert_eq!(stats.processed, 1);
}

#[test]
fn hang_never_answers() {
    let s = with_script(vec![Fault::Hang]);
    let mut c = Client::connect(s.addr()).unwrap();
    c.set_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let err = c.chat("k", "x", false).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(s.stats().fault("hang"), 1);
}

#[test]
fn malformed_body() {
    let s = with_script(vec![Fault::Malformed, Fault::Malformed]);
    let r = openai(s.addr(), "k", "some text here", &[]).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.complete);
    assert!(serde_json::from_slice::<serde_json::Value>(&r.body).is_err());
    // In a stream, one event carries cut JSON.
    let mut c = Client::connect(s.addr()).unwrap();
    let r = c.chat("k", "a b", true).unwrap();
    assert_eq!(r.status, 200);
    let bad = sse_events(&r.body)
        .iter()
        .filter(|(_, d)| d != "[DONE]" && serde_json::from_str::<serde_json::Value>(d).is_err())
        .count();
    assert_eq!(bad, 1);
}

#[test]
fn truncated_body() {
    let s = with_script(vec![Fault::TruncatedBody]);
    let r = openai(s.addr(), "k", "some text", &[]).unwrap();
    assert_eq!(r.status, 200);
    assert!(!r.complete);
    let announced: usize = r.header("content-length").unwrap().parse().unwrap();
    assert_eq!(r.body.len(), announced / 2);
}

#[test]
fn stream_cut_after_events() {
    let s = with_script(vec![
        Fault::StreamCut { after_events: 2 },
        Fault::StreamCut { after_events: 1 },
    ]);
    let mut c = Client::connect(s.addr()).unwrap();
    let r = c.messages("k", "one two three", true).unwrap();
    assert_eq!(r.status, 200);
    assert!(!r.complete);
    let events = sse_events(&r.body);
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].0.as_deref(), Some("message_start"));
    assert!(c.is_closed());
    // A non-stream request gets a truncated body instead.
    let r = openai(s.addr(), "k", "x", &[]).unwrap();
    assert!(!r.complete);
}

#[test]
fn trickle_sends_slowly() {
    let s = with_script(vec![Fault::Trickle {
        bytes_per_sec: 2000,
    }]);
    let started = Instant::now();
    let r = openai(s.addr(), "k", "slow body", &[]).unwrap();
    let elapsed = started.elapsed();
    assert_eq!(r.status, 200);
    assert!(r.complete);
    let min = Duration::from_secs_f64(r.body.len() as f64 / 2000.0 * 0.8);
    assert!(elapsed >= min, "{elapsed:?} < {min:?}");
    assert_eq!(r.json()["choices"][0]["message"]["content"], "slow body");
}

#[test]
fn huge_body_and_huge_header() {
    let s = with_script(vec![
        Fault::HugeBody { bytes: 200_000 },
        Fault::HugeHeader { bytes: 20_000 },
    ]);
    let r = openai(s.addr(), "k", "x", &[]).unwrap();
    assert_eq!(r.status, 200);
    assert!(
        r.body.len() >= 200_000 && r.body.len() < 201_000,
        "{}",
        r.body.len()
    );
    assert!(
        r.json()["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .len()
            > 199_000
    );
    let r = openai(s.addr(), "k", "x", &[]).unwrap();
    assert_eq!(r.header("x-mock-padding").unwrap().len(), 20_000);
}

#[test]
fn filler_bodies_are_made_as_they_go() {
    let s = with_script(vec![
        Fault::filler(Some(300_000)),
        Fault::Filler {
            bytes: Some(1000),
            piece: 64,
            every_ms: 0,
            chunked: true,
            after_first_event: false,
        },
        Fault::filler(None),
    ]);
    let r = openai(s.addr(), "k", "x", &[]).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("300000"));
    assert!(r.complete && r.body.len() == 300_000 && r.body.iter().all(|&b| b == b'a'));
    let r = openai(s.addr(), "k", "x", &[]).unwrap();
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert!(r.complete && r.body.len() == 1000);
    assert_eq!(s.stats().filler_bytes, 301_000);
    // Endless: read a few pieces' worth, then hang up; the server stops writing.
    let mut c = Client::connect(s.addr()).unwrap();
    let body = chat_body("x", false);
    let headers = [
        ("authorization", "Bearer k"),
        ("content-type", "application/json"),
    ];
    c.send("POST", "/v1/chat/completions", &headers, body.as_bytes())
        .unwrap();
    let mut got = 0usize;
    let mut buf = [0u8; 65_536];
    while got < 1_000_000 {
        got += std::io::Read::read(&mut c.stream, &mut buf).unwrap();
    }
    drop(c);
    let stop = Instant::now() + Duration::from_secs(5);
    let mut last = s.stats().filler_bytes;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = s.stats().filler_bytes;
        if now == last || Instant::now() > stop {
            break;
        }
        last = now;
    }
    let sent = s.stats().filler_bytes - 301_000;
    eprintln!("endless filler: {sent} bytes written, {got} read");
    assert!(
        (1_000_000 - 64 * 1024..64 * 1024 * 1024).contains(&sent),
        "{sent}"
    );
    assert_eq!(s.stats().fault("filler"), 3);
}

#[test]
fn filler_stream_after_a_first_event() {
    let s = with_script(vec![Fault::Filler {
        bytes: Some(10),
        piece: 5,
        every_ms: 0,
        chunked: false,
        after_first_event: true,
    }]);
    let mut c = Client::connect(s.addr()).unwrap();
    let headers = [
        ("authorization", "Bearer k"),
        ("content-type", "application/json"),
    ];
    let r = c
        .request(
            "POST",
            "/v1/chat/completions",
            &headers,
            chat_body("x", true).as_bytes(),
        )
        .unwrap();
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let text = r.text();
    assert!(
        text.starts_with("data: {") && text.ends_with("\n\naaaaaaaaaa"),
        "{text}"
    );
}

#[test]
fn latency_fault_delays() {
    let s = with_script(vec![Fault::Latency { ms: 150 }]);
    let started = Instant::now();
    assert_eq!(openai(s.addr(), "k", "x", &[]).unwrap().status, 200);
    assert!(started.elapsed() >= Duration::from_millis(150));
}

#[test]
fn script_file_drives_the_server() {
    let config = MockConfig::from_toml_str(
        r#"
        scenario = "ok"
        [[fault]]
        kind = "status"
        status = 429
        retry_after = "1"
        retry_after_ms = "1000"
        repeat = 2
        [[fault]]
        kind = "ok"
        "#,
    )
    .unwrap();
    let s = MockServer::start(config).unwrap();
    let statuses: Vec<u16> = (0..4)
        .map(|_| openai(s.addr(), "k", "x", &[]).unwrap().status)
        .collect();
    assert_eq!(statuses, [429, 429, 200, 200]);
}

/// The statuses (0 for a transport error) of one attempt per key, in the given order.
fn first_attempts(addr: SocketAddr, keys: &[String]) -> Vec<(String, u16)> {
    keys.iter()
        .map(|k| {
            let status =
                openai(addr, "k", "same prompt", &[("idempotency-key", k)]).map_or(0, |r| r.status);
            (k.clone(), status)
        })
        .collect()
}

#[test]
fn flaky_is_deterministic_per_key_not_per_order() {
    let keys: Vec<String> = (0..60).map(|i| format!("call-{i}")).collect();
    let config = || MockConfig::builtin("flaky").unwrap().with_seed(42);
    let s1 = MockServer::start(config()).unwrap();
    let mut run1 = first_attempts(s1.addr(), &keys);
    let s2 = MockServer::start(config()).unwrap();
    let reversed: Vec<String> = keys.iter().rev().cloned().collect();
    let mut run2 = first_attempts(s2.addr(), &reversed);
    run1.sort();
    run2.sort();
    assert_eq!(run1, run2);
    let failures = run1.iter().filter(|(_, s)| *s != 200).count();
    assert!((5..=35).contains(&failures), "{failures} failures of 60");
    // Another seed gives another pattern.
    let s3 = MockServer::start(config().with_seed(43)).unwrap();
    let mut run3 = first_attempts(s3.addr(), &keys);
    run3.sort();
    assert_ne!(run1, run3);
}

#[test]
fn flaky_second_attempts_also_reproducible_without_keys() {
    // Without a key the identity is the path and body; each repeat draws on its own.
    let sequence = |seed| {
        let s = MockServer::start(MockConfig::builtin("flaky").unwrap().with_seed(seed)).unwrap();
        (0..30)
            .map(|i| {
                openai(s.addr(), "k", &format!("prompt {}", i % 10), &[]).map_or(0, |r| r.status)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(sequence(7), sequence(7));
}

#[test]
fn flaky_unkeyed_equal_bodies_keep_failing_at_the_full_rate() {
    let s = MockServer::start(MockConfig::builtin("flaky").unwrap().with_seed(3)).unwrap();
    let failures = (0..200)
        .filter(|_| openai(s.addr(), "k", "the same prompt", &[]).map_or(true, |r| r.status != 200))
        .count();
    assert!((30..=90).contains(&failures), "{failures} of 200");
}

#[test]
fn flaky_failures_are_retryable_and_retries_get_through() {
    let s = MockServer::start(
        knobs("flaky", |k| {
            k.retry_after = Some(Duration::from_millis(200));
        })
        .with_seed(1),
    )
    .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..150 {
        let key = format!("logical-{i}");
        let mut ok = false;
        for _attempt in 0..5 {
            match anthropic(s.addr(), "k", "hello", &[("idempotency-key", &key)]) {
                Ok(r) if r.status == 200 => {
                    ok = true;
                    break;
                }
                Ok(r) => {
                    seen.insert(r.status);
                    assert!(
                        [429, 500, 502, 503, 529].contains(&r.status),
                        "{}",
                        r.status
                    );
                    if r.status == 429 {
                        assert_eq!(r.header("retry-after"), Some("1"));
                        // A capacity 429, not the key's bucket: no rate-limit headers.
                        assert_eq!(r.json()["error"]["type"], "rate_limit_error");
                    }
                    if r.status == 502 {
                        assert_eq!(r.header("content-type"), Some("text/html"));
                    }
                }
                Err(e) => {
                    seen.insert(0);
                    assert!(is_reset(&e), "{e:?}");
                }
            }
        }
        assert!(ok, "{key} never succeeded");
    }
    assert!(seen.len() >= 4, "{seen:?}");
    // Every logical call was processed exactly once (resets are work done, replayed).
    let stats = s.stats();
    assert!(
        stats.keys.values().all(|k| k.processed == 1),
        "{:?}",
        stats.keys
    );
}

#[test]
fn idempotent_replay() {
    let s = MockServer::start(MockConfig::default()).unwrap();
    let key = [("idempotency-key", "abc-123")];
    let first = openai(s.addr(), "k", "pay me once", &key).unwrap();
    let second = openai(s.addr(), "k", "pay me once", &key).unwrap();
    assert_eq!(first.status, 200);
    assert_eq!(second.status, 200);
    assert_eq!(first.header("idempotent-replayed"), None);
    assert_eq!(second.header("idempotent-replayed"), Some("true"));
    assert_eq!(first.body, second.body);
    let stats = s.stats();
    let k = stats.key("abc-123").unwrap();
    assert_eq!((k.processed, k.replayed, k.attempts), (1, 1, 2));
    assert_eq!((stats.processed, stats.replayed), (1, 1));
}

#[test]
fn requests_back_before_their_hint_are_counted_early() {
    let s = with_script(vec![
        Fault::status_retry_after(429, "30"),
        Fault::status_retry_after(503, "0"),
    ]);
    let key = [("idempotency-key", "hinted")];
    assert_eq!(openai(s.addr(), "k", "x", &key).unwrap().status, 429);
    // Back at once, 30 s too early: counted.
    assert_eq!(openai(s.addr(), "k", "x", &key).unwrap().status, 503);
    let stats = s.stats();
    assert_eq!(stats.early, 1);
    assert_eq!(stats.key("hinted").unwrap().early, 1);
    // The 503 asked for no wait: the next request is on time.
    assert_eq!(openai(s.addr(), "k", "x", &key).unwrap().status, 200);
    // Another key was told nothing.
    assert_eq!(
        openai(s.addr(), "k", "x", &[("idempotency-key", "other")])
            .unwrap()
            .status,
        200
    );
    assert_eq!(s.stats().early, 1);
}

#[test]
fn replays_consume_no_scripted_fault() {
    let s = MockServer::start(MockConfig::default()).unwrap();
    let key = [("idempotency-key", "k1")];
    assert_eq!(openai(s.addr(), "k", "x", &key).unwrap().status, 200);
    s.push_faults(&[Fault::status(500)]);
    assert_eq!(openai(s.addr(), "k", "x", &key).unwrap().status, 200);
    assert_eq!(s.stats().script_remaining, 1);
    assert_eq!(openai(s.addr(), "k", "x", &[]).unwrap().status, 500);
}

#[test]
fn lost_responses_are_replayed_and_failures_are_not_stored() {
    let s = with_script(vec![Fault::status(503), Fault::Reset, Fault::TruncatedBody]);
    let key = [("idempotency-key", "once")];
    assert_eq!(openai(s.addr(), "k", "x", &key).unwrap().status, 503);
    assert!(openai(s.addr(), "k", "x", &key).is_err());
    let r = openai(s.addr(), "k", "x", &key).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("idempotent-replayed"), Some("true"));
    assert!(r.complete);
    let stats = s.stats();
    let k = stats.key("once").unwrap();
    assert_eq!((k.attempts, k.processed, k.replayed), (3, 1, 1));
    assert_eq!(stats.script_remaining, 1);

    // A stream is replayed as a stream (the script's truncated body cuts the first).
    let mut c = Client::connect(s.addr()).unwrap();
    let headers = [
        ("authorization", "Bearer k"),
        ("idempotency-key", "stream-1"),
    ];
    let body = chat_body("streamed", true);
    let r = c.request("POST", "/v1/chat/completions", &headers, body.as_bytes());
    assert!(!r.unwrap().complete);
    let mut c = Client::connect(s.addr()).unwrap();
    let r = c
        .request("POST", "/v1/chat/completions", &headers, body.as_bytes())
        .unwrap();
    assert_eq!(r.header("idempotent-replayed"), Some("true"));
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(sse_events(&r.body).last().unwrap().1, "[DONE]");
}

#[test]
fn in_progress_key_gets_409() {
    let s = with_script(vec![Fault::Latency { ms: 1000 }]);
    let addr = s.addr();
    let slow =
        std::thread::spawn(move || openai(addr, "k", "x", &[("idempotency-key", "busy")]).unwrap());
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.stats().key("busy").is_none() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    let r = openai(addr, "k", "x", &[("idempotency-key", "busy")]).unwrap();
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["error"]["code"], "idempotency_key_in_use");
    assert_eq!(slow.join().unwrap().status, 200);
    let r = openai(addr, "k", "x", &[("idempotency-key", "busy")]).unwrap();
    assert_eq!(r.header("idempotent-replayed"), Some("true"));
    let k = *s.stats().key("busy").unwrap();
    assert_eq!(
        (k.attempts, k.processed, k.replayed, k.conflicts),
        (3, 1, 1, 1)
    );
}

#[test]
fn ratelimit_headers_openai() {
    let s = MockServer::start(knobs("ratelimit", |k| {
        k.rpm = Some(60);
        k.rate_burst = Some(2);
    }))
    .unwrap();
    let a = s.addr();
    let r1 = openai(a, "key-a", "x", &[]).unwrap();
    let r2 = openai(a, "key-a", "x", &[]).unwrap();
    let r3 = openai(a, "key-a", "x", &[]).unwrap();
    assert_eq!((r1.status, r2.status, r3.status), (200, 200, 429));
    assert_eq!(r1.header("x-ratelimit-limit-requests"), Some("60"));
    assert_eq!(r1.header("x-ratelimit-remaining-requests"), Some("1"));
    assert_eq!(r2.header("x-ratelimit-remaining-requests"), Some("0"));
    let reset = parse_go_duration(r2.header("x-ratelimit-reset-requests").unwrap()).unwrap();
    assert!(
        reset > Duration::from_secs(1) && reset <= Duration::from_secs(2),
        "{reset:?}"
    );
    let retry: u64 = r3.header("retry-after").unwrap().parse().unwrap();
    assert_eq!(retry, 1);
    let retry_ms: u64 = r3.header("retry-after-ms").unwrap().parse().unwrap();
    assert!((500..=1000).contains(&retry_ms), "{retry_ms}");
    assert_eq!(r3.header("x-ratelimit-remaining-requests"), Some("0"));
    assert!(parse_go_duration(r3.header("x-ratelimit-reset-requests").unwrap()).is_some());
    assert_eq!(r3.json()["error"]["code"], "rate_limit_exceeded");
    // Limits are per key.
    assert_eq!(openai(a, "key-b", "x", &[]).unwrap().status, 200);
    // And they refill.
    std::thread::sleep(Duration::from_millis(retry_ms + 20));
    assert_eq!(openai(a, "key-a", "x", &[]).unwrap().status, 200);
    assert_eq!(s.stats().fault("rate_limit"), 1);
}

#[test]
fn ratelimit_headers_anthropic() {
    let s = MockServer::start(knobs("ratelimit", |k| {
        k.rpm = Some(30);
        k.rate_burst = Some(1);
    }))
    .unwrap();
    let r1 = anthropic(s.addr(), "k", "x", &[]).unwrap();
    let r2 = anthropic(s.addr(), "k", "x", &[]).unwrap();
    assert_eq!((r1.status, r2.status), (200, 429));
    assert_eq!(r1.header("anthropic-ratelimit-requests-limit"), Some("30"));
    assert_eq!(
        r1.header("anthropic-ratelimit-requests-remaining"),
        Some("0")
    );
    assert!(looks_rfc3339(
        r1.header("anthropic-ratelimit-requests-reset").unwrap()
    ));
    assert!(looks_rfc3339(
        r2.header("anthropic-ratelimit-requests-reset").unwrap()
    ));
    assert_eq!(r2.header("retry-after"), Some("2"));
    assert_eq!(r2.json()["error"]["type"], "rate_limit_error");
}

#[test]
fn auth_scenario() {
    let s = MockServer::start(MockConfig::builtin("auth").unwrap()).unwrap();
    let r = openai(s.addr(), "sk-bad-0123456789", "x", &[]).unwrap();
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["code"], "invalid_api_key");
    assert!(!r.text().contains("sk-bad-0123456789"));
    let r = anthropic(s.addr(), "sk-ant-REVOKED-1", "x", &[]).unwrap();
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["type"], "authentication_error");
    assert_eq!(openai(s.addr(), "sk-good", "x", &[]).unwrap().status, 200);
    assert_eq!(openai(s.addr(), "sk-quota", "x", &[]).unwrap().status, 200);
    assert_eq!(s.stats().fault("auth"), 2);
}

#[test]
fn quota_scenario() {
    let s = MockServer::start(MockConfig::builtin("quota").unwrap()).unwrap();
    let r = openai(s.addr(), "sk-quota-1", "x", &[]).unwrap();
    assert_eq!(r.status, 429);
    assert_eq!(r.json()["error"]["type"], "insufficient_quota");
    assert_eq!(r.json()["error"]["code"], "insufficient_quota");
    assert_eq!(r.header("retry-after"), None);
    let r = anthropic(s.addr(), "sk-ant-quota", "x", &[]).unwrap();
    assert_eq!(r.status, 402);
    assert_eq!(r.json()["error"]["type"], "billing_error");
    assert_eq!(openai(s.addr(), "sk-bad", "x", &[]).unwrap().status, 200);
}

#[test]
fn key_rules_everywhere() {
    let s = MockServer::start(knobs("ok", |k| {
        k.key_rules = true;
    }))
    .unwrap();
    assert_eq!(openai(s.addr(), "bad", "x", &[]).unwrap().status, 401);
    assert_eq!(openai(s.addr(), "quota", "x", &[]).unwrap().status, 429);
    assert_eq!(openai(s.addr(), "fine", "x", &[]).unwrap().status, 200);
}

#[test]
fn outage_by_time() {
    let s = MockServer::start(knobs("outage", |k| {
        k.outage_for = Some(Duration::from_millis(500));
    }))
    .unwrap();
    let r = openai(s.addr(), "k", "x", &[]).unwrap();
    assert_eq!(r.status, 503);
    assert_eq!(r.json()["error"]["type"], "server_error");
    let r = anthropic(s.addr(), "k", "x", &[]).unwrap();
    assert_eq!(r.status, 529);
    assert_eq!(r.json()["error"]["type"], "overloaded_error");
    std::thread::sleep(Duration::from_millis(520));
    assert_eq!(openai(s.addr(), "k", "x", &[]).unwrap().status, 200);
    assert_eq!(s.stats().fault("outage"), 2);
}

#[test]
fn outage_by_requests() {
    let s = MockServer::start(knobs("outage", |k| {
        k.outage_for = Some(Duration::ZERO);
        k.outage_requests = Some(2);
        k.outage_status = Some(502);
    }))
    .unwrap();
    let statuses: Vec<u16> = (0..3)
        .map(|_| openai(s.addr(), "k", "x", &[]).unwrap().status)
        .collect();
    assert_eq!(statuses, [502, 502, 200]);
}

#[test]
fn outage_switch() {
    let s = MockServer::start(MockConfig::default().with_script([Fault::status(500)])).unwrap();
    s.set_down(true);
    assert_eq!(openai(s.addr(), "k", "x", &[]).unwrap().status, 503);
    assert_eq!(anthropic(s.addr(), "k", "x", &[]).unwrap().status, 529);
    assert_eq!(s.stats().script_remaining, 1);
    s.set_down(false);
    assert_eq!(openai(s.addr(), "k", "x", &[]).unwrap().status, 500);
    assert_eq!(openai(s.addr(), "k", "x", &[]).unwrap().status, 200);
}

#[test]
fn slow_scenario() {
    let s = MockServer::start(knobs("slow", |k| {
        k.latency_min = Some(Duration::from_millis(60));
        k.latency_max = Some(Duration::from_millis(80));
    }))
    .unwrap();
    let started = Instant::now();
    assert_eq!(openai(s.addr(), "k", "x", &[]).unwrap().status, 200);
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(60), "{elapsed:?}");
}

fn always(scenario: &str) -> MockServer {
    MockServer::start(knobs(scenario, |k| k.fault_rate = Some(1.0))).unwrap()
}

#[test]
fn mixed_scenarios_apply_their_fault() {
    let s = always("reset");
    assert!(is_reset(&openai(s.addr(), "k", "x", &[]).unwrap_err()));

    let s = always("malformed");
    let r = openai(s.addr(), "k", "x", &[]).unwrap();
    assert_eq!(r.status, 200);
    assert!(serde_json::from_slice::<serde_json::Value>(&r.body).is_err());

    let s = always("stream-cut");
    let mut c = Client::connect(s.addr()).unwrap();
    let r = c.chat("k", "a b c d", true).unwrap();
    assert!(!r.complete);
    assert_eq!(sse_events(&r.body).len(), 2);

    let s = always("hang");
    let mut c = Client::connect(s.addr()).unwrap();
    c.set_timeout(Duration::from_millis(200));
    let err = c.chat("k", "x", false).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut
    ));
}

#[test]
fn mixed_scenarios_fail_less_on_repeats() {
    // fault_rate 1.0: the first attempt always fails, the k-th repeat with 1/2^k.
    let s = always("malformed");
    let mut good = 0;
    for i in 0..20 {
        let key = format!("m-{i}");
        let mut attempts = 0;
        loop {
            attempts += 1;
            let r = openai(s.addr(), "k", "x", &[("idempotency-key", &key)]).unwrap();
            if serde_json::from_slice::<serde_json::Value>(&r.body).is_ok() {
                break;
            }
            assert!(attempts < 20);
        }
        // Malformed is "work done": the second attempt is a replay of the stored success.
        assert_eq!(attempts, 2);
        good += 1;
    }
    assert_eq!(good, 20);
}
