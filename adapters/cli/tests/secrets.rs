//! The secret search: batches with a recognisable key against failing scenarios, then
//! every artifact (output, journal, dead letters, stdout, stderr) is searched for it.

mod support;

use support::*;

const CANARY: &str = "SECRET-canary-123";

fn assert_clean(tmp: &Tmp, runs: &[Run]) {
    let mut searched = 0;
    for entry in std::fs::read_dir(&tmp.0).expect("dir") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("read");
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(CANARY),
            "{} holds the key:\n{text}",
            path.display()
        );
        searched += 1;
    }
    for r in runs {
        assert!(
            !r.stdout.contains(CANARY),
            "stdout holds the key:\n{}",
            r.stdout
        );
        assert!(
            !r.stderr.contains(CANARY),
            "stderr holds the key:\n{}",
            r.stderr
        );
    }
    assert!(searched >= 3, "the artifacts exist");
}

/// `mock_config` (the server's side, which may hold the key on purpose) is written
/// outside the searched directory.
fn run(tmp: &Tmp, name: &str, scenario: &str, key: &str, mock_config: Option<(&Tmp, &str)>) -> Run {
    let input = tmp.write(&format!("{name}.jsonl"), &prompts(name, 12));
    let config = tmp.write("fast.toml", FAST);
    let dead = tmp.p(&format!("{name}.dead.jsonl"));
    let mut args = vec![
        "batch",
        "--input",
        &input,
        "--mock",
        scenario,
        "--api-key-env",
        "CANARY_KEY",
        "--dead-letter",
        &dead,
        "--config",
        &config,
        "--seed",
        "8",
        "--progress-every",
        "100ms",
    ];
    let mc;
    if let Some((server_side, text)) = mock_config {
        mc = server_side.write(&format!("{name}.mock.toml"), text);
        args.extend_from_slice(&["--mock-config", &mc]);
    }
    steadfast(&args, &[("CANARY_KEY", key), ("RUST_LOG", "trace")])
}

#[test]
fn a_key_never_reaches_any_artifact() {
    let tmp = Tmp::new("secrets");
    let mut runs = Vec::new();
    // Revoked: every line fails on the key (401, then no usable key).
    let r = run(
        &tmp,
        "auth",
        "auth",
        "sk-steadfast-SECRET-canary-123-revoked",
        None,
    )
    .ok();
    assert!(r.stderr.contains("unauthorized (key)"), "{}", r.stderr);
    runs.push(r);
    // Out of quota.
    let r = run(
        &tmp,
        "quota",
        "quota",
        "sk-steadfast-SECRET-canary-123-quota",
        None,
    )
    .ok();
    assert!(r.stderr.contains("(key)"), "{}", r.stderr);
    runs.push(r);
    // Flaky, and one answer that echoes the key in full in its error message: the
    // line fails (400) and its message is written, with the key cut out.
    let echo = "fault_rate = 0.3\nretry_after_ms = 50\n[[fault]]\nkind = \"status\"\n\
                status = 400\nbody = '{\"error\":{\"message\":\"bad request from key \
                sk-steadfast-SECRET-canary-123\",\"type\":\"invalid_request_error\"}}'\n";
    let server_side = Tmp::new("secrets-server-side");
    let r = run(
        &tmp,
        "flaky",
        "flaky",
        "sk-steadfast-SECRET-canary-123",
        Some((&server_side, echo)),
    )
    .ok();
    let out = tmp.read("flaky.jsonl.out.jsonl");
    assert!(out.contains("bad request from key ****"), "{out}");
    runs.push(r);
    // A key that cannot be sent in a header: the setup error names the key's place,
    // not the key.
    let input = tmp.p("flaky.jsonl");
    let r = steadfast(
        &[
            "batch",
            "--input",
            &input,
            "--mock",
            "ok",
            "--api-key-env",
            "CANARY_KEY",
        ],
        &[("CANARY_KEY", "sk-steadfast-SECRET-canary-123\u{7}")],
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("key 0"), "{}", r.stderr);
    runs.push(r);
    assert_clean(&tmp, &runs);
}
