//! The upstream as a state machine: requests in, answers out, time as an argument.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use core::time::Duration;

use steadfast_core::date::Rfc3339;
use steadfast_core::provider::Provider;
use steadfast_core::time::Timestamp;
use steadfast_upstream::{
    Answer, Body, Delivery, Fault, Reply, RequestFacts, Scenario, Upstream, UpstreamConfig,
    WALL_START, builtin,
};

// Valid for both providers: a model, `max_tokens` (Anthropic requires it) and one user
// turn.
const BODY: &[u8] = br#"{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}"#;
const STREAM: &[u8] =
    br#"{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"a b c"}]}"#;

fn up(scenario: &str) -> Upstream {
    Upstream::new(
        builtin::scenario(scenario).unwrap(),
        UpstreamConfig::default(),
    )
}

fn toml(text: &str) -> Upstream {
    Upstream::new(
        Scenario::from_toml(text).unwrap(),
        UpstreamConfig::default(),
    )
}

fn ms(n: u64) -> Timestamp {
    Timestamp::from_nanos(n * 1_000_000)
}

fn wall(at: Timestamp) -> u64 {
    WALL_START + at.as_nanos() / 1_000_000_000
}

fn ask(u: &mut Upstream, at: Timestamp, p: Provider, key: &str, idem: Option<&str>) -> Answer {
    let facts = RequestFacts::client(p, p.path(), key, idem, BODY);
    u.handle(at, wall(at), &facts)
}

fn openai(u: &mut Upstream, at: Timestamp, idem: Option<&str>) -> Answer {
    ask(u, at, Provider::OpenAi, "sk-a", idem)
}

#[test]
fn a_drained_bucket_tells_the_exact_wait_and_the_time_to_full() {
    let mut u = up("ratelimit");
    for i in 0..60 {
        let a = openai(&mut u, Timestamp::ZERO, None);
        assert_eq!(a.status(), Some(200), "request {i}");
    }
    let at = Timestamp::from_nanos(441_500_000);
    let a = openai(&mut u, at, None);
    assert_eq!(a.status(), Some(429));
    assert_eq!(a.header("retry-after-ms"), Some("559"));
    assert_eq!(a.header("retry-after"), Some("1"));
    assert_eq!(a.header("x-ratelimit-limit-requests"), Some("60"));
    assert_eq!(a.header("x-ratelimit-remaining-requests"), Some("0"));
    assert_eq!(a.header("x-ratelimit-reset-requests"), Some("59.558s"));
    assert_eq!(a.retry_after, Some(Duration::from_micros(558_500)));
    // The same wait, Anthropic's way: whole seconds, and the instant the bucket is full.
    let a = ask(&mut u, at, Provider::Anthropic, "sk-a", None);
    assert_eq!(a.header("retry-after"), Some("1"));
    assert_eq!(a.header("retry-after-ms"), None);
    let full = Rfc3339::utc(WALL_START + 60).to_string();
    assert_eq!(
        a.header("anthropic-ratelimit-requests-reset"),
        Some(full.as_str())
    );
    // Another key has its own bucket; this one lets one through once the wait passed.
    assert_eq!(
        ask(&mut u, at, Provider::OpenAi, "sk-b", None).status(),
        Some(200)
    );
    let later = at.saturating_add(Duration::from_micros(558_500));
    assert_eq!(openai(&mut u, later, None).status(), Some(200));
    assert_eq!(u.stats().fault("rate_limit"), 2);
}

#[test]
fn draws_follow_the_identity_not_the_arrival_order() {
    let keys: Vec<String> = (0..40).map(|i| format!("call-{i}")).collect();
    let run = |order: &[String]| {
        let mut u = up("flaky");
        let mut seen: Vec<(String, Option<u16>)> = order
            .iter()
            .map(|k| (k.clone(), openai(&mut u, Timestamp::ZERO, Some(k)).status()))
            .collect();
        seen.sort();
        seen
    };
    let forward = run(&keys);
    let reversed: Vec<String> = keys.iter().rev().cloned().collect();
    assert_eq!(forward, run(&reversed));
    let failed = forward.iter().filter(|(_, s)| *s != Some(200)).count();
    assert!((3..=25).contains(&failed), "{failed} of 40");
}

#[test]
fn a_stored_success_is_replayed_and_a_busy_key_refused() {
    let mut u = up("ok");
    u.push_faults([Fault::Reset]);
    let lost = openai(&mut u, ms(0), Some("k1"));
    assert_eq!(lost.reply, Reply::Reset);
    // Still in progress until the server is done with it.
    let busy = openai(&mut u, ms(1), Some("k1"));
    assert_eq!(busy.status(), Some(409));
    assert!(busy.ticket.is_none());
    u.finish(lost.ticket.expect("a keyed attempt"));
    let replay = openai(&mut u, ms(2), Some("k1"));
    assert_eq!(replay.status(), Some(200));
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    let k = u.stats().keys["k1"];
    assert_eq!(
        (k.attempts, k.processed, k.replayed, k.conflicts),
        (3, 1, 1, 1)
    );
    // A failure is not stored: the next attempt is processed.
    u.push_faults([Fault::status(503)]);
    let failed = openai(&mut u, ms(3), Some("k2"));
    u.finish(failed.ticket.expect("keyed"));
    let again = openai(&mut u, ms(4), Some("k2"));
    assert_eq!(again.header("idempotent-replayed"), None);
    assert_eq!(u.stats().keys["k2"].processed, 1);
}

#[test]
fn outages_follow_time_and_the_providers_status() {
    let mut u = up("outage");
    assert_eq!(openai(&mut u, ms(19_999), None).status(), Some(200));
    assert_eq!(openai(&mut u, ms(20_000), None).status(), Some(503));
    let a = ask(&mut u, ms(49_999), Provider::Anthropic, "sk-a", None);
    // The built-in names its status: 503 for both.
    assert_eq!(a.status(), Some(503));
    assert_eq!(openai(&mut u, ms(50_000), None).status(), Some(200));
    let mut u = toml(
        "[[endpoints]]\nname = \"e\"\n[[endpoints.outages]]\nstart = \"0s\"\nend = \"0s\"\n\
         kind = \"status\"\nfirst_requests = 2\n",
    );
    let p = Provider::Anthropic;
    let statuses: Vec<_> = (0..3)
        .map(|_| ask(&mut u, ms(0), p, "k", None).status())
        .collect();
    assert_eq!(statuses, [Some(529), Some(529), Some(200)]);
}

#[test]
fn bad_keys_by_index_from_an_instant_and_by_name() {
    let mut u = toml(
        "[[endpoints]]\nname = \"e\"\nkeys = 2\nbad_key_names = [\"revoked\"]\n\
         [[endpoints.bad_keys]]\nkey = 1\nkind = \"quota_exhausted\"\nfrom = \"1s\"\n",
    );
    let p = Provider::OpenAi;
    assert_eq!(ask(&mut u, ms(999), p, "sk-x-1", None).status(), Some(200));
    let a = ask(&mut u, ms(1000), p, "sk-x-1", None);
    assert_eq!(a.status(), Some(429));
    assert_eq!(a.header("retry-after"), None);
    let a = ask(&mut u, ms(1000), Provider::Anthropic, "sk-x-1", None);
    assert_eq!(a.status(), Some(402));
    assert_eq!(ask(&mut u, ms(1000), p, "sk-x-0", None).status(), Some(200));
    assert_eq!(
        ask(&mut u, ms(0), p, "sk-REVOKED", None).status(),
        Some(401)
    );
    assert_eq!(u.stats().fault("quota"), 2);
}

#[test]
fn decaying_faults_let_a_retrying_call_through() {
    let mut u =
        toml("[[endpoints]]\nname = \"e\"\n[endpoints.faults]\nrate_5xx = 1.0\ndecay = 0.5\n");
    let mut attempts = Vec::new();
    for i in 0..200 {
        let key = format!("c{i}");
        let n = (1..=30)
            .find(|_| {
                let a = openai(&mut u, ms(0), Some(&key));
                if let Some(t) = a.ticket.clone() {
                    u.finish(t);
                }
                a.status() == Some(200)
            })
            .expect("gets through");
        attempts.push(n);
    }
    // The first attempt always fails; the second half as often as not, and so on.
    assert!(attempts.iter().all(|&n| n >= 2));
    let second = attempts.iter().filter(|&&n| n == 2).count();
    assert!(
        (70..=130).contains(&second),
        "{second} of 200 on the second attempt"
    );
}

#[test]
fn requests_back_before_their_hint_are_counted_early() {
    let mut u = up("ok");
    u.push_faults([Fault::status_retry_after(429, "30"), Fault::status(503)]);
    let a = openai(&mut u, ms(0), Some("h"));
    u.finish(a.ticket.expect("keyed"));
    let b = openai(&mut u, ms(10), Some("h"));
    u.finish(b.ticket.expect("keyed"));
    let c = openai(&mut u, ms(30_000), Some("h"));
    assert_eq!(c.status(), Some(200));
    assert_eq!(u.stats().early, 1);
}

#[test]
fn requests_are_checked_as_the_providers_check_them() {
    let mut u = up("ok");
    let date = |a: &Answer| a.header("date").map(str::to_owned);
    let facts = RequestFacts {
        method: "POST",
        path: "/v1/chat/completions",
        body: BODY,
        ..RequestFacts::default()
    };
    let a = u.handle(ms(0), WALL_START, &facts);
    assert_eq!(a.status(), Some(401));
    assert_eq!(date(&a).as_deref(), Some("Thu, 01 Jan 2026 00:00:00 GMT"));
    let facts = RequestFacts {
        path: "/v1/models",
        ..facts
    };
    assert_eq!(u.handle(ms(0), WALL_START, &facts).status(), Some(404));
    let facts = RequestFacts::client(Provider::Anthropic, "/v1/messages", "k", None, b"[1]");
    assert_eq!(u.handle(ms(0), WALL_START, &facts).status(), Some(400));
    let facts = RequestFacts {
        anthropic_version: None,
        body: BODY,
        ..facts
    };
    assert_eq!(u.handle(ms(0), WALL_START, &facts).status(), Some(400));
    let ok = openai(&mut u, ms(0), None);
    assert!(
        ok.header("x-request-id")
            .is_some_and(|id| id.starts_with("req_"))
    );
    u.set_down(true);
    assert_eq!(
        ask(&mut u, ms(0), Provider::Anthropic, "k", None).status(),
        Some(529)
    );
    let stats = u.stats();
    assert_eq!((stats.total_requests, stats.processed), (6, 1));
    assert!(stats.down);
}

#[test]
fn a_cut_stream_stops_after_its_events_and_a_body_halfway() {
    let mut u = toml(
        "[[endpoints]]\nname = \"e\"\nlatency = { fixed = \"5ms\" }\n\
         event_latency = { fixed = \"2ms\" }\n[endpoints.faults]\nrate_stream_cut = 1.0\n\
         stream_cut_after = 3\n",
    );
    let p = Provider::Anthropic;
    let facts = RequestFacts::client(p, p.path(), "k", None, STREAM);
    let a = u.handle(ms(0), WALL_START, &facts);
    assert_eq!(a.after, Duration::from_millis(5));
    let Reply::Http(h) = &a.reply else {
        panic!("{a:?}")
    };
    assert_eq!(h.delivery, Delivery::Cut(3));
    let Some(steadfast_upstream::wire::success::Rendered::Events(events)) = h.body.rendered()
    else {
        panic!("a stream")
    };
    assert!(
        events
            .iter()
            .skip(1)
            .all(|(pause, _)| *pause == Duration::from_millis(2))
    );
    let a = ask(&mut u, ms(0), p, "k", None);
    let Reply::Http(h) = &a.reply else {
        panic!("{a:?}")
    };
    assert_eq!(h.delivery, Delivery::Truncated);
    assert!(matches!(
        h.body,
        Body::Success {
            malformed: false,
            ..
        }
    ));
}
