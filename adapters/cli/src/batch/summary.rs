//! What a batch did: counted by the writer as lines become durable, printed as a table
//! on stderr at the end.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use steadfast_core::duration::Human;
use steadfast_core::retry::GiveUpReason;
use steadfast_core::time::Timestamp;
use steadfast_reqwest::MetricsSnapshot;

use super::exit;
use super::record::Encoded;
use super::status::EndpointStatus;

/// Counts of finished lines.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Lines that succeeded.
    pub ok: u64,
    /// Lines that failed, by (class, scope).
    pub failed: BTreeMap<(String, String), u64>,
    /// Bad lines without a usable id (each has a `bad_input` line known by its number).
    pub no_id: u64,
    /// Repeated ids (the first line with the id runs; each later one has a `bad_input`
    /// line known by its number).
    pub duplicates: u64,
    /// Input lines that are not requests (or that the client refused to send as
    /// given), including those an earlier run wrote.
    pub bad: u64,
    /// Lines that gave up, by give-up reason (`breaker_open`, ...).
    pub reasons: BTreeMap<String, u64>,
    /// Lines an earlier run had finished.
    pub skipped: u64,
    /// Attempts of the lines finished in this run.
    pub attempts: u64,
    /// Per line that ran: its time from the first attempt to its end, in microseconds.
    latencies_us: Vec<u32>,
}

impl Tally {
    /// Counts a line written to the output.
    pub fn on_finished(&mut self, f: &Encoded, latency: Option<Duration>) {
        self.attempts += u64::from(f.attempts);
        if let Some(r) = &f.reason {
            *self.reasons.entry(r.clone()).or_default() += 1;
        }
        match &f.failure {
            None => self.ok += 1,
            Some(key) => match self.failed.get_mut(key) {
                Some(n) => *n += 1,
                None => {
                    self.failed.insert(key.clone(), 1);
                }
            },
        }
        if let Some(l) = latency {
            self.latencies_us
                .push(u32::try_from(l.as_micros()).unwrap_or(u32::MAX));
        }
    }

    /// Lines that failed, all classes.
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// Lines that gave up because their endpoint was unavailable: its breaker open or
    /// its retry budget spent (for a holding line: once the endpoint had failed for
    /// `max_hold`).
    pub fn unavailable(&self) -> u64 {
        unavailable_reasons()
            .iter()
            .filter_map(|r| self.reasons.get(*r))
            .sum()
    }

    /// Lines finished in this run (written to the output).
    pub fn finished(&self) -> u64 {
        self.ok + self.failed_total()
    }

    /// The latency percentiles p50, p95, p99 (nearest rank), when any line ran.
    pub fn percentiles(&mut self) -> Option<[Duration; 3]> {
        if self.latencies_us.is_empty() {
            return None;
        }
        self.latencies_us.sort_unstable();
        let n = self.latencies_us.len();
        let at = |p: f64| {
            let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
            let us = self.latencies_us.get(rank - 1).copied().unwrap_or(0);
            Duration::from_micros(u64::from(us))
        };
        Some([at(0.50), at(0.95), at(0.99)])
    }
}

/// The names of the give-up reasons of an unavailable endpoint.
fn unavailable_reasons() -> [&'static str; 2] {
    let breaker = GiveUpReason::BreakerOpen {
        until: Timestamp::ZERO,
    };
    [breaker.name(), GiveUpReason::BudgetExhausted.name()]
}

/// A whole run's figures.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The lines.
    pub tally: Tally,
    /// The client's counters.
    pub metrics: MetricsSnapshot,
    /// From start to end.
    pub wall: Duration,
    /// Whether a signal stopped the run early.
    pub interrupted: bool,
    /// Every endpoint at the end.
    pub endpoints: Vec<EndpointStatus>,
    /// How long held lines wait for a failing endpoint, when the policy holds.
    pub max_hold: Option<Duration>,
    /// The dead-letter file, if any.
    pub dead_letter: Option<PathBuf>,
}

fn short(d: Duration) -> String {
    // Milliseconds are enough for a person; Human keeps sub-ms values readable.
    let rounded = if d >= Duration::from_millis(10) {
        Duration::from_millis(d.as_millis() as u64)
    } else {
        Duration::from_micros(d.as_micros() as u64)
    };
    Human(rounded).to_string()
}

impl Summary {
    /// The table printed on stderr.
    pub fn render(&mut self) -> String {
        let t = &mut self.tally;
        let m = &self.metrics;
        let secs = self.wall.as_secs_f64().max(1e-9);
        let mut s = String::new();
        let head = if self.interrupted {
            "steadfast batch: interrupted"
        } else {
            "steadfast batch: done"
        };
        let _ = writeln!(
            s,
            "{head}: {} lines in {} ({:.1} lines/s)",
            t.finished(),
            short(self.wall),
            t.finished() as f64 / secs
        );
        let row = |s: &mut String, k: &str, v: String| {
            let _ = writeln!(s, "  {k:<28}{v:>12}");
        };
        row(&mut s, "ok", t.ok.to_string());
        row(&mut s, "failed", t.failed_total().to_string());
        for ((class, scope), n) in &t.failed {
            row(&mut s, &format!("  {class} ({scope})"), n.to_string());
        }
        if t.no_id > 0 {
            row(&mut s, "bad lines without an id", t.no_id.to_string());
        }
        if t.duplicates > 0 {
            row(&mut s, "repeated ids (skipped)", t.duplicates.to_string());
        }
        if t.skipped > 0 {
            row(&mut s, "done by an earlier run", t.skipped.to_string());
        }
        row(&mut s, "attempts", m.attempts.to_string());
        row(&mut s, "retries", m.retries.to_string());
        row(&mut s, "breaker trips", m.breaker_opened.to_string());
        row(
            &mut s,
            "key rotations",
            format!(
                "{} ({} cooled, {} disabled)",
                m.keys_cooled + m.keys_disabled,
                m.keys_cooled,
                m.keys_disabled
            ),
        );
        if m.failovers > 0 {
            row(&mut s, "failovers", m.failovers.to_string());
        }
        if m.hedges > 0 {
            row(
                &mut s,
                "hedges",
                format!("{} ({} attempts dropped)", m.hedges, m.hedges_cancelled),
            );
        }
        if m.shared_fallbacks > 0 {
            // The store of the shared limits failed: the limits were local (fail open)
            // or admissions paused (fail closed) until it answered again.
            row(
                &mut s,
                "shared store failures",
                format!("{} ({} resumed)", m.shared_fallbacks, m.shared_resumed),
            );
        }
        let lat = match t.percentiles() {
            Some([a, b, c]) => format!("{} / {} / {}", short(a), short(b), short(c)),
            None => "-".to_owned(),
        };
        row(&mut s, "latency p50 / p95 / p99", lat);
        row(&mut s, "wall time", short(self.wall));
        self.render_notes(&mut s);
        s
    }

    /// The process exit status of a run that got to its end or was interrupted.
    pub fn exit_code(&self) -> u8 {
        if self.interrupted {
            exit::INTERRUPTED
        } else if self.tally.bad > 0 {
            exit::BAD_INPUT
        } else {
            exit::OK
        }
    }

    /// The sentences under the table: failing endpoints, lines that gave up on them,
    /// bad input, and how to run the failed lines again.
    fn render_notes(&self, s: &mut String) {
        let t = &self.tally;
        for e in self.endpoints.iter() {
            if let Some(d) = e.failing_for {
                let _ = writeln!(
                    s,
                    "steadfast: endpoint {} has been failing for {} (no success since its \
                     first failure)",
                    e.name,
                    short(d)
                );
            }
        }
        let unavailable = t.unavailable();
        if unavailable > 0 {
            let reasons: Vec<String> = unavailable_reasons()
                .iter()
                .filter_map(|r| t.reasons.get(*r).map(|n| format!("{r} {n}")))
                .collect();
            let _ = write!(
                s,
                "steadfast: {unavailable} lines failed fast on an unavailable endpoint ({})",
                reasons.join(", ")
            );
            let _ = match self.max_hold {
                Some(h) => writeln!(
                    s,
                    ": held lines stop waiting once an endpoint has failed for --max-hold {}",
                    short(h)
                ),
                None => writeln!(s),
            };
        }
        if t.bad > 0 {
            let _ = writeln!(
                s,
                "steadfast: {} input lines are not requests; each has a bad_input line in the \
                 output (exit status {})",
                t.bad,
                exit::BAD_INPUT
            );
        }
        if t.failed_total() == 0 {
            return;
        }
        let _ = match &self.dead_letter {
            Some(d) => {
                let d = d.display();
                writeln!(
                    s,
                    "steadfast: the failed lines are in {d} with their requests; to run them \
                     again, rerun with --input {d} --output {d}.out.jsonl"
                )
            }
            None => writeln!(
                s,
                "steadfast: add --dead-letter FILE to collect the failed lines for a rerun"
            ),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::record::{Ending, ErrorInfo, Finished, Key};
    use crate::batch::status::BreakerView;

    #[test]
    fn counts_and_percentiles() {
        let mut t = Tally::default();
        for i in 1..=100u64 {
            let f = Finished {
                key: Key::Id(i.to_string()),
                ending: if i % 10 == 0 {
                    Ending::Failed(ErrorInfo::bad_input("x".into()))
                } else {
                    Ending::Ok(serde_json::Value::Null, None)
                },
                attempts: 2,
                request: None,
                bad: None,
            };
            t.on_finished(&f.encode(false), Some(Duration::from_millis(i)));
        }
        assert_eq!((t.ok, t.failed_total(), t.attempts), (90, 10, 200));
        let [p50, p95, p99] = t.percentiles().unwrap();
        assert_eq!(p50, Duration::from_millis(50));
        assert_eq!(p95, Duration::from_millis(95));
        assert_eq!(p99, Duration::from_millis(99));
        let mut s = Summary {
            tally: t,
            metrics: MetricsSnapshot::default(),
            wall: Duration::from_millis(1500),
            interrupted: false,
            endpoints: Vec::new(),
            max_hold: None,
            dead_letter: None,
        };
        let text = s.render();
        assert!(text.contains("100 lines in 1.5s"), "{text}");
        assert!(text.contains("bad_input (request)"), "{text}");
        assert!(text.contains("50ms / 95ms / 99ms"), "{text}");
        assert!(text.contains("add --dead-letter FILE"), "{text}");
        assert_eq!(s.exit_code(), exit::OK);
    }

    #[test]
    fn a_dead_endpoint_is_named_with_the_lines_that_failed_fast() {
        let mut t = Tally::default();
        for (i, reason) in [
            "breaker_open",
            "breaker_open",
            "budget_exhausted",
            "retries_exhausted",
        ]
        .into_iter()
        .enumerate()
        {
            let mut info = ErrorInfo::bad_input(String::new());
            info.class = "server_error".into();
            info.reason = Some(reason.into());
            let f = Finished {
                key: Key::Id(i.to_string()),
                ending: Ending::Failed(info),
                attempts: 1,
                request: None,
                bad: None,
            };
            t.on_finished(&f.encode(false), None);
        }
        assert_eq!(t.unavailable(), 3);
        t.bad = 2;
        let mut s = Summary {
            tally: t,
            metrics: MetricsSnapshot::default(),
            wall: Duration::from_secs(31),
            interrupted: false,
            endpoints: vec![EndpointStatus {
                name: "openai".into(),
                failing_for: Some(Duration::from_millis(30_412)),
                breaker: BreakerView::HalfOpen,
            }],
            max_hold: Some(Duration::from_secs(30)),
            dead_letter: Some(PathBuf::from("dead.jsonl")),
        };
        let text = s.render();
        for line in [
            "steadfast: endpoint openai has been failing for 30.412s (no success since its first failure)",
            "steadfast: 3 lines failed fast on an unavailable endpoint (breaker_open 2, \
             budget_exhausted 1): held lines stop waiting once an endpoint has failed for \
             --max-hold 30s",
            "steadfast: 2 input lines are not requests; each has a bad_input line in the output \
             (exit status 3)",
            "steadfast: the failed lines are in dead.jsonl with their requests; to run them \
             again, rerun with --input dead.jsonl --output dead.jsonl.out.jsonl",
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
        }
        assert_eq!(s.exit_code(), exit::BAD_INPUT);
        s.interrupted = true;
        assert_eq!(s.exit_code(), exit::INTERRUPTED);
    }
}
