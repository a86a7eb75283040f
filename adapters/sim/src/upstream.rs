//! The simulated server: decides each request's answer from the scenario and the seed,
//! and writes it as raw HTTP parts (status, headers, body) that go through the core's
//! own [`Response::from_http`], as a real adapter's would.

use core::time::Duration;

use steadfast_core::ids::Target;
use steadfast_core::outcome::{BodyState, Outcome, Phase, Response, Transport, TransportKind};
use steadfast_core::rng::{CoreRng, unit_f64};
use steadfast_core::time::Timestamp;

use crate::scenario::{Api, BadKeyKind, EndpointSpec, OutageKind, Scenario};
use crate::split_seed;

/// The wall-clock instant (Unix seconds) the run starts at; it anchors HTTP-dates and
/// RFC 3339 resets. Fixed, so reports never depend on the real clock.
pub const WALL_START: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z

const WINDOW: Duration = Duration::from_secs(60);

/// What the server did with one request, as the request log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reply {
    /// A 2xx with a good body.
    Ok,
    /// An HTTP status other than a good 2xx.
    Status(u16),
    /// A 200 whose body is malformed.
    Malformed,
    /// The connection was reset before a status line.
    Reset,
    /// The connection was refused.
    Refused,
    /// No answer before the attempt's deadline.
    Timeout,
}

/// The five outcome classes reports and pictures use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OutcomeClass {
    /// Success.
    Ok,
    /// 429.
    Throttled,
    /// 5xx, including 529.
    ServerError,
    /// No answer in time.
    Timeout,
    /// Everything else: 4xx but 429, malformed bodies, resets, refusals.
    Other,
}

impl OutcomeClass {
    /// Every class, in report order.
    pub const ALL: [OutcomeClass; 5] = [
        OutcomeClass::Ok,
        OutcomeClass::Throttled,
        OutcomeClass::ServerError,
        OutcomeClass::Timeout,
        OutcomeClass::Other,
    ];

    /// The class's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            OutcomeClass::Ok => "ok",
            OutcomeClass::Throttled => "429",
            OutcomeClass::ServerError => "5xx/529",
            OutcomeClass::Timeout => "timeout",
            OutcomeClass::Other => "other",
        }
    }
}

impl Reply {
    /// The reply's class.
    pub fn class(self) -> OutcomeClass {
        match self {
            Reply::Ok => OutcomeClass::Ok,
            Reply::Status(429) => OutcomeClass::Throttled,
            Reply::Status(500..=599) => OutcomeClass::ServerError,
            Reply::Timeout => OutcomeClass::Timeout,
            _ => OutcomeClass::Other,
        }
    }
}

/// The server's answer to one request.
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    /// What it did.
    pub reply: Reply,
    /// When the answer reaches the client, after the request; `None`: never.
    pub after: Option<Duration>,
    /// The outcome the client sees, when there is an answer.
    pub outcome: Outcome,
    /// The wait the server asked for on a 429, exactly (the headers round it up).
    pub hint: Option<Duration>,
}

/// Per key and per fixed one-minute window, what the server has counted.
#[derive(Debug, Clone, Copy, Default)]
struct KeyWindow {
    index: u64,
    requests: u64,
    tokens: u64,
}

struct Server {
    spec: EndpointSpec,
    rng: CoreRng,
    keys: Vec<KeyWindow>,
}

/// The simulated upstream: one server per endpoint.
pub struct Upstream {
    servers: Vec<Server>,
    tokens: u64,
}

impl Upstream {
    /// The servers of `scenario`, their randomness drawn from `seed`.
    pub fn new(scenario: &Scenario, seed: u64) -> Upstream {
        let servers = scenario
            .endpoints
            .iter()
            .enumerate()
            .map(|(i, e)| Server {
                spec: e.clone(),
                rng: steadfast_core::rng::from_u64(split_seed(seed, 100 + i as u64)),
                keys: vec![KeyWindow::default(); usize::from(e.keys)],
            })
            .collect();
        Upstream {
            servers,
            tokens: scenario.load.tokens,
        }
    }

    /// Handles a request sent at `now` (from the start of the run) to `target`.
    pub fn handle(&mut self, now: Timestamp, target: Target) -> Answer {
        let tokens = self.tokens;
        let Some(s) = self.servers.get_mut(usize::from(target.endpoint.0)) else {
            return silent();
        };
        s.handle(now, usize::from(target.key.0), tokens)
    }
}

fn silent() -> Answer {
    Answer {
        reply: Reply::Timeout,
        after: None,
        outcome: Outcome::Transport(Transport::new(TransportKind::Timeout, Phase::AfterSend)),
        hint: None,
    }
}

impl Server {
    fn handle(&mut self, now: Timestamp, key: usize, tokens: u64) -> Answer {
        let since = Duration::from_nanos(now.as_nanos());
        let api = self.spec.api;
        if let Some(bad) = self
            .spec
            .bad_keys
            .iter()
            .find(|b| usize::from(b.key) == key && b.from <= since)
        {
            let (status, body) = bad_key_answer(api, bad.kind);
            return self.error(status, &[], body, now);
        }
        let mut latency = None;
        for i in 0..self.spec.outages.len() {
            let o = self.spec.outages[i];
            if !o.covers(since) || !(o.rate >= 1.0 || unit_f64(&mut self.rng) < o.rate) {
                continue;
            }
            let transport = |kind, phase| Outcome::Transport(Transport::new(kind, phase));
            let after = Some(self.spec.error_latency.sample(&mut self.rng));
            return match o.kind {
                OutageKind::Status => self.error(o.status, &[], error_body(api, o.status), now),
                OutageKind::Timeout => silent(),
                OutageKind::Reset => Answer {
                    reply: Reply::Reset,
                    after,
                    outcome: transport(TransportKind::Reset, Phase::AfterSend),
                    hint: None,
                },
                OutageKind::Refused => Answer {
                    reply: Reply::Refused,
                    after,
                    outcome: transport(TransportKind::ConnectRefused, Phase::BeforeSend),
                    hint: None,
                },
                // A slow window stretches the answer; later windows may still fail it.
                OutageKind::Slow => {
                    latency = latency.or(o.latency);
                    continue;
                }
            };
        }
        let mut headers = Vec::new();
        if let Some(limited) = self.count(now, key, tokens, &mut headers) {
            return limited;
        }
        let f = self.spec.faults;
        let u = unit_f64(&mut self.rng);
        let mut edge = f.rate_429;
        if u < edge {
            let hint = f.retry_after.map(|d| d.sample(&mut self.rng));
            if let Some(h) = hint {
                push_retry_after(api, h, &mut headers);
            }
            let mut a = self.error(429, &headers, rate_limit_body(api), now);
            a.hint = hint;
            return a;
        }
        edge += f.rate_5xx;
        if u < edge {
            let status = [500, 502, 503][steadfast_core::rng::below(&mut self.rng, 3) as usize];
            return self.error(status, &[], error_body(api, status), now);
        }
        edge += f.rate_529;
        if u < edge {
            return self.error(529, &[], error_body(api, 529), now);
        }
        edge += f.rate_timeout;
        if u < edge {
            return silent();
        }
        edge += f.rate_reset;
        if u < edge {
            return Answer {
                reply: Reply::Reset,
                after: Some(self.spec.error_latency.sample(&mut self.rng)),
                outcome: Outcome::Transport(Transport::new(TransportKind::Reset, Phase::AfterSend)),
                hint: None,
            };
        }
        edge += f.rate_malformed;
        let dist = latency.unwrap_or(self.spec.latency);
        let after = Some(dist.sample(&mut self.rng));
        let (reply, body) = if u < edge {
            (Reply::Malformed, BodyState::Malformed)
        } else {
            (Reply::Ok, BodyState::Complete)
        };
        let response = from_parts(200, &headers, b"", now).with_body(body);
        Answer {
            reply,
            after,
            outcome: Outcome::Response(response),
            hint: None,
        }
    }

    /// Counts the request against the key's window; a 429 when it does not fit. Writes
    /// the window's rate-limit headers either way.
    fn count(
        &mut self,
        now: Timestamp,
        key: usize,
        tokens: u64,
        headers: &mut Vec<(&'static str, String)>,
    ) -> Option<Answer> {
        let limits = self.spec.limits?;
        let w = self.keys.get_mut(key)?;
        let nanos = now.as_nanos();
        let window = WINDOW.as_nanos() as u64;
        let index = nanos / window;
        if index != w.index {
            *w = KeyWindow {
                index,
                ..KeyWindow::default()
            };
        }
        let reset = Duration::from_nanos((index + 1) * window - nanos);
        let rpm = limits.requests_per_minute;
        let tpm = limits.tokens_per_minute;
        let fits = rpm.is_none_or(|l| w.requests < l) && tpm.is_none_or(|l| w.tokens + tokens <= l);
        if fits {
            w.requests += 1;
            w.tokens += tokens;
        }
        let reset_at = WALL_START + (index + 1) * 60;
        let api = self.spec.api;
        if let Some(l) = rpm {
            push_window(
                api,
                "requests",
                l,
                l.saturating_sub(w.requests),
                reset,
                reset_at,
                headers,
            );
        }
        if let Some(l) = tpm {
            push_window(
                api,
                "tokens",
                l,
                l.saturating_sub(w.tokens),
                reset,
                reset_at,
                headers,
            );
        }
        if fits {
            return None;
        }
        push_retry_after(api, reset, headers);
        let mut a = self.error(429, headers, rate_limit_body(api), now);
        a.hint = Some(reset);
        Some(a)
    }

    fn error(
        &mut self,
        status: u16,
        headers: &[(&'static str, String)],
        body: &[u8],
        now: Timestamp,
    ) -> Answer {
        Answer {
            reply: Reply::Status(status),
            after: Some(self.spec.error_latency.sample(&mut self.rng)),
            outcome: Outcome::Response(from_parts(status, headers, body, now)),
            hint: None,
        }
    }
}

/// The response as a real adapter would build it from the wire.
fn from_parts(
    status: u16,
    headers: &[(&'static str, String)],
    body: &[u8],
    now: Timestamp,
) -> Response {
    let wall = WALL_START + now.as_nanos() / 1_000_000_000;
    let iter = headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
    Response::from_http(status, iter, body, wall)
}

fn push_retry_after(api: Api, wait: Duration, headers: &mut Vec<(&'static str, String)>) {
    let secs = wait.as_nanos().div_ceil(1_000_000_000);
    headers.push(("retry-after", secs.to_string()));
    if api == Api::Openai {
        let ms = wait.as_nanos().div_ceil(1_000_000);
        headers.push(("retry-after-ms", ms.to_string()));
    }
}

fn push_window(
    api: Api,
    kind: &'static str,
    limit: u64,
    remaining: u64,
    reset: Duration,
    reset_at: u64,
    headers: &mut Vec<(&'static str, String)>,
) {
    let names: [&'static str; 3] = match (api, kind) {
        (Api::Openai, "requests") => [
            "x-ratelimit-limit-requests",
            "x-ratelimit-remaining-requests",
            "x-ratelimit-reset-requests",
        ],
        (Api::Openai, _) => [
            "x-ratelimit-limit-tokens",
            "x-ratelimit-remaining-tokens",
            "x-ratelimit-reset-tokens",
        ],
        (Api::Anthropic, "requests") => [
            "anthropic-ratelimit-requests-limit",
            "anthropic-ratelimit-requests-remaining",
            "anthropic-ratelimit-requests-reset",
        ],
        (Api::Anthropic, _) => [
            "anthropic-ratelimit-tokens-limit",
            "anthropic-ratelimit-tokens-remaining",
            "anthropic-ratelimit-tokens-reset",
        ],
    };
    let reset_text = match api {
        Api::Openai => crate::dist::human(reset),
        Api::Anthropic => rfc3339(reset_at),
    };
    headers.push((names[0], limit.to_string()));
    headers.push((names[1], remaining.to_string()));
    headers.push((names[2], reset_text));
}

fn rate_limit_body(api: Api) -> &'static [u8] {
    match api {
        Api::Openai => {
            br#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#
        }
        Api::Anthropic => {
            br#"{"type":"error","error":{"type":"rate_limit_error","message":"Rate limit exceeded"}}"#
        }
    }
}

fn error_body(api: Api, status: u16) -> &'static [u8] {
    match (api, status) {
        (Api::Anthropic, 529) => {
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
        }
        (Api::Anthropic, 500..=599) => {
            br#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#
        }
        (Api::Openai, 500) => {
            br#"{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}"#
        }
        _ => b"",
    }
}

fn bad_key_answer(api: Api, kind: BadKeyKind) -> (u16, &'static [u8]) {
    match (api, kind) {
        (Api::Openai, BadKeyKind::QuotaExhausted) => (
            429,
            br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
        ),
        (Api::Openai, BadKeyKind::Revoked) => (
            401,
            br#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
        ),
        (Api::Anthropic, BadKeyKind::QuotaExhausted) => (
            400,
            br#"{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low"}}"#,
        ),
        (Api::Anthropic, BadKeyKind::Revoked) => (
            401,
            br#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        ),
    }
}

/// `unix` (whole seconds) as an RFC 3339 UTC instant.
fn rfc3339(unix: u64) -> String {
    let (days, secs) = (unix / 86_400, unix % 86_400);
    // Howard Hinnant's civil-from-days, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips_through_the_core_parser() {
        for unix in [0, WALL_START, WALL_START + 86_399, 951_782_400] {
            let text = rfc3339(unix);
            assert_eq!(
                steadfast_core::hints::parse_rfc3339(text.as_bytes()),
                Some((unix, 0)),
                "{text}"
            );
        }
        assert_eq!(rfc3339(WALL_START), "2026-01-01T00:00:00Z");
    }
}
