//! Sliding-window health of one endpoint: availability, error rates by kind and
//! p50/p95/p99 latency over the last `window`, compared with SLA targets.
//!
//! A [`HealthWindow`] has fixed memory (about 3.3 KiB) and never allocates: the window
//! is cut into [`TIME_BUCKETS`] time buckets, each holding a count per
//! [`SampleResult`] and a histogram of success latencies in fixed log-scale bins
//! ([`LATENCY_BOUNDS`]). A bucket is cleared when time comes round to it again, so old
//! samples leave the window a bucket at a time.
//!
//! The health tracker knows nothing of HTTP or of the classifier: the engine maps each
//! attempt's classification to a [`SampleResult`] and feeds [`HealthWindow::on_sample`].

use core::time::Duration;

use crate::config::within;
use crate::error::ConfigError;
use crate::time::{Monotonic, Timestamp, nanos_of};

/// The number of time buckets a window is cut into.
pub const TIME_BUCKETS: usize = 12;

/// Upper bounds (exclusive, in nanoseconds) of the latency bins: 1 ms, then each bound
/// 1.25 times the previous one (rounded down), up to about 652.5 s.
///
/// Bin 0 holds latencies below 1 ms, bin `i` (1 ..= 60) holds
/// `[LATENCY_BOUNDS[i - 1], LATENCY_BOUNDS[i])`, bin 61 everything from 652.5 s on.
/// A percentile is reported as the middle of its bin, so for latencies from 1 ms to
/// 652.5 s it is within 12.5 % of the true value (the sample of that rank); below 1 ms
/// it is reported as 0.5 ms (off by at most 0.5 ms); from 652.5 s on it is reported as
/// 652.5 s (a lower bound).
#[rustfmt::skip]
pub const LATENCY_BOUNDS: [u64; 61] = [
    1_000_000, 1_250_000, 1_562_500, 1_953_125, 2_441_406,
    3_051_757, 3_814_696, 4_768_370, 5_960_462, 7_450_577,
    9_313_221, 11_641_526, 14_551_907, 18_189_883, 22_737_353,
    28_421_691, 35_527_113, 44_408_891, 55_511_113, 69_388_891,
    86_736_113, 108_420_141, 135_525_176, 169_406_470, 211_758_087,
    264_697_608, 330_872_010, 413_590_012, 516_987_515, 646_234_393,
    807_792_991, 1_009_741_238, 1_262_176_547, 1_577_720_683, 1_972_150_853,
    2_465_188_566, 3_081_485_707, 3_851_857_133, 4_814_821_416, 6_018_526_770,
    7_523_158_462, 9_403_948_077, 11_754_935_096, 14_693_668_870, 18_367_086_087,
    22_958_857_608, 28_698_572_010, 35_873_215_012, 44_841_518_765, 56_051_898_456,
    70_064_873_070, 87_581_091_337, 109_476_364_171, 136_845_455_213, 171_056_819_016,
    213_821_023_770, 267_276_279_712, 334_095_349_640, 417_619_187_050, 522_023_983_812,
    652_529_979_765,
];

/// The number of latency bins: one below the first bound, one between each pair of
/// bounds, one above the last.
pub const LATENCY_BINS: usize = LATENCY_BOUNDS.len() + 1;

const KINDS: usize = SampleResult::ALL.len();

/// What one attempt came to, as far as the endpoint's health is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum SampleResult {
    /// The endpoint answered as hoped.
    Success,
    /// Rate-limited (429 rate limit): the endpoint is up but refused us for now.
    Throttled,
    /// The key was refused (revoked, forbidden, out of quota).
    KeyError,
    /// The endpoint failed (5xx, 529 overloaded, reset, refused connection).
    EndpointError,
    /// No answer in time.
    Timeout,
    /// The request itself was wrong (400, 404, 413, 422): no fault of the endpoint.
    RequestError,
}

impl SampleResult {
    /// Every kind, in declaration order.
    pub const ALL: [SampleResult; 6] = [
        SampleResult::Success,
        SampleResult::Throttled,
        SampleResult::KeyError,
        SampleResult::EndpointError,
        SampleResult::Timeout,
        SampleResult::RequestError,
    ];

    const fn index(self) -> usize {
        self as usize
    }
}

/// One finished attempt: how long it took and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// From sending the request to its outcome.
    pub latency: Duration,
    /// How it ended.
    pub result: SampleResult,
}

impl Sample {
    /// A sample of `result` after `latency`.
    pub const fn new(result: SampleResult, latency: Duration) -> Sample {
        Sample { latency, result }
    }
}

/// Configuration of a [`HealthWindow`].
///
/// Defaults: `window` 60 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct HealthConfig {
    /// How far back samples count (`health.window`), to a granularity of
    /// `window / 12`: see [`HealthWindow`].
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub window: Duration,
}

impl Default for HealthConfig {
    fn default() -> HealthConfig {
        HealthConfig {
            window: Duration::from_secs(60),
        }
    }
}

impl HealthConfig {
    /// Checks that the window is above zero.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.window.is_zero() {
            return Err(ConfigError::Zero {
                field: "health.window",
            });
        }
        Ok(())
    }
}

/// The service levels an endpoint is held to.
///
/// Defaults: `availability` 0.99, `p95` none, `p99` none, `max_error_rate` none,
/// `min_samples` 10.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct SlaTargets {
    /// The least acceptable [`HealthReport::availability`], in `[0, 1]`
    /// (`sla.availability`).
    pub availability: f64,
    /// The largest acceptable 95th-percentile success latency (`sla.p95`).
    #[cfg_attr(
        feature = "serde",
        serde(
            with = "crate::duration::serde_human::option",
            skip_serializing_if = "Option::is_none"
        )
    )]
    pub p95: Option<Duration>,
    /// The largest acceptable 99th-percentile success latency (`sla.p99`).
    #[cfg_attr(
        feature = "serde",
        serde(
            with = "crate::duration::serde_human::option",
            skip_serializing_if = "Option::is_none"
        )
    )]
    pub p99: Option<Duration>,
    /// The largest acceptable [`HealthReport::error_rate`], in `[0, 1]`
    /// (`sla.max_error_rate`).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub max_error_rate: Option<f64>,
    /// Below this many samples nothing is judged (`sla.min_samples`): availability and
    /// error rate need this many samples that count toward availability, latency
    /// targets this many successes. Zero judges from the first sample.
    pub min_samples: u32,
}

impl Default for SlaTargets {
    fn default() -> SlaTargets {
        SlaTargets {
            availability: 0.99,
            p95: None,
            p99: None,
            max_error_rate: None,
            min_samples: 10,
        }
    }
}

impl SlaTargets {
    /// Checks that rates are within `[0, 1]`, latency targets above zero and `p95` not
    /// above `p99`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        within("sla.availability", self.availability, 0.0, 1.0)?;
        if let Some(rate) = self.max_error_rate {
            within("sla.max_error_rate", rate, 0.0, 1.0)?;
        }
        if self.p95.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError::Zero { field: "sla.p95" });
        }
        if self.p99.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError::Zero { field: "sla.p99" });
        }
        if let (Some(p95), Some(p99)) = (self.p95, self.p99) {
            if p95 > p99 {
                return Err(ConfigError::Order {
                    lower: "sla.p95",
                    upper: "sla.p99",
                });
            }
        }
        Ok(())
    }
}

/// How many samples of each kind are in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts([u64; KINDS]);

impl Counts {
    /// The number of samples of `kind`.
    pub fn get(&self, kind: SampleResult) -> u64 {
        self.0.get(kind.index()).copied().unwrap_or(0)
    }

    /// The number of samples of every kind.
    pub fn total(&self) -> u64 {
        self.0.iter().fold(0, |sum, &n| sum.saturating_add(n))
    }
}

/// One way an endpoint misses its [`SlaTargets`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Violation {
    /// Availability below its target.
    Availability {
        /// The target.
        target: f64,
        /// What the window shows.
        actual: f64,
    },
    /// Endpoint error rate above its maximum.
    ErrorRate {
        /// The target.
        target: f64,
        /// What the window shows.
        actual: f64,
    },
    /// 95th-percentile success latency above its target.
    P95 {
        /// The target.
        target: Duration,
        /// What the window shows (within the histogram's error).
        actual: Duration,
    },
    /// 99th-percentile success latency above its target.
    P99 {
        /// The target.
        target: Duration,
        /// What the window shows (within the histogram's error).
        actual: Duration,
    },
}

/// The violations found, at most one of each kind, in the order availability, error
/// rate, p95, p99. Fixed size, no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Violations([Option<Violation>; 4]);

impl Violations {
    /// The violations, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Violation> {
        self.0.iter().flatten()
    }

    /// The number of violations.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether the endpoint meets every target (or too few samples to judge).
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }

    fn push(&mut self, v: Violation) {
        if let Some(free) = self.0.iter_mut().find(|slot| slot.is_none()) {
            *free = Some(v);
        }
    }
}

/// The health of an endpoint over its window, from [`HealthWindow::report`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct HealthReport {
    /// The samples in the window, of every kind.
    pub samples: u64,
    /// The samples in the window, per kind.
    pub counts: Counts,
    /// Successes ÷ (samples − request errors): request errors say nothing about the
    /// endpoint, while throttling, key errors, endpoint errors and timeouts all count
    /// as the endpoint not serving. 1.0 when no sample counts.
    pub availability: f64,
    /// (Endpoint errors + timeouts) ÷ (samples − request errors): the failures the
    /// endpoint itself is to blame for. 0.0 when no sample counts.
    pub error_rate: f64,
    /// Median latency of the successes; `None` without successes.
    pub p50: Option<Duration>,
    /// 95th-percentile latency of the successes.
    pub p95: Option<Duration>,
    /// 99th-percentile latency of the successes.
    pub p99: Option<Duration>,
    /// The targets missed; empty when too few samples to judge.
    pub violations: Violations,
}

impl HealthReport {
    /// The share of all samples in the window that are of `kind` (0.0 without
    /// samples); the shares of the six kinds add up to 1.
    pub fn rate(&self, kind: SampleResult) -> f64 {
        if self.samples == 0 {
            return 0.0;
        }
        self.counts.get(kind) as f64 / self.samples as f64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bucket {
    /// The time slot (`now / slot_nanos`) the counts belong to; `u64::MAX` if unused.
    slot: u64,
    counts: [u32; KINDS],
    latency: [u32; LATENCY_BINS],
}

const EMPTY: Bucket = Bucket {
    slot: u64::MAX,
    counts: [0; KINDS],
    latency: [0; LATENCY_BINS],
};

/// The sliding-window health tracker of one endpoint.
///
/// The window is cut into [`TIME_BUCKETS`] slots of `window / 12` (at least 1 ns)
/// aligned on the epoch. A report counts the slot `now` falls in and the 11 before it,
/// so a sample is counted while it is younger than 11 slots and never once it is older
/// than 12 slots (≤ `window`). Latency percentiles are over successes only (failures
/// mix instant refusals with timeouts and would hide a slow endpoint behind a fast
/// failing one); see [`LATENCY_BOUNDS`] for their precision. Counts saturate at
/// `u32::MAX` per slot. A `now` earlier than one already seen is taken as that latest
/// instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthWindow {
    slot_nanos: u64,
    /// The slot of the latest instant seen, and where it ends: most samples fall in
    /// it, and finding it again costs no division.
    slot: u64,
    slot_end: u64,
    clock: Monotonic,
    buckets: [Bucket; TIME_BUCKETS],
}

impl HealthWindow {
    /// An empty window. A zero `window` (which `validate` refuses) acts as 12 ns.
    pub fn new(config: &HealthConfig) -> HealthWindow {
        let slots = TIME_BUCKETS as u64;
        let slot_nanos = nanos_of(config.window)
            .checked_div(slots)
            .unwrap_or(0)
            .max(1);
        HealthWindow {
            slot_nanos,
            slot: 0,
            slot_end: slot_nanos,
            clock: Monotonic::default(),
            buckets: [EMPTY; TIME_BUCKETS],
        }
    }

    /// Records one finished attempt at `now`.
    pub fn on_sample(&mut self, now: Timestamp, sample: Sample) {
        let now = self.clock.observe(now);
        if now.as_nanos() >= self.slot_end {
            self.slot = self.slot_of(now);
            self.slot_end = self.slot.saturating_add(1).saturating_mul(self.slot_nanos);
        }
        let slot = self.slot;
        let index = slot.checked_rem(TIME_BUCKETS as u64).unwrap_or(0) as usize;
        let Some(bucket) = self.buckets.get_mut(index) else {
            return;
        };
        if bucket.slot != slot {
            *bucket = Bucket { slot, ..EMPTY };
        }
        if let Some(n) = bucket.counts.get_mut(sample.result.index()) {
            *n = n.saturating_add(1);
        }
        if sample.result == SampleResult::Success {
            if let Some(n) = bucket.latency.get_mut(bin_of(sample.latency)) {
                *n = n.saturating_add(1);
            }
        }
    }

    /// The health over the window ending at `now`, judged against `sla`.
    pub fn report(&self, now: Timestamp, sla: &SlaTargets) -> HealthReport {
        let current = self.slot_of(self.clock.latest().max(now));
        let mut counts = [0u64; KINDS];
        let mut latency = [0u64; LATENCY_BINS];
        let live = self
            .buckets
            .iter()
            .filter(|b| b.slot <= current && current.saturating_sub(b.slot) < TIME_BUCKETS as u64);
        for bucket in live {
            for (sum, &n) in counts.iter_mut().zip(&bucket.counts) {
                *sum = sum.saturating_add(u64::from(n));
            }
            for (sum, &n) in latency.iter_mut().zip(&bucket.latency) {
                *sum = sum.saturating_add(u64::from(n));
            }
        }
        let counts = Counts(counts);
        let samples = counts.total();
        let successes = counts.get(SampleResult::Success);
        let eligible = samples.saturating_sub(counts.get(SampleResult::RequestError));
        let endpoint_failures = counts
            .get(SampleResult::EndpointError)
            .saturating_add(counts.get(SampleResult::Timeout));
        let (availability, error_rate) = if eligible == 0 {
            (1.0, 0.0)
        } else {
            (
                successes as f64 / eligible as f64,
                endpoint_failures as f64 / eligible as f64,
            )
        };
        let mut report = HealthReport {
            samples,
            counts,
            availability,
            error_rate,
            p50: percentile(&latency, 50),
            p95: percentile(&latency, 95),
            p99: percentile(&latency, 99),
            violations: Violations::default(),
        };
        report.violations = judge(&report, sla, eligible, successes);
        report
    }

    /// The `permille`-th thousandth quantile of the success latencies in the window
    /// ending at `now` (900: the p90), or `None` with fewer than `min_samples`
    /// successes in it. The hedge trigger reads it.
    pub fn quantile(&self, now: Timestamp, permille: u64, min_samples: u32) -> Option<Duration> {
        let current = self.slot_of(self.clock.latest().max(now));
        let mut latency = [0u64; LATENCY_BINS];
        let live = self
            .buckets
            .iter()
            .filter(|b| b.slot <= current && current.saturating_sub(b.slot) < TIME_BUCKETS as u64);
        for bucket in live {
            for (sum, &n) in latency.iter_mut().zip(&bucket.latency) {
                *sum = sum.saturating_add(u64::from(n));
            }
        }
        let total = latency.iter().fold(0u64, |sum, &n| sum.saturating_add(n));
        if total < u64::from(min_samples) {
            return None;
        }
        permille_of(&latency, permille.min(1000))
    }

    fn slot_of(&self, now: Timestamp) -> u64 {
        now.as_nanos().checked_div(self.slot_nanos).unwrap_or(0)
    }
}

fn judge(report: &HealthReport, sla: &SlaTargets, eligible: u64, successes: u64) -> Violations {
    let mut violations = Violations::default();
    let enough = u64::from(sla.min_samples);
    if eligible >= enough {
        if report.availability < sla.availability {
            violations.push(Violation::Availability {
                target: sla.availability,
                actual: report.availability,
            });
        }
        if let Some(target) = sla.max_error_rate {
            if report.error_rate > target {
                violations.push(Violation::ErrorRate {
                    target,
                    actual: report.error_rate,
                });
            }
        }
    }
    if successes >= enough {
        if let (Some(target), Some(actual)) = (sla.p95, report.p95) {
            if actual > target {
                violations.push(Violation::P95 { target, actual });
            }
        }
        if let (Some(target), Some(actual)) = (sla.p99, report.p99) {
            if actual > target {
                violations.push(Violation::P99 { target, actual });
            }
        }
    }
    violations
}

/// The histogram bin of a latency: the number of bounds at or below it.
///
/// A binary search over the 61 bounds is six dependent loads on every sample; instead
/// the latency's power of two gives the bounds below it at once, and at most four
/// bounds (a factor 1.25 apart) lie within one power of two.
fn bin_of(latency: Duration) -> usize {
    let nanos = nanos_of(latency);
    let power = 63_u32.saturating_sub(nanos.leading_zeros());
    let mut bin = BOUNDS_BELOW_POW2
        .get(power as usize)
        .map_or(0, |&n| usize::from(n));
    while LATENCY_BOUNDS.get(bin).is_some_and(|&bound| bound <= nanos) {
        bin = bin.saturating_add(1);
    }
    bin
}

/// Entry `k`: how many of [`LATENCY_BOUNDS`] lie below `2^k`.
// Evaluated at compile time, where an index out of bounds or an overflow fails the
// build instead of panicking.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const BOUNDS_BELOW_POW2: [u8; 64] = {
    let mut table = [0u8; 64];
    let mut k = 0;
    while k < 64 {
        let mut n = 0;
        while n < LATENCY_BOUNDS.len() && LATENCY_BOUNDS[n] < (1u64 << k) {
            n += 1;
        }
        table[k] = n as u8;
        k += 1;
    }
    table
};

/// The value reported for a latency in bin `bin`: the middle of the bin.
fn bin_estimate(bin: usize) -> Duration {
    let upper = LATENCY_BOUNDS.get(bin).copied();
    let lower = bin
        .checked_sub(1)
        .and_then(|i| LATENCY_BOUNDS.get(i).copied());
    let nanos = match (lower, upper) {
        (Some(lo), Some(hi)) => lo.saturating_add(hi.saturating_sub(lo) / 2),
        (None, Some(hi)) => hi / 2,
        (Some(lo), None) => lo,
        (None, None) => 0,
    };
    Duration::from_nanos(nanos)
}

/// The nearest-rank `percent`-th percentile of the samples binned in `hist`: the
/// estimate of the bin holding the `ceil(n × percent / 100)`-th smallest of the `n`.
fn percentile(hist: &[u64; LATENCY_BINS], percent: u64) -> Option<Duration> {
    permille_of(hist, percent.saturating_mul(10))
}

/// [`percentile`] in thousandths: the bin of the `ceil(n × permille / 1000)`-th smallest.
fn permille_of(hist: &[u64; LATENCY_BINS], permille: u64) -> Option<Duration> {
    let total = hist.iter().fold(0u64, |sum, &n| sum.saturating_add(n));
    if total == 0 {
        return None;
    }
    let rank = total.saturating_mul(permille).div_ceil(1000).max(1);
    let mut seen: u64 = 0;
    for (bin, &n) in hist.iter().enumerate() {
        seen = seen.saturating_add(n);
        if seen >= rank {
            return Some(bin_estimate(bin));
        }
    }
    None
}

#[cfg(test)]
mod tests;
