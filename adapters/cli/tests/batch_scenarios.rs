//! `steadfast batch` against the mock in each scenario, with the outcome asserted from
//! both sides: the output file and the server's own counters.

mod support;

use std::time::Duration;

use support::*;

fn run_against(server: &MockServer, tmp: &Tmp, n: usize, extra: &[&str]) -> Run {
    let input = tmp.write("in.jsonl", &prompts("line", n));
    let config = tmp.write("fast.toml", FAST);
    let out = tmp.p("out.jsonl");
    let mut args = vec![
        "--input", &input, "--output", &out, "--config", &config, "--seed", "7",
    ];
    args.extend_from_slice(extra);
    batch_at(&server.base_url(), &args).ok()
}

#[test]
fn ok_every_line_once_with_its_own_key() {
    let tmp = Tmp::new("ok");
    let s = server("ok", 1, |_| {});
    let run = run_against(&s, &tmp, 50, &[]);
    let r = all_ok(&tmp.path("out.jsonl"), "line", 50);
    assert!(r.values().all(|l| l["attempts"] == 1));
    at_most_once(&s, "line", 50);
    assert_eq!(s.stats().processed, 50);
    assert!(
        run.stderr.contains("steadfast batch: done: 50 lines"),
        "{}",
        run.stderr
    );
    assert_eq!(summary_figure(&run.stderr, "ok"), 50);
    // The journal names every id; the results went only to the output file.
    assert_eq!(tmp.read("out.jsonl.journal").lines().count(), 50);
    assert!(run.stdout.is_empty());
}

#[test]
fn flaky_all_ok_with_retries_and_hints_honoured() {
    let tmp = Tmp::new("flaky");
    let s = server("flaky", 11, |c| {
        c.knobs.retry_after = Some(Duration::from_millis(150))
    });
    let run = run_against(&s, &tmp, 60, &["--concurrency", "8"]);
    let r = all_ok(&tmp.path("out.jsonl"), "line", 60);
    assert!(r.values().any(|l| l["attempts"].as_u64() > Some(1)));
    assert!(summary_figure(&run.stderr, "retries") > 0);
    at_most_once(&s, "line", 60);
    let stats = s.stats();
    assert!(
        stats.fault("rate_limit") + stats.fault("status") > 0,
        "{stats:?}"
    );
    assert_eq!(stats.early, 0, "a line came back before its Retry-After");
}

#[test]
fn outage_lines_hold_and_succeed_after_it() {
    let tmp = Tmp::new("outage");
    let s = server("outage", 3, |c| {
        c.knobs.outage_for = Some(Duration::from_millis(1500))
    });
    let run = run_against(&s, &tmp, 40, &["--deadline", "60s"]);
    let r = all_ok(&tmp.path("out.jsonl"), "line", 40);
    assert!(r.values().any(|l| l["attempts"].as_u64() > Some(1)));
    assert!(
        summary_figure(&run.stderr, "breaker trips") >= 1,
        "{}",
        run.stderr
    );
    let stats = s.stats();
    println!(
        "503s: {}, breaker trips: {}",
        stats.status(503),
        summary_figure(&run.stderr, "breaker trips")
    );
    // Holding on the open breaker, the lines did not hammer the server: far fewer
    // failed attempts than lines times attempts allowed.
    assert!(
        stats.status(503) > 0 && stats.status(503) < 40 * 3,
        "{stats:?}"
    );
    at_most_once(&s, "line", 40);
}

#[test]
fn ratelimit_all_ok_and_no_request_before_its_hint() {
    let tmp = Tmp::new("ratelimit");
    let s = server("ratelimit", 5, |c| {
        c.knobs.rpm = Some(1200);
        c.knobs.rate_burst = Some(4);
    });
    // Whether the first wave meets the scenario's own limit depends on timing (a
    // client that learns the limit from the first answers' headers may never meet
    // it), so the first answer is a 429 with a hint whatever the timing.
    s.push_faults(&[Fault::status_retry_after(429, "1")]);
    run_against(&s, &tmp, 40, &["--concurrency", "8"]);
    all_ok(&tmp.path("out.jsonl"), "line", 40);
    let stats = s.stats();
    assert!(stats.status(429) > 0, "the limit was hit: {stats:?}");
    assert_eq!(stats.early, 0, "a line came back before its Retry-After");
    at_most_once(&s, "line", 40);
}

fn several_keys(scenario: &str, keys: &[(&str, &str)], disabled: u64) {
    let tmp = Tmp::new(scenario);
    let s = server(scenario, 2, |_| {});
    let input = tmp.write("in.jsonl", &prompts("line", 30));
    let out = tmp.p("out.jsonl");
    let base = s.base_url();
    let mut args = vec!["batch", "--base-url", &base];
    for (var, _) in keys {
        args.extend_from_slice(&["--api-key-env", var]);
    }
    args.extend_from_slice(&["--input", &input, "--output", &out, "--seed", "4"]);
    let run = steadfast(&args, keys).ok();
    all_ok(&tmp.path("out.jsonl"), "line", 30);
    assert!(
        run.stderr.contains(&format!("{disabled} disabled")),
        "{}",
        run.stderr
    );
    at_most_once(&s, "line", 30);
}

#[test]
fn auth_bad_keys_are_disabled_and_lines_succeed_on_the_good_one() {
    several_keys(
        "auth",
        &[
            ("K_BAD", "sk-bad-000111"),
            ("K_REVOKED", "sk-revoked-222"),
            ("K_GOOD", "sk-good-333"),
        ],
        2,
    );
}

#[test]
fn quota_an_exhausted_key_is_disabled_and_lines_succeed_on_the_good_one() {
    several_keys(
        "quota",
        &[("K_QUOTA", "sk-quota-000111"), ("K_GOOD", "sk-good-333")],
        1,
    );
}

#[test]
fn reset_all_ok_and_processed_at_most_once() {
    let tmp = Tmp::new("reset");
    let s = server("reset", 9, |_| {});
    run_against(&s, &tmp, 50, &[]);
    all_ok(&tmp.path("out.jsonl"), "line", 50);
    at_most_once(&s, "line", 50);
    let stats = s.stats();
    assert!(stats.fault("reset") > 0 && stats.replayed > 0, "{stats:?}");
    assert_eq!(stats.processed, 50);
}

#[test]
fn malformed_all_ok_and_processed_at_most_once() {
    let tmp = Tmp::new("malformed");
    let s = server("malformed", 10, |_| {});
    run_against(&s, &tmp, 50, &[]);
    all_ok(&tmp.path("out.jsonl"), "line", 50);
    at_most_once(&s, "line", 50);
    let stats = s.stats();
    assert!(
        stats.fault("malformed") > 0 && stats.replayed > 0,
        "{stats:?}"
    );
}

#[test]
fn slow_all_ok_in_flight_at_once() {
    let tmp = Tmp::new("slow");
    let s = server("slow", 12, |c| {
        c.knobs.latency_min = Some(Duration::from_millis(50));
        c.knobs.latency_max = Some(Duration::from_millis(150));
    });
    run_against(&s, &tmp, 40, &["--concurrency", "20"]);
    let r = all_ok(&tmp.path("out.jsonl"), "line", 40);
    assert!(r.values().all(|l| l["attempts"] == 1));
}

#[test]
fn a_rerun_sends_the_same_keys_and_the_server_replays() {
    let tmp = Tmp::new("rerun");
    let s = server("ok", 1, |_| {});
    run_against(&s, &tmp, 20, &[]);
    // Lose the results: the rerun sends every line again, with the same keys.
    std::fs::remove_file(tmp.path("out.jsonl")).unwrap();
    std::fs::remove_file(tmp.path("out.jsonl.journal")).unwrap();
    run_against(&s, &tmp, 20, &[]);
    all_ok(&tmp.path("out.jsonl"), "line", 20);
    let stats = s.stats();
    assert_eq!((stats.processed, stats.replayed), (20, 20));
    at_most_once(&s, "line", 20);
    // A third run finds every id finished and sends nothing.
    let run = run_against(&s, &tmp, 20, &[]);
    assert_eq!(s.stats().total_requests, 40);
    assert!(
        run.stderr.contains("done by an earlier run"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_in_process_mock_needs_no_key_and_speaks_anthropic_too() {
    let tmp = Tmp::new("inproc");
    let lines: String = (1..=10)
        .map(|i| {
            format!(
                "{{\"id\":\"a-{i}\",\"request\":{{\"model\":\"claude\",\"max_tokens\":16,\
                 \"messages\":[{{\"role\":\"user\",\"content\":\"hi {i}\"}}]}}}}\n"
            )
        })
        .collect();
    let input = tmp.write("in.jsonl", &lines);
    let mock_config = tmp.write("mock.toml", "fault_rate = 0.5\nretry_after_ms = 100\n");
    let config = tmp.write("fast.toml", FAST);
    let run = steadfast(
        &[
            "batch",
            "--input",
            &input,
            "--mock",
            "flaky",
            "--mock-config",
            &mock_config,
            "--provider",
            "anthropic",
            "--config",
            &config,
            "--seed",
            "5",
        ],
        &[],
    )
    .ok();
    // The default output path.
    let r = all_ok(&tmp.path("in.jsonl.out.jsonl"), "a", 10);
    assert_eq!(r["a-1"]["response"]["type"], "message", "{}", r["a-1"]);
    assert!(run.stderr.contains("mock server (flaky)"), "{}", run.stderr);
    assert!(tmp.path("in.jsonl.out.jsonl.journal").exists());
}

#[test]
fn rpm_keeps_the_batch_under_the_servers_limit() {
    // The server allows 1200 a minute per key, 130 at once; the client's limiter at
    // --rpm 1200 bursts 10 % (120) and then paces below the server's refill.
    let limited = |c: &mut MockConfig| {
        c.knobs.rpm = Some(1200);
        c.knobs.rate_burst = Some(130);
    };
    let tmp = Tmp::new("rpm");
    let s = server("ratelimit", 6, limited);
    run_against(&s, &tmp, 150, &["--concurrency", "64", "--rpm", "1200"]);
    all_ok(&tmp.path("out.jsonl"), "line", 150);
    let stats = s.stats();
    assert_eq!(stats.status(429), 0, "{stats:?}");
    // Without the flag the client learns the same limit from the server's own headers:
    // whether the first wave meets a 429 depends on timing, but every line succeeds,
    // none is sent before a hint, and none is processed twice.
    let tmp = Tmp::new("no-rpm");
    let s = server("ratelimit", 6, limited);
    run_against(&s, &tmp, 150, &["--concurrency", "64"]);
    all_ok(&tmp.path("out.jsonl"), "line", 150);
    at_most_once(&s, "line", 150);
    let stats = s.stats();
    assert_eq!(stats.early, 0, "{stats:?}");
    assert_eq!(stats.processed, 150, "{stats:?}");
}

#[test]
fn hedged_lines_beat_held_requests() {
    let tmp = Tmp::new("hedged");
    let held = || Fault::Latency { ms: 3_000 };
    let mut config = MockConfig::builtin("ok")
        .expect("a built-in scenario")
        .with_seed(13)
        .with_script([held(), Fault::Ok, Fault::Ok, Fault::Ok, held()]);
    // The real chat APIs serve a request beside one in progress with the same key.
    for e in &mut config.scenario.endpoints {
        e.conflicts = false;
    }
    let s = MockServer::start(config).expect("mock starts");
    let input = tmp.write("in.jsonl", &prompts("line", 20));
    let hedged = format!(
        "{FAST}[hedge]\nafter = \"100ms\"\nbudget = 1.0\n[retry]\nattempt_timeout = \"10s\"\n"
    );
    let config = tmp.write("hedged.toml", &hedged);
    let out = tmp.p("out.jsonl");
    let run = batch_at(
        &s.base_url(),
        &[
            "--input", &input, "--output", &out, "--config", &config, "--seed", "7",
        ],
    )
    .ok();
    let r = all_ok(&tmp.path("out.jsonl"), "line", 20);
    assert_eq!(r.values().filter(|l| l["attempts"] == 2).count(), 2);
    assert_eq!(summary_figure(&run.stderr, "hedges"), 2, "{}", run.stderr);
    assert_eq!(summary_figure(&run.stderr, "retries"), 0, "{}", run.stderr);
    // Each held request and its hedge carried the line's one key.
    let stats = s.stats();
    assert_eq!(stats.total_requests, 22);
    assert_eq!(stats.keys.len(), 20);
}
