//! Exactly once across crashes: `steadfast batch` killed with SIGKILL at seeded random
//! moments, then rerun with the same arguments, until it finishes. The mock server
//! lives in the test, so its per-key counters outlive every batch process.

mod support;

use std::io::Write;
use std::time::Duration;

use support::*;

/// A small seeded generator (splitmix64), so the kill moments replay.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn args<'a>(
    base: &'a str,
    input: &'a str,
    out: &'a str,
    dead: &'a str,
    config: &'a str,
) -> Vec<&'a str> {
    vec![
        "batch",
        "--base-url",
        base,
        "--api-key-env",
        KEY_VAR,
        "--input",
        input,
        "--output",
        out,
        "--dead-letter",
        dead,
        "--config",
        config,
        "--concurrency",
        "8",
        "--seed",
        "1",
    ]
}

#[test]
fn sigkill_at_random_moments_then_rerun_gives_each_id_exactly_once() {
    let seed = 0x5eed_0001_u64;
    println!("kill seed {seed:#x}");
    let mut rng = Rng(seed);
    let tmp = Tmp::new("sigkill");
    const N: usize = 150;
    let s = server("slow", 21, |c| {
        c.knobs.latency_min = Some(Duration::from_millis(20));
        c.knobs.latency_max = Some(Duration::from_millis(120));
    });
    let input = tmp.write("in.jsonl", &prompts("k", N));
    let config = tmp.write("fast.toml", FAST);
    let (out, dead) = (tmp.p("out.jsonl"), tmp.p("dead.jsonl"));
    let base = s.base_url();
    let argv = args(&base, &input, &out, &dead, &config);
    let mut kills = 0;
    for round in 0..5 {
        let mut child = command(&argv, &[(KEY_VAR, "sk-test-key")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        let delay = Duration::from_millis(80 + rng.below(400));
        std::thread::sleep(delay);
        let done = child.try_wait().expect("wait").is_some();
        if !done {
            child.kill().expect("SIGKILL");
            kills += 1;
        }
        let _ = child.wait();
        let lines = results(&tmp.path("out.jsonl")).len();
        println!("round {round}: killed after {delay:?}: {lines} lines so far");
        // Now and then, tear the last line of the output and of the journal the way a
        // write cut short leaves it; the rerun must repair both.
        if round % 2 == 1 {
            for name in ["out.jsonl", "out.jsonl.journal"] {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(tmp.path(name))
                    .expect("exists");
                f.write_all(b"{\"id\":\"k-1\",\"ok\":tr").expect("tear");
            }
        }
    }
    assert!(kills >= 3, "the batch finished before it could be killed");
    let run = steadfast(&argv, &[(KEY_VAR, "sk-test-key")]).ok();
    println!("{}", run.stderr);
    all_ok(&tmp.path("out.jsonl"), "k", N);
    // The journal names each id once, the same set.
    let journal = tmp.read("out.jsonl.journal");
    let mut ids: Vec<&str> = journal
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("journal line");
            assert_eq!(v["ok"], true);
            &l[7..l.find("\",").expect("id")]
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), N);
    assert_eq!(tmp.read("dead.jsonl"), "", "no line failed");
    // Whatever the moment of death, no line's work was done twice.
    at_most_once(&s, "k", N);
}

#[test]
fn sigint_stops_cleanly_and_a_rerun_finishes() {
    let tmp = Tmp::new("sigint");
    const N: usize = 120;
    let s = server("slow", 22, |c| {
        c.knobs.latency_min = Some(Duration::from_millis(50));
        c.knobs.latency_max = Some(Duration::from_millis(150));
    });
    let input = tmp.write("in.jsonl", &prompts("i", N));
    let config = tmp.write("fast.toml", FAST);
    let (out, dead) = (tmp.p("out.jsonl"), tmp.p("dead.jsonl"));
    let base = s.base_url();
    let argv = args(&base, &input, &out, &dead, &config);
    let mut child = command(&argv, &[(KEY_VAR, "sk-test-key")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Wait until some lines are durable, then interrupt.
    let started = std::time::Instant::now();
    let durable = || tmp.read("out.jsonl").matches('\n').count();
    while durable() < 10 {
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("no progress");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("rerun the same command"), "{stderr}");
    let partial = results(&tmp.path("out.jsonl")).len();
    assert!(partial < N, "the interrupt came too late to test anything");
    steadfast(&argv, &[(KEY_VAR, "sk-test-key")]).ok();
    all_ok(&tmp.path("out.jsonl"), "i", N);
    at_most_once(&s, "i", N);
}
