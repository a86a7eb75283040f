//! The report of a run: what the policy did to the traffic, as plain data that
//! serialises to JSON with a stable key order (struct fields and sorted maps only).

use std::collections::BTreeMap;

use core::time::Duration;
use serde::Serialize;
use steadfast_core::breaker::StateKind;
use steadfast_core::pool::{DisableReason, PoolEvent};
use steadfast_core::retry::Finish;
use steadfast_core::time::Timestamp;

use crate::driver::Run;
use crate::ideal::Ideal;
use crate::reply::OutcomeClass;

mod replicas;
mod vs_ideal;

pub use replicas::{ReplicaLine, ReplicaReport, early_requests};
pub use vs_ideal::VsIdeal;

/// The summary of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The scenario's name.
    pub scenario: String,
    /// The policy's label (its file name, or `default`).
    pub policy: String,
    /// The seed.
    pub seed: u64,
    /// Logical calls.
    pub calls: u64,
    /// Calls that succeeded.
    pub succeeded: u64,
    /// `succeeded / calls`.
    pub success_rate: f64,
    /// Give-ups by reason (snake_case names, sorted).
    pub give_ups: BTreeMap<String, u64>,
    /// Attempts per logical call.
    pub attempts_per_call: Attempts,
    /// Requests that reached the upstream.
    pub upstream_requests: u64,
    /// Upstream requests per logical call.
    pub amplification: f64,
    /// Latency of logical calls, from arrival (queueing included) to finish.
    pub latency_ms: Latency,
    /// From the first arrival to the last call's finish, in seconds.
    pub makespan_s: f64,
    /// What a perfect client would need (see [`crate::ideal`]).
    pub ideal: Ideal,
    /// The figures above divided by the ideal's.
    pub vs_ideal: VsIdeal,
    /// Calls that gave up because every usable endpoint's retry budget was spent.
    pub budget_exhausted: u64,
    /// Breaker transitions, in order.
    pub breaker_transitions: Vec<Transition>,
    /// Per key: requests, cooldowns, and whether it was disabled.
    pub keys: Vec<KeyReport>,
    /// Per endpoint: requests by outcome class.
    pub endpoints: Vec<EndpointReport>,
    /// Upstream requests over time.
    pub timeline: Timeline,
    /// The replicas and their shared limit, in a run of several (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<ReplicaReport>,
}

/// Attempts per call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Attempts {
    /// The mean.
    pub mean: f64,
    /// The most.
    pub max: u32,
}

/// Latency in milliseconds: the mean and percentiles (nearest rank).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// The mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// The slowest.
    pub max: f64,
}

/// One breaker transition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Transition {
    /// Seconds since the start.
    pub at_s: f64,
    /// The endpoint's name.
    pub endpoint: String,
    /// The state left.
    pub from: &'static str,
    /// The state entered.
    pub to: &'static str,
}

/// One key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyReport {
    /// The endpoint's name.
    pub endpoint: String,
    /// The key's index.
    pub key: u16,
    /// Requests sent with it.
    pub requests: u64,
    /// Times it was cooled down (or its cooldown extended).
    pub cooldowns: u64,
    /// When and why it was disabled, if it was.
    pub disabled: Option<Disabled>,
}

/// A key's disabling.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disabled {
    /// Seconds since the start.
    pub at_s: f64,
    /// Why (snake_case).
    pub reason: &'static str,
}

/// One endpoint's requests by outcome class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndpointReport {
    /// Its name.
    pub name: String,
    /// Requests sent to it.
    pub requests: u64,
    /// Successes.
    pub ok: u64,
    /// 429s.
    pub throttled: u64,
    /// 5xx and 529.
    pub server_error: u64,
    /// No answer in time.
    pub timeout: u64,
    /// Anything else.
    pub other: u64,
    /// Requests sent inside one of its outage windows.
    pub during_outages: u64,
}

/// Requests over time, in buckets of equal width.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timeline {
    /// The bucket width in seconds.
    pub bucket_s: f64,
    /// Per endpoint (in scenario order), per bucket: requests by class, in the order
    /// ok, 429, 5xx/529, timeout, other.
    pub endpoints: Vec<Lane>,
    /// Give-ups per bucket (by the instant the call gave up).
    pub give_ups: Vec<u64>,
}

/// One endpoint's row of buckets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lane {
    /// The endpoint's name.
    pub name: String,
    /// Per bucket, requests by class.
    pub buckets: Vec<[u64; 5]>,
}

/// The name of a breaker state.
pub fn state_name(s: StateKind) -> &'static str {
    match s {
        StateKind::Closed => "closed",
        StateKind::Open => "open",
        StateKind::HalfOpen => "half_open",
    }
}

fn disable_name(r: DisableReason) -> &'static str {
    match r {
        DisableReason::Unauthorized => "unauthorized",
        DisableReason::Forbidden => "forbidden",
        DisableReason::QuotaExhausted => "quota_exhausted",
        DisableReason::Other => "other",
        DisableReason::Operator => "operator",
        DisableReason::Shared => "shared",
    }
}

/// Seconds since the start, to the millisecond.
pub fn secs(t: Timestamp) -> f64 {
    round(t.as_nanos() as f64 / 1e9, 3)
}

pub(crate) fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// A bucket width of 1, 2 or 5 × a power of ten seconds, about a fortieth of `span`.
pub fn auto_bucket(span: Duration) -> Duration {
    let target = span.as_secs_f64() / 40.0;
    let mut unit = 0.1;
    loop {
        for m in [1.0, 2.0, 5.0] {
            if unit * m >= target {
                return Duration::from_secs_f64(unit * m);
            }
        }
        unit *= 10.0;
    }
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    round(sorted[rank - 1] as f64 / 1e6, 1)
}

impl Report {
    /// Summarises `run`, labelling the policy `policy`.
    pub fn new(run: &Run, policy: &str) -> Report {
        let sc = &run.scenario;
        let calls = run.calls.len() as u64;
        let succeeded = run.calls.iter().filter(|c| c.finish.is_success()).count() as u64;
        let mut give_ups = BTreeMap::new();
        for c in &run.calls {
            if let Finish::GaveUp(g) = c.finish {
                *give_ups.entry(g.reason.name().to_string()).or_insert(0) += 1;
            }
        }
        let attempts: u64 = run
            .calls
            .iter()
            .map(|c| u64::from(c.finish.attempts()))
            .sum();
        let mut latencies: Vec<u64> = run
            .calls
            .iter()
            .map(|c| c.finished.as_nanos().saturating_sub(c.arrived.as_nanos()))
            .collect();
        latencies.sort_unstable();
        let per_call = |n: u64| round(n as f64 / calls.max(1) as f64, 4);
        let name = |e: u16| {
            sc.endpoints
                .get(usize::from(e))
                .map_or_else(|| e.to_string(), |s| s.name.clone())
        };
        let end = run
            .calls
            .iter()
            .map(|c| c.finished)
            .chain(run.requests.iter().map(|r| r.answered))
            .max()
            .unwrap_or(Timestamp::ZERO);
        let bucket = sc
            .report
            .bucket
            .unwrap_or_else(|| auto_bucket(Duration::from_nanos(end.as_nanos())));
        let latency = Latency {
            mean: round(
                latencies.iter().map(|&n| n as f64).sum::<f64>() / calls.max(1) as f64 / 1e6,
                1,
            ),
            p50: percentile(&latencies, 0.50),
            p95: percentile(&latencies, 0.95),
            p99: percentile(&latencies, 0.99),
            max: percentile(&latencies, 1.0),
        };
        let success_rate = round(succeeded as f64 / calls.max(1) as f64, 6);
        let makespan_s = makespan(run);
        let arrivals: Vec<Timestamp> = run.calls.iter().map(|c| c.arrived).collect();
        let ideal = Ideal::compute(&ideal_scenario(run), &arrivals, run.deadline);
        let requests = run.requests.len() as u64;
        Report {
            scenario: sc.name.clone(),
            policy: policy.to_string(),
            seed: run.seed,
            calls,
            succeeded,
            success_rate,
            budget_exhausted: give_ups.get("budget_exhausted").copied().unwrap_or(0),
            give_ups,
            attempts_per_call: Attempts {
                mean: per_call(attempts),
                max: run
                    .calls
                    .iter()
                    .map(|c| c.finish.attempts())
                    .max()
                    .unwrap_or(0),
            },
            upstream_requests: requests,
            amplification: per_call(requests),
            latency_ms: latency,
            makespan_s,
            vs_ideal: VsIdeal::new(success_rate, requests, makespan_s, &latency, &ideal),
            ideal,
            breaker_transitions: run
                .breaker
                .iter()
                .map(|(e, ev)| Transition {
                    at_s: secs(ev.at),
                    endpoint: name(e.0),
                    from: state_name(ev.from),
                    to: state_name(ev.to),
                })
                .collect(),
            keys: keys(run, &name),
            endpoints: endpoints(run),
            timeline: timeline(run, bucket, end),
            replicas: ReplicaReport::new(run),
        }
    }
}

/// The scenario a perfect client is measured on: the run's, with every replica's
/// concurrency slots together.
fn ideal_scenario(run: &Run) -> std::borrow::Cow<'_, crate::Scenario> {
    let n = run.replicas.as_ref().map_or(1, |r| r.seeds.len() as u32);
    if n <= 1 {
        return std::borrow::Cow::Borrowed(&run.scenario);
    }
    let mut sc = run.scenario.clone();
    sc.load.concurrency = sc.load.concurrency.saturating_mul(n);
    std::borrow::Cow::Owned(sc)
}

/// From the first arrival to the last finish, in seconds.
fn makespan(run: &Run) -> f64 {
    let first = run.calls.iter().map(|c| c.arrived).min();
    let last = run.calls.iter().map(|c| c.finished).max();
    match (first, last) {
        (Some(a), Some(b)) => secs(Timestamp::from_nanos(
            b.as_nanos().saturating_sub(a.as_nanos()),
        )),
        _ => 0.0,
    }
}

fn keys(run: &Run, name: &dyn Fn(u16) -> String) -> Vec<KeyReport> {
    let mut out = Vec::new();
    for (i, e) in run.scenario.endpoints.iter().enumerate() {
        for k in 0..e.keys {
            out.push(KeyReport {
                endpoint: name(i as u16),
                key: k,
                requests: 0,
                cooldowns: 0,
                disabled: None,
            });
        }
    }
    let first: Vec<usize> = run
        .scenario
        .endpoints
        .iter()
        .scan(0, |acc, e| {
            let at = *acc;
            *acc += usize::from(e.keys);
            Some(at)
        })
        .collect();
    let index = |t: steadfast_core::ids::Target| {
        first
            .get(usize::from(t.endpoint.0))
            .map(|f| f + usize::from(t.key.0))
    };
    for r in &run.requests {
        if let Some(k) = index(r.target).and_then(|i| out.get_mut(i)) {
            k.requests += 1;
        }
    }
    for ev in &run.keys {
        let Some(k) = index(ev.target()).and_then(|i| out.get_mut(i)) else {
            continue;
        };
        match *ev {
            PoolEvent::KeyCooled { .. } => k.cooldowns += 1,
            PoolEvent::KeyDisabled { at, reason, .. } if k.disabled.is_none() => {
                k.disabled = Some(Disabled {
                    at_s: secs(at),
                    reason: disable_name(reason),
                });
            }
            _ => {}
        }
    }
    out
}

fn endpoints(run: &Run) -> Vec<EndpointReport> {
    let mut out: Vec<EndpointReport> = run
        .scenario
        .endpoints
        .iter()
        .map(|e| EndpointReport {
            name: e.name.clone(),
            requests: 0,
            ok: 0,
            throttled: 0,
            server_error: 0,
            timeout: 0,
            other: 0,
            during_outages: 0,
        })
        .collect();
    for r in &run.requests {
        let i = usize::from(r.target.endpoint.0);
        let (Some(e), Some(spec)) = (out.get_mut(i), run.scenario.endpoints.get(i)) else {
            continue;
        };
        e.requests += 1;
        match r.reply.class() {
            OutcomeClass::Ok => e.ok += 1,
            OutcomeClass::Throttled => e.throttled += 1,
            OutcomeClass::ServerError => e.server_error += 1,
            OutcomeClass::Timeout => e.timeout += 1,
            OutcomeClass::Other => e.other += 1,
        }
        let at = Duration::from_nanos(r.at.as_nanos());
        if spec.outages.iter().any(|o| o.covers(at)) {
            e.during_outages += 1;
        }
    }
    out
}

fn timeline(run: &Run, bucket: Duration, end: Timestamp) -> Timeline {
    let width = (bucket.as_nanos() as u64).max(1);
    let n = (end.as_nanos() / width + 1) as usize;
    let slot = |t: Timestamp| ((t.as_nanos() / width) as usize).min(n - 1);
    let mut lanes: Vec<Lane> = run
        .scenario
        .endpoints
        .iter()
        .map(|e| Lane {
            name: e.name.clone(),
            buckets: vec![[0; 5]; n],
        })
        .collect();
    for r in &run.requests {
        let class = r.reply.class() as usize;
        if let Some(l) = lanes.get_mut(usize::from(r.target.endpoint.0)) {
            l.buckets[slot(r.at)][class] += 1;
        }
    }
    let mut give_ups = vec![0; n];
    for c in run.calls.iter().filter(|c| !c.finish.is_success()) {
        give_ups[slot(c.finished)] += 1;
    }
    Timeline {
        bucket_s: round(bucket.as_secs_f64(), 3),
        endpoints: lanes,
        give_ups,
    }
}
