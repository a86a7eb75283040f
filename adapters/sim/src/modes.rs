//! Replicas' reports as text: the section a report of one sharing mode ends with, and
//! the modes of one scenario side by side.

use std::fmt::Write;

use serde::Serialize;

use crate::report::{ReplicaReport, Report};
use crate::text::{Table, ms, pct, ratio};

/// The reports of one scenario, seed and replicas under several sharing modes, as
/// `--json` prints them.
#[derive(Debug, Clone, Serialize)]
pub struct Modes<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// The policy's label.
    pub policy: &'a str,
    /// The run's seed.
    pub seed: u64,
    /// The replicas.
    pub replicas: u16,
    /// The store's round trip, in milliseconds.
    pub store_lag_ms: f64,
    /// One report per mode, in the order run.
    pub modes: Vec<&'a Report>,
}

impl<'a> Modes<'a> {
    /// The modes of `reports` (all of one scenario, seed and replica count).
    pub fn new(reports: &'a [Report]) -> Modes<'a> {
        let first = reports.first();
        let section = first.and_then(|r| r.replicas.as_ref());
        Modes {
            scenario: first.map_or("", |r| r.scenario.as_str()),
            policy: first.map_or("", |r| r.policy.as_str()),
            seed: first.map_or(0, |r| r.seed),
            replicas: section.map_or(1, |s| s.replicas),
            store_lag_ms: section.map_or(0.0, |s| s.store_lag_ms),
            modes: reports.iter().collect(),
        }
    }
}

type Row = (&'static str, fn(&Report, &ReplicaReport) -> String);

fn rows() -> [Row; 16] {
    [
        ("calls", |r, _| r.calls.to_string()),
        ("succeeded", |r, _| r.succeeded.to_string()),
        ("gave up", |r, _| (r.calls - r.succeeded).to_string()),
        ("upstream requests", |r, _| r.upstream_requests.to_string()),
        ("429s", |_, s| s.throttled.to_string()),
        ("early requests", |_, s| s.early_requests.to_string()),
        ("store asks", |_, s| s.store_asks.to_string()),
        ("decided locally", |_, s| pct(s.local_share)),
        ("leased", |_, s| s.leased.to_string()),
        ("leased, never spent", |_, s| s.expired.to_string()),
        ("store failures", |_, s| s.store_failures.to_string()),
        ("on the fallback", |_, s| s.fallback_admissions.to_string()),
        ("makespan", |r, _| ms(r.makespan_s * 1e3)),
        ("ideal makespan", |r, _| ms(r.ideal.makespan_s * 1e3)),
        ("makespan / ideal", |r, _| ratio(r.vs_ideal.makespan)),
        ("latency p99", |r, _| ms(r.latency_ms.p99)),
    ]
}

/// The column head of a mode: its name, with its lease when it leases.
fn head(s: &ReplicaReport) -> String {
    match s.sharing {
        "leased" => format!("leased ({})", s.lease),
        other => other.to_string(),
    }
}

/// The reports side by side, one column per mode, then each replica's seed.
pub fn render(reports: &[Report]) -> String {
    let m = Modes::new(reports);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "steadfast sim: scenario {}, policy {}, seed {}: {} replicas, store lag {}\n",
        m.scenario,
        m.policy,
        m.seed,
        m.replicas,
        ms(m.store_lag_ms)
    );
    let sections: Vec<(&Report, &ReplicaReport)> = reports
        .iter()
        .filter_map(|r| Some((r, r.replicas.as_ref()?)))
        .collect();
    let mut t = Table::new();
    let mut top = vec![String::new()];
    top.extend(sections.iter().map(|(_, s)| head(s)));
    t.row(top);
    for (name, cell) in rows() {
        let mut row = vec![name.to_string()];
        row.extend(sections.iter().map(|(r, s)| cell(r, s)));
        t.row(row);
    }
    out.push_str(&t.render(0));
    out.push_str(
        "\nlocal: each replica admits on its own limiter; shared: every admission asks the \
         store; leased: admissions spend leases of the store's quota.\n",
    );
    if let Some((_, s)) = sections.first() {
        out.push_str(&seeds(s));
    }
    out
}

/// Each replica's seed, one a line.
fn seeds(s: &ReplicaReport) -> String {
    let mut out = String::from("\nreplica seeds\n");
    let mut t = Table::new();
    for (i, line) in s.per_replica.iter().enumerate() {
        t.row([format!("{i}"), line.seed.to_string()]);
    }
    out.push_str(&t.render(2));
    out
}

/// The section a report of replicas ends with.
pub fn section(s: &ReplicaReport) -> String {
    let mut out = String::new();
    let lease = match s.sharing {
        "leased" => format!(" (leases of up to {})", s.lease),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "\nreplicas: {}, sharing {}{lease}, store lag {}",
        s.replicas,
        s.sharing,
        ms(s.store_lag_ms)
    );
    let mut t = Table::new();
    t.left_last();
    for (name, value, note) in [
        ("429s", s.throttled.to_string(), "from the upstream"),
        (
            "early requests",
            s.early_requests.to_string(),
            "sent while an answered 429 said not yet",
        ),
        ("store asks", s.store_asks.to_string(), ""),
        ("decided locally", pct(s.local_share), "1 - asks / requests"),
        ("leased", s.leased.to_string(), ""),
        ("leased, never spent", s.expired.to_string(), ""),
        ("store failures", s.store_failures.to_string(), ""),
        (
            "on the fallback",
            s.fallback_admissions.to_string(),
            "requests admitted while the store was unreachable",
        ),
    ] {
        t.row([name.to_string(), value, note.to_string()]);
    }
    out.push_str(&t.render(2));
    let mut t = Table::new();
    t.row([
        "replica",
        "seed",
        "calls",
        "succeeded",
        "requests",
        "429s",
        "asks",
    ]);
    for (i, l) in s.per_replica.iter().enumerate() {
        t.row([
            i.to_string(),
            l.seed.to_string(),
            l.calls.to_string(),
            l.succeeded.to_string(),
            l.requests.to_string(),
            l.throttled.to_string(),
            l.store_asks.to_string(),
        ]);
    }
    out.push('\n');
    out.push_str(&t.render(2));
    out
}
