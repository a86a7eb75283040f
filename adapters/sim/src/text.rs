//! The report as aligned text tables.

use std::fmt::Write;

use crate::reply::OutcomeClass;
use crate::report::Report;

/// A table of cells; the first column is left-aligned, the others right-aligned.
#[derive(Debug, Default)]
pub struct Table {
    rows: Vec<Vec<String>>,
    left_last: bool,
}

impl Table {
    /// An empty table.
    pub fn new() -> Table {
        Table::default()
    }

    /// Left-aligns the last column too (for free-text remarks).
    pub fn left_last(&mut self) -> &mut Table {
        self.left_last = true;
        self
    }

    /// Adds a row.
    pub fn row<I, S>(&mut self, cells: I) -> &mut Table
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    /// The table, each line indented by `indent` spaces.
    pub fn render(&self, indent: usize) -> String {
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let width: Vec<usize> = (0..cols)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for r in &self.rows {
            let mut line = " ".repeat(indent);
            for (c, cell) in r.iter().enumerate() {
                let pad = width[c].saturating_sub(cell.chars().count());
                if c == 0 || (self.left_last && c + 1 == cols) {
                    if c > 0 {
                        line.push_str("  ");
                    }
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str("  ");
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// A percentage with two decimals.
pub fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// Milliseconds as `812 ms` or `2.35 s`.
pub fn ms(x: f64) -> String {
    if x < 1000.0 {
        format!("{x:.0} ms")
    } else {
        format!("{:.2} s", x / 1000.0)
    }
}

/// A ratio to the ideal, or `-` when there is none.
pub fn ratio(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |x| format!("{x:.3}"))
}

/// A table of figures, each with the ideal's and the ratio to it beside it.
struct Figures(Table);

impl Figures {
    fn row(&mut self, name: &str, value: String, ideal: String, ratio: String, note: &str) {
        self.0
            .row([name.to_string(), value, ideal, ratio, note.to_string()]);
    }

    /// A figure with nothing to compare it to.
    fn plain(&mut self, name: &str, value: String, note: &str) {
        self.row(name, value, String::new(), String::new(), note);
    }
}

/// The headline figures, beside the ideal's where it has one.
fn figures(r: &Report) -> Table {
    let mut t = Table::new();
    t.left_last();
    let mut f = Figures(t);
    f.row("", "run".into(), "ideal".into(), "ratio".into(), "");
    outcomes(&mut f, r);
    requests(&mut f, r);
    times(&mut f, r);
    f.plain("budget exhausted", r.budget_exhausted.to_string(), "calls");
    f.0
}

fn outcomes(f: &mut Figures, r: &Report) {
    f.plain("calls", r.calls.to_string(), "");
    f.plain("succeeded", r.succeeded.to_string(), "");
    let (ideal, ratio_) = (r.ideal.success_rate, r.vs_ideal.success_rate);
    f.row(
        "success rate",
        pct(r.success_rate),
        pct(ideal),
        ratio(ratio_),
        "",
    );
    let gave_up: u64 = r.give_ups.values().sum();
    f.plain("gave up", gave_up.to_string(), "");
    for (reason, n) in &r.give_ups {
        f.plain(&format!("  {reason}"), n.to_string(), "");
    }
}

fn requests(f: &mut Figures, r: &Report) {
    let a = &r.attempts_per_call;
    let most = format!("max {}", a.max);
    f.plain("attempts per call", format!("{:.3}", a.mean), &most);
    let (ideal, vs) = (
        r.ideal.upstream_requests,
        ratio(r.vs_ideal.upstream_requests),
    );
    let count = r.upstream_requests.to_string();
    f.row(
        "upstream requests",
        count,
        format!("{ideal:.1}"),
        vs.clone(),
        "",
    );
    let per_call = format!("{:.3}", ideal / r.calls.max(1) as f64);
    let amplification = format!("{:.3}", r.amplification);
    f.row(
        "amplification",
        amplification,
        per_call,
        vs,
        "requests per call",
    );
}

fn times(f: &mut Figures, r: &Report) {
    let (i, v) = (&r.ideal, &r.vs_ideal);
    let (makespan, ideal) = (ms(r.makespan_s * 1e3), ms(i.makespan_s * 1e3));
    let note = "first arrival to last finish";
    f.row("makespan", makespan, ideal, ratio(v.makespan), note);
    let (l, il) = (&r.latency_ms, &i.latency_ms);
    for (name, value, ideal, vs) in [
        ("mean", l.mean, il.mean, v.latency_mean),
        ("p50", l.p50, il.p50, v.latency_p50),
        ("p95", l.p95, il.p95, v.latency_p95),
        ("p99", l.p99, il.p99, v.latency_p99),
    ] {
        f.row(
            &format!("latency {name}"),
            ms(value),
            ms(ideal),
            ratio(vs),
            "",
        );
    }
    f.plain("latency max", ms(l.max), "");
}

/// The report as text.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "steadfast sim: scenario {}, policy {}, seed {}\n",
        r.scenario, r.policy, r.seed
    );
    out.push_str(&figures(r).render(0));

    out.push_str("\nendpoints\n");
    let mut t = Table::new();
    let mut head = vec!["name".to_string(), "requests".to_string()];
    head.extend(OutcomeClass::ALL.iter().map(|c| c.name().to_string()));
    head.push("in outages".to_string());
    t.row(head);
    for e in &r.endpoints {
        t.row([
            e.name.clone(),
            e.requests.to_string(),
            e.ok.to_string(),
            e.throttled.to_string(),
            e.server_error.to_string(),
            e.timeout.to_string(),
            e.other.to_string(),
            e.during_outages.to_string(),
        ]);
    }
    out.push_str(&t.render(2));

    out.push_str("\nkeys\n");
    let mut t = Table::new();
    t.row(["key", "requests", "cooldowns", "disabled"]);
    for k in &r.keys {
        let disabled = k.disabled.as_ref().map_or("-".to_string(), |d| {
            format!("{} at {:.3} s", d.reason, d.at_s)
        });
        t.row([
            format!("{}#{}", k.endpoint, k.key),
            k.requests.to_string(),
            k.cooldowns.to_string(),
            disabled,
        ]);
    }
    out.push_str(&t.render(2));

    out.push_str("\nbreaker transitions\n");
    if r.breaker_transitions.is_empty() {
        out.push_str("  none\n");
    }
    let mut t = Table::new();
    for b in &r.breaker_transitions {
        t.row([
            format!("{:.3} s", b.at_s),
            b.endpoint.clone(),
            format!("{} -> {}", b.from, b.to),
        ]);
    }
    out.push_str(&t.render(2));

    let tl = &r.timeline;
    let _ = writeln!(
        out,
        "\nupstream requests per second (buckets of {} s)",
        tl.bucket_s
    );
    let mut t = Table::new();
    let mut head = vec!["from".to_string()];
    head.extend(tl.endpoints.iter().map(|l| l.name.clone()));
    head.push("give-ups".to_string());
    t.row(head);
    for i in 0..tl.give_ups.len() {
        let mut row = vec![format!("{:.1} s", i as f64 * tl.bucket_s)];
        for lane in &tl.endpoints {
            let n: u64 = lane.buckets.get(i).map_or(0, |b| b.iter().sum());
            row.push(format!("{:.1}", n as f64 / tl.bucket_s));
        }
        row.push(tl.give_ups[i].to_string());
        t.row(row);
    }
    out.push_str(&t.render(2));
    if let Some(section) = &r.replicas {
        out.push_str(&crate::modes::section(section));
    }
    out
}
