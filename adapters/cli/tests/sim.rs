//! `steadfast sim` as a user runs it: the real binary, its stdout, stderr and exit code.

use std::path::PathBuf;
use std::process::{Command, Output};

fn steadfast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(args: &[&str]) -> String {
    let out = steadfast(args);
    assert!(
        out.status.success(),
        "steadfast {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn failure(args: &[&str]) -> String {
    let out = steadfast(args);
    assert!(!out.status.success(), "steadfast {args:?} should fail");
    assert!(out.stdout.is_empty(), "nothing on stdout when failing");
    String::from_utf8(out.stderr).expect("utf-8")
}

/// A scratch directory of this test binary's own.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("steadfast-cli-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn write(name: &str, text: &str) -> String {
    let path = scratch(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

#[test]
fn text_report_shows_the_figures() {
    let out = stdout(&[
        "sim",
        "--scenario",
        "outage",
        "--calls",
        "600",
        "--seed",
        "3",
    ]);
    assert!(out.starts_with("steadfast sim: scenario outage, policy default, seed 3\n"));
    for needle in [
        "succeeded",
        "ratio",
        "makespan",
        "latency mean",
        "attempts per call",
        "amplification",
        "latency p99",
        "breaker transitions",
        "closed -> open",
        "upstream requests per second",
    ] {
        assert!(out.contains(needle), "no `{needle}` in:\n{out}");
    }
    // The standard preset fails fast in the outage, where a perfect client holds.
    let rate = out
        .lines()
        .find(|l| l.starts_with("success rate"))
        .unwrap_or_else(|| panic!("no success rate in:\n{out}"));
    let cells: Vec<&str> = rate.split_whitespace().collect();
    assert_eq!(cells.get(3), Some(&"100.00%"), "{rate}");
}

#[test]
fn json_report_has_a_stable_key_order() {
    let out = stdout(&["sim", "--scenario", "flaky", "--calls", "300", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(v["calls"], 300);
    assert_eq!(v["scenario"], "flaky");
    let keys: Vec<usize> = [
        "\"scenario\"",
        "\"policy\"",
        "\"seed\"",
        "\"calls\"",
        "\"success_rate\"",
        "\"give_ups\"",
        "\"amplification\"",
        "\"latency_ms\"",
        "\"makespan_s\"",
        "\"ideal\"",
        "\"vs_ideal\"",
        "\"breaker_transitions\"",
        "\"keys\"",
        "\"timeline\"",
    ]
    .iter()
    .map(|k| out.find(k).unwrap_or_else(|| panic!("no {k}")))
    .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    let ideal = &v["ideal"];
    assert_eq!(ideal["success_rate"], 1.0);
    assert!(
        ideal["upstream_requests"]
            .as_f64()
            .is_some_and(|n| n > 300.0)
    );
    assert!(ideal["latency_ms"]["p99"].is_number());
    assert!(v["vs_ideal"]["upstream_requests"].is_number());
    // The ideal median of instant answers is zero: no ratio.
    assert!(v["vs_ideal"]["latency_p50"].is_null());
}

#[test]
fn same_arguments_same_bytes_and_seeds_differ() {
    let a = [
        "sim",
        "--scenario",
        "flaky",
        "--calls",
        "400",
        "--seed",
        "9",
    ];
    assert_eq!(stdout(&a), stdout(&a));
    let j = ["sim", "--scenario", "flaky", "--calls", "400", "--json"];
    assert_eq!(stdout(&j), stdout(&j));
    let other = stdout(&[
        "sim",
        "--scenario",
        "flaky",
        "--calls",
        "400",
        "--seed",
        "10",
    ]);
    assert_ne!(stdout(&a), other);
}

#[test]
fn svg_is_written_and_deterministic() {
    let (p1, p2) = (scratch("a.svg"), scratch("b.svg"));
    for p in [&p1, &p2] {
        let path = p.display().to_string();
        stdout(&[
            "sim",
            "--scenario",
            "outage",
            "--calls",
            "500",
            "--svg",
            &path,
        ]);
    }
    let svg = std::fs::read_to_string(&p1).expect("svg written");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("scenario outage"), "title");
    assert!(svg.contains("give-ups"), "give-up lane");
    assert!(svg.contains("half-open"), "legend");
    assert_eq!(svg, std::fs::read_to_string(&p2).expect("svg"));
}

#[test]
fn compare_mode_marks_better_and_worse() {
    let guarded = write("guarded.toml", "preset = \"standard\"\n");
    let naked = write(
        "naked.toml",
        "[breaker]\nenabled = false\n\n[budget]\nenabled = false\n",
    );
    let args = [
        "sim",
        "--scenario",
        "outage",
        "--calls",
        "900",
        "--config",
        &guarded,
        "--vs",
        &naked,
    ];
    let out = stdout(&args);
    assert!(out.contains("a: guarded"), "{out}");
    assert!(out.contains("b: naked"), "{out}");
    assert!(out.contains("b - a"), "{out}");
    let line = |metric: &str| {
        out.lines()
            .find(|l| l.starts_with(metric))
            .unwrap_or_else(|| panic!("no {metric} in {out}"))
            .to_string()
    };
    assert!(line("requests in outages").ends_with(">> worse"), "{out}");
    for metric in ["ideal success rate", "requests / ideal", "makespan / ideal"] {
        let cells = line(metric);
        let numbers = cells
            .split_whitespace()
            .filter(|c| c.parse::<f64>().is_ok() || c.ends_with('%'));
        assert!(numbers.count() >= 2, "both policies' {metric}: {cells}");
    }
    assert!(line("success rate").ends_with("<< better"), "{out}");
    assert_eq!(out, stdout(&args));
    let json = stdout(&[
        "sim",
        "--scenario",
        "outage",
        "--calls",
        "300",
        "--vs",
        &naked,
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(v["a"]["policy"], "default");
    assert_eq!(v["b"]["policy"], "naked");
    assert!(v["diff"].as_array().is_some_and(|d| !d.is_empty()));
    for side in ["a", "b"] {
        assert!(v[side]["vs_ideal"]["makespan"].is_number(), "{json}");
    }
    let svg = scratch("cmp.svg");
    let path = svg.display().to_string();
    stdout(&[
        "sim",
        "--scenario",
        "outage",
        "--calls",
        "300",
        "--vs",
        &naked,
        "--svg",
        &path,
    ]);
    let svg = std::fs::read_to_string(&svg).expect("svg");
    assert!(svg.contains("policies default vs naked"));
}

#[test]
fn a_printed_scenario_runs_as_a_file_with_the_same_report() {
    let text = stdout(&["sim", "--print-scenario", "ratelimit-storm"]);
    let file = write("storm.toml", &text);
    let from_file = stdout(&["sim", "--scenario", &file, "--calls", "300"]);
    let builtin = stdout(&["sim", "--scenario", "ratelimit-storm", "--calls", "300"]);
    assert_eq!(from_file, builtin);
    let list = stdout(&["sim", "--list"]);
    for name in [
        "steady",
        "flaky",
        "outage",
        "ratelimit-storm",
        "brownout",
        "provider-failover",
        "quota-exhausted-key",
    ] {
        assert!(list.contains(name), "{list}");
    }
}

#[test]
fn a_bad_scenario_file_names_the_field() {
    let text = stdout(&["sim", "--print-scenario", "steady"])
        .replace("rate_429 = 0.002", "rate_429 = 1.5");
    let file = write("bad.toml", &text);
    let err = failure(&["sim", "--scenario", &file]);
    assert!(
        err.contains("endpoints[0].faults.rate_429: 1.5 is outside [0, 1]"),
        "{err}"
    );
    assert!(err.contains("bad.toml"), "names the file: {err}");
    let typo = write(
        "typo.toml",
        &text.replace("rate_429 = 1.5", "rate_492 = 0.1"),
    );
    let err = failure(&["sim", "--scenario", &typo]);
    assert!(err.contains("rate_492"), "{err}");
    let err = failure(&["sim", "--scenario", "no-such-scenario"]);
    assert!(
        err.contains("no built-in scenario named `no-such-scenario`"),
        "{err}"
    );
}

#[test]
fn a_bad_policy_names_the_file_and_the_field() {
    let file = write("policy.toml", "[retry]\nhint_jitter = 3.0\n");
    let err = failure(&["sim", "--scenario", "steady", "--config", &file]);
    assert!(err.contains("policy.toml"), "{err}");
    assert!(
        err.contains("retry.hint_jitter: 3 is outside [0, 1]"),
        "{err}"
    );
    let file = write("preset.toml", "preset = \"speedy\"\n");
    let err = failure(&["sim", "--scenario", "steady", "--config", &file]);
    assert!(err.contains("preset: `speedy` is not a preset"), "{err}");
    let err = failure(&["sim", "--scenario", "steady", "--calls", "0"]);
    assert!(err.contains("load.calls"), "{err}");
}

#[test]
fn a_preset_policy_file_runs() {
    // The scenario's outage lasts 30 s, as long as the default max_hold: calls held
    // from its start would stop holding just as it ends. A longer max_hold waits it out.
    let file = write(
        "batch.toml",
        "preset = \"batch\"\n\n[retry]\nmax_attempts = 6\nmax_hold = \"1m\"\n",
    );
    let out = stdout(&[
        "sim",
        "--scenario",
        "outage",
        "--calls",
        "900",
        "--config",
        &file,
    ]);
    assert!(out.contains("policy batch"), "{out}");
    // The batch preset holds while the breaker is open instead of failing fast.
    assert!(!out.contains("breaker_open"), "{out}");
}

/// Issue #17's case: the scenario and policy of adapters/sim/scenarios.
fn shared_limit_case() -> (String, String) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../sim/scenarios");
    (
        format!("{dir}/shared-limit.toml"),
        format!("{dir}/shared-limit.policy.toml"),
    )
}

/// The cells of the row named `name` in `out`, after its name.
fn row(out: &str, name: &str) -> Vec<String> {
    let line = out
        .lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with("  "))
        .unwrap_or_else(|| panic!("no row {name} in:\n{out}"));
    line[name.len()..]
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn replicas_run_the_three_sharing_modes_side_by_side() {
    let (scenario, policy) = shared_limit_case();
    let args = [
        "sim",
        "--scenario",
        &scenario,
        "--config",
        &policy,
        "--replicas",
        "4",
    ];
    let out = stdout(&args);
    assert!(
        out.starts_with(
            "steadfast sim: scenario shared-limit, policy shared-limit.policy, seed 1: \
             4 replicas, store lag 2 ms\n"
        ),
        "{out}"
    );
    assert_eq!(row(&out, ""), ["local", "shared", "leased", "(8)"], "{out}");
    assert_eq!(row(&out, "succeeded")[1..], ["120", "120"], "{out}");
    let requests: Vec<u64> = row(&out, "upstream requests")
        .iter()
        .map(|c| c.parse().expect("a count"))
        .collect();
    let throttled: Vec<u64> = row(&out, "429s")
        .iter()
        .map(|c| c.parse().expect("a count"))
        .collect();
    println!("seed 1: requests {requests:?}, 429s {throttled:?}");
    assert!(throttled[0] > throttled[1].max(throttled[2]), "{out}");
    for m in [1, 2] {
        assert!(throttled[m] * 10 <= requests[m], "{out}");
    }
    for ratio in &row(&out, "makespan / ideal")[1..] {
        let r: f64 = ratio.parse().expect("a ratio");
        assert!(r <= 1.3, "seed 1: {out}");
    }
    assert_eq!(row(&out, "store asks")[0], "0", "{out}");
    let seeds: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "replica seeds")
        .skip(1)
        .collect();
    assert_eq!(seeds.len(), 4, "{out}");
    assert_eq!(
        seeds[0].split_whitespace().collect::<Vec<_>>(),
        ["0", "1"],
        "replica 0 runs on the run's seed: {out}"
    );
    assert_eq!(out, stdout(&args), "same arguments, same bytes");
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let json = stdout(&json_args);
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(v["replicas"], 4);
    assert_eq!(v["store_lag_ms"], 2.0);
    let modes = v["modes"].as_array().expect("modes");
    let names: Vec<&str> = modes
        .iter()
        .filter_map(|m| m["replicas"]["sharing"].as_str())
        .collect();
    assert_eq!(names, ["local", "shared", "leased"]);
    assert_eq!(modes[2]["replicas"]["per_replica"][0]["seed"], 1);
    assert_eq!(modes[1]["succeeded"], 120);
}

#[test]
fn one_sharing_mode_prints_its_whole_report() {
    let (scenario, policy) = shared_limit_case();
    let args = [
        "sim",
        "--scenario",
        &scenario,
        "--config",
        &policy,
        "--replicas",
        "4",
        "--sharing",
        "leased",
        "--store-lag",
        "10ms",
        "--seed",
        "4",
    ];
    let out = stdout(&args);
    assert!(
        out.starts_with("steadfast sim: scenario shared-limit"),
        "{out}"
    );
    assert!(
        out.contains("breaker transitions"),
        "the whole report: {out}"
    );
    assert!(
        out.contains("\nreplicas: 4, sharing leased (leases of up to 8), store lag 10 ms\n"),
        "{out}"
    );
    for needle in [
        "early requests",
        "store asks",
        "decided locally",
        "never spent",
    ] {
        assert!(out.contains(needle), "no `{needle}` in:\n{out}");
    }
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let v: serde_json::Value = serde_json::from_str(&stdout(&json_args)).expect("valid JSON");
    assert_eq!(v["replicas"]["sharing"], "leased");
    assert_eq!(v["replicas"]["store_lag_ms"], 10.0);
    assert_eq!(
        v["replicas"]["per_replica"].as_array().map(Vec::len),
        Some(4)
    );
    assert_eq!(v["succeeded"], 120);
}

#[test]
fn one_replica_is_the_plain_run_byte_for_byte() {
    for extra in [&[][..], &["--json"][..]] {
        let mut plain = vec![
            "sim",
            "--scenario",
            "flaky",
            "--calls",
            "300",
            "--seed",
            "6",
        ];
        plain.extend_from_slice(extra);
        let mut one = plain.clone();
        one.extend_from_slice(&["--replicas", "1"]);
        let out = stdout(&plain);
        assert_eq!(out, stdout(&one), "seed 6 {extra:?}");
        assert!(!out.contains("replicas"), "no replicas section: {out}");
    }
}

#[test]
fn bad_replica_flags_name_the_flag() {
    let (scenario, policy) = shared_limit_case();
    let base = ["sim", "--scenario", &scenario, "--config", &policy];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        failure(&a)
    };
    let err = with(&["--replicas", "0"]);
    assert!(err.contains("--replicas"), "{err}");
    let err = with(&["--replicas", "many"]);
    assert!(err.contains("--replicas"), "{err}");
    let err = with(&["--replicas", "2", "--sharing", "global"]);
    assert!(err.contains("--sharing"), "{err}");
    assert!(
        err.contains("local") && err.contains("leased"),
        "lists the modes: {err}"
    );
    let err = with(&["--replicas", "2", "--store-lag", "soon"]);
    assert!(err.contains("--store-lag"), "{err}");
    assert!(err.contains("is not a duration"), "{err}");
    let err = with(&["--replicas", "2", "--vs", &policy]);
    assert!(err.contains("--vs"), "{err}");
    // A shared limit needs a request limit in the policy.
    let err = failure(&["sim", "--scenario", &scenario, "--replicas", "2"]);
    assert!(err.contains("--sharing shared"), "{err}");
    assert!(err.contains("limiter.requests"), "{err}");
    let local = stdout(&[
        "sim",
        "--scenario",
        &scenario,
        "--replicas",
        "2",
        "--sharing",
        "local",
    ]);
    assert!(local.contains("replicas: 2, sharing local"), "{local}");
}

#[test]
fn replicas_share_their_breakers_with_shared_breaker_in_the_policy() {
    let outage = |breaker: bool| {
        let policy = write(
            &format!("breaker-{breaker}.toml"),
            &format!("[shared]\nbreaker = {breaker}\nkey_sync = \"50ms\"\n"),
        );
        let args = [
            "sim",
            "--scenario",
            "outage",
            "--config",
            &policy,
            "--replicas",
            "4",
            "--sharing",
            "local",
            "--seed",
            "1",
        ];
        let out = stdout(&args);
        let cells = row(&out, "  openai");
        let into: u64 = cells.last().expect("in outages").parse().expect("a count");
        let ok: u64 = row(&out, "succeeded")[0].parse().expect("a count");
        (into, ok)
    };
    let (own, own_ok) = outage(false);
    let (shared, shared_ok) = outage(true);
    println!(
        "seed 1, requests into the outage: own breakers {own}, shared {shared}; ok {own_ok} / {shared_ok}"
    );
    assert_eq!(
        (own, shared),
        (113, 104),
        "the run's figures, the same as the library's"
    );
}
