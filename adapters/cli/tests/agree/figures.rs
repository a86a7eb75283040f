//! What one run of a scenario shows, on any side, and the agreement between two.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The figures compared.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// Logical calls.
    pub calls: u64,
    /// Calls that succeeded.
    pub succeeded: u64,
    /// Requests that reached the upstream.
    pub requests: u64,
    /// Breaker transitions in order, `endpoint:from>to`, when the side shows them; else
    /// only `opens` is known.
    pub transitions: Option<Vec<String>>,
    /// Breakers that opened.
    pub opens: u64,
    /// Give-ups by reason.
    pub give_ups: BTreeMap<String, u64>,
}

impl Figures {
    pub fn success_rate(&self) -> f64 {
        self.succeeded as f64 / self.calls.max(1) as f64
    }

    fn share(&self, reason: &str) -> f64 {
        self.give_ups.get(reason).copied().unwrap_or(0) as f64 / self.calls.max(1) as f64
    }

    /// Where `other` disagrees with these (the simulator's) figures: success within 1
    /// percentage point, requests within 5 % (and 2 requests, for tiny counts), the
    /// same transitions in the same order (or, where a side shows only counts, the same
    /// number of opens), each give-up reason within 1 point.
    pub fn disagreements(&self, other: &Figures) -> Vec<String> {
        let mut out = Vec::new();
        let (a, b) = (self.success_rate(), other.success_rate());
        if (a - b).abs() > 0.01 {
            out.push(format!("success {:.2}% vs {:.2}%", a * 100.0, b * 100.0));
        }
        let (ra, rb) = (self.requests as f64, other.requests as f64);
        if (ra - rb).abs() > (0.05 * ra.max(rb)).max(2.0) {
            out.push(format!("requests {} vs {}", self.requests, other.requests));
        }
        match (&self.transitions, &other.transitions) {
            (Some(x), Some(y)) if x != y => out.push(format!("transitions {x:?} vs {y:?}")),
            _ if self.opens != other.opens => {
                out.push(format!("breaker opens {} vs {}", self.opens, other.opens));
            }
            _ => {}
        }
        let reasons = self.give_ups.keys().chain(other.give_ups.keys());
        for r in reasons.collect::<std::collections::BTreeSet<_>>() {
            let (x, y) = (self.share(r), other.share(r));
            if (x - y).abs() > 0.01 {
                out.push(format!("{r} {:.2}% vs {:.2}%", x * 100.0, y * 100.0));
            }
        }
        out
    }

    /// One row of the side-by-side table.
    pub fn row(&self, scenario: &str, side: &str) -> String {
        let give_ups = self
            .give_ups
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let transitions = match &self.transitions {
            Some(t) => format!("{} ({} opens)", t.len(), self.opens),
            None => format!("- ({} opens)", self.opens),
        };
        let mut s = String::new();
        let _ = write!(
            s,
            "{scenario:<20} {side:<8} {:>5} {:>8.2}% {:>9} {:>16}  {}",
            self.calls,
            self.success_rate() * 100.0,
            self.requests,
            transitions,
            if give_ups.is_empty() { "-" } else { &give_ups },
        );
        s
    }
}

/// The header of the table.
pub fn header() -> String {
    format!(
        "{:<20} {:<8} {:>5} {:>9} {:>9} {:>16}  give-ups",
        "scenario", "side", "calls", "success", "requests", "transitions"
    )
}

/// The figures of a simulated run.
pub fn of_sim(run: &steadfast_sim::Run) -> Figures {
    let report = steadfast_sim::Report::new(run, "agree");
    let transitions: Vec<String> = report
        .breaker_transitions
        .iter()
        .map(|t| format!("{}:{}>{}", t.endpoint, norm(t.from), norm(t.to)))
        .collect();
    Figures {
        calls: report.calls,
        succeeded: report.succeeded,
        requests: report.upstream_requests,
        opens: transitions.iter().filter(|t| t.ends_with(">open")).count() as u64,
        transitions: Some(transitions),
        give_ups: report.give_ups.clone().into_iter().collect(),
    }
}

/// A state's name in one spelling: `half_open`, `HalfOpen`, `half-open` are `halfopen`.
pub fn norm(state: &str) -> String {
    state
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase()
}
