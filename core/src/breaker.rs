//! The per-endpoint circuit breaker.
//!
//! A [`Breaker`] watches the endpoint-scope outcomes of one endpoint and stops sending
//! to it while it is unwell. It is a sans-IO state machine: `now` and the jitter RNG
//! come in as arguments, and it holds a fixed amount of memory (no allocation, ever).
//!
//! # States
//!
//! - **Closed**: every call is allowed ([`Permit::Allow`]). Results are recorded, and
//!   the breaker trips to *open* when any enabled model says so:
//!   - *consecutive failures*: `consecutive_failures` failures in a row;
//!   - *failure rate*: at least `min_calls` calls in the sliding window and
//!     `failures ≥ failure_rate × calls`;
//!   - *slow calls*: at least `min_calls` calls in the window and
//!     `slow ≥ slow_rate × calls`, where a success whose latency is strictly above
//!     `slow_call` is slow. The model is active only when `slow_call` is set *and*
//!     `slow_rate < 1.0` (so the default `1.0` means off).
//!
//!   The rates are judged after every counted result, so a success can trip too: the
//!   one that brings the window to `min_calls`, or one whose arrival evicts older
//!   successes from the window.
//! - **Open**: every call is denied ([`Permit::Deny`] with the instant it lifts) until
//!   `open_until`. At `now >= open_until` (the very instant included) the breaker is
//!   half-open.
//! - **Half-open**: at most `half_open_probes` probes ([`Permit::Probe`]) are in
//!   flight at once (default 3). A probe is judged like any result: an endpoint-scope
//!   failure (5xx, 529, timeout, reset) fails it, and a success is good unless the
//!   slow-call model is on and it was slow; request-, key- and throttle-scope results
//!   judge nothing and just free the slot. `close_after` good probes (default 2)
//!   close the breaker; the first failed probe reopens it with the grown open time.
//!   Each half-open period starts with every probe slot free: a probe sent in an
//!   earlier period that reports late is not a probe of this one.
//!
//! # Modes
//!
//! A [`BreakerMode`] overrides the state machine, from the config
//! ([`BreakerConfig::mode`]) or at run time ([`Breaker::set_mode`]):
//! - [`BreakerMode::Auto`]: the state machine above decides.
//! - [`BreakerMode::ForcedOpen`]: every call is denied until the mode changes; no
//!   probe goes out and no result or timeout changes the state (results of calls
//!   admitted earlier still free their probe slots).
//! - [`BreakerMode::Disabled`]: every call is allowed and nothing changes the state,
//!   as with `enabled = false`.
//! - [`BreakerMode::MetricsOnly`]: the state machine runs as in `Auto` — it trips,
//!   half-opens, closes and emits its events — but a call it would deny is allowed
//!   (as a plain call, not a probe).
//!
//! A mode change keeps the state as it was; [`Breaker::reset`] closes the breaker and
//! forgets its window in any mode.
//!
//! # Inputs
//!
//! Only endpoint-scope outcomes count ([`BreakerInput::Failure`]). Request-, key- and
//! throttle-scope outcomes and cancellations are [`BreakerInput::Ignored`]: they count
//! neither as a success nor as a failure (libraries differ here; we chose neither), but
//! an ignored probe still frees its probe slot. Every [`Permit::Probe`] must be answered
//! by exactly one [`Breaker::on_result`] with `was_probe = true` while its half-open
//! period ([`Breaker::probe_period`]) lasts, or be given back with
//! [`Breaker::release_probe`] (a probe that will never be answered: its call was
//! dropped, or its answer is overdue); otherwise its slot stays taken until the
//! breaker next reopens. A result of an earlier period is reported with
//! `was_probe = false`.
//!
//! Results that arrive while the breaker is open, and non-probe results that arrive while
//! it is half-open, belong to calls admitted before the trip: they are not recorded.
//!
//! # Open time
//!
//! The first trip opens for `open_for`; each further trip (a probe failure, or a new
//! trip soon after closing) multiplies the un-jittered time by `open_growth`, up to
//! `open_max`. The growth returns to `open_for` when the breaker trips after having
//! stayed closed for at least `open_max` since it last closed. Jitter is positive
//! only: the breaker stays open for `t × (1 + u × open_jitter)` with `u` uniform in
//! `[0, 1)` from the caller's RNG, so never shorter than `t` (and at most
//! `open_max × (1 + open_jitter)`). The RNG is drawn once per trip, and only when
//! `open_jitter > 0`.
//!
//! # Sliding window
//!
//! The window lives in [`BUCKETS`] fixed buckets, updated incrementally (no division
//! on the hot path).
//! - `Window::Count(n)`: buckets of `s = ceil(n / 16)` calls each, in a ring of
//!   `ceil(n / s)` buckets. When the newest bucket is full, the next call evicts the
//!   oldest bucket, so the window holds between `n - s + 1` and `n + s - 1` of the most
//!   recent calls (exactly `n` once full when `n ≤ 16`).
//! - `Window::Time(d)`: 16 buckets of `d / 16` each; the window holds the calls of the
//!   current bucket and the 15 before it, i.e. between the last `15/16 × d` and `d`.
//!
//! The window starts empty at construction and again each time the breaker closes.
//!
//! # Time
//!
//! A `now` earlier than one already seen is treated as that latest instant (no time
//! passed); it never panics nor corrupts the window.

use core::time::Duration;
use rand_core::Rng;

use crate::config::{fraction, nonzero, ordered, within};
use crate::error::ConfigError;
use crate::ring::Ring;
use crate::time::{Monotonic, Timestamp, nanos_of};

/// The number of buckets of the sliding window.
pub const BUCKETS: usize = 16;

/// How many transition events are kept when the caller does not drain them.
pub const EVENT_CAPACITY: usize = 8;

/// The sliding window over which the failure and slow-call rates are measured.
///
/// serde: `window = { calls = 100 }` or `window = { time = "30s" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Window {
    /// The last `n` calls (approximated by buckets of `ceil(n / 16)` calls).
    #[cfg_attr(feature = "serde", serde(rename = "calls"))]
    Count(u32),
    /// The calls of the last span (approximated by 16 buckets of a sixteenth each).
    Time(#[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))] Duration),
}

/// The default is the last 50 calls: a long time window remembers minutes of
/// successes and trips tens of seconds into an outage, while 50 calls forget them as
/// fast as traffic arrives.
impl Default for Window {
    fn default() -> Self {
        Window::Count(50)
    }
}

/// How the breaker decides; see the module documentation.
///
/// serde: `mode = "auto"`, `"forced_open"`, `"disabled"` or `"metrics_only"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum BreakerMode {
    /// The state machine decides (the default).
    #[default]
    Auto,
    /// Every call is denied until the mode changes; no probes.
    ForcedOpen,
    /// Every call is allowed and the state never changes.
    Disabled,
    /// The state machine runs and emits its events, but nothing is denied.
    MetricsOnly,
}

impl BreakerMode {
    /// The mode's name in snake case, as config files spell it.
    pub fn name(self) -> &'static str {
        match self {
            BreakerMode::Auto => "auto",
            BreakerMode::ForcedOpen => "forced_open",
            BreakerMode::Disabled => "disabled",
            BreakerMode::MetricsOnly => "metrics_only",
        }
    }

    /// Whether results and timeouts are ignored (the state is frozen).
    fn frozen(self) -> bool {
        matches!(self, BreakerMode::ForcedOpen | BreakerMode::Disabled)
    }
}

impl core::fmt::Display for BreakerMode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Circuit breaker parameters.
///
/// Defaults: `enabled = true`, `mode = Auto`, `consecutive_failures = None` (off: under concurrency,
/// fast failures come back in runs even from a mostly healthy endpoint, so a run of N
/// trips it; the failure rate over a window with a minimum of calls does not),
/// `failure_rate = Some(0.5)`, `window = Count(50)`, `min_calls = 20`,
/// `slow_call = None`, `slow_rate = 1.0` (off), `open_for = 5s`, `open_growth = 2.0`,
/// `open_max = 60s`, `open_jitter = 0.1`, `half_open_probes = 3`, `close_after = 2`.
///
/// serde: an `Option` model that is on by default is turned off with the string
/// `"off"` (e.g. `consecutive_failures = "off"`), since TOML has no null.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct BreakerConfig {
    /// When false the breaker always allows and records nothing (the same as
    /// `mode = Disabled`).
    pub enabled: bool,
    /// The mode every endpoint's breaker starts in (an operator may change it per
    /// endpoint at run time). With `enabled = false` only `Auto` and `Disabled` are
    /// valid.
    pub mode: BreakerMode,
    /// Trip after this many endpoint failures in a row; `None` disables the model.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::off_or"))]
    pub consecutive_failures: Option<u32>,
    /// Trip when the failure fraction of the window reaches this, in `(0, 1]`;
    /// `None` disables the model.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::off_or"))]
    pub failure_rate: Option<f64>,
    /// The sliding window of the rate models.
    pub window: Window,
    /// The rate models may trip only with at least this many calls in the window.
    pub min_calls: u32,
    /// A success strictly slower than this is a slow call; `None` disables the model.
    #[cfg_attr(
        feature = "serde",
        serde(with = "crate::duration::serde_human::option")
    )]
    pub slow_call: Option<Duration>,
    /// Trip when the slow fraction of the window reaches this, in `(0, 1]`; `1.0` is off.
    pub slow_rate: f64,
    /// How long the first trip stays open.
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub open_for: Duration,
    /// The factor applied to the open time on each further trip, in `[1, 100]`
    /// (`1.0` keeps it fixed).
    pub open_growth: f64,
    /// The longest un-jittered open time.
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub open_max: Duration,
    /// Positive jitter fraction of the open time, in `[0, 1]`.
    pub open_jitter: f64,
    /// The most probes in flight at once while half-open.
    pub half_open_probes: u32,
    /// Probe successes needed to close from half-open.
    pub close_after: u32,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            enabled: true,
            mode: BreakerMode::Auto,
            consecutive_failures: None,
            failure_rate: Some(0.5),
            window: Window::default(),
            min_calls: 20,
            slow_call: None,
            slow_rate: 1.0,
            open_for: Duration::from_secs(5),
            open_growth: 2.0,
            open_max: Duration::from_secs(60),
            open_jitter: 0.1,
            half_open_probes: 3,
            close_after: 2,
        }
    }
}

impl BreakerConfig {
    /// Checks the parameters, naming the first bad field (e.g. `"breaker.min_calls"`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let c = self;
        if !c.enabled && !matches!(c.mode, BreakerMode::Auto | BreakerMode::Disabled) {
            return Err(ConfigError::Conflict {
                field: "breaker.mode",
                with: "breaker.enabled",
            });
        }
        nonzero(
            c.consecutive_failures == Some(0),
            "breaker.consecutive_failures",
        )?;
        if let Some(rate) = c.failure_rate {
            fraction("breaker.failure_rate", rate)?;
        }
        match c.window {
            Window::Count(n) => nonzero(n == 0, "breaker.window.calls")?,
            Window::Time(d) => nonzero(d.is_zero(), "breaker.window.time")?,
        }
        nonzero(c.min_calls == 0, "breaker.min_calls")?;
        if let Window::Count(n) = c.window {
            ordered(
                c.min_calls <= n,
                "breaker.min_calls",
                "breaker.window.calls",
            )?;
        }
        nonzero(
            c.slow_call.is_some_and(|d| d.is_zero()),
            "breaker.slow_call",
        )?;
        fraction("breaker.slow_rate", c.slow_rate)?;
        nonzero(c.open_for.is_zero(), "breaker.open_for")?;
        within("breaker.open_growth", c.open_growth, 1.0, 100.0)?;
        ordered(
            c.open_for <= c.open_max,
            "breaker.open_for",
            "breaker.open_max",
        )?;
        within("breaker.open_jitter", c.open_jitter, 0.0, 1.0)?;
        nonzero(c.half_open_probes == 0, "breaker.half_open_probes")?;
        nonzero(c.close_after == 0, "breaker.close_after")
    }
}

/// What one endpoint attempt means to the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum BreakerInput {
    /// The endpoint answered well, after `latency`.
    Success {
        /// Time from sending the request to its result.
        latency: Duration,
    },
    /// An endpoint-scope failure (5xx, 529, timeout, reset, ...).
    Failure,
    /// Anything that says nothing about the endpoint's health: request-, key- and
    /// throttle-scope outcomes, cancellations. Neither a success nor a failure, but it
    /// frees a probe slot.
    Ignored,
}

/// The breaker's answer to "may I send to this endpoint now?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permit {
    /// Closed: send.
    Allow,
    /// Half-open: send as a probe, and report its result with `was_probe = true`.
    Probe,
    /// Do not send before `until`. When open, `until` is the instant it becomes
    /// half-open. When half-open with every probe slot taken, the lift instant is not
    /// known (a slot frees when a probe reports); `until` is then `now + open_for`, a
    /// bound for asking again, and an earlier [`Breaker::permit`] may already succeed.
    Deny {
        /// The instant to ask again.
        until: Timestamp,
    },
}

impl Permit {
    /// Whether the call may be sent (as a normal call or as a probe).
    pub fn is_granted(self) -> bool {
        !matches!(self, Permit::Deny { .. })
    }
}

/// The breaker's state as of its last input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls flow.
    Closed,
    /// Calls are denied until `until`.
    Open {
        /// The instant it may become half-open.
        until: Timestamp,
    },
    /// A few probes test the endpoint.
    HalfOpen,
}

impl BreakerState {
    /// The state without its data.
    pub fn kind(self) -> StateKind {
        match self {
            BreakerState::Closed => StateKind::Closed,
            BreakerState::Open { .. } => StateKind::Open,
            BreakerState::HalfOpen => StateKind::HalfOpen,
        }
    }
}

/// A breaker state without its data, as events name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum StateKind {
    /// Closed.
    Closed,
    /// Open.
    Open,
    /// Half-open.
    HalfOpen,
}

/// A state transition, stamped with the `now` of the input that caused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerEvent {
    /// When the transition happened.
    pub at: Timestamp,
    /// The state left.
    pub from: StateKind,
    /// The state entered.
    pub to: StateKind,
}

/// The calls in the sliding window, as counted now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct WindowCounts {
    /// Recorded calls (successes and failures).
    pub calls: u64,
    /// Endpoint failures among them.
    pub failures: u64,
    /// Slow successes among them.
    pub slow: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Bucket {
    calls: u64,
    failures: u64,
    slow: u64,
}

/// One endpoint's circuit breaker. Fixed size; never allocates.
#[derive(Debug, Clone)]
pub struct Breaker {
    config: BreakerConfig,
    /// The mode in force (`Disabled` when the config says `enabled = false`).
    mode: BreakerMode,
    state: BreakerState,
    clock: Monotonic,
    // Trip thresholds with "never" sentinels so the hot path has no `Option` matching.
    consecutive_limit: u64,
    rate_limit: f64,
    slow_limit: f64,
    slow_call: Duration,
    open_for_ns: u64,
    open_max_ns: u64,
    consecutive: u64,
    probes_in_flight: u32,
    probe_successes: u32,
    /// Counts half-open periods: a probe belongs to the period it was sent in.
    probe_period: u32,
    next_open_ns: u64,
    closed_at: Timestamp,
    trips: u64,
    // Sliding window: `cur` is the newest bucket of a ring of `used` buckets.
    buckets: [Bucket; BUCKETS],
    totals: Bucket,
    cur: usize,
    used: usize,
    per_bucket: u64,
    time_window: bool,
    width_ns: u64,
    bucket_end: u64,
    events: Ring<BreakerEvent, EVENT_CAPACITY>,
}

impl Breaker {
    /// A closed breaker with an empty window. Call [`BreakerConfig::validate`] first: an
    /// invalid config does not panic, but its behaviour is unspecified.
    pub fn new(config: &BreakerConfig) -> Breaker {
        let never_rate = |r: Option<f64>| r.filter(|r| *r > 0.0).unwrap_or(f64::INFINITY);
        let slow_limit = if config.slow_call.is_some() && config.slow_rate < 1.0 {
            never_rate(Some(config.slow_rate))
        } else {
            f64::INFINITY
        };
        let (time_window, per_bucket, used, width_ns) = match config.window {
            Window::Count(n) => {
                let n = n.max(1);
                let per = n.div_ceil(BUCKETS as u32);
                let used = n.div_ceil(per) as usize;
                (false, u64::from(per), used.clamp(1, BUCKETS), 0)
            }
            Window::Time(d) => {
                let width = nanos_of(d).checked_div(BUCKETS as u64).unwrap_or(0).max(1);
                (true, u64::MAX, BUCKETS, width)
            }
        };
        let open_for_ns = nanos_of(config.open_for);
        Breaker {
            config: *config,
            mode: if config.enabled {
                config.mode
            } else {
                BreakerMode::Disabled
            },
            state: BreakerState::Closed,
            clock: Monotonic::default(),
            consecutive_limit: config
                .consecutive_failures
                .map_or(u64::MAX, |n| u64::from(n.max(1))),
            rate_limit: never_rate(config.failure_rate),
            slow_limit,
            slow_call: config.slow_call.unwrap_or(Duration::MAX),
            open_for_ns,
            open_max_ns: nanos_of(config.open_max),
            consecutive: 0,
            probes_in_flight: 0,
            probe_successes: 0,
            probe_period: 0,
            next_open_ns: open_for_ns,
            closed_at: Timestamp::ZERO,
            trips: 0,
            buckets: [Bucket::default(); BUCKETS],
            totals: Bucket::default(),
            cur: 0,
            used,
            per_bucket,
            time_window,
            width_ns,
            bucket_end: width_ns,
            events: Ring::new(),
        }
    }

    /// Asks to send one call at `now`. When open and `now >= until`, moves to
    /// half-open first. When half-open, a granted [`Permit::Probe`] takes a probe slot
    /// that the call's [`Breaker::on_result`] (with `was_probe = true`) frees.
    ///
    /// Under [`BreakerMode::ForcedOpen`] the answer is [`Permit::Deny`] with
    /// `until = now + open_for`: a bound for asking again, since only a mode change
    /// lifts it.
    #[inline]
    pub fn permit(&mut self, now: Timestamp) -> Permit {
        if self.mode != BreakerMode::Auto {
            return self.permit_in_mode(now);
        }
        self.permit_auto(now)
    }

    #[inline]
    fn permit_auto(&mut self, now: Timestamp) -> Permit {
        let now = self.clock.observe(now);
        match self.state {
            BreakerState::Closed => Permit::Allow,
            BreakerState::Open { until } if now < until => Permit::Deny { until },
            BreakerState::Open { .. } => {
                self.transition(now, BreakerState::HalfOpen);
                self.take_probe(now)
            }
            BreakerState::HalfOpen => self.take_probe(now),
        }
    }

    /// The answer [`Breaker::permit`] would give at `now`, without changing anything
    /// (to choose among endpoints).
    pub fn peek(&self, now: Timestamp) -> Permit {
        let now = now.max(self.clock.latest());
        match self.mode {
            BreakerMode::Auto => self.peek_auto(now),
            BreakerMode::ForcedOpen => self.recheck(now),
            BreakerMode::Disabled => Permit::Allow,
            BreakerMode::MetricsOnly => match self.peek_auto(now) {
                Permit::Deny { .. } => Permit::Allow,
                p => p,
            },
        }
    }

    fn peek_auto(&self, now: Timestamp) -> Permit {
        match self.state {
            BreakerState::Closed => Permit::Allow,
            BreakerState::Open { until } if now < until => Permit::Deny { until },
            BreakerState::Open { .. } | BreakerState::HalfOpen => {
                if self.probes_in_flight < self.config.half_open_probes {
                    Permit::Probe
                } else {
                    self.probes_full(now)
                }
            }
        }
    }

    /// Reports the result of a call this breaker permitted. `was_probe` says whether
    /// that call got [`Permit::Probe`]. `rng` draws the open-time jitter if it trips.
    pub fn on_result<R: Rng + ?Sized>(
        &mut self,
        now: Timestamp,
        input: BreakerInput,
        was_probe: bool,
        rng: &mut R,
    ) {
        let now = self.clock.observe(now);
        if was_probe {
            self.probes_in_flight = self.probes_in_flight.saturating_sub(1);
        }
        if self.mode.frozen() {
            return;
        }
        match self.state {
            BreakerState::Closed => {
                if self.record(now, input) {
                    self.trip(now, rng);
                }
            }
            BreakerState::Open { .. } => {}
            BreakerState::HalfOpen if !was_probe => {}
            BreakerState::HalfOpen => {
                let ok = match input {
                    BreakerInput::Ignored => return,
                    BreakerInput::Failure => false,
                    // A slow probe fails only when the slow-call model is on.
                    BreakerInput::Success { latency } => {
                        self.slow_limit.is_infinite() || latency <= self.slow_call
                    }
                };
                if !ok {
                    self.trip(now, rng);
                    return;
                }
                self.probe_successes = self.probe_successes.saturating_add(1);
                if self.probe_successes >= self.config.close_after {
                    self.close(now);
                }
            }
        }
    }

    /// Moves an open breaker whose time is up to half-open (the driver calls this at
    /// [`Breaker::poll_timeout`]); [`Breaker::permit`] does the same lazily.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        if self.mode.frozen() {
            return;
        }
        let now = self.clock.observe(now);
        if let BreakerState::Open { until } = self.state {
            if now >= until {
                self.transition(now, BreakerState::HalfOpen);
            }
        }
    }

    /// The state as of the last input: an open breaker whose time is up still reads
    /// `Open` until the next [`Breaker::permit`] or [`Breaker::handle_timeout`].
    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// The next transition event, oldest first.
    pub fn poll_event(&mut self) -> Option<BreakerEvent> {
        self.events.pop()
    }

    /// Whether [`Breaker::poll_event`] has an event to give.
    #[inline]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// When open: the instant it may become half-open. Otherwise `None`, and always
    /// `None` in a mode that freezes the state ([`BreakerMode::ForcedOpen`],
    /// [`BreakerMode::Disabled`]).
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        match self.state {
            BreakerState::Open { until } if !self.mode.frozen() => Some(until),
            _ => None,
        }
    }

    /// The mode in force.
    pub fn mode(&self) -> BreakerMode {
        self.mode
    }

    /// Switches to `mode` at `now`, keeping the state as it is (an open breaker whose
    /// time is up half-opens at the next permit once the mode runs the state machine
    /// again). Probes in flight keep their slots until they report. Returns the mode
    /// left.
    pub fn set_mode(&mut self, now: Timestamp, mode: BreakerMode) -> BreakerMode {
        self.clock.observe(now);
        core::mem::replace(&mut self.mode, mode)
    }

    /// Closes the breaker at `now`, whatever its state: the window, the failure run,
    /// the open-time growth and the probe count start afresh, and probes still in
    /// flight belong to a period that is over (their results count as plain calls).
    /// Emits the transition when the breaker was not closed. The mode is unchanged.
    pub fn reset(&mut self, now: Timestamp) {
        let now = self.clock.observe(now);
        self.next_open_ns = self.open_for_ns;
        self.probe_period = self.probe_period.wrapping_add(1);
        self.probes_in_flight = 0;
        if self.state == BreakerState::Closed {
            self.closed_at = now;
            self.consecutive = 0;
            self.probe_successes = 0;
            self.clear_window(now);
        } else {
            self.close(now);
        }
    }

    /// Opens the breaker at `now` until `until`, because another process found the
    /// endpoint failing (a shared breaker's "open until"): a closed or half-open
    /// breaker opens (emitting the transition), an open one stays open until the later
    /// of its own instant and `until`. At `until` it half-opens and probes as after
    /// a trip of its own. It is no trip: the open-time growth and [`Breaker::trips`]
    /// stay as they are. Nothing changes in a mode that freezes the state, or when
    /// `until` is not after `now`. Returns whether it changed anything (it opened, or
    /// stays open longer).
    pub fn open_until(&mut self, now: Timestamp, until: Timestamp) -> bool {
        if self.mode.frozen() {
            return false;
        }
        let now = self.clock.observe(now);
        if until <= now {
            return false;
        }
        match self.state {
            BreakerState::Open { until: own } if own >= until => false,
            BreakerState::Open { .. } => {
                self.state = BreakerState::Open { until };
                true
            }
            BreakerState::Closed | BreakerState::HalfOpen => {
                self.consecutive = 0;
                self.probe_successes = 0;
                self.transition(now, BreakerState::Open { until });
                true
            }
        }
    }

    /// How many times the breaker has opened (from closed or from half-open).
    pub fn trips(&self) -> u64 {
        self.trips
    }

    /// How many events were dropped because the caller did not drain them in time.
    pub fn dropped_events(&self) -> u64 {
        self.events.dropped()
    }

    /// Probes permitted in this half-open period and not yet reported.
    pub fn probes_in_flight(&self) -> u32 {
        self.probes_in_flight
    }

    /// The half-open period a [`Permit::Probe`] granted now belongs to; a probe's result
    /// is reported with `was_probe = true` only while this number is unchanged.
    pub fn probe_period(&self) -> u32 {
        self.probe_period
    }

    /// Gives back the slot of a probe of `period` that will never be answered (its call
    /// was dropped or its answer is overdue). A probe of an earlier period holds no slot.
    pub fn release_probe(&mut self, period: u32) {
        if period == self.probe_period && self.state == BreakerState::HalfOpen {
            self.probes_in_flight = self.probes_in_flight.saturating_sub(1);
        }
    }

    /// The calls in the sliding window as last updated (the window advances only when a
    /// result is recorded).
    pub fn counts(&self) -> WindowCounts {
        WindowCounts {
            calls: self.totals.calls,
            failures: self.totals.failures,
            slow: self.totals.slow,
        }
    }

    /// The configuration this breaker runs with.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// [`Breaker::permit`] in a mode other than `Auto`.
    #[cold]
    #[inline(never)]
    fn permit_in_mode(&mut self, now: Timestamp) -> Permit {
        match self.mode {
            BreakerMode::Auto => self.permit_auto(now),
            BreakerMode::ForcedOpen => {
                let now = self.clock.observe(now);
                self.recheck(now)
            }
            BreakerMode::Disabled => Permit::Allow,
            BreakerMode::MetricsOnly => match self.permit_auto(now) {
                Permit::Deny { .. } => Permit::Allow,
                p => p,
            },
        }
    }

    /// A denial with no known lift instant (every probe slot taken, or forced open):
    /// `open_for` bounds when to ask again.
    fn recheck(&self, now: Timestamp) -> Permit {
        Permit::Deny {
            until: Timestamp::from_nanos(now.as_nanos().saturating_add(self.open_for_ns)),
        }
    }

    fn take_probe(&mut self, now: Timestamp) -> Permit {
        if self.probes_in_flight < self.config.half_open_probes {
            self.probes_in_flight = self.probes_in_flight.saturating_add(1);
            Permit::Probe
        } else {
            self.probes_full(now)
        }
    }

    fn probes_full(&self, now: Timestamp) -> Permit {
        self.recheck(now)
    }

    /// Records one closed-state result; true when a model says to trip.
    fn record(&mut self, now: Timestamp, input: BreakerInput) -> bool {
        let (failure, slow) = match input {
            BreakerInput::Ignored => return false,
            BreakerInput::Failure => (true, false),
            BreakerInput::Success { latency } => (false, latency > self.slow_call),
        };
        let evicted = if self.time_window {
            let due = now.as_nanos() >= self.bucket_end;
            if due {
                self.advance_time(now.as_nanos());
            }
            due
        } else {
            let full = self.buckets.get(self.cur).map_or(0, |b| b.calls) >= self.per_bucket;
            if full {
                self.advance();
            }
            full
        };
        let (f, s) = (u64::from(failure), u64::from(slow));
        if let Some(b) = self.buckets.get_mut(self.cur) {
            b.calls = b.calls.wrapping_add(1);
            b.failures = b.failures.wrapping_add(f);
            b.slow = b.slow.wrapping_add(s);
        }
        let t = &mut self.totals;
        t.calls = t.calls.wrapping_add(1);
        t.failures = t.failures.wrapping_add(f);
        t.slow = t.slow.wrapping_add(s);
        if failure {
            self.consecutive = self.consecutive.saturating_add(1);
            if self.consecutive >= self.consecutive_limit {
                return true;
            }
        } else {
            self.consecutive = 0;
        }
        let min_calls = u64::from(self.config.min_calls);
        // Below the thresholds before, a fast success that evicted nothing and did not
        // bring the window to `min_calls` only lowers both rates: skip the float math.
        if !(failure || slow || evicted || t.calls == min_calls) || t.calls < min_calls {
            return false;
        }
        // Counts stay far below 2^63, where converting through i64 is exact and one
        // instruction (an unsigned u64 conversion is a branchy sequence on x86-64).
        let calls = t.calls as i64 as f64;
        t.failures as i64 as f64 >= self.rate_limit * calls
            || t.slow as i64 as f64 >= self.slow_limit * calls
    }

    /// Makes the next bucket of the ring the newest, evicting what it held.
    fn advance(&mut self) {
        let next = self.cur.wrapping_add(1);
        self.cur = if next >= self.used { 0 } else { next };
        if let Some(b) = self.buckets.get_mut(self.cur) {
            let t = &mut self.totals;
            t.calls = t.calls.saturating_sub(b.calls);
            t.failures = t.failures.saturating_sub(b.failures);
            t.slow = t.slow.saturating_sub(b.slow);
            *b = Bucket::default();
        }
    }

    fn advance_time(&mut self, now_ns: u64) {
        for _ in 0..BUCKETS {
            if now_ns < self.bucket_end {
                return;
            }
            self.advance();
            self.bucket_end = self.bucket_end.saturating_add(self.width_ns);
        }
        if now_ns >= self.bucket_end {
            // Idle for a whole window: every bucket is empty now, start afresh.
            self.bucket_end = now_ns.saturating_add(self.width_ns);
        }
    }

    fn clear_window(&mut self, now: Timestamp) {
        self.buckets = [Bucket::default(); BUCKETS];
        self.totals = Bucket::default();
        self.cur = 0;
        self.bucket_end = now.as_nanos().saturating_add(self.width_ns);
    }

    fn trip<R: Rng + ?Sized>(&mut self, now: Timestamp, rng: &mut R) {
        if self.state == BreakerState::Closed
            && now.saturating_duration_since(self.closed_at) >= self.config.open_max
        {
            self.next_open_ns = self.open_for_ns;
        }
        let base = self.next_open_ns;
        let jitter = self.config.open_jitter;
        let open_ns = if jitter > 0.0 {
            let u = crate::rng::unit_f64(rng);
            ((base as f64 * (1.0 + u * jitter)) as u64).max(base)
        } else {
            base
        };
        let grown = (base as f64 * self.config.open_growth) as u64;
        self.next_open_ns = grown.max(base).min(self.open_max_ns);
        self.trips = self.trips.saturating_add(1);
        self.consecutive = 0;
        self.probe_successes = 0;
        let until = Timestamp::from_nanos(now.as_nanos().saturating_add(open_ns));
        self.transition(now, BreakerState::Open { until });
    }

    fn close(&mut self, now: Timestamp) {
        self.closed_at = now;
        self.consecutive = 0;
        self.probe_successes = 0;
        self.clear_window(now);
        self.transition(now, BreakerState::Closed);
    }

    fn transition(&mut self, now: Timestamp, to: BreakerState) {
        if to == BreakerState::HalfOpen {
            self.probe_period = self.probe_period.wrapping_add(1);
            self.probes_in_flight = 0;
        }
        let event = BreakerEvent {
            at: now,
            from: self.state.kind(),
            to: to.kind(),
        };
        self.state = to;
        self.events.push(event);
    }
}

#[cfg(test)]
mod tests;
