//! Hostile servers, generic over the adapter: absurd waits, bodies that never end,
//! streams that trickle, bodies and headers of absurd size. Each call must end with a
//! typed error, on time, without holding more than the client's body limit.
//!
//! A call runs on its own thread under a hang guard: if it has not returned within
//! the policy's deadline plus [`SLACK`], the test fails. That bound only detects a
//! hang (the margin is large); what the tests assert is the typed reason and what
//! the server saw.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use steadfast_core::classify::Class;
use steadfast_core::policy::Policy;
use steadfast_http::{DEFAULT_MAX_BODY, Exceeded, GiveUpReason, Interruption, StreamError};
use steadfast_mock::{Fault, MockServer};

use super::*;

/// The deadline of a hostile call.
pub const DEADLINE: Duration = Duration::from_secs(2);
/// The margin past the deadline after which a call counts as hung.
pub const SLACK: Duration = Duration::from_secs(5);
const MIB: u64 = 1024 * 1024;

/// A short policy: 2 s deadline, 500 ms per attempt, enough attempts that the
/// deadline binds before they run out when attempts time out.
pub fn hostile_policy(p: &mut Policy) {
    p.retry.deadline = Some(DEADLINE);
    p.retry.attempt_timeout = Duration::from_millis(500);
    p.retry.first_event_timeout = Some(Duration::from_millis(500));
    p.retry.max_attempts = 10;
}

/// What a test keeps of a call that gave up.
#[derive(Debug)]
pub struct Ended {
    pub reason: GiveUpReason,
    pub attempts: u32,
    pub status: Option<u16>,
    pub class: Option<Class>,
    pub exceeded: Option<Exceeded>,
    pub took: Duration,
}

/// What a test keeps of a stream.
#[derive(Debug)]
pub enum StreamEnd {
    /// The call gave up before the first event.
    GaveUp(Ended),
    /// The stream started: its good events, and how it ended.
    Started {
        events: usize,
        interrupted: Option<Interruption>,
        partial: usize,
        took: Duration,
    },
}

impl StreamEnd {
    /// The good events and the interruption of a stream that started; fails the test
    /// (naming `what`) for a call that gave up.
    pub fn started(self, what: &str) -> (usize, Option<Interruption>) {
        match self {
            StreamEnd::Started {
                events,
                interrupted,
                ..
            } => (events, interrupted),
            StreamEnd::GaveUp(_) => panic!("{what}: {self:?}"),
        }
    }
}

/// Runs `f` on its own thread; fails the test when it has not returned within the
/// deadline plus [`SLACK`] (a hang detector, not a speed check).
fn guarded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let limit = DEADLINE + SLACK;
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(t) => t,
        Err(RecvTimeoutError::Timeout) => panic!("{what}: the call hangs (over {limit:?})"),
        Err(RecvTimeoutError::Disconnected) => panic!("{what}: the call panicked"),
    }
}

/// Runs one call that must give up.
pub fn call_fails<H: Harness>(what: &str, build: Build, body: Value) -> Ended {
    let name = what.to_owned();
    let ended = guarded(what, move || {
        let c = H::build(build);
        let t0 = Instant::now();
        let r = H::chat(&c, body);
        let took = t0.elapsed();
        r.map(|reply| {
            format!(
                "{name}: unexpected success after {} attempts",
                reply.attempts
            )
        })
        .map_err(|e| Ended {
            reason: e.reason,
            attempts: e.attempts,
            status: e.status,
            class: e.class,
            exceeded: e.exceeded,
            took,
        })
    });
    let ended = match ended {
        Ok(success) => panic!("{success}"),
        Err(e) => e,
    };
    eprintln!("{} {what}: {ended:?}", H::NAME);
    ended
}

/// Runs one stream to its end.
pub fn stream_ends<H: Harness>(what: &str, build: Build, body: Value) -> StreamEnd {
    let end = guarded(what, move || {
        let c = H::build(build);
        let t0 = Instant::now();
        let r = H::stream(&c, body);
        let took = t0.elapsed();
        match r {
            Err(e) => StreamEnd::GaveUp(Ended {
                reason: e.reason,
                attempts: e.attempts,
                status: e.status,
                class: e.class,
                exceeded: e.exceeded,
                took,
            }),
            Ok(items) => {
                let events = items.iter().filter(|i| i.is_ok()).count();
                let err = items.into_iter().find_map(Result::err);
                let (interrupted, partial) = match err {
                    Some(StreamError::Interrupted { cause, partial, .. }) => {
                        (Some(cause), partial.len())
                    }
                    Some(_) | None => (None, 0),
                };
                StreamEnd::Started {
                    events,
                    interrupted,
                    partial,
                    took,
                }
            }
        }
    });
    eprintln!("{} {what}: {end:?}", H::NAME);
    end
}

fn server_with(faults: &[Fault]) -> MockServer {
    let server = mock("ok");
    server.push_faults(faults);
    server
}

fn hostile(server: &MockServer) -> Build {
    Build::new(openai(server)).policy(hostile_policy)
}

fn stream_ask() -> Value {
    ask("a stream")
}

/// A `Retry-After` far beyond any wait ends the call at once with `HintTooLong`: one
/// request, no sleep.
pub fn an_absurd_retry_after_ends_the_call_at_once<H: Harness>() {
    let far_date = "Fri, 01 Jan 2999 00:00:00 GMT";
    let cases = [
        (
            "429 retry-after: 99999999",
            Fault::status_retry_after(429, "99999999"),
        ),
        (
            "503 retry-after-ms: 99999999999",
            status_retry_after_ms(503, "99999999999"),
        ),
        (
            "529 retry-after: year 2999",
            Fault::status_retry_after(529, far_date),
        ),
    ];
    for (what, fault) in cases {
        let server = server_with(&[fault]);
        let max_wait = fast_policy().retry.max_retry_after;
        let e = call_fails::<H>(what, hostile(&server), ask("x"));
        match e.reason {
            GiveUpReason::HintTooLong { hint } => assert!(hint > max_wait, "{what}: {hint:?}"),
            other => panic!("{what}: {other:?}"),
        }
        assert_eq!(e.attempts, 1, "{what}");
        assert_eq!(server.stats().total_requests, 1, "{what}: no retry");
    }
}

/// Endless filler: `piece` bytes every `every_ms`, chunked, or within a
/// `content-length` when `bytes` is given.
fn drip(bytes: Option<u64>, piece: u32, every_ms: u64, after_first_event: bool) -> Fault {
    Fault::Filler {
        bytes,
        piece,
        every_ms,
        chunked: bytes.is_none(),
        after_first_event,
    }
}

/// A body that never ends (a byte a minute within a long `content-length`, or a
/// chunked body that trickles without its last chunk) holds no attempt past its
/// timeout, and the call ends at its deadline.
pub fn a_body_that_never_ends_is_cut_at_the_deadline<H: Harness>() {
    let cases = [
        ("a byte a minute", drip(Some(MIB), 1, 60_000, false)),
        ("an endless chunked trickle", drip(None, 16, 50, false)),
    ];
    for (what, fault) in cases {
        let server = server_with(&vec![fault; 12]);
        let e = call_fails::<H>(what, hostile(&server), ask("x"));
        assert_eq!(e.reason, GiveUpReason::DeadlineExceeded, "{what}");
        assert_eq!(e.class, Some(Class::Timeout), "{what}");
        assert!(
            (2..=5).contains(&e.attempts),
            "{what}: {} attempts",
            e.attempts
        );
        assert_eq!(e.exceeded, None);
        assert_eq!(server.stats().total_requests, u64::from(e.attempts));
    }
}

/// A stream that trickles a byte a minute: before its first event, each attempt
/// times out and the call ends at its deadline; after it, the stream is interrupted
/// by the attempt timeout, never retried.
pub fn a_stream_that_trickles_is_cut<H: Harness>() {
    let server = server_with(&vec![drip(None, 1, 60_000, false); 12]);
    let what = "trickle before the first event";
    let StreamEnd::GaveUp(e) = stream_ends::<H>(what, hostile(&server), stream_ask()) else {
        panic!("{what}: the stream started");
    };
    assert_eq!(e.reason, GiveUpReason::DeadlineExceeded);
    assert_eq!(e.class, Some(Class::Timeout));
    assert!((2..=5).contains(&e.attempts), "{} attempts", e.attempts);

    let server = server_with(&[drip(None, 1, 60_000, true)]);
    let what = "trickle after the first event";
    let end = stream_ends::<H>(what, hostile(&server), stream_ask());
    let (events, interrupted) = end.started(what);
    assert_eq!(events, 1, "the first event reached the caller");
    assert_eq!(interrupted, Some(Interruption::Timeout));
    assert_eq!(server.stats().total_requests, 1, "never retried");
}

/// A stream whose events stop while bytes that make no event keep coming ends at the
/// stall timeout, long before the attempt timeout, with its first event delivered.
pub fn a_stream_whose_events_stop_ends_stalled<H: Harness>() {
    let server = server_with(&[drip(None, 1, 20, true)]);
    let build = hostile(&server).policy(|p| {
        hostile_policy(p);
        p.retry.stall_timeout = Some(Duration::from_millis(150));
    });
    let what = "filler after the first event";
    let (events, interrupted) = stream_ends::<H>(what, build, stream_ask()).started(what);
    assert_eq!(events, 1, "the first event reached the caller");
    assert_eq!(interrupted, Some(Interruption::Stalled));
    assert!(
        server.stats().filler_bytes > 0,
        "bytes flowed during the stall"
    );
    assert_eq!(server.stats().total_requests, 1, "never retried");
}

/// A stream whose head arrives at once but whose first event never does: each attempt
/// ends at the first-event timeout, not at the far longer attempt timeout or the
/// deadline (either would take longer than the hang guard allows), so all three
/// attempts run.
pub fn a_stream_silent_after_its_head_is_cut_at_the_first_event_timeout<H: Harness>() {
    let server = server_with(&vec![drip(None, 1, 60_000, false); 12]);
    let build = hostile(&server).policy(|p| {
        p.retry.max_attempts = 3;
        p.retry.deadline = Some(Duration::from_secs(60));
        p.retry.attempt_timeout = Duration::from_secs(60);
        p.retry.first_event_timeout = Some(Duration::from_millis(200));
    });
    let what = "a head, then silence";
    let StreamEnd::GaveUp(e) = stream_ends::<H>(what, build, stream_ask()) else {
        panic!("{what}: the stream started");
    };
    assert_eq!(e.reason, GiveUpReason::RetriesExhausted);
    assert_eq!((e.attempts, e.class), (3, Some(Class::Timeout)));
    assert_eq!(server.stats().total_requests, 3);
}

/// The most filler a refused attempt may have let the server write: the client's
/// limit plus what loopback socket buffers hold.
fn refused_bound(limit: u64, attempts: u32) -> u64 {
    u64::from(attempts) * (limit + 16 * MIB)
}

/// 200 MiB bodies (announced, or chunked, or endless) are refused at the body limit:
/// `BodyTooLarge`, not retried (the same request would get the same answer), and the
/// server could write only a fraction of them.
pub fn a_huge_body_is_refused_unread<H: Harness>() {
    let huge = 200 * MIB;
    let server = server_with(&vec![Fault::filler(Some(huge)); 12]);
    let what = "200 MiB announced";
    let e = call_fails::<H>(what, hostile(&server), ask("x"));
    assert_eq!(e.exceeded, Some(Exceeded::BodyTooLarge));
    assert_eq!(e.reason, GiveUpReason::NotRetryable);
    assert_eq!((e.attempts, e.status), (1, Some(200)));
    assert_eq!(e.class, Some(Class::ResponseTooLarge));
    let sent = server.stats().filler_bytes;
    eprintln!("{what}: the server wrote {} KiB in all", sent / 1024);
    assert!(sent < refused_bound(0, e.attempts), "{sent} bytes written");

    let limit = 2 * MIB;
    let chunked = Fault::Filler {
        bytes: Some(huge),
        piece: 64 * 1024,
        every_ms: 0,
        chunked: true,
        after_first_event: false,
    };
    for (what, fault) in [
        ("200 MiB chunked", chunked),
        ("endless", Fault::filler(None)),
    ] {
        let server = server_with(&vec![fault; 12]);
        let build = hostile(&server).max_body(limit);
        let e = call_fails::<H>(what, build, ask("x"));
        assert_eq!(e.exceeded, Some(Exceeded::BodyTooLarge), "{what}");
        assert_eq!(e.reason, GiveUpReason::NotRetryable, "{what}");
        let sent = server.stats().filler_bytes;
        eprintln!("{what}: the server wrote {} KiB in all", sent / 1024);
        assert!(
            sent < refused_bound(limit, e.attempts),
            "{what}: {sent} bytes"
        );
        assert!(sent < huge, "{what}: {sent} bytes");
    }
}

/// The default limit holds while reading a body with no length (the attempt is given
/// time to read 32 MiB).
pub fn the_default_body_limit_holds_while_reading<H: Harness>() {
    let server = server_with(&[Fault::filler(None)]);
    let build = hostile(&server).policy(|p| {
        p.retry.max_attempts = 1;
        p.retry.attempt_timeout = Duration::from_secs(DEADLINE.as_secs());
    });
    let e = call_fails::<H>("endless, default limit", build, ask("x"));
    let limit = DEFAULT_MAX_BODY;
    assert_eq!(e.exceeded, Some(Exceeded::BodyTooLarge));
    let sent = server.stats().filler_bytes;
    eprintln!("the server wrote {} KiB", sent / 1024);
    assert!(
        sent >= limit && sent < refused_bound(limit, 1),
        "{sent} bytes"
    );
}

/// A realistic but oversized JSON success is refused; one under the limit passes.
pub fn a_large_reply_under_a_small_limit<H: Harness>() {
    let limit = MIB;
    let server = server_with(&[Fault::HugeBody { bytes: 900_000 }]);
    let c = H::build(hostile(&server).max_body(limit));
    let r = H::chat(&c, ask("x")).expect("under the limit");
    assert!(reply_text(&r.body).len() > 800_000);
    let server = server_with(&vec![Fault::HugeBody { bytes: 1_100_000 }; 12]);
    let e = call_fails::<H>("1.1 MB reply", hostile(&server).max_body(limit), ask("x"));
    assert_eq!(e.exceeded, Some(Exceeded::BodyTooLarge));
    assert_eq!(e.reason, GiveUpReason::NotRetryable);
}

/// A stream whose event never ends (before or after the first event) is cut at the
/// body limit.
pub fn a_stream_flood_is_cut_at_the_limit<H: Harness>() {
    let limit = 2 * MIB;
    let server = server_with(&vec![Fault::filler(None); 12]);
    let what = "endless event before the first";
    let build = hostile(&server).max_body(limit);
    let StreamEnd::GaveUp(e) = stream_ends::<H>(what, build, stream_ask()) else {
        panic!("{what}: the stream started");
    };
    assert_eq!(e.exceeded, Some(Exceeded::BodyTooLarge));
    assert_eq!(e.reason, GiveUpReason::NotRetryable);
    let sent = server.stats().filler_bytes;
    assert!(sent < refused_bound(limit, e.attempts), "{sent} bytes");

    let after = Fault::Filler {
        bytes: None,
        piece: 64 * 1024,
        every_ms: 0,
        chunked: true,
        after_first_event: true,
    };
    let server = server_with(&[after]);
    let what = "endless event after the first";
    let end = stream_ends::<H>(what, hostile(&server).max_body(limit), stream_ask());
    let (events, interrupted) = end.started(what);
    assert_eq!((events, interrupted), (1, Some(Interruption::TooLarge)));
    let sent = server.stats().filler_bytes;
    assert!(sent < refused_bound(limit, 1), "{sent} bytes");
}

/// 1 MiB of headers (one huge header, or ten thousand small ones): every attempt
/// fails with `HeadTooLarge`, and the call ends with it; a success whose head was too
/// large is replayed whole to the retry.
pub fn absurd_headers_are_refused<H: Harness>() {
    let with_headers = |headers: Vec<(String, String)>| Fault::Status {
        status: 503,
        retry_after: None,
        retry_after_ms: None,
        body: None,
        headers,
    };
    let one = vec![("x-mock-padding".to_owned(), "a".repeat(1 << 20))];
    let many = (0..10_000)
        .map(|i| (format!("x-pad-{i}"), "a".repeat(100)))
        .collect();
    let cases = [("one 1 MiB header", one), ("10 000 headers", many)];
    for (what, headers) in cases {
        let server = server_with(&vec![with_headers(headers); 10]);
        let e = call_fails::<H>(what, hostile(&server), ask("x"));
        assert_eq!(e.exceeded, Some(Exceeded::HeadTooLarge), "{what}");
        assert_eq!(e.reason, GiveUpReason::RetriesExhausted, "{what}");
        assert_eq!((e.attempts, e.status), (10, None), "{what}");
        assert_eq!(e.class, Some(Class::TransportOther), "{what}");
        assert_eq!(server.stats().script_remaining, 0, "{what}");
    }

    let server = mock("ok");
    // The work was done: the retry, with the same idempotency key, gets the replay.
    server.push_faults(&[Fault::HugeHeader { bytes: 1 << 20 }]);
    let c = H::build(hostile(&server).seed(SEED + 1));
    let r = H::chat_with(&c, "big-head", ask("fine")).expect("the replay");
    assert_eq!(r.attempts, 2);
    assert_eq!(reply_text(&r.body), "fine");
    assert_eq!(server.stats().replayed, 1);
}

/// Instantiates every hostile scenario as a `#[test]` for harness `$h`.
#[macro_export]
macro_rules! hostile_scenarios {
    ($h:ty) => {
        $crate::hostile_scenarios!($h;
            an_absurd_retry_after_ends_the_call_at_once,
            a_body_that_never_ends_is_cut_at_the_deadline,
            a_stream_that_trickles_is_cut,
            a_stream_whose_events_stop_ends_stalled,
            a_stream_silent_after_its_head_is_cut_at_the_first_event_timeout,
            a_huge_body_is_refused_unread,
            the_default_body_limit_holds_while_reading,
            a_large_reply_under_a_small_limit,
            a_stream_flood_is_cut_at_the_limit,
            absurd_headers_are_refused,
        );
    };
    ($h:ty; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                eprintln!("adapter {}, seed {:#x}", <$h as support::Harness>::NAME, support::SEED);
                support::hostile::$name::<$h>();
            }
        )*
    };
}
