//! The README table: criterion's medians (from `target/criterion/<group>/<name>/new/
//! estimates.json`) beside the allocation counts, one row per [`Group`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{fmt, fs, io};

use crate::alloc_count::AllocRow;
use crate::{Case, GROUPS, Group, Target, Visitor, Workload};

/// Why an estimates file could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReportError {
    /// The file exists but could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The file is not criterion's JSON.
    Json {
        /// The file.
        path: PathBuf,
        /// The error.
        source: serde_json::Error,
    },
    /// The JSON has no `median.point_estimate` number.
    NoMedian {
        /// The file.
        path: PathBuf,
    },
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ReportError::Json { path, source } => write!(f, "{}: {source}", path.display()),
            ReportError::NoMedian { path } => {
                write!(f, "{}: no median.point_estimate", path.display())
            }
        }
    }
}

impl std::error::Error for ReportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReportError::Io { source, .. } => Some(source),
            ReportError::Json { source, .. } => Some(source),
            ReportError::NoMedian { .. } => None,
        }
    }
}

/// Where criterion writes: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else
/// the workspace's `target/criterion` (the same order criterion itself follows).
pub fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("criterion")
}

/// The median of one benchmark in nanoseconds per iteration, or `None` if it has not
/// been run.
pub fn median_ns(dir: &Path, case: Case) -> Result<Option<f64>, ReportError> {
    let path = dir
        .join(case.group)
        .join(case.name)
        .join("new")
        .join("estimates.json");
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ReportError::Io { path, source }),
    };
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| ReportError::Json {
            path: path.clone(),
            source,
        })?;
    json.pointer("/median/point_estimate")
        .and_then(serde_json::Value::as_f64)
        .map(Some)
        .ok_or(ReportError::NoMedian { path })
}

/// Every workload's case, in [`crate::visit_all`] order.
pub fn cases() -> Vec<Case> {
    struct Collect(Vec<Case>);
    impl Visitor for Collect {
        fn visit<W: Workload>(&mut self, case: Case, _make: fn() -> W) {
            self.0.push(case);
        }
    }
    let mut c = Collect(Vec::new());
    crate::visit_all(&mut c);
    c.0
}

/// One implementation's figures, per operation (the group's iteration divided by
/// [`Group::per_iteration`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Which.
    pub case: Case,
    /// Each run's median, in nanoseconds per operation (`None` where a run lacks it).
    pub runs: Vec<Option<f64>>,
    /// The median of [`Measured::runs`], if any run measured it.
    pub median_ns: Option<f64>,
    /// Allocations per operation, if counted.
    pub allocs: Option<f64>,
}

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Row {
    /// The operation.
    pub group: &'static Group,
    /// Steadfast's figures (absent for the baseline).
    pub steadfast: Option<Measured>,
    /// Every other implementation, in visiting order.
    pub peers: Vec<Measured>,
}

impl Row {
    /// The peer with the lowest median.
    pub fn best_peer(&self) -> Option<&Measured> {
        self.peers
            .iter()
            .filter(|m| m.median_ns.is_some())
            .min_by(|a, b| {
                a.median_ns
                    .partial_cmp(&b.median_ns)
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
    }

    /// Steadfast's time over the best peer's: the median over the runs of each run's
    /// ratio (both measured in the same run, so a run on a busier machine moves
    /// both).
    pub fn ratio(&self) -> Option<f64> {
        self.ratio_to(self.best_peer()?)
    }

    /// Steadfast's time over `peer`'s, as [`Row::ratio`] takes it.
    pub fn ratio_to(&self, peer: &Measured) -> Option<f64> {
        let s = self.steadfast.as_ref()?;
        let ratios = s
            .runs
            .iter()
            .zip(&peer.runs)
            .filter_map(|(s, p)| match (s, p) {
                (Some(s), Some(p)) if *p > 0.0 => Some(s / p),
                _ => None,
            })
            .collect();
        median(ratios)
    }

    /// The peer the group's target is set against: the one it names, else the
    /// fastest.
    pub fn target_peer(&self) -> Option<&Measured> {
        match self.group.target {
            Target::Peer {
                against: Some(name),
                ..
            } => self.peers.iter().find(|m| m.case.name == name),
            _ => self.best_peer(),
        }
    }

    /// Steadfast's ratio to [`Row::target_peer`].
    pub fn target_ratio(&self) -> Option<f64> {
        self.ratio_to(self.target_peer()?)
    }

    /// Whether steadfast meets the group's target (`None` without a target or data).
    pub fn meets_target(&self) -> Option<bool> {
        let s = self.steadfast.as_ref()?.median_ns?;
        match self.group.target {
            Target::None => None,
            Target::Absolute { ns } => Some(s <= ns),
            Target::Peer { ratio, ns, .. } => Some(self.target_ratio()? <= ratio && s <= ns),
        }
    }
}

/// The median of some values; `None` for none.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => values.get(n / 2).copied(),
        _ => match (values.get(n / 2 - 1), values.get(n / 2)) {
            (Some(a), Some(b)) => Some((a + b) / 2.0),
            _ => None,
        },
    }
}

/// Builds the rows from the criterion results in `dirs` (one directory per run; the
/// median of the runs' medians is used) and the allocation counts.
pub fn rows(dirs: &[PathBuf], allocs: &[AllocRow]) -> Result<Vec<Row>, ReportError> {
    let cases = cases();
    let mut rows = Vec::new();
    for group in GROUPS {
        let per = f64::from(group.per_iteration.max(1));
        let mut row = Row {
            group,
            steadfast: None,
            peers: Vec::new(),
        };
        for case in cases.iter().filter(|c| c.group == group.id) {
            let mut runs = Vec::with_capacity(dirs.len());
            for dir in dirs {
                runs.push(median_ns(dir, *case)?.map(|m| m / per));
            }
            let measured = Measured {
                case: *case,
                median_ns: median(runs.iter().flatten().copied().collect()),
                runs,
                allocs: allocs
                    .iter()
                    .find(|a| a.case == *case)
                    .map(|a| a.per_iteration / per),
            };
            if case.is_steadfast() {
                row.steadfast = Some(measured);
            } else {
                row.peers.push(measured);
            }
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Nanoseconds with a precision that suits their size.
pub fn ns(v: Option<f64>) -> String {
    match v {
        None => "—".to_owned(),
        Some(v) if v < 10.0 => format!("{v:.2}"),
        Some(v) if v < 100.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.0}"),
    }
}

fn allocs(v: Option<f64>) -> String {
    match v {
        None => "—".to_owned(),
        Some(0.0) => "0".to_owned(),
        Some(v) => format!("{v:.2}"),
    }
}

fn target(row: &Row) -> String {
    let text = match row.group.target {
        Target::None => return String::new(),
        Target::Absolute { ns } => format!("≤ {ns} ns"),
        Target::Peer { ratio, ns, against } => {
            let peer = against.map_or_else(String::new, |name| format!(" {name}"));
            if ns.is_finite() {
                format!("≤ {ratio}×{peer} and ≤ {ns} ns")
            } else {
                format!("≤ {ratio}×{peer}")
            }
        }
    };
    match row.meets_target() {
        Some(true) => format!("{text} ✅"),
        Some(false) => format!("{text} ❌"),
        None => text,
    }
}

/// The README table: operation | steadfast median | best peer | ratio | allocs.
pub fn markdown_table(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str(
        "| operation | steadfast median (ns) | best peer (median ns) | ratio | allocs/op (steadfast; peer) |\n\
         |---|---:|---|---:|---|\n",
    );
    for row in rows {
        let s = row.steadfast.as_ref();
        let best = row.best_peer();
        let peer = best.map_or_else(
            || "— (no peer)".to_owned(),
            |b| format!("{} ({})", b.case.name, ns(b.median_ns)),
        );
        let ratio = row
            .ratio()
            .map_or_else(|| "—".to_owned(), |r| format!("{r:.2}×"));
        let alloc = match best {
            Some(b) => format!("{}; {}", allocs(s.and_then(|m| m.allocs)), allocs(b.allocs)),
            None => allocs(s.and_then(|m| m.allocs)),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            row.group.label,
            ns(s.and_then(|m| m.median_ns)),
            peer,
            ratio,
            alloc,
        );
    }
    out
}

/// The groups that have a target, and whether steadfast meets it.
pub fn targets_table(rows: &[Row]) -> String {
    let mut out = String::from("| operation | target | steadfast |\n|---|---|---|\n");
    for row in rows.iter().filter(|r| r.group.target != Target::None) {
        let measured = match (
            row.steadfast.as_ref().and_then(|m| m.median_ns),
            row.target_ratio(),
        ) {
            (Some(s), Some(r)) => format!("{} ns, {r:.2}×", ns(Some(s))),
            (Some(s), None) => format!("{} ns", ns(Some(s))),
            _ => "—".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {measured} |",
            row.group.label,
            target(row)
        );
    }
    out
}

/// Every implementation's median and allocations, group by group.
pub fn detail_table(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str(
        "| group | implementation | median ns/op | each run | allocs/op |\n|---|---|---:|---|---:|\n",
    );
    for row in rows {
        for m in row.steadfast.iter().chain(&row.peers) {
            let runs: Vec<String> = m.runs.iter().map(|r| ns(*r)).collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                row.group.id,
                m.case.name,
                ns(m.median_ns),
                runs.join(" / "),
                allocs(m.allocs),
            );
        }
    }
    out
}
