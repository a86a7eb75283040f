//! The operations a [`Scenario`] is made of: what a driver, an upstream, a clock and an
//! operator can do to an engine and its calls.
//!
//! Every type derives [`arbitrary::Arbitrary`], so the fuzz target and the proptest
//! (which turns its random bytes into an [`arbitrary::Unstructured`]) decode the same
//! bytes into the same scenario. Fields are drawn from small, meaningful ranges (a
//! status is usually one the APIs really send, a wait is nanoseconds to minutes) so that
//! few bytes reach deep states.

use arbitrary::{Arbitrary, Result, Unstructured};
use steadfast_core::backoff::Jitter;
use steadfast_core::breaker::Window;
use steadfast_core::classify::{Class, ClassifyConfig, ErrorKind, Rule, Scope};
use steadfast_core::engine::EndpointSpec;
use steadfast_core::limiter::LimiterConfig;
use steadfast_core::outcome::{BodyState, Phase, TransportKind};
use steadfast_core::policy::{Policy, Preset};
use steadfast_core::retry::RetryConfig;

use core::time::Duration;

/// A whole run: the engine's setup and the operations applied to it.
#[derive(Debug, Clone, Arbitrary)]
pub struct Scenario {
    /// The policy and endpoints.
    pub setup: Setup,
    /// What happens, in order.
    pub ops: Vec<Op>,
}

impl Scenario {
    /// Decodes a scenario from fuzzer or proptest bytes; never fails (missing bytes
    /// read as zeros).
    pub fn from_bytes(bytes: &[u8]) -> Scenario {
        let mut u = Unstructured::new(bytes);
        let setup = Setup::arbitrary(&mut u).unwrap_or_default();
        let mut ops = Vec::new();
        while !u.is_empty() && ops.len() < MAX_OPS {
            match Op::arbitrary(&mut u) {
                Ok(op) => ops.push(op),
                Err(_) => break,
            }
        }
        Scenario { setup, ops }
    }
}

/// The most operations decoded from one input (keeps every run short).
pub const MAX_OPS: usize = 400;

/// The engine's configuration, drawn from the presets with a few knobs turned.
#[derive(Debug, Clone, Default, Arbitrary)]
pub struct Setup {
    /// The preset the policy starts from.
    pub preset: PresetChoice,
    /// Endpoints: priority (0–2) and key count (1–3) each; at least one.
    #[arbitrary(with = endpoints)]
    pub endpoints: Vec<(u8, u16)>,
    /// No jitter anywhere, so instants are exact.
    pub exact: bool,
    /// Overrides `retry.max_attempts` (1–8).
    #[arbitrary(with = opt_range::<1, 8>)]
    pub max_attempts: Option<u32>,
    /// Overrides `retry.idempotent`.
    pub idempotent: Option<bool>,
    /// Overrides `retry.hold`.
    pub hold: Option<bool>,
    /// Overrides `retry.max_retry_after`, in seconds (1–600).
    #[arbitrary(with = opt_range::<1, 600>)]
    pub max_retry_after_secs: Option<u32>,
    /// A breaker that trips easily.
    pub breaker: Option<BreakerKnobs>,
    /// The retry budget.
    pub budget: BudgetChoice,
    /// Client-side limits.
    pub limiter: LimiterChoice,
    /// Backoff delays and jitter.
    pub backoff: BackoffChoice,
    /// One classification rule changed from its default.
    pub classify: ClassifyChoice,
    /// The engine's RNG seed.
    pub seed: u64,
}

/// A preset to start from.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
#[allow(missing_docs)]
pub enum PresetChoice {
    #[default]
    Standard,
    Interactive,
    Batch,
    Streaming,
}

/// Breaker knobs that make it trip and probe within a short scenario.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub struct BreakerKnobs {
    /// Consecutive failures that trip it (1–5).
    #[arbitrary(with = range::<1, 5>)]
    pub consecutive: u32,
    /// Probes allowed at once while half-open (1–3).
    #[arbitrary(with = range::<1, 3>)]
    pub probes: u32,
    /// Probe successes that close it (1–3).
    #[arbitrary(with = range::<1, 3>)]
    pub close_after: u32,
    /// Open time in seconds (1–30).
    #[arbitrary(with = range::<1, 30>)]
    pub open_secs: u32,
    /// A count window of this many calls (1–20) instead of the time window.
    #[arbitrary(with = opt_range::<1, 20>)]
    pub window_calls: Option<u32>,
}

/// The retry budget.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub enum BudgetChoice {
    /// The policy's.
    #[default]
    Default,
    /// No budget.
    Off,
    /// Almost none: no deposits, a floor of `min_per_sec` (0–2) retries a second.
    Tight(#[arbitrary(with = range::<0, 2>)] u32),
}

/// Backoff delays and jitter.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub enum BackoffChoice {
    /// The preset's.
    #[default]
    Preset,
    /// No delay at all: every retry goes at once.
    Immediate,
    /// From `base_ms` (1–2000) up to `cap_secs` (2–60) in one of the jitter modes.
    Custom {
        /// The first delay in milliseconds.
        #[arbitrary(with = range::<1, 2000>)]
        base_ms: u32,
        /// The longest delay in seconds.
        #[arbitrary(with = range::<2, 60>)]
        cap_secs: u32,
        /// 0 none, 1 full, 2 equal, 3 decorrelated, 4 proportional ±20 %.
        jitter: u8,
    },
}

/// One classification rule changed from its default.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub enum ClassifyChoice {
    /// The defaults.
    #[default]
    Default,
    /// `x-should-retry` is ignored.
    IgnoreShouldRetry,
    /// 404 is the endpoint's fault and retryable (a model rolling out).
    RetryableNotFound,
    /// 500 is the request's fault and final.
    FinalServerError,
    /// An exhausted quota is final (no other key is tried).
    FinalQuota,
    /// A TLS failure is final.
    FinalTls,
    /// 429 counts against the endpoint (breaker, backoff) instead of the key.
    EndpointThrottle,
}

/// Client-side rate limits.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub enum LimiterChoice {
    /// None (the server's hints only).
    #[default]
    Default,
    /// At most this many calls in flight per endpoint (1–3).
    InFlight(#[arbitrary(with = range::<1, 3>)] u32),
    /// Requests per period.
    Requests {
        /// Per period (1–5).
        #[arbitrary(with = range::<1, 5>)]
        per: u32,
        /// The period in seconds (1–60).
        #[arbitrary(with = range::<1, 60>)]
        period_secs: u32,
    },
    /// Tokens per minute (100–10 000).
    Tokens(#[arbitrary(with = range::<100, 10_000>)] u32),
    /// The server's hints are ignored.
    IgnoreServer,
}

impl Setup {
    /// The policy, the endpoints and the seed this setup describes. Always valid.
    pub fn build(&self) -> (Policy, Vec<EndpointSpec>, u64) {
        let mut p = Policy::from(match self.preset {
            PresetChoice::Standard => Preset::Standard,
            PresetChoice::Interactive => Preset::Interactive,
            PresetChoice::Batch => Preset::Batch,
            PresetChoice::Streaming => Preset::Streaming,
        });
        if self.exact {
            p = p.without_jitter();
        }
        if let Some(n) = self.max_attempts {
            p.retry.max_attempts = n;
        }
        if let Some(b) = self.idempotent {
            p.retry.idempotent = b;
        }
        if let Some(b) = self.hold {
            p.retry.hold = b;
        }
        if let Some(s) = self.max_retry_after_secs {
            p.retry.max_retry_after = Duration::from_secs(u64::from(s));
        }
        if let Some(k) = self.breaker {
            p.breaker.consecutive_failures = Some(k.consecutive);
            p.breaker.half_open_probes = k.probes;
            p.breaker.close_after = k.close_after;
            p.breaker.open_for = Duration::from_secs(u64::from(k.open_secs));
            p.breaker.open_max = p.breaker.open_for.max(p.breaker.open_max);
            if let Some(n) = k.window_calls {
                p.breaker.window = Window::Count(n);
                p.breaker.min_calls = p.breaker.min_calls.min(n);
            }
        }
        match self.budget {
            BudgetChoice::Default => {}
            BudgetChoice::Off => p.budget.enabled = false,
            BudgetChoice::Tight(floor) => {
                p.budget.ratio = 0.0;
                p.budget.min_per_sec = floor;
            }
        }
        p.limiter = limiter(self.limiter);
        backoff(&mut p, self.backoff);
        classify(&mut p.classify, self.classify);
        let endpoints = match self.endpoints.as_slice() {
            [] => vec![EndpointSpec::new(0, 1)],
            list => list
                .iter()
                .map(|&(prio, keys)| EndpointSpec::new(prio, keys))
                .collect(),
        };
        (p, endpoints, self.seed)
    }
}

fn backoff(p: &mut Policy, choice: BackoffChoice) {
    match choice {
        BackoffChoice::Preset => {}
        BackoffChoice::Immediate => {
            p.backoff.base = Duration::ZERO;
            p.backoff.jitter = Jitter::None;
        }
        BackoffChoice::Custom {
            base_ms,
            cap_secs,
            jitter,
        } => {
            p.backoff.base = Duration::from_millis(u64::from(base_ms));
            p.backoff.cap = Duration::from_secs(u64::from(cap_secs));
            p.backoff.jitter = match jitter % 5 {
                0 => Jitter::None,
                1 => Jitter::Full,
                2 => Jitter::Equal,
                3 => Jitter::Decorrelated,
                _ => Jitter::Proportional(0.2),
            };
        }
    }
}

fn classify(rules: &mut ClassifyConfig, choice: ClassifyChoice) {
    let status = |rules: &mut ClassifyConfig, code, rule| {
        let _ = rules.set_status(code, rule);
    };
    match choice {
        ClassifyChoice::Default => {}
        ClassifyChoice::IgnoreShouldRetry => rules.honor_should_retry = false,
        ClassifyChoice::RetryableNotFound => status(
            rules,
            404,
            Rule::new(Class::NotFound, Scope::Endpoint, true),
        ),
        ClassifyChoice::FinalServerError => status(
            rules,
            500,
            Rule::new(Class::ServerError, Scope::Request, false),
        ),
        ClassifyChoice::FinalQuota => rules.set_error_kind(
            ErrorKind::InsufficientQuota,
            Some(Rule::new(Class::QuotaExhausted, Scope::Key, false)),
        ),
        ClassifyChoice::FinalTls => {
            rules.set_transport(
                TransportKind::Tls,
                Rule::new(Class::Connect, Scope::Endpoint, false),
            );
        }
        ClassifyChoice::EndpointThrottle => status(
            rules,
            429,
            Rule::new(Class::RateLimited, Scope::Endpoint, true),
        ),
    }
}

fn limiter(choice: LimiterChoice) -> LimiterConfig {
    let mut l = LimiterConfig::default();
    match choice {
        LimiterChoice::Default => {}
        LimiterChoice::InFlight(n) => l.max_in_flight = Some(n),
        LimiterChoice::Requests { per, period_secs } => {
            l.requests = Some(per);
            l.period = Duration::from_secs(u64::from(period_secs));
        }
        LimiterChoice::Tokens(n) => l.tokens = Some(u64::from(n)),
        LimiterChoice::IgnoreServer => l.follow_server = false,
    }
    l
}

/// One thing that happens. Drawn with weights: answers and time steps are common,
/// rewinds, cancels and key events rare.
#[derive(Debug, Clone)]
pub enum Op {
    /// The driver's clock moves forward.
    Advance(Step),
    /// The driver's clock steps back (a bad clock): every machine must clamp it.
    Rewind(Step),
    /// The driver sleeps until the earliest instant a call asked to be woken at (or an
    /// attempt's deadline), then polls every call that is due.
    Sleep,
    /// A new call starts.
    NewCall(NewCall),
    /// The attempt in flight of one call (picked by index among those in flight) ends.
    Answer {
        /// Picks the call.
        call: u8,
        /// What happened.
        answer: Answer,
    },
    /// The caller cancels one unfinished call (picked by index).
    Cancel {
        /// Picks the call.
        call: u8,
    },
    /// An operator re-enables a key (indices may be out of range: the engine must
    /// refuse those with an error).
    EnableKey {
        /// The endpoint index.
        endpoint: u8,
        /// The key index.
        key: u8,
    },
    /// One unfinished call (picked by index) is polled, due or not.
    Poll {
        /// Picks the call.
        call: u8,
    },
    /// Every unfinished call whose wake-up instant has come is polled.
    PollDue,
}

impl<'a> Arbitrary<'a> for Op {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Op> {
        Ok(match u.int_in_range(0..=99u8)? {
            0..=34 => Op::Answer {
                call: u.arbitrary()?,
                answer: u.arbitrary()?,
            },
            35..=49 => Op::Advance(u.arbitrary()?),
            50..=61 => Op::Sleep,
            62..=72 => Op::NewCall(u.arbitrary()?),
            73..=78 => Op::PollDue,
            79..=83 => Op::Poll {
                call: u.arbitrary()?,
            },
            84..=87 => Op::Rewind(u.arbitrary()?),
            88..=91 => Op::Cancel {
                call: u.arbitrary()?,
            },
            _ => Op::EnableKey {
                endpoint: u.arbitrary()?,
                key: u.arbitrary()?,
            },
        })
    }
}

/// A span of time.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Step {
    /// Nanoseconds (0–65 535).
    Nanos(u16),
    /// Milliseconds (0–65 535).
    Millis(u16),
    /// Seconds (0–255).
    Secs(u8),
    /// Minutes (0–255).
    Minutes(u8),
}

impl Step {
    /// The span.
    pub fn span(self) -> Duration {
        match self {
            Step::Nanos(n) => Duration::from_nanos(u64::from(n)),
            Step::Millis(n) => Duration::from_millis(u64::from(n)),
            Step::Secs(n) => Duration::from_secs(u64::from(n)),
            Step::Minutes(n) => Duration::from_secs(60 * u64::from(n)),
        }
    }
}

/// A call as the caller starts it.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub struct NewCall {
    /// Its estimated token cost (0–3000).
    #[arbitrary(with = range::<0, 3000>)]
    pub tokens: u32,
    /// A business id (from a small set, so repeats happen) to derive the key from.
    pub business_id: Option<u8>,
    /// Its own retry rules instead of the policy's.
    pub rules: Option<CallRules>,
}

/// Retry rules of one call (always valid).
#[derive(Debug, Clone, Copy, Arbitrary)]
pub struct CallRules {
    /// 1–6.
    #[arbitrary(with = range::<1, 6>)]
    pub max_attempts: u32,
    /// Seconds (1–600), or none.
    #[arbitrary(with = opt_range::<1, 600>)]
    pub deadline_secs: Option<u32>,
    /// Whether a failure after sending may be retried.
    pub idempotent: bool,
    /// Whether to wait out open breakers.
    pub hold: bool,
    /// A stream: a first-event timeout of this many seconds (1–30).
    #[arbitrary(with = opt_range::<1, 30>)]
    pub stream_secs: Option<u32>,
    /// The attempt timeout in seconds (1–120).
    #[arbitrary(with = range::<1, 120>)]
    pub attempt_secs: u32,
}

impl CallRules {
    /// These rules over the policy's.
    pub fn apply(&self, base: &RetryConfig) -> RetryConfig {
        let mut r = *base;
        r.max_attempts = self.max_attempts;
        r.deadline = self
            .deadline_secs
            .map(|s| Duration::from_secs(u64::from(s)));
        r.idempotent = self.idempotent;
        r.hold = self.hold;
        r.first_event_timeout = self.stream_secs.map(|s| Duration::from_secs(u64::from(s)));
        r.attempt_timeout = Duration::from_secs(u64::from(self.attempt_secs));
        r
    }
}

/// How an attempt ended (an HTTP answer most of the time).
#[derive(Debug, Clone)]
pub enum Answer {
    /// The server answered.
    Http(HttpAnswer),
    /// A failure below HTTP.
    Transport {
        /// What failed.
        kind: TransportKind,
        /// Before or after the request left.
        phase: Phase,
    },
    /// The driver gave the attempt up (reported as an outcome, not via `cancel`).
    Cancelled,
}

impl<'a> Arbitrary<'a> for Answer {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Answer> {
        Ok(match u.int_in_range(0..=19u8)? {
            0..=15 => Answer::Http(u.arbitrary()?),
            16..=18 => Answer::Transport {
                kind: u.arbitrary()?,
                phase: u.arbitrary()?,
            },
            _ => Answer::Cancelled,
        })
    }
}

/// An HTTP answer as raw parts, parsed by `Response::from_http` like an adapter would.
#[derive(Debug, Clone, Arbitrary)]
pub struct HttpAnswer {
    /// The status.
    pub status: Status,
    /// Headers (at most four kinds are drawn; more would only slow the search).
    #[arbitrary(with = headers)]
    pub headers: Vec<Header>,
    /// The body.
    pub body: Body,
    /// For a 2xx: whether the body arrived whole.
    pub body_state: BodyState,
    /// Tokens the response reports having used.
    pub tokens_used: Option<u16>,
}

/// An HTTP status in 100..=599, usually one the APIs send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status(pub u16);

/// The statuses LLM APIs really send.
pub const COMMON_STATUSES: [u16; 24] = [
    200, 200, 200, 200, 200, 200, 201, 429, 429, 500, 502, 503, 504, 529, 529, 400, 401, 402, 403,
    404, 408, 409, 413, 501,
];

impl<'a> Arbitrary<'a> for Status {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Status> {
        if u.ratio(3, 4)? {
            Ok(Status(*u.choose(&COMMON_STATUSES)?))
        } else {
            Ok(Status(u.int_in_range(100..=599)?))
        }
    }
}

/// One response header, as a server would write it.
#[derive(Debug, Clone, Arbitrary)]
pub enum Header {
    /// `retry-after: <seconds>`.
    RetryAfterSecs(u16),
    /// `retry-after: <seconds>.<millis>`.
    RetryAfterFraction(u16),
    /// `retry-after-ms: <millis>`.
    RetryAfterMs(u32),
    /// `retry-after: <HTTP-date>` this many seconds from the wall clock, in a form.
    RetryAfterDate {
        /// Seconds from the wall clock (negative: in the past).
        offset: i16,
        /// 0: IMF-fixdate, 1: RFC 850, 2: asctime.
        form: u8,
    },
    /// `date:` the server's clock, this many seconds off the wall clock.
    Date(i16),
    /// `x-should-retry: true|false`.
    ShouldRetry(bool),
    /// `x-ratelimit-remaining-{requests|tokens}`.
    OpenAiRemaining {
        /// Tokens rather than requests.
        tokens: bool,
        /// The value.
        n: u16,
    },
    /// `x-ratelimit-reset-{requests|tokens}` as a Go-style duration (`6m0s`, `20ms`).
    OpenAiReset {
        /// Tokens rather than requests.
        tokens: bool,
        /// The wait.
        after: Step,
    },
    /// `anthropic-ratelimit-{kind}-remaining`.
    AnthropicRemaining {
        /// 0 requests, 1 tokens, 2 input-tokens, 3 output-tokens.
        kind: u8,
        /// The value.
        n: u16,
    },
    /// `anthropic-ratelimit-{kind}-reset` as an RFC 3339 instant from the wall clock.
    AnthropicReset {
        /// 0 requests, 1 tokens, 2 input-tokens, 3 output-tokens.
        kind: u8,
        /// Milliseconds from the wall clock (negative: in the past).
        offset_ms: i32,
    },
    /// A hint a server should not send: huge, negative, garbage.
    Garbage(u8),
}

/// A response body.
#[derive(Debug, Clone, Arbitrary)]
pub enum Body {
    /// Nothing.
    Empty,
    /// An OpenAI-shaped error of a kind, with one of the canned messages.
    OpenAi {
        /// Index into [`ErrorKind::ALL`].
        kind: u8,
        /// Index into [`crate::wire::MESSAGES`].
        message: u8,
    },
    /// An Anthropic-shaped error of a kind.
    Anthropic {
        /// Index into [`ErrorKind::ALL`].
        kind: u8,
        /// Index into [`crate::wire::MESSAGES`].
        message: u8,
    },
    /// A proxy's HTML error page.
    Html,
    /// Arbitrary bytes (at most 64).
    Raw(#[arbitrary(with = short_bytes)] Vec<u8>),
}

/// The error kind a body index names.
pub fn kind_at(index: u8) -> ErrorKind {
    ErrorKind::ALL[usize::from(index) % ErrorKind::ALL.len()]
}

fn range<const LO: u32, const HI: u32>(u: &mut Unstructured<'_>) -> Result<u32> {
    u.int_in_range(LO..=HI)
}

fn opt_range<const LO: u32, const HI: u32>(u: &mut Unstructured<'_>) -> Result<Option<u32>> {
    if u.arbitrary()? {
        Ok(Some(u.int_in_range(LO..=HI)?))
    } else {
        Ok(None)
    }
}

fn endpoints(u: &mut Unstructured<'_>) -> Result<Vec<(u8, u16)>> {
    let n = u.int_in_range(1..=3)?;
    (0..n)
        .map(|_| Ok((u.int_in_range(0..=2)?, u.int_in_range(1..=3)?)))
        .collect()
}

fn headers(u: &mut Unstructured<'_>) -> Result<Vec<Header>> {
    let n = u.int_in_range(0..=4)?;
    (0..n).map(|_| Header::arbitrary(u)).collect()
}

fn short_bytes(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    let n = u.int_in_range(0..=64)?;
    Ok(u.bytes(n)?.to_vec())
}
