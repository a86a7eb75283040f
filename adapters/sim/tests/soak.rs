//! Bounded memory over long runs: a mixed scenario (flaky, with key cooldowns and
//! recurring outages) runs through the real engine without keeping a log
//! ([`steadfast_sim::run_tally`]), and the process's resident memory is sampled as the
//! calls finish. After warm-up it must stay flat.
//!
//! RSS is read from `/proc/self/status` (`VmRSS`, in KiB; Linux only: elsewhere the
//! tests say so and pass). The tests in this file share one process, so they run one
//! at a time. `soak_one_million_calls` is `#[ignore]`d (about 7 s in debug, under 1 s
//! in release): `cargo test -p steadfast-sim --release --test soak -- --ignored
//! --nocapture`.

use std::sync::Mutex;
use std::time::Duration;

use steadfast_core::policy::Policy;
use steadfast_sim::scenario::Outage;
use steadfast_sim::{Scenario, Tally, builtin, run_tally};

const SEED: u64 = 0x50a4;
const KIB_PER_MIB: u64 = 1024;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The resident set size in KiB.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `flaky` (429s with Retry-After that cool keys down, 5xx, 529, timeouts, resets,
/// malformed bodies) with three keys, and a 30 s outage (503) every eighth of the run.
fn soak_scenario(calls: u64) -> Scenario {
    let mut s = builtin::scenario("flaky").expect("flaky");
    s.name = "soak".to_owned();
    s.load.calls = calls;
    let e = &mut s.endpoints[0];
    e.keys = 3;
    let span = calls as f64 / s.load.rate;
    e.outages = (1..8)
        .map(|i| {
            let start = Duration::from_secs_f64(span * f64::from(i) / 8.0);
            Outage {
                status: Some(503),
                ..Outage::status(start, start + Duration::from_secs(30))
            }
        })
        .collect();
    s
}

/// One sample: the tally at a mark and the RSS then.
struct Sample {
    tally: Tally,
    rss_kib: u64,
}

/// Runs `calls` calls, sampling RSS every twentieth of them.
fn soak(calls: u64) -> Vec<Sample> {
    let scenario = soak_scenario(calls);
    let mut samples = Vec::with_capacity(16);
    let tally = run_tally(&scenario, &Policy::default(), SEED, calls / 20, |t| {
        samples.push(Sample {
            tally: *t,
            rss_kib: rss_kib().unwrap_or(0),
        });
    })
    .expect("the soak runs");
    assert_eq!(tally.finished, calls, "seed {SEED:#x}");
    println!("seed {SEED:#x}: {calls} calls");
    println!("  done   virtual-time  requests   success  breaker  keys  queued  RSS MiB");
    for s in &samples {
        let t = &s.tally;
        println!(
            "  {:>4}%  {:>10.0} s  {:>9}  {:>7.3}%  {:>7}  {:>4}  {:>6}  {:>7.1}",
            t.finished * 100 / calls,
            t.now.as_nanos() as f64 / 1e9,
            t.requests,
            t.succeeded as f64 * 100.0 / t.finished.max(1) as f64,
            t.breaker_transitions,
            t.key_events,
            t.queued,
            s.rss_kib as f64 / KIB_PER_MIB as f64,
        );
    }
    assert_eq!(tally.dropped_events, 0, "the driver drains every event");
    assert!(
        tally.key_events > 0 && tally.breaker_transitions > 0,
        "a mixed run"
    );
    samples
}

/// RSS growth, in KiB, from the sample at 25% of `calls` to the last one.
fn growth_after_warm_up(samples: &[Sample], calls: u64) -> i64 {
    let quarter = samples
        .iter()
        .find(|s| s.tally.finished >= calls / 4)
        .expect("a sample at 25%");
    let last = samples.last().expect("a last sample");
    last.rss_kib as i64 - quarter.rss_kib as i64
}

#[test]
fn the_meter_sees_an_allocation() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(before) = rss_kib() else {
        println!("no /proc/self/status: RSS cannot be measured here");
        return;
    };
    // Above glibc's largest mmap threshold (32 MiB), so the block is fresh pages and
    // never heap memory an earlier test freed but the allocator kept resident.
    let block = vec![1u8; 64 << 20];
    let after = rss_kib().expect("rss");
    assert!(
        after >= before + 48 * KIB_PER_MIB,
        "{before} KiB -> {after} KiB"
    );
    drop(block);
}

/// The control: the same run keeping its log ([`steadfast_sim::run`]) holds memory
/// in proportion to its calls, and the meter sees it.
#[test]
fn a_logged_run_grows_with_its_calls() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(before) = rss_kib() else {
        println!("no /proc/self/status: RSS cannot be measured here");
        return;
    };
    let run =
        steadfast_sim::run(&soak_scenario(100_000), &Policy::default(), SEED).expect("the run");
    let after = rss_kib().expect("rss");
    println!(
        "a logged run of {} calls, {} requests: RSS {before} KiB -> {after} KiB",
        run.calls.len(),
        run.requests.len()
    );
    assert!(
        after >= before + 5 * KIB_PER_MIB,
        "{before} KiB -> {after} KiB"
    );
}

#[test]
fn memory_is_flat_over_100k_calls() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if rss_kib().is_none() {
        println!("no /proc/self/status: RSS cannot be measured here");
        return;
    }
    let samples = soak(100_000);
    let growth = growth_after_warm_up(&samples, 100_000);
    println!("RSS growth after warm-up: {growth} KiB");
    assert!(
        growth < 5 * KIB_PER_MIB as i64,
        "RSS grew {growth} KiB after warm-up"
    );
}

#[test]
#[ignore = "a long soak; run with --ignored (release recommended)"]
fn soak_one_million_calls() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if rss_kib().is_none() {
        println!("no /proc/self/status: RSS cannot be measured here");
        return;
    }
    let samples = soak(1_000_000);
    let growth = growth_after_warm_up(&samples, 1_000_000);
    println!("RSS growth after warm-up: {growth} KiB");
    assert!(
        growth < 5 * KIB_PER_MIB as i64,
        "RSS grew {growth} KiB after warm-up"
    );
}
