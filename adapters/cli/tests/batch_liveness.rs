//! A batch ends, and waits only as long as it should: a dead provider ends the run with
//! every line failed once (and a rerun of the dead letters picks them up), a short
//! outage is waited out. Against `steadfast mock` processes on 127.0.0.1, counted
//! through their `GET /__stats`. No assertion is about time: the guards only stop a
//! hang.

mod support;

use std::time::Duration;

use support::*;

/// Longer than any of these runs can take unless something hangs.
const GUARD: Duration = Duration::from_secs(240);

fn batch_guarded(base: &str, args: &[&str]) -> Run {
    let mut all = vec!["batch", "--base-url", base, "--api-key-env", KEY_VAR];
    all.extend_from_slice(args);
    steadfast_guarded(&all, &[(KEY_VAR, "sk-test-key")], GUARD)
}

#[test]
fn a_dead_provider_ends_the_batch_and_the_dead_letters_rerun() {
    let tmp = Tmp::new("deadprovider");
    // Every request gets 503 for an hour.
    let down = MockProcess::start(&["--scenario", "outage", "--outage-for", "1h"]);
    let input = tmp.write("in.jsonl", &prompts("d", 60));
    let (out, dead) = (tmp.p("out.jsonl"), tmp.p("dead.jsonl"));
    let run = batch_guarded(
        &down.base,
        &[
            "--input",
            &input,
            "--output",
            &out,
            "--dead-letter",
            &dead,
            "--max-attempts",
            "4",
            "--concurrency",
            "4",
            "--progress-every",
            "1s",
            "--seed",
            "2",
        ],
    )
    .ok();
    let e = &run.stderr;
    let r = results(&tmp.path("out.jsonl"));
    assert_eq!(r.len(), 60, "every line failed exactly once");
    assert!(r.values().all(|l| l["ok"] == false), "{r:?}");
    assert_eq!(tmp.read("dead.jsonl").lines().count(), 60);
    let stats = down.stats();
    println!(
        "dead provider: {} requests\n{e}",
        stat(&stats, "total_requests")
    );
    assert!(stat(&stats, "total_requests") < 120, "{stats}");
    // Most lines never waited: they failed fast once the endpoint had failed for
    // --max-hold, and the summary says which endpoint, for how long, and what to do.
    let fast: u64 = e
        .lines()
        .find_map(|l| {
            l.strip_prefix("steadfast: ")?
                .split_once(" lines failed fast")
        })
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no lines failed fast:\n{e}"));
    assert!(fast > 0 && fast <= 60, "{e}");
    assert!(
        e.contains("steadfast: endpoint openai has been failing for "),
        "{e}"
    );
    assert!(
        e.contains("lines failed fast on an unavailable endpoint (breaker_open"),
        "{e}"
    );
    assert!(e.contains("--max-hold 30s"), "{e}");
    assert!(
        e.contains(&format!(
            "rerun with --input {dead} --output {dead}.out.jsonl"
        )),
        "{e}"
    );
    // While lines were held, the progress line said what they waited for.
    assert!(
        e.lines()
            .any(|l| l.contains("; openai: failing for ") && l.contains("breaker open")),
        "{e}"
    );

    // The provider is back: the dead letters, as input, all succeed.
    let up = MockProcess::start(&["--scenario", "ok"]);
    batch_guarded(&up.base, &["--input", &dead, "-q"]).ok();
    all_ok(&tmp.path("dead.jsonl.out.jsonl"), "d", 60);
    assert_eq!(stat(&up.stats(), "processed"), 60);
}

#[test]
fn a_five_second_outage_is_waited_out() {
    let tmp = Tmp::new("shortoutage");
    let s = MockProcess::start(&["--scenario", "outage", "--outage-for", "5s"]);
    let input = tmp.write("in.jsonl", &prompts("o", 60));
    let out = tmp.p("out.jsonl");
    // The batch preset's own attempts: with 4, the first lines can spend them all
    // before 20 calls trip the breaker (2 of 60 did, measured), and fail.
    let run = batch_guarded(
        &s.base,
        &[
            "--input",
            &input,
            "--output",
            &out,
            "--concurrency",
            "4",
            "--seed",
            "3",
            "-q",
        ],
    )
    .ok();
    all_ok(&tmp.path("out.jsonl"), "o", 60);
    let stats = s.stats();
    println!(
        "short outage: {} requests, {} of them 503\n{}",
        stat(&stats, "total_requests"),
        stats["by_status"]["503"],
        run.stderr
    );
    assert!(stats["by_status"]["503"].as_u64() > Some(0), "{stats}");
    assert!(stat(&stats, "total_requests") < 120, "{stats}");
    let keys = stats["keys"].as_object().expect("keys");
    assert_eq!(keys.len(), 60);
    assert!(keys.values().all(|k| k["processed"].as_u64() <= Some(1)));
}

/// Issue 12, case 1: a burst on the `standard` preset is paced by the server's
/// rate-limit headers instead of failing: 200 lines against 600 a minute with a burst
/// of 20 all succeed, in one first wave of 200 and one paced request each for the 180
/// the server refused (a perfect client with no configured rate sends 380).
#[test]
fn a_standard_burst_against_a_rate_limit_is_paced_not_failed() {
    let tmp = Tmp::new("burst");
    let s = MockProcess::start(&["--scenario", "ratelimit", "--rpm", "600", "--burst", "20"]);
    let input = tmp.write("in.jsonl", &prompts("b", 200));
    let config = tmp.write("standard.toml", "preset = \"standard\"\n");
    let out = tmp.p("out.jsonl");
    batch_guarded(
        &s.base,
        &[
            "--input",
            &input,
            "--output",
            &out,
            "--config",
            &config,
            "--concurrency",
            "200",
            "-q",
        ],
    )
    .ok();
    all_ok(&tmp.path("out.jsonl"), "b", 200);
    let stats = s.stats();
    assert!(stat(&stats, "total_requests") <= 420, "{stats}");
    assert_eq!(stat(&stats, "early"), 0, "{stats}");
}
