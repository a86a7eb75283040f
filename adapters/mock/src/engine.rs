//! The decisions: what each request gets, as a pure-as-possible function of the
//! configuration, the script, the request and (for time-based scenarios) the clock.

use crate::bodies::{Body, Call, Provider, error_body, gateway_page, malformed, status_body};
use crate::config::{MockConfig, Scenario};
use crate::fault::Fault;
use crate::http::Request;
use crate::stats::{Stats, StatsState};
use crate::util::{
    alnum_id, below, ceil_millis, ceil_secs, fnv1a, go_duration, request_rng, rfc3339, splitmix,
    unit,
};
use rand_chacha::ChaCha8Rng;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

type Headers = Vec<(String, String)>;

/// How the bytes of a response go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    Normal,
    /// Full length announced, half sent, then close.
    Truncated,
    /// The first n events, then close (streams).
    Cut(u32),
    /// The body at this many bytes per second.
    Trickle(u32),
}

/// What the connection does.
#[derive(Debug)]
pub(crate) enum Action {
    Send {
        status: u16,
        headers: Headers,
        body: Body,
        delivery: Delivery,
    },
    Reset,
    Hang,
    /// `200 OK` with a filler body.
    Filler(Filler),
}

/// A filler body to write (see [`Fault::Filler`]).
pub(crate) struct Filler {
    pub headers: Headers,
    pub content_type: &'static str,
    /// A first event sent before the filler.
    pub first: Option<Vec<u8>>,
    pub bytes: Option<u64>,
    pub piece: usize,
    pub every: Duration,
    pub chunked: bool,
    /// Where the filler written is counted.
    pub shared: Arc<Shared>,
}

impl std::fmt::Debug for Filler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filler")
            .field("bytes", &self.bytes)
            .field("piece", &self.piece)
            .finish_non_exhaustive()
    }
}

/// Finishes an idempotency key's attempt when dropped: stores its success (so later
/// attempts are replays) or releases it (so the next attempt is processed).
pub(crate) struct Completion {
    shared: Arc<Shared>,
    key: String,
    store: Option<Body>,
}

impl Drop for Completion {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        let key = std::mem::take(&mut self.key);
        match self.store.take() {
            Some(body) => {
                st.idem.insert(key.clone(), Idem::Done(body));
                st.idem_order.push_back(key);
                while st.idem_order.len() > self.shared.config.max_keys {
                    if let Some(old) = st.idem_order.pop_front() {
                        if matches!(st.idem.get(&old), Some(Idem::Done(_))) {
                            st.idem.remove(&old);
                        }
                    }
                }
            }
            None => {
                if matches!(st.idem.get(&key), Some(Idem::InProgress)) {
                    st.idem.remove(&key);
                }
            }
        }
    }
}

/// What to do with one request: wait, finish the key, act.
pub(crate) struct Plan {
    pub delay: Duration,
    pub completion: Option<Completion>,
    pub action: Action,
}

impl Plan {
    fn send(status: u16, headers: Headers, body: Body) -> Plan {
        Plan {
            delay: Duration::ZERO,
            completion: None,
            action: Action::Send {
                status,
                headers,
                body,
                delivery: Delivery::Normal,
            },
        }
    }
}

enum Idem {
    InProgress,
    Done(Body),
}

struct Bucket {
    tokens: f64,
    last: Instant,
}

#[derive(Default)]
struct State {
    script: VecDeque<Fault>,
    stats: StatsState,
    idem: HashMap<String, Idem>,
    idem_order: VecDeque<String>,
    /// Per request identity: (requests seen, failures since its last success).
    seen: HashMap<u64, (u64, u64)>,
    scenario_requests: u64,
    buckets: HashMap<String, Bucket>,
    /// Per idempotency key: the instant before which the server asked it not to return.
    not_before: HashMap<String, Instant>,
}

/// The server's shared state.
pub(crate) struct Shared {
    pub config: MockConfig,
    started: Instant,
    down: AtomicBool,
    next_request: AtomicU64,
    filler_sent: AtomicU64,
    state: Mutex<State>,
}

/// A request's fate before it is turned into bytes.
enum Verdict {
    Success {
        delay: Duration,
        delivery: Delivery,
        pad: usize,
        extra: Headers,
    },
    /// Work done, response lost.
    Lost(Lost),
    Error {
        status: u16,
        headers: Headers,
        body: Body,
    },
    Hang,
    Filler(Fault),
}

enum Lost {
    Reset,
    Malformed,
    Truncated,
    Cut(u32),
}

impl Verdict {
    fn ok() -> Verdict {
        Verdict::Success {
            delay: Duration::ZERO,
            delivery: Delivery::Normal,
            pad: 0,
            extra: Vec::new(),
        }
    }
}

fn h(name: &str, value: impl Into<String>) -> (String, String) {
    (name.to_owned(), value.into())
}

fn json_body(v: &serde_json::Value) -> Body {
    Body::json(serde_json::to_vec(v).unwrap_or_default())
}

/// The wait an error answer asks for: `retry-after-ms`, else `retry-after` in seconds
/// (an HTTP-date is not counted).
fn hinted_wait(headers: &Headers) -> Option<Duration> {
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e9)
    };
    find("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| find("retry-after").map(Duration::from_secs_f64))
}

fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 8 {
        return "*".repeat(chars.len());
    }
    let head: String = chars.iter().take(3).collect();
    let tail: String = chars.iter().skip(chars.len() - 4).collect();
    format!("{head}{}{tail}", "*".repeat(chars.len() - 7))
}

impl Shared {
    pub fn new(mut config: MockConfig) -> Shared {
        let script = std::mem::take(&mut config.script);
        Shared {
            config,
            started: Instant::now(),
            down: AtomicBool::new(false),
            next_request: AtomicU64::new(0),
            filler_sent: AtomicU64::new(0),
            state: Mutex::new(State {
                script: script.into(),
                ..State::default()
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    pub fn push_faults(&self, faults: &[Fault]) {
        self.lock().script.extend(faults.iter().cloned());
    }

    pub fn stats(&self) -> Stats {
        let st = self.lock();
        let mut stats = st.stats.snapshot(st.script.len(), self.is_down());
        stats.filler_bytes = self.filler_sent.load(Ordering::Relaxed);
        stats
    }

    /// Counts filler bytes written.
    pub fn on_filler(&self, n: u64) {
        self.filler_sent.fetch_add(n, Ordering::Relaxed);
    }

    /// Clears the counters, the idempotency memory, the per-identity attempt counts
    /// and the rate-limit buckets (the script, the outage switch and clock stay).
    pub fn reset(&self) {
        let mut st = self.lock();
        let script = std::mem::take(&mut st.script);
        *st = State {
            script,
            ..State::default()
        };
    }

    /// A connection was accepted: counts it, and says whether a scripted
    /// `reset_before_request` claims it.
    pub fn on_accept(&self) -> bool {
        let mut st = self.lock();
        st.stats.connections += 1;
        if matches!(st.script.front(), Some(Fault::ResetBeforeRequest)) {
            st.script.pop_front();
            st.stats.fault("reset_before_request");
            true
        } else {
            false
        }
    }

    /// A request that could not be read: counts the answer.
    pub fn on_read_error(&self, status: u16, label: &'static str) {
        let mut st = self.lock();
        st.stats.status(status);
        st.stats.fault(label);
    }

    fn request_id(&self) -> String {
        let n = self.next_request.fetch_add(1, Ordering::Relaxed);
        format!(
            "req_{}",
            alnum_id(splitmix(self.config.seed ^ splitmix(n)), 24)
        )
    }

    /// Decides what one request gets.
    pub fn handle(self: &Arc<Self>, req: &Request) -> Plan {
        let (provider, path_label) = match req.path.as_str() {
            "/v1/chat/completions" => (Provider::OpenAi, "/v1/chat/completions"),
            "/v1/messages" => (Provider::Anthropic, "/v1/messages"),
            p if p.starts_with("/__") => return self.control(req),
            _ => {
                let mut st = self.lock();
                st.stats.total_requests += 1;
                st.stats.path("other");
                st.stats.status(404);
                st.stats.fault("not_found");
                let body = error_body(
                    Provider::OpenAi,
                    "invalid_request_error",
                    None,
                    &format!("Invalid URL ({} {})", req.method, req.path),
                    "",
                );
                return Plan::send(404, Vec::new(), body);
            }
        };
        let request_id = self.request_id();
        let id_header = match provider {
            Provider::OpenAi => "x-request-id",
            Provider::Anthropic => "request-id",
        };
        let base = vec![h(id_header, request_id.as_str())];
        let mut st = self.lock();
        st.stats.total_requests += 1;
        st.stats.path(path_label);

        let error = |st: &mut State, status: u16, label: &'static str, body: Body| {
            st.stats.status(status);
            st.stats.fault(label);
            Plan::send(status, base.clone(), body)
        };

        if req.method != "POST" {
            let body = error_body(
                provider,
                "invalid_request_error",
                None,
                &format!("Method {} not allowed on {}", req.method, req.path),
                &request_id,
            );
            return error(&mut st, 405, "bad_request", body);
        }
        if self.is_down() {
            let status = self.outage_status(provider);
            return error(
                &mut st,
                status,
                "outage",
                status_body(provider, status, &request_id),
            );
        }

        // Authentication, like the providers do it.
        let api_key = match provider {
            Provider::OpenAi => req
                .header("authorization")
                .and_then(|v| {
                    let (scheme, rest) = v.split_once(' ')?;
                    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
                })
                .filter(|k| !k.is_empty()),
            Provider::Anthropic => req.header("x-api-key").filter(|k| !k.is_empty()),
        };
        let Some(api_key) = api_key else {
            let body = match provider {
                Provider::OpenAi => error_body(
                    provider,
                    "invalid_request_error",
                    None,
                    "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                    &request_id,
                ),
                Provider::Anthropic => error_body(
                    provider,
                    "authentication_error",
                    None,
                    "x-api-key header is required",
                    &request_id,
                ),
            };
            return error(&mut st, 401, "missing_auth", body);
        };
        if provider == Provider::Anthropic && req.header("anthropic-version").is_none() {
            let body = error_body(
                provider,
                "invalid_request_error",
                None,
                "anthropic-version: header is required",
                &request_id,
            );
            return error(&mut st, 400, "bad_request", body);
        }
        let call = match Call::parse(provider, &req.body) {
            Ok(c) => c,
            Err(message) => {
                let body = error_body(
                    provider,
                    "invalid_request_error",
                    None,
                    &message,
                    &request_id,
                );
                return error(&mut st, 400, "bad_request", body);
            }
        };

        // Server-side idempotency.
        let idem_key = req.header("idempotency-key").filter(|k| !k.is_empty());
        if let Some(key) = idem_key {
            let max_keys = self.config.max_keys;
            if let Some(ks) = st.stats.key(key, max_keys) {
                ks.attempts += 1;
            }
            if st.not_before.get(key).is_some_and(|t| Instant::now() < *t) {
                st.stats.early += 1;
                if let Some(ks) = st.stats.key(key, max_keys) {
                    ks.early += 1;
                }
            }
            match st.idem.get(key) {
                Some(Idem::Done(stored)) => {
                    let body = stored.clone();
                    st.stats.replayed += 1;
                    st.stats.status(200);
                    if let Some(ks) = st.stats.key(key, max_keys) {
                        ks.replayed += 1;
                    }
                    let mut headers = base.clone();
                    headers.push(h("idempotent-replayed", "true"));
                    return Plan::send(200, headers, body);
                }
                Some(Idem::InProgress) => {
                    if let Some(ks) = st.stats.key(key, max_keys) {
                        ks.conflicts += 1;
                    }
                    let body = error_body(
                        provider,
                        "invalid_request_error",
                        Some("idempotency_key_in_use"),
                        "A request with the same Idempotency-Key is still in progress; retry later.",
                        &request_id,
                    );
                    return error(&mut st, 409, "conflict", body);
                }
                None => {}
            }
        }
        if matches!(st.script.front(), Some(Fault::ResetBeforeRequest)) {
            st.script.pop_front();
            st.stats.fault("reset_before_request");
            return Plan {
                delay: Duration::ZERO,
                completion: None,
                action: Action::Reset,
            };
        }
        if let Some(key) = idem_key {
            st.idem.insert(key.to_owned(), Idem::InProgress);
        }

        // The request's identity and how often it was seen: the seed of its draws.
        let identity = match idem_key {
            Some(key) => fnv1a(&[b"key", key.as_bytes()]),
            None => fnv1a(&[b"body", req.path.as_bytes(), &req.body]),
        };
        if st.seen.len() >= self.config.max_keys.max(1) && !st.seen.contains_key(&identity) {
            st.seen.clear();
        }
        let (seen_before, failures_before) = {
            let entry = st.seen.entry(identity).or_insert((0, 0));
            let before = *entry;
            entry.0 += 1;
            before
        };
        let mut rng = request_rng(self.config.seed, identity, seen_before);
        let id_seed = splitmix(identity ^ splitmix(seen_before));

        let (verdict, label) = match st.script.pop_front() {
            Some(fault) => {
                let label = fault.kind_name();
                (
                    self.scripted(fault, provider, &call, &request_id),
                    Some(label),
                )
            }
            None => self.scenario(
                &mut st,
                provider,
                api_key,
                &mut rng,
                failures_before,
                &request_id,
            ),
        };
        if let Some(label) = label {
            st.stats.fault(label);
        }
        if let Some(entry) = st.seen.get_mut(&identity) {
            entry.1 = match verdict {
                Verdict::Success { .. } => 0,
                _ => failures_before + 1,
            };
        }

        let mut completion = idem_key.map(|key| Completion {
            shared: Arc::clone(self),
            key: key.to_owned(),
            store: None,
        });
        let (delay, action) = match verdict {
            Verdict::Error {
                status,
                headers,
                body,
            } => {
                st.stats.status(status);
                if let (Some(key), Some(wait)) = (idem_key, hinted_wait(&headers)) {
                    if st.not_before.len() < self.config.max_keys || st.not_before.contains_key(key)
                    {
                        st.not_before.insert(key.to_owned(), Instant::now() + wait);
                    }
                }
                let mut all = base;
                all.extend(headers);
                (
                    Duration::ZERO,
                    Action::Send {
                        status,
                        headers: all,
                        body,
                        delivery: Delivery::Normal,
                    },
                )
            }
            Verdict::Hang => (Duration::ZERO, Action::Hang),
            Verdict::Filler(Fault::Filler {
                bytes,
                piece,
                every_ms,
                chunked,
                after_first_event,
            }) => {
                st.stats.status(200);
                let first = match call.success(id_seed, 0, 0) {
                    Body::Events(events) if after_first_event => events.into_iter().next(),
                    _ => None,
                };
                let content_type = if call.stream {
                    "text/event-stream"
                } else {
                    "application/json"
                };
                let filler = Filler {
                    headers: base,
                    content_type,
                    first,
                    bytes,
                    piece: usize::try_from(piece.max(1)).unwrap_or(1),
                    every: Duration::from_millis(every_ms),
                    chunked: chunked || bytes.is_none(),
                    shared: Arc::clone(self),
                };
                (Duration::ZERO, Action::Filler(filler))
            }
            Verdict::Filler(_) => (Duration::ZERO, Action::Hang),
            Verdict::Success { .. } | Verdict::Lost(_) => {
                st.stats.processed += 1;
                if let Some(key) = idem_key {
                    if let Some(ks) = st.stats.key(key, self.config.max_keys) {
                        ks.processed += 1;
                    }
                }
                let created = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let pad = match &verdict {
                    Verdict::Success { pad, .. } => *pad,
                    _ => 0,
                };
                let body = call.success(id_seed, created, pad);
                if let Some(c) = completion.as_mut() {
                    c.store = Some(body.clone());
                }
                let mut headers = base;
                let send = |headers, body, delivery| Action::Send {
                    status: 200,
                    headers,
                    body,
                    delivery,
                };
                match verdict {
                    Verdict::Success {
                        delay,
                        delivery,
                        extra,
                        ..
                    } => {
                        st.stats.status(200);
                        headers.extend(extra);
                        (delay, send(headers, body, delivery))
                    }
                    Verdict::Lost(Lost::Reset) => (Duration::ZERO, Action::Reset),
                    Verdict::Lost(Lost::Malformed) => {
                        st.stats.status(200);
                        (
                            Duration::ZERO,
                            send(headers, malformed(&body), Delivery::Normal),
                        )
                    }
                    Verdict::Lost(Lost::Truncated) => {
                        st.stats.status(200);
                        (Duration::ZERO, send(headers, body, Delivery::Truncated))
                    }
                    Verdict::Lost(Lost::Cut(n)) => {
                        st.stats.status(200);
                        let delivery = if call.stream {
                            Delivery::Cut(n)
                        } else {
                            Delivery::Truncated
                        };
                        (Duration::ZERO, send(headers, body, delivery))
                    }
                    Verdict::Error { .. } | Verdict::Hang | Verdict::Filler(_) => {
                        (Duration::ZERO, Action::Hang)
                    }
                }
            }
        };
        drop(st);
        Plan {
            delay,
            completion,
            action,
        }
    }

    fn outage_status(&self, provider: Provider) -> u16 {
        self.config.outage_status.unwrap_or(match provider {
            Provider::OpenAi => 503,
            Provider::Anthropic => 529,
        })
    }

    fn scripted(&self, fault: Fault, provider: Provider, call: &Call, request_id: &str) -> Verdict {
        match fault {
            Fault::Ok | Fault::ResetBeforeRequest => Verdict::ok(),
            Fault::Status {
                status: 200,
                body: None,
                headers,
                ..
            } => Verdict::Success {
                delay: Duration::ZERO,
                delivery: Delivery::Normal,
                pad: 0,
                extra: headers,
            },
            Fault::Status {
                status,
                retry_after,
                retry_after_ms,
                body,
                headers,
            } => {
                let mut all = Vec::new();
                if let Some(v) = retry_after {
                    all.push(h("retry-after", v));
                }
                if let Some(v) = retry_after_ms {
                    all.push(h("retry-after-ms", v));
                }
                let custom_type = headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                    .map(|(_, v)| v.clone());
                all.extend(
                    headers
                        .into_iter()
                        .filter(|(n, _)| !n.eq_ignore_ascii_case("content-type")),
                );
                let mut body = match body {
                    Some(text) => Body::json(text.into_bytes()),
                    None => status_body(provider, status, request_id),
                };
                if let (Some(ct), Body::Full { content_type, .. }) = (custom_type, &mut body) {
                    *content_type = ct;
                }
                Verdict::Error {
                    status,
                    headers: all,
                    body,
                }
            }
            Fault::Latency { ms } => Verdict::Success {
                delay: Duration::from_millis(ms),
                delivery: Delivery::Normal,
                pad: 0,
                extra: Vec::new(),
            },
            Fault::Hang => Verdict::Hang,
            Fault::Reset => Verdict::Lost(Lost::Reset),
            Fault::Malformed => Verdict::Lost(Lost::Malformed),
            Fault::TruncatedBody => Verdict::Lost(Lost::Truncated),
            Fault::StreamCut { after_events } => Verdict::Lost(Lost::Cut(after_events)),
            Fault::Trickle { bytes_per_sec } => Verdict::Success {
                delay: Duration::ZERO,
                delivery: Delivery::Trickle(bytes_per_sec.max(1)),
                pad: 0,
                extra: Vec::new(),
            },
            Fault::HugeBody { bytes } => {
                let plain = call.success(0, 0, 0).bytes().len();
                Verdict::Success {
                    delay: Duration::ZERO,
                    delivery: Delivery::Normal,
                    pad: bytes.saturating_sub(plain),
                    extra: Vec::new(),
                }
            }
            f @ Fault::Filler { .. } => Verdict::Filler(f),
            Fault::HugeHeader { bytes } => Verdict::Success {
                delay: Duration::ZERO,
                delivery: Delivery::Normal,
                pad: 0,
                extra: vec![h("x-mock-padding", "a".repeat(bytes))],
            },
        }
    }

    fn scenario(
        &self,
        st: &mut State,
        provider: Provider,
        api_key: &str,
        rng: &mut ChaCha8Rng,
        failures_before: u64,
        request_id: &str,
    ) -> (Verdict, Option<&'static str>) {
        let cfg = &self.config;
        let scenario = cfg.scenario;
        let lower_key = api_key.to_ascii_lowercase();
        if (cfg.key_rules || scenario == Scenario::Auth)
            && (lower_key.contains("bad") || lower_key.contains("revoked"))
        {
            let body = match provider {
                Provider::OpenAi => error_body(
                    provider,
                    "invalid_request_error",
                    Some("invalid_api_key"),
                    &format!(
                        "Incorrect API key provided: {}. You can find your API key at https://platform.openai.com/account/api-keys.",
                        mask_key(api_key)
                    ),
                    request_id,
                ),
                Provider::Anthropic => status_body(provider, 401, request_id),
            };
            return (
                Verdict::Error {
                    status: 401,
                    headers: Vec::new(),
                    body,
                },
                Some("auth"),
            );
        }
        if (cfg.key_rules || scenario == Scenario::Quota) && lower_key.contains("quota") {
            let (status, body) = match provider {
                Provider::OpenAi => (
                    429,
                    error_body(
                        provider,
                        "insufficient_quota",
                        Some("insufficient_quota"),
                        "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
                        request_id,
                    ),
                ),
                Provider::Anthropic => (402, status_body(provider, 402, request_id)),
            };
            return (
                Verdict::Error {
                    status,
                    headers: Vec::new(),
                    body,
                },
                Some("quota"),
            );
        }
        let fails = |rng: &mut ChaCha8Rng| {
            let p = cfg.fault_rate * 0.5f64.powi(failures_before.min(60) as i32);
            unit(rng) < p
        };
        match scenario {
            Scenario::Ok | Scenario::Auth | Scenario::Quota => (Verdict::ok(), None),
            Scenario::Flaky => {
                if !fails(rng) {
                    return (Verdict::ok(), None);
                }
                self.flaky_failure(provider, rng, request_id)
            }
            Scenario::Outage => {
                let index = st.scenario_requests;
                st.scenario_requests += 1;
                if self.started.elapsed() < cfg.outage_for || index < cfg.outage_requests {
                    let status = self.outage_status(provider);
                    (
                        Verdict::Error {
                            status,
                            headers: Vec::new(),
                            body: status_body(provider, status, request_id),
                        },
                        Some("outage"),
                    )
                } else {
                    (Verdict::ok(), None)
                }
            }
            Scenario::Ratelimit => self.rate_limit(st, provider, api_key, request_id),
            Scenario::Slow => {
                let span = cfg.latency_max.saturating_sub(cfg.latency_min);
                let delay = cfg.latency_min + span.mul_f64(unit(rng));
                (
                    Verdict::Success {
                        delay,
                        delivery: Delivery::Normal,
                        pad: 0,
                        extra: Vec::new(),
                    },
                    Some("latency"),
                )
            }
            Scenario::Reset if fails(rng) => (Verdict::Lost(Lost::Reset), Some("reset")),
            Scenario::Malformed if fails(rng) => {
                (Verdict::Lost(Lost::Malformed), Some("malformed"))
            }
            Scenario::Hang if fails(rng) => (Verdict::Hang, Some("hang")),
            Scenario::StreamCut if fails(rng) => (
                Verdict::Lost(Lost::Cut(cfg.stream_cut_after)),
                Some("stream_cut"),
            ),
            Scenario::Reset | Scenario::Malformed | Scenario::Hang | Scenario::StreamCut => {
                (Verdict::ok(), None)
            }
        }
    }

    fn flaky_failure(
        &self,
        provider: Provider,
        rng: &mut ChaCha8Rng,
        request_id: &str,
    ) -> (Verdict, Option<&'static str>) {
        let error = |status: u16, body: Body| Verdict::Error {
            status,
            headers: Vec::new(),
            body,
        };
        match below(rng, 100) {
            0..20 => {
                let wait = self.config.retry_after;
                let mut headers = vec![h("retry-after", ceil_secs(wait, 0).to_string())];
                match provider {
                    Provider::OpenAi => {
                        headers.push(h("retry-after-ms", ceil_millis(wait).to_string()));
                        headers.push(h("x-ratelimit-limit-requests", self.config.rpm.to_string()));
                        headers.push(h("x-ratelimit-remaining-requests", "0"));
                        headers.push(h("x-ratelimit-reset-requests", go_duration(wait)));
                    }
                    Provider::Anthropic => {
                        headers.push(h(
                            "anthropic-ratelimit-requests-limit",
                            self.config.rpm.to_string(),
                        ));
                        headers.push(h("anthropic-ratelimit-requests-remaining", "0"));
                        headers.push(h(
                            "anthropic-ratelimit-requests-reset",
                            rfc3339(SystemTime::now() + wait + Duration::from_millis(999)),
                        ));
                    }
                }
                (
                    Verdict::Error {
                        status: 429,
                        headers,
                        body: status_body(provider, 429, request_id),
                    },
                    Some("rate_limit"),
                )
            }
            20..40 => (
                error(500, status_body(provider, 500, request_id)),
                Some("status"),
            ),
            40..50 => (error(502, gateway_page(502)), Some("status")),
            50..70 => (
                error(503, status_body(provider, 503, request_id)),
                Some("status"),
            ),
            70..90 => {
                let status = match provider {
                    Provider::OpenAi => 503,
                    Provider::Anthropic => 529,
                };
                (
                    error(status, status_body(provider, status, request_id)),
                    Some("status"),
                )
            }
            _ => (Verdict::Lost(Lost::Reset), Some("reset")),
        }
    }

    fn rate_limit(
        &self,
        st: &mut State,
        provider: Provider,
        api_key: &str,
        request_id: &str,
    ) -> (Verdict, Option<&'static str>) {
        let cfg = &self.config;
        let rpm = cfg.rpm.max(1);
        let burst = f64::from(cfg.rate_burst.unwrap_or(rpm).max(1));
        let per_sec = f64::from(rpm) / 60.0;
        let now = Instant::now();
        if st.buckets.len() >= cfg.max_keys.max(1) && !st.buckets.contains_key(api_key) {
            st.buckets.clear();
        }
        let bucket = st.buckets.entry(api_key.to_owned()).or_insert(Bucket {
            tokens: burst,
            last: now,
        });
        let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_sec).min(burst);
        bucket.last = now;
        let allowed = bucket.tokens >= 1.0;
        if allowed {
            bucket.tokens -= 1.0;
        }
        let tokens = bucket.tokens;
        let remaining = tokens.floor().max(0.0) as u64;
        let until_full = Duration::from_secs_f64(((burst - tokens) / per_sec).max(0.0));
        let mut headers = Vec::new();
        match provider {
            Provider::OpenAi => {
                headers.push(h("x-ratelimit-limit-requests", rpm.to_string()));
                headers.push(h("x-ratelimit-remaining-requests", remaining.to_string()));
                headers.push(h("x-ratelimit-reset-requests", go_duration(until_full)));
            }
            Provider::Anthropic => {
                headers.push(h("anthropic-ratelimit-requests-limit", rpm.to_string()));
                headers.push(h(
                    "anthropic-ratelimit-requests-remaining",
                    remaining.to_string(),
                ));
                // Rounded up to the next whole second.
                let reset_at = SystemTime::now() + until_full + Duration::from_millis(999);
                headers.push(h("anthropic-ratelimit-requests-reset", rfc3339(reset_at)));
            }
        }
        if allowed {
            return (
                Verdict::Success {
                    delay: Duration::ZERO,
                    delivery: Delivery::Normal,
                    pad: 0,
                    extra: headers,
                },
                None,
            );
        }
        let wait = Duration::from_secs_f64(((1.0 - tokens) / per_sec).max(0.0));
        headers.push(h("retry-after", ceil_secs(wait, 1).to_string()));
        if provider == Provider::OpenAi {
            headers.push(h("retry-after-ms", ceil_millis(wait).to_string()));
        }
        let body = match provider {
            Provider::OpenAi => error_body(
                provider,
                "requests",
                Some("rate_limit_exceeded"),
                &format!(
                    "Rate limit reached for requests per min (RPM): Limit {rpm}, Used {rpm}, Requested 1. Please try again in {}.",
                    go_duration(wait)
                ),
                request_id,
            ),
            Provider::Anthropic => error_body(
                provider,
                "rate_limit_error",
                None,
                &format!(
                    "This request would exceed your organization's rate limit of {rpm} requests per minute. Please try again later."
                ),
                request_id,
            ),
        };
        (
            Verdict::Error {
                status: 429,
                headers,
                body,
            },
            Some("rate_limit"),
        )
    }

    /// The `/__…` control endpoints.
    fn control(&self, req: &Request) -> Plan {
        let ok = |v: serde_json::Value| Plan::send(200, Vec::new(), json_body(&v));
        let bad = |status: u16, message: String| {
            Plan::send(
                status,
                Vec::new(),
                json_body(&serde_json::json!({ "error": message })),
            )
        };
        match (req.method.as_str(), req.path.as_str()) {
            ("GET", "/__stats") => {
                let stats = self.stats();
                Plan::send(
                    200,
                    Vec::new(),
                    Body::json(serde_json::to_vec(&stats).unwrap_or_default()),
                )
            }
            ("POST", "/__faults") => {
                let text = String::from_utf8_lossy(&req.body);
                match Fault::script_from_json(&text) {
                    Ok(faults) => {
                        let n = faults.len();
                        let mut st = self.lock();
                        st.script.extend(faults);
                        let remaining = st.script.len();
                        drop(st);
                        ok(serde_json::json!({ "appended": n, "script_remaining": remaining }))
                    }
                    Err(e) => bad(400, e.to_string()),
                }
            }
            ("POST", "/__reset") => {
                self.reset();
                ok(serde_json::json!({ "reset": true }))
            }
            ("POST", "/__down") => {
                let value: Result<serde_json::Value, _> = serde_json::from_slice(&req.body);
                let down = match value {
                    Ok(serde_json::Value::Bool(b)) => Some(b),
                    Ok(v) => v.get("down").and_then(serde_json::Value::as_bool),
                    Err(_) => None,
                };
                match down {
                    Some(d) => {
                        self.set_down(d);
                        ok(serde_json::json!({ "down": d }))
                    }
                    None => bad(400, "expected {\"down\": true|false}".to_owned()),
                }
            }
            (_, "/__stats" | "/__faults" | "/__reset" | "/__down") => {
                bad(405, format!("method {} not allowed", req.method))
            }
            _ => bad(404, format!("no control endpoint {}", req.path)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_keys() {
        assert_eq!(mask_key("sk-bad-1234567890"), "sk-**********7890");
        assert_eq!(mask_key("short"), "*****");
    }
}
