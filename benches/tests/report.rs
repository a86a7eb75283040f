//! The README table is built from criterion's estimates as documented: per-run
//! medians, the median of the runs, ratios taken run by run, targets judged.

use std::fs;
use std::path::{Path, PathBuf};

use steadfast_bench::report::{self, median};
use steadfast_bench::{Case, Target, breaker, engine, limiter};

/// A fresh directory for one test's fake criterion output.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("steadfast-bench-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

fn write_estimate(dir: &Path, group: &str, name: &str, median_ns: f64) {
    let path = dir.join(group).join(name).join("new");
    fs::create_dir_all(&path).unwrap();
    let json = format!(
        r#"{{"mean":{{"point_estimate":{m}}},"median":{{"point_estimate":{m},"standard_error":0.1}}}}"#,
        m = median_ns
    );
    fs::write(path.join("estimates.json"), json).unwrap();
}

#[test]
fn median_of_odd_even_and_empty() {
    assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
    assert_eq!(median(vec![]), None);
}

#[test]
fn a_missing_estimate_is_none_and_a_broken_one_an_error() {
    let dir = scratch("missing");
    let case = Case {
        group: breaker::SUCCESS.id,
        name: "steadfast",
    };
    assert!(report::median_ns(&dir, case).unwrap().is_none());
    let path = dir.join(case.group).join(case.name).join("new");
    fs::create_dir_all(&path).unwrap();
    fs::write(path.join("estimates.json"), "{not json").unwrap();
    assert!(report::median_ns(&dir, case).is_err());
    fs::write(path.join("estimates.json"), r#"{"median":{}}"#).unwrap();
    assert!(report::median_ns(&dir, case).is_err());
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn rows_take_per_run_ratios_and_judge_targets() {
    let runs = [scratch("run-a"), scratch("run-b"), scratch("run-c")];
    let g = breaker::SUCCESS.id;
    // Run by run: steadfast 4, 4.5, 9 ns; recloser 10, 10, 20; failsafe slower.
    for (dir, (s, r)) in runs.iter().zip([(4.0, 10.0), (4.5, 10.0), (9.0, 20.0)]) {
        write_estimate(dir, g, "steadfast", s);
        write_estimate(dir, g, "recloser", r);
        write_estimate(dir, g, "failsafe_consecutive", 3.0 * r);
        // The engine round counts three rounds per iteration.
        write_estimate(dir, engine::ROUND.id, "steadfast", 150.0);
    }
    let rows = report::rows(&runs, &[]).unwrap();
    let row = rows.iter().find(|r| r.group.id == g).unwrap();
    let s = row.steadfast.as_ref().unwrap();
    assert_eq!(s.median_ns, Some(4.5));
    assert_eq!(row.best_peer().unwrap().case.name, "recloser");
    // Ratios 0.4, 0.45, 0.45: their median, not 4.5 / 10.
    assert_eq!(row.ratio(), Some(0.45));
    assert_eq!(
        breaker::SUCCESS.target,
        Target::Peer {
            ratio: 0.5,
            ns: 5.0,
            against: None,
        }
    );
    assert_eq!(row.meets_target(), Some(true));

    let round = rows
        .iter()
        .find(|r| r.group.id == engine::ROUND.id)
        .unwrap();
    assert_eq!(round.steadfast.as_ref().unwrap().median_ns, Some(50.0));
    assert_eq!(round.meets_target(), Some(true));

    let table = report::markdown_table(&rows);
    assert!(
        table.contains("| 4.50 | recloser (10.0) | 0.45× |"),
        "{table}"
    );
    let targets = report::targets_table(&rows);
    assert!(targets.contains("≤ 60 ns ✅"), "{targets}");
    assert!(
        targets.contains("≤ 0.5× and ≤ 5 ns ✅ | 4.50 ns, 0.45×"),
        "{targets}"
    );
    for dir in &runs {
        let _ = fs::remove_dir_all(dir);
    }
}

#[test]
fn a_target_naming_a_peer_is_judged_against_that_peer() {
    let runs = [scratch("named")];
    let g = limiter::REJECTED.id;
    write_estimate(&runs[0], g, "steadfast", 1.5);
    write_estimate(&runs[0], g, limiter::GOVERNOR, 9.0);
    write_estimate(&runs[0], g, "governor_fake_clock", 1.0);
    let rows = report::rows(&runs, &[]).unwrap();
    let row = rows.iter().find(|r| r.group.id == g).unwrap();
    // The table's ratio is to the fastest peer; the target's to the one it names.
    assert_eq!(row.best_peer().unwrap().case.name, "governor_fake_clock");
    assert_eq!(row.ratio(), Some(1.5));
    assert_eq!(row.target_peer().unwrap().case.name, limiter::GOVERNOR);
    assert_eq!(row.meets_target(), Some(true));
    let targets = report::targets_table(&rows);
    assert!(
        targets.contains("≤ 0.5× governor and ≤ 3 ns ✅ | 1.50 ns, 0.17×"),
        "{targets}"
    );
    let _ = fs::remove_dir_all(&runs[0]);
}
