//! Two policies on the same scenario and seed, side by side, with the differences
//! marked better or worse.

use serde::Serialize;

use crate::report::Report;
use crate::text::{Table, ms, pct};

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Better {
    Higher,
    Lower,
    Neither,
}

#[derive(Debug, Clone, Copy)]
enum Unit {
    Fraction,
    Count,
    Millis,
    Ratio,
}

/// One metric of both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// The metric's name.
    pub metric: &'static str,
    /// Its value under the first policy.
    pub a: f64,
    /// Its value under the second policy.
    pub b: f64,
    /// `b - a`.
    pub delta: f64,
    /// `better`, `worse`, `same`, `changed` for metrics with no better direction, or
    /// `n/a` when either run has no value (a ratio to an ideal of zero).
    pub verdict: &'static str,
}

/// Both reports and their differences, as `--vs --json` prints them.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison<'a> {
    /// The first policy's report.
    pub a: &'a Report,
    /// The second policy's report.
    pub b: &'a Report,
    /// Metric by metric.
    pub diff: Vec<Diff>,
}

impl<'a> Comparison<'a> {
    /// Compares `a` with `b`.
    pub fn new(a: &'a Report, b: &'a Report) -> Comparison<'a> {
        let diff = metrics()
            .iter()
            .map(|(metric, get, better, _)| {
                let (x, y) = (get(a), get(b));
                let delta = round6(y - x);
                let verdict = match (delta.abs() < 1e-9, better) {
                    _ if !delta.is_finite() => "n/a",
                    (true, _) => "same",
                    (false, Better::Neither) => "changed",
                    (false, Better::Higher) if delta > 0.0 => "better",
                    (false, Better::Lower) if delta < 0.0 => "better",
                    _ => "worse",
                };
                Diff {
                    metric,
                    a: x,
                    b: y,
                    delta,
                    verdict,
                }
            })
            .collect();
        Comparison { a, b, diff }
    }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

type Metric = (&'static str, fn(&Report) -> f64, Better, Unit);

/// A ratio to the ideal, NaN (shown `-`, serialized `null`) when there is none.
fn vs(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}

fn metrics() -> [Metric; 23] {
    use Better::{Higher, Lower, Neither};
    use Unit::{Count, Fraction, Millis, Ratio};
    [
        ("success rate", |r| r.success_rate, Higher, Fraction),
        (
            "ideal success rate",
            |r| r.ideal.success_rate,
            Neither,
            Fraction,
        ),
        (
            "success / ideal",
            |r| vs(r.vs_ideal.success_rate),
            Higher,
            Ratio,
        ),
        (
            "gave up",
            |r| r.give_ups.values().sum::<u64>() as f64,
            Lower,
            Count,
        ),
        (
            "attempts per call",
            |r| r.attempts_per_call.mean,
            Lower,
            Ratio,
        ),
        (
            "most attempts",
            |r| f64::from(r.attempts_per_call.max),
            Neither,
            Count,
        ),
        (
            "upstream requests",
            |r| r.upstream_requests as f64,
            Lower,
            Count,
        ),
        ("amplification", |r| r.amplification, Lower, Ratio),
        (
            "requests / ideal",
            |r| vs(r.vs_ideal.upstream_requests),
            Lower,
            Ratio,
        ),
        (
            "requests in outages",
            |r| r.endpoints.iter().map(|e| e.during_outages).sum::<u64>() as f64,
            Lower,
            Count,
        ),
        ("makespan", |r| r.makespan_s * 1e3, Lower, Millis),
        (
            "makespan / ideal",
            |r| vs(r.vs_ideal.makespan),
            Lower,
            Ratio,
        ),
        ("latency mean", |r| r.latency_ms.mean, Lower, Millis),
        (
            "latency mean / ideal",
            |r| vs(r.vs_ideal.latency_mean),
            Lower,
            Ratio,
        ),
        ("latency p50", |r| r.latency_ms.p50, Lower, Millis),
        (
            "latency p50 / ideal",
            |r| vs(r.vs_ideal.latency_p50),
            Lower,
            Ratio,
        ),
        ("latency p95", |r| r.latency_ms.p95, Lower, Millis),
        ("latency p99", |r| r.latency_ms.p99, Lower, Millis),
        (
            "latency p99 / ideal",
            |r| vs(r.vs_ideal.latency_p99),
            Lower,
            Ratio,
        ),
        ("latency max", |r| r.latency_ms.max, Lower, Millis),
        (
            "breaker trips",
            |r| {
                r.breaker_transitions
                    .iter()
                    .filter(|t| t.to == "open")
                    .count() as f64
            },
            Neither,
            Count,
        ),
        (
            "budget exhausted",
            |r| r.budget_exhausted as f64,
            Lower,
            Count,
        ),
        (
            "key cooldowns",
            |r| r.keys.iter().map(|k| k.cooldowns).sum::<u64>() as f64,
            Neither,
            Count,
        ),
    ]
}

fn show(unit: Unit, v: f64) -> String {
    if !v.is_finite() {
        return "-".to_string();
    }
    match unit {
        Unit::Fraction => pct(v),
        Unit::Count => format!("{v:.0}"),
        Unit::Millis => ms(v),
        Unit::Ratio => format!("{v:.3}"),
    }
}

fn show_delta(unit: Unit, d: f64) -> String {
    let sign = if d > 0.0 {
        "+"
    } else if d < 0.0 {
        "-"
    } else {
        ""
    };
    let m = d.abs();
    match unit {
        Unit::Fraction => format!("{sign}{:.2} pp", m * 100.0),
        Unit::Count => format!("{sign}{m:.0}"),
        Unit::Millis => format!("{sign}{}", ms(m)),
        Unit::Ratio => format!("{sign}{m:.3}"),
    }
}

/// The comparison as text: one row per metric, a delta column and a verdict marker
/// (`<< better`, `>> worse`).
pub fn render(a: &Report, b: &Report) -> String {
    let c = Comparison::new(a, b);
    let mut out = format!(
        "steadfast sim: scenario {}, seed {}: policy a = {}, policy b = {}\n\n",
        a.scenario, a.seed, a.policy, b.policy
    );
    let mut t = Table::new();
    t.left_last();
    t.row([
        "metric".to_string(),
        format!("a: {}", a.policy),
        format!("b: {}", b.policy),
        "b - a".to_string(),
        String::new(),
    ]);
    for (d, (_, _, _, unit)) in c.diff.iter().zip(metrics()) {
        let mark = match d.verdict {
            "better" => "<< better",
            "worse" => ">> worse",
            _ => "",
        };
        let delta = match d.verdict {
            "same" => "=".to_string(),
            "n/a" => "-".to_string(),
            _ => show_delta(unit, d.delta),
        };
        t.row([
            d.metric.to_string(),
            show(unit, d.a),
            show(unit, d.b),
            delta,
            mark.to_string(),
        ]);
    }
    out.push_str(&t.render(0));
    out
}
