//! The README's first command: the committed example against the in-process flaky mock,
//! with no key and no network, as on a fresh machine.

mod support;

use support::*;

#[test]
fn the_example_batch_runs_without_a_key() {
    let tmp = Tmp::new("readme");
    let input = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/prompts.jsonl");
    let out = tmp.p("prompts.out.jsonl");
    // The README's command, with the output kept out of the source tree and a fixed
    // seed (for the mock's draws and the client's jitter).
    println!("seed 1");
    let run = steadfast(
        &[
            "batch", "--input", input, "--mock", "flaky", "--output", &out, "--seed", "1",
        ],
        &[],
    )
    .ok();
    let r = results(&tmp.path("prompts.out.jsonl"));
    assert_eq!(r.len(), 200);
    assert!(r.values().all(|l| l["ok"] == true), "every line succeeds");
    assert!(
        run.stderr.contains("steadfast batch: done: 200 lines"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("latency p50 / p95 / p99"));
    assert!(summary_figure(&run.stderr, "retries") > 0);
    assert!(run.stdout.is_empty(), "results go only to the output file");
}
