//! A run's figures divided by its ideal's.

use serde::Serialize;

use super::{Latency, round};
use crate::ideal::Ideal;

/// Achieved ÷ ideal, figure by figure; none where the ideal is zero (or, for times,
/// under a millisecond), so there is nothing to divide by.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VsIdeal {
    /// Success rate ÷ the ideal success rate (1: every call a perfect client serves
    /// was served).
    pub success_rate: Option<f64>,
    /// Upstream requests ÷ the ideal's.
    pub upstream_requests: Option<f64>,
    /// Makespan ÷ the ideal's.
    pub makespan: Option<f64>,
    /// Mean latency ÷ the ideal's.
    pub latency_mean: Option<f64>,
    /// Median latency ÷ the ideal's.
    pub latency_p50: Option<f64>,
    /// 95th-percentile latency ÷ the ideal's.
    pub latency_p95: Option<f64>,
    /// 99th-percentile latency ÷ the ideal's.
    pub latency_p99: Option<f64>,
}

impl VsIdeal {
    /// The ratios of a run's figures to `ideal`.
    pub fn new(
        success_rate: f64,
        requests: u64,
        makespan_s: f64,
        latency: &Latency,
        ideal: &Ideal,
    ) -> VsIdeal {
        let ratio = |a: f64, b: f64, floor: f64| (b >= floor && b > 0.0).then(|| round(a / b, 4));
        let ms = |a: f64, b: f64| ratio(a, b, 1.0);
        let l = &ideal.latency_ms;
        VsIdeal {
            success_rate: ratio(success_rate, ideal.success_rate, 0.0),
            upstream_requests: ratio(requests as f64, ideal.upstream_requests, 0.0),
            makespan: ratio(makespan_s, ideal.makespan_s, 1e-3),
            latency_mean: ms(latency.mean, l.mean),
            latency_p50: ms(latency.p50, l.p50),
            latency_p95: ms(latency.p95, l.p95),
            latency_p99: ms(latency.p99, l.p99),
        }
    }
}
