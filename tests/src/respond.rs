//! Turns an [`Answer`] into the [`Outcome`] an adapter would report: headers and body
//! are written out as text and parsed back by `Response::from_http`.

use steadfast_core::outcome::{Outcome, Response, Transport};

use crate::ops::{Answer, Body, Header, HttpAnswer, Step, kind_at};
use crate::wire::{self, MESSAGES};
use steadfast_core::date::{Asctime, ImfFixdate, Rfc850, Rfc3339};
use steadfast_core::duration::Human;
use steadfast_core::provider::Provider;
use steadfast_upstream::wire::errors::gateway_page;

/// The wall clock (Unix seconds) at the harness's epoch: 2026-01-01T00:00:00Z.
pub const WALL_EPOCH: u64 = 1_767_225_600;

const ANTHROPIC_KINDS: [&str; 4] = ["requests", "tokens", "input-tokens", "output-tokens"];

/// Hint values no server should send.
const GARBAGE: [(&str, &str); 12] = [
    ("retry-after", "-5"),
    ("retry-after", "99999999999999999999999"),
    ("retry-after", "1e3"),
    ("retry-after", "NaN"),
    ("retry-after", "  "),
    ("retry-after-ms", "18446744073709551615"),
    ("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"),
    ("x-ratelimit-reset-requests", "999999h"),
    ("x-ratelimit-remaining-requests", "-1"),
    ("anthropic-ratelimit-requests-reset", "1969-12-31T23:59:59Z"),
    ("x-should-retry", "maybe"),
    ("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT"),
];

impl Answer {
    /// The outcome, with HTTP-dates and RFC 3339 instants relative to `wall_now`.
    pub fn to_outcome(&self, wall_now: u64) -> Outcome {
        match self {
            Answer::Http(http) => Outcome::Response(http.to_response(wall_now)),
            Answer::Transport { kind, phase } => Outcome::Transport(Transport::new(*kind, *phase)),
            Answer::Cancelled => Outcome::Cancelled,
        }
    }
}

impl HttpAnswer {
    /// The response as `Response::from_http` reads the written-out headers and body.
    pub fn to_response(&self, wall_now: u64) -> Response {
        let headers: Vec<(String, String)> =
            self.headers.iter().map(|h| header(h, wall_now)).collect();
        let body = body(&self.body);
        let mut response = Response::from_http(
            self.status.0,
            headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
            &body,
            wall_now,
        )
        .with_body(self.body_state);
        response.tokens_used = self.tokens_used.map(u64::from);
        response
    }
}

fn offset(wall_now: u64, secs: i64) -> u64 {
    wall_now.saturating_add_signed(secs)
}

fn header(h: &Header, wall_now: u64) -> (String, String) {
    let pair = |n: &str, v: String| (n.to_owned(), v);
    match *h {
        Header::RetryAfterSecs(s) => pair("retry-after", s.to_string()),
        Header::RetryAfterFraction(ms) => {
            pair("Retry-After", format!("{}.{:03}", ms / 1000, ms % 1000))
        }
        Header::RetryAfterMs(ms) => pair("retry-after-ms", ms.to_string()),
        Header::RetryAfterDate { offset: o, form } => {
            let at = offset(wall_now, i64::from(o));
            let text = match form % 3 {
                0 => ImfFixdate(at).to_string(),
                1 => Rfc850(at).to_string(),
                _ => Asctime(at).to_string(),
            };
            pair("retry-after", text)
        }
        Header::Date(o) => pair(
            "Date",
            ImfFixdate(offset(wall_now, i64::from(o))).to_string(),
        ),
        Header::ShouldRetry(b) => pair("x-should-retry", b.to_string()),
        Header::OpenAiRemaining { tokens, n } => pair(&openai("remaining", tokens), n.to_string()),
        Header::OpenAiReset { tokens, after } => pair(&openai("reset", tokens), go_duration(after)),
        Header::AnthropicRemaining { kind, n } => {
            pair(&anthropic(kind, "remaining"), n.to_string())
        }
        Header::AnthropicReset { kind, offset_ms } => {
            let ms = i64::from(offset_ms);
            let at_ms = (wall_now as i64)
                .saturating_mul(1000)
                .saturating_add(ms)
                .max(0);
            let (secs, millis) = (at_ms / 1000, (at_ms % 1000) as u32);
            let text = Rfc3339 {
                unix: secs as u64,
                nanos: millis * 1_000_000,
                digits: 3,
                offset_minutes: 0,
            }
            .to_string();
            pair(&anthropic(kind, "reset"), text)
        }
        Header::Garbage(i) => {
            let (n, v) = GARBAGE[usize::from(i) % GARBAGE.len()];
            pair(n, v.to_owned())
        }
    }
}

fn openai(field: &str, tokens: bool) -> String {
    let kind = if tokens { "tokens" } else { "requests" };
    format!("x-ratelimit-{field}-{kind}")
}

fn anthropic(kind: u8, field: &str) -> String {
    let kind = ANTHROPIC_KINDS[usize::from(kind) % ANTHROPIC_KINDS.len()];
    format!("anthropic-ratelimit-{kind}-{field}")
}

/// OpenAI writes resets the way Go prints durations (`6m0s`, `1.5s`, `20ms`); the
/// core's own formatter writes the same grammar, and unlike the upstream's (cut to the
/// millisecond) keeps the harness's nanosecond steps exact.
fn go_duration(step: Step) -> String {
    Human(step.span()).to_string()
}

fn body(b: &Body) -> Vec<u8> {
    let message = |i: u8| MESSAGES[usize::from(i) % MESSAGES.len()];
    match b {
        Body::Empty => Vec::new(),
        Body::OpenAi { kind, message: m } => {
            wire::error_body(Provider::OpenAi, kind_at(*kind), message(*m))
        }
        Body::Anthropic { kind, message: m } => {
            wire::error_body(Provider::Anthropic, kind_at(*kind), message(*m))
        }
        Body::Html => gateway_page(502),
        Body::Raw(bytes) => bytes.clone(),
    }
}
