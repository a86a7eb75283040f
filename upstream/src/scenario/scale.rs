//! Time scaling: the same world, faster or slower.

use core::time::Duration;

use super::{Scenario, ServerLimits};
use crate::dist::Dist;

impl Scenario {
    /// The scenario with its clock running `factor` times as long: every span
    /// (latencies, waits, outage windows, key instants, the report's bucket) multiplied
    /// by `factor`, every rate (arrivals, limits per minute) divided by it; counts
    /// (calls, bursts, tokens per call) stay. `time_scaled(0.05)` runs a 60 s outage in
    /// 3 s of real time against the mock. A `factor` that is not finite and positive
    /// leaves the scenario as it is.
    pub fn time_scaled(&self, factor: f64) -> Scenario {
        let mut s = self.clone();
        if !(factor.is_finite() && factor > 0.0) {
            return s;
        }
        let span = |d: Duration| d.mul_f64(factor);
        s.load.rate /= factor;
        s.report.bucket = s.report.bucket.map(span);
        for e in &mut s.endpoints {
            e.latency = e.latency.scaled(factor);
            e.error_latency = e.error_latency.scaled(factor);
            e.event_latency = e.event_latency.scaled(factor);
            e.faults.retry_after = e.faults.retry_after.map(|d| d.scaled(factor));
            if let Some(l) = &mut e.limits {
                scale_limits(l, factor);
            }
            for o in &mut e.outages {
                o.start = span(o.start);
                o.end = span(o.end);
                o.latency = o.latency.map(|d| d.scaled(factor));
            }
            for b in &mut e.bad_keys {
                b.from = span(b.from);
            }
        }
        s
    }
}

fn scale_limits(l: &mut ServerLimits, factor: f64) {
    // A burst is a count: a full bucket holds as many requests as before, over a
    // shorter (or longer) minute, and never more than the new limit.
    let per = |v: Option<u64>| v.map(|n| ((n as f64 / factor).round() as u64).max(1));
    let requests = per(l.requests_per_minute);
    let tokens = per(l.tokens_per_minute);
    l.request_burst = burst(l.request_burst.or(l.requests_per_minute), requests);
    l.token_burst = burst(l.token_burst.or(l.tokens_per_minute), tokens);
    l.requests_per_minute = requests;
    l.tokens_per_minute = tokens;
    l.input_tokens_per_minute = per(l.input_tokens_per_minute);
    l.output_tokens_per_minute = per(l.output_tokens_per_minute);
}

fn burst(burst: Option<u64>, limit: Option<u64>) -> Option<u64> {
    match (burst, limit) {
        (Some(b), Some(l)) => Some(b.min(l)),
        _ => None,
    }
}

impl Dist {
    /// The distribution of `factor` × a draw.
    pub fn scaled(&self, factor: f64) -> Dist {
        match *self {
            Dist::Fixed(d) => Dist::Fixed(d.mul_f64(factor)),
            Dist::Uniform { min, max } => Dist::Uniform {
                min: min.mul_f64(factor),
                max: max.mul_f64(factor),
            },
            Dist::Lognormal { median, sigma } => Dist::Lognormal {
                median: median.mul_f64(factor),
                sigma,
            },
            Dist::Tail {
                min,
                max,
                share,
                held,
            } => Dist::Tail {
                min: min.mul_f64(factor),
                max: max.mul_f64(factor),
                share,
                held: held.mul_f64(factor),
            },
        }
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use crate::builtin;

    #[test]
    fn spans_shrink_and_rates_grow() {
        let s = builtin::scenario("outage").unwrap();
        let t = s.time_scaled(0.05);
        assert_eq!(t.endpoints[0].outages[0].start, Duration::from_secs(1));
        assert_eq!(t.endpoints[0].outages[0].end, Duration::from_millis(2500));
        assert_eq!(t.load.rate, s.load.rate * 20.0);
        assert_eq!(t.load.calls, s.load.calls);
        t.validate().unwrap();
        let r = builtin::scenario("ratelimit-storm")
            .unwrap()
            .time_scaled(0.1);
        let l = r.endpoints[0].limits.unwrap();
        assert_eq!(l.requests_per_minute, Some(6000));
        assert_eq!(l.request_burst, Some(600));
        assert_eq!(s.time_scaled(f64::NAN), s);
    }
}
