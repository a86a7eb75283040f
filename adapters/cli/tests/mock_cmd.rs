//! `steadfast mock` as its own process: its URL on stdout's first line, `GET /__stats`,
//! a batch from another process against it, and a clean exit on SIGTERM.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;

use support::*;

#[test]
fn a_separate_mock_process_serves_a_batch_and_stops_on_sigterm() {
    let tmp = Tmp::new("mockcmd");
    let mut guard = KillOnDrop(
        command(
            &[
                "mock",
                "--scenario",
                "flaky",
                "--seed",
                "3",
                "--retry-after",
                "100ms",
            ],
            &[],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn"),
    );
    let child = &mut guard.0;
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("first line");
    let base = first.trim().to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{first:?}");

    let input = tmp.write("in.jsonl", &prompts("m", 30));
    let config = tmp.write("fast.toml", FAST);
    let out = tmp.p("out.jsonl");
    batch_at(
        &base,
        &["--input", &input, "--output", &out, "--config", &config],
    )
    .ok();
    all_ok(&tmp.path("out.jsonl"), "m", 30);

    let stats = get_stats(&base);
    let keys = stats["keys"].as_object().expect("keys");
    assert_eq!(keys.len(), 30);
    for i in 1..=30 {
        let k = &keys[&key_of(&format!("m-{i}"))];
        assert!(k["processed"].as_u64() <= Some(1), "{k}");
    }
    assert!(
        stats["by_status"]
            .as_object()
            .is_some_and(|m| !m.is_empty())
    );
    assert_eq!(stats["early"], 0);

    let pid = child.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "a clean exit on SIGTERM");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains("mock stopped after"), "{err}");
}

#[test]
fn the_mock_binds_loopback_only_and_lists_its_scenarios() {
    let r = steadfast(&["mock", "--scenario", "ok", "--addr", "0.0.0.0:0"], &[]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("127.0.0.1 only"), "{}", r.stderr);
    let r = steadfast(&["mock", "--scenario", "nosuch"], &[]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("unknown scenario `nosuch`"),
        "{}",
        r.stderr
    );
    let r = steadfast(&["mock", "--list"], &[]).ok();
    for name in [
        "ok",
        "flaky",
        "outage",
        "ratelimit",
        "slow",
        "auth",
        "quota",
        "reset",
        "malformed",
    ] {
        assert!(
            r.stdout.lines().any(|l| l.starts_with(name)),
            "{name}: {}",
            r.stdout
        );
    }
}
