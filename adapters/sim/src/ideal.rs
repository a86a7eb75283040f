//! The ideal of a run: what a perfect client would need on the same scenario, the
//! yardstick the simulator's figures are divided by.
//!
//! A perfect client knows the upstream. It never sends into a full outage window,
//! never uses a bad key, never exceeds a bucket, and for each call picks the endpoint
//! and key that answer soonest — sending at once, or waiting for a bucket's room or an
//! outage's end, whichever finishes first. It retries only for what it cannot foresee:
//! the random per-request faults and the share of requests a partial outage fails, at
//! their rates (with the `decay` per failure), so a call with failure probability `p`
//! needs `1 / (1 − p)` requests on average. The calls keep the run's arrival instants
//! and the scenario's concurrency; a call holds its slot while it waits.
//!
//! How it is computed:
//!
//! - **Services.** For each endpoint and each set of outage windows covering an
//!   instant (a *regime*): the distribution of a call's time from its first request to
//!   its answer, its expected requests, and how many of them the buckets count (not
//!   outage refusals, not replays of stored successes), in the upstream's order of
//!   checks: partial outage windows, then the buckets, then the random faults. A
//!   failure with no work done costs its answer's latency (a random 429 its
//!   `retry_after` too) and the call tries again at once; a failure after the work was
//!   done (a reset, a broken body) is followed by one replay request, answered at once.
//!   A hang costs what a success would: a client that knows the latencies knows when
//!   an answer is overdue. Distributions are kept as 512 equally likely atoms (their
//!   quantiles good to about 0.2% of the mass), their means exactly.
//! - **Schedule.** Calls in arrival order take the earliest free concurrency slot, then
//!   the option that finishes soonest by the *mean* service time (ties: the pool's
//!   priority). Each takes its expected bucket units at the instant it is sent, from
//!   the upstream's own integer buckets counting millionths of a request, so a call of
//!   exactly one request is paced exactly as the upstream paces it. A call that cannot
//!   be answered within the policy's deadline of its start is not sent.
//! - **Figures.** The success rate is the mean probability of a call being answered
//!   within its deadline; requests are the expected total; the makespan runs from the
//!   first arrival to the last planned end; latencies (arrival to answer) are the
//!   mean and the quantiles of the mixture, over calls, of each call's wait plus its
//!   service's distribution.
//!
//! What it ignores, so that it is a bound a real client can approach rather than a
//! prediction:
//!
//! - a retry goes out in the regime and to the endpoint of the call's first request,
//!   and its bucket units are taken when the call is sent;
//! - slots are held for the mean service time, not a drawn one, so neither queueing
//!   behind slow answers nor the tail of the last answers counts in the makespan;
//! - it waits for every answer however slow (no attempt timeout, no hedging), so where
//!   a client's timeout cuts a heavy tail, the client's high percentiles may beat it;
//! - a random 429's `retry_after` is waited out (the provider's shared capacity), not
//!   dodged on another key;
//! - the `first_requests` of a window are paid by the first call sent to the endpoint
//!   (those of a slow window are ignored), and so are `stream_cut_after` and event
//!   latencies;
//! - the policy enters only through its call deadline: the breaker, the budget, the
//!   backoff and the attempt limits of a real client do not bind a perfect one.
//!
//! The ideal is an expectation and a run a sample, so a ratio a little under 1 (a run
//! that drew fewer faults) is noise. Deterministic: no random draw; the arrivals are
//! the run's.

use core::time::Duration;

use serde::Serialize;
use steadfast_core::time::Timestamp;
use steadfast_upstream::Scenario;

mod lanes;
mod schedule;
mod service;
mod spread;
#[cfg(test)]
mod tests;

use schedule::{Plan, Schedule, secs_between};

/// What a perfect client needs for a scenario's calls.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ideal {
    /// The share of calls that can be answered within their deadline.
    pub success_rate: f64,
    /// The expected upstream requests.
    pub upstream_requests: f64,
    /// From the first arrival to the last answer, in seconds.
    pub makespan_s: f64,
    /// Call latency (arrival to answer), in milliseconds.
    pub latency_ms: IdealLatency,
}

/// The ideal's call latencies in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IdealLatency {
    /// The mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Ideal {
    /// The ideal of `scenario`'s calls arriving at `arrivals` (sorted, from the start),
    /// each to be answered within `deadline` of its start.
    pub fn compute(
        scenario: &Scenario,
        arrivals: &[Timestamp],
        deadline: Option<Duration>,
    ) -> Ideal {
        let s = schedule::schedule(scenario, arrivals, deadline);
        let plans = &s.plans;
        let n = plans.len().max(1) as f64;
        let total = |f: fn(&Plan) -> f64| plans.iter().map(f).sum::<f64>();
        let first = plans.first().map_or(Timestamp::ZERO, |p| p.arrived);
        let last = plans.iter().map(|p| p.finished).max();
        let mean = total(|p| secs_between(p.arrived, p.finished)) / n;
        let quantile = |q| round(quantile(&s, q) * 1e3, 1);
        Ideal {
            success_rate: round(total(|p| p.served) / n, 6),
            upstream_requests: round(total(|p| p.requests), 1),
            makespan_s: round(secs_between(first, last.unwrap_or(first)), 3),
            latency_ms: IdealLatency {
                mean: round(mean * 1e3, 1),
                p50: quantile(0.50),
                p95: quantile(0.95),
                p99: quantile(0.99),
            },
        }
    }

    /// The ideal of `scenario` with the arrivals of a run with `seed`.
    pub fn of_scenario(scenario: &Scenario, seed: u64, deadline: Option<Duration>) -> Ideal {
        Ideal::compute(scenario, &crate::arrival_instants(scenario, seed), deadline)
    }
}

/// The `q` quantile, in seconds, of the calls' latencies: the mixture over calls of
/// each one's wait plus its service's distribution (bisection on the mixture's CDF).
fn quantile(s: &Schedule, q: f64) -> f64 {
    let hi = s
        .plans
        .iter()
        .map(|p| p.waited + slowest(s, p))
        .fold(0.0, f64::max);
    let (mut lo, mut hi) = (0.0, hi);
    if cdf(s, lo) >= q {
        return 0.0;
    }
    while hi - lo > 1e-6 {
        let mid = (lo + hi) / 2.0;
        match cdf(s, mid) >= q {
            true => hi = mid,
            false => lo = mid,
        }
    }
    hi
}

/// The share of calls answered within `x` seconds of arriving (a call given up counts
/// at the moment it is given up).
fn cdf(s: &Schedule, x: f64) -> f64 {
    let within = |p: &Plan| match p.service.and_then(|i| s.services.get(i)) {
        None => f64::from(u8::from(p.waited <= x)),
        Some(service) => service.time.within(x - p.waited),
    };
    s.plans.iter().map(within).sum::<f64>() / s.plans.len().max(1) as f64
}

fn slowest(s: &Schedule, p: &Plan) -> f64 {
    p.service
        .and_then(|i| s.services.get(i))
        .and_then(|v| v.time.atoms().last())
        .map_or(0.0, |a| a.0)
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}
